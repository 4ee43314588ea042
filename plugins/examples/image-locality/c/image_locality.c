/*
 * image-locality (C): prefer nodes that already hold the pod's images. A node
 * scores one point per 10 MB of the pod's images it holds, up to 100.
 * The twin of ../rust/src/lib.rs.
 */
#include <wasmsched.h>

WS_PLUGIN("image-locality", "0.1.0", WS_SCORE);

const char *ws_score(ws_pod pod, ws_nodes nodes, int64_t *scores, size_t n) {
    /* One host call for the whole batch: the bytes of the pod's images each node holds. */
    ws_i64s bytes = ws_nodes_image_bytes(nodes, ws_pod_images(pod));
    for (size_t i = 0; i < n && i < bytes.len; i++) {
        int64_t points = bytes.ptr[i] / 10000000;
        scores[i] = points < 100 ? points : 100;
    }
    return NULL;
}
