/* {{name}}: scores each node by a numeric label (args {"label": ...},
 * default "score"), clamped to 0..100; nodes without it score 0. */
#include <wasmsched.h>

WS_PLUGIN("{{name}}", "0.1.0", WS_SCORE);

static ws_str label = WS_S("score");

const char *ws_configure(ws_str args) {
    if (!ws_json_string(args, "label", &label)) label = WS_S("score");
    return NULL;
}

const char *ws_score(ws_pod pod, ws_nodes nodes, int64_t *scores, size_t n) {
    (void)pod;
    ws_opt_f64s values = ws_nodes_label_numbers(nodes, label);
    for (size_t i = 0; i < n && i < values.len; i++) {
        double v = values.ptr[i].is_some ? values.ptr[i].val : 0.0;
        scores[i] = v < 0.0 ? 0 : v > 100.0 ? 100 : (int64_t)v;
    }
    return NULL;
}
