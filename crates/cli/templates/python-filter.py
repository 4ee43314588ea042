"""{{name}}: rejects nodes that lack a label (args {"label": ...}, default
"wasmsched.io/allowed")."""

import wasmsched


class Scaffold(wasmsched.Plugin):
    name = "{{name}}"
    version = "0.1.0"
    label = "wasmsched.io/allowed"

    def configure(self, args):
        self.label = args.get("label", "wasmsched.io/allowed")

    def filter(self, pod, nodes):
        reason = f"node(s) had no label {self.label}"
        return [
            wasmsched.Rejection(i, wasmsched.Code.UNSCHEDULABLE, reason)
            for i, v in enumerate(nodes.label_values(self.label))
            if v is None
        ]
