"""Component glue: adapts a wasmsched.Plugin to the generated bindings of
world `scheduler-plugin`. Imported by the app module the build generates;
only importable inside a componentize-py build."""

import sys

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import plugin as _wit
from wit_world.imports import cluster as _cluster

import wasmsched as _sdk

# `len(nodes)` as well as `nodes.len()`.
_cluster.Nodes.__len__ = lambda self: self.len()


class _LogWriter:
    """sys.stdout/sys.stderr: the component has no stdio (WASI is stubbed
    and traps), so print() goes to the host log, one line per entry."""

    def __init__(self, level):
        self.level = level
        self.buf = ""

    def write(self, s):
        self.buf += s
        while "\n" in self.buf:
            line, self.buf = self.buf.split("\n", 1)
            _sdk.log(self.level, line)
        return len(s)

    def flush(self):
        if self.buf:
            _sdk.log(self.level, self.buf)
            self.buf = ""

    def isatty(self):
        return False


_stdout = _LogWriter(_sdk.Level.INFO)
_stderr = _LogWriter(_sdk.Level.WARN)


def _install_stdio():
    # At run time only: during the build (pre-initialization) the host's
    # log is not there, and build errors must reach the real stderr.
    sys.stdout = _stdout
    sys.stderr = _stderr

_CODES = {c: _wit.Code(c.value) for c in _sdk.Code}
_POINTS = {
    _sdk.Points.PRE_FILTER: _wit.Points.PRE_FILTER,
    _sdk.Points.FILTER: _wit.Points.FILTER,
    _sdk.Points.PRE_SCORE: _wit.Points.PRE_SCORE,
    _sdk.Points.SCORE: _wit.Points.SCORE,
    _sdk.Points.NORMALIZE_SCORE: _wit.Points.NORMALIZE_SCORE,
}

_p = _sdk._instance()


def _err(e):
    if isinstance(e, Err):
        return e
    return Err(_sdk._message(e))


def _status(v):
    if v is None:
        return _wit.Status(_wit.Code.SUCCESS, "")
    if isinstance(v, _sdk.Code):
        return _wit.Status(_CODES[v], "")
    return _wit.Status(_CODES[v.code], v.reason)


def _ints(v):
    return v if type(v) is list else list(v)


class Plugin(exports.Plugin):
    def metadata(self):
        _install_stdio()
        pts = _wit.Points(0)
        for sdk_pt, wit_pt in _POINTS.items():
            if sdk_pt in _p._points():
                pts |= wit_pt
        return _wit.PluginMetadata(_p.name, _p.version, pts)

    def configure(self, args):
        _install_stdio()
        try:
            _p.configure(_sdk._parse_args(args))
        except BaseException as e:
            raise _err(e)

    def pre_filter(self, pod):
        try:
            return _status(_p.pre_filter(pod))
        except BaseException as e:
            raise _err(e)

    def filter(self, pod, nodes):
        try:
            return [_wit.Rejection(r.index, _CODES[r.code], r.reason) for r in _p.filter(pod, nodes) or ()]
        except BaseException as e:
            raise _err(e)

    def pre_score(self, pod, nodes):
        try:
            return _status(_p.pre_score(pod, nodes))
        except BaseException as e:
            raise _err(e)

    def score(self, pod, nodes):
        try:
            return _ints(_p.score(pod, nodes))
        except BaseException as e:
            raise _err(e)

    def normalize_score(self, pod, scores):
        try:
            return _ints(_p.normalize_score(pod, scores))
        except BaseException as e:
            raise _err(e)
