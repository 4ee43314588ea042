// {{name}}: scores each node by a numeric label (args {"label": ...},
// default "score"), clamped to 0..100; nodes without it score 0.
import { definePlugin, type Nodes, type Pod } from "wasmsched";

let label = "score";

export default definePlugin({
  name: "{{name}}",
  version: "0.1.0",
  configure(args: { label?: unknown }) {
    label = typeof args.label === "string" ? args.label : "score";
  },
  score(_pod: Pod, nodes: Nodes): number[] {
    return Array.from(nodes.labelNumbers(label), (v) => (v == null ? 0 : Math.trunc(Math.min(100, Math.max(0, v)))));
  },
});
