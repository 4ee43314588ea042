// Types of the wasmsched JavaScript SDK (plugins/sdk/js/wasmsched.js).
// WIT -> JS: option<T> is `T | null` on QuickJS (the default engine),
// `T | undefined` on StarlingMonkey; s64/u64 are BigInts on both (declared
// `number` here: wrap them in Number()).
// Records are objects with camelCase keys.

/** An absent option<T>: `null` on QuickJS, `undefined` on StarlingMonkey;
 * test it with `v == null`. */
export type Opt<T> = T | null | undefined;

export type Code = "success" | "unschedulable" | "unschedulable-and-unresolvable" | "skip";
export declare const Code: {
  readonly SUCCESS: "success";
  readonly UNSCHEDULABLE: "unschedulable";
  readonly UNSCHEDULABLE_AND_UNRESOLVABLE: "unschedulable-and-unresolvable";
  readonly SKIP: "skip";
};
export type Point =
  | "preFilter" | "filter" | "preScore" | "score" | "normalizeScore"
  | "postFilter" | "reserve" | "permit" | "preBind" | "postBind";
export declare const Points: {
  readonly PRE_FILTER: "preFilter";
  readonly FILTER: "filter";
  readonly PRE_SCORE: "preScore";
  readonly SCORE: "score";
  readonly NORMALIZE_SCORE: "normalizeScore";
  /** Contract 0.7. */
  readonly POST_FILTER: "postFilter";
  /** Reserve and Unreserve (contract 0.7). */
  readonly RESERVE: "reserve";
  /** Contract 0.7. */
  readonly PERMIT: "permit";
  /** Contract 0.7. */
  readonly PRE_BIND: "preBind";
  /** Contract 0.7. */
  readonly POST_BIND: "postBind";
};

export type EventResource = "node" | "pod" | "namespace" | "resource-claim" | "resource-slice" | "device-class";
export declare const EventResource: {
  readonly NODE: "node";
  readonly POD: "pod";
  readonly NAMESPACE: "namespace";
  /** A ResourceClaim: a deallocation frees devices (contract 0.6). */
  readonly RESOURCE_CLAIM: "resource-claim";
  /** A ResourceSlice: devices published or changed (contract 0.6). */
  readonly RESOURCE_SLICE: "resource-slice";
  /** A DeviceClass (contract 0.6). */
  readonly DEVICE_CLASS: "device-class";
};
export type EventAction =
  | "add" | "delete" | "update"
  | "updateNodeAllocatable" | "updateNodeLabel" | "updateNodeTaint" | "updateNodeCondition" | "updateNodeAnnotation"
  | "updatePodLabel" | "updatePodScaleDown" | "updatePodToleration";
export declare const EventActions: {
  readonly ADD: "add";
  readonly DELETE: "delete";
  readonly UPDATE: "update";
  readonly UPDATE_NODE_ALLOCATABLE: "updateNodeAllocatable";
  readonly UPDATE_NODE_LABEL: "updateNodeLabel";
  readonly UPDATE_NODE_TAINT: "updateNodeTaint";
  readonly UPDATE_NODE_CONDITION: "updateNodeCondition";
  readonly UPDATE_NODE_ANNOTATION: "updateNodeAnnotation";
  readonly UPDATE_POD_LABEL: "updatePodLabel";
  readonly UPDATE_POD_SCALE_DOWN: "updatePodScaleDown";
  readonly UPDATE_POD_TOLERATION: "updatePodToleration";
};
/** A kind of cluster change: changes of `resource` of any of `actions`. */
export interface ClusterEvent { resource: EventResource; actions: EventAction[] }

export interface Status { code: Code; reason?: string }
export interface Rejection { index: number; code?: Code; reason?: string }
export interface Quantity { name: string; amount: number }
export interface Taint { key: string; value: string; effect: string }
export interface Toleration { key: string; operator: string; value: string; effect: string }
export interface Condition { type: string; status: string }
export interface Image { names: string[]; sizeBytes: number }
/** One node's value of a metric source, with what was placed on the node
 * since it was taken (load the value cannot show yet). */
export interface Metric {
  /** The value the source's query gave for the node. */
  value: number;
  /** u64: how old the value is, in milliseconds. */
  ageMs: number;
  /** Pods bound or assumed on the node since the value was taken. */
  podsSince: number;
  /** s64: the sum of their CPU requests, in millicores. */
  cpuSince: number;
  /** s64: the sum of their memory requests, in bytes. */
  memorySince: number;
}
// Devices (contract 0.6, Dynamic Resource Allocation).
/** The value of a device attribute, a tagged union: switch on `tag`.
 * `int` is an s64 (a BigInt at run time, see the top of this file). */
export type AttributeValue =
  | { tag: "int"; val: number }
  | { tag: "boolean"; val: boolean }
  | { tag: "text"; val: string }
  /** A semantic version, as written (`1.2.3`). */
  | { tag: "version"; val: string };
/** One attribute of a device; `name` is fully qualified, `domain/name` (a
 * name a driver writes without a domain gets the driver's). */
export interface DeviceAttribute { name: string; value: AttributeValue }
/** One capacity of a device: `quantity` as written (`80Gi`), `value` (s64)
 * rounded up to an integer (bytes for `80Gi`). */
export interface DeviceCapacity { name: string; quantity: string; value: number }
/** A device a node can use: published in a ResourceSlice for the node, for
 * a set of nodes that includes it or for every node. */
export interface Device {
  driver: string;
  pool: string;
  /** `spec.devices[].name`, unique in its pool. */
  name: string;
  attributes: DeviceAttribute[];
  capacity: DeviceCapacity[];
  /** Allocated to a claim already (or to one whose pod is being bound):
   * not available to this pod, unless it is one of this pod's claims'
   * devices. */
  taken: boolean;
}
/** A device chosen for a request of a claim. */
export interface AllocatedDevice {
  /** The request's name; `request/subrequest` for a `firstAvailable`
   * request, naming the choice taken. */
  request: string;
  driver: string;
  pool: string;
  device: string;
}
/** One request of a claim (`spec.devices.requests[]`); a `firstAvailable`
 * request is listed once per subrequest, named `request/subrequest`. */
export interface ClaimRequest {
  name: string;
  deviceClass: string;
  /** `ExactCount` or `All`. */
  allocationMode: string;
  /** u64: how many devices (`ExactCount`). */
  count: number;
  /** The CEL selectors of the request (the class's are not listed). */
  selectors: string[];
  adminAccess: boolean;
}
/** One of the pod's `spec.resourceClaims`, with the ResourceClaim it names. */
export interface PodClaim {
  /** `spec.resourceClaims[].name`, as containers refer to it. */
  name: string;
  /** The ResourceClaim's name; none when not known yet (made from a
   * template, not created yet) or none is needed. */
  claim: Opt<string>;
  requests: ClaimRequest[];
  /** The devices of a claim allocated already (empty otherwise: see
   * `nodes.allocation`). */
  allocated: AllocatedDevice[];
  /** `status.reservedFor`, as `namespace/name`. */
  reservedFor: string[];
}
/** A pod bound or assumed on a node (`nodes.pods(i)`, contract 0.7). */
export interface PlacedPod {
  namespace: string;
  name: string;
  uid: string;
  /** `spec.priority` (0 when unset). */
  priority: number;
  /** Its labels, sorted by key. */
  labels: [string, string][];
  /** Its effective requests (non-zero), as `pod.requests()`. */
  requests: Quantity[];
  /** Being deleted (`metadata.deletionTimestamp` set). */
  deleting: boolean;
}
/** What Filter found on one node, for `postFilter` (contract 0.7). */
export interface NodeStatus {
  node: string;
  /** `unschedulable` or `unschedulable-and-unresolvable`. */
  code: Code;
  reason: string;
  /** The plugin that rejected the node. */
  plugin: string;
}
/** What `postFilter` returns (contract 0.7). `code` defaults to `success`
 * (the plugin made room: the PostFilter plugins after it do not run) when
 * a node is nominated, to `unschedulable` otherwise (the reason joins the
 * pod's failure message). */
export interface PostFilterResult {
  code?: Code;
  reason?: string;
  /** The node the pod is nominated to: the scheduler holds its room there
   * for the pod (`status.nominatedNodeName`). */
  nominatedNode?: string;
  /** Pods to evict from the nominated node to make that room, as
   * `namespace/name`. The host evicts them as preemption does, and only if
   * every one is bound to that node, of lower priority than the pod, not
   * being deleted already, and not protected by a PodDisruptionBudget that
   * allows no disruption; otherwise it evicts none and the attempt fails. */
  victims?: Iterable<string>;
}
/** What `permit` returns (contract 0.7): nothing or `{ allow: true }` binds
 * the pod (once every other Permit plugin allows it too); `{ reject }` does
 * not (its Reserve is undone and it is retried later); `{ waitMs }` holds
 * it, with its node's resources, for at most that many milliseconds (at
 * most 15 minutes) until the plugin allows or rejects it through `waiting`
 * (at the deadline it is rejected). */
export type PermitVerdict = { allow: true } | { reject: string } | { waitMs: number };
/** A pod waiting at Permit (`waiting.pods()`, contract 0.7). */
export interface WaitingPod {
  namespace: string;
  name: string;
  uid: string;
  /** The node it is assumed on. */
  node: string;
  /** Its labels, sorted by key. */
  labels: [string, string][];
  /** The plugins it still waits for. */
  plugins: string[];
  /** u64: how long it has waited, in milliseconds. */
  waitedMs: number;
}
/** `key operator values`: operator `In`, `NotIn` (values: at least one),
 * `Exists` or `DoesNotExist` (no values). */
export interface LabelRequirement { key: string; operator: string; values?: string[] }
/** Which pods a pod view counts (every field optional): those with every
 * label of `matchLabels` that satisfy every `matchExpressions` requirement
 * (both empty: every pod), in `namespaces` (empty: the namespace of the pod
 * being scheduled) or in every namespace with `allNamespaces`. */
export interface PodSelector {
  matchLabels?: Record<string, string> | [string, string][];
  matchExpressions?: LabelRequirement[];
  namespaces?: string[];
  allNamespaces?: boolean;
}

/** The pod being scheduled; valid during the call that receives it. */
export interface Pod {
  name(): string;
  namespace(): string;
  uid(): string;
  label(key: string): Opt<string>;
  labels(): [string, string][];
  annotation(key: string): Opt<string>;
  annotations(): [string, string][];
  request(name: string): number;
  requests(): Quantity[];
  tolerations(): Toleration[];
  images(): string[];
  nodeSelector(): [string, string][];
  priority(): number;
  schedulerName(): string;
  ownerKind(): Opt<string>;
  json(): string;
  /** The pod's resource claims (contract 0.6), in `spec.resourceClaims`
   * order. */
  claims(): PodClaim[];
}

/** A batch of candidate nodes, addressed by index 0 .. len(). */
export interface Nodes {
  len(): number;
  name(index: number): string;
  label(index: number, key: string): Opt<string>;
  labels(index: number): [string, string][];
  annotation(index: number, key: string): Opt<string>;
  annotations(index: number): [string, string][];
  allocatable(index: number, name: string): number;
  allocatables(index: number): Quantity[];
  requested(index: number, name: string): number;
  requesteds(index: number): Quantity[];
  podCount(index: number): number;
  unschedulable(index: number): boolean;
  taints(index: number): Taint[];
  conditions(index: number): Condition[];
  imageSize(index: number, name: string): Opt<number>;
  images(index: number): Image[];
  /** u64: as a Number, not exact above 2^53. */
  random(index: number): number;
  json(index: number): string;
  // Column accessors: one host call for the whole batch, in batch order.
  names(): string[];
  labelValues(key: string): Opt<string>[];
  annotationValues(key: string): Opt<string>[];
  labelNumbers(key: string): Opt<number>[];
  annotationNumbers(key: string): Opt<number>[];
  allocatableAll(name: string): number[];
  requestedAll(name: string): number[];
  imageBytes(names: string[]): number[];
  randoms(): number[];
  // Packed columns (contract 0.5): the numeric columns above as bytes, 8
  // per node in batch order, little-endian; read them through a typed array
  // (`new Float64Array(b.buffer, b.byteOffset, b.length / 8)`).
  /** `labelNumbers` as f64 values; NaN for none. */
  labelNumbersPacked(key: string): Uint8Array;
  /** `annotationNumbers` as f64 values; NaN for none. */
  annotationNumbersPacked(key: string): Uint8Array;
  /** `allocatableAll` as s64 values (a BigInt64Array). */
  allocatableAllPacked(name: string): Uint8Array;
  /** `requestedAll` as s64 values (a BigInt64Array). */
  requestedAllPacked(name: string): Uint8Array;
  /** `randoms` as u64 values (a BigUint64Array). */
  randomsPacked(): Uint8Array;
  // Pod views: the pods bound or assumed in the cluster that `selector`
  // selects, counted; they throw a PluginError when the host rejects the
  // selector.
  /** Per node of the batch: the selected pods on it. */
  podCounts(selector?: PodSelector): number[];
  /** Per node of the batch: the selected pods in its domain of
   * `topologyKey`; none when the node lacks the label. */
  domainCounts(topologyKey: string, selector?: PodSelector): Opt<number>[];
  /** Every domain of `topologyKey` in the cluster with its selected pods
   * (0 included), sorted by value. */
  domains(topologyKey: string, selector?: PodSelector): [string, number][];
  /** The selected pods in the whole cluster, on every node, not only the
   * batch's (contract 0.7): a gang's placed members, in one call. */
  clusterPodCount(selector?: PodSelector): number;
  /** Live metrics, one host call: per node of the batch, the latest value
   * of the metric source named `source`; none when the source has no value
   * for the node or only a stale one. Throws a PluginError when no source
   * of that name is configured. */
  metrics(source: string): Opt<Metric>[];
  // Devices (contract 0.6): Dynamic Resource Allocation's view of a node.
  /** The devices node `index` can use, by driver, pool and name (at most
   * 4096). */
  devices(index: number): Device[];
  /** What DynamicResources allocated for the pod's unallocated claims on
   * node `index` in this cycle (at Filter, before this plugin's Filter when
   * DynamicResources runs first; at PreScore and Score for every feasible
   * node): the devices, by claim in the pod's order. None when the pod has
   * no claim to allocate, or the node was not allocated for (yet). */
  allocation(index: number): Opt<AllocatedDevice[]>;
  /** The SDK's: the devices of `allocation(index)` with their attributes
   * and capacity (from `devices(index)`), in allocation order; none when
   * `allocation` is none. */
  allocatedDevices(index: number): Opt<Device[]>;
  /** The pods bound or assumed on node `index`, in no particular order; at
   * most 1000 (contract 0.7: what a custom preemption picks its victims
   * from). */
  pods(index: number): PlacedPod[];
}

/** A plugin: these keys and no others (an object literal with a misspelt
 * point, such as `scores`, is a type error, as `definePlugin` rejects it at
 * build time); the plugin's own state and helpers are named `_...`. */
export interface PluginDefinition {
  name: string;
  version?: string;
  points?: Point[];
  /** The cluster changes after which a pod the plugin rejected may fit;
   * not set: every change. */
  events?: ClusterEvent[];
  /** Keep the plugin's store (`state`) when this version replaces another
   * of the same name (contract 0.7); not set: it starts empty. */
  keepState?: boolean;
  configure?(args: any): void;
  /** The metric sources (`metrics.sources[].name`) the plugin reads with
   * `nodes.metrics`, as `configure` set it up; called once after it, and
   * checked by the host at load. Not set: none. */
  metricSources?(): string[];
  preFilter?(pod: Pod): Status | Code | void;
  filter?(pod: Pod, nodes: Nodes): Iterable<Rejection>;
  preScore?(pod: Pod, nodes: Nodes): Status | Code | void;
  score?(pod: Pod, nodes: Nodes): Iterable<number>;
  normalizeScore?(pod: Pod, scores: number[]): Iterable<number>;
  /** The pod fits on no node (contract 0.7): `statuses` says why on each
   * node Filter rejected, `nodes` holds those nodes in the same order.
   * Nothing: no room made. */
  postFilter?(pod: Pod, nodes: Nodes, statuses: NodeStatus[]): PostFilterResult | Code | void;
  /** The pod was placed on the one node of `nodes`, its resources about to
   * be held for it (contract 0.7). Anything but success fails the attempt
   * and undoes every Reserve made. */
  reserve?(pod: Pod, nodes: Nodes): Status | Code | void;
  /** Undo `reserve` for the pod on `node`: at most once per Reserve; it
   * cannot fail (what it throws is logged). */
  unreserve?(pod: Pod, node: string): void;
  /** After Reserve, whether the pod may be bound (contract 0.7). */
  permit?(pod: Pod, nodes: Nodes): PermitVerdict | void;
  /** Before the binding is written (contract 0.7); anything but success
   * fails the binding: the pod is unreserved and retried. */
  preBind?(pod: Pod, node: string): Status | Code | void;
  /** The pod is bound to `node` (contract 0.7; what it throws is logged). */
  postBind?(pod: Pod, node: string): void;
  [own: `_${string}`]: any;
}

export declare function definePlugin(def: PluginDefinition): object;
/** The value of the attribute `name` of a device: fully qualified, or the
 * driver's when it has no domain (`model` is `gpu.example.com/model` on
 * that driver's devices); none when the device lacks it. */
export declare function deviceAttribute(device: Device, name: string): Opt<AttributeValue>;
/** The capacity `name` of a device (qualified as for `deviceAttribute`);
 * none when the device publishes none. */
export declare function deviceCapacity(device: Device, name: string): Opt<DeviceCapacity>;
/** Whether an allocated device is `device` (same driver, pool and name). */
export declare function isDevice(chosen: AllocatedDevice, device: Device): boolean;
export declare class PluginError extends Error {}
/** State the host keeps for the plugin (contract 0.7). A plugin's instances
 * are pooled and may run concurrently, so what must outlive a call lives
 * here. Values are bytes; `set` and `cycleSet` also take a string (as
 * UTF-8). A write the host refuses (past a bound) throws a PluginError. */
export declare const state: {
  /** The plugin's store, shared by every instance and kept across calls
   * and pods: the value under `key`, or none. */
  get(key: string): Opt<Uint8Array>;
  set(key: string, value: Uint8Array | string | number[]): void;
  /** Whether `key` was there. */
  remove(key: string): boolean;
  /** The keys that start with `prefix`, sorted (at most 10 000). */
  keys(prefix?: string): string[];
  /** Adds `delta` to the counter under `key` (8 bytes little-endian; none
   * counts as 0) in one step however many instances call it at once, and
   * returns its new value. */
  add(key: string, delta: number | bigint): bigint;
  /** The counter under `key`: 0n when none; throws when not 8 bytes. */
  counter(key: string): bigint;
  /** The value under `key` as UTF-8 text, or none. */
  getText(key: string): Opt<string>;
  /** The value under `key` parsed as JSON, or none. */
  getJson(key: string): any;
  /** Stores `value` as JSON under `key`. */
  setJson(key: string, value: unknown): void;
  /** The pod's cycle state, from PreFilter to PostBind (or Unreserve) of
   * one attempt: the value under `key`, or none. */
  cycleGet(key: string): Opt<Uint8Array>;
  /** Throws outside a pod's cycle (in `configure`, `metricSources`). */
  cycleSet(key: string, value: Uint8Array | string | number[]): void;
};
/** The pods waiting at Permit, of every profile (contract 0.7). */
export declare const waiting: {
  /** Longest waiting first. */
  pods(): WaitingPod[];
  /** Allows the pod of `uid` for this plugin; false when it does not wait
   * for this plugin (a plugin releases only the pods it holds). */
  allow(uid: string): boolean;
  /** Rejects the pod of `uid`, which this plugin holds: it is not bound,
   * its Reserve is undone, and it is retried later. False when it does not
   * wait for this plugin. */
  reject(uid: string, reason: string): boolean;
};
/** `v` as a counter is stored: 8 bytes, little-endian. */
export declare function int64Bytes(v: number | bigint): Uint8Array;
/** The value of 8 little-endian bytes; none when not 8 bytes. */
export declare function bytesInt64(b: Opt<Uint8Array>): Opt<bigint>;
type Level = "trace" | "debug" | "info" | "warn" | "error";
export declare const log: ((level: Level, message: string) => void) & { [L in Level]: (message: string) => void };
