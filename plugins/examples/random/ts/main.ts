// random (TypeScript): uniform random placement among the feasible nodes,
// from the host's seeded random numbers (so `simulate --seed` stays
// reproducible). Each node scores `random % 101`. The twin of
// ../rust/src/lib.rs.

import { definePlugin, type Nodes, type Pod } from "wasmsched";

export default definePlugin({
  name: "random",
  version: "0.1.0",

  score(_pod: Pod, nodes: Nodes): number[] {
    // One host call for the batch: randoms()[i] == random(i). u64 values
    // arrive as BigInts: BigInt() keeps % exact.
    return Array.from(nodes.randoms(), (r) => Number(BigInt(r) % 101n));
  },
});
