#!/usr/bin/env bash
# Builds a Zig plugin (plugins/sdk/zig, over the C SDK and wit-bindgen's C
# bindings) into a core module with the component-type section of world
# `scheduler-plugin` embedded:
#
#   plugins/lang/zig.sh DIR CORE_OUT      (normally run by plugins/build.sh)
#
# DIR: the plugin's directory: main.zig, or its only .zig file, is the root;
# it imports the SDK as `wasmsched`. wasm32-freestanding: the module imports
# only the plugin world. Installs Zig from PyPI (ziglang) when missing.
set -euo pipefail
dir="$(cd "${1:?usage: zig.sh DIR CORE_OUT}" && pwd)"
out="${2:?usage: zig.sh DIR CORE_OUT}"
plugins="${WASMSCHED_PLUGINS:-$(cd "$(dirname "$0")/.." && pwd)}"
sdk="$plugins/sdk"
ZIG_VERSION=0.15.1

if [ -n "${ZIG:-}" ]; then
  zig=("$ZIG")
elif command -v zig >/dev/null 2>&1 && [ "$(zig version)" = "$ZIG_VERSION" ]; then
  zig=(zig)
else
  if [ "$(python3 -m ziglang version 2>/dev/null)" != "$ZIG_VERSION" ]; then
    echo "zig.sh: installing Zig $ZIG_VERSION (PyPI ziglang)" >&2
    python3 -m pip install --quiet --user "ziglang==$ZIG_VERSION" >&2
  fi
  zig=(python3 -m ziglang)
fi

if [ -f "$dir/main.zig" ]; then
  root="$dir/main.zig"
else
  roots=("$dir"/*.zig)
  [ "${#roots[@]}" = 1 ] && [ -e "${roots[0]}" ] || { echo "zig.sh: $dir needs main.zig or exactly one .zig file" >&2; exit 1; }
  root="${roots[0]}"
fi

cache="${WASMSCHED_PLUGINS_TARGET:-$plugins/target}/zig-cache"
mkdir -p "$cache"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# The SDK's checks of the hooks (checkHooks) fail the build in the SDK's
# file: say it first at the line of the plugin it is about.
explain() {
  local msg name at
  msg="$(grep -m1 -oE "wasmsched\.zig:[0-9]+:[0-9]+: error: (pub fn |metadata\.points).*" "$log" | sed 's/^[^ ]* error: //')"
  [ -n "$msg" ] || return 0
  name="$(echo "$msg" | sed -nE 's/^pub fn ([A-Za-z0-9_]+) .*/\1/p')"
  if [ -n "$name" ]; then
    at="$(grep -nE "fn[[:space:]]+$name[[:space:]]*\(" "$root" | head -1 | cut -d: -f1)"
  else
    at="$(grep -nE '\.points[[:space:]]*=' "$root" | head -1 | cut -d: -f1)"
  fi
  echo "$root:${at:-1}: error: $msg" >&2
}
if ! "${zig[@]}" build-exe -target wasm32-freestanding -mcpu=generic+bulk_memory -O ReleaseSmall \
  -fno-entry -fstrip --cache-dir "$cache" -femit-bin="$out" \
  -cflags -std=c11 -fno-strict-aliasing -fvisibility=hidden -isystem "$sdk/c/libc" \
    -I "$sdk/c/include" -I "$sdk/c/generated" -- \
  "$sdk/c/src/wasmsched.c" "$sdk/c/generated/scheduler_plugin.c" \
  "$sdk/c/generated/scheduler_plugin_component_type.o" \
  --dep wasmsched -Mroot="$root" -Mwasmsched="$sdk/zig/wasmsched.zig" >"$log" 2>&1; then
  explain
  cat "$log" >&2
  exit 1
fi
cat "$log" >&2
[ -z "${WASMSCHED_LANGUAGE:-}" ] || echo "Zig=zig $ZIG_VERSION" > "$WASMSCHED_LANGUAGE"
