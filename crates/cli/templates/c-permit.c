/* {{name}}: binds the pods of a group together (args {"label": ...}, default
 * "wasmsched.io/group"; {"minCount": ...}, default 2): Permit holds each pod
 * with the label until minCount pods of its group are reserved, for at most
 * waitSeconds (args, default 30), then releases them all. (The count keeps
 * bound pods; a real plugin would also forget deleted ones, or count the
 * placed pods with ws_nodes_domains at Permit.) */
#include <wasmsched.h>

WS_PLUGIN("{{name}}", "0.1.0", WS_RESERVE | WS_PERMIT);

static ws_str label = WS_S("wasmsched.io/group");
static int64_t min_count = 2, wait_seconds = 30;

const char *ws_configure(ws_str args) {
    if (!ws_json_string(args, "label", &label)) label = WS_S("wasmsched.io/group");
    if (!ws_json_i64(args, "minCount", &min_count)) min_count = 2;
    if (!ws_json_i64(args, "waitSeconds", &wait_seconds)) wait_seconds = 30;
    return NULL;
}

/* Instances are pooled: what outlives a call goes to the host's store
 * (ws_state_*), shared by every instance of the plugin. The pod's group and
 * its key there; false when the pod has no group. */
static bool group_key(ws_pod pod, ws_str *group, ws_str *key) {
    if (!ws_pod_label(pod, label, group)) return false;
    ws_buf b = {0};
    ws_buf_cstr_add(&b, "reserved/");
    ws_buf_str(&b, ws_pod_namespace(pod));
    ws_buf_cstr_add(&b, "/");
    ws_buf_str(&b, *group);
    *key = ws_buf_view(&b);
    return true;
}

const char *ws_reserve(ws_pod pod, ws_nodes nodes, ws_status *status) {
    (void)nodes;
    (void)status; /* preset to success */
    ws_str group, key;
    if (!group_key(pod, &group, &key)) return NULL;
    return ws_state_add(key, 1, NULL); /* in one step, whatever other instances do meanwhile */
}

/* Permit rejected the pod, it timed out, or its binding failed. */
void ws_unreserve(ws_pod pod, ws_str node) {
    (void)node;
    ws_str group, key;
    if (group_key(pod, &group, &key)) ws_state_add(key, -1, NULL);
}

const char *ws_permit(ws_pod pod, ws_nodes nodes, ws_permit_verdict *verdict) {
    (void)nodes; /* verdict: preset to allow */
    ws_str group, key, ns = ws_pod_namespace(pod), value;
    int64_t reserved = 0;
    if (!group_key(pod, &group, &key)) return NULL;
    ws_state_get_i64(key, &reserved);
    if (reserved < min_count) {
        /* Until allowed below, or rejected at the deadline. */
        *verdict = ws_permit_wait((uint32_t)(wait_seconds * 1000));
        return NULL;
    }
    ws_waiting_list waiting = ws_waiting_pods(); /* release the group's pods held so far */
    for (size_t i = 0; i < waiting.len; i++)
        if (ws_str_eq(waiting.ptr[i].namespace_, ns) && ws_pairs_get(waiting.ptr[i].labels, label, &value) &&
            ws_str_eq(value, group))
            ws_waiting_allow(waiting.ptr[i].uid);
    return NULL;
}
