// {{name}}: rejects nodes that lack a label (args {"label": ...}, default
// "wasmsched.io/allowed").
import { definePlugin, Code, type Nodes, type Pod, type Rejection } from "wasmsched";

let label = "wasmsched.io/allowed";

export default definePlugin({
  name: "{{name}}",
  version: "0.1.0",
  configure(args: { label?: unknown }) {
    label = typeof args.label === "string" ? args.label : "wasmsched.io/allowed";
  },
  filter(_pod: Pod, nodes: Nodes): Rejection[] {
    const reason = `node(s) had no label ${label}`;
    const rejected: Rejection[] = [];
    nodes.labelValues(label).forEach((v, index) => {
      if (v == null) rejected.push({ index, code: Code.UNSCHEDULABLE, reason });
    });
    return rejected;
  },
});
