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


def thousandths(price: float) -> int:
    """round(price * 1000) as Rust's f64::round (halves away from zero)
    then `as i64` (saturating)."""
    x = price * 1000.0
    if x >= 9.223372036854775807e18:
        return I64_MAX
    r = math.floor(x)
    return r + 1 if x - r >= 0.5 else r


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
        # One host call for the whole batch, prices already parsed.
        return [
            thousandths(p) if p is not None and p >= 0.0 else NO_PRICE
            for p in nodes.annotation_numbers(self.annotation)
        ]

    def normalize_score(self, pod, scores):
        """Cheapest -> 100, dearest -> 0; no price -> 0."""
        priced = [s for s in scores if s != NO_PRICE]
        if not priced:
            return [0] * len(scores)
        lo, hi = min(priced), max(priced)
        if hi == lo:
            return [0 if s == NO_PRICE else 100 for s in scores]
        return [0 if s == NO_PRICE else 100 - (s - lo) * 100 // (hi - lo) for s in scores]
