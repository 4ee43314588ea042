/*
 * node-price (C): prefer the node with the lowest price, read from a node
 * annotation (key configurable). Nodes without a valid price score 0; the
 * cheapest scores 100, the dearest 0, the others in between.
 * The twin of ../rust/src/lib.rs.
 *
 * Args: {"annotation": "price"} (the default).
 */
#include <wasmsched.h>

WS_PLUGIN("node-price", "0.1.0", WS_SCORE | WS_NORMALIZE_SCORE);

/* Raw score of a node without a price. */
#define NO_PRICE (-1)

static ws_str annotation = WS_S("price");

const char *ws_configure(ws_str args) {
    ws_str key;
    if (!ws_json_string(args, "annotation", &key)) key = WS_S("price");
    else if (key.len == 0) return "args.annotation: must not be empty";
    annotation = key; /* args is kept until the next configure */
    return NULL;
}

/* Raw score: the price in thousandths (a price of 0.25 is 250). One host
 * call for the whole batch, prices already parsed. */
const char *ws_score(ws_pod pod, ws_nodes nodes, int64_t *scores, size_t n) {
    (void)pod;
    ws_opt_f64s prices = ws_nodes_annotation_numbers(nodes, annotation);
    for (size_t i = 0; i < n && i < prices.len; i++) {
        ws_opt_f64 p = prices.ptr[i];
        scores[i] = p.is_some && p.val >= 0.0 ? ws_round_i64(p.val * 1000.0) : NO_PRICE;
    }
    return NULL;
}

/* Cheapest -> 100, dearest -> 0; no price -> 0. */
const char *ws_normalize_score(ws_pod pod, int64_t *scores, size_t n) {
    (void)pod;
    bool any = false;
    int64_t lo = 0, hi = 0;
    for (size_t i = 0; i < n; i++) {
        if (scores[i] == NO_PRICE) continue;
        if (!any || scores[i] < lo) lo = scores[i];
        if (!any || scores[i] > hi) hi = scores[i];
        any = true;
    }
    for (size_t i = 0; i < n; i++) {
        if (!any || scores[i] == NO_PRICE) scores[i] = 0;
        else if (hi == lo) scores[i] = 100;
        else scores[i] = 100 - (scores[i] - lo) * 100 / (hi - lo);
    }
    return NULL;
}
