// {{name}}: holds the pods of a gang at Permit until enough of them are
// placed, then lets them all bind (args {"label": ..., "size": ...},
// default "wasmsched.io/gang" and 2). The count lives in the host's
// `state`: a plugin's instances are pooled and may run at once, so
// variables are not shared between calls.
import { definePlugin, state, waiting, type PermitVerdict, type Pod } from "wasmsched";

let label = "wasmsched.io/gang";
let size = 2;

export default definePlugin({
  name: "{{name}}",
  version: "0.1.0",
  configure(args: { label?: unknown; size?: unknown }) {
    label = typeof args.label === "string" ? args.label : "wasmsched.io/gang";
    size = Number.isInteger(args.size) ? (args.size as number) : 2;
  },
  // reserve counts the pod in its gang; unreserve undoes it.
  reserve(pod: Pod): void {
    const gang = pod.label(label);
    if (gang == null) return;
    state.set(`member/${pod.uid()}`, gang);
    try {
      state.add(`gang/${gang}`, 1);
    } catch (e) {
      state.remove(`member/${pod.uid()}`);
      throw e;
    }
  },
  unreserve(pod: Pod): void {
    const gang = pod.label(label);
    if (gang != null && state.remove(`member/${pod.uid()}`)) state.add(`gang/${gang}`, -1);
  },
  // permit holds the pod (with its node) until its gang has `size` pods
  // placed, then releases the others waiting.
  permit(pod: Pod): PermitVerdict {
    const gang = pod.label(label);
    if (gang == null) return { allow: true };
    if (state.counter(`gang/${gang}`) < size) return { waitMs: 30000 };
    for (const w of waiting.pods()) {
      if (w.labels.some(([k, v]) => k === label && v === gang)) waiting.allow(w.uid);
    }
    return { allow: true };
  },
});
