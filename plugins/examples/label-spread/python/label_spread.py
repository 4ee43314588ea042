"""label-spread: spreads the pods that share a value of a custom label (by
default `app`) over a topology (by default one domain per node), as a
PodTopologySpread constraint would, but configured once for every pod
instead of written into each. It counts the cluster's pods through the pod
views of contract 0.2, at the cost of one host call per batch.

- Filter: a node is rejected when placing the pod there would put more than
  `maxSkew` pods of its label value in the node's domain beyond the
  emptiest domain; nodes without the topology label are rejected for good.
- Score: fewer pods of the value on the node itself is better.

Pods without the label are left alone. Args:
{"label": "app", "topologyKey": "kubernetes.io/hostname", "maxSkew": 1}
(the defaults). The twin of ../rust/src/lib.rs.
"""

import wasmsched
from wasmsched import ClusterEvent, Code, EventActions, EventResource, PodSelector, Rejection


MAX_SKEW = 2**31 - 1


def non_empty(args, key, default):
    value = args.get(key, default)
    if not isinstance(value, str) or value == "":
        raise wasmsched.PluginError(f"args.{key}: must be a non-empty string")
    return value


class LabelSpread(wasmsched.Plugin):
    name = "label-spread"
    version = "0.1.0"
    # A rejected pod may fit once a peer goes or a domain appears.
    events = [
        ClusterEvent(EventResource.POD, EventActions.ADD | EventActions.DELETE | EventActions.UPDATE_POD_LABEL),
        ClusterEvent(EventResource.NODE, EventActions.ADD | EventActions.UPDATE_NODE_LABEL),
    ]

    label = "app"
    topology_key = "kubernetes.io/hostname"
    max_skew = 1

    def configure(self, args):
        if not isinstance(args, dict):
            raise wasmsched.PluginError("args: must be a JSON object")
        max_skew = args.get("maxSkew", 1)
        # bool is an int in Python, not in JSON. The range is
        # PodTopologySpread's (an int32).
        if type(max_skew) is not int or not 1 <= max_skew <= MAX_SKEW:
            raise wasmsched.PluginError(f"args.maxSkew: must be an integer from 1 to {MAX_SKEW}")
        self.label = non_empty(args, "label", "app")
        self.topology_key = non_empty(args, "topologyKey", "kubernetes.io/hostname")
        self.max_skew = max_skew

    def peers(self, pod):
        """The pod's value of the label and the selector of the pods of its
        namespace with that value; (None, None) without the label."""
        value = pod.label(self.label)
        if value is None:
            return None, None
        return value, PodSelector(match_labels=[(self.label, value)])

    def pre_filter(self, pod):
        """Pods without the label skip the filter."""
        return Code.SUCCESS if pod.label(self.label) is not None else Code.SKIP

    def filter(self, pod, nodes):
        value, selector = self.peers(pod)
        if value is None:
            return []
        # A pod view's error (PluginError) is the call's error.
        low = min((c for _, c in nodes.domains(self.topology_key, selector)), default=0)
        out = []
        for i, c in enumerate(nodes.domain_counts(self.topology_key, selector)):
            if c is None:
                out.append(Rejection(
                    i, Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    f"node(s) didn't have label {self.topology_key}",
                ))
            elif c + 1 - low > self.max_skew:
                out.append(Rejection(
                    i, Code.UNSCHEDULABLE,
                    f"node(s) would exceed maxSkew {self.max_skew} of pods with "
                    f"{self.label}={value} per {self.topology_key}",
                ))
        return out

    def score(self, pod, nodes):
        """Raw score: the pods of the value on the node."""
        _, selector = self.peers(pod)
        if selector is None:
            return [0] * len(nodes)
        return nodes.pod_counts(selector)

    def normalize_score(self, pod, scores):
        """Fewest pods -> 100, most -> 0."""
        top = max(scores, default=0)
        if top == 0:
            return [100] * len(scores)
        return [100 - s * 100 // top for s in scores]
