"""load-aware: avoid busy nodes. Reads each node's CPU and memory usage
(fractions 0..1 from a monitoring system, e.g. node_exporter through
Prometheus) from the live metrics of contract 0.3, corrected by the requests
of the pods placed on the node since the sample was taken. It declares the
two sources it reads (contract 0.4), so a missing one fails at load.

- Filter: a node whose CPU usage is above `cpuThreshold`, or whose memory
  usage is above `memoryThreshold`, is rejected (unschedulable: it may
  calm down).
- Score: the less used the better: (1 - mean usage) * 100.

A node without a usage (no value, or a stale one) passes the filter and
scores 50 when it has neither. Args: {"cpuSource": "cpu", "memorySource":
"memory", "cpuThreshold": 0.8, "memoryThreshold": 0.8} (the defaults).
"""

import math

import wasmsched
from wasmsched import Code, Rejection

ARGS = ("cpuSource", "memorySource", "cpuThreshold", "memoryThreshold")
# Score of a node without any usage: neither preferred nor avoided.
NEUTRAL = 50


def source(args, key, default):
    value = args.get(key, default)
    if not isinstance(value, str) or value == "":
        raise wasmsched.PluginError(f"args.{key}: must be a non-empty string")
    return value


def threshold(args, key, default):
    value = args.get(key, default)
    # bool is an int in Python, not a number in JSON; NaN fails 0 < value.
    if type(value) not in (int, float) or not 0 < value <= 1:
        raise wasmsched.PluginError(f"args.{key}: must be a number in (0, 1]")
    return float(value)


def percent(x):
    """round(x) = floor(x + 0.5) clamped to [0, 100]; NaN gives 0 and the
    infinities a bound, as a saturating cast would (floor would raise)."""
    y = x + 0.5
    if not y >= 0.0:
        return 0
    if y >= 100.0:
        return 100
    return math.floor(y)


class LoadAware(wasmsched.Plugin):
    name = "load-aware"
    version = "0.1.0"

    cpu_source = "cpu"
    memory_source = "memory"
    cpu_threshold = 0.8
    memory_threshold = 0.8

    def configure(self, args):
        if not isinstance(args, dict):
            raise wasmsched.PluginError("args: must be an object")
        self.cpu_source = source(args, "cpuSource", "cpu")
        self.memory_source = source(args, "memorySource", "memory")
        self.cpu_threshold = threshold(args, "cpuThreshold", 0.8)
        self.memory_threshold = threshold(args, "memoryThreshold", 0.8)
        unknown = sorted(k for k in args if k not in ARGS)
        if unknown:
            raise wasmsched.PluginError(f'args: unknown field "{unknown[0]}"')

    def metric_sources(self):
        return [self.cpu_source, self.memory_source]

    def usages(self, nodes, name, resource):
        """Per node: the source's value plus the requests of `resource`
        placed since, as a fraction of the allocatable; None without a
        finite value. One host call for the metrics, one for the
        allocatables."""
        try:
            ms = nodes.metrics(name)
        except wasmsched.PluginError as e:
            raise wasmsched.PluginError(f"metrics({name}): {e}") from None
        alloc = nodes.allocatable_all(resource)
        out = []
        for m, a in zip(ms, alloc):
            if m is None or not math.isfinite(m.value):
                out.append(None)
                continue
            since = m.cpu_since if resource == "cpu" else m.memory_since
            # f64 / f64, as every twin computes it (int / int in Python
            # rounds the exact quotient instead).
            out.append(m.value + (float(since) / float(a) if a > 0 else 0.0))
        return out

    def filter(self, pod, nodes):
        cpu = self.usages(nodes, self.cpu_source, "cpu")
        memory = self.usages(nodes, self.memory_source, "memory")
        out = []
        for i, (c, m) in enumerate(zip(cpu, memory)):
            if c is not None and c > self.cpu_threshold:
                out.append(Rejection(i, Code.UNSCHEDULABLE, "node(s) had CPU usage above the threshold"))
            elif m is not None and m > self.memory_threshold:
                out.append(Rejection(i, Code.UNSCHEDULABLE, "node(s) had memory usage above the threshold"))
        return out

    def score(self, pod, nodes):
        cpu = self.usages(nodes, self.cpu_source, "cpu")
        memory = self.usages(nodes, self.memory_source, "memory")
        out = []
        for c, m in zip(cpu, memory):
            present = [u for u in (c, m) if u is not None]
            if not present:
                out.append(NEUTRAL)
                continue
            total = 0.0
            for u in present:
                total += u
            out.append(percent((1.0 - total / len(present)) * 100.0))
        return out
