// image-locality: prefer nodes that already hold the pod's images. A node
// scores one point per 10 MB of the pod's images it holds, up to 100:
// min(100, sum over the pod's images of nodes.imageSize(i, image) / 10 MB).

import { definePlugin } from "wasmsched";

const BYTES_PER_POINT = 10_000_000;

export default definePlugin({
  name: "image-locality",
  version: "0.1.0",

  score(pod, nodes) {
    // One host call for the batch: imageBytes(images)[i] is the sum over
    // `images` of imageSize(i, image) (absent: 0), for every node i. (The
    // per-node form, a loop over i calling nodes.imageSize(i, image), gives
    // the same scores but costs a host call per node and image.)
    // Number(): s64 is a BigInt (lists of them are Arrays of BigInts on
    // QuickJS, BigInt64Arrays on StarlingMonkey).
    return Array.from(nodes.imageBytes(pod.images()), (total) =>
      Math.min(100, Math.floor(Number(total) / BYTES_PER_POINT)),
    );
  },
});
