/*
 * wasmsched C SDK: the plumbing between wit-bindgen's generated bindings
 * (../generated/scheduler_plugin.{h,c}) and the plugin's hooks
 * (../include/wasmsched.h), plus the allocator and the libc subset that a
 * freestanding wasm32 build needs.
 */
#include "wasmsched.h"
#include "scheduler_plugin.h"

#include <stdlib.h>
#include <string.h>

/* The SDK's types reuse the generated ones' memory layout: lists from the
 * host are handed out as they are, without copies. */
#define SAME_LAYOUT(A, B) _Static_assert(sizeof(A) == sizeof(B) && _Alignof(A) == _Alignof(B), #A " vs " #B)
SAME_LAYOUT(ws_str, scheduler_plugin_string_t);
SAME_LAYOUT(ws_opt_str, scheduler_plugin_option_string_t);
SAME_LAYOUT(ws_opt_f64, scheduler_plugin_option_f64_t);
SAME_LAYOUT(ws_pair, scheduler_plugin_tuple2_string_string_t);
SAME_LAYOUT(ws_quantity, wasmsched_plugin_cluster_quantity_t);
SAME_LAYOUT(ws_taint, wasmsched_plugin_cluster_taint_t);
SAME_LAYOUT(ws_toleration, wasmsched_plugin_cluster_toleration_t);
SAME_LAYOUT(ws_condition, wasmsched_plugin_cluster_condition_t);
SAME_LAYOUT(ws_image, wasmsched_plugin_cluster_image_t);
SAME_LAYOUT(ws_rejection, exports_wasmsched_plugin_plugin_rejection_t);
_Static_assert(offsetof(ws_rejection, code) == offsetof(exports_wasmsched_plugin_plugin_rejection_t, code), "rejection.code");
_Static_assert(offsetof(ws_rejection, reason) == offsetof(exports_wasmsched_plugin_plugin_rejection_t, reason), "rejection.reason");
_Static_assert(offsetof(ws_opt_f64, val) == offsetof(scheduler_plugin_option_f64_t, val), "option<f64>");
_Static_assert(offsetof(ws_image, size_bytes) == offsetof(wasmsched_plugin_cluster_image_t, size_bytes), "image");
SAME_LAYOUT(ws_opt_u32, scheduler_plugin_option_u32_t);
SAME_LAYOUT(ws_domain, scheduler_plugin_tuple2_string_u32_t);
_Static_assert(offsetof(ws_opt_u32, val) == offsetof(scheduler_plugin_option_u32_t, val), "option<u32>");
_Static_assert(offsetof(ws_domain, count) == offsetof(scheduler_plugin_tuple2_string_u32_t, f1), "domain");
/* Selectors go to the host as the plugin wrote them. */
SAME_LAYOUT(ws_label_requirement, wasmsched_plugin_cluster_label_requirement_t);
SAME_LAYOUT(ws_pod_selector, wasmsched_plugin_cluster_pod_selector_t);
_Static_assert(offsetof(ws_label_requirement, values) == offsetof(wasmsched_plugin_cluster_label_requirement_t, values), "label-requirement");
_Static_assert(offsetof(ws_pod_selector, all_namespaces) == offsetof(wasmsched_plugin_cluster_pod_selector_t, all_namespaces), "pod-selector");
_Static_assert(offsetof(ws_pod_selector, match_labels) == offsetof(wasmsched_plugin_cluster_pod_selector_t, match_labels), "pod-selector");
_Static_assert(offsetof(ws_pod_selector, match_expressions) == offsetof(wasmsched_plugin_cluster_pod_selector_t, match_expressions), "pod-selector");
SAME_LAYOUT(ws_metric, wasmsched_plugin_cluster_metric_t);
SAME_LAYOUT(ws_opt_metric, wasmsched_plugin_cluster_option_metric_t);
_Static_assert(offsetof(ws_metric, age_ms) == offsetof(wasmsched_plugin_cluster_metric_t, age_ms), "metric");
_Static_assert(offsetof(ws_metric, pods_since) == offsetof(wasmsched_plugin_cluster_metric_t, pods_since), "metric");
_Static_assert(offsetof(ws_metric, cpu_since) == offsetof(wasmsched_plugin_cluster_metric_t, cpu_since), "metric");
_Static_assert(offsetof(ws_metric, memory_since) == offsetof(wasmsched_plugin_cluster_metric_t, memory_since), "metric");
_Static_assert(offsetof(ws_opt_metric, val) == offsetof(wasmsched_plugin_cluster_option_metric_t, val), "option<metric>");
SAME_LAYOUT(ws_attribute_value, wasmsched_plugin_cluster_attribute_value_t);
_Static_assert(offsetof(ws_attribute_value, val) == offsetof(wasmsched_plugin_cluster_attribute_value_t, val), "attribute-value");
_Static_assert(WS_ATTRIBUTE_INT == WASMSCHED_PLUGIN_CLUSTER_ATTRIBUTE_VALUE_INT, "attribute-value int");
_Static_assert(WS_ATTRIBUTE_BOOL == WASMSCHED_PLUGIN_CLUSTER_ATTRIBUTE_VALUE_BOOLEAN, "attribute-value boolean");
_Static_assert(WS_ATTRIBUTE_TEXT == WASMSCHED_PLUGIN_CLUSTER_ATTRIBUTE_VALUE_TEXT, "attribute-value text");
_Static_assert(WS_ATTRIBUTE_VERSION == WASMSCHED_PLUGIN_CLUSTER_ATTRIBUTE_VALUE_VERSION, "attribute-value version");
_Static_assert(WS_EVENT_RESOURCE_CLAIM == EXPORTS_WASMSCHED_PLUGIN_PLUGIN_EVENT_RESOURCE_RESOURCE_CLAIM, "event-resource");
_Static_assert(WS_EVENT_RESOURCE_SLICE == EXPORTS_WASMSCHED_PLUGIN_PLUGIN_EVENT_RESOURCE_RESOURCE_SLICE, "event-resource");
_Static_assert(WS_EVENT_DEVICE_CLASS == EXPORTS_WASMSCHED_PLUGIN_PLUGIN_EVENT_RESOURCE_DEVICE_CLASS, "event-resource");
SAME_LAYOUT(ws_device_attribute, wasmsched_plugin_cluster_device_attribute_t);
_Static_assert(offsetof(ws_device_attribute, value) == offsetof(wasmsched_plugin_cluster_device_attribute_t, value), "device-attribute");
SAME_LAYOUT(ws_device_capacity, wasmsched_plugin_cluster_device_capacity_t);
_Static_assert(offsetof(ws_device_capacity, quantity) == offsetof(wasmsched_plugin_cluster_device_capacity_t, quantity), "device-capacity");
_Static_assert(offsetof(ws_device_capacity, value) == offsetof(wasmsched_plugin_cluster_device_capacity_t, value), "device-capacity");
SAME_LAYOUT(ws_device, wasmsched_plugin_cluster_device_t);
_Static_assert(offsetof(ws_device, attributes) == offsetof(wasmsched_plugin_cluster_device_t, attributes), "device");
_Static_assert(offsetof(ws_device, capacity) == offsetof(wasmsched_plugin_cluster_device_t, capacity), "device");
_Static_assert(offsetof(ws_device, taken) == offsetof(wasmsched_plugin_cluster_device_t, taken), "device");
SAME_LAYOUT(ws_allocated_device, wasmsched_plugin_cluster_allocated_device_t);
_Static_assert(offsetof(ws_allocated_device, device) == offsetof(wasmsched_plugin_cluster_allocated_device_t, device), "allocated-device");
SAME_LAYOUT(ws_claim_request, wasmsched_plugin_cluster_claim_request_t);
_Static_assert(offsetof(ws_claim_request, allocation_mode) == offsetof(wasmsched_plugin_cluster_claim_request_t, allocation_mode), "claim-request");
_Static_assert(offsetof(ws_claim_request, count) == offsetof(wasmsched_plugin_cluster_claim_request_t, count), "claim-request");
_Static_assert(offsetof(ws_claim_request, selectors) == offsetof(wasmsched_plugin_cluster_claim_request_t, selectors), "claim-request");
_Static_assert(offsetof(ws_claim_request, admin_access) == offsetof(wasmsched_plugin_cluster_claim_request_t, admin_access), "claim-request");
SAME_LAYOUT(ws_pod_claim, wasmsched_plugin_cluster_pod_claim_t);
_Static_assert(offsetof(ws_pod_claim, claim) == offsetof(wasmsched_plugin_cluster_pod_claim_t, claim), "pod-claim");
_Static_assert(offsetof(ws_pod_claim, requests) == offsetof(wasmsched_plugin_cluster_pod_claim_t, requests), "pod-claim");
_Static_assert(offsetof(ws_pod_claim, allocated) == offsetof(wasmsched_plugin_cluster_pod_claim_t, allocated), "pod-claim");
_Static_assert(offsetof(ws_pod_claim, reserved_for) == offsetof(wasmsched_plugin_cluster_pod_claim_t, reserved_for), "pod-claim");
/* Contract 0.7. */
SAME_LAYOUT(ws_bytes, scheduler_plugin_list_u8_t);
SAME_LAYOUT(ws_placed_pod, wasmsched_plugin_cluster_placed_pod_t);
_Static_assert(offsetof(ws_placed_pod, priority) == offsetof(wasmsched_plugin_cluster_placed_pod_t, priority), "placed-pod");
_Static_assert(offsetof(ws_placed_pod, labels) == offsetof(wasmsched_plugin_cluster_placed_pod_t, labels), "placed-pod");
_Static_assert(offsetof(ws_placed_pod, requests) == offsetof(wasmsched_plugin_cluster_placed_pod_t, requests), "placed-pod");
_Static_assert(offsetof(ws_placed_pod, deleting) == offsetof(wasmsched_plugin_cluster_placed_pod_t, deleting), "placed-pod");
SAME_LAYOUT(ws_waiting_pod, wasmsched_plugin_waiting_waiting_pod_t);
_Static_assert(offsetof(ws_waiting_pod, node) == offsetof(wasmsched_plugin_waiting_waiting_pod_t, node), "waiting-pod");
_Static_assert(offsetof(ws_waiting_pod, labels) == offsetof(wasmsched_plugin_waiting_waiting_pod_t, labels), "waiting-pod");
_Static_assert(offsetof(ws_waiting_pod, plugins) == offsetof(wasmsched_plugin_waiting_waiting_pod_t, plugins), "waiting-pod");
_Static_assert(offsetof(ws_waiting_pod, waited_ms) == offsetof(wasmsched_plugin_waiting_waiting_pod_t, waited_ms), "waiting-pod");
SAME_LAYOUT(ws_node_status, exports_wasmsched_plugin_plugin_node_status_t);
_Static_assert(offsetof(ws_node_status, code) == offsetof(exports_wasmsched_plugin_plugin_node_status_t, code), "node-status");
_Static_assert(offsetof(ws_node_status, reason) == offsetof(exports_wasmsched_plugin_plugin_node_status_t, reason), "node-status");
_Static_assert(offsetof(ws_node_status, plugin) == offsetof(exports_wasmsched_plugin_plugin_node_status_t, plugin), "node-status");
_Static_assert(WS_POST_FILTER == EXPORTS_WASMSCHED_PLUGIN_PLUGIN_POINTS_POST_FILTER, "points");
_Static_assert(WS_RESERVE == EXPORTS_WASMSCHED_PLUGIN_PLUGIN_POINTS_RESERVE, "points");
_Static_assert(WS_PERMIT == EXPORTS_WASMSCHED_PLUGIN_PLUGIN_POINTS_PERMIT, "points");
_Static_assert(WS_PRE_BIND == EXPORTS_WASMSCHED_PLUGIN_PLUGIN_POINTS_PRE_BIND, "points");
_Static_assert(WS_POST_BIND == EXPORTS_WASMSCHED_PLUGIN_PLUGIN_POINTS_POST_BIND, "points");
_Static_assert(WS_PERMIT_ALLOW == EXPORTS_WASMSCHED_PLUGIN_PLUGIN_PERMIT_VERDICT_ALLOW, "permit-verdict");
_Static_assert(WS_PERMIT_REJECT == EXPORTS_WASMSCHED_PLUGIN_PLUGIN_PERMIT_VERDICT_REJECT, "permit-verdict");
_Static_assert(WS_PERMIT_WAIT == EXPORTS_WASMSCHED_PLUGIN_PLUGIN_PERMIT_VERDICT_WAIT, "permit-verdict");

/* ======================================================================
 * Memory: one bump arena over the linear memory above __heap_base.
 *
 * Everything allocated while an export runs (the host's lowering of its
 * arguments and of the accessors' results, the plugin's own allocations, the
 * results) stays valid until the host has read the results. The next export
 * call starts afresh: the first allocation after a call has returned (the
 * host lowering the next call's arguments) or the next call's entry resets the
 * arena. free() is a no-op.
 * ====================================================================== */

extern unsigned char __heap_base;

static uintptr_t arena_base, arena_top, arena_end;
static bool in_call, dirty;

static void arena_reset_if_done(void) {
    if (!arena_base) {
        arena_base = ((uintptr_t)&__heap_base + 15) & ~(uintptr_t)15;
        arena_top = arena_base;
        arena_end = (uintptr_t)__builtin_wasm_memory_size(0) * 65536u;
    }
    if (!in_call && dirty) {
        arena_top = arena_base;
        dirty = false;
    }
}

void *ws_alloc(size_t size, size_t align) {
    arena_reset_if_done();
    if (align == 0) align = 1;
    uintptr_t p = (arena_top + (align - 1)) & ~(uintptr_t)(align - 1);
    uintptr_t end = p + size;
    if (end < p) __builtin_trap();
    if (end > arena_end) {
        arena_end = (uintptr_t)__builtin_wasm_memory_size(0) * 65536u;
        if (end > arena_end) {
            size_t pages = (end - arena_end + 65535u) / 65536u;
            if (__builtin_wasm_memory_grow(0, pages) == (size_t)-1) __builtin_trap();
            arena_end += pages * 65536u;
        }
    }
    arena_top = end;
    return (void *)p;
}

static void call_enter(void) {
    arena_reset_if_done();
    in_call = true;
}

static void call_leave(void) {
    in_call = false;
    dirty = true;
}

/* Overrides the generated (weak) cabi_realloc: the host allocates the
 * strings and lists it passes to the plugin through it. */
__attribute__((__export_name__("cabi_realloc")))
void *cabi_realloc(void *ptr, size_t old_size, size_t align, size_t new_size) {
    if (new_size == 0) return (void *)align;
    if (ptr && new_size <= old_size) return ptr;
    void *p = ws_alloc(new_size, align);
    if (ptr && old_size) memcpy(p, ptr, old_size);
    return p;
}

/* libc subset used by the generated bindings (freestanding builds). */
typedef struct { size_t size; size_t pad; } block_header;

void *malloc(size_t size) {
    block_header *h = ws_alloc(sizeof(block_header) + size, 16);
    h->size = size;
    return h + 1;
}

void *calloc(size_t n, size_t size) {
    size_t total = n * size;
    if (size && total / size != n) __builtin_trap();
    void *p = malloc(total);
    memset(p, 0, total);
    return p;
}

void *realloc(void *ptr, size_t size) {
    if (!ptr) return malloc(size);
    block_header *h = (block_header *)ptr - 1;
    if (size <= h->size) return ptr;
    void *p = malloc(size);
    memcpy(p, ptr, h->size);
    return p;
}

void free(void *ptr) { (void)ptr; }

_Noreturn void abort(void) { __builtin_trap(); }

__attribute__((weak)) void *memcpy(void *dst, const void *src, size_t n) {
    return __builtin_memcpy(dst, src, n); /* memory.copy with -mbulk-memory */
}

__attribute__((weak)) void *memmove(void *dst, const void *src, size_t n) {
    return __builtin_memmove(dst, src, n);
}

__attribute__((weak)) void *memset(void *dst, int c, size_t n) {
    return __builtin_memset(dst, c, n); /* memory.fill */
}

__attribute__((weak)) int memcmp(const void *a, const void *b, size_t n) {
    const unsigned char *x = a, *y = b;
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
    return 0;
}

__attribute__((weak)) size_t strlen(const char *s) {
    const char *p = s;
    while (*p) p++;
    return (size_t)(p - s);
}

/* Kept memory: outlives calls. Two halves: each configure copies its args
 * into the half the current configuration does not use, and makes it the
 * current one only when it succeeds (a failed configure leaves the previous
 * configuration intact). */
#ifndef WS_KEEP_BYTES
#define WS_KEEP_BYTES (64 * 1024)
#endif
static char keep_pool[2][WS_KEEP_BYTES];
static size_t keep_top[2];
static int keep_cur; /* the half ws_keep writes into */

static bool in_keep(const char *p) {
    return p >= &keep_pool[0][0] && p < &keep_pool[1][0] + WS_KEEP_BYTES;
}

static char *keep_alloc(size_t n) {
    if (n > WS_KEEP_BYTES - keep_top[keep_cur]) return NULL;
    char *p = keep_pool[keep_cur] + keep_top[keep_cur];
    keep_top[keep_cur] += n;
    return p;
}

ws_str ws_keep(ws_str s) {
    if (s.len == 0) return (ws_str){"", 0};
    char *p = keep_alloc(s.len);
    if (!p) __builtin_trap(); /* WS_KEEP_BYTES exceeded */
    memcpy(p, s.ptr, s.len);
    return (ws_str){p, s.len};
}

/* ======================================================================
 * Strings and text
 * ====================================================================== */

ws_str ws_cstr(const char *s) { return (ws_str){s, strlen(s)}; }

bool ws_str_eq(ws_str a, ws_str b) {
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

const char *ws_str_cstr(ws_str s) {
    char *p = ws_alloc(s.len + 1, 1);
    if (s.len) memcpy(p, s.ptr, s.len);
    p[s.len] = 0;
    return p;
}

static void buf_reserve(ws_buf *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap * 2 : 64;
    while (cap < b->len + extra + 1) cap *= 2;
    char *p = ws_alloc(cap, 1);
    if (b->len) memcpy(p, b->ptr, b->len);
    b->ptr = p;
    b->cap = cap;
}

void ws_buf_str(ws_buf *b, ws_str s) {
    buf_reserve(b, s.len);
    if (s.len) memcpy(b->ptr + b->len, s.ptr, s.len);
    b->len += s.len;
}

void ws_buf_cstr_add(ws_buf *b, const char *s) { ws_buf_str(b, ws_cstr(s)); }

void ws_buf_i64(ws_buf *b, int64_t v) {
    char tmp[24];
    size_t n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[sizeof tmp - 1 - n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) tmp[sizeof tmp - 1 - n++] = '-';
    ws_buf_str(b, (ws_str){tmp + sizeof tmp - n, n});
}

ws_str ws_buf_view(const ws_buf *b) { return (ws_str){b->ptr ? b->ptr : "", b->len}; }

const char *ws_buf_cstr(ws_buf *b) {
    buf_reserve(b, 0);
    b->ptr[b->len] = 0;
    return b->ptr;
}

void ws_log(ws_level level, ws_str message) {
    scheduler_plugin_string_t m = {(uint8_t *)message.ptr, message.len};
    wasmsched_plugin_host_log((wasmsched_plugin_host_level_t)level, &m);
}

void ws_logz(ws_level level, const char *message) { ws_log(level, ws_cstr(message)); }

/* ======================================================================
 * Numbers
 * ====================================================================== */

int64_t ws_round_i64(double x) {
    if (x != x) return 0;
    if (x >= 9223372036854775808.0) return INT64_MAX;
    if (x <= -9223372036854775808.0) return INT64_MIN;
    double t = __builtin_trunc(x);
    double f = x - t;
    if (f >= 0.5) t += 1.0;
    else if (f <= -0.5) t -= 1.0;
    return (int64_t)t;
}

static bool ieq(const char *p, size_t n, const char *word) {
    size_t w = strlen(word);
    if (n != w) return false;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != word[i]) return false;
    }
    return true;
}

static double pow10_exact(int e) {
    double r = 1.0;
    for (int i = 0; i < e; i++) r *= 10.0;
    return r;
}

/* Correctly rounded when the significand has at most 19 digits, fits in
 * 2^53 and the decimal exponent is within +-22 (every usual quantity);
 * otherwise within an ulp or so. */
bool ws_parse_f64(ws_str s, double *out) {
    const char *p = s.ptr, *end = s.ptr + s.len;
    bool neg = false;
    if (p < end && (*p == '+' || *p == '-')) neg = *p++ == '-';
    size_t rest = (size_t)(end - p);
    if (ieq(p, rest, "inf") || ieq(p, rest, "infinity")) {
        *out = neg ? -__builtin_inf() : __builtin_inf();
        return true;
    }
    if (ieq(p, rest, "nan")) {
        *out = __builtin_nan("");
        return true;
    }
    uint64_t mant = 0;
    int digits = 0, exp10 = 0;
    bool any = false;
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        any = true;
        if (digits < 19) {
            mant = mant * 10 + (uint64_t)(*p - '0');
            if (mant) digits++;
        } else exp10++;
    }
    if (p < end && *p == '.') {
        p++;
        for (; p < end && *p >= '0' && *p <= '9'; p++) {
            any = true;
            if (digits < 19) {
                mant = mant * 10 + (uint64_t)(*p - '0');
                if (mant) digits++;
                exp10--;
            }
        }
    }
    if (!any) return false;
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        bool eneg = false;
        if (p < end && (*p == '+' || *p == '-')) eneg = *p++ == '-';
        if (p >= end) return false;
        int e = 0;
        for (; p < end && *p >= '0' && *p <= '9'; p++)
            if (e < 100000) e = e * 10 + (*p - '0');
        if (p < end) return false;
        exp10 += eneg ? -e : e;
    }
    if (p != end) return false;
    double v;
    if (mant == 0) v = 0.0;
    else if (mant <= (1ull << 53) && exp10 >= -22 && exp10 <= 22)
        v = exp10 < 0 ? (double)mant / pow10_exact(-exp10) : (double)mant * pow10_exact(exp10);
    else {
        v = (double)mant;
        for (; exp10 > 0; exp10--) v *= 10.0;
        for (; exp10 < -22; exp10 += 22) v /= 1e22;
        if (exp10 < 0) v /= pow10_exact(-exp10);
    }
    *out = neg ? -v : v;
    return true;
}

/* ======================================================================
 * JSON: top-level fields of an object
 * ====================================================================== */

typedef struct { const char *p, *end; } cursor;

static void skip_ws(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

/* Skips a string starting at '"'; sets *raw to its body; *escaped if it
 * contains backslashes. */
static bool scan_string(cursor *c, ws_str *raw, bool *escaped) {
    if (c->p >= c->end || *c->p != '"') return false;
    const char *start = ++c->p;
    *escaped = false;
    while (c->p < c->end && *c->p != '"') {
        if ((unsigned char)*c->p < 0x20) return false;
        if (*c->p == '\\') {
            *escaped = true;
            c->p++;
            if (c->p >= c->end) return false;
        }
        c->p++;
    }
    if (c->p >= c->end) return false;
    *raw = (ws_str){start, (size_t)(c->p - start)};
    c->p++;
    return true;
}

static bool scan_number(cursor *c, ws_str *raw, bool *integral) {
    const char *s = c->p;
    *integral = true;
    if (c->p < c->end && *c->p == '-') c->p++;
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return false;
    if (*c->p == '0') c->p++;
    else while (c->p < c->end && *c->p >= '0' && *c->p <= '9') c->p++;
    if (c->p < c->end && *c->p == '.') {
        *integral = false;
        c->p++;
        if (c->p >= c->end || *c->p < '0' || *c->p > '9') return false;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') c->p++;
    }
    if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
        *integral = false;
        c->p++;
        if (c->p < c->end && (*c->p == '+' || *c->p == '-')) c->p++;
        if (c->p >= c->end || *c->p < '0' || *c->p > '9') return false;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') c->p++;
    }
    *raw = (ws_str){s, (size_t)(c->p - s)};
    return true;
}

static bool scan_word(cursor *c, const char *w) {
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0) return false;
    c->p += n;
    return true;
}

static bool skip_value(cursor *c, int depth) {
    if (depth > 64) return false;
    skip_ws(c);
    if (c->p >= c->end) return false;
    ws_str raw;
    bool flag;
    switch (*c->p) {
    case '"': return scan_string(c, &raw, &flag);
    case 't': return scan_word(c, "true");
    case 'f': return scan_word(c, "false");
    case 'n': return scan_word(c, "null");
    case '{':
    case '[': {
        char close = *c->p == '{' ? '}' : ']';
        bool object = close == '}';
        c->p++;
        skip_ws(c);
        if (c->p < c->end && *c->p == close) { c->p++; return true; }
        for (;;) {
            if (object) {
                skip_ws(c);
                if (!scan_string(c, &raw, &flag)) return false;
                skip_ws(c);
                if (c->p >= c->end || *c->p != ':') return false;
                c->p++;
            }
            if (!skip_value(c, depth + 1)) return false;
            skip_ws(c);
            if (c->p < c->end && *c->p == ',') { c->p++; continue; }
            if (c->p < c->end && *c->p == close) { c->p++; return true; }
            return false;
        }
    }
    default: return scan_number(c, &raw, &flag);
    }
}

static int hex4(const char *p) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char ch = p[i];
        v <<= 4;
        if (ch >= '0' && ch <= '9') v |= ch - '0';
        else if (ch >= 'a' && ch <= 'f') v |= ch - 'a' + 10;
        else if (ch >= 'A' && ch <= 'F') v |= ch - 'A' + 10;
        else return -1;
    }
    return v;
}

/* Unescapes a string body into `dst` (at least raw.len bytes); returns the
 * length, or -1 when invalid. */
static long unescape(ws_str raw, char *dst) {
    const char *p = raw.ptr, *end = raw.ptr + raw.len;
    char *o = dst;
    while (p < end) {
        if (*p != '\\') { *o++ = *p++; continue; }
        p++;
        if (p >= end) return -1;
        char e = *p++;
        switch (e) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            if (end - p < 4) return -1;
            long cp = hex4(p);
            p += 4;
            if (cp < 0) return -1;
            if (cp >= 0xD800 && cp < 0xDC00 && end - p >= 6 && p[0] == '\\' && p[1] == 'u') {
                long lo = hex4(p + 2);
                if (lo >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    p += 6;
                }
            }
            if (cp >= 0xD800 && cp < 0xE000) cp = 0xFFFD; /* lone surrogate */
            /* \uXXXX is 6 bytes in, at most 4 out: fits in raw.len. */
            if (cp < 0x80) *o++ = (char)cp;
            else if (cp < 0x800) { *o++ = (char)(0xC0 | (cp >> 6)); *o++ = (char)(0x80 | (cp & 0x3F)); }
            else if (cp < 0x10000) {
                *o++ = (char)(0xE0 | (cp >> 12)); *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                *o++ = (char)(0x80 | (cp & 0x3F));
            } else {
                *o++ = (char)(0xF0 | (cp >> 18)); *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
                *o++ = (char)(0x80 | ((cp >> 6) & 0x3F)); *o++ = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default: return -1;
        }
    }
    return (long)(o - dst);
}

/* Positions `c` on the value of top-level field `key`. */
static bool find_field(ws_str json, const char *key, cursor *c) {
    size_t klen = strlen(key);
    c->p = json.ptr;
    c->end = json.ptr + json.len;
    skip_ws(c);
    if (c->p >= c->end || *c->p != '{') return false;
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') return false;
    for (;;) {
        ws_str raw;
        bool escaped;
        skip_ws(c);
        if (!scan_string(c, &raw, &escaped)) return false;
        bool match;
        if (!escaped) match = raw.len == klen && memcmp(raw.ptr, key, klen) == 0;
        else {
            char *tmp = ws_alloc(raw.len, 1);
            long n = unescape(raw, tmp);
            match = n == (long)klen && memcmp(tmp, key, klen) == 0;
        }
        skip_ws(c);
        if (c->p >= c->end || *c->p != ':') return false;
        c->p++;
        skip_ws(c);
        if (match) return true;
        if (!skip_value(c, 0)) return false;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') { c->p++; continue; }
        return false;
    }
}

bool ws_json_has(ws_str json, const char *key) {
    cursor c;
    return find_field(json, key, &c);
}

bool ws_json_keys(ws_str json, ws_strs *keys) {
    cursor c = {json.ptr, json.ptr + json.len};
    ws_str *list = NULL;
    size_t len = 0, cap = 0;
    *keys = (ws_strs){NULL, 0};
    skip_ws(&c);
    if (c.p >= c.end || *c.p != '{') return false;
    c.p++;
    skip_ws(&c);
    if (c.p < c.end && *c.p == '}') c.p++;
    else for (;;) {
        ws_str key;
        bool escaped;
        skip_ws(&c);
        if (!scan_string(&c, &key, &escaped)) return false;
        if (escaped) {
            char *dst = ws_alloc(key.len, 1);
            long n = unescape(key, dst);
            if (n < 0) return false;
            key = (ws_str){dst, (size_t)n};
        }
        skip_ws(&c);
        if (c.p >= c.end || *c.p != ':') return false;
        c.p++;
        if (!skip_value(&c, 0)) return false;
        if (len == cap) {
            cap = cap ? cap * 2 : 8;
            ws_str *p = ws_alloc(cap * sizeof *p, _Alignof(ws_str));
            if (len) memcpy(p, list, len * sizeof *p);
            list = p;
        }
        list[len++] = key;
        skip_ws(&c);
        if (c.p < c.end && *c.p == ',') { c.p++; continue; }
        if (c.p < c.end && *c.p == '}') { c.p++; break; }
        return false;
    }
    skip_ws(&c);
    if (c.p != c.end) return false; /* trailing garbage: not one object */
    *keys = (ws_strs){list, len};
    return true;
}

bool ws_json_string(ws_str json, const char *key, ws_str *out) {
    cursor c;
    ws_str raw;
    bool escaped;
    if (!find_field(json, key, &c) || !scan_string(&c, &raw, &escaped)) return false;
    if (!escaped) { *out = raw; return true; }
    char *dst = in_keep(json.ptr) ? keep_alloc(raw.len) : ws_alloc(raw.len, 1);
    if (!dst) return false;
    long n = unescape(raw, dst);
    if (n < 0) return false;
    *out = (ws_str){dst, (size_t)n};
    return true;
}

bool ws_json_f64(ws_str json, const char *key, double *out) {
    cursor c;
    ws_str raw;
    bool integral;
    return find_field(json, key, &c) && scan_number(&c, &raw, &integral) && ws_parse_f64(raw, out);
}

bool ws_json_i64(ws_str json, const char *key, int64_t *out) {
    cursor c;
    ws_str raw;
    bool integral;
    if (!find_field(json, key, &c) || !scan_number(&c, &raw, &integral) || !integral) return false;
    const char *p = raw.ptr, *end = raw.ptr + raw.len;
    bool neg = *p == '-';
    if (neg) p++;
    uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; p < end; p++) {
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (limit - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

bool ws_json_bool(ws_str json, const char *key, bool *out) {
    cursor c;
    if (!find_field(json, key, &c)) return false;
    if (scan_word(&c, "true")) { *out = true; return true; }
    if (scan_word(&c, "false")) { *out = false; return true; }
    return false;
}

/* ======================================================================
 * Accessors
 * ====================================================================== */

typedef scheduler_plugin_string_t gstr;

static inline ws_str S(gstr s) { return (ws_str){(const char *)s.ptr, s.len}; }
static inline gstr G(ws_str s) { return (gstr){(uint8_t *)s.ptr, s.len}; }
static inline wasmsched_plugin_cluster_borrow_pod_t P(ws_pod p) { return (wasmsched_plugin_cluster_borrow_pod_t){p.handle}; }
static inline wasmsched_plugin_cluster_borrow_nodes_t N(ws_nodes n) { return (wasmsched_plugin_cluster_borrow_nodes_t){n.handle}; }

#define STR_GETTER(NAME, CALL)       \
    ws_str NAME {                    \
        gstr r;                      \
        CALL;                        \
        return S(r);                 \
    }
#define OPT_STR_GETTER(NAME, CALL)   \
    bool NAME {                      \
        gstr k = G(key), r;          \
        if (!(CALL)) return false;   \
        *value = S(r);               \
        return true;                 \
    }
#define LIST_GETTER(RET, GEN, NAME, CALL)          \
    RET NAME {                                     \
        GEN l;                                     \
        CALL;                                      \
        return (RET){(void *)l.ptr, l.len};        \
    }

STR_GETTER(ws_pod_name(ws_pod pod), wasmsched_plugin_cluster_method_pod_name(P(pod), &r))
STR_GETTER(ws_pod_namespace(ws_pod pod), wasmsched_plugin_cluster_method_pod_namespace(P(pod), &r))
STR_GETTER(ws_pod_uid(ws_pod pod), wasmsched_plugin_cluster_method_pod_uid(P(pod), &r))
OPT_STR_GETTER(ws_pod_label(ws_pod pod, ws_str key, ws_str *value), wasmsched_plugin_cluster_method_pod_label(P(pod), &k, &r))
LIST_GETTER(ws_pairs, scheduler_plugin_list_tuple2_string_string_t, ws_pod_labels(ws_pod pod),
            wasmsched_plugin_cluster_method_pod_labels(P(pod), &l))
OPT_STR_GETTER(ws_pod_annotation(ws_pod pod, ws_str key, ws_str *value), wasmsched_plugin_cluster_method_pod_annotation(P(pod), &k, &r))
LIST_GETTER(ws_pairs, scheduler_plugin_list_tuple2_string_string_t, ws_pod_annotations(ws_pod pod),
            wasmsched_plugin_cluster_method_pod_annotations(P(pod), &l))

int64_t ws_pod_request(ws_pod pod, ws_str resource) {
    gstr k = G(resource);
    return wasmsched_plugin_cluster_method_pod_request(P(pod), &k);
}

LIST_GETTER(ws_quantities, wasmsched_plugin_cluster_list_quantity_t, ws_pod_requests(ws_pod pod),
            wasmsched_plugin_cluster_method_pod_requests(P(pod), &l))
LIST_GETTER(ws_tolerations, wasmsched_plugin_cluster_list_toleration_t, ws_pod_tolerations(ws_pod pod),
            wasmsched_plugin_cluster_method_pod_tolerations(P(pod), &l))
LIST_GETTER(ws_strs, scheduler_plugin_list_string_t, ws_pod_images(ws_pod pod),
            wasmsched_plugin_cluster_method_pod_images(P(pod), &l))
LIST_GETTER(ws_pairs, scheduler_plugin_list_tuple2_string_string_t, ws_pod_node_selector(ws_pod pod),
            wasmsched_plugin_cluster_method_pod_node_selector(P(pod), &l))

int32_t ws_pod_priority(ws_pod pod) { return wasmsched_plugin_cluster_method_pod_priority(P(pod)); }

STR_GETTER(ws_pod_scheduler_name(ws_pod pod), wasmsched_plugin_cluster_method_pod_scheduler_name(P(pod), &r))

bool ws_pod_owner_kind(ws_pod pod, ws_str *kind) {
    gstr r;
    if (!wasmsched_plugin_cluster_method_pod_owner_kind(P(pod), &r)) return false;
    *kind = S(r);
    return true;
}

STR_GETTER(ws_pod_json(ws_pod pod), wasmsched_plugin_cluster_method_pod_json(P(pod), &r))

uint32_t ws_nodes_len(ws_nodes nodes) { return wasmsched_plugin_cluster_method_nodes_len(N(nodes)); }

STR_GETTER(ws_nodes_name(ws_nodes nodes, uint32_t i), wasmsched_plugin_cluster_method_nodes_name(N(nodes), i, &r))
OPT_STR_GETTER(ws_nodes_label(ws_nodes nodes, uint32_t i, ws_str key, ws_str *value),
               wasmsched_plugin_cluster_method_nodes_label(N(nodes), i, &k, &r))
LIST_GETTER(ws_pairs, scheduler_plugin_list_tuple2_string_string_t, ws_nodes_labels(ws_nodes nodes, uint32_t i),
            wasmsched_plugin_cluster_method_nodes_labels(N(nodes), i, &l))
OPT_STR_GETTER(ws_nodes_annotation(ws_nodes nodes, uint32_t i, ws_str key, ws_str *value),
               wasmsched_plugin_cluster_method_nodes_annotation(N(nodes), i, &k, &r))
LIST_GETTER(ws_pairs, scheduler_plugin_list_tuple2_string_string_t, ws_nodes_annotations(ws_nodes nodes, uint32_t i),
            wasmsched_plugin_cluster_method_nodes_annotations(N(nodes), i, &l))

int64_t ws_nodes_allocatable(ws_nodes nodes, uint32_t i, ws_str resource) {
    gstr k = G(resource);
    return wasmsched_plugin_cluster_method_nodes_allocatable(N(nodes), i, &k);
}

LIST_GETTER(ws_quantities, wasmsched_plugin_cluster_list_quantity_t, ws_nodes_allocatables(ws_nodes nodes, uint32_t i),
            wasmsched_plugin_cluster_method_nodes_allocatables(N(nodes), i, &l))

int64_t ws_nodes_requested(ws_nodes nodes, uint32_t i, ws_str resource) {
    gstr k = G(resource);
    return wasmsched_plugin_cluster_method_nodes_requested(N(nodes), i, &k);
}

LIST_GETTER(ws_quantities, wasmsched_plugin_cluster_list_quantity_t, ws_nodes_requesteds(ws_nodes nodes, uint32_t i),
            wasmsched_plugin_cluster_method_nodes_requesteds(N(nodes), i, &l))

int64_t ws_nodes_pod_count(ws_nodes nodes, uint32_t i) {
    return wasmsched_plugin_cluster_method_nodes_pod_count(N(nodes), i);
}

bool ws_nodes_unschedulable(ws_nodes nodes, uint32_t i) {
    return wasmsched_plugin_cluster_method_nodes_unschedulable(N(nodes), i);
}

LIST_GETTER(ws_taints, wasmsched_plugin_cluster_list_taint_t, ws_nodes_taints(ws_nodes nodes, uint32_t i),
            wasmsched_plugin_cluster_method_nodes_taints(N(nodes), i, &l))
LIST_GETTER(ws_conditions, wasmsched_plugin_cluster_list_condition_t, ws_nodes_conditions(ws_nodes nodes, uint32_t i),
            wasmsched_plugin_cluster_method_nodes_conditions(N(nodes), i, &l))

bool ws_nodes_image_size(ws_nodes nodes, uint32_t i, ws_str image, int64_t *size) {
    gstr k = G(image);
    return wasmsched_plugin_cluster_method_nodes_image_size(N(nodes), i, &k, size);
}

LIST_GETTER(ws_images, wasmsched_plugin_cluster_list_image_t, ws_nodes_images(ws_nodes nodes, uint32_t i),
            wasmsched_plugin_cluster_method_nodes_images(N(nodes), i, &l))

uint64_t ws_nodes_random(ws_nodes nodes, uint32_t i) {
    return wasmsched_plugin_cluster_method_nodes_random(N(nodes), i);
}

STR_GETTER(ws_nodes_json(ws_nodes nodes, uint32_t i), wasmsched_plugin_cluster_method_nodes_json(N(nodes), i, &r))

LIST_GETTER(ws_strs, scheduler_plugin_list_string_t, ws_nodes_names(ws_nodes nodes),
            wasmsched_plugin_cluster_method_nodes_names(N(nodes), &l))

#define COLUMN(RET, GEN, NAME, FN)          \
    RET NAME(ws_nodes nodes, ws_str key) {  \
        gstr k = G(key);                    \
        GEN l;                              \
        FN(N(nodes), &k, &l);               \
        return (RET){(void *)l.ptr, l.len}; \
    }
COLUMN(ws_opt_strs, scheduler_plugin_list_option_string_t, ws_nodes_label_values, wasmsched_plugin_cluster_method_nodes_label_values)
COLUMN(ws_opt_strs, scheduler_plugin_list_option_string_t, ws_nodes_annotation_values, wasmsched_plugin_cluster_method_nodes_annotation_values)
COLUMN(ws_opt_f64s, scheduler_plugin_list_option_f64_t, ws_nodes_label_numbers, wasmsched_plugin_cluster_method_nodes_label_numbers)
COLUMN(ws_opt_f64s, scheduler_plugin_list_option_f64_t, ws_nodes_annotation_numbers, wasmsched_plugin_cluster_method_nodes_annotation_numbers)
COLUMN(ws_i64s, scheduler_plugin_list_s64_t, ws_nodes_allocatable_all, wasmsched_plugin_cluster_method_nodes_allocatable_all)
COLUMN(ws_i64s, scheduler_plugin_list_s64_t, ws_nodes_requested_all, wasmsched_plugin_cluster_method_nodes_requested_all)

ws_i64s ws_nodes_image_bytes(ws_nodes nodes, ws_strs images) {
    scheduler_plugin_list_string_t names = {(gstr *)images.ptr, images.len};
    scheduler_plugin_list_s64_t l;
    wasmsched_plugin_cluster_method_nodes_image_bytes(N(nodes), &names, &l);
    return (ws_i64s){l.ptr, l.len};
}

LIST_GETTER(ws_u64s, scheduler_plugin_list_u64_t, ws_nodes_randoms(ws_nodes nodes),
            wasmsched_plugin_cluster_method_nodes_randoms(N(nodes), &l))

/* The generated bindings take the selector by non-const pointer; they only
 * read it. */
static inline wasmsched_plugin_cluster_pod_selector_t *SEL(const ws_pod_selector *s) {
    return (wasmsched_plugin_cluster_pod_selector_t *)(uintptr_t)s;
}

/* The pod views: the list on success (left empty on error); the host's error
 * as a NUL-terminated copy. */
const char *ws_nodes_pod_counts(ws_nodes nodes, const ws_pod_selector *selector, ws_u32s *counts) {
    scheduler_plugin_list_u32_t l = {0};
    gstr err;
    bool ok = wasmsched_plugin_cluster_method_nodes_pod_counts(N(nodes), SEL(selector), &l, &err);
    *counts = (ws_u32s){l.ptr, l.len};
    return ok ? NULL : ws_str_cstr(S(err));
}

const char *ws_nodes_domain_counts(ws_nodes nodes, ws_str topology_key, const ws_pod_selector *selector,
                                   ws_opt_u32s *counts) {
    gstr k = G(topology_key), err;
    scheduler_plugin_list_option_u32_t l = {0};
    bool ok = wasmsched_plugin_cluster_method_nodes_domain_counts(N(nodes), &k, SEL(selector), &l, &err);
    *counts = (ws_opt_u32s){(ws_opt_u32 *)l.ptr, l.len};
    return ok ? NULL : ws_str_cstr(S(err));
}

const char *ws_nodes_domains(ws_nodes nodes, ws_str topology_key, const ws_pod_selector *selector,
                             ws_domains *domains) {
    gstr k = G(topology_key), err;
    scheduler_plugin_list_tuple2_string_u32_t l = {0};
    bool ok = wasmsched_plugin_cluster_method_nodes_domains(N(nodes), &k, SEL(selector), &l, &err);
    *domains = (ws_domains){(ws_domain *)l.ptr, l.len};
    return ok ? NULL : ws_str_cstr(S(err));
}

const char *ws_nodes_cluster_pod_count(ws_nodes nodes, const ws_pod_selector *selector, uint32_t *count) {
    gstr err;
    uint32_t n = 0;
    bool ok = wasmsched_plugin_cluster_method_nodes_cluster_pod_count(N(nodes), SEL(selector), &n, &err);
    *count = ok ? n : 0;
    return ok ? NULL : ws_str_cstr(S(err));
}

/* The metrics: like the pod views, the list as the host lowered it. */
const char *ws_nodes_metrics(ws_nodes nodes, ws_str source, ws_opt_metrics *metrics) {
    gstr k = G(source), err;
    wasmsched_plugin_cluster_list_option_metric_t l = {0};
    bool ok = wasmsched_plugin_cluster_method_nodes_metrics(N(nodes), &k, &l, &err);
    *metrics = (ws_opt_metrics){(ws_opt_metric *)l.ptr, l.len};
    return ok ? NULL : ws_str_cstr(S(err));
}

/* Devices (since contract 0.6): the lists as the host lowered them. */
LIST_GETTER(ws_claims, wasmsched_plugin_cluster_list_pod_claim_t, ws_pod_claims(ws_pod pod),
            wasmsched_plugin_cluster_method_pod_claims(P(pod), &l))
LIST_GETTER(ws_devices, wasmsched_plugin_cluster_list_device_t, ws_nodes_devices(ws_nodes nodes, uint32_t i),
            wasmsched_plugin_cluster_method_nodes_devices(N(nodes), i, &l))

bool ws_nodes_allocation(ws_nodes nodes, uint32_t i, ws_allocated_devices *devices) {
    wasmsched_plugin_cluster_list_allocated_device_t l = {0};
    bool some = wasmsched_plugin_cluster_method_nodes_allocation(N(nodes), i, &l);
    *devices = some ? (ws_allocated_devices){(ws_allocated_device *)l.ptr, l.len} : (ws_allocated_devices){NULL, 0};
    return some;
}

/* The pods on a node (since contract 0.7): the list as the host lowered it. */
LIST_GETTER(ws_placed_pods, wasmsched_plugin_cluster_list_placed_pod_t, ws_nodes_pods(ws_nodes nodes, uint32_t i),
            wasmsched_plugin_cluster_method_nodes_pods(N(nodes), i, &l))

bool ws_pairs_get(ws_pairs pairs, ws_str key, ws_str *value) {
    for (size_t k = 0; k < pairs.len; k++) {
        if (ws_str_eq(pairs.ptr[k].key, key)) {
            if (value) *value = pairs.ptr[k].value;
            return true;
        }
    }
    return false;
}

int64_t ws_quantities_get(ws_quantities quantities, ws_str name) {
    for (size_t k = 0; k < quantities.len; k++)
        if (ws_str_eq(quantities.ptr[k].name, name)) return quantities.ptr[k].amount;
    return 0;
}

/* Whether `have` (fully qualified, as the host gives it) is `name`, which is
 * the driver's when it has no domain. */
static bool same_name(ws_str have, ws_str driver, ws_str name) {
    for (size_t k = 0; k < name.len; k++)
        if (name.ptr[k] == '/') return ws_str_eq(have, name);
    return have.len == driver.len + 1 + name.len && have.ptr[driver.len] == '/' &&
           ws_str_eq((ws_str){have.ptr, driver.len}, driver) &&
           ws_str_eq((ws_str){have.ptr + driver.len + 1, name.len}, name);
}

bool ws_device_attribute_of(const ws_device *device, ws_str name, ws_attribute_value *value) {
    for (size_t k = 0; k < device->attributes.len; k++) {
        if (same_name(device->attributes.ptr[k].name, device->driver, name)) {
            *value = device->attributes.ptr[k].value;
            return true;
        }
    }
    return false;
}

bool ws_device_capacity_of(const ws_device *device, ws_str name, ws_device_capacity *capacity) {
    for (size_t k = 0; k < device->capacity.len; k++) {
        if (same_name(device->capacity.ptr[k].name, device->driver, name)) {
            *capacity = device->capacity.ptr[k];
            return true;
        }
    }
    return false;
}

bool ws_allocated_device_is(const ws_allocated_device *chosen, const ws_device *device) {
    return ws_str_eq(chosen->device, device->name) && ws_str_eq(chosen->pool, device->pool) &&
           ws_str_eq(chosen->driver, device->driver);
}

bool ws_nodes_allocated_devices(ws_nodes nodes, uint32_t i, ws_devices *devices) {
    ws_allocated_devices chosen;
    *devices = (ws_devices){NULL, 0};
    if (!ws_nodes_allocation(nodes, i, &chosen)) return false;
    if (chosen.len == 0) return true;
    ws_devices all = ws_nodes_devices(nodes, i);
    ws_device *out = ws_alloc(chosen.len * sizeof *out, _Alignof(ws_device));
    size_t n = 0;
    for (size_t a = 0; a < chosen.len; a++) {
        for (size_t d = 0; d < all.len; d++) {
            if (ws_allocated_device_is(&chosen.ptr[a], &all.ptr[d])) {
                out[n++] = all.ptr[d];
                break;
            }
        }
    }
    *devices = (ws_devices){out, n};
    return true;
}

/* ======================================================================
 * State and the waiting pods (since contract 0.7)
 * ====================================================================== */

static inline scheduler_plugin_list_u8_t B(ws_bytes b) { return (scheduler_plugin_list_u8_t){b.ptr, b.len}; }

/* An option<list<u8>> the host returned: the bytes when some. */
static bool got_bytes(bool some, scheduler_plugin_list_u8_t l, ws_bytes *value) {
    if (value) *value = some ? (ws_bytes){l.ptr, l.len} : (ws_bytes){NULL, 0};
    return some;
}

bool ws_state_get(ws_str key, ws_bytes *value) {
    gstr k = G(key);
    scheduler_plugin_list_u8_t l = {0};
    return got_bytes(wasmsched_plugin_state_get(&k, &l), l, value);
}

const char *ws_state_set(ws_str key, ws_bytes value) {
    gstr k = G(key), err;
    scheduler_plugin_list_u8_t v = B(value);
    return wasmsched_plugin_state_set(&k, &v, &err) ? NULL : ws_str_cstr(S(err));
}

bool ws_state_remove(ws_str key) {
    gstr k = G(key);
    return wasmsched_plugin_state_remove(&k);
}

ws_strs ws_state_keys(ws_str prefix) {
    gstr p = G(prefix);
    scheduler_plugin_list_string_t l = {0};
    wasmsched_plugin_state_keys(&p, &l);
    return (ws_strs){(ws_str *)l.ptr, l.len};
}

const char *ws_state_add(ws_str key, int64_t delta, int64_t *value) {
    gstr k = G(key), err;
    int64_t v = 0;
    if (!wasmsched_plugin_state_add(&k, delta, &v, &err)) return ws_str_cstr(S(err));
    if (value) *value = v;
    return NULL;
}

bool ws_state_get_i64(ws_str key, int64_t *value) {
    ws_bytes b;
    if (!ws_state_get(key, &b) || b.len != 8) return false;
    uint64_t u = 0;
    for (int k = 7; k >= 0; k--) u = (u << 8) | b.ptr[k];
    *value = (int64_t)u;
    return true;
}

const char *ws_state_set_i64(ws_str key, int64_t value) {
    uint8_t le[8];
    uint64_t u = (uint64_t)value;
    for (int k = 0; k < 8; k++, u >>= 8) le[k] = (uint8_t)u;
    return ws_state_set(key, (ws_bytes){le, 8});
}

bool ws_state_cycle_get(ws_str key, ws_bytes *value) {
    gstr k = G(key);
    scheduler_plugin_list_u8_t l = {0};
    return got_bytes(wasmsched_plugin_state_cycle_get(&k, &l), l, value);
}

const char *ws_state_cycle_set(ws_str key, ws_bytes value) {
    gstr k = G(key), err;
    scheduler_plugin_list_u8_t v = B(value);
    return wasmsched_plugin_state_cycle_set(&k, &v, &err) ? NULL : ws_str_cstr(S(err));
}

ws_waiting_list ws_waiting_pods(void) {
    wasmsched_plugin_waiting_list_waiting_pod_t l = {0};
    wasmsched_plugin_waiting_pods(&l);
    return (ws_waiting_list){(ws_waiting_pod *)l.ptr, l.len};
}

bool ws_waiting_allow(ws_str uid) {
    gstr u = G(uid);
    return wasmsched_plugin_waiting_allow(&u);
}

bool ws_waiting_reject(ws_str uid, ws_str reason) {
    gstr u = G(uid), r = G(reason);
    return wasmsched_plugin_waiting_reject(&u, &r);
}

bool ws_waiting_waits_for(const ws_waiting_pod *pod, ws_str plugin) {
    for (size_t k = 0; k < pod->plugins.len; k++)
        if (ws_str_eq(pod->plugins.ptr[k], plugin)) return true;
    return false;
}

/* ======================================================================
 * Results
 * ====================================================================== */

void ws_reject(ws_rejections *out, uint32_t index, ws_code code, ws_str reason) {
    if (out->len == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 8;
        ws_rejection *p = ws_alloc(cap * sizeof *p, _Alignof(ws_rejection));
        if (out->len) memcpy(p, out->ptr, out->len * sizeof *p);
        out->ptr = p;
        out->cap = cap;
    }
    out->ptr[out->len++] = (ws_rejection){index, (uint8_t)code, reason};
}

/* ======================================================================
 * Default hooks (weak: the plugin's own definitions win)
 * ====================================================================== */

#define NOT_IMPLEMENTED "not implemented"

__attribute__((weak)) const char *ws_configure(ws_str args) {
    (void)args;
    return NULL;
}
__attribute__((weak)) ws_strs ws_metric_sources(void) { return (ws_strs){NULL, 0}; }
/* The points' hooks are reached through ws_plugin_hooks (WS_PLUGIN). Weak
 * here, so that the address of one the plugin does not define is NULL: a
 * hook defined for a point WS_PLUGIN does not declare is never called. */
__attribute__((weak)) const char *ws_pre_filter(ws_pod pod, ws_status *status);
__attribute__((weak)) const char *ws_filter(ws_pod pod, ws_nodes nodes, ws_rejections *out);
__attribute__((weak)) const char *ws_pre_score(ws_pod pod, ws_nodes nodes, ws_status *status);
__attribute__((weak)) const char *ws_score(ws_pod pod, ws_nodes nodes, int64_t *scores, size_t n);
__attribute__((weak)) const char *ws_normalize_score(ws_pod pod, int64_t *scores, size_t n);
__attribute__((weak)) const char *ws_post_filter(ws_pod pod, ws_nodes nodes, ws_node_statuses statuses,
                                                 ws_post_filter_result *result);
__attribute__((weak)) const char *ws_reserve(ws_pod pod, ws_nodes nodes, ws_status *status);
__attribute__((weak)) const char *ws_permit(ws_pod pod, ws_nodes nodes, ws_permit_verdict *verdict);
__attribute__((weak)) const char *ws_pre_bind(ws_pod pod, ws_str node, ws_status *status);
__attribute__((weak)) void ws_post_bind(ws_pod pod, ws_str node);
/* Not a point of its own: called, when defined, for a plugin that declares
 * WS_RESERVE (one with nothing to undo leaves it out). */
__attribute__((weak)) void ws_unreserve(ws_pod pod, ws_str node);

/* ======================================================================
 * The generated bindings' exports
 * ====================================================================== */

extern const ws_metadata ws_plugin; /* WS_PLUGIN(...) in the plugin */
extern const struct ws_hooks ws_plugin_hooks; /* WS_PLUGIN(...) too */
/* WS_EVENTS(...) in the plugin, if any (weak: its address is NULL without). */
extern const ws_events ws_plugin_events __attribute__((weak));
/* WS_KEEP_STATE in the plugin, if any (weak, as ws_plugin_events). */
extern const bool ws_plugin_keep_state __attribute__((weak));

/* Every flag of the contract's event-actions. */
#define EVENT_ACTIONS ((1u << 11) - 1)

static bool finish(const char *error, gstr *err) {
    call_leave();
    if (!error) return true;
    *err = (gstr){(uint8_t *)error, strlen(error)};
    return false;
}

static ws_pod POD(exports_wasmsched_plugin_plugin_borrow_pod_t p) { return (ws_pod){p.__handle}; }
static ws_nodes NODES(exports_wasmsched_plugin_plugin_borrow_nodes_t n) { return (ws_nodes){n.__handle}; }

/* A hook defined for a point WS_PLUGIN does not declare, or NULL. */
static const char *undeclared_hook(void) {
    if (ws_pre_filter && !ws_plugin_hooks.pre_filter) return "ws_pre_filter is defined but WS_PLUGIN does not declare WS_PRE_FILTER";
    if (ws_filter && !ws_plugin_hooks.filter) return "ws_filter is defined but WS_PLUGIN does not declare WS_FILTER";
    if (ws_pre_score && !ws_plugin_hooks.pre_score) return "ws_pre_score is defined but WS_PLUGIN does not declare WS_PRE_SCORE";
    if (ws_score && !ws_plugin_hooks.score) return "ws_score is defined but WS_PLUGIN does not declare WS_SCORE";
    if (ws_normalize_score && !ws_plugin_hooks.normalize_score)
        return "ws_normalize_score is defined but WS_PLUGIN does not declare WS_NORMALIZE_SCORE";
    if (ws_post_filter && !ws_plugin_hooks.post_filter)
        return "ws_post_filter is defined but WS_PLUGIN does not declare WS_POST_FILTER";
    if (ws_reserve && !ws_plugin_hooks.reserve) return "ws_reserve is defined but WS_PLUGIN does not declare WS_RESERVE";
    if (ws_unreserve && !(ws_plugin.points & WS_RESERVE))
        return "ws_unreserve is defined but WS_PLUGIN does not declare WS_RESERVE";
    if (ws_permit && !ws_plugin_hooks.permit) return "ws_permit is defined but WS_PLUGIN does not declare WS_PERMIT";
    if (ws_pre_bind && !ws_plugin_hooks.pre_bind) return "ws_pre_bind is defined but WS_PLUGIN does not declare WS_PRE_BIND";
    if (ws_post_bind && !ws_plugin_hooks.post_bind)
        return "ws_post_bind is defined but WS_PLUGIN does not declare WS_POST_BIND";
    return NULL;
}

void exports_wasmsched_plugin_plugin_metadata(exports_wasmsched_plugin_plugin_plugin_metadata_t *ret) {
    call_enter();
    ret->name = G(ws_cstr(ws_plugin.name));
    ret->version = G(ws_cstr(ws_plugin.version));
    ret->points = (exports_wasmsched_plugin_plugin_points_t)ws_plugin.points;
    /* Declaring no point makes the host refuse the plugin, after this line. */
    const char *undeclared = undeclared_hook();
    if (undeclared) {
        ws_logz(WS_ERROR, undeclared);
        ret->points = 0;
    }
    ret->events.is_some = &ws_plugin_events != NULL;
    if (ret->events.is_some) {
        size_t n = ws_plugin_events.len;
        exports_wasmsched_plugin_plugin_cluster_event_t *events =
            ws_alloc(n * sizeof *events, _Alignof(exports_wasmsched_plugin_plugin_cluster_event_t));
        for (size_t i = 0; i < n; i++) {
            events[i].resource = (exports_wasmsched_plugin_plugin_event_resource_t)ws_plugin_events.ptr[i].resource;
            events[i].actions = (exports_wasmsched_plugin_plugin_event_actions_t)(ws_plugin_events.ptr[i].actions & EVENT_ACTIONS);
        }
        ret->events.val = (exports_wasmsched_plugin_plugin_list_cluster_event_t){events, n};
    }
    ret->keep_state = &ws_plugin_keep_state != NULL && ws_plugin_keep_state;
    call_leave();
}

bool exports_wasmsched_plugin_plugin_configure(gstr *args, gstr *err) {
    call_enter();
    int previous = keep_cur;
    keep_cur ^= 1;
    keep_top[keep_cur] = 0;
    if (args->len > WS_KEEP_BYTES) {
        keep_cur = previous;
        return finish("args: too large for the plugin (WS_KEEP_BYTES)", err);
    }
    const char *e = ws_configure(ws_keep(S(*args)));
    if (e) keep_cur = previous;
    return finish(e, err);
}

/* The list goes to the host as the plugin returned it: the generated
 * post-return frees it and its strings with free(), a no-op here, so static
 * and kept memory are as good as the arena. */
void exports_wasmsched_plugin_plugin_metric_sources(scheduler_plugin_list_string_t *ret) {
    call_enter();
    ws_strs sources = ws_metric_sources();
    *ret = (scheduler_plugin_list_string_t){(gstr *)sources.ptr, sources.len};
    call_leave();
}

bool exports_wasmsched_plugin_plugin_pre_filter(exports_wasmsched_plugin_plugin_borrow_pod_t pod,
                                                exports_wasmsched_plugin_plugin_status_t *ret, gstr *err) {
    call_enter();
    ws_status st = {WS_SUCCESS, {"", 0}};
    const char *e = ws_plugin_hooks.pre_filter ? ws_plugin_hooks.pre_filter(POD(pod), &st) : NOT_IMPLEMENTED;
    ret->code = (exports_wasmsched_plugin_plugin_code_t)st.code;
    ret->reason = G(st.reason);
    return finish(e, err);
}

bool exports_wasmsched_plugin_plugin_filter(exports_wasmsched_plugin_plugin_borrow_pod_t pod,
                                            exports_wasmsched_plugin_plugin_borrow_nodes_t nodes,
                                            exports_wasmsched_plugin_plugin_list_rejection_t *ret, gstr *err) {
    call_enter();
    ws_rejections out = {0};
    const char *e = ws_plugin_hooks.filter ? ws_plugin_hooks.filter(POD(pod), NODES(nodes), &out) : NOT_IMPLEMENTED;
    ret->ptr = (exports_wasmsched_plugin_plugin_rejection_t *)out.ptr;
    ret->len = out.len;
    return finish(e, err);
}

bool exports_wasmsched_plugin_plugin_pre_score(exports_wasmsched_plugin_plugin_borrow_pod_t pod,
                                               exports_wasmsched_plugin_plugin_borrow_nodes_t nodes,
                                               exports_wasmsched_plugin_plugin_status_t *ret, gstr *err) {
    call_enter();
    ws_status st = {WS_SUCCESS, {"", 0}};
    const char *e = ws_plugin_hooks.pre_score ? ws_plugin_hooks.pre_score(POD(pod), NODES(nodes), &st) : NOT_IMPLEMENTED;
    ret->code = (exports_wasmsched_plugin_plugin_code_t)st.code;
    ret->reason = G(st.reason);
    return finish(e, err);
}

bool exports_wasmsched_plugin_plugin_score(exports_wasmsched_plugin_plugin_borrow_pod_t pod,
                                           exports_wasmsched_plugin_plugin_borrow_nodes_t nodes,
                                           exports_wasmsched_plugin_plugin_scores_t *ret, gstr *err) {
    call_enter();
    size_t n = wasmsched_plugin_cluster_method_nodes_len(nodes);
    int64_t *scores = ws_alloc(n * sizeof(int64_t), 8);
    memset(scores, 0, n * sizeof(int64_t));
    const char *e = ws_plugin_hooks.score ? ws_plugin_hooks.score(POD(pod), NODES(nodes), scores, n) : NOT_IMPLEMENTED;
    ret->tag = EXPORTS_WASMSCHED_PLUGIN_PLUGIN_SCORES_VALUES;
    ret->val.values = (scheduler_plugin_list_s64_t){scores, n};
    return finish(e, err);
}

bool exports_wasmsched_plugin_plugin_normalize_score(exports_wasmsched_plugin_plugin_borrow_pod_t pod,
                                                     exports_wasmsched_plugin_plugin_scores_t *scores,
                                                     exports_wasmsched_plugin_plugin_scores_t *ret, gstr *err) {
    call_enter();
    /* The scores come in the form ws_score returned them (values); packed
     * ones (8 bytes each, little-endian, as wasm32 is) are decoded into the
     * arena, their bytes being aligned to 1 only. Either way the hook
     * normalizes the list in place and it goes back as values: like the
     * argument it is arena memory, which the post-return's free() leaves. */
    scheduler_plugin_list_s64_t list;
    if (scores->tag == EXPORTS_WASMSCHED_PLUGIN_PLUGIN_SCORES_PACKED) {
        scheduler_plugin_list_u8_t packed = scores->val.packed;
        if (packed.len % 8 != 0) {
            ws_buf b = {0};
            ws_buf_cstr_add(&b, "scores: packed length ");
            ws_buf_i64(&b, (int64_t)packed.len);
            ws_buf_cstr_add(&b, " is not a multiple of 8");
            return finish(ws_buf_cstr(&b), err);
        }
        list.len = packed.len / 8;
        list.ptr = ws_alloc(list.len * sizeof(int64_t), 8);
        if (packed.len) memcpy(list.ptr, packed.ptr, packed.len);
    } else {
        list = scores->val.values;
    }
    const char *e = ws_plugin_hooks.normalize_score ? ws_plugin_hooks.normalize_score(POD(pod), list.ptr, list.len)
                                                   : NOT_IMPLEMENTED;
    ret->tag = EXPORTS_WASMSCHED_PLUGIN_PLUGIN_SCORES_VALUES;
    ret->val.values = list;
    return finish(e, err);
}

/* ---- contract 0.7: PostFilter and the binding cycle's points ---------- */

static void lower_status(const ws_status *st, exports_wasmsched_plugin_plugin_status_t *ret) {
    ret->code = (exports_wasmsched_plugin_plugin_code_t)st->code;
    ret->reason = G(st->reason);
}

bool exports_wasmsched_plugin_plugin_post_filter(exports_wasmsched_plugin_plugin_borrow_pod_t pod,
                                                 exports_wasmsched_plugin_plugin_borrow_nodes_t nodes,
                                                 exports_wasmsched_plugin_plugin_list_node_status_t *statuses,
                                                 exports_wasmsched_plugin_plugin_post_filter_result_t *ret, gstr *err) {
    call_enter();
    ws_post_filter_result r = {{WS_UNSCHEDULABLE, {"", 0}}, {false, {"", 0}}, {NULL, 0}};
    ws_node_statuses st = {(ws_node_status *)statuses->ptr, statuses->len};
    const char *e = ws_plugin_hooks.post_filter ? ws_plugin_hooks.post_filter(POD(pod), NODES(nodes), st, &r)
                                                : NOT_IMPLEMENTED;
    lower_status(&r.status, &ret->status);
    ret->nominated_node.is_some = r.nominated_node.is_some;
    ret->nominated_node.val = G(r.nominated_node.is_some ? r.nominated_node.val : (ws_str){"", 0});
    ret->victims = (scheduler_plugin_list_string_t){(gstr *)r.victims.ptr, r.victims.len};
    return finish(e, err);
}

bool exports_wasmsched_plugin_plugin_reserve(exports_wasmsched_plugin_plugin_borrow_pod_t pod,
                                             exports_wasmsched_plugin_plugin_borrow_nodes_t nodes,
                                             exports_wasmsched_plugin_plugin_status_t *ret, gstr *err) {
    call_enter();
    ws_status st = {WS_SUCCESS, {"", 0}};
    const char *e = ws_plugin_hooks.reserve ? ws_plugin_hooks.reserve(POD(pod), NODES(nodes), &st) : NOT_IMPLEMENTED;
    lower_status(&st, ret);
    return finish(e, err);
}

void exports_wasmsched_plugin_plugin_unreserve(exports_wasmsched_plugin_plugin_borrow_pod_t pod, gstr *node) {
    call_enter();
    if (ws_unreserve && (ws_plugin.points & WS_RESERVE)) ws_unreserve(POD(pod), S(*node));
    call_leave();
}

bool exports_wasmsched_plugin_plugin_permit(exports_wasmsched_plugin_plugin_borrow_pod_t pod,
                                            exports_wasmsched_plugin_plugin_borrow_nodes_t nodes,
                                            exports_wasmsched_plugin_plugin_permit_verdict_t *ret, gstr *err) {
    call_enter();
    ws_permit_verdict v = ws_permit_allow();
    const char *e = ws_plugin_hooks.permit ? ws_plugin_hooks.permit(POD(pod), NODES(nodes), &v) : NOT_IMPLEMENTED;
    switch (v.kind) {
    case WS_PERMIT_REJECT:
        ret->tag = EXPORTS_WASMSCHED_PLUGIN_PLUGIN_PERMIT_VERDICT_REJECT;
        ret->val.reject = G(v.reason);
        break;
    case WS_PERMIT_WAIT:
        ret->tag = EXPORTS_WASMSCHED_PLUGIN_PLUGIN_PERMIT_VERDICT_WAIT;
        ret->val.wait = v.wait_ms;
        break;
    case WS_PERMIT_ALLOW:
        ret->tag = EXPORTS_WASMSCHED_PLUGIN_PLUGIN_PERMIT_VERDICT_ALLOW;
        break;
    default:
        if (!e) e = "ws_permit: verdict.kind is not WS_PERMIT_ALLOW, WS_PERMIT_REJECT or WS_PERMIT_WAIT";
        ret->tag = EXPORTS_WASMSCHED_PLUGIN_PLUGIN_PERMIT_VERDICT_ALLOW;
    }
    return finish(e, err);
}

bool exports_wasmsched_plugin_plugin_pre_bind(exports_wasmsched_plugin_plugin_borrow_pod_t pod, gstr *node,
                                              exports_wasmsched_plugin_plugin_status_t *ret, gstr *err) {
    call_enter();
    ws_status st = {WS_SUCCESS, {"", 0}};
    const char *e = ws_plugin_hooks.pre_bind ? ws_plugin_hooks.pre_bind(POD(pod), S(*node), &st) : NOT_IMPLEMENTED;
    lower_status(&st, ret);
    return finish(e, err);
}

void exports_wasmsched_plugin_plugin_post_bind(exports_wasmsched_plugin_plugin_borrow_pod_t pod, gstr *node) {
    call_enter();
    if (ws_plugin_hooks.post_bind) ws_plugin_hooks.post_bind(POD(pod), S(*node));
    call_leave();
}
