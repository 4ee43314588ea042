#!/usr/bin/env bash
# Regenerates plugins/sdk/c/generated/ (the C bindings of world
# `scheduler-plugin`, wit-bindgen 0.63) from wit/plugin.wit. Run after
# changing the WIT; commit the result. Builds the small generator in gen/ first
# (its own Cargo workspace; its target directory is gen/target, or
# $CARGO_TARGET_DIR when set; a minute or two the first time).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
wit="${1:-$here/../../../wit}"
nice -n 19 cargo build --quiet --release -j "${JOBS:-1}" --manifest-path "$here/gen/Cargo.toml" >&2
rm -rf "$here/generated.tmp"
"${CARGO_TARGET_DIR:-$here/gen/target}/release/wasmsched-c-bindgen" "$wit" "$here/generated.tmp" >/dev/null
rm -rf "$here/generated"
mv "$here/generated.tmp" "$here/generated"
ls "$here/generated"
