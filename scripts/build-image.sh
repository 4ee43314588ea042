#!/usr/bin/env bash
# Builds the container image with neither a Docker daemon nor a base image
# to pull, saves it as an OCI archive, and checks it by running it.
#
#   scripts/build-image.sh [OUT.tar]
#
# 1. a static binary (x86_64-unknown-linux-musl; Debian's musl-tools for
#    the C code of ring), checked to run on this machine;
# 2. deploy/Dockerfile from it (WASMSCHED_BINARY=prebuilt: FROM scratch
#    only) with buildah: chroot isolation and vfs storage in a private
#    temporary store, so it needs no daemon, overlay mounts or user
#    namespaces, and leaves nothing behind but OUT (default
#    $CARGO_TARGET_DIR/image/wasmsched-VERSION.oci.tar);
# 3. a container from OUT, in which `wasmsched --version`, `simulate`
#    (with and without plugins) and `plugin check` run as the image's
#    non-root user: a plugin is compiled by the binary re-executing itself
#    and cached under the image's $HOME.
#
# Installs buildah and musl-tools (apt, as root) and the Rust target when
# missing. Push the archive with `skopeo copy oci-archive:OUT
# docker://REGISTRY/wasmsched:VERSION`, or load it with `podman load -i OUT`.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/apt.sh
. scripts/apt.sh
say() { echo "build-image: $*" >&2; }
fail() { say "$*"; exit 1; }

# apt_need PACKAGE COMMAND-OR-FILE
apt_need() {
  { have "$2" || [ -e "$2" ]; } && return 0
  say "installing $1"
  apt_get "$1"
  { have "$2" || [ -e "$2" ]; } || fail "could not install $1 (apt $1)"
}
apt_need buildah buildah
apt_need musl-tools musl-gcc
apt_need binutils readelf
apt_need ca-certificates /etc/ssl/certs/ca-certificates.crt
target=x86_64-unknown-linux-musl
if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
  say "adding the Rust target $target"
  rustup target add "$target" >&2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/wasmsched-image.XXXXXX")
bh() { buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs "$@"; }
cleanup() {
  bh rm -a >/dev/null 2>&1 || true
  bh rmi -a -f >/dev/null 2>&1 || true
  # Never delete through a mount left behind (a container's /dev or /proc).
  if grep -qF " $work/" /proc/self/mounts; then
    say "not removing $work: something is still mounted under it"
  else
    rm -rf --one-file-system "$work"
  fi
}
trap cleanup EXIT

# 1. The static binary.
start=$(date +%s)
cargo build --release --locked --target "$target" -p wasmsched
built=$(date +%s)
bin="${CARGO_TARGET_DIR:-target}/$target/release/wasmsched"
if readelf -lW "$bin" | grep -q INTERP || readelf -dW "$bin" | grep -q NEEDED; then
  fail "$bin is not static: a scratch image has no loader or libraries"
fi
mkdir "$work/context" "$work/home"
ctx="$work/context"
# Without the release profile's debug line tables; a backtrace still names functions.
strip --strip-debug -o "$ctx/wasmsched" "$bin"
cp /etc/ssl/certs/ca-certificates.crt "$ctx/"
version=$("$ctx/wasmsched" --version | awk '{print $2}')
[ -n "$version" ] || fail "$ctx/wasmsched --version printed no version"
# What the image must print: this binary's own output here, with a home of
# its own (the plugins' compiled cache).
host() { env -u XDG_CACHE_HOME HOME="$work/home" "$ctx/wasmsched" "$@" 2>"$work/host.log" ||
  { cat "$work/host.log" >&2; fail "wasmsched $* fails on this machine"; }; }
want_plain=$(host simulate)
want_plugins=$(host simulate --plugins plugins/prebuilt)

# 2. The image.
image="localhost/wasmsched:$version"
out="${1:-${CARGO_TARGET_DIR:-target}/image/wasmsched-$version.oci.tar}"
mkdir -p "$(dirname "$out")"
rm -f "$out"
bh build --isolation chroot --quiet -f deploy/Dockerfile \
  --build-arg WASMSCHED_BINARY=prebuilt -t "$image" "$ctx" >/dev/null
bh push --quiet "$image" "oci-archive:$out:wasmsched:$version"
unpacked=$(bh images --format '{{.Size}}' "$image")
imaged=$(date +%s)

# 3. Run it, from the archive alone.
bh rmi -f "$image" >/dev/null
ctr=$(bh from --quiet --name wasmsched-check "oci-archive:$out")
bh copy --quiet "$ctr" plugins/prebuilt /plugins
run() { bh run --isolation chroot "$ctr" -- /usr/local/bin/wasmsched "$@"; }
check() { # WHAT WANT GOT
  [ "$2" = "$3" ] || { say "$1: expected"; echo "$2" >&2; say "got"; echo "$3" >&2; exit 1; }
}
got=$(run --version)
echo "$got"
check "--version" "wasmsched $version" "$got"
got=$(run simulate)
echo "$got"
check "simulate" "$want_plain" "$got"
# Compiled by the compiler process (the binary re-executing itself).
got=$(run plugin check /plugins/node-price.wasm)
echo "$got"
grep -q '^plugin: *node-price ' <<<"$got" || fail "plugin check: no 'plugin: node-price' line"
got=$(run simulate --plugins /plugins)
check "simulate --plugins" "$want_plugins" "$got"
# Cached under the image's home, by its user.
root=$(bh mount "$ctr")
cached=$(find "$root/home/nonroot/.cache/wasmsched/compiled" -name '*.cwasm' -uid 65532 2>/dev/null | wc -l)
[ "$cached" -gt 0 ] || fail "no plugin compiled by uid 65532 in /home/nonroot/.cache/wasmsched/compiled"
bh umount "$ctr" >/dev/null
checked=$(date +%s)

say "binary $(( built - start )) s, image $(( imaged - built )) s, checks $(( checked - imaged )) s"
say "$image: $out, $(stat -c %s "$out" | awk '{printf "%.1f MB", $1 / 1e6}') compressed, $unpacked unpacked"
