"""random: uniform random placement among the feasible nodes, from the
host's seeded random numbers (so `simulate --seed` stays reproducible).
Each node scores `random % 101`.
"""

import wasmsched


class Random(wasmsched.Plugin):
    name = "random"
    version = "0.1.0"

    def score(self, pod, nodes):
        # One host call for the batch: nodes.randoms()[i] == nodes.random(i).
        return [r % 101 for r in nodes.randoms()]
