"""coscheduling: gang scheduling. A pod labelled example.com/gang (the
gang's name) is a member of that gang, of the size its annotation
example.com/gang-size says; Permit holds the members (with their nodes'
resources) until the gang is complete, then binds them together. Args:
{"timeoutSeconds": N} (1 to 900, default 60), how long a member waits for
the others before it is rejected and retried.

The gang's members are counted by nodes.cluster_pod_count (the pods bound
or assumed in the whole cluster, those waiting at Permit included), and the
waiting ones are found with wasmsched.waiting: the plugin keeps nothing in
its instances, which are pooled."""

import wasmsched
from wasmsched import Allow, Code, PluginError, PostFilterResult, Status, Wait, waiting

GANG = "example.com/gang"
GANG_SIZE = "example.com/gang-size"


def _gang_size(pod):
    """The gang's size from the pod's annotation: None unless it is a
    decimal integer of at least 1 (an optional sign, then digits; a 64-bit
    signed integer)."""
    value = pod.annotation(GANG_SIZE)
    if value is None:
        return None
    digits = value[1:] if value[:1] in ("+", "-") else value
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    size = int(value)
    return size if 1 <= size < 1 << 63 else None


def _size_error(gang):
    return f"gang {gang}: annotation {GANG_SIZE} must be a positive integer"


def _waiting_members(namespace, gang):
    """The gang's pods waiting at Permit."""
    return [w for w in waiting.pods() if w.namespace == namespace and w.label(GANG) == gang]


class Coscheduling(wasmsched.Plugin):
    name = "coscheduling"
    version = "1.0.0"
    timeout_seconds = 60

    def configure(self, args):
        if not isinstance(args, dict):
            raise PluginError("args must be a JSON object")
        # The first unknown field in sorted order.
        for key in sorted(args):
            if key != "timeoutSeconds":
                raise PluginError(f"unknown field {key}")
        timeout = args.get("timeoutSeconds", 60)
        # bool is an int in Python, not in JSON.
        if type(timeout) is not int or not 1 <= timeout <= 900:
            raise PluginError("timeoutSeconds must be an integer from 1 to 900")
        self.timeout_seconds = timeout

    def pre_filter(self, pod):
        gang = pod.label(GANG)
        if gang is not None and _gang_size(pod) is None:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, _size_error(gang))
        return Code.SUCCESS

    def post_filter(self, pod, nodes, statuses):
        # A member that fits nowhere: the others would wait for it in vain.
        gang = pod.label(GANG)
        if gang is None:
            return PostFilterResult.unschedulable()
        namespace = pod.namespace()
        why = f"gang {gang}: member {namespace}/{pod.name()} does not fit"
        rejected = 0
        for w in _waiting_members(namespace, gang):
            if waiting.reject(w.uid, why):
                rejected += 1
        return PostFilterResult.unschedulable(f"gang {gang}: rejected {rejected} waiting member(s)")

    def reserve(self, pod, nodes):
        return Code.SUCCESS

    def unreserve(self, pod, node):
        # This member will not be bound: neither will the others.
        gang = pod.label(GANG)
        if gang is None:
            return
        namespace, uid = pod.namespace(), pod.uid()
        why = f"gang {gang}: member {namespace}/{pod.name()} was rejected"
        for w in _waiting_members(namespace, gang):
            if w.uid != uid:
                waiting.reject(w.uid, why)

    def permit(self, pod, nodes):
        gang = pod.label(GANG)
        if gang is None:
            return Allow()
        size = _gang_size(pod)
        if size is None:  # PreFilter rejected it already
            return wasmsched.Reject(_size_error(gang))
        # The members placed before this one, waiting ones included.
        placed = nodes.cluster_pod_count(match_labels={GANG: gang})
        if placed + 1 >= size:
            for w in _waiting_members(pod.namespace(), gang):
                waiting.allow(w.uid)
            return Allow()
        return Wait(ms=self.timeout_seconds * 1000)
