//! wasmsched Zig SDK: write a wasmsched scheduling plugin in Zig.
//!
//! A plugin is a Zig file that declares `metadata`, defines the hooks of the
//! points it implements and hands itself to `plugin`:
//!
//!     const ws = @import("wasmsched");
//!
//!     pub const metadata = ws.Metadata{ .name = "random", .version = "0.1.0", .points = .{ .score = true } };
//!     // optionally `.events = &.{...}`: the cluster changes that may make a
//!     // pod it rejected fit (see `Metadata.events`)
//!
//!     pub fn score(pod: ws.Pod, nodes: ws.Nodes, scores: []i64) !void { ... }
//!
//!     comptime {
//!         ws.plugin(@This());
//!     }
//!
//! Hooks (all optional; those missing answer "not implemented", a missing
//! `configure` accepts any args):
//!
//!     pub fn configure(args: ws.Args) !void
//!     pub fn preFilter(pod: ws.Pod) !ws.Status
//!     pub fn filter(pod: ws.Pod, nodes: ws.Nodes, out: ws.Rejections) !void
//!     pub fn preScore(pod: ws.Pod, nodes: ws.Nodes) !ws.Status
//!     pub fn score(pod: ws.Pod, nodes: ws.Nodes, scores: []i64) !void   // scores.len == nodes.len(), preset to 0
//!     pub fn normalizeScore(pod: ws.Pod, scores: []i64) !void          // in place
//!
//! and since contract 0.7 the rest of the framework:
//!
//!     pub fn postFilter(pod: ws.Pod, nodes: ws.Nodes, statuses: []const ws.NodeStatus) !ws.PostFilterResult
//!     pub fn reserve(pod: ws.Pod, nodes: ws.Nodes) !ws.Status            // .reserve = true
//!     pub fn unreserve(pod: ws.Pod, node: []const u8) void               // .reserve = true; optional
//!     pub fn permit(pod: ws.Pod, nodes: ws.Nodes) !ws.Permit             // .allow, .{ .reject = why }, .{ .wait = ms }
//!     pub fn preBind(pod: ws.Pod, node: []const u8) !ws.Status
//!     pub fn postBind(pod: ws.Pod, node: []const u8) void
//!
//! What must outlive a call goes to the host (`ws.state`: the plugin's
//! store, shared by its instances, and the pod's cycle state; `.keep_state`
//! in `metadata` keeps the store across versions); `ws.waiting` lists the
//! pods waiting at Permit and allows or rejects those the plugin holds.
//!
//! A plugin that reads live metrics also declares the sources it reads, as
//! configured (contract 0.4; missing: none), so that the host rejects it at
//! load when the scheduler's configuration lacks one:
//!
//!     pub fn metricSources() []const []const u8
//!
//! An error returned by a hook becomes the contract's `err`: the message given
//! to `ws.fail` (or the host's, for a pod view's or the metrics'
//! `error.Plugin`), or else the error's name.
//!
//! Memory: slices returned by accessors, `ws.allocator` and `ws.print` live in
//! a per-call arena released after the export returns; never free. `args`
//! (and slices of it) stay valid while its configuration is current.
//!
//! The component-model plumbing is the C SDK (plugins/sdk/c, over
//! wit-bindgen's generated C bindings), linked in by plugins/lang/zig.sh.
//! The SDK targets contract wasmsched:plugin@0.7.0 (wit/plugin.wit).

const std = @import("std");

// ---- the C SDK (plugins/sdk/c/include/wasmsched.h) ----------------------

const CStr = extern struct {
    ptr: ?[*]const u8,
    len: usize,

    /// Empty slices go as null: Zig may give them any address (a
    /// zero-length allocation's is the top of the address space), and the
    /// host rejects an address outside memory even for no bytes.
    fn of(s: []const u8) CStr {
        return .{ .ptr = if (s.len == 0) null else s.ptr, .len = s.len };
    }
    fn slice(self: CStr) []const u8 {
        return if (self.ptr) |p| p[0..self.len] else "";
    }
};

fn CList(comptime T: type) type {
    return extern struct {
        ptr: ?[*]T,
        len: usize,

        fn slice(self: @This()) []T {
            return if (self.ptr) |p| p[0..self.len] else &[_]T{};
        }
        /// A copy of `items` in the arena, mapped by `f`, for the host.
        fn map(comptime U: type, items: []const U, f: fn (U) T) @This() {
            if (items.len == 0) return .{ .ptr = null, .len = 0 };
            const list = allocator.alloc(T, items.len) catch unreachable;
            for (items, list) |u, *t| t.* = f(u);
            return .{ .ptr = list.ptr, .len = list.len };
        }
    };
}

/// An optional string as the host returns it in a column.
pub const OptStr = extern struct {
    is_some: bool,
    val: CStr,

    pub fn get(self: OptStr) ?[]const u8 {
        return if (self.is_some) self.val.slice() else null;
    }
};

/// An optional number as the host returns it in a column.
pub const OptF64 = extern struct {
    is_some: bool,
    val: f64,

    pub fn get(self: OptF64) ?f64 {
        return if (self.is_some) self.val else null;
    }
};

/// An optional count, as `Nodes.domainCounts` returns it.
pub const OptU32 = extern struct {
    is_some: bool,
    val: u32,

    pub fn get(self: OptU32) ?u32 {
        return if (self.is_some) self.val else null;
    }
};

/// A topology domain (a value of the topology label) and its count of
/// selected pods, as `Nodes.domains` returns it.
pub const Domain = extern struct {
    value_: CStr,
    count: u32,

    pub fn value(self: Domain) []const u8 {
        return self.value_.slice();
    }
};

/// One node's reading of a metric source (`Nodes.metrics`, contract 0.3),
/// with what was placed on the node since: load the value cannot show yet.
/// Correct the value by it, or every pod placed between two refreshes goes
/// to the same node.
pub const Metric = extern struct {
    /// What the source's query gave for the node.
    value: f64,
    /// How old the value is, in milliseconds.
    age_ms: u64,
    /// Pods bound or assumed on the node since the value was taken.
    pods_since: u32,
    /// The sum of their CPU requests, in millicores.
    cpu_since: i64,
    /// The sum of their memory requests, in bytes.
    memory_since: i64,
};

/// An optional metric, as `Nodes.metrics` returns it.
pub const OptMetric = extern struct {
    is_some: bool,
    val: Metric,

    pub fn get(self: OptMetric) ?Metric {
        return if (self.is_some) self.val else null;
    }
};

/// The value of a device attribute (`ResourceSlice.spec.devices[].attributes`,
/// contract 0.6), as `DeviceAttribute.value` gives it:
/// `switch (a.value()) { .int => |n| ..., .text => |t| ..., else => {} }`.
pub const AttributeValue = union(enum) {
    int: i64,
    boolean: bool,
    text: []const u8,
    /// A semantic version, as written (`1.2.3`).
    version: []const u8,
};

/// attribute-value as the host lowers it: the case's tag, then its payload.
const CAttributeValue = extern struct {
    tag: u8,
    val: extern union { int: i64, boolean: bool, text: CStr, version: CStr },
};

/// One attribute of a device (contract 0.6).
pub const DeviceAttribute = extern struct {
    name_: CStr,
    value_: CAttributeValue,

    /// Fully qualified: `domain/name` (a name a driver writes without a
    /// domain gets the driver's).
    pub fn name(self: DeviceAttribute) []const u8 {
        return self.name_.slice();
    }
    pub fn value(self: DeviceAttribute) AttributeValue {
        const v = self.value_.val;
        return switch (self.value_.tag) {
            0 => .{ .int = v.int },
            1 => .{ .boolean = v.boolean },
            2 => .{ .text = v.text.slice() },
            else => .{ .version = v.version.slice() },
        };
    }
};

/// One capacity of a device (contract 0.6).
pub const DeviceCapacity = extern struct {
    name_: CStr,
    quantity_: CStr,
    /// The quantity rounded up to an integer (bytes for `80Gi`).
    value: i64,

    /// Fully qualified, as attribute names.
    pub fn name(self: DeviceCapacity) []const u8 {
        return self.name_.slice();
    }
    /// The quantity as written (`80Gi`).
    pub fn quantity(self: DeviceCapacity) []const u8 {
        return self.quantity_.slice();
    }
};

/// A device a node can use (`Nodes.devices`, contract 0.6): published in a
/// ResourceSlice for the node (`nodeName`), for a set of nodes that
/// includes it (`nodeSelector`) or for every node (`allNodes`).
pub const Device = extern struct {
    driver_: CStr,
    pool_: CStr,
    name_: CStr,
    attributes_: CList(DeviceAttribute),
    capacity_: CList(DeviceCapacity),
    /// Allocated to a claim already (or to one whose pod is being bound):
    /// not available to this pod, unless it is one of this pod's claims'
    /// devices.
    taken: bool,

    pub fn driver(self: Device) []const u8 {
        return self.driver_.slice();
    }
    pub fn pool(self: Device) []const u8 {
        return self.pool_.slice();
    }
    /// `spec.devices[].name`, unique in its pool.
    pub fn name(self: Device) []const u8 {
        return self.name_.slice();
    }
    pub fn attributes(self: Device) []const DeviceAttribute {
        return self.attributes_.slice();
    }
    pub fn capacity(self: Device) []const DeviceCapacity {
        return self.capacity_.slice();
    }
    /// The value of the attribute `attr_name`, fully qualified or the
    /// driver's when it has no domain (`model` is `gpu.example.com/model`
    /// on that driver's devices); null when the device lacks it.
    pub fn attribute(self: Device, attr_name: []const u8) ?AttributeValue {
        for (self.attributes()) |a| {
            if (sameName(a.name(), self.driver(), attr_name)) return a.value();
        }
        return null;
    }
    /// The capacity `cap_name`, fully qualified or the driver's when it has
    /// no domain (`memory` is `gpu.example.com/memory` on that driver's
    /// devices): `.value` (bytes for `80Gi`) and `.quantity()`; null when
    /// the device publishes none.
    pub fn capacityOf(self: Device, cap_name: []const u8) ?DeviceCapacity {
        for (self.capacity()) |c| {
            if (sameName(c.name(), self.driver(), cap_name)) return c;
        }
        return null;
    }
};

/// Whether `have` (fully qualified, as the host gives it) is `name`, which
/// is the driver's when it has no domain.
fn sameName(have: []const u8, driver: []const u8, name: []const u8) bool {
    if (std.mem.indexOfScalar(u8, name, '/') != null) return std.mem.eql(u8, have, name);
    return have.len == driver.len + 1 + name.len and have[driver.len] == '/' and
        std.mem.startsWith(u8, have, driver) and std.mem.endsWith(u8, have, name);
}

/// A device chosen for a request of a claim (contract 0.6).
pub const AllocatedDevice = extern struct {
    request_: CStr,
    driver_: CStr,
    pool_: CStr,
    device_: CStr,

    /// The request's name; `request/subrequest` for a `firstAvailable`
    /// request, naming the choice taken.
    pub fn request(self: AllocatedDevice) []const u8 {
        return self.request_.slice();
    }
    pub fn driver(self: AllocatedDevice) []const u8 {
        return self.driver_.slice();
    }
    pub fn pool(self: AllocatedDevice) []const u8 {
        return self.pool_.slice();
    }
    pub fn device(self: AllocatedDevice) []const u8 {
        return self.device_.slice();
    }
    /// Whether `d` is the device chosen (same driver, pool and name).
    pub fn is(self: AllocatedDevice, d: Device) bool {
        return std.mem.eql(u8, self.device(), d.name()) and std.mem.eql(u8, self.pool(), d.pool()) and
            std.mem.eql(u8, self.driver(), d.driver());
    }
};

/// One request of a claim (`spec.devices.requests[]`, contract 0.6); a
/// `firstAvailable` request is listed once per subrequest, in order, named
/// `request/subrequest`.
pub const ClaimRequest = extern struct {
    name_: CStr,
    device_class_: CStr,
    allocation_mode_: CStr,
    /// How many devices (`ExactCount`).
    count: u64,
    selectors_: CList(CStr),
    admin_access: bool,

    pub fn name(self: ClaimRequest) []const u8 {
        return self.name_.slice();
    }
    pub fn deviceClass(self: ClaimRequest) []const u8 {
        return self.device_class_.slice();
    }
    /// `ExactCount` or `All`.
    pub fn allocationMode(self: ClaimRequest) []const u8 {
        return self.allocation_mode_.slice();
    }
    /// The CEL selectors of the request (the class's are not listed).
    pub fn selectors(self: ClaimRequest) Strs {
        return .{ .items = self.selectors_.slice() };
    }
};

/// One of the pod's `spec.resourceClaims`, with the ResourceClaim it names
/// (`Pod.claims`, contract 0.6).
pub const PodClaim = extern struct {
    name_: CStr,
    claim_: OptStr,
    requests_: CList(ClaimRequest),
    allocated_: CList(AllocatedDevice),
    reserved_for_: CList(CStr),

    /// `spec.resourceClaims[].name`, as containers refer to it.
    pub fn name(self: PodClaim) []const u8 {
        return self.name_.slice();
    }
    /// The ResourceClaim's name; null when it is not known yet (made from a
    /// template, not created yet) or none is needed.
    pub fn claim(self: PodClaim) ?[]const u8 {
        return self.claim_.get();
    }
    pub fn requests(self: PodClaim) []const ClaimRequest {
        return self.requests_.slice();
    }
    /// The devices of a claim allocated already (empty otherwise: see
    /// `Nodes.allocation` for what this cycle chose).
    pub fn allocated(self: PodClaim) []const AllocatedDevice {
        return self.allocated_.slice();
    }
    /// The pods the claim is reserved for (`status.reservedFor`), as
    /// `namespace/name`.
    pub fn reservedFor(self: PodClaim) Strs {
        return .{ .items = self.reserved_for_.slice() };
    }
};

// The device records are read where the host lowered them: their layout is
// the canonical ABI's (wit-bindgen's C structs, which the C SDK checks).
comptime {
    std.debug.assert(@sizeOf(CAttributeValue) == 16 and @offsetOf(CAttributeValue, "val") == 8);
    std.debug.assert(@sizeOf(DeviceAttribute) == 24 and @offsetOf(DeviceAttribute, "value_") == 8);
    std.debug.assert(@sizeOf(DeviceCapacity) == 24 and @offsetOf(DeviceCapacity, "value") == 16);
    std.debug.assert(@sizeOf(Device) == 44 and @offsetOf(Device, "taken") == 40);
    std.debug.assert(@sizeOf(AllocatedDevice) == 32);
    std.debug.assert(@sizeOf(ClaimRequest) == 48 and @offsetOf(ClaimRequest, "count") == 24 and @offsetOf(ClaimRequest, "admin_access") == 40);
    std.debug.assert(@sizeOf(PodClaim) == 44 and @offsetOf(PodClaim, "requests_") == 20 and @offsetOf(PodClaim, "reserved_for_") == 36);
    std.debug.assert(@sizeOf(PlacedPod) == 48 and @offsetOf(PlacedPod, "priority") == 24 and @offsetOf(PlacedPod, "deleting") == 44);
    std.debug.assert(@sizeOf(WaitingPod) == 56 and @offsetOf(WaitingPod, "plugins_") == 40 and @offsetOf(WaitingPod, "waited_ms") == 48);
    std.debug.assert(@sizeOf(NodeStatus) == 28 and @offsetOf(NodeStatus, "code_") == 8 and @offsetOf(NodeStatus, "plugin_") == 20);
}

/// The value of `key` in (key, value) pairs (labels sorted by key).
fn pairValue(pairs: []const Pair, key: []const u8) ?[]const u8 {
    for (pairs) |p| {
        if (std.mem.eql(u8, p.key(), key)) return p.value();
    }
    return null;
}

/// A pod bound or assumed on a node (`Nodes.pods`, contract 0.7).
pub const PlacedPod = extern struct {
    namespace_: CStr,
    name_: CStr,
    uid_: CStr,
    /// `spec.priority` (0 when unset).
    priority: i32,
    labels_: CList(Pair),
    requests_: CList(Quantity),
    /// Being deleted (`metadata.deletionTimestamp` set).
    deleting: bool,

    pub fn namespace(self: PlacedPod) []const u8 {
        return self.namespace_.slice();
    }
    pub fn name(self: PlacedPod) []const u8 {
        return self.name_.slice();
    }
    pub fn uid(self: PlacedPod) []const u8 {
        return self.uid_.slice();
    }
    /// Its labels, sorted by key.
    pub fn labels(self: PlacedPod) []const Pair {
        return self.labels_.slice();
    }
    /// The value of the label `key`, if set.
    pub fn label(self: PlacedPod, key: []const u8) ?[]const u8 {
        return pairValue(self.labels(), key);
    }
    /// Its effective requests (non-zero), as `Pod.requests`.
    pub fn requests(self: PlacedPod) []const Quantity {
        return self.requests_.slice();
    }
    /// Its effective request of the resource `resource` (0 if none).
    pub fn request(self: PlacedPod, resource: []const u8) i64 {
        for (self.requests()) |q| {
            if (std.mem.eql(u8, q.name(), resource)) return q.amount;
        }
        return 0;
    }
};

/// A pod waiting at Permit (`ws.waiting.pods`, contract 0.7): placed and
/// holding its node's resources, not bound until every plugin whose
/// `permit` said wait allows it.
pub const WaitingPod = extern struct {
    namespace_: CStr,
    name_: CStr,
    uid_: CStr,
    node_: CStr,
    labels_: CList(Pair),
    plugins_: CList(CStr),
    /// How long it has waited, in milliseconds.
    waited_ms: u64,

    pub fn namespace(self: WaitingPod) []const u8 {
        return self.namespace_.slice();
    }
    pub fn name(self: WaitingPod) []const u8 {
        return self.name_.slice();
    }
    pub fn uid(self: WaitingPod) []const u8 {
        return self.uid_.slice();
    }
    /// The node it is assumed on.
    pub fn node(self: WaitingPod) []const u8 {
        return self.node_.slice();
    }
    /// Its labels, sorted by key.
    pub fn labels(self: WaitingPod) []const Pair {
        return self.labels_.slice();
    }
    /// The value of the label `key`, if set.
    pub fn label(self: WaitingPod, key: []const u8) ?[]const u8 {
        return pairValue(self.labels(), key);
    }
    /// The plugins it still waits for.
    pub fn plugins(self: WaitingPod) Strs {
        return .{ .items = self.plugins_.slice() };
    }
    /// Whether it still waits for the plugin `plugin_name` (this plugin's:
    /// `metadata.name`).
    pub fn waitsFor(self: WaitingPod, plugin_name: []const u8) bool {
        for (self.plugins_.slice()) |p| {
            if (std.mem.eql(u8, p.slice(), plugin_name)) return true;
        }
        return false;
    }
};

/// What Filter found on one node, for `postFilter` (contract 0.7).
pub const NodeStatus = extern struct {
    node_: CStr,
    code_: u8,
    reason_: CStr,
    plugin_: CStr,

    pub fn node(self: NodeStatus) []const u8 {
        return self.node_.slice();
    }
    /// `.unschedulable` or `.unschedulable_and_unresolvable`.
    pub fn code(self: NodeStatus) Code {
        return @enumFromInt(self.code_);
    }
    pub fn reason(self: NodeStatus) []const u8 {
        return self.reason_.slice();
    }
    /// The plugin that rejected the node.
    pub fn plugin(self: NodeStatus) []const u8 {
        return self.plugin_.slice();
    }
};

/// What `postFilter` answers (contract 0.7). The default: no room made
/// (`.unschedulable`, no reason).
pub const PostFilterResult = struct {
    /// `.success`: the plugin made room, and the PostFilter plugins after
    /// it do not run; otherwise its reason joins the pod's failure message.
    status: Status = .{ .code = .unschedulable },
    /// The node the pod is nominated to: the scheduler holds its room there
    /// for the pod (`status.nominatedNodeName`).
    nominated_node: ?[]const u8 = null,
    /// Pods to evict from the nominated node to make that room, as
    /// `namespace/name`: the host evicts them as preemption does, and only
    /// if every one is bound to that node, of lower priority than the pod,
    /// not being deleted already and not protected by a PodDisruptionBudget
    /// that allows no disruption; otherwise it evicts none and the pod's
    /// attempt fails.
    victims: []const []const u8 = &.{},

    /// This plugin made no room: the pod stays unschedulable, `reason`
    /// joining its failure message (empty: nothing to add).
    pub fn unschedulable(reason: []const u8) PostFilterResult {
        return .{ .status = .{ .code = .unschedulable, .reason = reason } };
    }
    /// The pod is nominated to `node`, where evicting `victims` (none when
    /// there is room already) makes room for it.
    pub fn nominate(node: []const u8, victims: []const []const u8) PostFilterResult {
        return .{ .status = .{}, .nominated_node = node, .victims = victims };
    }

    fn lower(self: PostFilterResult) CPostFilterResult {
        return .{
            .status = .{ .code = @intFromEnum(self.status.code), .reason = CStr.of(self.status.reason) },
            .nominated_node = .{ .is_some = self.nominated_node != null, .val = CStr.of(self.nominated_node orelse "") },
            .victims = CList(CStr).map([]const u8, self.victims, CStr.of),
        };
    }
};

/// Permit's verdict (contract 0.7).
pub const Permit = union(enum) {
    /// Bind (once every other Permit plugin allows too).
    allow,
    /// Do not bind: the pod's Reserve is undone and it is retried later.
    reject: []const u8,
    /// Hold the pod, with its node's resources, for at most this many
    /// milliseconds (at most 15 minutes): until this plugin allows it
    /// (`ws.waiting.allow`, from any instance, typically on another pod's
    /// call) or rejects it; at the deadline it is rejected. The scheduler
    /// goes on with other pods meanwhile.
    wait: u32,

    /// `.{ .wait = seconds * 1000 }`.
    pub fn waitSeconds(seconds: u32) Permit {
        return .{ .wait = seconds *| 1000 };
    }
};

/// State the host keeps for the plugin (contract 0.7).
///
/// The plugin's instances are pooled and may run concurrently: memory
/// inside one instance (globals included) is neither kept nor shared, so
/// what must outlive a call (a quota's usage, a gang's members) goes here.
/// The plugin's store (`get`, `set`, `remove`, `keys`, `add`) is shared by
/// every instance of the plugin and kept across calls and pods, as long as
/// the scheduler runs; a new version starts with it empty unless its
/// metadata sets `.keep_state = true`. It is bounded (at most 65 536 keys of
/// at most 1 KiB, keys and values together at most a quarter of the
/// plugin's memory cap): a write past a bound fails (`error.Plugin`, with
/// the host's message) and changes nothing. The cycle's state (`cycleGet`,
/// `cycleSet`) belongs to one attempt of one pod: what PreFilter wrote,
/// Filter, Score, Reserve, Permit, PreBind and PostBind (or Unreserve) of
/// the same attempt read; it is dropped when the attempt ends (at most 1
/// MiB). Values read are arena memory.
pub const state = struct {
    /// The value stored under `key`, if any.
    pub fn get(key: []const u8) ?[]const u8 {
        var v: CList(u8) = .{ .ptr = null, .len = 0 };
        return if (ws_state_get(CStr.of(key), &v)) v.slice() else null;
    }
    /// Stores `value` under `key`.
    pub fn set(key: []const u8, value: []const u8) error{Plugin}!void {
        if (ws_state_set(CStr.of(key), bytes(value))) |e| return hostError(e);
    }
    /// Removes `key`; whether it was there.
    pub fn remove(key: []const u8) bool {
        return ws_state_remove(CStr.of(key));
    }
    /// The keys that start with `prefix`, sorted (at most 10 000).
    pub fn keys(prefix: []const u8) Strs {
        return .{ .items = ws_state_keys(CStr.of(prefix)).slice() };
    }
    /// Adds `delta` to the counter under `key` (an i64 stored as 8 bytes,
    /// little-endian; none counts as 0) and returns its new value, in one
    /// step however many instances call it at once. Fails when the value
    /// there is not 8 bytes, or the sum overflows.
    pub fn add(key: []const u8, delta: i64) error{Plugin}!i64 {
        var v: i64 = 0;
        if (ws_state_add(CStr.of(key), delta, &v)) |e| return hostError(e);
        return v;
    }
    /// The i64 under `key` (8 bytes, little-endian, as `add` and `setI64`
    /// write it); null when there is none or it is not 8 bytes.
    pub fn getI64(key: []const u8) ?i64 {
        var v: i64 = 0;
        return if (ws_state_get_i64(CStr.of(key), &v)) v else null;
    }
    /// Stores `value` under `key` as 8 bytes, little-endian.
    pub fn setI64(key: []const u8, value: i64) error{Plugin}!void {
        if (ws_state_set_i64(CStr.of(key), value)) |e| return hostError(e);
    }
    /// The value the pod's cycle holds under `key`, if any.
    pub fn cycleGet(key: []const u8) ?[]const u8 {
        var v: CList(u8) = .{ .ptr = null, .len = 0 };
        return if (ws_state_cycle_get(CStr.of(key), &v)) v.slice() else null;
    }
    /// Stores `value` under `key` for the rest of the pod's cycle; fails
    /// outside a pod's cycle (in `configure`).
    pub fn cycleSet(key: []const u8, value: []const u8) error{Plugin}!void {
        if (ws_state_cycle_set(CStr.of(key), bytes(value))) |e| return hostError(e);
    }

    fn bytes(value: []const u8) CList(u8) {
        return .{ .ptr = if (value.len == 0) null else @constCast(value.ptr), .len = value.len };
    }
};

/// The pods waiting at Permit (contract 0.7).
pub const waiting = struct {
    /// Every pod waiting at Permit (of every profile), longest waiting first.
    pub fn pods() []const WaitingPod {
        return ws_waiting_pods().slice();
    }
    /// Allows the pod of `uid` for this plugin: it stops waiting for this
    /// plugin (and is bound when no plugin is left). False when it does not
    /// wait for this plugin: a plugin releases only the pods it holds.
    pub fn allow(uid: []const u8) bool {
        return ws_waiting_allow(CStr.of(uid));
    }
    /// Rejects the pod of `uid`, which this plugin holds, with `reason`: it
    /// is not bound, its Reserve is undone, and it is retried later. False
    /// when it does not wait for this plugin.
    pub fn reject(uid: []const u8, reason: []const u8) bool {
        return ws_waiting_reject(CStr.of(uid), CStr.of(reason));
    }
};

/// A (key, value) pair of labels, annotations or the node selector.
pub const Pair = extern struct {
    key_: CStr,
    value_: CStr,

    pub fn key(self: Pair) []const u8 {
        return self.key_.slice();
    }
    pub fn value(self: Pair) []const u8 {
        return self.value_.slice();
    }
};

/// A resource amount (see the contract for units).
pub const Quantity = extern struct {
    name_: CStr,
    amount: i64,

    pub fn name(self: Quantity) []const u8 {
        return self.name_.slice();
    }
};

pub const Taint = extern struct {
    key_: CStr,
    value_: CStr,
    effect_: CStr,

    pub fn key(self: Taint) []const u8 {
        return self.key_.slice();
    }
    pub fn value(self: Taint) []const u8 {
        return self.value_.slice();
    }
    pub fn effect(self: Taint) []const u8 {
        return self.effect_.slice();
    }
};

pub const Toleration = extern struct {
    key_: CStr,
    operator_: CStr,
    value_: CStr,
    effect_: CStr,

    pub fn key(self: Toleration) []const u8 {
        return self.key_.slice();
    }
    pub fn operator(self: Toleration) []const u8 {
        return self.operator_.slice();
    }
    pub fn value(self: Toleration) []const u8 {
        return self.value_.slice();
    }
    pub fn effect(self: Toleration) []const u8 {
        return self.effect_.slice();
    }
};

pub const Condition = extern struct {
    type_: CStr,
    status_: CStr,

    pub fn @"type"(self: Condition) []const u8 {
        return self.type_.slice();
    }
    pub fn status(self: Condition) []const u8 {
        return self.status_.slice();
    }
};

pub const Image = extern struct {
    names_: CList(CStr),
    size_bytes: i64,

    /// Every name of the image (tags and digests).
    pub fn names(self: Image) Strs {
        return .{ .items = self.names_.slice() };
    }
};

/// A list of strings from the host; `at(i)` or iterate over `items` with `.slice()`.
pub const Strs = struct {
    items: []CStr,

    pub fn len(self: Strs) usize {
        return self.items.len;
    }
    pub fn at(self: Strs, i: usize) []const u8 {
        return self.items[i].slice();
    }
};

const CPod = extern struct { handle: i32 };
const CNodes = extern struct { handle: i32 };
const CStatus = extern struct { code: c_int, reason: CStr };
const CRejection = extern struct { index: u32, code: u8, reason: CStr };
const CRejections = extern struct { ptr: ?[*]CRejection, len: usize, cap: usize };
const CMetadata = extern struct { name: [*:0]const u8, version: [*:0]const u8, points: u32 };
const CEvents = extern struct { ptr: ?[*]const ClusterEvent, len: usize };
/// The hooks of the declared points (struct ws_hooks).
const CHooks = extern struct {
    pre_filter: ?*const fn (CPod, *CStatus) callconv(.c) CErr,
    filter: ?*const fn (CPod, CNodes, *CRejections) callconv(.c) CErr,
    pre_score: ?*const fn (CPod, CNodes, *CStatus) callconv(.c) CErr,
    score: ?*const fn (CPod, CNodes, [*]i64, usize) callconv(.c) CErr,
    normalize_score: ?*const fn (CPod, [*]i64, usize) callconv(.c) CErr,
    post_filter: ?*const fn (CPod, CNodes, CList(NodeStatus), *CPostFilterResult) callconv(.c) CErr,
    reserve: ?*const fn (CPod, CNodes, *CStatus) callconv(.c) CErr,
    permit: ?*const fn (CPod, CNodes, *CPermitVerdict) callconv(.c) CErr,
    pre_bind: ?*const fn (CPod, CStr, *CStatus) callconv(.c) CErr,
    post_bind: ?*const fn (CPod, CStr) callconv(.c) void,
};
const CPostFilterResult = extern struct { status: CStatus, nominated_node: OptStr, victims: CList(CStr) };
const CPermitVerdict = extern struct { kind: c_int, reason: CStr, wait_ms: u32 };
const CLabelRequirement = extern struct { key: CStr, operator: CStr, values: CList(CStr) };
const CPodSelector = extern struct {
    namespaces: CList(CStr),
    all_namespaces: bool,
    match_labels: CList(Pair),
    match_expressions: CList(CLabelRequirement),
};
const CErr = ?[*:0]const u8;

extern fn ws_alloc(size: usize, alignment: usize) *anyopaque;
extern fn ws_log(level: c_int, message: CStr) void;
extern fn ws_reject(out: *CRejections, index: u32, code: c_int, reason: CStr) void;
extern fn ws_round_i64(x: f64) i64;
extern fn ws_keep(s: CStr) CStr;
extern fn ws_json_string(json: CStr, key: [*:0]const u8, out: *CStr) bool;
extern fn ws_json_f64(json: CStr, key: [*:0]const u8, out: *f64) bool;
extern fn ws_json_i64(json: CStr, key: [*:0]const u8, out: *i64) bool;
extern fn ws_json_bool(json: CStr, key: [*:0]const u8, out: *bool) bool;
extern fn ws_json_has(json: CStr, key: [*:0]const u8) bool;
extern fn ws_json_keys(json: CStr, keys: *CList(CStr)) bool;

extern fn ws_pod_name(pod: CPod) CStr;
extern fn ws_pod_namespace(pod: CPod) CStr;
extern fn ws_pod_uid(pod: CPod) CStr;
extern fn ws_pod_label(pod: CPod, key: CStr, value: *CStr) bool;
extern fn ws_pod_labels(pod: CPod) CList(Pair);
extern fn ws_pod_annotation(pod: CPod, key: CStr, value: *CStr) bool;
extern fn ws_pod_annotations(pod: CPod) CList(Pair);
extern fn ws_pod_request(pod: CPod, resource: CStr) i64;
extern fn ws_pod_requests(pod: CPod) CList(Quantity);
extern fn ws_pod_tolerations(pod: CPod) CList(Toleration);
extern fn ws_pod_images(pod: CPod) CList(CStr);
extern fn ws_pod_node_selector(pod: CPod) CList(Pair);
extern fn ws_pod_priority(pod: CPod) i32;
extern fn ws_pod_scheduler_name(pod: CPod) CStr;
extern fn ws_pod_owner_kind(pod: CPod, kind: *CStr) bool;
extern fn ws_pod_json(pod: CPod) CStr;

extern fn ws_nodes_len(nodes: CNodes) u32;
extern fn ws_nodes_name(nodes: CNodes, i: u32) CStr;
extern fn ws_nodes_label(nodes: CNodes, i: u32, key: CStr, value: *CStr) bool;
extern fn ws_nodes_labels(nodes: CNodes, i: u32) CList(Pair);
extern fn ws_nodes_annotation(nodes: CNodes, i: u32, key: CStr, value: *CStr) bool;
extern fn ws_nodes_annotations(nodes: CNodes, i: u32) CList(Pair);
extern fn ws_nodes_allocatable(nodes: CNodes, i: u32, resource: CStr) i64;
extern fn ws_nodes_allocatables(nodes: CNodes, i: u32) CList(Quantity);
extern fn ws_nodes_requested(nodes: CNodes, i: u32, resource: CStr) i64;
extern fn ws_nodes_requesteds(nodes: CNodes, i: u32) CList(Quantity);
extern fn ws_nodes_pod_count(nodes: CNodes, i: u32) i64;
extern fn ws_nodes_unschedulable(nodes: CNodes, i: u32) bool;
extern fn ws_nodes_taints(nodes: CNodes, i: u32) CList(Taint);
extern fn ws_nodes_conditions(nodes: CNodes, i: u32) CList(Condition);
extern fn ws_nodes_image_size(nodes: CNodes, i: u32, image: CStr, size: *i64) bool;
extern fn ws_nodes_images(nodes: CNodes, i: u32) CList(Image);
extern fn ws_nodes_random(nodes: CNodes, i: u32) u64;
extern fn ws_nodes_json(nodes: CNodes, i: u32) CStr;
extern fn ws_nodes_names(nodes: CNodes) CList(CStr);
extern fn ws_nodes_label_values(nodes: CNodes, key: CStr) CList(OptStr);
extern fn ws_nodes_annotation_values(nodes: CNodes, key: CStr) CList(OptStr);
extern fn ws_nodes_label_numbers(nodes: CNodes, key: CStr) CList(OptF64);
extern fn ws_nodes_annotation_numbers(nodes: CNodes, key: CStr) CList(OptF64);
extern fn ws_nodes_allocatable_all(nodes: CNodes, resource: CStr) CList(i64);
extern fn ws_nodes_requested_all(nodes: CNodes, resource: CStr) CList(i64);
extern fn ws_nodes_image_bytes(nodes: CNodes, images: CList(CStr)) CList(i64);
extern fn ws_nodes_randoms(nodes: CNodes) CList(u64);
extern fn ws_nodes_pod_counts(nodes: CNodes, selector: *const CPodSelector, counts: *CList(u32)) CErr;
extern fn ws_nodes_domain_counts(nodes: CNodes, topology_key: CStr, selector: *const CPodSelector, counts: *CList(OptU32)) CErr;
extern fn ws_nodes_domains(nodes: CNodes, topology_key: CStr, selector: *const CPodSelector, domains: *CList(Domain)) CErr;
extern fn ws_nodes_cluster_pod_count(nodes: CNodes, selector: *const CPodSelector, count: *u32) CErr;
extern fn ws_nodes_metrics(nodes: CNodes, source: CStr, metrics: *CList(OptMetric)) CErr;
extern fn ws_pod_claims(pod: CPod) CList(PodClaim);
extern fn ws_nodes_devices(nodes: CNodes, i: u32) CList(Device);
extern fn ws_nodes_allocation(nodes: CNodes, i: u32, devices: *CList(AllocatedDevice)) bool;
extern fn ws_nodes_allocated_devices(nodes: CNodes, i: u32, devices: *CList(Device)) bool;
extern fn ws_nodes_pods(nodes: CNodes, i: u32) CList(PlacedPod);
extern fn ws_state_get(key: CStr, value: *CList(u8)) bool;
extern fn ws_state_set(key: CStr, value: CList(u8)) CErr;
extern fn ws_state_remove(key: CStr) bool;
extern fn ws_state_keys(prefix: CStr) CList(CStr);
extern fn ws_state_add(key: CStr, delta: i64, value: *i64) CErr;
extern fn ws_state_get_i64(key: CStr, value: *i64) bool;
extern fn ws_state_set_i64(key: CStr, value: i64) CErr;
extern fn ws_state_cycle_get(key: CStr, value: *CList(u8)) bool;
extern fn ws_state_cycle_set(key: CStr, value: CList(u8)) CErr;
extern fn ws_waiting_pods() CList(WaitingPod);
extern fn ws_waiting_allow(uid: CStr) bool;
extern fn ws_waiting_reject(uid: CStr, reason: CStr) bool;

// ---- the contract's types -------------------------------------------------

/// kube-scheduler's extension points a plugin implements.
pub const Points = packed struct(u32) {
    pre_filter: bool = false,
    filter: bool = false,
    pre_score: bool = false,
    score: bool = false,
    normalize_score: bool = false,
    /// (Since contract 0.7.)
    post_filter: bool = false,
    /// (Since contract 0.7.) Reserve, and Unreserve.
    reserve: bool = false,
    /// (Since contract 0.7.)
    permit: bool = false,
    /// (Since contract 0.7.)
    pre_bind: bool = false,
    /// (Since contract 0.7.)
    post_bind: bool = false,
    _: u22 = 0,
};

/// What kind of object changed (kube-scheduler's `EventResource`).
pub const EventResource = enum(c_int) {
    node = 0,
    /// A pod bound or assumed on a node (and the pending pod's own updates).
    pod = 1,
    /// A namespace (its labels).
    namespace = 2,
    /// A ResourceClaim: a deallocation frees devices (contract 0.6).
    resource_claim = 3,
    /// A ResourceSlice: devices published or changed (contract 0.6).
    resource_slice = 4,
    /// A DeviceClass (contract 0.6).
    device_class = 5,
};

/// How it changed (kube-scheduler's `ActionType`).
pub const EventActions = packed struct(u32) {
    add: bool = false,
    delete: bool = false,
    /// Any update, the finer kinds below included.
    update: bool = false,
    update_node_allocatable: bool = false,
    update_node_label: bool = false,
    /// Or the node became schedulable.
    update_node_taint: bool = false,
    update_node_condition: bool = false,
    update_node_annotation: bool = false,
    update_pod_label: bool = false,
    update_pod_scale_down: bool = false,
    update_pod_toleration: bool = false,
    _: u21 = 0,
};

/// A kind of cluster change (kube-scheduler's `ClusterEvent`):
/// `.{ .resource = .pod, .actions = .{ .add = true, .delete = true } }`.
pub const ClusterEvent = extern struct {
    resource: EventResource,
    actions: EventActions,
};

/// What the plugin is.
pub const Metadata = struct {
    name: [:0]const u8,
    version: [:0]const u8,
    points: Points,
    /// The cluster changes after which a pod this plugin rejected may fit
    /// (kube-scheduler's `EventsToRegister`): such a pod waits until one of
    /// them happens (or five minutes pass). null, the default: every change;
    /// `&.{}`: none (such a pod waits the five minutes).
    events: ?[]const ClusterEvent = null,
    /// (Since contract 0.7.) Keep the plugin's store (`ws.state`) when this
    /// version replaces another of the same name; false, the default: the
    /// new version starts with it empty.
    keep_state: bool = false,
};

/// A label a pod selector requires.
pub const Label = struct {
    key: []const u8,
    value: []const u8,
};

/// A requirement of a pod selector (Kubernetes' `LabelSelectorRequirement`).
pub const LabelRequirement = struct {
    key: []const u8,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    operator: []const u8,
    /// `In`, `NotIn`: at least one; `Exists`, `DoesNotExist`: none.
    values: []const []const u8 = &.{},
};

/// Which pods a pod view counts (Kubernetes' label selector): those of
/// `namespaces` (none: the namespace of the pod being scheduled) or, with
/// `all_namespaces`, of every namespace, whose labels match every label of
/// `match_labels` and every requirement of `match_expressions` (both empty:
/// every pod). `.{ .match_labels = &.{.{ .key = "app", .value = app }} }`.
pub const PodSelector = struct {
    namespaces: []const []const u8 = &.{},
    all_namespaces: bool = false,
    match_labels: []const Label = &.{},
    match_expressions: []const LabelRequirement = &.{},

    fn lower(self: PodSelector) CPodSelector {
        return .{
            .namespaces = CList(CStr).map([]const u8, self.namespaces, CStr.of),
            .all_namespaces = self.all_namespaces,
            .match_labels = CList(Pair).map(Label, self.match_labels, lowerLabel),
            .match_expressions = CList(CLabelRequirement).map(LabelRequirement, self.match_expressions, lowerRequirement),
        };
    }
    fn lowerLabel(l: Label) Pair {
        return .{ .key_ = CStr.of(l.key), .value_ = CStr.of(l.value) };
    }
    fn lowerRequirement(r: LabelRequirement) CLabelRequirement {
        return .{
            .key = CStr.of(r.key),
            .operator = CStr.of(r.operator),
            .values = CList(CStr).map([]const u8, r.values, CStr.of),
        };
    }
};

/// A verdict, with kube-scheduler's status codes.
pub const Code = enum(c_int) {
    success = 0,
    unschedulable = 1,
    unschedulable_and_unresolvable = 2,
    skip = 3,
};

/// A verdict (PreFilter, PreScore) with the reason shown to users.
pub const Status = struct {
    code: Code = .success,
    reason: []const u8 = "",
};

pub const Level = enum(c_int) { trace, debug, info, warn, err };

/// The pod being scheduled (valid during the call).
pub const Pod = struct {
    c: CPod,

    pub fn name(self: Pod) []const u8 {
        return ws_pod_name(self.c).slice();
    }
    pub fn namespace(self: Pod) []const u8 {
        return ws_pod_namespace(self.c).slice();
    }
    pub fn uid(self: Pod) []const u8 {
        return ws_pod_uid(self.c).slice();
    }
    pub fn label(self: Pod, key: []const u8) ?[]const u8 {
        var v: CStr = undefined;
        return if (ws_pod_label(self.c, CStr.of(key), &v)) v.slice() else null;
    }
    pub fn labels(self: Pod) []const Pair {
        return ws_pod_labels(self.c).slice();
    }
    pub fn annotation(self: Pod, key: []const u8) ?[]const u8 {
        var v: CStr = undefined;
        return if (ws_pod_annotation(self.c, CStr.of(key), &v)) v.slice() else null;
    }
    pub fn annotations(self: Pod) []const Pair {
        return ws_pod_annotations(self.c).slice();
    }
    pub fn request(self: Pod, resource: []const u8) i64 {
        return ws_pod_request(self.c, CStr.of(resource));
    }
    pub fn requests(self: Pod) []const Quantity {
        return ws_pod_requests(self.c).slice();
    }
    pub fn tolerations(self: Pod) []const Toleration {
        return ws_pod_tolerations(self.c).slice();
    }
    pub fn images(self: Pod) Strs {
        return .{ .items = ws_pod_images(self.c).slice() };
    }
    pub fn nodeSelector(self: Pod) []const Pair {
        return ws_pod_node_selector(self.c).slice();
    }
    pub fn priority(self: Pod) i32 {
        return ws_pod_priority(self.c);
    }
    pub fn schedulerName(self: Pod) []const u8 {
        return ws_pod_scheduler_name(self.c).slice();
    }
    pub fn ownerKind(self: Pod) ?[]const u8 {
        var v: CStr = undefined;
        return if (ws_pod_owner_kind(self.c, &v)) v.slice() else null;
    }
    pub fn json(self: Pod) []const u8 {
        return ws_pod_json(self.c).slice();
    }
    /// The pod's resource claims (Dynamic Resource Allocation, contract
    /// 0.6), in `spec.resourceClaims` order.
    pub fn claims(self: Pod) []const PodClaim {
        return ws_pod_claims(self.c).slice();
    }
};

/// The batch of candidate nodes, addressed by index `0 .. len()` (valid
/// during the call; an index out of range traps).
pub const Nodes = struct {
    c: CNodes,

    pub fn len(self: Nodes) u32 {
        return ws_nodes_len(self.c);
    }
    pub fn name(self: Nodes, i: u32) []const u8 {
        return ws_nodes_name(self.c, i).slice();
    }
    pub fn label(self: Nodes, i: u32, key: []const u8) ?[]const u8 {
        var v: CStr = undefined;
        return if (ws_nodes_label(self.c, i, CStr.of(key), &v)) v.slice() else null;
    }
    pub fn labels(self: Nodes, i: u32) []const Pair {
        return ws_nodes_labels(self.c, i).slice();
    }
    pub fn annotation(self: Nodes, i: u32, key: []const u8) ?[]const u8 {
        var v: CStr = undefined;
        return if (ws_nodes_annotation(self.c, i, CStr.of(key), &v)) v.slice() else null;
    }
    pub fn annotations(self: Nodes, i: u32) []const Pair {
        return ws_nodes_annotations(self.c, i).slice();
    }
    pub fn allocatable(self: Nodes, i: u32, resource: []const u8) i64 {
        return ws_nodes_allocatable(self.c, i, CStr.of(resource));
    }
    pub fn allocatables(self: Nodes, i: u32) []const Quantity {
        return ws_nodes_allocatables(self.c, i).slice();
    }
    pub fn requested(self: Nodes, i: u32, resource: []const u8) i64 {
        return ws_nodes_requested(self.c, i, CStr.of(resource));
    }
    pub fn requesteds(self: Nodes, i: u32) []const Quantity {
        return ws_nodes_requesteds(self.c, i).slice();
    }
    pub fn podCount(self: Nodes, i: u32) i64 {
        return ws_nodes_pod_count(self.c, i);
    }
    pub fn unschedulable(self: Nodes, i: u32) bool {
        return ws_nodes_unschedulable(self.c, i);
    }
    pub fn taints(self: Nodes, i: u32) []const Taint {
        return ws_nodes_taints(self.c, i).slice();
    }
    pub fn conditions(self: Nodes, i: u32) []const Condition {
        return ws_nodes_conditions(self.c, i).slice();
    }
    pub fn imageSize(self: Nodes, i: u32, image: []const u8) ?i64 {
        var v: i64 = undefined;
        return if (ws_nodes_image_size(self.c, i, CStr.of(image), &v)) v else null;
    }
    pub fn images(self: Nodes, i: u32) []const Image {
        return ws_nodes_images(self.c, i).slice();
    }
    pub fn random(self: Nodes, i: u32) u64 {
        return ws_nodes_random(self.c, i);
    }
    pub fn json(self: Nodes, i: u32) []const u8 {
        return ws_nodes_json(self.c, i).slice();
    }

    // Column accessors: one host call for the whole batch, in batch order.

    pub fn names(self: Nodes) Strs {
        return .{ .items = ws_nodes_names(self.c).slice() };
    }
    pub fn labelValues(self: Nodes, key: []const u8) []const OptStr {
        return ws_nodes_label_values(self.c, CStr.of(key)).slice();
    }
    pub fn annotationValues(self: Nodes, key: []const u8) []const OptStr {
        return ws_nodes_annotation_values(self.c, CStr.of(key)).slice();
    }
    pub fn labelNumbers(self: Nodes, key: []const u8) []const OptF64 {
        return ws_nodes_label_numbers(self.c, CStr.of(key)).slice();
    }
    pub fn annotationNumbers(self: Nodes, key: []const u8) []const OptF64 {
        return ws_nodes_annotation_numbers(self.c, CStr.of(key)).slice();
    }
    pub fn allocatableAll(self: Nodes, resource: []const u8) []const i64 {
        return ws_nodes_allocatable_all(self.c, CStr.of(resource)).slice();
    }
    pub fn requestedAll(self: Nodes, resource: []const u8) []const i64 {
        return ws_nodes_requested_all(self.c, CStr.of(resource)).slice();
    }
    /// Total size of the named images on each node (each image once).
    pub fn imageBytes(self: Nodes, image_names: []const []const u8) []const i64 {
        return ws_nodes_image_bytes(self.c, CList(CStr).map([]const u8, image_names, CStr.of)).slice();
    }
    pub fn randoms(self: Nodes) []const u64 {
        return ws_nodes_randoms(self.c).slice();
    }

    // Pod views (contract 0.2): the pods bound or assumed on the cluster's
    // nodes in this cycle (not those being deleted), counted by selector;
    // one host call each, for the whole batch. An invalid selector fails
    // with `error.Plugin` and the host's message, which becomes the hook's
    // `err` when the hook returns the error (`try`), as with `fail`.

    /// For every node of the batch, the number of selected pods on it.
    pub fn podCounts(self: Nodes, selector: PodSelector) error{Plugin}![]const u32 {
        var l: CList(u32) = .{ .ptr = null, .len = 0 };
        const sel = selector.lower();
        if (ws_nodes_pod_counts(self.c, &sel, &l)) |e| return hostError(e);
        return l.slice();
    }
    /// For every node of the batch, the number of selected pods in its
    /// domain: on every node of the cluster whose label `topology_key` has
    /// the same value as this node's. None when the node lacks the label.
    pub fn domainCounts(self: Nodes, topology_key: []const u8, selector: PodSelector) error{Plugin}![]const OptU32 {
        var l: CList(OptU32) = .{ .ptr = null, .len = 0 };
        const sel = selector.lower();
        if (ws_nodes_domain_counts(self.c, CStr.of(topology_key), &sel, &l)) |e| return hostError(e);
        return l.slice();
    }
    /// Every domain of `topology_key` in the cluster (each value the label
    /// takes on a node, not only on the batch's nodes) with its number of
    /// selected pods (0 included), sorted by value.
    pub fn domains(self: Nodes, topology_key: []const u8, selector: PodSelector) error{Plugin}![]const Domain {
        var l: CList(Domain) = .{ .ptr = null, .len = 0 };
        const sel = selector.lower();
        if (ws_nodes_domains(self.c, CStr.of(topology_key), &sel, &l)) |e| return hostError(e);
        return l.slice();
    }
    /// The number of selected pods in the whole cluster, on every node, not
    /// only the batch's (contract 0.7): what a gang plugin counts of its
    /// gang at Permit, in one call whatever the cluster's size.
    pub fn clusterPodCount(self: Nodes, selector: PodSelector) error{Plugin}!u32 {
        var n: u32 = 0;
        const sel = selector.lower();
        if (ws_nodes_cluster_pod_count(self.c, &sel, &n)) |e| return hostError(e);
        return n;
    }

    // Live metrics (contract 0.3): values per node from the metric sources
    // of the scheduler's configuration, refreshed in the background.

    /// For every node of the batch (one host call), the latest value of the
    /// metric source named `source` (`metrics.sources[].name`): null when
    /// the source has no value for the node or the value is stale; answer
    /// neutrally then. Fails with `error.Plugin` and the host's message when
    /// no source of that name is configured (declare the sources read in
    /// `pub fn metricSources`: the host then finds that at load).
    pub fn metrics(self: Nodes, source: []const u8) error{Plugin}![]const OptMetric {
        var l: CList(OptMetric) = .{ .ptr = null, .len = 0 };
        if (ws_nodes_metrics(self.c, CStr.of(source), &l)) |e| return hostError(e);
        return l.slice();
    }

    // Devices (contract 0.6): Dynamic Resource Allocation's view of a node,
    // from the cluster's ResourceSlices.

    /// The devices node `i` can use, by driver, pool and name (at most 4096).
    pub fn devices(self: Nodes, i: u32) []const Device {
        return ws_nodes_devices(self.c, i).slice();
    }
    /// What DynamicResources allocated for the pod's unallocated claims on
    /// node `i` in this cycle (at Filter, before this plugin's Filter when
    /// DynamicResources runs first, as by default; at PreScore and Score for
    /// every feasible node): the devices, by claim in the pod's order. null
    /// when the pod has no claim to allocate, or the node was not allocated
    /// for (yet).
    pub fn allocation(self: Nodes, i: u32) ?[]const AllocatedDevice {
        var l: CList(AllocatedDevice) = .{ .ptr = null, .len = 0 };
        return if (ws_nodes_allocation(self.c, i, &l)) l.slice() else null;
    }
    /// The devices DynamicResources allocated for the pod on node `i` in
    /// this cycle (`allocation`), each with its attributes and capacity
    /// (from `devices`), in allocation order; null when `allocation` is.
    /// Two host calls, the second only when something was allocated.
    pub fn allocatedDevices(self: Nodes, i: u32) ?[]const Device {
        var l: CList(Device) = .{ .ptr = null, .len = 0 };
        return if (ws_nodes_allocated_devices(self.c, i, &l)) l.slice() else null;
    }

    /// (Contract 0.7.) The pods bound or assumed on node `i`, in no
    /// particular order; at most 1000 (what a custom preemption picks its
    /// victims from).
    pub fn pods(self: Nodes, i: u32) []const PlacedPod {
        return ws_nodes_pods(self.c, i).slice();
    }
};

/// The rejections Filter returns.
pub const Rejections = struct {
    c: *CRejections,

    /// Rejects node `index` of the batch.
    pub fn reject(self: Rejections, index: u32, code: Code, reason: []const u8) void {
        ws_reject(self.c, index, @intFromEnum(code), CStr.of(reason));
    }
};

/// The plugin's args (`pluginConfig[].args` as JSON, `{}` when none), with
/// readers for the fields of the top-level object. Valid (with the slices it
/// returns) as long as its configuration is current.
pub const Args = struct {
    json: []const u8,

    /// A string field (unescaped); null when absent or not a string.
    pub fn string(self: Args, comptime key: [:0]const u8) ?[]const u8 {
        var v: CStr = undefined;
        return if (ws_json_string(CStr.of(self.json), key.ptr, &v)) v.slice() else null;
    }
    /// A number field.
    pub fn number(self: Args, comptime key: [:0]const u8) ?f64 {
        var v: f64 = undefined;
        return if (ws_json_f64(CStr.of(self.json), key.ptr, &v)) v else null;
    }
    /// An integral number field.
    pub fn int(self: Args, comptime key: [:0]const u8) ?i64 {
        var v: i64 = undefined;
        return if (ws_json_i64(CStr.of(self.json), key.ptr, &v)) v else null;
    }
    /// A boolean field.
    pub fn boolean(self: Args, comptime key: [:0]const u8) ?bool {
        var v: bool = undefined;
        return if (ws_json_bool(CStr.of(self.json), key.ptr, &v)) v else null;
    }
    /// Whether the field is present, whatever its value.
    pub fn has(self: Args, comptime key: [:0]const u8) bool {
        return ws_json_has(CStr.of(self.json), key.ptr);
    }
    /// The field names of the object, in order (valid during the call): to
    /// reject fields the plugin does not know. null when the args are not
    /// an object.
    pub fn keys(self: Args) ?Strs {
        var l: CList(CStr) = .{ .ptr = null, .len = 0 };
        return if (ws_json_keys(CStr.of(self.json), &l)) .{ .items = l.slice() } else null;
    }
};

// ---- services -------------------------------------------------------------

/// Writes a line to the scheduler's log.
pub fn log(level: Level, message: []const u8) void {
    ws_log(@intFromEnum(level), CStr.of(message));
}

/// Formats into the per-call arena.
pub fn print(comptime fmt: []const u8, args: anytype) ![]const u8 {
    return std.fmt.allocPrint(allocator, fmt, args);
}

/// Rust's `x.round() as i64`: half away from zero, saturating, NaN -> 0.
pub fn roundI64(x: f64) i64 {
    return ws_round_i64(x);
}

/// Copies `s` so that it outlives the call (for `configure`).
pub fn keep(s: []const u8) []const u8 {
    return ws_keep(CStr.of(s)).slice();
}

var fail_message: ?[:0]const u8 = null;

/// Fails with a message from the host (a NUL-terminated copy in the arena).
fn hostError(message: [*:0]const u8) error{Plugin} {
    fail_message = std.mem.span(message);
    return error.Plugin;
}

/// Fails the hook with a formatted message: `return ws.fail("bad {s}", .{x});`
pub fn fail(comptime fmt: []const u8, args: anytype) error{Plugin} {
    fail_message = std.fmt.allocPrintSentinel(allocator, fmt, args, 0) catch "out of memory";
    return error.Plugin;
}

/// The per-call arena as a `std.mem.Allocator` (freeing is a no-op; memory
/// returns to the arena after the export call).
pub const allocator: std.mem.Allocator = .{ .ptr = undefined, .vtable = &arena_vtable };

const arena_vtable: std.mem.Allocator.VTable = .{
    .alloc = arenaAlloc,
    .resize = std.mem.Allocator.noResize,
    .remap = std.mem.Allocator.noRemap,
    .free = std.mem.Allocator.noFree,
};

fn arenaAlloc(_: *anyopaque, len: usize, alignment: std.mem.Alignment, _: usize) ?[*]u8 {
    return @ptrCast(ws_alloc(len, alignment.toByteUnits()));
}

// ---- the glue -------------------------------------------------------------

fn errorMessage(err: anyerror) CErr {
    if (err == error.Plugin) {
        if (fail_message) |m| {
            fail_message = null;
            return m.ptr;
        }
    }
    return @errorName(err).ptr;
}

/// Unreserve and PostBind cannot fail: a hook that returns an error union
/// has its error logged.
fn noFail(comptime hook: []const u8, result: anytype) void {
    if (@typeInfo(@TypeOf(result)) == .error_union) {
        result catch |e| {
            const m = std.mem.span(errorMessage(e) orelse "error");
            log(.err, print(hook ++ ": {s}", .{m}) catch m);
        };
    }
}

/// The hooks of the points: function, `Points` field, parameters.
const hook_names = .{
    .{ "preFilter", "pre_filter", 1 },
    .{ "filter", "filter", 3 },
    .{ "preScore", "pre_score", 2 },
    .{ "score", "score", 3 },
    .{ "normalizeScore", "normalize_score", 2 },
    .{ "postFilter", "post_filter", 3 },
    .{ "reserve", "reserve", 2 },
    .{ "permit", "permit", 2 },
    .{ "preBind", "pre_bind", 2 },
    .{ "postBind", "post_bind", 2 },
    // Optional with `.reserve` (checked apart).
    .{ "unreserve", "", 2 },
    .{ "configure", "", 1 },
    .{ "metricSources", "", 0 },
};

/// Fails the build on what would leave a plugin silently without a point:
/// a pub fn that looks like a misspelt hook (`scores`, `Score`,
/// `filterNodes`), a point declared in `metadata.points` without its pub
/// fn (or a hook without its point), no point at all.
fn checkHooks(comptime T: type, comptime points: Points) void {
    @setEvalBranchQuota(200_000);
    for (@typeInfo(T).@"struct".decls) |d| {
        if (@typeInfo(@TypeOf(@field(T, d.name))) != .@"fn") continue;
        const args = @typeInfo(@TypeOf(@field(T, d.name))).@"fn".params.len;
        if (meantHook(d.name, args)) |h| @compileError(std.fmt.comptimePrint(
            "pub fn {s} is not a hook of wasmsched; did you mean {s}?",
            .{ d.name, h },
        ));
    }
    inline for (hook_names) |h| {
        if (h[1].len == 0) continue;
        const declared = @field(points, h[1]);
        if (declared and !@hasDecl(T, h[0])) @compileError(std.fmt.comptimePrint(
            "metadata.points has .{s} but there is no pub fn {s}",
            .{ h[1], h[0] },
        ));
        if (!declared and @hasDecl(T, h[0])) @compileError(std.fmt.comptimePrint(
            "pub fn {s} is a hook but metadata.points lacks .{s} = true",
            .{ h[0], h[1] },
        ));
    }
    if (@hasDecl(T, "unreserve") and !points.reserve)
        @compileError("pub fn unreserve is a hook but metadata.points lacks .reserve = true");
    if (@as(u32, @bitCast(points)) == 0) @compileError("metadata.points is empty: a plugin implements at least one point");
}

/// The hook a function named `name` with `args` parameters was probably
/// meant to be: the same letters in another case or with underscores, a
/// few edits away, or one name inside the other (with the hook's
/// parameters).
fn meantHook(comptime name: []const u8, comptime args: usize) ?[]const u8 {
    const s = squash(name);
    var best: ?[]const u8 = null;
    var cost: usize = std.math.maxInt(usize);
    inline for (hook_names) |h| {
        if (std.mem.eql(u8, name, h[0])) return null;
        const k = squash(h[0]);
        const d = distance(s, k);
        if (d == 0) return h[0];
        const inside = @min(s.len, k.len) >= 5 and (std.mem.startsWith(u8, s, k) or std.mem.endsWith(u8, s, k) or std.mem.startsWith(u8, k, s));
        const c: usize = if (d <= 1 or (k.len > 6 and d <= 2)) d else if (inside) @as(usize, 10) + @max(s.len, k.len) - @min(s.len, k.len) else std.math.maxInt(usize);
        if (c < cost and args == h[2]) {
            best = h[0];
            cost = c;
        }
    }
    return best;
}

fn squash(comptime name: []const u8) []const u8 {
    var out: []const u8 = "";
    for (name) |ch| {
        if (ch != '_') out = out ++ [_]u8{std.ascii.toLower(ch)};
    }
    return out;
}

/// Edit distance, a transposition counting as one edit.
fn distance(comptime a: []const u8, comptime b: []const u8) usize {
    var d: [a.len + 1][b.len + 1]usize = undefined;
    for (0..a.len + 1) |i| d[i][0] = i;
    for (0..b.len + 1) |j| d[0][j] = j;
    for (1..a.len + 1) |i| {
        for (1..b.len + 1) |j| {
            const sub: usize = if (a[i - 1] == b[j - 1]) 0 else 1;
            d[i][j] = @min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + sub);
            if (i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]) d[i][j] = @min(d[i][j], d[i - 2][j - 2] + 1);
        }
    }
    return d[a.len][b.len];
}

/// Exports the hooks `T` declares (see the top of this file).
pub fn plugin(comptime T: type) void {
    const meta: Metadata = T.metadata;
    comptime checkHooks(T, meta.points);
    const G = struct {
        const md: CMetadata = .{
            .name = meta.name.ptr,
            .version = meta.version.ptr,
            .points = @bitCast(meta.points),
        };
        const events: CEvents = if (meta.events) |es|
            .{ .ptr = if (es.len == 0) null else es.ptr, .len = es.len }
        else
            .{ .ptr = null, .len = 0 };

        fn configure(args: CStr) callconv(.c) CErr {
            const r: anyerror!void = T.configure(.{ .json = args.slice() });
            r catch |e| return errorMessage(e);
            return null;
        }
        fn preFilter(pod: CPod, status: *CStatus) callconv(.c) CErr {
            const r: anyerror!Status = T.preFilter(.{ .c = pod });
            const st = r catch |e| return errorMessage(e);
            status.* = .{ .code = @intFromEnum(st.code), .reason = CStr.of(st.reason) };
            return null;
        }
        fn filter(pod: CPod, nodes: CNodes, out: *CRejections) callconv(.c) CErr {
            const r: anyerror!void = T.filter(.{ .c = pod }, .{ .c = nodes }, .{ .c = out });
            r catch |e| return errorMessage(e);
            return null;
        }
        fn preScore(pod: CPod, nodes: CNodes, status: *CStatus) callconv(.c) CErr {
            const r: anyerror!Status = T.preScore(.{ .c = pod }, .{ .c = nodes });
            const st = r catch |e| return errorMessage(e);
            status.* = .{ .code = @intFromEnum(st.code), .reason = CStr.of(st.reason) };
            return null;
        }
        fn score(pod: CPod, nodes: CNodes, scores: [*]i64, n: usize) callconv(.c) CErr {
            const r: anyerror!void = T.score(.{ .c = pod }, .{ .c = nodes }, scores[0..n]);
            r catch |e| return errorMessage(e);
            return null;
        }
        fn normalizeScore(pod: CPod, scores: [*]i64, n: usize) callconv(.c) CErr {
            const r: anyerror!void = T.normalizeScore(.{ .c = pod }, scores[0..n]);
            r catch |e| return errorMessage(e);
            return null;
        }
        fn postFilter(pod: CPod, nodes: CNodes, statuses: CList(NodeStatus), out: *CPostFilterResult) callconv(.c) CErr {
            const r: anyerror!PostFilterResult = T.postFilter(.{ .c = pod }, .{ .c = nodes }, statuses.slice());
            const res = r catch |e| return errorMessage(e);
            out.* = res.lower();
            return null;
        }
        fn reserve(pod: CPod, nodes: CNodes, status: *CStatus) callconv(.c) CErr {
            const r: anyerror!Status = T.reserve(.{ .c = pod }, .{ .c = nodes });
            const st = r catch |e| return errorMessage(e);
            status.* = .{ .code = @intFromEnum(st.code), .reason = CStr.of(st.reason) };
            return null;
        }
        fn unreserve(pod: CPod, node: CStr) callconv(.c) void {
            noFail("unreserve", T.unreserve(.{ .c = pod }, node.slice()));
        }
        fn permit(pod: CPod, nodes: CNodes, out: *CPermitVerdict) callconv(.c) CErr {
            const r: anyerror!Permit = T.permit(.{ .c = pod }, .{ .c = nodes });
            const v = r catch |e| return errorMessage(e);
            out.* = switch (v) {
                .allow => .{ .kind = 0, .reason = CStr.of(""), .wait_ms = 0 },
                .reject => |why| .{ .kind = 1, .reason = CStr.of(why), .wait_ms = 0 },
                .wait => |ms| .{ .kind = 2, .reason = CStr.of(""), .wait_ms = ms },
            };
            return null;
        }
        fn preBind(pod: CPod, node: CStr, status: *CStatus) callconv(.c) CErr {
            const r: anyerror!Status = T.preBind(.{ .c = pod }, node.slice());
            const st = r catch |e| return errorMessage(e);
            status.* = .{ .code = @intFromEnum(st.code), .reason = CStr.of(st.reason) };
            return null;
        }
        fn postBind(pod: CPod, node: CStr) callconv(.c) void {
            noFail("postBind", T.postBind(.{ .c = pod }, node.slice()));
        }
        const keep_state: bool = true;
        // The C SDK hands the list to the host as is: lowered into the
        // arena (released after the host read it).
        fn metricSources() callconv(.c) CList(CStr) {
            const sources: []const []const u8 = T.metricSources();
            return CList(CStr).map([]const u8, sources, CStr.of);
        }
    };
    const H = struct {
        // The C SDK calls the points' hooks through this table (checkHooks
        // made it agree with metadata.points).
        const hooks: CHooks = .{
            .pre_filter = if (meta.points.pre_filter) &G.preFilter else null,
            .filter = if (meta.points.filter) &G.filter else null,
            .pre_score = if (meta.points.pre_score) &G.preScore else null,
            .score = if (meta.points.score) &G.score else null,
            .normalize_score = if (meta.points.normalize_score) &G.normalizeScore else null,
            .post_filter = if (meta.points.post_filter) &G.postFilter else null,
            .reserve = if (meta.points.reserve) &G.reserve else null,
            .permit = if (meta.points.permit) &G.permit else null,
            .pre_bind = if (meta.points.pre_bind) &G.preBind else null,
            .post_bind = if (meta.points.post_bind) &G.postBind else null,
        };
    };
    @export(&G.md, .{ .name = "ws_plugin" });
    @export(&H.hooks, .{ .name = "ws_plugin_hooks" });
    // Without it, the C SDK answers metadata `events` none.
    if (meta.events != null) @export(&G.events, .{ .name = "ws_plugin_events" });
    // Without it, the C SDK answers metadata `keep-state` false.
    if (meta.keep_state) @export(&G.keep_state, .{ .name = "ws_plugin_keep_state" });
    // Called by the C SDK when defined (and `.reserve` declared).
    if (@hasDecl(T, "unreserve")) @export(&G.unreserve, .{ .name = "ws_unreserve" });
    if (@hasDecl(T, "configure")) @export(&G.configure, .{ .name = "ws_configure" });
    // Without it, the C SDK answers `metric-sources` with none.
    if (@hasDecl(T, "metricSources")) @export(&G.metricSources, .{ .name = "ws_metric_sources" });
}
