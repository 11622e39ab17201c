#!/usr/bin/env bash
# compare.sh - heraldd beside Redis and brokerless ZeroMQ, measured by the same C client (shared/bench/peers), plus the whole Swift
# stack (herald-bench: its subscriber connections read by a Herald.ReaderGroup of one thread per core, as the harness's
# subscriber reads them all with one epoll loop; also with a reader thread per connection), the socketpair ceiling (uds_limit), the one-hop reference (relay_limit: the least a
# broker in C can do per post, under the same client) and the idle-connection memory check. Prints a markdown
# table of medians with the ratios against issue 6's targets.
#
#   Benchmarks/compare.sh                  3 rounds, about 6 minutes on 2 quiet cores
#   REPS=1 DURATION=1 Benchmarks/compare.sh   a quicker look
#
# Env: REPS=3 rounds; DURATION=2 s per throughput run; IDLE_CONNS=10000 (0 skips the memory check);
#      PEERS_DIR (default: ../shared/bench/peers beside the repository); OUT=Benchmarks/build/results.jsonl;
#      NOISE_PCT=10: a run where other processes plus hypervisor steal took more than this % of a core is
#      marked "noisy"; medians use the runs that were not, where there are any.
#      QUIET_WAIT=3 QUIET_BUDGET=60: before each run, wait (bounded) for other processes to use < QUIET_PCT=15 %.
#      WORKLOADS="fanout-1 fanout-10 fanout-100 latency named": the workloads of each round.
#      BEFORE_BIN=DIR: also run DIR/herald-bench (an earlier build) in each round, as "herald-bench-before", so a
#      change to the library is measured against its predecessor in the same rounds.
#      HERALDD_BEFORE=PATH: also run PATH (an earlier heraldd) in each round, measured by the C client beside heraldd
#      as "heraldd-before", so a change to the daemon is measured against its predecessor in the same rounds.
#      HERALDD_BEFORE_ARGS="--no-state": words added to HERALDD_BEFORE's arguments: with HERALDD_BEFORE set to this
#      heraldd, an option's cost in the same rounds (the state log: heraldd keeps one, heraldd-before does not).
# Everything it starts it stops (trap EXIT); every run is bounded by timeout(1).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
REPS=${REPS:-3} DURATION=${DURATION:-2} IDLE_CONNS=${IDLE_CONNS:-10000}
PEERS_DIR=${PEERS_DIR:-$ROOT/../shared/bench/peers}
BUILD=$ROOT/Benchmarks/build
OUT=${OUT:-$BUILD/results.jsonl}
NOISE_PCT=${NOISE_PCT:-10} QUIET_PCT=${QUIET_PCT:-15} QUIET_WAIT=${QUIET_WAIT:-3} QUIET_BUDGET=${QUIET_BUDGET:-60}
SWIFT_BIN=$ROOT/.build-bench/release
log() { echo "compare.sh: $*" >&2; }

# ---- measuring tools: installed if missing (Debian packages), never part of the product ----
deps() {
    local missing=0 b
    for b in redis-server gcc make pkg-config jq timeout; do command -v "$b" >/dev/null || missing=1; done
    pkg-config --exists hiredis libzmq libsystemd 2>/dev/null || missing=1 # the harness links all its peers
    [ "$missing" = 0 ] && return 0
    apt_install redis-server libhiredis-dev libzmq3-dev libsystemd-dev jq gcc make pkg-config coreutils
}

TMP=$(mktemp -d /tmp/herald-compare.XXXXXX) # mode 0700, as heraldd wants its socket directory
. "$ROOT/Benchmarks/common.sh"

start_heraldd() { # start_heraldd DIR [ARGS...]: sets HERALD_PID, HERALD_SOCK
    HERALD_SOCK=$1/socket
    shift
    "$SWIFT_BIN/heraldd" --socket "$HERALD_SOCK" --log-level warning "$@" 2>>"$TMP/heraldd.log" &
    HERALD_PID=$!
    PIDS+=("$HERALD_PID")
    wait_for "[ -S $HERALD_SOCK ]"
}
start_before() { # HERALDD_BEFORE, on a socket of its own
    BEFORE_SOCK=$TMP/before$rep/socket
    # shellcheck disable=SC2086 # HERALDD_BEFORE_ARGS is a list of words
    "$HERALDD_BEFORE" --socket "$BEFORE_SOCK" --log-level warning ${HERALDD_BEFORE_ARGS:-} 2>>"$TMP/heraldd-before.log" &
    BEFORE_PID=$!
    PIDS+=("$BEFORE_PID")
    wait_for "[ -S $BEFORE_SOCK ]"
}
start_relay() { # the one-hop reference speaks wire.md, so the harness measures it through peer_herald.c
    RELAY_SOCK=$TMP/relay$rep.sock
    "$BUILD/relay_limit" "$RELAY_SOCK" 2>>"$TMP/relay.log" &
    RELAY_PID=$!
    PIDS+=("$RELAY_PID")
    wait_for "[ -S $RELAY_SOCK ]"
}
start_redis() {
    REDIS_SOCK=$TMP/redis.sock
    redis-server --port 0 --unixsocket "$REDIS_SOCK" --unixsocketperm 700 --save '' --appendonly no \
        --daemonize no --logfile "$TMP/redis.log" &
    REDIS_PID=$!
    PIDS+=("$REDIS_PID")
    wait_for "[ -S $REDIS_SOCK ]"
}

# Busy % of all CPUs over 0.3 s, from exact idle time, as run.sh takes it.
busy_pct() {
    local n d e i0 t0 w
    n=$(nproc)
    read -r _ _ _ _ d e _ < /proc/stat; i0=$((d + e)); t0=${EPOCHREALTIME/./}
    sleep 0.3
    read -r _ _ _ _ d e _ < /proc/stat
    w=$(( (${EPOCHREALTIME/./} - t0) * n / 10000 ))
    w=$(( 100 * (w - (d + e - i0)) / (w > 0 ? w : 1) ))
    echo $(( w < 0 ? 0 : w ))
}
quiet_spent=0
wait_quiet() {
    local t0=$SECONDS
    while [ "$(busy_pct)" -gt "$QUIET_PCT" ]; do
        (( SECONDS - t0 >= QUIET_WAIT || quiet_spent + SECONDS - t0 >= QUIET_BUDGET )) && break
    done
    quiet_spent=$((quiet_spent + SECONDS - t0))
}

emit() { # adds the round and the noise verdict, appends to $OUT
    jq -c --argjson run "$rep" --argjson np "$NOISE_PCT" \
        '. + {run: $run, noisy: ((.other_cpu_pct // 0) + (.steal_pct // 0) > $np)}' | tee -a "$OUT" >&2
}
measure() { # measure LABEL WORKLOAD CMD...: one bounded run, its JSON line(s) kept as LABEL's (their "peer")
    local label=$1 w=$2 out; shift 2
    wait_quiet
    out=$("$@" 2>>"$TMP/runs.log")
    if [ -n "$out" ]; then echo "$out" | jq -c --arg p "$label" '.peer = $p' | emit
    else printf '{"peer":"%s","workload":"%s","ok":false,"error":"no result"}\n' "$label" "$w" | emit; fi
}

workload_args() { # the harness's table (shared/bench/peers/run.sh)
    local n=1000000000
    case $1 in
    fanout-1) echo "--subscribers 1 --messages $n --duration $DURATION" ;;
    fanout-10) echo "--subscribers 10 --messages $n --duration $DURATION" ;;
    fanout-100) echo "--subscribers 100 --messages $n --duration $DURATION" ;;
    latency) echo "--subscribers 10 --rate 10000 --messages $((10000 * DURATION))" ;;
    named) echo "--subscribers 100 --names 1000 --names-per-sub 10 --messages $n --duration $DURATION" ;;
    esac
}
c_bench() { # c_bench PEER ADDR PID WORKLOAD [LABEL]: the harness's client for PEER, its results kept as LABEL's
    # shellcheck disable=SC2046
    measure "${5:-$1}" "$4" timeout -k 5 $((DURATION + 45)) "$BUILD/bench" --peer "$1" --addr "$2" --broker-pid "$3" \
        --workload "$4" --timeout $((DURATION + 30)) $(workload_args "$4")
}

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
idle_check() { # idle_check HELLO: a fresh daemon, IDLE_CONNS idle connections, its RSS before and after
    local dir=$TMP/idle$1 before after holder fds limit=()
    # A daemon with a per-uid connection limit (--max-connections) gets one above the check's count.
    "$SWIFT_BIN/heraldd" --help | grep -q -- --max-connections && limit=(--max-connections $((IDLE_CONNS + 16)))
    # Connections without HELLO are capped and timed out (--max-incomplete-connections, --hello-timeout-ms): the
    # check holds IDLE_CONNS of them on purpose, so it lifts both.
    "$SWIFT_BIN/heraldd" --help | grep -q -- --hello-timeout-ms \
        && limit+=(--max-incomplete-connections $((IDLE_CONNS + 16)) --hello-timeout-ms 600000)
    start_heraldd "$dir" "${limit[@]}" || { log "heraldd did not start for the idle check"; return 1; }
    sleep 0.2
    before=$(rss_kib "$HERALD_PID")
    "$BUILD/idle_conns" "$HERALD_SOCK" "$IDLE_CONNS" "$1" > "$TMP/idle.out" 2>>"$TMP/runs.log" &
    holder=$!
    PIDS+=("$holder")
    local i ok=0
    for i in $(seq 600); do grep -q ready "$TMP/idle.out" 2>/dev/null && { ok=1; break; }; sleep 0.1; done
    sleep 0.5 # the daemon accepts in turns of 64; let it reach every connection
    after=$(rss_kib "$HERALD_PID")
    fds=$(ls "/proc/$HERALD_PID/fd" | wc -l) # the check counts only if the daemon really holds them all
    [ "$fds" -ge "$IDLE_CONNS" ] || { log "heraldd holds $fds descriptors, not $IDLE_CONNS connections"; ok=0; }
    stop "$holder" "$HERALD_PID"
    forget "$holder" "$HERALD_PID"
    printf '{"peer":"heraldd","workload":"idle-connections","hello":%s,"connections":%s,"daemon_fds":%s,"ok":%s,"rss_before_kib":%s,"rss_after_kib":%s,"per_connection_bytes":%s}\n' \
        "$([ "$1" = 1 ] && echo true || echo false)" "$IDLE_CONNS" "$fds" "$([ $ok = 1 ] && echo true || echo false)" \
        "$before" "$after" $(( (after - before) * 1024 / IDLE_CONNS )) | emit
}

# ---- build: release Swift products into .build-bench, the harness and tools into Benchmarks/build ----
deps || { log "installing the measuring tools failed"; exit 1; }
[ -f "$PEERS_DIR/bench.c" ] || { log "no harness at $PEERS_DIR (set PEERS_DIR)"; exit 1; }
mkdir -p "$BUILD"
log "building heraldd and herald-bench (release, .build-bench)"
for product in heraldd herald-bench; do
    swift build -c release --scratch-path "$ROOT/.build-bench" --product "$product" >"$TMP/build.log" 2>&1 \
        || { cat "$TMP/build.log" >&2; exit 1; }
done
# The harness's Makefile knows the adapter but not the header it includes: a newer header rebuilds it too.
[ "$ROOT/Benchmarks/herald_wire.h" -nt "$BUILD/bench" ] && rm -f "$BUILD/bench"
make -s -C "$PEERS_DIR" OUT="$BUILD" EXTRA_ADAPTER="$ROOT/Benchmarks/peer_herald.c" || exit 1
gcc -O2 -Wall -Wextra -o "$BUILD/idle_conns" "$ROOT/Benchmarks/idle_conns.c" || exit 1
gcc -O2 -Wall -Wextra -o "$BUILD/relay_limit" "$ROOT/Benchmarks/relay_limit.c" || exit 1 # includes herald_wire.h
ulimit -n "$(ulimit -Hn)" # 10,000 idle connections: the daemon and the holder each need that many descriptors
[ "$(ulimit -n)" -gt $((IDLE_CONNS + 64)) ] || { log "ulimit -n $(ulimit -n) is too low for $IDLE_CONNS connections"; IDLE_CONNS=0; }

# ---- measure: REPS rounds; each round starts both brokers afresh and alternates which goes first ----
: > "$OUT"
WORKLOADS=${WORKLOADS:-fanout-1 fanout-10 fanout-100 latency named}
for rep in $(seq "$REPS"); do
    log "round $rep of $REPS"
    start_heraldd "$TMP/herald$rep" || { log "heraldd did not start"; cat "$TMP/heraldd.log" >&2; exit 1; }
    start_redis || { log "redis did not start"; cat "$TMP/redis.log" >&2; exit 1; }
    start_relay || { log "relay_limit did not start"; cat "$TMP/relay.log" >&2; exit 1; }
    before=""
    if [ -n "${HERALDD_BEFORE:-}" ]; then
        start_before || { log "HERALDD_BEFORE did not start"; cat "$TMP/heraldd-before.log" >&2; exit 1; }
        before=before
    fi
    measure uds_limit fanout timeout 60 "$BUILD/uds_limit" --duration 1 --only fanout
    for w in $WORKLOADS; do
        if (( rep % 2 )); then order="redis herald $before zmq relay"; else order="relay zmq $before herald redis"; fi
        for peer in $order; do
            case $peer in
            redis) c_bench redis "$REDIS_SOCK" "$REDIS_PID" "$w" ;;
            # Brokerless: the publisher binds ipc://PREFIX.pub0 and every subscriber connects to it; no broker pid.
            zmq) c_bench zmq "$TMP/zmq$rep-$w" 0 "$w"; rm -f "$TMP/zmq$rep-$w"* ;;
            herald) c_bench herald "$HERALD_SOCK" "$HERALD_PID" "$w" ;;
            relay) c_bench herald "$RELAY_SOCK" "$RELAY_PID" "$w" relay_limit ;;
            before) c_bench herald "$BEFORE_SOCK" "$BEFORE_PID" "$w" heraldd-before ;;
            esac
        done
    done
    for w in $WORKLOADS; do
        benches="herald-bench"
        if [ -n "${BEFORE_BIN:-}" ]; then
            if (( rep % 2 )); then benches="herald-bench herald-bench-before"; else benches="herald-bench-before herald-bench"; fi
        fi
        for b in $benches; do
            bin=$SWIFT_BIN
            group=(--reader-threads "$(nproc)")
            if [ "$b" = herald-bench-before ]; then
                bin=$BEFORE_BIN
                # An earlier herald-bench may predate Herald.ReaderGroup.
                "$bin/herald-bench" --help | grep -q -- --reader-threads || group=()
            fi
            measure "$b" "$w" timeout -k 5 $((DURATION + 45)) "$bin/herald-bench" --workload "$w" \
                --socket "$HERALD_SOCK" --broker-pid "$HERALD_PID" --duration "$DURATION" --timeout $((DURATION + 30)) \
                "${group[@]}"
        done
    done
    # The subscriber connections each with a reader thread of its own (the library's default), not in a group.
    for w in fanout-100 named; do
        [[ " $WORKLOADS " == *" $w "* ]] || continue
        measure herald-bench-threads "$w" timeout -k 5 $((DURATION + 45)) "$SWIFT_BIN/herald-bench" --workload "$w" \
            --socket "$HERALD_SOCK" --broker-pid "$HERALD_PID" --duration "$DURATION" --timeout $((DURATION + 30)) \
            --label herald-bench-threads
    done
    # named with a stream and a for-await per name (1,000 tasks) instead of one per connection following its 10.
    if [[ " $WORKLOADS " == *" named "* ]]; then
        measure herald-bench-per-name named timeout -k 5 $((DURATION + 45)) "$SWIFT_BIN/herald-bench" --workload named \
            --socket "$HERALD_SOCK" --broker-pid "$HERALD_PID" --duration "$DURATION" --timeout $((DURATION + 30)) \
            --streams name --reader-threads "$(nproc)" --label herald-bench-per-name
    fi
    # The same consumers in plain Tasks on the global pool, for the difference Herald.taskExecutor makes.
    for w in fanout-1 fanout-100; do
        measure herald-bench-pool "$w" timeout -k 5 $((DURATION + 45)) "$SWIFT_BIN/herald-bench" --workload "$w" \
            --socket "$HERALD_SOCK" --broker-pid "$HERALD_PID" --duration "$DURATION" --timeout $((DURATION + 30)) \
            --consumers pool --label herald-bench-pool
    done
    stop "$HERALD_PID" "$REDIS_PID" "$RELAY_PID" ${before:+"$BEFORE_PID"}
    forget "$HERALD_PID" "$REDIS_PID" "$RELAY_PID" ${before:+"$BEFORE_PID"}
done
if [ "$IDLE_CONNS" -gt 0 ]; then
    rep=0
    log "idle connections: $IDLE_CONNS without HELLO, then $IDLE_CONNS with HELLO"
    idle_check 0
    idle_check 1
fi

# ---- the table ----
echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores ($(uname -r)); $REPS rounds, DURATION=$DURATION s; results in $OUT"
echo
jq -s -r -f "$ROOT/Benchmarks/summarize.jq" "$OUT"
