// image-locality: prefer nodes that already hold the pod's images. A node
// scores one point per 10 MB of the pod's images it holds, up to 100:
// min(100, sum over the pod's images of nodes.imageSize(i, image) / 10 MB).

import { definePlugin } from "wasmsched";

const BYTES_PER_POINT = 10_000_000;

export default definePlugin({
  name: "image-locality",
  version: "0.1.0",

  score(pod, nodes) {
    const images = pod.images();
    const n = nodes.len();
    const scores = new Array(n);
    for (let i = 0; i < n; i++) {
      let total = 0;
      for (const image of images) total += nodes.imageSize(i, image) ?? 0; // absent: 0
      scores[i] = Math.min(100, Math.floor(total / BYTES_PER_POINT));
    }
    return scores;
  },
});
