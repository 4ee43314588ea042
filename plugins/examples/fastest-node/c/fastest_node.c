/*
 * fastest-node (C): prefer the node with the lowest measured latency (e.g.
 * HTTP response time in seconds from a monitoring system), read from a metric
 * source (contract 0.3; declared in ws_metric_sources, contract 0.4) and
 * corrected for the pods placed on the node since the value was taken. Nodes
 * without a value are neutral (50); the fastest scores 100, the slowest 0,
 * the others in between.
 *
 * Args: {"source": "latency", "penaltyPerPod": 0.1} (the defaults).
 * penaltyPerPod: the latency each pod placed since the sample adds, as a
 * fraction of the value (0 turns the correction off).
 */
#include <wasmsched.h>
#include <string.h>

/* Every language's fastest-node computes the same scores bit for bit: keep
 * each multiplication and addition separately rounded. */
#pragma STDC FP_CONTRACT OFF

WS_PLUGIN("fastest-node", "0.1.0", WS_SCORE | WS_NORMALIZE_SCORE);

/* Raw score of a node without a usable value. */
#define NO_VALUE (-1)
/* Raw scores are microseconds, capped (a million seconds). */
#define MAX_RAW INT64_C(1000000000000)

static ws_str source = WS_S("latency");
static double penalty_per_pod = 0.1;

static int str_cmp(ws_str a, ws_str b) {
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.ptr, b.ptr, n) : 0;
    return c ? c : (a.len > b.len) - (a.len < b.len);
}

const char *ws_configure(ws_str args) {
    ws_strs keys;
    if (!ws_json_keys(args, &keys)) return "args: must be an object";
    ws_str src = WS_S("latency");
    if (ws_json_has(args, "source") && (!ws_json_string(args, "source", &src) || src.len == 0))
        return "args.source: must be a non-empty string";
    double penalty = 0.1;
    if (ws_json_has(args, "penaltyPerPod") &&
        (!ws_json_f64(args, "penaltyPerPod", &penalty) || !(penalty >= 0.0) || !__builtin_isfinite(penalty)))
        return "args.penaltyPerPod: must be a number >= 0";
    /* The first unknown key in sorted order, whatever order the JSON has. */
    const ws_str *unknown = NULL;
    for (size_t i = 0; i < keys.len; i++) {
        ws_str k = keys.ptr[i];
        if (ws_str_eq(k, WS_S("source")) || ws_str_eq(k, WS_S("penaltyPerPod"))) continue;
        if (!unknown || str_cmp(k, *unknown) < 0) unknown = &keys.ptr[i];
    }
    if (unknown) {
        ws_buf b = {0};
        ws_buf_cstr_add(&b, "args: unknown field \"");
        ws_buf_str(&b, *unknown);
        ws_buf_cstr_add(&b, "\"");
        return ws_buf_cstr(&b);
    }
    source = src; /* args is kept until the next configure */
    penalty_per_pod = penalty;
    return NULL;
}

/* The source it reads, as configured: a source the scheduler's configuration
 * lacks then rejects the plugin at load rather than every pod. */
ws_strs ws_metric_sources(void) { return (ws_strs){&source, 1}; }

/* Raw score: the corrected latency in microseconds. One host call for the
 * whole batch. */
const char *ws_score(ws_pod pod, ws_nodes nodes, int64_t *scores, size_t n) {
    (void)pod;
    ws_opt_metrics ms;
    const char *e = ws_nodes_metrics(nodes, source, &ms);
    if (e) {
        ws_buf b = {0};
        ws_buf_cstr_add(&b, "metrics(");
        ws_buf_str(&b, source);
        ws_buf_cstr_add(&b, "): ");
        ws_buf_cstr_add(&b, e);
        return ws_buf_cstr(&b);
    }
    for (size_t i = 0; i < n; i++) {
        scores[i] = NO_VALUE;
        if (i >= ms.len || !ms.ptr[i].is_some) continue;
        ws_metric m = ms.ptr[i].val;
        if (!__builtin_isfinite(m.value) || !(m.value >= 0.0)) continue;
        /* The pods placed since the sample load the node more than it shows:
         * without this, every pod until the next refresh goes to the same node. */
        double corrected = m.value * (1.0 + penalty_per_pod * (double)m.pods_since);
        double us = __builtin_floor(corrected * 1000000.0 + 0.5);
        /* Compared as a double: the conversion of an infinity is undefined in C.
         * NaN (0 * an infinite correction) converts to 0, as a saturating cast does. */
        scores[i] = us != us ? 0 : us > (double)MAX_RAW ? MAX_RAW : (int64_t)us;
    }
    return NULL;
}

/* Fastest -> 100, slowest -> 0; no value -> 50 (neither preferred nor avoided). */
const char *ws_normalize_score(ws_pod pod, int64_t *scores, size_t n) {
    (void)pod;
    bool any = false;
    int64_t lo = 0, hi = 0;
    for (size_t i = 0; i < n; i++) {
        if (scores[i] == NO_VALUE) continue;
        if (!any || scores[i] < lo) lo = scores[i];
        if (!any || scores[i] > hi) hi = scores[i];
        any = true;
    }
    for (size_t i = 0; i < n; i++) {
        if (!any || scores[i] == NO_VALUE) scores[i] = 50;
        else if (hi == lo) scores[i] = 100;
        else scores[i] = 100 - (scores[i] - lo) * 100 / (hi - lo);
    }
    return NULL;
}
