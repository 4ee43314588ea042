"""gpu-memory: prefer the node where the pod's GPU would have the most
memory. Dynamic Resource Allocation (contract 0.6): for each feasible node,
kube-scheduler's DynamicResources has chosen devices for the pod's claims
there (`nodes.allocation`); the raw score is the sum, in bytes, of those
devices' capacity `memory` (qualified by each device's driver,
`gpu.example.com/memory`, as capacities are published), read from the
node's devices (`nodes.devices`). NormalizeScore maps the largest to 100
and the others in proportion. A node without an allocation, or whose
devices publish no such capacity, scores 0; a pod without claims is
skipped at PreScore.

Args (optional): {"capacity": "memory"} (the default), the capacity to
compare: a name without a domain is the driver's, a qualified one
(`gpu.example.com/memory`) is taken as is. The twin of ../rust/src/lib.rs.
"""

import wasmsched
from wasmsched import ClusterEvent, Code, EventActions, EventResource

I64_MAX = 2**63 - 1


class GpuMemory(wasmsched.Plugin):
    name = "gpu-memory"
    version = "0.1.0"
    # New or changed devices change what a node offers.
    events = [ClusterEvent(EventResource.RESOURCE_SLICE, EventActions.ADD | EventActions.UPDATE)]

    capacity = "memory"

    def configure(self, args):
        if not isinstance(args, dict):
            raise wasmsched.PluginError("args: must be a JSON object")
        capacity = args.get("capacity", "memory")
        if not isinstance(capacity, str) or capacity == "":
            raise wasmsched.PluginError("args.capacity: must be a non-empty string")
        self.capacity = capacity

    def pre_score(self, pod, nodes):
        """Nothing to compare for a pod without claims."""
        return Code.SUCCESS if pod.claims() else Code.SKIP

    def score(self, pod, nodes):
        """Raw score: the bytes of the capacity of the devices allocated for
        the pod on the node; 0 without an allocation."""
        scores = []
        for i in range(len(nodes)):
            devices = nodes.allocated_devices(i)
            total = 0
            for d in devices or ():
                value = d.capacity_of(self.capacity)
                if value is not None and value > 0:
                    total += value
            # Saturating, as the Rust twin's i64.
            scores.append(min(total, I64_MAX))
        return scores

    def normalize_score(self, pod, scores):
        """The most memory -> 100, the others in proportion; 0 stays 0."""
        top = max(scores, default=0)
        if top <= 0:
            return [0] * len(scores)
        return [max(s, 0) * 100 // top for s in scores]
