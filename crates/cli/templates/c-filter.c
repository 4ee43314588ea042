/* {{name}}: rejects nodes that lack a label (args {"label": ...}, default
 * "wasmsched.io/allowed"). */
#include <wasmsched.h>

WS_PLUGIN("{{name}}", "0.1.0", WS_FILTER);

static ws_str label = WS_S("wasmsched.io/allowed");

const char *ws_configure(ws_str args) {
    if (!ws_json_string(args, "label", &label)) label = WS_S("wasmsched.io/allowed");
    return NULL;
}

const char *ws_filter(ws_pod pod, ws_nodes nodes, ws_rejections *out) {
    (void)pod;
    ws_opt_strs values = ws_nodes_label_values(nodes, label);
    for (size_t i = 0; i < values.len; i++)
        if (!values.ptr[i].is_some) ws_reject(out, (uint32_t)i, WS_UNSCHEDULABLE, WS_S("node(s) had no required label"));
    return NULL;
}
