"""Component glue: adapts a wasmsched.Plugin to the generated bindings of
world `scheduler-plugin`. Imported by the app module the build generates;
only importable inside a componentize-py build."""

import struct
import sys
from array import array
from collections.abc import Mapping

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import plugin as _wit
from wit_world.imports import cluster as _cluster

import wasmsched as _sdk

# `len(nodes)` as well as `nodes.len()`.
_cluster.Nodes.__len__ = lambda self: self.len()


# The pod views take a wasmsched.PodSelector (or its fields as keyword args);
# they and `metrics` raise PluginError with the host's error.
def _wit_selector(selector, fields):
    s = _sdk._selector(selector, fields)
    labels = s.match_labels.items() if isinstance(s.match_labels, Mapping) else s.match_labels
    return _cluster.PodSelector(
        list(s.namespaces),
        bool(s.all_namespaces),
        [(k, v) for k, v in labels],
        [_cluster.LabelRequirement(r.key, r.operator, list(r.values)) for r in s.match_expressions],
    )


def _view(f, *args):
    try:
        return f(*args)
    except Err as e:
        raise _sdk.PluginError(e.value) from None


_pod_counts = _cluster.Nodes.pod_counts
_domain_counts = _cluster.Nodes.domain_counts
_domains = _cluster.Nodes.domains
_cluster_pod_count = _cluster.Nodes.cluster_pod_count
_cluster.Nodes.pod_counts = lambda self, selector=None, **fields: _view(
    _pod_counts, self, _wit_selector(selector, fields))
_cluster.Nodes.domain_counts = lambda self, topology_key, selector=None, **fields: _view(
    _domain_counts, self, topology_key, _wit_selector(selector, fields))
_cluster.Nodes.domains = lambda self, topology_key, selector=None, **fields: _view(
    _domains, self, topology_key, _wit_selector(selector, fields))
_cluster.Nodes.cluster_pod_count = lambda self, selector=None, **fields: _view(
    _cluster_pod_count, self, _wit_selector(selector, fields))
_metrics = _cluster.Nodes.metrics
_cluster.Nodes.metrics = lambda self, source: _view(_metrics, self, source)


# Devices (contract 0.6): a device's attribute and capacity by name, and the
# devices of a node's allocation with their attributes and capacity.
def _attribute(self, name):
    name = _sdk._qualify(self.driver, name)
    for a in self.attributes:
        if a.name == name:
            return a.value.value
    return None


def _capacity_of(self, name):
    name = _sdk._qualify(self.driver, name)
    for c in self.capacity:
        if c.name == name:
            return c.value
    return None


def _allocated_devices(self, index):
    chosen = self.allocation(index)
    if not chosen:
        return chosen
    by_id = {(d.driver, d.pool, d.name): d for d in self.devices(index)}
    return [d for d in (by_id.get((a.driver, a.pool, a.device)) for a in chosen) if d is not None]


_cluster.Device.attribute = _attribute
_cluster.Device.capacity_of = _capacity_of
_cluster.Nodes.allocated_devices = _allocated_devices


# The pods on a node (contract 0.7): a label and a request by name.
def _request(self, name):
    for q in self.requests:
        if q.name == name:
            return q.amount
    return 0


_cluster.PlacedPod.label = _sdk._label
_cluster.PlacedPod.request = _request


# The numeric columns cross packed (contract 0.5): componentize-py lifts a
# list element by element through its interpreter, `bytes` in one copy, and
# `array` unpacks them in C.
def _numbers(packed):
    values = array("d", packed).tolist()
    total = sum(values)
    if total == total:  # no NaN (none) among them
        return values
    return [None if v != v else v for v in values]


_cluster.Nodes.label_numbers = lambda self, key: _numbers(self.label_numbers_packed(key))
_cluster.Nodes.annotation_numbers = lambda self, key: _numbers(self.annotation_numbers_packed(key))
_cluster.Nodes.allocatable_all = lambda self, name: array("q", self.allocatable_all_packed(name)).tolist()
_cluster.Nodes.requested_all = lambda self, name: array("q", self.requested_all_packed(name)).tolist()
_cluster.Nodes.randoms = lambda self: array("Q", self.randoms_packed()).tolist()


class _LogWriter:
    """sys.stdout/sys.stderr: the component has no stdio (WASI is stubbed
    and traps), so print() goes to the host log, one line per entry."""

    def __init__(self, level):
        self.level = level
        self.buf = ""

    def write(self, s):
        self.buf += s
        while "\n" in self.buf:
            line, self.buf = self.buf.split("\n", 1)
            _sdk.log(self.level, line)
        return len(s)

    def flush(self):
        if self.buf:
            _sdk.log(self.level, self.buf)
            self.buf = ""

    def isatty(self):
        return False


_stdout = _LogWriter(_sdk.Level.INFO)
_stderr = _LogWriter(_sdk.Level.WARN)


def _install_stdio():
    # At run time only: during the build (pre-initialization) the host's
    # log is not there, and build errors must reach the real stderr.
    sys.stdout = _stdout
    sys.stderr = _stderr

_CODES = {c: _wit.Code(c.value) for c in _sdk.Code}
_SDK_CODES = {w: c for c, w in _CODES.items()}
_POINTS = {
    _sdk.Points.PRE_FILTER: _wit.Points.PRE_FILTER,
    _sdk.Points.FILTER: _wit.Points.FILTER,
    _sdk.Points.PRE_SCORE: _wit.Points.PRE_SCORE,
    _sdk.Points.SCORE: _wit.Points.SCORE,
    _sdk.Points.NORMALIZE_SCORE: _wit.Points.NORMALIZE_SCORE,
    _sdk.Points.POST_FILTER: _wit.Points.POST_FILTER,
    _sdk.Points.RESERVE: _wit.Points.RESERVE,
    _sdk.Points.PERMIT: _wit.Points.PERMIT,
    _sdk.Points.PRE_BIND: _wit.Points.PRE_BIND,
    _sdk.Points.POST_BIND: _wit.Points.POST_BIND,
}

_RESOURCES = {r: _wit.EventResource(r.value) for r in _sdk.EventResource}
_ACTIONS = {a: _wit.EventActions[a.name] for a in _sdk.EventActions}

_p = _sdk._instance()


def _err(e):
    if isinstance(e, Err):
        return e
    return Err(_sdk._message(e))


def _status(v):
    if v is None:
        return _wit.Status(_wit.Code.SUCCESS, "")
    if isinstance(v, _sdk.Code):
        return _wit.Status(_CODES[v], "")
    return _wit.Status(_CODES[v.code], v.reason)


# One struct per batch size: `pack` converts a list of ints in C about three
# times as fast as `array("q", list)`, which checks them one by one.
_SCORES = {}


def _packed(v):
    """Scores packed (contract 0.5): one copy across, not one per score."""
    if type(v) is not list:
        v = list(v)
    n = len(v)
    s = _SCORES.get(n)
    if s is None:
        s = _SCORES[n] = struct.Struct(f"<{n}q")
    return _wit.Scores_Packed(s.pack(*v))


def _unpacked(scores):
    if isinstance(scores, _wit.Scores_Packed):
        if len(scores.value) % 8:
            raise _sdk.PluginError(f"{len(scores.value)} packed bytes are not 8 per score")
        return array("q", scores.value).tolist()
    return scores.value


def _post_filter_result(v):
    if v is None:
        return _wit.PostFilterResult(_wit.Status(_wit.Code.UNSCHEDULABLE, ""), None, [])
    if isinstance(v, _sdk.PostFilterResult):
        victims = v.victims
        if isinstance(victims, str):
            raise _sdk.PluginError("post_filter: victims must be a list of \"namespace/name\", not a str")
        return _wit.PostFilterResult(_status(v.status), v.nominated_node, list(victims))
    return _wit.PostFilterResult(_status(v), None, [])


_ALLOW = _wit.PermitVerdict_Allow()


def _verdict(v):
    if v is None or v is _sdk.Allow or isinstance(v, _sdk.Allow):
        return _ALLOW
    if isinstance(v, _sdk.Reject):
        return _wit.PermitVerdict_Reject(str(v.reason))
    if isinstance(v, _sdk.Wait):
        if not 0 <= v.ms <= 0xFFFFFFFF:
            raise _sdk.PluginError(f"permit: Wait of {v.ms} ms is out of range (at most 15 minutes)")
        return _wit.PermitVerdict_Wait(v.ms)
    raise _sdk.PluginError(f"permit must return Allow(), Reject(reason) or Wait(seconds), not {type(v).__name__}")


def _no_fail(point, f, *args):
    """Unreserve and PostBind cannot fail: an exception is logged."""
    try:
        f(*args)
    except BaseException as e:
        _sdk.log(_sdk.Level.ERROR, f"{point}: " + _sdk._message(e))


def _events(events):
    if events is None:
        return None
    out = []
    for e in events:
        actions = _wit.EventActions(0)
        for sdk_a, wit_a in _ACTIONS.items():
            if sdk_a in e.actions:
                actions |= wit_a
        out.append(_wit.ClusterEvent(_RESOURCES[e.resource], actions))
    return out


class Plugin(exports.Plugin):
    def metadata(self):
        _install_stdio()
        pts = _wit.Points(0)
        for sdk_pt, wit_pt in _POINTS.items():
            if sdk_pt in _p._points():
                pts |= wit_pt
        return _wit.PluginMetadata(_p.name, _p.version, pts, _events(_p.events), bool(_p.keep_state))

    def configure(self, args):
        _install_stdio()
        try:
            _p.configure(_sdk._parse_args(args))
        except BaseException as e:
            raise _err(e)

    def metric_sources(self):
        # No error in the contract's result: a failure is logged (its message
        # would be lost in the trap) and traps, which fails the load.
        try:
            sources = _p.metric_sources()
            if sources is None:
                return []
            if isinstance(sources, str):
                raise _sdk.PluginError("must return a list of source names, not a str")
            sources = list(sources)
            for s in sources:
                if not isinstance(s, str):
                    raise _sdk.PluginError(f"must return source names (str), not {type(s).__name__}")
            return sources
        except BaseException as e:
            _sdk.log(_sdk.Level.ERROR, "metric_sources: " + _sdk._message(e))
            raise

    def pre_filter(self, pod):
        try:
            return _status(_p.pre_filter(pod))
        except BaseException as e:
            raise _err(e)

    def filter(self, pod, nodes):
        try:
            return [_wit.Rejection(r.index, _CODES[r.code], r.reason) for r in _p.filter(pod, nodes) or ()]
        except BaseException as e:
            raise _err(e)

    def pre_score(self, pod, nodes):
        try:
            return _status(_p.pre_score(pod, nodes))
        except BaseException as e:
            raise _err(e)

    def score(self, pod, nodes):
        try:
            return _packed(_p.score(pod, nodes))
        except BaseException as e:
            raise _err(e)

    def normalize_score(self, pod, scores):
        try:
            return _packed(_p.normalize_score(pod, _unpacked(scores)))
        except BaseException as e:
            raise _err(e)

    # Contract 0.7.

    def post_filter(self, pod, nodes, statuses):
        try:
            mine = [_sdk.NodeStatus(s.node, _SDK_CODES[s.code], s.reason, s.plugin) for s in statuses]
            return _post_filter_result(_p.post_filter(pod, nodes, mine))
        except BaseException as e:
            raise _err(e)

    def reserve(self, pod, nodes):
        try:
            return _status(_p.reserve(pod, nodes))
        except BaseException as e:
            raise _err(e)

    def unreserve(self, pod, node):
        _no_fail("unreserve", _p.unreserve, pod, node)

    def permit(self, pod, nodes):
        try:
            return _verdict(_p.permit(pod, nodes))
        except BaseException as e:
            raise _err(e)

    def pre_bind(self, pod, node):
        try:
            return _status(_p.pre_bind(pod, node))
        except BaseException as e:
            raise _err(e)

    def post_bind(self, pod, node):
        _no_fail("post_bind", _p.post_bind, pod, node)
