#!/bin/sh
# Installs the tools that the desktop-integration tests run for real, and only those missing:
# systemd-socket-activate and systemd-analyze (systemd), dbus-daemon and dbus-monitor (dbus,
# dbus-bin), gdbus (libglib2.0-bin), groff (groff-base), the shells the completions are for
# (bash, zsh, fish), desktop-file-validate (desktop-file-utils) and mosquitto (the MQTT bridge's tests start
# their own on a free port; the package's service, where it starts, is not used) and python3-dbusmock (the D-Bus
# client's tests start its upower and logind templates on a private bus) and chromium (`herald dashboard`'s tests load
# the page in it, headless, and drive it over the DevTools protocol).
# Debian and Ubuntu; run as root (CI is). `apt-get update` runs only when something is missing.
set -eu

missing=""
need() {
    command -v "$1" >/dev/null 2>&1 || missing="$missing $2"
}
need systemd-socket-activate systemd
need systemd-analyze systemd
need dbus-daemon dbus
need dbus-monitor dbus-bin
need gdbus libglib2.0-bin
need groff groff-base
need bash bash
need zsh zsh
need fish fish
need desktop-file-validate desktop-file-utils
need mosquitto mosquitto
need chromium chromium
# python-dbusmock is a Python module, not a command: the D-Bus client's tests run `python3 -m dbusmock`.
python3 -c 'import dbusmock' >/dev/null 2>&1 || missing="$missing python3-dbusmock"

if [ -z "$missing" ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-test-tools: missing:$missing, and there is no apt-get to install them" >&2
    exit 1
fi
# One package may provide several commands: install each once.
packages=$(printf '%s\n' $missing | sort -u | tr '\n' ' ')
echo "install-test-tools: installing $packages" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $packages >/dev/null
