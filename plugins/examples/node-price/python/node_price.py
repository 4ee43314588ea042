"""node-price: prefer the node with the lowest price, read from a node
annotation (key configurable). Nodes without a valid price score 0; the
cheapest scores 100, the dearest 0, the others in between.

Args: {"annotation": "price"} (the default).
"""

import math

import wasmsched

# Raw score of a node without a price.
NO_PRICE = -1
I64_MAX = 2**63 - 1
# price * 1000 from which `as i64` saturates.
SATURATES = 9.223372036854775807e18


class NodePrice(wasmsched.Plugin):
    name = "node-price"
    version = "0.1.0"

    annotation = "price"

    def configure(self, args):
        key = args.get("annotation", "price")
        if not isinstance(key, str) or key == "":
            raise wasmsched.PluginError("args.annotation: must not be empty")
        self.annotation = key

    def score(self, pod, nodes):
        """Raw score: the price in thousandths (a price of 0.25 is 250)."""
        # One host call for the whole batch, prices already parsed. The
        # price in thousandths is round(price * 1000) as Rust's f64::round
        # (halves away from zero), then `as i64` (saturating); written
        # inline, as a function call per node costs more than the sum.
        floor = math.floor
        return [
            NO_PRICE if p is None or p < 0.0
            else I64_MAX if (x := p * 1000.0) >= SATURATES
            else r + 1 if x - (r := floor(x)) >= 0.5 else r
            for p in nodes.annotation_numbers(self.annotation)
        ]

    def normalize_score(self, pod, scores):
        """Cheapest -> 100, dearest -> 0; no price -> 0."""
        # Distinct values sorted in C, not compared one by one in Python.
        distinct = sorted(set(scores))
        if distinct and distinct[0] == NO_PRICE:
            del distinct[0]
        if not distinct:
            return [0] * len(scores)
        lo, hi = distinct[0], distinct[-1]
        if hi == lo:
            return [0 if s == NO_PRICE else 100 for s in scores]
        span = hi - lo
        return [0 if s == NO_PRICE else 100 - (s - lo) * 100 // span for s in scores]
