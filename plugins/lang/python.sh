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

# componentize-py imports the module at build time, so a Python error (and
# the SDK's check of the Plugin subclass) fails the build. Its report wraps
# the Python traceback in its own, with a Rust backtrace, and names the
# files by the guest paths /0, /1, ... of the -p directories: show the
# error first, as FILE:LINE: message in the plugin's own files.
report() {
  "$tc/bin/python" - "$build/log" "$dir" "$mod" "${paths[@]}" <<'PY' >&2 || cat "$build/log" >&2
import re, sys

log, plugin_dir, mod, *paths = sys.argv[1:]
dirs = [p for flag, p in zip(paths[::2], paths[1::2])]
text = open(log, encoding="utf-8", errors="replace").read()
start = text.find("Traceback (most recent call last):", text.find("AssertionError: ") + 1)
if start < 0:
    sys.exit(1)
end = text.find("\n\nCaused by:", start)
tb = text[start:end if end >= 0 else len(text)].rstrip().splitlines()

def real(path):
    m = re.match(r"/(\d+)/(.*)", path)
    return f"{dirs[int(m.group(1))]}/{m.group(2)}" if m and int(m.group(1)) < len(dirs) else path

frames = [(real(f), n) for f, n in re.findall(r'^\s*File "([^"]+)", line (\d+)', "\n".join(tb), re.M)]
mine = [(f, n) for f, n in frames if f.startswith(plugin_dir + "/")]
where = "%s:%s: " % mine[-1] if mine else f"{plugin_dir}/{mod}.py: "
last = tb[-1]
# The SDK's own errors say everything; others keep their type and traceback.
if last.startswith("wasmsched.DefinitionError: "):
    print(where + last.split(": ", 1)[1])
else:
    print(where + last)
    for line in tb[:-1]:
        if "wasmsched_app.py" not in line and not line.lstrip().startswith("import " + mod):
            print(re.sub(r'File "([^"]+)"', lambda m: f'File "{real(m.group(1))}"', line))
PY
}

cd "$build"
# No VIRTUAL_ENV: only the paths above are searched. No Rust backtrace in
# componentize-py's report.
env -u VIRTUAL_ENV RUST_BACKTRACE=0 RUST_LIB_BACKTRACE=0 "$cpy" -d "$wit" -w scheduler-plugin componentize --stub-wasi \
  "${paths[@]}" wasmsched_app -o "$out" >"$build/log" 2>&1 || { report; fail "componentize-py failed for $dir"; }
[ -z "${WASMSCHED_LANGUAGE:-}" ] || echo "Python=componentize-py $COMPONENTIZE_PY_VERSION" > "$WASMSCHED_LANGUAGE"
