#!/usr/bin/env bash
# Builds a Python plugin (plugins/sdk/python) into a component of world
# `scheduler-plugin` with componentize-py:
#
#   plugins/lang/python.sh DIR OUT      (normally run by plugins/build.sh)
#
# DIR: the plugin's directory: main.py, or its only .py file, is the plugin
# module (it imports `wasmsched` and defines one wasmsched.Plugin subclass);
# other modules of DIR are importable; a requirements.txt there is installed
# (pure-Python packages only) into the build. WASI is stubbed
# (--stub-wasi): the component imports only the plugin world.
# Installs componentize-py from PyPI into
# $HOME/.cache/wasmsched/toolchains/python (a venv) when missing.
set -euo pipefail
dir="$(cd "${1:?usage: python.sh DIR OUT}" && pwd)"
out="${2:?usage: python.sh DIR OUT}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
plugins="${WASMSCHED_PLUGINS:-$(cd "$(dirname "$0")/.." && pwd)}"
wit="${WASMSCHED_WIT:-$plugins/../wit}"
sdk="$plugins/sdk/python"
COMPONENTIZE_PY_VERSION=0.25.1
tc="${WASMSCHED_TOOLCHAINS:-$HOME/.cache/wasmsched/toolchains}/python"
cpy="$tc/bin/componentize-py"

fail() { echo "python.sh: $*" >&2; exit 1; }

if [ "$("$cpy" --version 2>/dev/null || true)" != "componentize-py $COMPONENTIZE_PY_VERSION" ]; then
  echo "python.sh: installing componentize-py $COMPONENTIZE_PY_VERSION (PyPI) into $tc" >&2
  command -v python3 >/dev/null 2>&1 || fail "needs python3 (3.9 or later) to install componentize-py"
  if [ ! -x "$tc/bin/pip" ]; then
    python3 -m venv "$tc" >&2 || fail "python3 -m venv $tc failed (Debian: apt-get install python3-venv)"
  fi
  "$tc/bin/pip" install --quiet --disable-pip-version-check \
    "componentize-py==$COMPONENTIZE_PY_VERSION" >&2 || fail "pip install componentize-py==$COMPONENTIZE_PY_VERSION failed"
fi

if [ -f "$dir/main.py" ]; then
  mod=main
else
  srcs=("$dir"/*.py)
  [ "${#srcs[@]}" = 1 ] && [ -e "${srcs[0]}" ] || fail "$dir needs main.py or exactly one .py file"
  mod="$(basename "${srcs[0]}" .py)"
fi
case "$mod" in
  wasmsched|wit_world|componentize_py_*|wasmsched_app) fail "$dir/$mod.py: rename it, the name $mod is taken" ;;
esac

build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
paths=(-p "$build" -p "$dir" -p "$sdk")
if [ -f "$dir/requirements.txt" ]; then
  "$tc/bin/pip" install --quiet --disable-pip-version-check --no-compile \
    --target "$build/deps" -r "$dir/requirements.txt" >&2 || fail "pip install -r $dir/requirements.txt failed"
  paths+=(-p "$build/deps")
fi
# The app module componentize-py wraps: the user's module, then the glue
# (whose class `Plugin` implements the exported interface).
cat > "$build/wasmsched_app.py" <<PY
import $mod
from wasmsched._component import Plugin
PY

cd "$build"
# No VIRTUAL_ENV: only the paths above are searched.
env -u VIRTUAL_ENV "$cpy" -d "$wit" -w scheduler-plugin componentize --stub-wasi \
  "${paths[@]}" wasmsched_app -o "$out" >"$build/log" 2>&1 || { cat "$build/log" >&2; fail "componentize-py failed for $dir"; }
