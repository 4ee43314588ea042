# Sourced by the scripts that install what they need: `have COMMAND`, and
# `apt_get PACKAGE`, which installs a Debian package as root (refreshing the
# lists once if the first try fails) and says nothing, succeeding or not:
# callers check for what they needed.
have() { command -v "$1" >/dev/null 2>&1; }

apt_get() {
  if have apt-get && [ "$(id -u)" = 0 ]; then
    apt-get install -y -q "$1" >/dev/null 2>&1 ||
      { apt-get update -q >/dev/null && apt-get install -y -q "$1" >/dev/null; } || true
  fi
}
