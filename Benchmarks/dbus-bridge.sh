#!/usr/bin/env bash
# dbus-bridge.sh - issue 30's cost figures for herald-dbus-bridge, in release:
#   idle:    context switches (voluntary + involuntary, every thread, /proc/PID/task/*/status) of the bridge and of
#            heraldd over IDLE=60 s, with every source active (logind with this session, UPower, NetworkManager, a
#            notification server, a screen saver, an MPRIS player) and nothing happening: the target is 0;
#   latency: COUNT=2000 PropertiesChanged of an MPRIS player, one at a time, each timed until a Herald subscriber of
#            media.player.bench has it (herald-dbus-bench bridge): the target is a median under 1 ms;
#   memory:  the bridge's RSS at start and after the rest (VmRSS, VmHWM): the target is under 20 MiB; and at start
#            once more, built with --static-swift-stdlib (STATIC_BUILD=0 leaves that out). Whether it maps the whole of
#            Foundation or ICU (it must not: HeraldCore imports FoundationEssentials at most).
#
#   Benchmarks/dbus-bridge.sh            about 90 s
#   IDLE=10 COUNT=500 Benchmarks/dbus-bridge.sh
#   BRIDGE_BINARY=/path/to/herald-dbus-bridge Benchmarks/dbus-bridge.sh   measures that build of the bridge instead
#            (another commit's, for a before/after in one session), with this tree's heraldd and herald-dbus-bench
#
#   flood:   FLOOD=100000 PropertiesChanged at 100,000 a second from an MPRIS player (herald-dbus-bench flood),
#            the bridge's CPU over it and the time until the retained value holds the last one.
#
# Two private dbus-daemons play the session and the system bus; the services are python-dbusmock's templates
# (/usr/bin/python3: a pyenv python3 first in PATH does not see the system's packages). Everything it starts it
# stops (trap EXIT). The release products go to .build-bench.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
IDLE=${IDLE:-60} COUNT=${COUNT:-2000}
SWIFT_BIN=$ROOT/.build-bench/release
PYTHON=${PYTHON:-/usr/bin/python3}
log() { echo "dbus-bridge.sh: $*" >&2; }
TMP=$(mktemp -d /tmp/herald-dbus-bench.XXXXXX) # mode 0700, as heraldd wants its socket directory
WAIT_TRIES=400
. "$ROOT/Benchmarks/common.sh"
fail() { log "$*"; for f in "$TMP"/*.log; do [ -s "$f" ] && { echo "== $f" >&2; tail -20 "$f" >&2; }; done; exit 1; }

command -v dbus-daemon >/dev/null && command -v gdbus >/dev/null && "$PYTHON" -c 'import dbusmock' 2>/dev/null \
    || { log "needs dbus-daemon, gdbus and python3-dbusmock: sh contrib/ci/install-test-tools.sh"; exit 1; }

log "building heraldd, herald-dbus-bridge and herald-dbus-bench (release, .build-bench)"
for product in heraldd herald-dbus-bridge herald-dbus-bench; do
    swift build -c release --scratch-path "$ROOT/.build-bench" --product "$product" >"$TMP/build.log" 2>&1 \
        || { cat "$TMP/build.log" >&2; exit 1; }
done

now_ns() { local t=$EPOCHREALTIME; echo $(( ${t/./} * 1000 )); }
HZ=$(getconf CLK_TCK)
ticks() { awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$1/stat"; } # user + system clock ticks
switches() { # switches PID: voluntary + involuntary context switches of every thread
    cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ {n += $2} END {print n + 0}'
}

# ---- the buses, heraldd, the services ----
for bus in session system; do
    dbus-daemon --session --nofork --nopidfile --print-address=1 --address="unix:path=$TMP/$bus-bus" \
        >"$TMP/$bus-bus.address" 2>"$TMP/$bus-bus.log" &
    PIDS+=($!)
done
wait_for "[ -S $TMP/session-bus ] && [ -S $TMP/system-bus ]" || fail "dbus-daemon did not start"
export DBUS_SESSION_BUS_ADDRESS="unix:path=$TMP/session-bus" DBUS_SYSTEM_BUS_ADDRESS="unix:path=$TMP/system-bus"
export HERALD_SOCKET="$TMP/socket" XDG_SESSION_ID=c1 USER=alice
"$SWIFT_BIN/heraldd" --socket "$HERALD_SOCKET" --no-plugins 2>"$TMP/heraldd.log" &
HERALDD=$!
PIDS+=($HERALDD)
wait_for "[ -S $HERALD_SOCKET ]" || fail "heraldd did not start"

mock() { # mock NAME --system|--session ARGS...: dbusmock, waited for until it owns NAME
    local name=$1 bus=$2
    shift 2
    "$PYTHON" -m dbusmock "$bus" "$@" >"$TMP/mock-$name.log" 2>&1 &
    PIDS+=($!)
    wait_for "gdbus call $bus -d org.freedesktop.DBus -o /org/freedesktop/DBus -m org.freedesktop.DBus.GetNameOwner $name" \
        || fail "dbusmock never owned $name"
}
mock org.freedesktop.login1 --system -t logind
gdbus call --system -d org.freedesktop.login1 -o /org/freedesktop/login1 -m org.freedesktop.DBus.Mock.AddSession \
    c1 seat0 1000 alice true >/dev/null || fail "AddSession"
mock org.freedesktop.UPower --system -t upower -p '{"OnBattery": true}'
mock org.freedesktop.NetworkManager --system -t networkmanager
mock org.freedesktop.Notifications --session -t notification_daemon
cat >"$TMP/screensaver.py" <<'PY'
BUS_NAME = 'org.gnome.ScreenSaver'
MAIN_OBJ = '/org/gnome/ScreenSaver'
MAIN_IFACE = 'org.gnome.ScreenSaver'
SYSTEM_BUS = False
def load(mock, parameters):
    mock.AddMethod(MAIN_IFACE, 'GetActive', '', 'b', 'ret = False')
PY
mock org.gnome.ScreenSaver --session -t "$TMP/screensaver.py"

"${BRIDGE_BINARY:-$SWIFT_BIN/herald-dbus-bridge}" 2>"$TMP/bridge.log" &
BRIDGE=$!
PIDS+=($BRIDGE)
wait_for "grep -q 'every source read' $TMP/bridge.log" || fail "the bridge did not read its sources"
log "$(grep 'every source read' "$TMP/bridge.log")"
FULL=$(grep -oE 'lib(Foundation|FoundationInternationalization|_FoundationICU|icu[a-z0-9]*)\.so[.0-9]*' "/proc/$BRIDGE/maps" | sort -u | tr '\n' ' ')
echo "libraries of the whole of Foundation mapped by herald-dbus-bridge: ${FULL:-none}"
echo "memory at start: herald-dbus-bridge $(awk '/VmRSS/ {printf "VmRSS %.1f MiB", $2 / 1024}' /proc/$BRIDGE/status), $(awk '/^Rss|^Pss:|Anon:/ {printf "%s %.1f MiB ", $1, $2 / 1024}' /proc/$BRIDGE/smaps_rollup)"

# ---- latency (the MPRIS player is herald-dbus-bench itself) ----
LATENCY=$(timeout 300 "$SWIFT_BIN/herald-dbus-bench" bridge "$COUNT") || fail "herald-dbus-bench bridge failed"
echo "$LATENCY"

# ---- flood: 100,000 PropertiesChanged a second from a player; the bridge's CPU over it ----
T0=$(ticks $BRIDGE) N0=$(now_ns)
FLOOD=$(timeout 300 "$SWIFT_BIN/herald-dbus-bench" flood "${FLOOD:-100000}") || fail "herald-dbus-bench flood failed"
T1=$(ticks $BRIDGE) N1=$(now_ns)
echo "$FLOOD"
echo "flood: the bridge used $(awk -v a="$T0" -v b="$T1" -v hz="$HZ" 'BEGIN {printf "%.2f", (b - a) / hz}') s of CPU in $(awk -v a="$N0" -v b="$N1" 'BEGIN {printf "%.2f", (b - a) / 1e9}') s, RSS $(awk '/VmRSS/ {printf "%.1f MiB", $2 / 1024}' /proc/$BRIDGE/status)"
FLOODS=$(grep -c "signals came faster" "$TMP/bridge.log")
echo "flood: the bridge read every source again $FLOODS times (its mailbox overflowed)"

# ---- idle: a player stays on the bus, so that every source is active ----
cat >"$TMP/player.py" <<'PY'
import dbus
BUS_NAME = 'org.mpris.MediaPlayer2.idle'
MAIN_OBJ = '/org/mpris/MediaPlayer2'
MAIN_IFACE = 'org.mpris.MediaPlayer2.Player'
SYSTEM_BUS = False
def load(mock, parameters):
    mock.AddProperties(MAIN_IFACE, dbus.Dictionary({'PlaybackStatus': 'Paused',
        'Metadata': dbus.Dictionary({}, signature='sv')}, signature='sv'))
PY
mock org.mpris.MediaPlayer2.idle --session -t "$TMP/player.py"
wait_for "grep -q 'org.mpris.MediaPlayer2.idle appeared' $TMP/bridge.log" || fail "the bridge did not see the player"
sleep 2
B0=$(switches $BRIDGE) H0=$(switches $HERALDD)
log "idle: counting context switches for $IDLE s"
sleep "$IDLE"
B1=$(switches $BRIDGE) H1=$(switches $HERALDD)
echo "idle $IDLE s with every source active: herald-dbus-bridge $((B1 - B0)) wakes, heraldd $((H1 - H0)) wakes"
awk '/VmRSS|VmHWM/ {printf "%s %.1f MiB\n", $1, $2 / 1024}' "/proc/$BRIDGE/status" | sed 's/^/herald-dbus-bridge /'

[ "${STATIC_BUILD:-1}" = 0 ] && exit 0

# ---- memory of the bridge linked with the Swift runtime and Foundation statically ----
# Dynamically linked, most of the RSS is the shared libraries' clean pages (libswiftCore, FoundationEssentials...),
# which every Swift process on the machine shares; statically linked, only what the bridge uses is mapped.
log "building herald-dbus-bridge with --static-swift-stdlib (.build-bench-static)"
swift build -c release --static-swift-stdlib --scratch-path "$ROOT/.build-bench-static" --product herald-dbus-bridge \
    >"$TMP/build-static.log" 2>&1 || { cat "$TMP/build-static.log" >&2; exit 1; }
"$ROOT/.build-bench-static/release/herald-dbus-bridge" 2>"$TMP/bridge-static.log" &
STATIC=$!
PIDS+=($STATIC)
wait_for "grep -q 'every source read' $TMP/bridge-static.log" || fail "the static bridge did not read its sources"
echo "memory at start, --static-swift-stdlib: herald-dbus-bridge $(awk '/VmRSS/ {printf "VmRSS %.1f MiB", $2 / 1024}' /proc/$STATIC/status), $(awk '/^Rss|^Pss:|Anon:/ {printf "%s %.1f MiB ", $1, $2 / 1024}' /proc/$STATIC/smaps_rollup)"
