// label-gate: a pod that asks for a node class with an annotation (by
// default `cluster.type: raspberry`) only goes to nodes whose label of the
// same key has that value. Pods that ask for nothing pass everywhere.
//
// Args: {"key": "cluster.type"} (the default).

import { definePlugin, Code, PluginError } from "wasmsched";

export default definePlugin({
  name: "label-gate",
  version: "0.1.0",

  configure(args) {
    // Only a string value counts, as in the Rust twin.
    const key = typeof args.key === "string" ? args.key : "cluster.type";
    if (key === "") throw new PluginError("args.key: must not be empty");
    this.key = key;
  },

  // Pods that ask for no class skip the filter.
  preFilter(pod) {
    return pod.annotation(this.key) != null ? Code.SUCCESS : Code.SKIP;
  },

  filter(pod, nodes) {
    const want = pod.annotation(this.key);
    if (want == null) return [];
    const reason = `node(s) were not of the requested ${this.key} ${want}`;
    // One host call for the label of every node of the batch.
    const rejected = [];
    nodes.labelValues(this.key).forEach((value, index) => {
      if (value !== want) rejected.push({ index, code: Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reason });
    });
    return rejected;
  },
});
