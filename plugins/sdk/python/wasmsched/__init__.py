"""wasmsched plugin SDK for Python (built with componentize-py).

Write a class deriving from :class:`Plugin`, give it a ``name`` and implement
the extension points you need; the build (``plugins/build.sh python DIR``)
turns the module into a component of world ``wasmsched:plugin/scheduler-plugin``.

    import wasmsched

    class Random(wasmsched.Plugin):
        name = "random"

        def score(self, pod, nodes):
            return [r % 101 for r in nodes.randoms()]

The points a plugin implements are the methods it overrides (or the
``points`` attribute, if set); a public method that looks like a misspelt
point (``scores``) raises :class:`DefinitionError` when the class is
defined, which is at build time (name helpers ``_...``); ``events`` lists the cluster changes a pod it
rejected waits for (default: every change). ``configure`` receives the args
as parsed JSON; ``metric_sources`` then names the metric sources the plugin
reads with ``nodes.metrics`` (default: none). Raise :class:`PluginError` (or
any exception) to return an error to the host. ``pod`` and ``nodes`` are the contract's handles: see
:class:`Pod` and :class:`Nodes` for their accessors (snake_case names of the
WIT functions); the pod views take a :class:`PodSelector`. The SDK builds
against contract 0.7 (``wit/plugin.wit``): the numeric columns and the
scores cross packed, as bytes, which componentize-py moves in one copy.
Devices (Dynamic Resource Allocation, 0.6): ``pod.claims()``,
``nodes.devices(i)``, ``nodes.allocation(i)`` and the SDK's
``nodes.allocated_devices(i)``, ``device.attribute(name)`` and
``device.capacity_of(name)``.

The rest of the framework (0.7): ``post_filter`` (returns a
:class:`PostFilterResult`), ``reserve`` and ``unreserve``, ``permit``
(returns :class:`Allow`, :class:`Reject` or :class:`Wait`), ``pre_bind``
and ``post_bind``. What must outlive a call goes to the host:
:mod:`wasmsched.state` (the plugin's store, shared by its instances, and the
pod's cycle state; ``keep_state = True`` keeps the store across versions);
:mod:`wasmsched.waiting` lists the pods waiting at Permit and allows or
rejects those the plugin holds; ``nodes.pods(i)`` lists a node's pods, and
``nodes.cluster_pod_count(...)`` counts the selected pods of the whole cluster.
"""

from __future__ import annotations

import json as _json
import sys as _sys
from dataclasses import dataclass, field
from enum import Enum, Flag, auto
from typing import Iterable, List, Mapping, Optional, Protocol, Tuple, Union

__all__ = [
    "Plugin", "PluginError", "Code", "Status", "Rejection", "Points", "Level",
    "EventResource", "EventActions", "ClusterEvent", "LabelRequirement", "PodSelector",
    "Pod", "Nodes", "Device", "DefinitionError", "log", "trace", "debug", "info", "warn", "error",
    "NodeStatus", "PostFilterResult", "Allow", "Reject", "Wait", "PlacedPod", "WaitingPod",
    "state", "waiting",
]

# ---------------------------------------------------------------------------
# Verdicts


class Code(Enum):
    """kube-scheduler's status codes."""

    SUCCESS = 0
    UNSCHEDULABLE = 1
    UNSCHEDULABLE_AND_UNRESOLVABLE = 2
    SKIP = 3


@dataclass
class Status:
    """A verdict of PreFilter or PreScore, with the reason shown to users."""

    code: Code = Code.SUCCESS
    reason: str = ""


@dataclass
class Rejection:
    """A node Filter rejects: its index in the batch, the code and why."""

    index: int
    code: Code = Code.UNSCHEDULABLE
    reason: str = ""


@dataclass
class NodeStatus:
    """What Filter found on one node, for ``post_filter`` (contract 0.7)."""

    node: str
    #: ``Code.UNSCHEDULABLE`` or ``Code.UNSCHEDULABLE_AND_UNRESOLVABLE``.
    code: Code
    reason: str
    #: The plugin that rejected the node.
    plugin: str


@dataclass
class PostFilterResult:
    """What ``post_filter`` answers (contract 0.7). The default: no room
    made (``Code.UNSCHEDULABLE``, no reason)."""

    #: ``Code.SUCCESS``: the plugin made room, and the PostFilter plugins
    #: after it do not run; otherwise its reason joins the pod's failure
    #: message.
    status: Status = field(default_factory=lambda: Status(Code.UNSCHEDULABLE))
    #: The node the pod is nominated to: the scheduler holds its room there
    #: for the pod (``status.nominatedNodeName``).
    nominated_node: Optional[str] = None
    #: Pods to evict from the nominated node to make that room, as
    #: ``"namespace/name"``: the host evicts them as preemption does, and
    #: only if every one is bound to that node, of lower priority than the
    #: pod, not being deleted already and not protected by a
    #: PodDisruptionBudget that allows no disruption; otherwise it evicts
    #: none and the pod's attempt fails.
    victims: List[str] = field(default_factory=list)

    @classmethod
    def unschedulable(cls, reason: str = "") -> "PostFilterResult":
        """No room made: the pod stays unschedulable, ``reason`` joining its
        failure message."""
        return cls(Status(Code.UNSCHEDULABLE, reason))

    @classmethod
    def nominate(cls, node: str, victims: Iterable[str] = ()) -> "PostFilterResult":
        """The pod is nominated to ``node``, where evicting ``victims``
        (none when there is room already) makes room for it."""
        return cls(Status(Code.SUCCESS), node, list(victims))


# Permit's verdicts (contract 0.7).


@dataclass(frozen=True)
class Allow:
    """Permit: bind (once every other Permit plugin allows too)."""


@dataclass(frozen=True)
class Reject:
    """Permit: do not bind; the pod's Reserve is undone and it is retried
    later, ``reason`` shown to users."""

    reason: str = ""


class Wait:
    """Permit: hold the pod, with its node's resources, for at most
    ``Wait(seconds)`` or ``Wait(ms=milliseconds)`` (at most 15 minutes):
    until this plugin allows it (:func:`wasmsched.waiting.allow`, from any
    instance, typically on another pod's call) or rejects it; at the
    deadline it is rejected. The scheduler goes on with other pods
    meanwhile."""

    __slots__ = ("ms",)

    def __init__(self, seconds: Optional[float] = None, *, ms: Optional[int] = None):
        if (seconds is None) == (ms is None):
            raise TypeError("Wait takes a time in seconds, or ms=milliseconds (one of them)")
        #: The time, in milliseconds.
        self.ms: int = int(ms) if ms is not None else round(seconds * 1000)

    def __eq__(self, other):
        return isinstance(other, Wait) and other.ms == self.ms

    def __hash__(self):
        return hash(("Wait", self.ms))

    def __repr__(self):
        return f"Wait(ms={self.ms})"


class Points(Flag):
    """The extension points a plugin implements."""

    PRE_FILTER = auto()
    FILTER = auto()
    PRE_SCORE = auto()
    SCORE = auto()
    NORMALIZE_SCORE = auto()
    #: Since 0.7.
    POST_FILTER = auto()
    #: Reserve and Unreserve. Since 0.7.
    RESERVE = auto()
    #: Since 0.7.
    PERMIT = auto()
    #: Since 0.7.
    PRE_BIND = auto()
    #: Since 0.7.
    POST_BIND = auto()


class EventResource(Enum):
    """What kind of object changed (kube-scheduler's ``EventResource``)."""

    #: A node.
    NODE = 0
    #: A pod bound or assumed on a node (and updates of the pending pod).
    POD = 1
    #: A namespace (its labels).
    NAMESPACE = 2
    #: A ResourceClaim (a deallocation frees devices). Since 0.6.
    RESOURCE_CLAIM = 3
    #: A ResourceSlice (devices published or changed). Since 0.6.
    RESOURCE_SLICE = 4
    #: A DeviceClass. Since 0.6.
    DEVICE_CLASS = 5


class EventActions(Flag):
    """How it changed (kube-scheduler's ``ActionType``). ``UPDATE`` is any
    update, the finer kinds included."""

    ADD = auto()
    DELETE = auto()
    UPDATE = auto()
    UPDATE_NODE_ALLOCATABLE = auto()
    UPDATE_NODE_LABEL = auto()
    UPDATE_NODE_TAINT = auto()
    UPDATE_NODE_CONDITION = auto()
    UPDATE_NODE_ANNOTATION = auto()
    UPDATE_POD_LABEL = auto()
    UPDATE_POD_SCALE_DOWN = auto()
    UPDATE_POD_TOLERATION = auto()


@dataclass
class ClusterEvent:
    """A kind of cluster change a plugin registers for: changes of
    ``resource`` of any of the kinds in ``actions``."""

    resource: EventResource
    actions: EventActions


class PluginError(Exception):
    """Raised by a plugin: the host receives ``str(error)`` as the error.
    The pod views and ``nodes.metrics`` raise it too, with the host's error."""


# ---------------------------------------------------------------------------
# Logging (host.log). Outside a component (unit tests) lines go to stderr.


class Level(Enum):
    TRACE = 0
    DEBUG = 1
    INFO = 2
    WARN = 3
    ERROR = 4


try:  # present only inside a componentize-py build
    from wit_world.imports import host as _host

    _HOST_LEVELS = {lv: _host.Level(lv.value) for lv in Level}

    def log(level: Level | str, message: str) -> None:
        """Writes a line to the scheduler's log, attributed to the plugin."""
        if isinstance(level, str):
            level = Level[level.upper()]
        _host.log(_HOST_LEVELS[level], str(message))

except ImportError:  # plain CPython: tests

    def log(level: Level | str, message: str) -> None:
        """Writes a line to the scheduler's log, attributed to the plugin."""
        if isinstance(level, str):
            level = Level[level.upper()]
        print(f"[{level.name.lower()}] {message}", file=_sys.__stderr__)


def trace(message: str) -> None:
    log(Level.TRACE, message)


def debug(message: str) -> None:
    log(Level.DEBUG, message)


def info(message: str) -> None:
    log(Level.INFO, message)


def warn(message: str) -> None:
    log(Level.WARN, message)


def error(message: str) -> None:
    log(Level.ERROR, message)


# ---------------------------------------------------------------------------
# Label selectors of the pod views


@dataclass
class LabelRequirement:
    """One requirement of a label selector: ``key`` ``operator`` (``In``,
    ``NotIn``, ``Exists``, ``DoesNotExist``) ``values`` (at least one for
    ``In`` and ``NotIn``, none otherwise)."""

    key: str
    operator: str
    values: List[str] = field(default_factory=list)


@dataclass
class PodSelector:
    """Which pods a pod view counts: those with every label of
    ``match_labels`` (a dict, or (key, value) pairs) that satisfy every
    requirement of ``match_expressions`` (both empty: every pod), in
    ``namespaces`` (empty: the namespace of the pod being scheduled) or in
    every namespace with ``all_namespaces``."""

    match_labels: Union[Mapping[str, str], Iterable[Tuple[str, str]]] = field(default_factory=dict)
    match_expressions: List[LabelRequirement] = field(default_factory=list)
    namespaces: List[str] = field(default_factory=list)
    all_namespaces: bool = False


def _selector(selector: Optional[PodSelector], fields: dict) -> PodSelector:
    """A pod view's selector: the one given, or one made of keyword args."""
    if selector is None:
        return PodSelector(**fields)
    if fields:
        raise TypeError("pass a PodSelector or its fields as keyword arguments, not both")
    if not isinstance(selector, PodSelector):
        raise TypeError(f"a pod view takes a PodSelector (or its fields as keyword arguments), not {type(selector).__name__}")
    return selector


# ---------------------------------------------------------------------------
# The handles the host passes (implemented by the generated bindings). These
# Protocols document them and serve type checkers.


class Pod(Protocol):
    """The pod being scheduled; valid during the call that receives it."""

    def name(self) -> str: ...
    def namespace(self) -> str: ...
    def uid(self) -> str: ...
    def label(self, key: str) -> Optional[str]: ...
    def labels(self) -> List[Tuple[str, str]]: ...
    def annotation(self, key: str) -> Optional[str]: ...
    def annotations(self) -> List[Tuple[str, str]]: ...
    def request(self, name: str) -> int: ...          # millicores / bytes / count
    def requests(self) -> list: ...                    # [Quantity(name, amount)]
    def tolerations(self) -> list: ...                 # [Toleration(key, operator, value, effect)]
    def images(self) -> List[str]: ...
    def node_selector(self) -> List[Tuple[str, str]]: ...
    def priority(self) -> int: ...
    def scheduler_name(self) -> str: ...
    def owner_kind(self) -> Optional[str]: ...
    def json(self) -> str: ...
    # The pod's resource claims (contract 0.6), in spec.resourceClaims
    # order: [PodClaim(name, claim, requests, allocated, reserved_for)],
    # `claim` the ResourceClaim's name or None (not created yet), `requests`
    # [ClaimRequest(name, device_class, allocation_mode, count, selectors,
    # admin_access)], `allocated` the devices of a claim allocated already
    # ([AllocatedDevice(request, driver, pool, device)], empty otherwise),
    # `reserved_for` ["namespace/name"].
    def claims(self) -> list: ...


class Nodes(Protocol):
    """A batch of candidate nodes, addressed by index ``0 .. len(nodes)``."""

    def __len__(self) -> int: ...
    def len(self) -> int: ...
    def name(self, index: int) -> str: ...
    def label(self, index: int, key: str) -> Optional[str]: ...
    def labels(self, index: int) -> List[Tuple[str, str]]: ...
    def annotation(self, index: int, key: str) -> Optional[str]: ...
    def annotations(self, index: int) -> List[Tuple[str, str]]: ...
    def allocatable(self, index: int, name: str) -> int: ...
    def allocatables(self, index: int) -> list: ...   # [Quantity]
    def requested(self, index: int, name: str) -> int: ...
    def requesteds(self, index: int) -> list: ...     # [Quantity]
    def pod_count(self, index: int) -> int: ...
    def unschedulable(self, index: int) -> bool: ...
    def taints(self, index: int) -> list: ...         # [Taint(key, value, effect)]
    def conditions(self, index: int) -> list: ...     # [Condition(type, status)]
    def image_size(self, index: int, name: str) -> Optional[int]: ...
    def images(self, index: int) -> list: ...         # [Image(names, size_bytes)]
    def random(self, index: int) -> int: ...
    def json(self, index: int) -> str: ...
    # Column accessors: one host call for the whole batch, in batch order.
    def names(self) -> List[str]: ...
    def label_values(self, key: str) -> List[Optional[str]]: ...
    def annotation_values(self, key: str) -> List[Optional[str]]: ...
    def label_numbers(self, key: str) -> List[Optional[float]]: ...
    def annotation_numbers(self, key: str) -> List[Optional[float]]: ...
    def allocatable_all(self, name: str) -> List[int]: ...
    def requested_all(self, name: str) -> List[int]: ...
    def image_bytes(self, names: List[str]) -> List[int]: ...
    def randoms(self) -> List[int]: ...
    # The numeric columns as bytes, 8 little-endian per node (contract 0.5):
    # what the ones above are read through; `array('d', b)` (NaN: none) or
    # `array('q', b)` / `array('Q', b)` unpack them.
    def label_numbers_packed(self, key: str) -> bytes: ...
    def annotation_numbers_packed(self, key: str) -> bytes: ...
    def allocatable_all_packed(self, name: str) -> bytes: ...
    def requested_all_packed(self, name: str) -> bytes: ...
    def randoms_packed(self) -> bytes: ...
    # Pod views: the pods bound or assumed in the cluster that a PodSelector
    # (or its fields as keyword args) selects, counted; PluginError when the
    # host rejects the selector.
    def pod_counts(self, selector: Optional[PodSelector] = None, **fields) -> List[int]: ...
    def domain_counts(self, topology_key: str, selector: Optional[PodSelector] = None,
                      **fields) -> List[Optional[int]]: ...
    def domains(self, topology_key: str, selector: Optional[PodSelector] = None,
                **fields) -> List[Tuple[str, int]]: ...
    # The selected pods in the whole cluster, on every node, not only the
    # batch's (contract 0.7): a gang's placed members, in one call.
    def cluster_pod_count(self, selector: Optional[PodSelector] = None, **fields) -> int: ...
    # Live metrics: per node of the batch, None (no value, or a stale one)
    # or Metric(value, age_ms, pods_since, cpu_since, memory_since), the
    # latest value of the metric source named `source`; PluginError when no
    # source of that name is configured (declare it in Plugin.metric_sources
    # and that is found when the plugin loads).
    def metrics(self, source: str) -> list: ...       # [Optional[Metric]]
    # Devices (contract 0.6), per node index. `devices(i)`: every device
    # the node can use ([Device], see that class), at most 4096.
    # `allocation(i)`: what DynamicResources allocated for the pod's
    # unallocated claims on the node in this cycle (at PreScore and Score,
    # for every feasible node), [AllocatedDevice(request, driver, pool,
    # device)] by claim in the pod's order; None when the pod has no claim
    # to allocate or the node was not allocated for. `allocated_devices(i)`
    # (the SDK's): those devices as Device records (with attributes and
    # capacity), in allocation order; None when `allocation(i)` is None.
    def devices(self, index: int) -> list: ...         # [Device]
    def allocation(self, index: int) -> Optional[list]: ...  # [AllocatedDevice]
    def allocated_devices(self, index: int) -> Optional[list]: ...  # [Device]
    # The pods bound or assumed on node `index` (contract 0.7), in no
    # particular order, at most 1000 ([PlacedPod]): what a custom
    # preemption picks its victims from.
    def pods(self, index: int) -> list: ...            # [PlacedPod]


class Device(Protocol):
    """A device a node can use (contract 0.6), from a ResourceSlice."""

    driver: str
    pool: str
    #: ``spec.devices[].name``, unique in its pool.
    name: str
    #: [DeviceAttribute(name, value)]: ``name`` fully qualified
    #: (``gpu.example.com/model``), ``value`` one of
    #: ``AttributeValue_Int``, ``_Boolean``, ``_Text``, ``_Version``, each
    #: with ``.value``.
    attributes: list
    #: [DeviceCapacity(name, quantity, value)]: ``name`` fully qualified,
    #: ``quantity`` as written (``"80Gi"``), ``value`` an int (bytes).
    capacity: list
    #: Allocated to a claim already (or to one whose pod is being bound):
    #: not available to this pod, unless it is one of its claims' devices.
    taken: bool

    def attribute(self, name: str) -> Union[int, bool, str, None]:
        """The value of the attribute ``name`` (qualified, or the driver's
        when it has no domain: ``model`` is ``gpu.example.com/model`` on that
        driver's devices) as an int, bool or str (a version as written),
        None when the device lacks it."""
        ...

    def capacity_of(self, name: str) -> Optional[int]:
        """The value of the capacity ``name`` (qualified, or the driver's
        when it has no domain: ``memory`` is ``gpu.example.com/memory``), an
        int (bytes for ``80Gi``), None when the device publishes none."""
        ...


class PlacedPod(Protocol):
    """A pod bound or assumed on a node (``nodes.pods(i)``, contract 0.7)."""

    namespace: str
    name: str
    uid: str
    #: ``spec.priority`` (0 when unset).
    priority: int
    #: Its labels as (key, value), sorted by key.
    labels: List[Tuple[str, str]]
    #: Its effective requests (non-zero), as ``pod.requests()``.
    requests: list
    #: Being deleted (``metadata.deletionTimestamp`` set).
    deleting: bool

    def label(self, key: str) -> Optional[str]:
        """The value of the label ``key``, None when unset."""
        ...

    def request(self, name: str) -> int:
        """Its effective request of the resource ``name`` (0 if none)."""
        ...


class WaitingPod(Protocol):
    """A pod waiting at Permit (:func:`wasmsched.waiting.pods`, contract
    0.7): placed and holding its node's resources, not bound until every
    plugin whose ``permit`` said :class:`Wait` allows it."""

    namespace: str
    name: str
    uid: str
    #: The node it is assumed on.
    node: str
    #: Its labels as (key, value), sorted by key.
    labels: List[Tuple[str, str]]
    #: The plugins it still waits for.
    plugins: List[str]
    #: How long it has waited, in milliseconds.
    waited_ms: int

    def label(self, key: str) -> Optional[str]:
        """The value of the label ``key``, None when unset."""
        ...

    def waits_for(self, plugin: str) -> bool:
        """Whether it still waits for the plugin named ``plugin`` (this
        plugin's: ``self.name``)."""
        ...


def _label(self, key: str) -> Optional[str]:
    """``label(key)`` of the records that carry (key, value) labels."""
    for k, v in self.labels:
        if k == key:
            return v
    return None


def _qualify(driver: str, name: str) -> str:
    """A device attribute's or capacity's name as the host gives it: a
    name without a domain is the driver's."""
    return name if "/" in name else f"{driver}/{name}"


# ---------------------------------------------------------------------------
# The plugin base class


_registered: list = []


class Plugin:
    """Base class of a plugin. Subclassing it registers the plugin (one per
    component). Override the points you implement."""

    #: The name the scheduler configuration enables the plugin by (required).
    name: str = ""
    #: The plugin's own version.
    version: str = "0.1.0"
    #: The points implemented; by default, the methods overridden.
    points: Optional[Points] = None
    #: The cluster changes after which a pod the plugin rejected may fit, as
    #: :class:`ClusterEvent` s; such a pod is retried only then (or after
    #: five minutes). None, the default: every change.
    events: Optional[List[ClusterEvent]] = None
    #: Keep the plugin's store (:mod:`wasmsched.state`) when this version
    #: replaces another of the same name (contract 0.7). False, the
    #: default: the new version starts with it empty.
    keep_state: bool = False

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        # Checked when the class is defined, which is at build time: a
        # misspelt point would otherwise leave the plugin silently without it.
        _check_definition(cls)
        _registered.append(cls)

    def configure(self, args: dict) -> None:
        """The plugin's args (``pluginConfig[].args``, ``{}`` when none),
        parsed. Raise to reject the plugin version."""

    def metric_sources(self) -> List[str]:
        """The metric sources (``metrics.sources[].name``) the plugin reads
        with ``nodes.metrics``, as ``configure`` set it up; called once after
        it. The host checks them when it loads the plugin, so a source the
        scheduler's configuration lacks rejects the version at start rather
        than failing every pod. Default: none."""
        return []

    def pre_filter(self, pod: Pod) -> Status | Code | None:
        """Once per pod. ``None`` means success."""
        raise PluginError("not implemented")

    def filter(self, pod: Pod, nodes: Nodes) -> Iterable[Rejection]:
        """Only the nodes that do not fit, as :class:`Rejection` s."""
        raise PluginError("not implemented")

    def pre_score(self, pod: Pod, nodes: Nodes) -> Status | Code | None:
        raise PluginError("not implemented")

    def score(self, pod: Pod, nodes: Nodes) -> List[int]:
        """One int per node, in batch order (0..=100 unless normalized)."""
        raise PluginError("not implemented")

    def normalize_score(self, pod: Pod, scores: List[int]) -> List[int]:
        raise PluginError("not implemented")

    # The rest of the framework (contract 0.7).

    def post_filter(self, pod: Pod, nodes: Nodes, statuses: List[NodeStatus]) -> PostFilterResult | Status | Code | None:
        """The pod fits on no node: ``statuses`` says why on each node
        Filter rejected (at most 1000), ``nodes`` holds those nodes in the
        same order. Runs only if the PostFilter plugins before it
        (DefaultPreemption by default) did not succeed. A
        :class:`PostFilterResult`; a ``Status`` or ``Code`` (nominating no
        node); ``None``: no room made (``Code.UNSCHEDULABLE``)."""
        raise PluginError("not implemented")

    def reserve(self, pod: Pod, nodes: Nodes) -> Status | Code | None:
        """The pod was placed on the one node of ``nodes`` and its resources
        are about to be held for it. ``None`` means success; anything else,
        or an exception, fails the attempt and undoes the Reserve of every
        plugin that reserved. Default (a plugin that defines only
        ``unreserve``): success."""
        return None

    def unreserve(self, pod: Pod, node: str) -> None:
        """Undo this plugin's Reserve for the pod on ``node`` (a later point
        failed, Permit rejected or timed out, the binding failed, or the pod
        was deleted while waiting). Called at most once per Reserve; it
        cannot fail (an exception is logged)."""

    def permit(self, pod: Pod, nodes: Nodes) -> Allow | Reject | Wait | None:
        """After Reserve, whether the pod may be bound on the one node of
        ``nodes``, whose pod views count the pods bound or assumed before
        this one (those waiting at Permit included, this pod not).
        :class:`Allow` (or ``None``), :class:`Reject` or :class:`Wait`."""
        raise PluginError("not implemented")

    def pre_bind(self, pod: Pod, node: str) -> Status | Code | None:
        """Before the binding to ``node`` is written. ``None`` means success;
        anything else, an exception, or no answer within the plugin's time
        limit fails the binding: the pod is unreserved and retried."""
        raise PluginError("not implemented")

    def post_bind(self, pod: Pod, node: str) -> None:
        """The pod is bound to ``node`` (informational; an exception is
        logged)."""

    # -- used by the component glue ------------------------------------
    def _points(self) -> Points:
        if self.points is not None:
            return self.points
        pts = Points(0)
        for meth, pt in _POINT_METHODS:
            if getattr(type(self), meth) is not getattr(Plugin, meth):
                pts |= pt
        return pts


_POINT_METHODS = [
    ("pre_filter", Points.PRE_FILTER),
    ("filter", Points.FILTER),
    ("pre_score", Points.PRE_SCORE),
    ("score", Points.SCORE),
    ("normalize_score", Points.NORMALIZE_SCORE),
    ("post_filter", Points.POST_FILTER),
    ("reserve", Points.RESERVE),
    ("unreserve", Points.RESERVE),
    ("permit", Points.PERMIT),
    ("pre_bind", Points.PRE_BIND),
    ("post_bind", Points.POST_BIND),
]


class DefinitionError(TypeError):
    """A Plugin subclass that cannot be what its author meant (a misspelt
    point, no point at all): raised when the class is defined."""


# What a subclass may define, besides private names (``_...``) and helpers
# that look like none of these: the points, ``configure`` and
# ``metric_sources``, with how many arguments the host passes them (self
# excluded), and the class attributes.
_METHODS = {
    "pre_filter": 1, "filter": 2, "pre_score": 2, "score": 2, "normalize_score": 2,
    "post_filter": 3, "reserve": 2, "unreserve": 2, "permit": 2, "pre_bind": 2, "post_bind": 2,
    "configure": 1, "metric_sources": 0,
}
_ATTRIBUTES = ("name", "version", "points", "events", "keep_state")


def _squash(name: str) -> str:
    return name.lower().replace("_", "")


def _distance(a: str, b: str) -> int:
    """Edit distance, a transposition counting as one edit."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def _takes(fn, n: int) -> bool:
    """Whether the host's n arguments (after self) could be passed to fn."""
    import inspect

    try:
        inspect.signature(fn).bind(None, *([None] * n))
        return True
    except TypeError:
        return False
    except ValueError:  # no signature to inspect
        return True


def _meant(attr: str, fn) -> Tuple[Optional[str], bool]:
    """The SDK name a public attribute of a subclass was probably meant to
    be (``scores``: ``score``) or None, and whether it is only the same
    words in another case or spelling (``Score``, ``preFilter``)."""
    s = _squash(attr)
    if not callable(fn):
        # Data: other spellings and near-misses of the class attributes
        # (``Points``, ``event``).
        found = next((a for a in _ATTRIBUTES if s == a or (len(a) > 4 and _distance(s, a) <= 1)), None)
        return found, found == s
    best, best_cost = None, None
    for meth, nargs in _METHODS.items():
        m = _squash(meth)
        d = _distance(s, m)
        if d == 0:
            return meth, True
        # scores, normalise_score: a few edits away; score_nodes, do_filter,
        # normalize: one name inside the other.
        if d <= (1 if len(m) <= 6 else 2):
            cost = d
        elif min(len(s), len(m)) >= 5 and (s.startswith(m) or s.endswith(m) or m.startswith(s)):
            cost = 10 + abs(len(s) - len(m))
        else:
            continue
        # A helper is told apart by the arguments it takes.
        if (best_cost is None or cost < best_cost) and _takes(fn, nargs):
            best, best_cost = meth, cost
    return best, False


def _raise_at(error: Exception, fn) -> None:
    """Raises error from a frame at fn's definition, so that the traceback
    (and the build's first line) names the line of the mistake."""
    code = getattr(fn, "__code__", None)
    if code is None:
        raise error
    where = compile("\n" * (code.co_firstlineno - 1) + "raise error", code.co_filename, "exec")
    exec(where, {"error": error})


def _check_definition(cls) -> None:
    qual = cls.__qualname__
    for attr, value in vars(cls).items():
        if attr.startswith("_") or attr in _METHODS or attr in _ATTRIBUTES:
            continue
        fn = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
        meant, respelt = _meant(attr, fn)
        if meant is None:
            continue
        what = "an attribute" if meant in _ATTRIBUTES else "an extension point" if meant in dict(_POINT_METHODS) else "a method"
        message = f"{qual}.{attr} is not {what} of wasmsched.Plugin; did you mean {meant}?"
        if not respelt and meant not in _ATTRIBUTES:
            message += f" (name a helper _{attr})"
        _raise_at(DefinitionError(message), fn)
    # The sources depend on the args, so a method; a list here would only
    # fail when the host calls it, at load.
    sources = vars(cls).get("metric_sources")
    if sources is not None and not callable(sources):
        raise DefinitionError(
            f"{qual}.metric_sources must be a method returning the source names "
            f"(def metric_sources(self): return [...]), not {type(sources).__name__}"
        )
    if not cls.name:
        return  # a base of plugins, not one: its subclasses are checked
    defined = [m for m, _ in _POINT_METHODS if getattr(cls, m) is not getattr(Plugin, m)]
    if cls.points is None and not defined:
        points = ", ".join(m for m, _ in _POINT_METHODS)
        raise DefinitionError(f"{qual} implements no extension point: define at least one of {points}")
    # A point is defined by any of its methods (RESERVE: reserve or unreserve).
    for pt in Points:
        methods = [m for m, p in _POINT_METHODS if p == pt]
        if cls.points is not None and pt in cls.points and not any(m in defined for m in methods):
            raise DefinitionError(f"{qual}.points has {pt.name} but {qual} does not define {' or '.join(methods)}")
    if cls.points is not None and not cls.points:
        raise DefinitionError(f"{qual}.points is empty: a plugin implements at least one extension point")


def _parse_args(args: str) -> dict:
    try:
        parsed = _json.loads(args) if args.strip() else {}
    except ValueError as e:
        raise PluginError(f"args are not valid JSON: {e}") from None
    if parsed is None:
        parsed = {}
    return parsed


def _host_error(e) -> "PluginError":
    """The host's error (a componentize-py ``Err``) as a PluginError."""
    return PluginError(getattr(e, "value", e))


def _message(e: BaseException) -> str:
    if isinstance(e, PluginError):
        return str(e)
    return f"{type(e).__name__}: {e}"


def _instance() -> Plugin:
    """The registered plugin, instantiated (for the component glue)."""
    concrete = [c for c in _registered if c.name]
    if not concrete:
        raise RuntimeError("wasmsched: no Plugin subclass with a `name` was defined")
    # The most derived: a class no other registered class derives from.
    leaves = [c for c in concrete if not any(o is not c and issubclass(o, c) for o in concrete)]
    if len(leaves) != 1:
        names = ", ".join(c.__qualname__ for c in leaves)
        raise RuntimeError(f"wasmsched: one Plugin per component, found {names}")
    return leaves[0]()


# The host's state and waiting pods (contract 0.7), as submodules:
# ``wasmsched.state``, ``wasmsched.waiting``.
from . import state, waiting  # noqa: E402
