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
"${zig[@]}" build-exe -target wasm32-freestanding -mcpu=generic+bulk_memory -O ReleaseSmall \
  -fno-entry -fstrip --cache-dir "$cache" -femit-bin="$out" \
  -cflags -std=c11 -fno-strict-aliasing -fvisibility=hidden -isystem "$sdk/c/libc" \
    -I "$sdk/c/include" -I "$sdk/c/generated" -- \
  "$sdk/c/src/wasmsched.c" "$sdk/c/generated/scheduler_plugin.c" \
  "$sdk/c/generated/scheduler_plugin_component_type.o" \
  --dep wasmsched -Mroot="$root" -Mwasmsched="$sdk/zig/wasmsched.zig"
