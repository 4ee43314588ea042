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

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# WS_PLUGIN refers to the hook of every point it declares: one missing is
# an undefined symbol at link time. Say it in the plugin's terms, at the
# line of WS_PLUGIN, with the ws_ functions that are no hook (a misspelling).
explain() {
  local hook point at others
  for hook in $(grep -oE 'undefined symbol: ws_(pre_filter|filter|pre_score|score|normalize_score|post_filter|reserve|permit|pre_bind|post_bind)$' "$log" | sed 's/.*: //' | sort -u); do
    point="WS_$(echo "${hook#ws_}" | tr a-z A-Z)"
    at="$(grep -nE 'WS_PLUGIN[[:space:]]*\(' "${srcs[@]}" /dev/null | head -1 | cut -d: -f1,2)"
    others="$(grep -ohE '\bws_[A-Za-z0-9_]+[[:space:]]*\(' "${srcs[@]}" | tr -d ' (' | sort -u \
      | while read -r f; do grep -qE "\b$f[[:space:]]*\(" "$sdk/include/wasmsched.h" || printf ' %s' "$f"; done)"
    echo "${at:-$dir}: WS_PLUGIN declares $point but $hook is not defined${others:+ (misspelt? not hooks:$others)}" >&2
  done
}

# shellcheck disable=SC2086
if ! "$cc" --target=wasm32-unknown-unknown -mbulk-memory -ffreestanding -nostdlib \
  -O2 -fno-strict-aliasing -fvisibility=hidden -std=c11 -Wall -Wno-unused-parameter \
  -isystem "$sdk/libc" -I "$sdk/include" -I "$sdk/generated" ${CFLAGS:-} \
  -Wl,--no-entry -Wl,--strip-all -Wl,--gc-sections \
  -o "$out" "${srcs[@]}" "$sdk/src/wasmsched.c" "$sdk/generated/scheduler_plugin.c" \
  "$sdk/generated/scheduler_plugin_component_type.o" >"$log" 2>&1; then
  explain
  cat "$log" >&2
  exit 1
fi
cat "$log" >&2
[ -z "${WASMSCHED_LANGUAGE:-}" ] || echo "C=clang $("$cc" -dumpversion)" > "$WASMSCHED_LANGUAGE"
