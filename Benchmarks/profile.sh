#!/usr/bin/env bash
# profile.sh - where the instructions, calls and syscalls of one workload go. Instruction counts from callgrind
# are stable on a noisy shared machine, so they are what an optimisation should move.
#
#   Benchmarks/profile.sh heraldd WORKLOAD [MESSAGES]   heraldd under callgrind, driven by the C harness
#   Benchmarks/profile.sh library WORKLOAD [MESSAGES]   herald-bench (Herald on both ends) under callgrind
#   Benchmarks/profile.sh syscalls WORKLOAD [MESSAGES]  strace -c of heraldd (not under valgrind; strace slows
#                                                       syscalls, so batches grow: read counts as a lower bound)
#   Benchmarks/profile.sh perf WORKLOAD [MESSAGES]      perf stat (syscall tracepoints, context switches) of
#                                                       heraldd at full speed under the C harness
#   Benchmarks/profile.sh perf-library WORKLOAD [MESSAGES]  the same for the herald-bench process
#
# WORKLOAD: fanout-1, fanout-10, fanout-100, named. Needs compare.sh's build (or the same commands).
# Output: Benchmarks/build/profile-TARGET-WORKLOAD/ (callgrind.out, annotate.txt, calls.txt, strace.txt, run.json),
# and a summary on stdout. Everything it starts it stops.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${1:?target: heraldd, library or syscalls} WORKLOAD=${2:?workload} MESSAGES=${3:-20000}
BIN=${BIN:-$ROOT/.build-bench/release} BUILD=$ROOT/Benchmarks/build
DIR=$BUILD/profile-$TARGET-$WORKLOAD
rm -rf "$DIR" && mkdir -p "$DIR"
TMP=$(mktemp -d /tmp/herald-profile.XXXXXX)
PIDS=()
cleanup() { local p; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done; rm -rf "$TMP"; }
trap cleanup EXIT
wait_for() { local i; for i in $(seq 600); do eval "$1" >/dev/null 2>&1 && return 0; sleep 0.05; done; return 1; }
case $WORKLOAD in
fanout-1) ARGS="--subscribers 1" ;;
fanout-10) ARGS="--subscribers 10" ;;
fanout-100) ARGS="--subscribers 100" ;;
named) ARGS="--subscribers 100 --names 1000 --names-per-sub 10" ;;
*) echo "profile.sh: unknown workload $WORKLOAD" >&2; exit 64 ;;
esac
SOCK=$TMP/socket
CG="valgrind --tool=callgrind --dump-instr=no --callgrind-out-file=$DIR/callgrind.out"

case $TARGET in
heraldd) $CG "$BIN/heraldd" --socket "$SOCK" --log-level warning 2>"$DIR/valgrind.log" & ;;
*) "$BIN/heraldd" --socket "$SOCK" --log-level warning & ;;
esac
DAEMON=$!
PIDS+=("$DAEMON")
wait_for "[ -S $SOCK ]" || { echo "profile.sh: heraldd did not start" >&2; exit 1; }
PERF_EVENTS=task-clock,context-switches,raw_syscalls:sys_enter,syscalls:sys_enter_read,syscalls:sys_enter_sendmsg,syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_futex
if [ "$TARGET" = syscalls ]; then
    strace -c -f -o "$DIR/strace.txt" -p "$DAEMON" &
    STRACE=$!
    sleep 0.5
elif [ "$TARGET" = perf ]; then
    perf stat -e "$PERF_EVENTS" -o "$DIR/perf.txt" -p "$DAEMON" &
    STRACE=$!
    sleep 0.5
fi

# shellcheck disable=SC2086
case $TARGET in
perf-library)
    perf stat -e "$PERF_EVENTS" -o "$DIR/perf.txt" "$BIN/herald-bench" --workload "$WORKLOAD" --socket "$SOCK" \
        --messages "$MESSAGES" --duration 300 --timeout 600 >"$DIR/run.json" ;;
library)
    $CG "$BIN/herald-bench" --workload "$WORKLOAD" --socket "$SOCK" --messages "$MESSAGES" --duration 300 \
        --timeout 600 >"$DIR/run.json" 2>"$DIR/valgrind.log" ;;
*)
    timeout 600 "$BUILD/bench" --peer herald --addr "$SOCK" --broker-pid "$DAEMON" --workload "$WORKLOAD" \
        --messages "$MESSAGES" --timeout 550 $ARGS >"$DIR/run.json" ;;
esac
case $TARGET in syscalls | perf) kill -INT "$STRACE"; wait "$STRACE" 2>/dev/null ;; esac
kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null # heraldd exits cleanly on SIGTERM, so callgrind writes its file
PIDS=()

DELIVERED=$(jq -r .delivered "$DIR/run.json")
SENT=$(jq -r .messages_sent "$DIR/run.json")
echo "# $TARGET, $WORKLOAD: $SENT messages, $DELIVERED deliveries, ok $(jq -r .ok "$DIR/run.json")"
if [ "$TARGET" = syscalls ]; then
    awk -v d="$DELIVERED" -v m="$SENT" 'NR <= 2 || /total/ { print; next }
        $4 ~ /^[0-9]+$/ { printf "%s   (%.3f per delivery, %.3f per message)\n", $0, $4 / d, $4 / m; next } { print }' \
        "$DIR/strace.txt"
elif [ "$TARGET" = perf ] || [ "$TARGET" = perf-library ]; then
    awk -v d="$DELIVERED" -v m="$SENT" '$1 ~ /^[0-9,.]+$/ && $2 !~ /^(msec|seconds)$/ {
            n = $1; gsub(",", "", n); printf "%-32s %14s  %8.3f per delivery  %8.3f per message\n", $2, $1, n / d, n / m; next }
        /msec task-clock/ { n = $1; gsub(",", "", n); printf "%-32s %14s ms  %8.0f ns per delivery\n", "task-clock", $1, n * 1e6 / d }' \
        "$DIR/perf.txt"
else
    callgrind_annotate --inclusive=no "$DIR/callgrind.out" 2>/dev/null | head -60 >"$DIR/annotate.txt"
    callgrind_annotate --inclusive=yes "$DIR/callgrind.out" 2>/dev/null | head -60 >"$DIR/inclusive.txt"
    python3 "$ROOT/Benchmarks/callgrind_calls.py" "$DIR/callgrind.out" "$DELIVERED" >"$DIR/calls.txt"
    head -3 "$DIR/calls.txt"
    echo "## top functions by own instructions (whole run; divide by $DELIVERED for per delivery)"
    awk '/file:function/ { on = 1; getline; next } on && NF { print } ' "$DIR/annotate.txt" | head -25
    echo "## runtime calls per delivery"
    tail -n +4 "$DIR/calls.txt"
fi
