/*
 * wasmsched C SDK: write a wasmsched scheduling plugin in C.
 *
 * A plugin is one C file that
 *   - names itself:      WS_PLUGIN("my-plugin", "0.1.0", WS_SCORE);
 *   - optionally, says which cluster changes may make a pod it rejected fit:
 *                        WS_EVENTS({WS_EVENT_NODE, WS_ADD | WS_UPDATE_NODE_LABEL});
 *   - defines the hooks of the points it implements (any of ws_configure,
 *     ws_pre_filter, ws_filter, ws_pre_score, ws_score, ws_normalize_score,
 *     and since contract 0.7 ws_post_filter, ws_reserve and ws_unreserve,
 *     ws_permit, ws_pre_bind, ws_post_bind);
 *   - if it reads live metrics, defines ws_metric_sources (the sources it
 *     reads, as configured);
 *   - if its store (ws_state_*) must survive a new version of the plugin,
 *     says so:      WS_KEEP_STATE;
 * Hooks it does not define answer "not implemented" (ws_configure: accepts
 * any args; ws_metric_sources: reads no metric source; ws_unreserve: has
 * nothing to undo). The SDK does the
 * component-model plumbing (wit-bindgen's generated bindings in
 * ../generated), the allocator and a libc subset.
 *
 * Memory: everything the SDK hands out (strings and lists from accessors,
 * ws_alloc, ws_buf) lives in a per-call arena, released by the SDK after the
 * export returns. Never free anything; copy what must outlive the call with
 * ws_keep (the args string passed to ws_configure is already kept).
 *
 * Errors: a hook returns NULL for success, or an error message (any
 * NUL-terminated string: a literal, ws_buf_cstr, ...): the host gets it as the
 * `err` of the contract's result. The accessors that can fail (the pod views,
 * the metrics) answer the same way, so a hook can return their error as is.
 *
 * Strings are UTF-8 slices (ws_str: pointer + length, NOT NUL-terminated).
 *
 * The SDK targets contract wasmsched:plugin@0.7.0 (wit/plugin.wit).
 */
#ifndef WASMSCHED_H
#define WASMSCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- strings and lists ------------------------------------------------ */

/* A UTF-8 string slice; not NUL-terminated. */
typedef struct ws_str {
    const char *ptr;
    size_t len;
} ws_str;

/* A ws_str from a string literal: WS_S("price"). */
#define WS_S(lit) ((ws_str){(lit), sizeof(lit) - 1})
/* A ws_str from a NUL-terminated string. */
ws_str ws_cstr(const char *s);
bool ws_str_eq(ws_str a, ws_str b);
/* A NUL-terminated copy (arena). */
const char *ws_str_cstr(ws_str s);
/* A copy that outlives the call: meant for ws_configure (kept while the
 * configuration it was made in is current; WS_KEEP_BYTES per configuration). */
ws_str ws_keep(ws_str s);

#define WS_LIST(T) struct { T *ptr; size_t len; }

typedef struct ws_opt_str { bool is_some; ws_str val; } ws_opt_str;
typedef struct ws_opt_f64 { bool is_some; double val; } ws_opt_f64;
typedef struct ws_pair { ws_str key; ws_str value; } ws_pair;
typedef struct ws_quantity { ws_str name; int64_t amount; } ws_quantity;
typedef struct ws_taint { ws_str key; ws_str value; ws_str effect; } ws_taint;
typedef struct ws_toleration { ws_str key; ws_str operator_; ws_str value; ws_str effect; } ws_toleration;
typedef struct ws_condition { ws_str type; ws_str status; } ws_condition;
typedef struct ws_opt_u32 { bool is_some; uint32_t val; } ws_opt_u32;
/* A topology domain (a value of the topology label) and its count of pods. */
typedef struct ws_domain { ws_str value; uint32_t count; } ws_domain;

typedef WS_LIST(ws_str) ws_strs;
typedef WS_LIST(ws_opt_str) ws_opt_strs;
typedef WS_LIST(ws_opt_f64) ws_opt_f64s;
typedef WS_LIST(int64_t) ws_i64s;
typedef WS_LIST(uint64_t) ws_u64s;
typedef WS_LIST(uint32_t) ws_u32s;
typedef WS_LIST(ws_opt_u32) ws_opt_u32s;
typedef WS_LIST(ws_domain) ws_domains;
typedef WS_LIST(ws_pair) ws_pairs;
typedef WS_LIST(ws_quantity) ws_quantities;
typedef WS_LIST(ws_taint) ws_taints;
typedef WS_LIST(ws_toleration) ws_tolerations;
typedef WS_LIST(ws_condition) ws_conditions;
typedef struct ws_image { ws_strs names; int64_t size_bytes; } ws_image;
typedef WS_LIST(ws_image) ws_images;

/* ---- the contract's enums --------------------------------------------- */

typedef enum ws_points {
    WS_PRE_FILTER = 1 << 0,
    WS_FILTER = 1 << 1,
    WS_PRE_SCORE = 1 << 2,
    WS_SCORE = 1 << 3,
    WS_NORMALIZE_SCORE = 1 << 4,
    /* Since contract 0.7: */
    WS_POST_FILTER = 1 << 5,
    WS_RESERVE = 1 << 6, /* ws_reserve, and ws_unreserve if defined */
    WS_PERMIT = 1 << 7,
    WS_PRE_BIND = 1 << 8,
    WS_POST_BIND = 1 << 9,
} ws_points;

typedef enum ws_code {
    WS_SUCCESS = 0,
    WS_UNSCHEDULABLE = 1,
    WS_UNSCHEDULABLE_AND_UNRESOLVABLE = 2,
    WS_SKIP = 3,
} ws_code;

typedef enum ws_level { WS_TRACE, WS_DEBUG, WS_INFO, WS_WARN, WS_ERROR } ws_level;

/* ---- what the plugin is ----------------------------------------------- */

typedef struct ws_metadata {
    const char *name;    /* NUL-terminated */
    const char *version; /* NUL-terminated */
    uint32_t points;     /* ws_points, or-ed */
} ws_metadata;

/* WS_PLUGIN("node-price", "0.1.0", WS_SCORE | WS_NORMALIZE_SCORE);
 * It also refers to the hook of each point it declares, so that a point
 * declared without its hook (a misspelt name) does not link
 * ("undefined symbol: ws_score") rather than answer "not implemented". */
#define WS_PLUGIN(NAME, VERSION, POINTS)                                      \
    const ws_metadata ws_plugin = {(NAME), (VERSION), (uint32_t)(POINTS)}; \
    const struct ws_hooks ws_plugin_hooks = {                              \
        ((POINTS) & WS_PRE_FILTER) ? ws_pre_filter : 0,                    \
        ((POINTS) & WS_FILTER) ? ws_filter : 0,                            \
        ((POINTS) & WS_PRE_SCORE) ? ws_pre_score : 0,                      \
        ((POINTS) & WS_SCORE) ? ws_score : 0,                              \
        ((POINTS) & WS_NORMALIZE_SCORE) ? ws_normalize_score : 0,          \
        ((POINTS) & WS_POST_FILTER) ? ws_post_filter : 0,                  \
        ((POINTS) & WS_RESERVE) ? ws_reserve : 0,                          \
        ((POINTS) & WS_PERMIT) ? ws_permit : 0,                            \
        ((POINTS) & WS_PRE_BIND) ? ws_pre_bind : 0,                        \
        ((POINTS) & WS_POST_BIND) ? ws_post_bind : 0,                      \
    }

/* (Since contract 0.7.) Keep the plugin's store (ws_state_*) when this
 * version replaces another of the same name; without it the new version
 * starts with the store empty. Next to WS_PLUGIN: WS_KEEP_STATE; */
#define WS_KEEP_STATE const bool ws_plugin_keep_state = true

/* What kind of object changed (kube-scheduler's EventResource). */
typedef enum ws_event_resource {
    WS_EVENT_NODE = 0,
    WS_EVENT_POD = 1,       /* a pod bound or assumed on a node (and the pending pod's own updates) */
    WS_EVENT_NAMESPACE = 2, /* its labels */
    WS_EVENT_RESOURCE_CLAIM = 3, /* a ResourceClaim: a deallocation frees devices (since contract 0.6) */
    WS_EVENT_RESOURCE_SLICE = 4, /* a ResourceSlice: devices published or changed (since contract 0.6) */
    WS_EVENT_DEVICE_CLASS = 5,   /* a DeviceClass (since contract 0.6) */
} ws_event_resource;

/* How it changed (kube-scheduler's ActionType). */
typedef enum ws_event_actions {
    WS_ADD = 1 << 0,
    WS_DELETE = 1 << 1,
    WS_UPDATE = 1 << 2, /* any update, the finer kinds below included */
    WS_UPDATE_NODE_ALLOCATABLE = 1 << 3,
    WS_UPDATE_NODE_LABEL = 1 << 4,
    WS_UPDATE_NODE_TAINT = 1 << 5, /* or the node became schedulable */
    WS_UPDATE_NODE_CONDITION = 1 << 6,
    WS_UPDATE_NODE_ANNOTATION = 1 << 7,
    WS_UPDATE_POD_LABEL = 1 << 8,
    WS_UPDATE_POD_SCALE_DOWN = 1 << 9,
    WS_UPDATE_POD_TOLERATION = 1 << 10,
} ws_event_actions;

/* A kind of cluster change (kube-scheduler's ClusterEvent). */
typedef struct ws_cluster_event {
    ws_event_resource resource;
    uint32_t actions; /* ws_event_actions, or-ed */
} ws_cluster_event;

typedef struct ws_events {
    const ws_cluster_event *ptr;
    size_t len;
} ws_events;

/* The cluster changes after which a pod this plugin rejected may fit
 * (kube-scheduler's EventsToRegister): such a pod waits until one of them
 * happens (or five minutes pass).
 *   WS_EVENTS({WS_EVENT_POD, WS_ADD | WS_DELETE | WS_UPDATE_POD_LABEL},
 *             {WS_EVENT_NODE, WS_ADD | WS_UPDATE_NODE_LABEL});
 * Without WS_EVENTS the plugin registers for every change (metadata `events`
 * is none). An empty list, `const ws_events ws_plugin_events = {NULL, 0};`,
 * leaves such a pod to the five minutes. */
#define WS_EVENTS(...)                                                   \
    static const ws_cluster_event ws_plugin_event_list[] = {__VA_ARGS__}; \
    const ws_events ws_plugin_events = {                                 \
        ws_plugin_event_list, sizeof ws_plugin_event_list / sizeof ws_plugin_event_list[0]}

/* ---- handles and accessors (wit: cluster.pod, cluster.nodes) ---------- */

typedef struct ws_pod { int32_t handle; } ws_pod;
typedef struct ws_nodes { int32_t handle; } ws_nodes;

ws_str ws_pod_name(ws_pod pod);
ws_str ws_pod_namespace(ws_pod pod);
ws_str ws_pod_uid(ws_pod pod);
bool ws_pod_label(ws_pod pod, ws_str key, ws_str *value);
ws_pairs ws_pod_labels(ws_pod pod);
bool ws_pod_annotation(ws_pod pod, ws_str key, ws_str *value);
ws_pairs ws_pod_annotations(ws_pod pod);
int64_t ws_pod_request(ws_pod pod, ws_str resource);
ws_quantities ws_pod_requests(ws_pod pod);
ws_tolerations ws_pod_tolerations(ws_pod pod);
ws_strs ws_pod_images(ws_pod pod);
ws_pairs ws_pod_node_selector(ws_pod pod);
int32_t ws_pod_priority(ws_pod pod);
ws_str ws_pod_scheduler_name(ws_pod pod);
bool ws_pod_owner_kind(ws_pod pod, ws_str *kind);
ws_str ws_pod_json(ws_pod pod);

/* Nodes are addressed by index 0 .. ws_nodes_len() - 1 (out of range traps). */
uint32_t ws_nodes_len(ws_nodes nodes);
ws_str ws_nodes_name(ws_nodes nodes, uint32_t i);
bool ws_nodes_label(ws_nodes nodes, uint32_t i, ws_str key, ws_str *value);
ws_pairs ws_nodes_labels(ws_nodes nodes, uint32_t i);
bool ws_nodes_annotation(ws_nodes nodes, uint32_t i, ws_str key, ws_str *value);
ws_pairs ws_nodes_annotations(ws_nodes nodes, uint32_t i);
int64_t ws_nodes_allocatable(ws_nodes nodes, uint32_t i, ws_str resource);
ws_quantities ws_nodes_allocatables(ws_nodes nodes, uint32_t i);
int64_t ws_nodes_requested(ws_nodes nodes, uint32_t i, ws_str resource);
ws_quantities ws_nodes_requesteds(ws_nodes nodes, uint32_t i);
int64_t ws_nodes_pod_count(ws_nodes nodes, uint32_t i);
bool ws_nodes_unschedulable(ws_nodes nodes, uint32_t i);
ws_taints ws_nodes_taints(ws_nodes nodes, uint32_t i);
ws_conditions ws_nodes_conditions(ws_nodes nodes, uint32_t i);
bool ws_nodes_image_size(ws_nodes nodes, uint32_t i, ws_str image, int64_t *size);
ws_images ws_nodes_images(ws_nodes nodes, uint32_t i);
uint64_t ws_nodes_random(ws_nodes nodes, uint32_t i);
ws_str ws_nodes_json(ws_nodes nodes, uint32_t i);

/* Column accessors: one host call for the whole batch, in batch order. */
ws_strs ws_nodes_names(ws_nodes nodes);
ws_opt_strs ws_nodes_label_values(ws_nodes nodes, ws_str key);
ws_opt_strs ws_nodes_annotation_values(ws_nodes nodes, ws_str key);
ws_opt_f64s ws_nodes_label_numbers(ws_nodes nodes, ws_str key);
ws_opt_f64s ws_nodes_annotation_numbers(ws_nodes nodes, ws_str key);
ws_i64s ws_nodes_allocatable_all(ws_nodes nodes, ws_str resource);
ws_i64s ws_nodes_requested_all(ws_nodes nodes, ws_str resource);
ws_i64s ws_nodes_image_bytes(ws_nodes nodes, ws_strs images);
ws_u64s ws_nodes_randoms(ws_nodes nodes);

/* ---- pod views (wit: cluster.nodes, since contract 0.2) ----------------- */

typedef struct ws_label_requirement {
    ws_str key;
    ws_str operator_; /* "In", "NotIn", "Exists" or "DoesNotExist" */
    ws_strs values;   /* In, NotIn: at least one; Exists, DoesNotExist: none */
} ws_label_requirement;
typedef WS_LIST(ws_label_requirement) ws_label_requirements;

/* Which pods a pod view counts (Kubernetes' label selector): those of
 * `namespaces` (none: the namespace of the pod being scheduled) or, with
 * all_namespaces, of every namespace, whose labels match every pair of
 * match_labels and every requirement of match_expressions (both empty: every
 * pod). Zero-initialize it and set what is needed:
 *   ws_pair app = {WS_S("app"), value};
 *   ws_pod_selector peers = {.match_labels = {&app, 1}}; */
typedef struct ws_pod_selector {
    ws_strs namespaces;
    bool all_namespaces;
    ws_pairs match_labels;
    ws_label_requirements match_expressions;
} ws_pod_selector;

/* The pods bound or assumed on the cluster's nodes in this cycle (not those
 * being deleted), counted by selector; one host call each, for the whole
 * batch. Each returns NULL and sets its last argument, or, for an invalid
 * selector, the host's error message (NUL-terminated, arena) and an empty
 * list: `if ((e = ws_nodes_pod_counts(nodes, &peers, &counts))) return e;` */

/* For every node of the batch, the number of selected pods on it. */
const char *ws_nodes_pod_counts(ws_nodes nodes, const ws_pod_selector *selector, ws_u32s *counts);
/* For every node of the batch, the number of selected pods in its domain:
 * on every node of the cluster whose label `topology_key` has the same
 * value as this node's. None (is_some false) when the node lacks the label. */
const char *ws_nodes_domain_counts(ws_nodes nodes, ws_str topology_key, const ws_pod_selector *selector,
                                   ws_opt_u32s *counts);
/* Every domain of `topology_key` in the cluster (each value the label takes
 * on a node, not only on the batch's nodes) with its number of selected pods
 * (0 included), sorted by value. */
const char *ws_nodes_domains(ws_nodes nodes, ws_str topology_key, const ws_pod_selector *selector,
                             ws_domains *domains);
/* The number of selected pods in the whole cluster, on every node, not only
 * the batch's (since contract 0.7): what a gang plugin counts of its gang at
 * Permit, in one call whatever the cluster's size. 0 on error. */
const char *ws_nodes_cluster_pod_count(ws_nodes nodes, const ws_pod_selector *selector, uint32_t *count);

/* ---- live metrics (wit: cluster.nodes, since contract 0.3) ------------- */

/* One node's reading of a metric source, with what was placed on the node
 * since: load the value cannot show yet. Correct the value by it, or every
 * pod placed between two refreshes goes to the same node. */
typedef struct ws_metric {
    double value;         /* what the source's query gave for the node */
    uint64_t age_ms;      /* how old the value is, ms */
    uint32_t pods_since;  /* pods bound or assumed on the node since */
    int64_t cpu_since;    /* the sum of their CPU requests, millicores */
    int64_t memory_since; /* the sum of their memory requests, bytes */
} ws_metric;
typedef struct ws_opt_metric { bool is_some; ws_metric val; } ws_opt_metric;
typedef WS_LIST(ws_opt_metric) ws_opt_metrics;

/* For every node of the batch (one host call), the latest value of the
 * metric source named `source` (the scheduler configuration's
 * metrics.sources[].name), refreshed in the background: none (is_some false)
 * when the source has no value for the node or the value is stale; answer
 * neutrally then. Returns NULL and sets *metrics, or, when no source of that
 * name is configured, the host's error message (NUL-terminated, arena) and an
 * empty list (declare the sources in ws_metric_sources: the host then finds
 * that at load). */
const char *ws_nodes_metrics(ws_nodes nodes, ws_str source, ws_opt_metrics *metrics);

/* ---- devices (wit: cluster.pod, cluster.nodes, since contract 0.6) ------ */

/* Dynamic Resource Allocation: the pod's resource claims, each node's
 * devices (from the cluster's ResourceSlices) and what DynamicResources
 * allocated for the pod on a node. */

/* Which value a ws_attribute_value holds (the cases of attribute-value). */
typedef enum ws_attribute_kind {
    WS_ATTRIBUTE_INT = 0,     /* val.int_ */
    WS_ATTRIBUTE_BOOL = 1,    /* val.boolean */
    WS_ATTRIBUTE_TEXT = 2,    /* val.text */
    WS_ATTRIBUTE_VERSION = 3, /* val.version: a semantic version as written ("1.2.3") */
} ws_attribute_kind;

/* The value of a device attribute (ResourceSlice.spec.devices[].attributes),
 * a tagged union: `kind` (a ws_attribute_kind) says which member of `val`
 * holds it.
 *   if (a.value.kind == WS_ATTRIBUTE_INT && a.value.val.int_ >= 40) ... */
typedef struct ws_attribute_value {
    uint8_t kind; /* ws_attribute_kind */
    union {
        int64_t int_;
        bool boolean;
        ws_str text;
        ws_str version;
    } val;
} ws_attribute_value;

/* One attribute of a device; the name is fully qualified, "domain/name" (a
 * name a driver writes without a domain gets the driver's). */
typedef struct ws_device_attribute { ws_str name; ws_attribute_value value; } ws_device_attribute;
typedef WS_LIST(ws_device_attribute) ws_device_attributes;

/* One capacity of a device: its name (fully qualified), the quantity as
 * written ("80Gi") and its value rounded up to an integer (bytes for 80Gi). */
typedef struct ws_device_capacity { ws_str name; ws_str quantity; int64_t value; } ws_device_capacity;
typedef WS_LIST(ws_device_capacity) ws_device_capacities;

/* A device a node can use: published in a ResourceSlice for the node
 * (nodeName), for a set of nodes that includes it (nodeSelector) or for
 * every node (allNodes). */
typedef struct ws_device {
    ws_str driver;
    ws_str pool;
    ws_str name; /* spec.devices[].name, unique in its pool */
    ws_device_attributes attributes;
    ws_device_capacities capacity;
    /* Allocated to a claim already (or to one whose pod is being bound): not
     * available to this pod, unless it is one of this pod's claims' devices. */
    bool taken;
} ws_device;
typedef WS_LIST(ws_device) ws_devices;

/* A device chosen for a request of a claim. */
typedef struct ws_allocated_device {
    ws_str request; /* the request's name; "request/subrequest" for a firstAvailable request */
    ws_str driver;
    ws_str pool;
    ws_str device;
} ws_allocated_device;
typedef WS_LIST(ws_allocated_device) ws_allocated_devices;

/* One request of a claim (spec.devices.requests[]); a firstAvailable request
 * is listed once per subrequest, in order, named "request/subrequest". */
typedef struct ws_claim_request {
    ws_str name;
    ws_str device_class;
    ws_str allocation_mode; /* "ExactCount" or "All" */
    uint64_t count;         /* how many devices (ExactCount) */
    ws_strs selectors;      /* the request's CEL selectors (not the class's) */
    bool admin_access;
} ws_claim_request;
typedef WS_LIST(ws_claim_request) ws_claim_requests;

/* One of the pod's spec.resourceClaims, with the ResourceClaim it names. */
typedef struct ws_pod_claim {
    ws_str name;      /* spec.resourceClaims[].name, as containers refer to it */
    ws_opt_str claim; /* the ResourceClaim's name; none when not known yet (made
                         from a template, not created yet) or none is needed */
    ws_claim_requests requests;
    ws_allocated_devices allocated; /* of a claim allocated already (else empty:
                                       see ws_nodes_allocation) */
    ws_strs reserved_for;           /* status.reservedFor, as "namespace/name" */
} ws_pod_claim;
/* (Not ws_pod_claims: that is the accessor's name.) */
typedef WS_LIST(ws_pod_claim) ws_claims;

/* The pod's resource claims, in spec.resourceClaims order. */
ws_claims ws_pod_claims(ws_pod pod);
/* The devices node i can use, by driver, pool and name (at most 4096). */
ws_devices ws_nodes_devices(ws_nodes nodes, uint32_t i);
/* What DynamicResources allocated for the pod's unallocated claims on node i
 * in this cycle (at Filter, before this plugin's Filter when DynamicResources
 * runs first, as by default; at PreScore and Score for every feasible node):
 * true and *devices, by claim in the pod's order; false (and *devices empty)
 * when the pod has no claim to allocate, or the node was not allocated for
 * (yet). */
bool ws_nodes_allocation(ws_nodes nodes, uint32_t i, ws_allocated_devices *devices);

/* Helpers. A name of an attribute or capacity without a domain ("memory")
 * is the device driver's ("gpu.example.com/memory"), as ResourceSlices and
 * CEL's device.capacity read it; a qualified one is taken as is. */
/* The value of the attribute `name` of `device`: true and *value when the
 * device has it. */
bool ws_device_attribute_of(const ws_device *device, ws_str name, ws_attribute_value *value);
/* The capacity `name` of `device`: true and *capacity (its value and the
 * quantity as written) when the device publishes it. */
bool ws_device_capacity_of(const ws_device *device, ws_str name, ws_device_capacity *capacity);
/* Whether `chosen` is `device` (same driver, pool and name). */
bool ws_allocated_device_is(const ws_allocated_device *chosen, const ws_device *device);
/* The devices DynamicResources allocated for the pod on node i in this cycle
 * (ws_nodes_allocation), each with its attributes and capacity (from
 * ws_nodes_devices), in allocation order: false (and *devices empty) when
 * ws_nodes_allocation is. Two host calls, the second only when something
 * was allocated. */
bool ws_nodes_allocated_devices(ws_nodes nodes, uint32_t i, ws_devices *devices);

/* ---- the pods on a node (wit: cluster.nodes, since contract 0.7) -------- */

/* A pod bound or assumed on a node. */
typedef struct ws_placed_pod {
    ws_str namespace_;
    ws_str name;
    ws_str uid;
    int32_t priority;       /* spec.priority (0 when unset) */
    ws_pairs labels;        /* sorted by key */
    ws_quantities requests; /* its effective requests (non-zero), as ws_pod_requests */
    bool deleting;          /* metadata.deletionTimestamp set */
} ws_placed_pod;
typedef WS_LIST(ws_placed_pod) ws_placed_pods;

/* The pods bound or assumed on node i, in no particular order; at most 1000
 * (what a custom preemption picks its victims from). */
ws_placed_pods ws_nodes_pods(ws_nodes nodes, uint32_t i);

/* Helpers for the lists of records: the value of `key` in (key, value)
 * pairs (labels, annotations: true and *value when there), and the amount
 * of the resource `name` in quantities (0 when absent). */
bool ws_pairs_get(ws_pairs pairs, ws_str key, ws_str *value);
int64_t ws_quantities_get(ws_quantities quantities, ws_str name);

/* ---- state the host keeps for the plugin (wit: state, since 0.7) -------- */

/* A plugin's instances are pooled and may run concurrently: memory inside
 * one instance (statics included) is neither kept nor shared, so what must
 * outlive a call (a quota's usage, a gang's members) goes here.
 *
 * The plugin's store (ws_state_get ... ws_state_add) is shared by every
 * instance of the plugin and kept across calls and pods, as long as the
 * scheduler runs; a new version of the plugin starts with it empty unless
 * it declares WS_KEEP_STATE. It is bounded (at most 65 536 keys of at most
 * 1 KiB, keys and values together at most a quarter of the plugin's memory
 * cap): a write past a bound is an error and changes nothing.
 *
 * The cycle's state (ws_state_cycle_get, ws_state_cycle_set) belongs to one
 * attempt of one pod: what PreFilter wrote, Filter, Score, Reserve, Permit,
 * PreBind and PostBind (or Unreserve) of the same attempt read; it is dropped
 * when the attempt ends (at most 1 MiB).
 *
 * Values are bytes; the ones read are arena memory. The functions that can
 * fail return NULL, or the host's message (NUL-terminated, arena), which a
 * hook can return as is. */
typedef WS_LIST(uint8_t) ws_bytes;

/* A string's bytes as a value, and a value's bytes as a string. */
static inline ws_bytes ws_str_bytes(ws_str s) { return (ws_bytes){(uint8_t *)(uintptr_t)s.ptr, s.len}; }
static inline ws_str ws_bytes_str(ws_bytes b) { return (ws_str){(const char *)b.ptr, b.len}; }

/* The value stored under `key`: true and *value when there is one. */
bool ws_state_get(ws_str key, ws_bytes *value);
/* Stores `value` under `key`. */
const char *ws_state_set(ws_str key, ws_bytes value);
/* Removes `key`; whether it was there. */
bool ws_state_remove(ws_str key);
/* The keys that start with `prefix`, sorted (at most 10 000). */
ws_strs ws_state_keys(ws_str prefix);
/* Adds `delta` to the counter under `key` (an int64_t stored as 8 bytes,
 * little-endian; none counts as 0) and sets *value (may be NULL) to its new
 * value, in one step however many instances call it at once. An error when
 * the value there is not 8 bytes, or the sum overflows. */
const char *ws_state_add(ws_str key, int64_t delta, int64_t *value);
/* The int64_t under `key` (8 bytes, little-endian, as ws_state_add and
 * ws_state_set_i64 write it): false when there is none or it is not 8 bytes. */
bool ws_state_get_i64(ws_str key, int64_t *value);
/* Stores `value` under `key` as 8 bytes, little-endian. */
const char *ws_state_set_i64(ws_str key, int64_t value);
/* The value the pod's cycle holds under `key`: true and *value when there
 * is one. */
bool ws_state_cycle_get(ws_str key, ws_bytes *value);
/* Stores `value` under `key` for the rest of the pod's cycle; an error
 * outside a pod's cycle (in ws_configure). */
const char *ws_state_cycle_set(ws_str key, ws_bytes value);

/* ---- the pods waiting at Permit (wit: waiting, since contract 0.7) ------ */

/* A pod placed and holding its node's resources, not bound until every
 * plugin whose ws_permit said wait allows it. */
typedef struct ws_waiting_pod {
    ws_str namespace_;
    ws_str name;
    ws_str uid;
    ws_str node;       /* the node it is assumed on */
    ws_pairs labels;   /* sorted by key */
    ws_strs plugins;   /* the plugins it still waits for */
    uint64_t waited_ms; /* how long it has waited */
} ws_waiting_pod;
/* (Not ws_waiting_pods: that is the accessor's name.) */
typedef WS_LIST(ws_waiting_pod) ws_waiting_list;

/* Every pod waiting at Permit (of every profile), longest waiting first. */
ws_waiting_list ws_waiting_pods(void);
/* Allows the pod of `uid` for this plugin: it stops waiting for this plugin
 * (and is bound when no plugin is left). False when it does not wait for
 * this plugin: a plugin releases only the pods it holds. */
bool ws_waiting_allow(ws_str uid);
/* Rejects the pod of `uid`, which this plugin holds, with `reason`: it is
 * not bound, its Reserve is undone, and it is retried later. False when it
 * does not wait for this plugin. */
bool ws_waiting_reject(ws_str uid, ws_str reason);
/* Whether `pod` still waits for the plugin named `plugin` (this plugin's:
 * ws_cstr(ws_plugin.name)). */
bool ws_waiting_waits_for(const ws_waiting_pod *pod, ws_str plugin);

/* ---- results ------------------------------------------------------------ */

typedef struct ws_status {
    ws_code code;  /* preset to WS_SUCCESS */
    ws_str reason; /* preset to "" */
} ws_status;

typedef struct ws_rejection {
    uint32_t index;
    uint8_t code; /* ws_code */
    ws_str reason;
} ws_rejection;

typedef struct ws_rejections {
    ws_rejection *ptr;
    size_t len, cap;
} ws_rejections;

/* Rejects node `index` of the batch (ws_filter). */
void ws_reject(ws_rejections *out, uint32_t index, ws_code code, ws_str reason);

/* (Since contract 0.7.) What Filter found on one node, for ws_post_filter. */
typedef struct ws_node_status {
    ws_str node;
    uint8_t code; /* ws_code: WS_UNSCHEDULABLE or WS_UNSCHEDULABLE_AND_UNRESOLVABLE */
    ws_str reason;
    ws_str plugin; /* the plugin that rejected the node */
} ws_node_status;
typedef WS_LIST(ws_node_status) ws_node_statuses;

/* (Since contract 0.7.) What ws_post_filter answers; preset to
 * {WS_UNSCHEDULABLE, ""}, no nominated node, no victims: no room made. */
typedef struct ws_post_filter_result {
    /* WS_SUCCESS: the plugin made room, and the PostFilter plugins after it
     * do not run; otherwise its reason joins the pod's failure message. */
    ws_status status;
    /* The node the pod is nominated to: the scheduler holds its room there
     * for the pod (status.nominatedNodeName). */
    ws_opt_str nominated_node;
    /* Pods to evict from the nominated node to make that room, as
     * "namespace/name": the host evicts them as preemption does, and only if
     * every one is bound to that node, of lower priority than the pod, not
     * being deleted already and not protected by a PodDisruptionBudget that
     * allows no disruption; otherwise it evicts none and the pod's attempt
     * fails. Arena or static memory. */
    ws_strs victims;
} ws_post_filter_result;

/* (Since contract 0.7.) Permit's verdict. */
typedef enum ws_permit_kind {
    WS_PERMIT_ALLOW = 0,  /* bind (once every other Permit plugin allows too) */
    WS_PERMIT_REJECT = 1, /* do not bind: the pod's Reserve is undone, it is retried later */
    WS_PERMIT_WAIT = 2,   /* hold the pod (with its node's resources) for wait_ms */
} ws_permit_kind;

/* Preset to WS_PERMIT_ALLOW. WS_PERMIT_WAIT holds the pod for at most
 * wait_ms milliseconds (at most 15 minutes): until this plugin allows it
 * with ws_waiting_allow (from any instance, typically on another pod's
 * call) or rejects it; at the deadline it is rejected. The wait happens in
 * the binding cycle: the scheduler goes on with other pods meanwhile. */
typedef struct ws_permit_verdict {
    ws_permit_kind kind;
    ws_str reason;    /* WS_PERMIT_REJECT */
    uint32_t wait_ms; /* WS_PERMIT_WAIT */
} ws_permit_verdict;

/* *verdict = ws_permit_wait(60 * 1000); */
static inline ws_permit_verdict ws_permit_allow(void) { return (ws_permit_verdict){WS_PERMIT_ALLOW, {"", 0}, 0}; }
static inline ws_permit_verdict ws_permit_reject(ws_str reason) { return (ws_permit_verdict){WS_PERMIT_REJECT, reason, 0}; }
static inline ws_permit_verdict ws_permit_wait(uint32_t ms) { return (ws_permit_verdict){WS_PERMIT_WAIT, {"", 0}, ms}; }

/* ---- the hooks a plugin defines (all optional) ------------------------- */

/* The plugin's args (JSON, "{}" when none); kept until the next call of
 * ws_configure, so slices of it (ws_json_string) may be stored as is. */
const char *ws_configure(ws_str args);
/* (Since contract 0.4.) The metric sources (metrics.sources[].name) the
 * plugin reads with ws_nodes_metrics, as its args configured it; called once
 * after ws_configure. The host checks them at load: a name the scheduler's
 * configuration does not define rejects the plugin at start, instead of
 * failing every pod. The list and its strings must outlive the call: static,
 * the kept args (and slices of them) or arena memory; the SDK never frees
 * them. Not defined: none.
 *   ws_strs ws_metric_sources(void) { return (ws_strs){&source, 1}; } */
ws_strs ws_metric_sources(void);
const char *ws_pre_filter(ws_pod pod, ws_status *status);
const char *ws_filter(ws_pod pod, ws_nodes nodes, ws_rejections *out);
const char *ws_pre_score(ws_pod pod, ws_nodes nodes, ws_status *status);
/* scores: n = ws_nodes_len(nodes) entries, preset to 0. */
const char *ws_score(ws_pod pod, ws_nodes nodes, int64_t *scores, size_t n);
/* Maps scores in place. */
const char *ws_normalize_score(ws_pod pod, int64_t *scores, size_t n);

/* Since contract 0.7 (the binding cycle's points follow Score: the host
 * picks a node, then Reserve and Permit run on it, then PreBind, the
 * binding and PostBind). */
/* PostFilter: the pod fits on no node. statuses says why on each node
 * Filter rejected (at most 1000, the first ones); nodes holds those nodes in
 * the same order. Runs only if the PostFilter plugins before it
 * (DefaultPreemption by default) did not succeed. */
const char *ws_post_filter(ws_pod pod, ws_nodes nodes, ws_node_statuses statuses, ws_post_filter_result *result);
/* Reserve (WS_RESERVE): the pod was placed on the one node of `nodes` and its
 * resources are about to be held for it. A status other than WS_SUCCESS, or
 * an error, fails the attempt and undoes the Reserve of every plugin that
 * reserved. status: preset to WS_SUCCESS. */
const char *ws_reserve(ws_pod pod, ws_nodes nodes, ws_status *status);
/* Unreserve (WS_RESERVE; optional): undo this plugin's Reserve for the pod
 * on `node` (a later point failed, Permit rejected or timed out, the
 * binding failed, or the pod was deleted while waiting). Called at most once
 * per Reserve; it cannot fail (log what goes wrong). */
void ws_unreserve(ws_pod pod, ws_str node);
/* Permit: after Reserve, whether the pod may be bound on the one node of
 * `nodes`, whose pod views count the pods bound or assumed before this one
 * (those waiting at Permit included, this pod not). verdict: preset to
 * allow; set it with ws_permit_reject(reason) or ws_permit_wait(ms). */
const char *ws_permit(ws_pod pod, ws_nodes nodes, ws_permit_verdict *verdict);
/* PreBind: before the binding to `node` is written. A status other than
 * WS_SUCCESS, an error, or no answer within the plugin's time limit fails
 * the binding: the pod is unreserved and retried. status: preset to
 * WS_SUCCESS. */
const char *ws_pre_bind(ws_pod pod, ws_str node, ws_status *status);
/* PostBind: the pod is bound to `node` (informational; it cannot fail). */
void ws_post_bind(ws_pod pod, ws_str node);

/* The hooks of the points WS_PLUGIN declares (NULL for the others, which
 * answer "not implemented"). */
struct ws_hooks {
    const char *(*pre_filter)(ws_pod pod, ws_status *status);
    const char *(*filter)(ws_pod pod, ws_nodes nodes, ws_rejections *out);
    const char *(*pre_score)(ws_pod pod, ws_nodes nodes, ws_status *status);
    const char *(*score)(ws_pod pod, ws_nodes nodes, int64_t *scores, size_t n);
    const char *(*normalize_score)(ws_pod pod, int64_t *scores, size_t n);
    const char *(*post_filter)(ws_pod pod, ws_nodes nodes, ws_node_statuses statuses, ws_post_filter_result *result);
    const char *(*reserve)(ws_pod pod, ws_nodes nodes, ws_status *status);
    const char *(*permit)(ws_pod pod, ws_nodes nodes, ws_permit_verdict *verdict);
    const char *(*pre_bind)(ws_pod pod, ws_str node, ws_status *status);
    void (*post_bind)(ws_pod pod, ws_str node);
};

/* ---- args: a small JSON reader for the top-level fields of an object --- */

/* Each returns true when `key` is a field of the top-level object with a
 * value of that type; false otherwise (absent, other type, invalid JSON).
 * ws_json_string unescapes into kept memory when needed. */
bool ws_json_string(ws_str json, const char *key, ws_str *out);
bool ws_json_f64(ws_str json, const char *key, double *out);
bool ws_json_i64(ws_str json, const char *key, int64_t *out); /* integral numbers only */
bool ws_json_bool(ws_str json, const char *key, bool *out);
/* true when the field is present, whatever its value. */
bool ws_json_has(ws_str json, const char *key);
/* true when `json` is an object; *keys is then its field names in order
 * (unescaped; valid during the call): to reject fields the plugin does not
 * know. */
bool ws_json_keys(ws_str json, ws_strs *keys);

/* ---- logging and text --------------------------------------------------- */

void ws_log(ws_level level, ws_str message);
void ws_logz(ws_level level, const char *message);

/* A growable string in the arena. ws_buf b = {0}; */
typedef struct ws_buf { char *ptr; size_t len, cap; } ws_buf;
void ws_buf_str(ws_buf *b, ws_str s);
void ws_buf_cstr_add(ws_buf *b, const char *s);
void ws_buf_i64(ws_buf *b, int64_t v);
ws_str ws_buf_view(const ws_buf *b);
const char *ws_buf_cstr(ws_buf *b); /* NUL-terminated */

/* ---- memory and numbers -------------------------------------------------- */

/* Arena memory, released after the current call. Never NULL (traps). */
void *ws_alloc(size_t size, size_t align);
/* Rust's `(x).round() as i64`: half away from zero, saturating, NaN -> 0. */
int64_t ws_round_i64(double x);
/* Parses a decimal number the way Rust's str::parse::<f64> does (no
 * surrounding spaces; "inf"/"nan" accepted). */
bool ws_parse_f64(ws_str s, double *out);

#ifdef __cplusplus
}
#endif
#endif
