"""The pods waiting at Permit (contract 0.7): placed and holding their
node's resources, not bound until every plugin whose ``permit`` returned
:class:`wasmsched.Wait` allows them.

Outside a component (plain CPython: unit tests) :func:`pods` returns the
list ``wasmsched.waiting.pending`` (empty unless a test fills it with
objects that have the fields of :class:`wasmsched.WaitingPod`), and
:func:`allow` and :func:`reject` remove a pod of it.
"""

from __future__ import annotations

from typing import List

from . import WaitingPod, _label

__all__ = ["pods", "allow", "reject"]

try:  # present only inside a componentize-py build
    from wit_world.imports import waiting as _host
except ImportError:  # plain CPython: tests
    _host = None

# Plain CPython only.
pending: list = []


def _waits_for(self, plugin: str) -> bool:
    return plugin in self.plugins


if _host is not None:
    _host.WaitingPod.label = _label
    _host.WaitingPod.waits_for = _waits_for


def pods() -> List[WaitingPod]:
    """Every pod waiting at Permit (of every profile), longest waiting
    first."""
    if _host is None:
        return list(pending)
    return _host.pods()


def _release(uid: str) -> bool:
    for i, p in enumerate(pending):
        if p.uid == uid:
            del pending[i]
            return True
    return False


def allow(uid: str) -> bool:
    """Allows the pod of ``uid`` for this plugin: it stops waiting for this
    plugin (and is bound when no plugin is left). False when it does not
    wait for this plugin: a plugin releases only the pods it holds."""
    if _host is None:
        return _release(uid)
    return _host.allow(uid)


def reject(uid: str, reason: str) -> bool:
    """Rejects the pod of ``uid``, which this plugin holds, with ``reason``:
    it is not bound, its Reserve is undone, and it is retried later. False
    when it does not wait for this plugin."""
    if _host is None:
        return _release(uid)
    return _host.reject(uid, reason)
