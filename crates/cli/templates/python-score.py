"""{{name}}: scores each node by a numeric label (args {"label": ...},
default "score"), clamped to 0..100; nodes without it score 0."""

import wasmsched


class Scaffold(wasmsched.Plugin):
    name = "{{name}}"
    version = "0.1.0"
    label = "score"

    def configure(self, args):
        self.label = args.get("label", "score")

    def score(self, pod, nodes):
        return [0 if v is None else int(min(100.0, max(0.0, v))) for v in nodes.label_numbers(self.label)]
