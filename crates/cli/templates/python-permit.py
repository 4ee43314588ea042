"""{{name}}: binds the pods of a group together (args {"label": ...}, default
"wasmsched.io/group"; {"minCount": ...}, default 2): Permit holds each pod
with the label until minCount pods of its group are reserved, for at most
waitSeconds (args, default 30), then releases them all. (The count keeps
bound pods; a real plugin would also forget deleted ones, or count the
placed pods with nodes.domains at Permit, as examples/coscheduling does.)"""

import wasmsched
from wasmsched import Allow, Wait, state, waiting


class Scaffold(wasmsched.Plugin):
    name = "{{name}}"
    version = "0.1.0"
    label = "wasmsched.io/group"
    min_count = 2
    wait_seconds = 30

    def configure(self, args):
        self.label = args.get("label", "wasmsched.io/group")
        self.min_count = int(args.get("minCount", 2))
        self.wait_seconds = int(args.get("waitSeconds", 30))

    def _key(self, pod):
        # Instances are pooled: what outlives a call goes to the host's
        # store (wasmsched.state), shared by every instance of the plugin.
        group = pod.label(self.label)
        return None if group is None else f"reserved/{pod.namespace()}/{group}"

    def reserve(self, pod, nodes):  # None: success
        key = self._key(pod)
        if key is not None:
            state.add(key, 1)  # in one step, whatever other instances do meanwhile

    def unreserve(self, pod, node):  # Permit rejected it, it timed out, or its binding failed
        key = self._key(pod)
        if key is not None:
            state.add(key, -1)

    def permit(self, pod, nodes):
        key = self._key(pod)
        if key is None:
            return Allow()
        if (state.get_i64(key) or 0) < self.min_count:
            return Wait(self.wait_seconds)  # until allowed below, or rejected at the deadline
        group = pod.label(self.label)
        for w in waiting.pods():  # release the group's pods held so far
            if w.namespace == pod.namespace() and w.label(self.label) == group:
                waiting.allow(w.uid)
        return Allow()
