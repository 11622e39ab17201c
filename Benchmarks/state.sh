#!/usr/bin/env bash
# state.sh - what heraldd's state log (issue 31) costs a post, in instructions (callgrind: stable on a shared
# machine) and in syscalls (strace -c), with the log (--state-file) and without (--no-state).
#
#   Benchmarks/state.sh [COUNT]   COUNT posts (default 20000) to 100 names, retained and not
#
# Needs the release heraldd of compare.sh's build (BIN, default .build-bench/release), valgrind, strace, python3.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
COUNT=${1:-20000}
BIN=${BIN:-$ROOT/.build-bench/release}
TMP=$(mktemp -d /tmp/herald-state.XXXXXX)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
# valgrind 3.19 gives up on the DWARF of Swift 6.3's release builds ("Possibly corrupted debuginfo"): it runs a copy
# without debug sections, which executes the same instructions.
objcopy --strip-debug "$BIN/heraldd" "$TMP/heraldd" || exit 1
wait_for() { local i; for i in $(seq 2400); do [ -S "$1" ] && return 0; sleep 0.05; done; return 1; } # valgrind starts slowly

run() { # run TOOL STATE RETAIN: one daemon under TOOL (callgrind or strace), COUNT posts, prints the figure
    local tool=$1 state=$2 retain=$3 dir=$TMP/$1-$2-$3
    mkdir -p -m 700 "$dir"
    local flags=(--socket "$dir/s" --no-plugins --no-send-batching --log-level error)
    [ "$state" = on ] && flags+=(--state-file "$dir/s.state") || flags+=(--no-state)
    case $tool in
    callgrind) valgrind --tool=callgrind --callgrind-out-file="$dir/out" "$TMP/heraldd" "${flags[@]}" 2>/dev/null & ;;
    strace) strace -f -c -o "$dir/out" "$BIN/heraldd" "${flags[@]}" 2>/dev/null & ;;
    esac
    PID=$!
    wait_for "$dir/s" || { echo "heraldd did not start" >&2; return 1; }
    python3 "$ROOT/Benchmarks/state_client.py" "$dir/s" "$COUNT" "$retain"
    # Under strace, heraldd is strace's child: it gets the SIGTERM, and strace reports when it exits.
    if [ "$tool" = strace ]; then kill -TERM $(pgrep -P "$PID"); else kill -TERM "$PID"; fi
    wait "$PID" 2>/dev/null; PID=
    case $tool in
    callgrind) callgrind_annotate "$dir/out" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }' ;;
    strace) awk '$NF == "pwrite64" { print $4 }' "$dir/out" | head -1 ;;
    esac
    [ "$state" = on ] && [ -f "$dir/s.state" ] && echo "log bytes $(stat -c %s "$dir/s.state")" >&2
}

for retain in 1 0; do
    off=$(run callgrind off $retain) on=$(run callgrind on $retain)
    echo "retain=$retain posts=$COUNT instructions: --no-state $off, --state-file $on," \
        "added per post $(( (on - off) / COUNT ))"
done
echo "pwrite calls for $COUNT retained posts (strace -c): $(run strace on 1)"
