"""State the host keeps for the plugin (contract 0.7).

A plugin's instances are pooled and may run concurrently: memory inside one
instance (``self``, module globals) is neither kept nor shared, so what must
outlive a call (a quota's usage, a gang's members) goes here.

The plugin's store (:func:`get`, :func:`set`, :func:`remove`, :func:`keys`,
:func:`add`) is shared by every instance of the plugin and kept across calls
and pods, as long as the scheduler runs; a new version of the plugin starts
with it empty unless it sets ``keep_state = True``. It is bounded (at most
65 536 keys of at most 1 KiB, keys and values together at most a quarter of
the plugin's memory cap): a write past a bound raises :class:`PluginError`
with the host's message and changes nothing.

The cycle's state (:func:`cycle_get`, :func:`cycle_set`) belongs to one
attempt of one pod: what PreFilter wrote, Filter, Score, Reserve, Permit,
PreBind and PostBind (or Unreserve) of the same attempt read; it is dropped
when the attempt ends (at most 1 MiB).

Values are bytes (a ``str`` is stored as UTF-8). Outside a component (plain
CPython: unit tests) the store and the cycle's state are dicts of this
module.
"""

from __future__ import annotations

import struct as _struct
from typing import Dict, List, Optional, Union

from . import PluginError, _host_error

__all__ = ["get", "set", "remove", "keys", "add", "get_i64", "set_i64", "cycle_get", "cycle_set"]

Value = Union[bytes, bytearray, memoryview, str]

try:  # present only inside a componentize-py build
    from componentize_py_types import Err as _Err
    from wit_world.imports import state as _host
except ImportError:  # plain CPython: tests
    _host = None

    class _Err(Exception):
        pass


# Plain CPython only.
_store: Dict[str, bytes] = {}
_cycle: Dict[str, bytes] = {}
_I64 = _struct.Struct("<q")


def _bytes(value: Value) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"a state value is bytes or str, not {type(value).__name__}")


def get(key: str) -> Optional[bytes]:
    """The value stored under ``key``, None when there is none."""
    if _host is None:
        return _store.get(key)
    return _host.get(key)


def set(key: str, value: Value) -> None:  # noqa: A001 (the contract's name)
    """Stores ``value`` under ``key``; PluginError past a bound."""
    data = _bytes(value)
    if _host is None:
        _store[key] = data
        return
    try:
        _host.set(key, data)
    except _Err as e:
        raise _host_error(e) from None


def remove(key: str) -> bool:
    """Removes ``key``; whether it was there."""
    if _host is None:
        return _store.pop(key, None) is not None
    return _host.remove(key)


def keys(prefix: str = "") -> List[str]:
    """The keys that start with ``prefix``, sorted (at most 10 000)."""
    if _host is None:
        return sorted(k for k in _store if k.startswith(prefix))[:10000]
    return _host.keys(prefix)


def add(key: str, delta: int = 1) -> int:
    """Adds ``delta`` to the counter under ``key`` (an int64 stored as 8
    bytes, little-endian; none counts as 0) and returns its new value, in
    one step however many instances call it at once. PluginError when the
    value there is not 8 bytes, or the sum overflows."""
    if _host is None:
        old = _store.get(key, _I64.pack(0))
        if len(old) != 8:
            raise PluginError(f"state key {key!r}: the value is {len(old)} bytes, not 8")
        new = _I64.unpack(old)[0] + delta
        if not -(1 << 63) <= new < (1 << 63):
            raise PluginError(f"state key {key!r}: the sum overflows")
        _store[key] = _I64.pack(new)
        return new
    try:
        return _host.add(key, delta)
    except _Err as e:
        raise _host_error(e) from None


def get_i64(key: str) -> Optional[int]:
    """The int64 under ``key`` (8 bytes, little-endian, as :func:`add` and
    :func:`set_i64` write it); None when there is none or it is not 8
    bytes."""
    value = get(key)
    return _I64.unpack(value)[0] if value is not None and len(value) == 8 else None


def set_i64(key: str, value: int) -> None:
    """Stores ``value`` under ``key`` as 8 bytes, little-endian (what
    :func:`add` counts on)."""
    set(key, _I64.pack(value))


def cycle_get(key: str) -> Optional[bytes]:
    """The value the pod's cycle holds under ``key``, None when there is
    none."""
    if _host is None:
        return _cycle.get(key)
    return _host.cycle_get(key)


def cycle_set(key: str, value: Value) -> None:
    """Stores ``value`` under ``key`` for the rest of the pod's cycle;
    PluginError outside a pod's cycle (in ``configure``)."""
    data = _bytes(value)
    if _host is None:
        _cycle[key] = data
        return
    try:
        _host.cycle_set(key, data)
    except _Err as e:
        raise _host_error(e) from None
