#!/usr/bin/env bash
# state.sh - what heraldd's state log (issue 31) costs a post: in instructions (callgrind: stable on a shared
# machine), in time (the median of many posts, timed one at a time, with the log and without, in the same run) and
# in syscalls (strace -c), with the log in a file (--state-file), in a memfd (a stand-in for systemd's descriptor
# store, as under systemd 254 or later) and without (--no-state).
#
#   Benchmarks/state.sh [COUNT]   COUNT posts (default 20000) to 100 names, retained and not
#
# Env: TIMED=20000 posts timed on each daemon (0 skips the timing); PARTS="callgrind timing strace"; BEFORE=a heraldd
# (the build before a change) timed too, in the same rounds, with file and memfd.
# Needs the release heraldd of compare.sh's build (BIN, default .build-bench/release), valgrind, strace, python3.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
COUNT=${1:-20000}
TIMED=${TIMED:-20000}
PARTS=${PARTS:-callgrind timing strace}
BIN=${BIN:-$ROOT/.build-bench/release}
# On a tmpfs, as $XDG_RUNTIME_DIR is, where --state-file lies by default (/tmp may be a disk's file system).
SHM=/dev/shm; [ -d "$SHM" ] && [ -w "$SHM" ] || SHM=/tmp
TMP=$(mktemp -d "$SHM/herald-state.XXXXXX")
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
# valgrind 3.19 gives up on the DWARF of Swift 6.3's release builds ("Possibly corrupted debuginfo"): it runs a copy
# without debug sections, which executes the same instructions.
objcopy --strip-debug "$BIN/heraldd" "$TMP/heraldd" || exit 1
wait_for() { local i; for i in $(seq 2400); do [ -S "$1" ] && return 0; sleep 0.05; done; return 1; } # valgrind starts slowly

# state_flags STATE DIR: the environment (ENVS) and flags (FLAGS) of a daemon keeping STATE (off, file or memfd) in
# DIR; for memfd, starts the descriptor store's stand-in (STUB).
state_flags() {
    local state=$1 dir=$2
    FLAGS=(--socket "$dir/s" --no-plugins --no-send-batching --log-level error)
    ENVS=(env -u NOTIFY_SOCKET -u FDSTORE)
    STUB=
    case $state in
    off) FLAGS+=(--no-state) ;;
    file) FLAGS+=(--state-file "$dir/s.state") ;;
    memfd)
        # Not on this function's stdout: a caller reading it through a pipe would wait for the stub to end.
        python3 "$ROOT/Benchmarks/fdstore_stub.py" "$dir/notify" >/dev/null 2>&1 &
        STUB=$!
        PIDS+=($STUB)
        for _ in $(seq 100); do [ -S "$dir/notify" ] && break; sleep 0.05; done
        ENVS=(env NOTIFY_SOCKET="$dir/notify" FDSTORE=8)
        ;;
    esac
}

run() { # run TOOL STATE RETAIN: one daemon under TOOL (callgrind or strace), COUNT posts, prints the figure
    local tool=$1 state=$2 retain=$3 dir=$TMP/$1-$2-$3 pid
    mkdir -p -m 700 "$dir"
    state_flags "$state" "$dir"
    case $tool in
    callgrind) "${ENVS[@]}" valgrind --tool=callgrind --callgrind-out-file="$dir/out" "$TMP/heraldd" "${FLAGS[@]}" \
        2>/dev/null & ;;
    strace) "${ENVS[@]}" strace -f -c -o "$dir/out" "$BIN/heraldd" "${FLAGS[@]}" 2>/dev/null & ;;
    esac
    pid=$!
    wait_for "$dir/s" || { echo "heraldd did not start" >&2; return 1; }
    python3 "$ROOT/Benchmarks/state_client.py" "$dir/s" "$COUNT" "$retain"
    # Under strace, heraldd is strace's child: it gets the SIGTERM, and strace reports when it exits.
    if [ "$tool" = strace ]; then kill -TERM $(pgrep -P "$pid"); else kill -TERM "$pid"; fi
    wait "$pid" 2>/dev/null
    [ -n "$STUB" ] && kill "$STUB" 2>/dev/null
    case $tool in
    callgrind) callgrind_annotate "$dir/out" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }' ;;
    strace) awk '$1 ~ /^[0-9.]+$/ && NF >= 5 { print $NF, $4 }' "$dir/out" | sort ;;
    esac
    [ "$state" = file ] && [ -f "$dir/s.state" ] && echo "log bytes $(stat -c %s "$dir/s.state")" >&2
}

if [[ " $PARTS " == *" callgrind "* ]]; then
    for retain in 1 0; do
        off=$(run callgrind off $retain) on=$(run callgrind file $retain) memfd=$(run callgrind memfd $retain)
        echo "retain=$retain posts=$COUNT instructions: --no-state $off, --state-file $on, memfd $memfd;" \
            "added per post $(( (on - off) / COUNT )) (file), $(( (memfd - off) / COUNT )) (memfd)"
    done
fi

if [[ " $PARTS " == *" timing "* ]] && [ "$TIMED" -gt 0 ]; then
    daemons=()
    for state in off file memfd; do
        dir=$TMP/timed-$state
        mkdir -p -m 700 "$dir"
        state_flags "$state" "$dir"
        "${ENVS[@]}" "$BIN/heraldd" "${FLAGS[@]}" &
        PIDS+=($!)
        daemons+=("$state=$dir/s:$!")
        wait_for "$dir/s" || { echo "heraldd ($state) did not start" >&2; exit 1; }
    done
    # BEFORE=HERALDD: another heraldd (the build before a change) timed in the same rounds, with file and memfd.
    for state in ${BEFORE:+file memfd}; do
        dir=$TMP/timed-before-$state
        mkdir -p -m 700 "$dir"
        state_flags "$state" "$dir"
        "${ENVS[@]}" "$BEFORE" "${FLAGS[@]}" &
        PIDS+=($!)
        daemons+=("$state-before=$dir/s:$!")
        wait_for "$dir/s" || { echo "heraldd ($state, before) did not start" >&2; exit 1; }
    done
    echo "$TIMED retained posts timed one at a time on each daemon, interleaved, then in writes of 100:"
    python3 "$ROOT/Benchmarks/state_timing.py" "$TIMED" "${daemons[@]}"
fi

if [[ " $PARTS " == *" strace "* ]]; then
    # The syscalls heraldd made for COUNT retained posts, with the log in a memfd and without: the rows that differ.
    join -a1 -a2 -e0 -o 0,1.2,2.2 <(run strace memfd 1) <(run strace off 1) \
        | awk -v n="$COUNT" 'BEGIN { print "syscalls for " n " retained posts (strace -c): name, memfd, --no-state" }
            $2 != $3 { print "  " $1, $2, $3 }'
    echo "pwrite calls for $COUNT retained posts to --state-file: $(run strace file 1 | awk '$1 == "pwrite64" { print $2 }')"
fi
