// {{name}}: rejects nodes that lack a label (args {"label": ...}, default
// "wasmsched.io/allowed").
import { definePlugin, Code } from "wasmsched";

export default definePlugin({
  name: "{{name}}",
  version: "0.1.0",
  configure(args) {
    this.label = typeof args.label === "string" ? args.label : "wasmsched.io/allowed";
  },
  filter(pod, nodes) {
    const reason = `node(s) had no label ${this.label}`;
    const rejected = [];
    nodes.labelValues(this.label).forEach((v, index) => {
      if (v == null) rejected.push({ index, code: Code.UNSCHEDULABLE, reason });
    });
    return rejected;
  },
});
