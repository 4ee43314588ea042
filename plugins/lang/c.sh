#!/usr/bin/env bash
# Builds a C plugin (plugins/sdk/c) into a core module with the
# component-type section of world `scheduler-plugin` embedded:
#
#   plugins/lang/c.sh DIR CORE_OUT      (normally run by plugins/build.sh)
#
# DIR: the plugin's directory; every *.c in it is compiled. Freestanding
# wasm32-unknown-unknown: the module imports only the plugin world.
# Installs Debian's clang + lld (+ the wasm runtime libraries) when missing.
# Env: CC (a clang), CFLAGS (extra flags).
set -euo pipefail
dir="${1:?usage: c.sh DIR CORE_OUT}"
out="${2:?usage: c.sh DIR CORE_OUT}"
plugins="${WASMSCHED_PLUGINS:-$(cd "$(dirname "$0")/.." && pwd)}"
sdk="$plugins/sdk/c"

find_clang() {
  for c in ${CC:-} clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14; do
    command -v "$c" >/dev/null 2>&1 && { echo "$c"; return; }
  done
}
cc="$(find_clang || true)"
if [ -z "$cc" ] || ! command -v wasm-ld >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "c.sh: installing clang, lld (apt)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq clang lld libclang-rt-dev-wasm32 wasi-libc >/dev/null
    cc="$(find_clang)"
  else
    echo "c.sh: needs clang and wasm-ld (Debian: apt-get install clang lld)" >&2
    exit 1
  fi
fi

srcs=("$dir"/*.c)
[ -e "${srcs[0]}" ] || { echo "c.sh: no .c file in $dir" >&2; exit 1; }

# shellcheck disable=SC2086
"$cc" --target=wasm32-unknown-unknown -mbulk-memory -ffreestanding -nostdlib \
  -O2 -fno-strict-aliasing -fvisibility=hidden -std=c11 -Wall -Wno-unused-parameter \
  -isystem "$sdk/libc" -I "$sdk/include" -I "$sdk/generated" ${CFLAGS:-} \
  -Wl,--no-entry -Wl,--strip-all -Wl,--gc-sections \
  -o "$out" "${srcs[@]}" "$sdk/src/wasmsched.c" "$sdk/generated/scheduler_plugin.c" \
  "$sdk/generated/scheduler_plugin_component_type.o"
