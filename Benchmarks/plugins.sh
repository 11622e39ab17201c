#!/usr/bin/env bash
# plugins.sh - issue 27: what plugins cost heraldd, release build, on temporary folders and a temporary socket.
#
# 1. Scale: N plugins (default 2000, each `/bin/sleep 1000`, Activation=start). `herald status` is run back to back
#    all through start-up, then all through a reload of every file (each changed, so each plugin restarts); the
#    slowest answer of each phase is printed beside the slowest with no plugins. Then SIGTERM, timed to exit.
# 2. Flood: herald-bench's latency workload (10,000 posts/s) alone, then beside a plugin writing stderr as fast as
#    it can (`yes`): p50 and p99 of each, and heraldd's CPU during the flood with no client.
# 3. One 100 MB line with no newline: heraldd's CPU to read it.
#
# Usage: Benchmarks/plugins.sh            (N=500 SKIP_BUILD=1 for a quicker look;
#        HERALDD=/path/to/an/earlier/heraldd to measure another daemon with the same clients)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$ROOT/.build-bench/release}
HERALDD=${HERALDD:-$BIN/heraldd}
N=${N:-2000}
FLOOD_SECONDS=${FLOOD_SECONDS:-5}
TMP=$(mktemp -d /tmp/hplug.XXXXXX)
log() { echo "plugins.sh: $*" >&2; }
# shellcheck source=common.sh
source "$ROOT/Benchmarks/common.sh"

if [ -z "${SKIP_BUILD:-}" ]; then
    for product in heraldd herald herald-bench; do
        (cd "$ROOT" && swift build -c release --scratch-path .build-bench --product $product >&2) || exit 1
    done
fi

SOCKET=$TMP/socket
export HERALD_SOCKET=$SOCKET
export XDG_CONFIG_HOME=$TMP/c XDG_DATA_DIRS=$TMP/d
PLUGINS=$XDG_CONFIG_HOME/herald/plugins
mkdir -p "$PLUGINS" "$XDG_DATA_DIRS/herald/plugins"

now_us() { echo $(($(date +%s%N) / 1000)); }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; } # utime + stime, in clock ticks
TICKS=$(getconf CLK_TCK)
children() { cat /proc/"$1"/task/*/children 2>/dev/null | wc -w; }

start_daemon() {
    "$HERALDD" --socket "$SOCKET" --log-level info 2>"$TMP/heraldd.log" &
    DAEMON=$!
    PIDS+=("$DAEMON")
    wait_for "[ -S $SOCKET ] && '$BIN/herald' status" || { log "heraldd did not start"; exit 1; }
}

# stop_daemon: SIGTERM, and the time to its exit in STOPPED_MS (not a $(...) subshell: `wait` there has no child).
stop_daemon() {
    local began ended
    began=$(now_us)
    kill -TERM "$DAEMON"
    wait "$DAEMON" 2>/dev/null
    ended=$(now_us)
    forget "$DAEMON"
    STOPPED_MS=$(((ended - began) / 1000))
}

# status_while CONDITION: runs `herald status` back to back while CONDITION holds; prints "COUNT SLOWEST_MS".
status_while() {
    local slowest=0 count=0 t0 t1
    while eval "$1"; do
        t0=$(now_us)
        "$BIN/herald" status >/dev/null || log "herald status failed"
        t1=$(now_us)
        [ $((t1 - t0)) -gt $slowest ] && slowest=$((t1 - t0))
        count=$((count + 1))
    done
    echo "$count $((slowest / 1000)).$(((slowest % 1000) / 100))"
}

# 1. Scale
start_daemon
read -r _ idle <<<"$(status_while '[ $count -lt 20 ]')"
stop_daemon
for i in $(seq "$N"); do
    printf '[Plugin]\nExec=/bin/sleep 1000\nActivation=start\n' >"$PLUGINS/p$i.plugin"
done
start_daemon
# A client posting 10,000 a second to its own subscription all through start-up: heraldd's own answer times,
# apart from the CLI's process start, which the machine's load (2,000 execs) slows as much as anything.
"$BIN/herald-bench" --workload latency --socket "$SOCKET" --duration 3 >"$TMP/startup-bench" 2>/dev/null &
BENCH=$!
read -r startCount startSlowest <<<"$(status_while "[ \$(children $DAEMON) -lt $N ]")"
wait $BENCH
for i in $(seq "$N"); do
    printf '[Plugin]\nDescription=changed\nExec=/bin/sleep 1000\nActivation=start\n' >"$PLUGINS/p$i.plugin"
done
kill -HUP "$DAEMON"
read -r reloadCount reloadSlowest <<<"$(status_while "[ \$(grep -c 'started, pid' $TMP/heraldd.log) -lt $((2 * N)) ]")"
stop_daemon
sigterm=$STOPPED_MS
field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" | head -1; }
echo "scale: a client's round trips during start-up: p50 $(field lat_p50_us <"$TMP/startup-bench") us," \
    "p99 $(field lat_p99_us <"$TMP/startup-bench") us, max $(field lat_max_us <"$TMP/startup-bench") us"
echo "scale: $N plugins; herald status slowest: ${idle} ms with none, ${startSlowest} ms during start-up" \
    "($startCount answers), ${reloadSlowest} ms during a reload of every file ($reloadCount answers);" \
    "SIGTERM to exit ${sigterm} ms"
rm -f "$PLUGINS"/*.plugin

# 2. Flood
printf '#!/bin/sh\nexec yes flooding >&2\n' >"$TMP/flood.sh"
printf '#!/bin/sh\nhead -c 100000000 /dev/zero | tr "\\0" x\n' >"$TMP/line.sh"
chmod 755 "$TMP/flood.sh" "$TMP/line.sh"
printf '[Plugin]\nExec=%s\nActivation=manual\nRestart=no\n' "$TMP/flood.sh" >"$PLUGINS/flood.plugin"
printf '[Plugin]\nExec=%s\nActivation=manual\nRestart=no\n' "$TMP/line.sh" >"$PLUGINS/line.plugin"
start_daemon
bench() { "$BIN/herald-bench" --workload latency --socket "$SOCKET" --broker-pid "$DAEMON" --duration 3 2>/dev/null; }
quiet=$(bench)
"$BIN/herald" plugins start flood >/dev/null
before=$(cpu_ticks "$DAEMON")
sleep "$FLOOD_SECONDS"
after=$(cpu_ticks "$DAEMON")
floodCPU=$(awk -v t=$((after - before)) -v hz="$TICKS" -v s="$FLOOD_SECONDS" 'BEGIN { printf "%.1f", 100 * t / hz / s }')
flooded=$(bench)
"$BIN/herald" plugins stop flood >/dev/null
echo "flood: p50 $(field lat_p50_us <<<"$quiet") us and p99 $(field lat_p99_us <<<"$quiet") us alone;" \
    "p50 $(field lat_p50_us <<<"$flooded") us and p99 $(field lat_p99_us <<<"$flooded") us beside a yes flood" \
    "on stderr; heraldd CPU with the flood alone ${floodCPU} % of a core"

# 3. One 100 MB line
before=$(cpu_ticks "$DAEMON")
began=$(now_us)
"$BIN/herald" plugins start line >/dev/null
wait_for_line() { grep -q 'plugin line: pid [0-9]* exited 0' "$TMP/heraldd.log"; }
WAIT_TRIES=6000 wait_for wait_for_line || log "the 100 MB line did not end"
ended=$(now_us)
after=$(cpu_ticks "$DAEMON")
echo "line: 100 MB with no newline read in $(((ended - began) / 1000)) ms, heraldd CPU" \
    "$(awk -v t=$((after - before)) -v hz="$TICKS" 'BEGIN { printf "%.2f", t / hz }') s"
stop_daemon
