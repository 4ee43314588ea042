// wasmsched plugin SDK for JavaScript (QuickJS with componentize-qjs, or
// StarlingMonkey with WASMSCHED_JS_BACKEND=starlingmonkey; see README.md).
//
//   import { definePlugin, Code, log } from "wasmsched";
//
//   export default definePlugin({
//     name: "random",
//     score(pod, nodes) { return nodes.randoms().map((r) => r % 101); },
//   });
//
// The points a plugin implements are the functions it defines (preFilter,
// filter, postFilter, preScore, score, normalizeScore, reserve with
// unreserve, permit, preBind, postBind) unless `points` lists them;
// `events` lists the cluster changes a pod it rejected waits for (default:
// every change); `keepState: true` keeps the plugin's store when a new
// version replaces it. `configure(args)` receives the args as parsed JSON;
// `metricSources()` then names the metric sources the plugin reads with
// `nodes.metrics` (default: none). Throwing (a PluginError, an Error or a
// string) returns an error to the host. `pod` and `nodes` are the contract's
// handles, with the WIT accessors in camelCase (see README.md and
// wasmsched.d.ts); the pod views take a plain-object selector. `state` is
// the plugin's store and the pod's cycle state, kept by the host; `waiting`
// the pods waiting at Permit. The SDK builds against contract 0.7
// (wit/plugin.wit).

import { log as hostLog } from "wasmsched:plugin/host@0.7.0";
// Namespace imports: a module that names no function of them still links.
import * as hostState from "wasmsched:plugin/state@0.7.0";
import * as hostWaiting from "wasmsched:plugin/waiting@0.7.0";

/** kube-scheduler's status codes. */
export const Code = Object.freeze({
  SUCCESS: "success",
  UNSCHEDULABLE: "unschedulable",
  UNSCHEDULABLE_AND_UNRESOLVABLE: "unschedulable-and-unresolvable",
  SKIP: "skip",
});

/** The extension points, as `points` takes them. */
export const Points = Object.freeze({
  PRE_FILTER: "preFilter",
  FILTER: "filter",
  PRE_SCORE: "preScore",
  SCORE: "score",
  NORMALIZE_SCORE: "normalizeScore",
  // Since contract 0.7.
  POST_FILTER: "postFilter",
  /** Reserve and Unreserve. */
  RESERVE: "reserve",
  PERMIT: "permit",
  PRE_BIND: "preBind",
  POST_BIND: "postBind",
});

/** The kinds of object, as `events[].resource` takes them. */
export const EventResource = Object.freeze({
  NODE: "node",
  POD: "pod",
  NAMESPACE: "namespace",
  // Since contract 0.6 (Dynamic Resource Allocation).
  RESOURCE_CLAIM: "resource-claim",
  RESOURCE_SLICE: "resource-slice",
  DEVICE_CLASS: "device-class",
});

/** The kinds of change, as `events[].actions` takes them. */
export const EventActions = Object.freeze({
  ADD: "add",
  DELETE: "delete",
  UPDATE: "update",
  UPDATE_NODE_ALLOCATABLE: "updateNodeAllocatable",
  UPDATE_NODE_LABEL: "updateNodeLabel",
  UPDATE_NODE_TAINT: "updateNodeTaint",
  UPDATE_NODE_CONDITION: "updateNodeCondition",
  UPDATE_NODE_ANNOTATION: "updateNodeAnnotation",
  UPDATE_POD_LABEL: "updatePodLabel",
  UPDATE_POD_SCALE_DOWN: "updatePodScaleDown",
  UPDATE_POD_TOLERATION: "updatePodToleration",
});

const POINTS = Object.values(Points);
// The keys of a definition; the plugin's own state and helpers start with _.
const KEYS = ["name", "version", "points", "events", "keepState", "configure", "metricSources", ...POINTS, "unreserve"];
const CODES = new Set(Object.values(Code));
const RESOURCES = Object.values(EventResource);
const ACTIONS = Object.values(EventActions);

/** An error whose message the host receives as is. */
export class PluginError extends Error {
  constructor(message) {
    super(message);
    this.name = "PluginError";
  }
}

const LEVELS = ["trace", "debug", "info", "warn", "error"];

/**
 * Writes a line to the scheduler's log, attributed to the plugin:
 * `log("info", msg)`, or `log.info(msg)` (trace, debug, info, warn, error).
 */
export function log(level, message) {
  if (!LEVELS.includes(level)) throw new PluginError(`log: unknown level ${level}`);
  hostLog(level, String(message));
}
for (const level of LEVELS) log[level] = (message) => hostLog(level, String(message));

// No stdio in a plugin (WASI is stubbed and traps): console goes to the log.
const fmt = (args) => args.map((a) => (typeof a === "string" ? a : safeJson(a))).join(" ");
function safeJson(v) {
  try {
    return v instanceof Error ? `${v.name}: ${v.message}` : JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}
globalThis.console = {
  trace: (...a) => hostLog("trace", fmt(a)),
  debug: (...a) => hostLog("debug", fmt(a)),
  log: (...a) => hostLog("info", fmt(a)),
  info: (...a) => hostLog("info", fmt(a)),
  warn: (...a) => hostLog("warn", fmt(a)),
  error: (...a) => hostLog("error", fmt(a)),
};

function message(e) {
  if (typeof e === "string") return e;
  if (e instanceof PluginError) return e.message;
  if (e instanceof Error) return `${e.name}: ${e.message}`;
  return String(e);
}

function status(v) {
  if (v === undefined || v === null) return { code: "success", reason: "" };
  if (typeof v === "string") {
    if (!CODES.has(v)) throw new PluginError(`unknown code ${v}`);
    return { code: v, reason: "" };
  }
  return { code: v.code ?? "success", reason: v.reason ?? "" };
}

// What postFilter returns, as the contract's post-filter-result: nothing
// (no room made: unschedulable), a Code, or { code, reason, nominatedNode,
// victims }, whose code is success when a node is nominated, unschedulable
// otherwise.
function postFilterResult(v) {
  if (v === undefined || v === null) return { status: { code: "unschedulable", reason: "" }, nominatedNode: NONE, victims: [] };
  if (typeof v === "string") return { status: status(v), nominatedNode: NONE, victims: [] };
  const nominated = v.nominatedNode ?? NONE;
  if (nominated !== NONE && typeof nominated !== "string") throw new PluginError("postFilter: nominatedNode must be a node name");
  const victims = Array.from(v.victims ?? [], String);
  return {
    status: status({ code: v.code ?? (nominated == null ? "unschedulable" : "success"), reason: v.reason }),
    nominatedNode: nominated,
    victims,
  };
}

// What permit returns, as the contract's permit-verdict: nothing or
// { allow: true } (allow), { reject: "why" }, or { waitMs: n }.
function permitVerdict(v) {
  if (v === undefined || v === null || v === true || v.allow === true) return { tag: "allow" };
  if (typeof v.reject === "string") return { tag: "reject", val: v.reject };
  if (v.waitMs !== undefined) {
    const ms = Number(v.waitMs);
    if (!Number.isInteger(ms) || ms < 0 || ms > 0xffffffff) throw new PluginError(`permit: waitMs must be a whole number of milliseconds, not ${v.waitMs}`);
    return { tag: "wait", val: ms };
  }
  throw new PluginError(`permit: return nothing, { allow: true }, { reject: "reason" } or { waitMs: n }, not ${safeJson(v)}`);
}

// The points without a result (unreserve, postBind) must not fail: an
// error is logged.
function quietly(point, f) {
  try {
    f();
  } catch (e) {
    hostLog("error", `${point}: ${message(e)}`);
  }
}

// State the host keeps for the plugin (contract 0.7): instances are pooled
// and may run concurrently, so what must outlive a call lives there.
function hostCall(fn, key, f) {
  try {
    return f();
  } catch (e) {
    // An err result comes as an error whose payload is the host's message.
    if (e != null && typeof e.payload === "string") throw new PluginError(`state.${fn}(${JSON.stringify(key)}): ${e.payload}`);
    throw e;
  }
}
function bytes(value) {
  if (value instanceof Uint8Array) return value;
  if (typeof value === "string") return utf8(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (Array.isArray(value)) return Uint8Array.from(value);
  throw new PluginError(`state: a value is bytes (a Uint8Array) or a string, not ${typeof value}`);
}
// UTF-8 without TextEncoder/TextDecoder, which an engine may lack.
function utf8(s) {
  const out = [];
  for (const ch of s) {
    const c = ch.codePointAt(0);
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return Uint8Array.from(out);
}
function text(b) {
  let s = "";
  for (let i = 0; i < b.length; ) {
    const c = b[i++];
    let cp = c;
    if (c >= 0xf0) cp = ((c & 7) << 18) | ((b[i++] & 63) << 12) | ((b[i++] & 63) << 6) | (b[i++] & 63);
    else if (c >= 0xe0) cp = ((c & 15) << 12) | ((b[i++] & 63) << 6) | (b[i++] & 63);
    else if (c >= 0xc0) cp = ((c & 31) << 6) | (b[i++] & 63);
    s += String.fromCodePoint(cp);
  }
  return s;
}
function asBytes(v) {
  return v == null ? NONE : v instanceof Uint8Array ? v : Uint8Array.from(v);
}

/** A counter's value as `state.add` stores it: 8 bytes, little-endian. */
export function int64Bytes(v) {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigInt64(0, BigInt(v), true);
  return b;
}
/** The BigInt of 8 little-endian bytes (`int64Bytes`), or none when the
 * value is not 8 bytes. */
export function bytesInt64(b) {
  if (b == null || b.length !== 8) return NONE;
  const v = bytes(b);
  return new DataView(v.buffer, v.byteOffset, 8).getBigInt64(0, true);
}

/**
 * The plugin's store, shared by every instance of the plugin and kept
 * across calls and pods (`get`, `set`, `remove`, `keys`, `add`, `counter`,
 * and as text `getText`, `getJson`, `setJson`), and the pod's cycle state,
 * from PreFilter to PostBind (`cycleGet`, `cycleSet`). Values are bytes (a
 * Uint8Array; `set` takes a string as UTF-8). A write the host refuses (past
 * a bound) throws a PluginError.
 */
export const state = Object.freeze({
  /** The value under `key` (a Uint8Array), or none. */
  get: (key) => asBytes(hostState.get(key)),
  /** Stores `value` (bytes, or a string as UTF-8) under `key`. */
  set: (key, value) => {
    hostCall("set", key, () => hostState.set(key, bytes(value)));
  },
  /** Removes `key`; whether it was there. */
  remove: (key) => hostState.remove(key),
  /** The keys that start with `prefix`, sorted (at most 10 000). */
  keys: (prefix = "") => Array.from(hostState.keys(prefix)),
  /** Adds `delta` (a Number or a BigInt, an integer) to the counter under
   * `key` (none counts as 0) in one step however many instances call it,
   * and returns its new value, a BigInt. */
  add: (key, delta) => BigInt(hostCall("add", key, () => hostState.add(key, BigInt(delta)))),
  /** The counter under `key` (a BigInt): 0n when there is none; throws when
   * the value there is not 8 bytes. */
  counter: (key) => {
    const v = hostState.get(key);
    if (v == null) return 0n;
    const n = bytesInt64(v);
    if (n == null) throw new PluginError(`state.counter(${JSON.stringify(key)}): ${v.length} bytes, not a counter (8)`);
    return n;
  },
  /** The value under `key` as UTF-8 text, or none. */
  getText: (key) => {
    const v = hostState.get(key);
    return v == null ? NONE : text(v);
  },
  /** The value under `key` parsed as JSON, or none. */
  getJson: (key) => {
    const v = hostState.get(key);
    return v == null ? NONE : JSON.parse(text(v));
  },
  /** Stores `value` as JSON under `key`. */
  setJson: (key, value) => {
    hostCall("set", key, () => hostState.set(key, utf8(JSON.stringify(value))));
  },
  /** The value the pod's cycle holds under `key`, or none. */
  cycleGet: (key) => asBytes(hostState.cycleGet(key)),
  /** Stores `value` under `key` for the rest of the pod's cycle (throws
   * outside one: in `configure` or `metricSources`). */
  cycleSet: (key, value) => {
    hostCall("cycle-set", key, () => hostState.cycleSet(key, bytes(value)));
  },
});

/**
 * The pods waiting at Permit (contract 0.7): `pods()`, longest waiting
 * first, as `{ namespace, name, uid, node, labels, plugins, waitedMs }`;
 * `allow(uid)` and `reject(uid, reason)` release one this plugin holds
 * (false when it does not wait for this plugin).
 */
export const waiting = Object.freeze({
  pods: () => Array.from(hostWaiting.pods()),
  allow: (uid) => hostWaiting.allow(uid),
  reject: (uid, reason) => hostWaiting.reject(uid, String(reason)),
});

// s64 crosses as a BigInt (as a Number on a QuickJS runtime of
// componentize-qjs 0.4); an absent option as null on QuickJS, as undefined
// on StarlingMonkey.
const NONE = globalThis.__wasmsched_backend === "quickjs" ? null : undefined;
// Scores cross as the contract's `scores` variant, `{ tag: "values", val }`
// or `{ tag: "packed", val }` (a Uint8Array, 8 bytes per score, little-endian
// s64). They go back packed: the bytes of a BigInt64Array, which every engine
// takes in one copy (StarlingMonkey lowers an Array of BigInts element by
// element: ~1.5 ms for 500 scores), and which the host hands back to
// normalizeScore as one Uint8Array where QuickJS would lift `values` into
// BigInts one by one. A score that is not an integer throws (RangeError) on
// every engine.
function scores(v) {
  let out = v;
  if (!(v instanceof BigInt64Array)) {
    const a = Array.isArray(v) ? v : Array.from(v);
    out = new BigInt64Array(a.length);
    for (let i = 0; i < a.length; i++) out[i] = BigInt(a[i]);
  }
  return { tag: "packed", val: new Uint8Array(out.buffer, out.byteOffset, out.byteLength) };
}
// What normalizeScore receives: Numbers, whichever form the scores came in.
function numbers(s) {
  let v = s.val;
  if (s.tag === "packed") {
    if (v.length % 8 !== 0) throw new PluginError(`${v.length} packed bytes are not 8 per score`);
    // A BigInt64Array needs an offset that is a multiple of 8: copy if not.
    if (!(v instanceof Uint8Array) || v.byteOffset % 8 !== 0) v = Uint8Array.from(v);
    v = new BigInt64Array(v.buffer, v.byteOffset, v.length / 8);
  }
  if (Array.isArray(v) && typeof v[0] !== "bigint") return v;
  return Array.from(v, Number);
}

// The pod views take a plain-object selector (every field optional); they
// and `metrics` return plain arrays (`clusterPodCount` a Number) and throw a
// PluginError with the host's error. They replace the generated ones on the class of the `nodes` handle
// when the first one comes in.
function podSelector(s) {
  const labels = s?.matchLabels ?? {};
  return {
    namespaces: s?.namespaces ?? [],
    allNamespaces: Boolean(s?.allNamespaces),
    matchLabels: Array.isArray(labels) ? labels : Object.entries(labels),
    matchExpressions: (s?.matchExpressions ?? []).map((r) => ({
      key: r.key,
      operator: r.operator,
      values: r.values ?? [],
    })),
  };
}
function view(f) {
  return Array.from(hostResult(f));
}
function hostResult(f) {
  try {
    return f();
  } catch (e) {
    // An err result comes as an error whose payload is the host's message.
    if (e != null && typeof e.payload === "string") throw new PluginError(e.payload);
    throw e;
  }
}
// Devices (contract 0.6). A name of an attribute or capacity without a
// domain (`memory`) is the device driver's (`gpu.example.com/memory`), as
// ResourceSlices and CEL's device.capacity read it; a qualified one is
// taken as is.
function qualify(device, name) {
  return name.includes("/") ? name : `${device.driver}/${name}`;
}
/**
 * The value of the attribute `name` of `device` (from `nodes.devices(i)`),
 * `{ tag, val }`, or none when the device lacks it.
 */
export function deviceAttribute(device, name) {
  const q = qualify(device, name);
  const a = device.attributes.find((a) => a.name === q);
  return a === undefined ? NONE : a.value;
}
/**
 * The capacity `name` of `device`, `{ name, quantity, value }` (`value` in
 * bytes for `80Gi`), or none when the device publishes none.
 */
export function deviceCapacity(device, name) {
  const q = qualify(device, name);
  return device.capacity.find((c) => c.name === q) ?? NONE;
}
/** Whether `chosen` (from `nodes.allocation(i)`) is `device`. */
export function isDevice(chosen, device) {
  return chosen.device === device.name && chosen.pool === device.pool && chosen.driver === device.driver;
}

let viewsReady = false;
function withViews(nodes) {
  if (viewsReady) return nodes;
  const proto = Object.getPrototypeOf(nodes);
  const { podCounts, domainCounts, domains, clusterPodCount, metrics } = proto;
  // The devices DynamicResources allocated for the pod on node i (from
  // `allocation`), with their attributes and capacity (from `devices`), in
  // allocation order; none when `allocation` is none.
  proto.allocatedDevices = function (i) {
    const chosen = this.allocation(i);
    if (chosen == null) return NONE;
    if (chosen.length === 0) return [];
    const devices = this.devices(i);
    const out = [];
    for (const a of chosen) {
      const d = devices.find((d) => isDevice(a, d));
      if (d !== undefined) out.push(d);
    }
    return out;
  };
  proto.podCounts = function (selector) {
    return view(() => podCounts.call(this, podSelector(selector)));
  };
  proto.domainCounts = function (topologyKey, selector) {
    return view(() => domainCounts.call(this, topologyKey, podSelector(selector)));
  };
  proto.domains = function (topologyKey, selector) {
    return view(() => domains.call(this, topologyKey, podSelector(selector)));
  };
  proto.clusterPodCount = function (selector) {
    return Number(hostResult(() => clusterPodCount.call(this, podSelector(selector))));
  };
  proto.metrics = function (source) {
    return view(() => metrics.call(this, source));
  };
  viewsReady = true;
  return nodes;
}

// The name `name` was probably meant to be (scores: score, PreFilter:
// preFilter, filterNodes: filter), or undefined: the same letters in
// another case or with separators, a few edits away, or one name inside
// the other.
function didYouMean(name, names) {
  const squash = (s) => s.toLowerCase().replace(/[_-]/g, "");
  const s = squash(name);
  let best, bestCost = Infinity;
  for (const candidate of names) {
    const c = squash(candidate);
    const d = distance(s, c);
    let cost = Infinity;
    if (d <= (c.length <= 6 ? 1 : 2)) cost = d;
    else if (Math.min(s.length, c.length) >= 5 && (s.startsWith(c) || s.endsWith(c) || c.startsWith(s))) cost = 10 + Math.abs(s.length - c.length);
    if (cost < bestCost) [best, bestCost] = [candidate, cost];
  }
  return best;
}

// Edit distance, a transposition counting as one edit.
function distance(a, b) {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i * j === 0 ? i + j : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

// `events` as metadata takes it; not declared: none (every change).
function clusterEvents(events) {
  if (events === undefined || events === null) return NONE;
  if (!Array.isArray(events)) throw new Error("definePlugin: `events` must be an array of { resource, actions }");
  return events.map((e) => {
    if (!RESOURCES.includes(e?.resource)) throw new Error(`definePlugin: unknown event resource ${e?.resource}`);
    if (!Array.isArray(e.actions)) throw new Error(`definePlugin: the actions of a ${e.resource} event must be an array`);
    for (const a of e.actions) {
      if (!ACTIONS.includes(a)) throw new Error(`definePlugin: unknown event action ${a}`);
    }
    return { resource: e.resource, actions: Object.fromEntries(ACTIONS.map((a) => [a, e.actions.includes(a)])) };
  });
}

/**
 * Turns a plugin definition into the export of world `scheduler-plugin`.
 * The plugin module must `export default definePlugin({...})`.
 *
 * @param {object} def
 * @param {string} def.name  the name the scheduler configuration enables it by
 * @param {string} [def.version]
 * @param {string[]} [def.points]  default: the point functions defined
 * @param {{resource: string, actions: string[]}[]} [def.events]  default: every change
 * @param {(args: any) => void} [def.configure]  args parsed from JSON
 * @param {boolean} [def.keepState]  keep the store when a new version replaces this one; default false
 * @param {() => string[]} [def.metricSources]  the metric sources read, called after configure; default none
 * @param {(pod) => Status|string|void} [def.preFilter]
 * @param {(pod, nodes) => Rejection[]} [def.filter]
 * @param {(pod, nodes, statuses) => PostFilterResult|string|void} [def.postFilter]
 * @param {(pod, nodes) => Status|string|void} [def.preScore]
 * @param {(pod, nodes) => number[]} [def.score]
 * @param {(pod, scores: number[]) => number[]} [def.normalizeScore]
 * @param {(pod, nodes) => Status|string|void} [def.reserve]
 * @param {(pod, node: string) => void} [def.unreserve]
 * @param {(pod, nodes) => PermitVerdict|void} [def.permit]
 * @param {(pod, node: string) => Status|string|void} [def.preBind]
 * @param {(pod, node: string) => void} [def.postBind]
 */
export function definePlugin(def) {
  if (!def || typeof def.name !== "string" || def.name === "") {
    throw new Error("definePlugin: `name` (a non-empty string) is required");
  }
  // Checked when the module is evaluated, which is at build time: a
  // misspelt point would otherwise leave the plugin silently without it.
  for (const key of Object.keys(def)) {
    if (KEYS.includes(key) || key.startsWith("_")) continue;
    const meant = didYouMean(key, KEYS);
    throw new Error(
      meant
        ? `definePlugin: unknown key "${key}"; did you mean "${meant}"?`
        : `definePlugin: unknown key "${key}" (known: ${KEYS.join(", ")}; your own state and helpers start with _, as _${key})`,
    );
  }
  const points = def.points ?? POINTS.filter((p) => typeof def[p] === "function");
  if (!Array.isArray(points)) throw new Error("definePlugin: `points` must be an array of point names");
  for (const p of points) {
    if (!POINTS.includes(p)) {
      const meant = didYouMean(String(p), POINTS);
      throw new Error(`definePlugin: unknown point "${p}"` + (meant ? `; did you mean "${meant}"?` : ` (the points are ${POINTS.join(", ")})`));
    }
    if (typeof def[p] !== "function") throw new Error(`definePlugin: point ${p} has no function`);
  }
  // Unreserve undoes Reserve: one point, declared as reserve.
  if (def.unreserve !== undefined && typeof def.unreserve !== "function") throw new Error("definePlugin: `unreserve` must be a function");
  if (def.unreserve && !points.includes("reserve")) {
    throw new Error("definePlugin: unreserve undoes reserve, which the plugin does not implement");
  }
  if (points.length === 0) {
    throw new Error(`definePlugin: ${def.name} implements no extension point: define at least one of ${POINTS.join(", ")}`);
  }
  if (def.keepState !== undefined && typeof def.keepState !== "boolean") throw new Error("definePlugin: `keepState` must be true or false");
  // The sources depend on the args, so a function; anything else would only
  // fail when the host calls it, at load.
  if (def.metricSources !== undefined && typeof def.metricSources !== "function") {
    throw new Error("definePlugin: `metricSources` must be a function returning the source names (called after configure)");
  }
  const flags = Object.fromEntries(POINTS.map((p) => [p, points.includes(p)]));
  const events = clusterEvents(def.events);
  const notImplemented = () => {
    throw "not implemented";
  };
  const guard =
    (f) =>
    (...a) => {
      try {
        return f(...a);
      } catch (e) {
        throw message(e);
      }
    };
  const call = (p) => (def[p] ? def[p].bind(def) : notImplemented);
  const preFilter = call("preFilter");
  const filter = call("filter");
  const preScore = call("preScore");
  const score = call("score");
  const normalizeScore = call("normalizeScore");
  // The points of contract 0.7: the world exports them all, and one the
  // plugin does not implement answers as if it were not there (the host
  // calls only the points metadata lists).
  const optional = (p, neutral) => (def[p] ? def[p].bind(def) : () => neutral);
  const postFilter = optional("postFilter", undefined);
  const reserve = optional("reserve", undefined);
  const unreserve = optional("unreserve", undefined);
  const permit = optional("permit", undefined);
  const preBind = optional("preBind", undefined);
  const postBind = optional("postBind", undefined);
  const configure = def.configure ? def.configure.bind(def) : () => {};
  const metricSources = def.metricSources ? def.metricSources.bind(def) : () => [];

  return {
    metadata: () => ({ name: def.name, version: def.version ?? "0.1.0", points: flags, events, keepState: def.keepState === true }),
    configure: guard((args) => {
      let parsed;
      try {
        parsed = args.trim() === "" ? {} : JSON.parse(args);
      } catch (e) {
        throw new PluginError(`args are not valid JSON: ${e.message}`);
      }
      configure(parsed ?? {});
    }),
    // No error in the contract's result: a failure is logged (its message
    // would be lost in the trap) and traps, which fails the load.
    metricSources: () => {
      try {
        const sources = metricSources() ?? [];
        if (typeof sources === "string" || typeof sources[Symbol.iterator] !== "function") {
          throw new PluginError("must return an array of source names");
        }
        const out = Array.from(sources);
        for (const s of out) {
          if (typeof s !== "string") throw new PluginError(`must return source names (strings), not ${typeof s}`);
        }
        return out;
      } catch (e) {
        hostLog("error", `metricSources: ${message(e)}`);
        throw e;
      }
    },
    preFilter: guard((pod) => status(preFilter(pod))),
    filter: guard((pod, nodes) => {
      const out = [];
      for (const r of filter(pod, withViews(nodes)) ?? []) {
        out.push(r.code !== undefined && r.reason !== undefined ? r : { index: r.index, code: r.code ?? "unschedulable", reason: r.reason ?? "" });
      }
      return out;
    }),
    preScore: guard((pod, nodes) => status(preScore(pod, withViews(nodes)))),
    score: guard((pod, nodes) => scores(score(pod, withViews(nodes)))),
    normalizeScore: guard((pod, s) => scores(normalizeScore(pod, numbers(s)))),
    postFilter: guard((pod, nodes, statuses) => postFilterResult(postFilter(pod, withViews(nodes), Array.from(statuses)))),
    reserve: guard((pod, nodes) => status(reserve(pod, withViews(nodes)))),
    unreserve: (pod, node) => quietly("unreserve", () => unreserve(pod, node)),
    permit: guard((pod, nodes) => permitVerdict(permit(pod, withViews(nodes)))),
    preBind: guard((pod, node) => status(preBind(pod, node))),
    postBind: (pod, node) => quietly("postBind", () => postBind(pod, node)),
  };
}
