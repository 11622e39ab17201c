#!/usr/bin/env bash
# mqtt-bridge.sh - issue 18's measurement: a Herald publisher on host A to a Herald subscriber on host B through
# mosquitto (A's herald-mqtt-bridge exports, B's imports), against mosquitto_pub -> mosquitto_sub alone on the same
# broker, in the same run, alternating which goes first from one round to the next.
#
#   Benchmarks/mqtt-bridge.sh                 3 rounds, about a minute on 2 quiet cores
#   ROUNDS=5 QOS=0 Benchmarks/mqtt-bridge.sh
#
# Two measurements per round, each on both paths:
#   throughput: MESSAGES=20000 messages of 64 bytes, as fast as they go (herald-bench: window 500 in flight);
#               rate = messages / (first send .. last delivery);
#   latency:    LAT_MESSAGES=1000 messages at LAT_RATE=500/s; receive time minus the send time carried in the payload.
# QOS=1 (the bridge's default) is used by the bridges and by mosquitto_pub/mosquitto_sub alike.
# Then, the bridges idle for IDLE_SECONDS=60 (0 skips it): the context switches of each of their threads over that
# time, from /proc/PID/task/*/status. The bridges run with --keep-alive KEEP_ALIVE=300, so that the keep-alive's
# PINGREQ (every KEEP_ALIVE/2 s, which MQTT requires) falls outside the idle window.
# Each run also records the CPU % (100 = one core) of every process on its path, from /proc/PID/stat, and of the whole
# machine (/proc/stat), which says how much other work shared the cores meanwhile. The summary gives the ratio of the
# median rates, the ratio of each round (its two throughput runs, seconds apart, saw about the same load) and their
# median, and each process's CPU per message (µs): on a busy machine a path's rate is the CPU it gets over its CPU per
# message, so that is the figure that does not move with the load. Each bridge's context switches per message (all its
# threads, /proc/PID/task/*/status) count its hand-offs between threads and its wake-ups.
# Needs mosquitto, mosquitto-clients, jq (installed with apt-get when missing, like compare.sh) and a Swift
# toolchain; the release products go to .build-bench. Everything it starts it stops (trap EXIT), every run is
# bounded by timeout(1).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
ROUNDS=${ROUNDS:-3} MESSAGES=${MESSAGES:-20000} LAT_MESSAGES=${LAT_MESSAGES:-1000} LAT_RATE=${LAT_RATE:-500}
QOS=${QOS:-1} IDLE_SECONDS=${IDLE_SECONDS:-60} KEEP_ALIVE=${KEEP_ALIVE:-300}
# How herald-bench's publisher waits while its window (500) is full: block, asleep until its subscriber's
# deliveries wake it, as mosquitto_pub waits in poll(2) for its PUBACKs; or sleep, looking every 20 µs as the peers'
# bench.c does (compare.sh), whose wake-ups take CPU from the path it measures on two cores.
WINDOW_WAIT=${WINDOW_WAIT:-block}
# BIN=DIR runs the products already in DIR (an earlier build, for a before/after pair) and builds nothing.
SWIFT_BIN=${BIN:-$ROOT/.build-bench/release}
OUT=${OUT:-$ROOT/Benchmarks/build/mqtt-bridge.jsonl}
log() { echo "mqtt-bridge.sh: $*" >&2; }

# ---- measuring tools: installed if missing (Debian packages), never part of the product ----
deps() {
    local missing=0 b
    for b in mosquitto mosquitto_pub mosquitto_sub jq timeout; do
        command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] || missing=1
    done
    [ "$missing" = 0 ] && return 0
    apt_install mosquitto mosquitto-clients jq coreutils
}

TMP=$(mktemp -d /tmp/herald-mqtt-bench.XXXXXX) # mode 0700, as heraldd wants its socket directory
WAIT_TRIES=400
. "$ROOT/Benchmarks/common.sh"
fail() { log "$*"; for f in "$TMP"/*.log; do [ -s "$f" ] && { echo "== $f" >&2; tail -20 "$f" >&2; }; done; exit 1; }
# The samplers below run every 20 ms during a run, on the cores the measured path uses, so they fork nothing: the
# earlier ones (an awk per process, a subshell per value, sleep(1)) forked 7 to 11 processes a sample, about 16 % of
# a core while the bridged path ran (six processes sampled) and less for mosquitto alone (three): the harness took
# more from the side that needs more CPU. Each sets a variable instead of printing.
stamp() { local t=$EPOCHREALTIME; NOW_NS=$(( ${t/./} * 1000 )); } # NOW_NS: wall-clock nanoseconds
exec {PAUSE_FD}<> <(:) # never readable: read -t on it sleeps without a fork
pause() { read -r -t 0.02 -u "$PAUSE_FD"; }

# CPU of a set of processes over one run: sample_ticks before and after, cpu_json turns them into % of one core.
HZ=$(getconf CLK_TCK)
sample_ticks() { # sample_ticks PID...: TICKS="UTIME+STIME ..." in clock ticks, "-" for a process gone or a zombie
    local p line
    local -a f
    TICKS=""
    for p in "$@"; do
        if read -r line 2>/dev/null < "/proc/$p/stat"; then
            f=(${line##*) }) # the fields after the command name, from the state on: numbers and a letter
            if [ "${f[0]}" = Z ]; then TICKS+="- "; else TICKS+="$((f[11] + f[12])) "; fi
        else
            TICKS+="- "
        fi
    done
    TICKS=${TICKS% }
}
cpu_json() { # cpu_json "NAMES" "BEFORE" "AFTER" NANOSECONDS: {"name": pct, ...}
    local -a names=($1) before=($2) after=($3)
    local i out=""
    for i in "${!names[@]}"; do
        out+=$(printf '"%s":%s,' "${names[$i]}" \
            "$(awk -v a="${before[$i]}" -v b="${after[$i]}" -v s="$4" -v hz="$HZ" 'BEGIN {if (a == "-" || b == "-" || s <= 0) print "null"; else printf "%.0f", 100 * (b - a) / hz / (s / 1e9)}')")
    done
    echo "{${out%,}}"
}
# Context switches of a process, all its threads (voluntary and not): a bridge's hand-offs between its threads and
# its wake-ups, which cost it CPU in the kernel (Benchmarks/README.md, issue 26).
ctxt() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ {s += $2} END {print s + 0}'; }
# The whole machine's busy CPU over one run (% of one core, so up to 100 x cores), from /proc/stat's first line:
# what the path's processes used plus what everything else did meanwhile (other builds on a shared machine).
# user, nice, system, irq, softirq and steal (time the hypervisor gave to other machines, which the path could not use
# either); not idle or iowait, nor guest, which user already counts.
sample_machine() { # MACHINE: the machine's busy clock ticks since boot
    local cpu user nice system idle iowait irq softirq steal rest
    read -r cpu user nice system idle iowait irq softirq steal rest < /proc/stat
    MACHINE=$((user + nice + system + irq + softirq + steal))
}
machine_pct() { # machine_pct BEFORE AFTER NANOSECONDS
    awk -v a="$1" -v b="$2" -v s="$3" -v hz="$HZ" 'BEGIN {if (s <= 0) print "null"; else printf "%.0f", 100 * (b - a) / hz / (s / 1e9)}'
}

# ---- build ----
deps || { log "installing the measuring tools failed"; exit 1; }
MOSQUITTO=$(command -v mosquitto || echo /usr/sbin/mosquitto)
if [ -z "${BIN:-}" ]; then
    log "building heraldd, herald-mqtt-bridge and herald-bench (release, .build-bench)"
    for product in heraldd herald-mqtt-bridge herald-bench; do
        swift build -c release --scratch-path "$ROOT/.build-bench" --product "$product" >"$TMP/build.log" 2>&1 \
            || { cat "$TMP/build.log" >&2; exit 1; }
    done
fi
mkdir -p "$(dirname "$OUT")"
: > "$OUT"

# ---- the hosts: mosquitto on a free 127.0.0.1 port, two heraldd, A's bridge exporting, B's importing ----
start_broker() {
    local try
    for try in $(seq 20); do
        PORT=$((30000 + RANDOM % 30000))
        (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && continue # somebody listens there
        # max_queued_messages 0: no QoS 1 message is dropped for a slow subscriber, on either path.
        # Logs go to stderr: started as root, mosquitto drops to its own user, which cannot write in $TMP.
        printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest stderr\n%s\n%s\n' \
            "$PORT" "$(printf 'log_type %s\n' error warning notice information subscribe)" "max_queued_messages 0" \
            > "$TMP/mosquitto.conf"
        "$MOSQUITTO" -c "$TMP/mosquitto.conf" 2>"$TMP/mosquitto.log" &
        BROKER_PID=$!
        PIDS+=("$BROKER_PID")
        wait_for "grep -q running $TMP/mosquitto.log || ! kill -0 $BROKER_PID" && kill -0 "$BROKER_PID" && return 0
        stop "$BROKER_PID"
        forget "$BROKER_PID"
    done
    return 1
}
start_host() { # start_host NAME: sets ${NAME}_PID, ${NAME}_SOCK
    mkdir -m 700 "$TMP/$1"
    "$SWIFT_BIN/heraldd" --socket "$TMP/$1/socket" --no-plugins --log-level warning 2>>"$TMP/heraldd-$1.log" &
    local pid=$!
    PIDS+=("$pid")
    printf -v "${1}_PID" %s "$pid"
    printf -v "${1}_SOCK" %s "$TMP/$1/socket"
    wait_for "[ -S $TMP/$1/socket ]"
}
start_bridge() { # start_bridge NAME ARGS...: sets BRIDGE_${NAME}_PID
    local name=$1
    shift
    "$SWIFT_BIN/herald-mqtt-bridge" --broker "mqtt://127.0.0.1:$PORT" --host-id "host$name" \
        --socket "$TMP/$name/socket" --qos "$QOS" --keep-alive "$KEEP_ALIVE" "$@" 2>>"$TMP/bridge-$name.log" &
    local pid=$!
    PIDS+=("$pid")
    printf -v "BRIDGE_${name}_PID" %s "$pid"
}

start_broker || fail "mosquitto did not start"
start_host A || fail "heraldd A did not start"
start_host B || fail "heraldd B did not start"
NAME=ev0000 # herald-bench's fanout-1 name; the topic is herald/ev0000
start_bridge A --export "$NAME"
start_bridge B --import "$NAME"
wait_for "grep -q 'exporting $NAME' $TMP/bridge-A.log" || fail "bridge A is not exporting"
wait_for "grep -q 'subscribed to' $TMP/bridge-B.log" || fail "bridge B did not subscribe"
log "mosquitto on 127.0.0.1:$PORT (pid $BROKER_PID); heraldd A $A_PID, B $B_PID; bridges $BRIDGE_A_PID, $BRIDGE_B_PID"

# ---- one run of each kind ----
HERALD_NAMES="heralddA bridgeA mosquitto bridgeB heralddB herald-bench"
herald_run() { # herald_run KIND ARGS...: herald-bench on A's socket, its subscriber on B's
    local kind=$1 before after t0 t1 out bench mbefore mafter
    shift
    "$SWIFT_BIN/herald-bench" --workload fanout-1 --socket "$A_SOCK" --subscriber-socket "$B_SOCK" \
        --label herald-bridge --duration 600 --timeout 90 --drain-ms 3000 --window-wait "$WINDOW_WAIT" "$@" \
        > "$TMP/bench.out" 2>>"$TMP/bench.log" &
    bench=$!
    PIDS+=("$bench")
    sample_ticks "$A_PID" "$BRIDGE_A_PID" "$BROKER_PID" "$BRIDGE_B_PID" "$B_PID" "$bench"
    sample_machine
    before=$TICKS mbefore=$MACHINE
    local switches_a=$(ctxt "$BRIDGE_A_PID") switches_b=$(ctxt "$BRIDGE_B_PID")
    stamp
    t0=$NOW_NS
    after=$before t1=$t0 mafter=$mbefore
    # Sampled just before it exits: herald-bench ends within 20 ms of the last delivery (or of the drain).
    while kill -0 "$bench" 2>/dev/null; do
        sample_ticks "$A_PID" "$BRIDGE_A_PID" "$BROKER_PID" "$BRIDGE_B_PID" "$B_PID" "$bench"
        [[ $TICKS == *-* ]] || { after=$TICKS; sample_machine; mafter=$MACHINE; stamp; t1=$NOW_NS; }
        pause
    done
    wait "$bench"
    forget "$bench"
    switches_a=$(($(ctxt "$BRIDGE_A_PID") - switches_a)) switches_b=$(($(ctxt "$BRIDGE_B_PID") - switches_b))
    out=$(cat "$TMP/bench.out")
    [ -n "$out" ] || out='{"ok":false,"error":"no result"}'
    echo "$out" | jq -c --arg k "$kind" --argjson r "$rep" --argjson q "$QOS" \
        --argjson cpu "$(cpu_json "$HERALD_NAMES" "$before" "$after" "$((t1 - t0))")" \
        --argjson machine "$(machine_pct "$mbefore" "$mafter" "$((t1 - t0))")" \
        --argjson sa "$switches_a" --argjson sb "$switches_b" \
        '{path: "herald-bridge", kind: $k, round: $r, qos: $q, messages: .messages_sent, delivered, lost, ok,
          rate: .delivery_rate, lat_p50_us, lat_p99_us, cpu_pct: $cpu, machine_pct: $machine,
          context_switches: {bridgeA: $sa, bridgeB: $sb}}' | tee -a "$OUT" >&2
}

MOSQ_NAMES="mosquitto mosquitto_pub mosquitto_sub"
mosq_run() { # mosq_run KIND INPUT_COMMAND COUNT: mosquitto_pub -l fed by INPUT_COMMAND, mosquitto_sub -C COUNT
    local kind=$1 feed=$2 count=$3 sub pub before after t0 t1 got json mbefore mafter
    local id=$kind$rep
    : > "$TMP/sub.out"
    timeout 90 mosquitto_sub -V 5 -h 127.0.0.1 -p "$PORT" -q "$QOS" -i "sub$id" -t "bench/$id" -C "$count" \
        -F '%U %p' > "$TMP/sub.out" 2>>"$TMP/mosquitto_sub.log" &
    sub=$!
    PIDS+=("$sub")
    wait_for "grep -q 'sub$id [0-9] bench/$id' $TMP/mosquitto.log" || fail "mosquitto_sub did not subscribe"
    # mosquitto_pub reads a fifo held open here (opened after it forked, so the fifo's only writer is this shell):
    # it connects before the first line is written and its start-up stays out of the measured time.
    rm -f "$TMP/fifo" && mkfifo "$TMP/fifo"
    timeout 90 mosquitto_pub -V 5 -h 127.0.0.1 -p "$PORT" -q "$QOS" -i "pub$id" -t "bench/$id" -l \
        < "$TMP/fifo" 2>>"$TMP/mosquitto_pub.log" &
    pub=$!
    PIDS+=("$pub")
    exec {W}>"$TMP/fifo"
    wait_for "grep -q 'as pub$id ' $TMP/mosquitto.log" || fail "mosquitto_pub did not connect"
    # The clients' own pids, under timeout(1), for their CPU.
    local pubc subc
    pubc=$(pgrep -P "$pub") subc=$(pgrep -P "$sub")
    sample_ticks "$BROKER_PID" "$pubc" "$subc"
    sample_machine
    before=$TICKS mbefore=$MACHINE
    stamp
    t0=$NOW_NS
    after=$before t1=$t0 mafter=$mbefore
    eval "$feed" >&$W
    sample_ticks "$BROKER_PID" "$pubc" "$subc"
    sample_machine
    stamp
    after=$TICKS mafter=$MACHINE t1=$NOW_NS
    while kill -0 "$sub" 2>/dev/null; do
        sample_ticks "$BROKER_PID" "$pubc" "$subc"
        [[ $TICKS == *-* ]] || { after=$TICKS; sample_machine; mafter=$MACHINE; stamp; t1=$NOW_NS; }
        pause
    done
    exec {W}>&-
    wait "$sub"
    wait "$pub"
    forget "$sub" "$pub"
    got=$(wc -l < "$TMP/sub.out")
    # The last delivery's own timestamp ends the throughput run; latency is receive time minus the send time
    # that starts each payload (both wall-clock, µs).
    awk '{printf "%.1f\n", $1 * 1e6 - $2}' "$TMP/sub.out" | sort -n > "$TMP/lat"
    json=$(awk -v t0="$t0" -v n="$count" -v got="$got" -v last="$(tail -1 "$TMP/sub.out" | cut -d' ' -f1)" \
        -v p50="$(sed -n "$(( (got - 1) / 2 + 1 ))p" "$TMP/lat")" -v p99="$(sed -n "$(( (got - 1) * 99 / 100 + 1 ))p" "$TMP/lat")" '
        BEGIN {
            el = last * 1e6 - t0 / 1000
            printf "{\"messages\":%d,\"delivered\":%d,\"lost\":%d,\"ok\":%s,\"rate\":%.0f,\"lat_p50_us\":%.1f,\"lat_p99_us\":%.1f}",
                n, got, n - got, (got == n ? "true" : "false"), (el > 0 ? got / (el / 1e6) : 0), p50, p99
        }')
    echo "$json" | jq -c --arg k "$kind" --argjson r "$rep" --argjson q "$QOS" \
        --argjson cpu "$(cpu_json "$MOSQ_NAMES" "$before" "$after" "$((t1 - t0))")" \
        --argjson machine "$(machine_pct "$mbefore" "$mafter" "$((t1 - t0))")" \
        '{path: "mosquitto-alone", kind: $k, round: $r, qos: $q} + . + {cpu_pct: $cpu, machine_pct: $machine}' \
        | tee -a "$OUT" >&2
}
# Throughput input: MESSAGES lines of 64 bytes, each starting with a send time (µs) taken before the burst (the
# burst's latency is mostly queueing, so only the rate is kept from it).
burst() {
    local t=${EPOCHREALTIME/./}
    awk -v n="$MESSAGES" -v t="$t" 'BEGIN { pad = sprintf("%47s", ""); gsub(/ /, "x", pad); for (i = 0; i < n; i++) print t, pad }'
}
# Latency input: LAT_MESSAGES lines at LAT_RATE per second, each stamped as it is written.
paced() {
    local i interval_us=$((1000000 / LAT_RATE)) t next=${EPOCHREALTIME/./} fd pad
    pad=$(printf '%47s' '' | tr ' ' x)
    exec {fd}<> <(:) # read -t on it sleeps without a fork
    for ((i = 0; i < LAT_MESSAGES; i++)); do
        next=$((next + interval_us))
        t=${EPOCHREALTIME/./}
        printf '%s %s\n' "$t" "$pad"
        (( next > t )) && read -r -t "0.$(printf %06d $((next - t)))" -u "$fd"
    done
    exec {fd}<&-
}

for rep in $(seq "$ROUNDS"); do
    log "round $rep of $ROUNDS"
    if (( rep % 2 )); then order="mosq herald"; else order="herald mosq"; fi
    for path in $order; do
        case $path in
        mosq) mosq_run throughput burst "$MESSAGES" ;;
        herald) herald_run throughput --messages "$MESSAGES" ;;
        esac
    done
    for path in $order; do
        case $path in
        mosq) mosq_run latency paced "$LAT_MESSAGES" ;;
        herald) herald_run latency --messages "$LAT_MESSAGES" --rate "$LAT_RATE" ;;
        esac
    done
done

# ---- idle: every thread's context switches over IDLE_SECONDS, per bridge ----
switches() { # switches PID: "NAME/TID COUNT" per thread
    local t
    for t in /proc/"$1"/task/*; do
        printf '%s/%s %s\n' "$(cat "$t/comm" 2>/dev/null)" "${t##*/}" \
            "$(awk '/ctxt_switches/ {s += $2} END {print s + 0}' "$t/status" 2>/dev/null)"
    done | sort
}
IDLE_LINE=""
if [ "$IDLE_SECONDS" -gt 0 ]; then
    sleep 2 # the state's deadline, a second after the last event, is the last thing pending
    idle_a=$(switches "$BRIDGE_A_PID") idle_b=$(switches "$BRIDGE_B_PID")
    log "idle for $IDLE_SECONDS s"
    sleep "$IDLE_SECONDS"
    idle_line() { # idle_line BEFORE AFTER: "name n, ..." and the total
        join <(echo "$1") <(echo "$2") | awk '{d = $3 - $2; total += d; out = out (out == "" ? "" : ", ") $1 " " d}
            END {printf "%d (%s)", total, out}'
    }
    IDLE_LINE="idle wake-ups in $IDLE_SECONDS s (context switches per thread, name/tid): bridge A $(idle_line "$idle_a" "$(switches "$BRIDGE_A_PID")"); bridge B $(idle_line "$idle_b" "$(switches "$BRIDGE_B_PID")")"
fi

# ---- the table: medians over the rounds ----
echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores; $ROUNDS rounds, QoS $QOS, $MESSAGES messages" \
    "(throughput), $LAT_MESSAGES at $LAT_RATE/s (latency), 64-byte payloads; results in $OUT"
echo
jq -s -r --argjson cores "$(nproc)" '
    def median: sort | if length == 0 then null else .[(length - 1) / 2 | floor] end;
    def med(p; k; f): [.[] | select(.path == p and .kind == k) | f] | median;
    # Round by round: the two paths'"'"' throughput runs of a round ran a few seconds apart, so they saw about the
    # same load from whatever else runs on the machine, which the medians of the rates taken apart do not pair.
    def ratios: [.[] | select(.kind == "throughput")] | group_by(.round)
        | map((map(select(.path == "herald-bridge") | .rate) | first) as $h
            | (map(select(.path == "mosquitto-alone") | .rate) | first) as $m
            | select($h != null and $m != null and $m > 0) | $h / $m);
    # CPU per message: each process'"'"'s CPU over a throughput run divided by that run'"'"'s rate, µs, median over rounds.
    def us(p): [.[] | select(.path == p and .kind == "throughput" and .rate > 0)] as $r
        | if ($r | length) == 0 then "" else ($r[0].cpu_pct | keys_unsorted) as $names
        | ($names | map(. as $n | "\($n) \([$r[] | select(.cpu_pct[$n] != null) | .cpu_pct[$n] * 1e4 / .rate] | median
            | . * 10 | round / 10)") | join(", "))
          + "; the path \([$r[] | ([.cpu_pct[] | select(. != null)] | add) * 1e4 / .rate] | median | . * 10 | round / 10)"
        end;
    def switches(b): [.[] | select(.path == "herald-bridge" and .kind == "throughput" and (.delivered // 0) > 0)
        | .context_switches[b] / .delivered] | median | if . == null then "n/a" else . * 100 | round / 100 end;
    def busy(p): [.[] | select(.path == p and .kind == "throughput" and .machine_pct != null) | .machine_pct] | median;
    def cpu(p; k): [.[] | select(.path == p and .kind == k) | .cpu_pct] as $c
        | if ($c | length) == 0 then "" else ($c[0] | keys_unsorted | map(. as $n | "\($n) \([$c[] | .[$n]] | median)%")
        | join(", ")) end;
    (med("herald-bridge"; "throughput"; .rate)) as $hr | (med("mosquitto-alone"; "throughput"; .rate)) as $mr
    | "| path | throughput (msg/s) | latency p50 (µs) | latency p99 (µs) | all delivered |",
      "|---|---|---|---|---|",
      (["mosquitto-alone", "herald-bridge"][] as $p
        | "| \($p) | \(med($p; "throughput"; .rate)) | \(med($p; "latency"; .lat_p50_us)) | \(med($p; "latency"; .lat_p99_us)) | \([.[] | select(.path == $p) | .ok] | all) |"),
      "",
      "throughput ratio herald-bridge / mosquitto-alone: \(if $mr > 0 then ($hr / $mr * 100 | round / 100) else "n/a" end) (target >= 0.8) by the medians of the rates",
      "per round (each round'"'"'s two runs close in time): \(ratios | map(. * 100 | round / 100) | join(", ")); median \(ratios | median | . * 100 | round / 100)",
      "added latency (bridge path minus broker alone): p50 \(med("herald-bridge"; "latency"; .lat_p50_us) - med("mosquitto-alone"; "latency"; .lat_p50_us) | round) µs, p99 \(med("herald-bridge"; "latency"; .lat_p99_us) - med("mosquitto-alone"; "latency"; .lat_p99_us) | round) µs",
      "",
      "CPU during throughput (median % of one core): herald-bridge: \(cpu("herald-bridge"; "throughput"))",
      "                                              mosquitto-alone: \(cpu("mosquitto-alone"; "throughput"))",
      "CPU per message (µs, median): herald-bridge: \(us("herald-bridge"))",
      "                              mosquitto-alone: \(us("mosquitto-alone"))",
      "context switches per message during throughput (median, all threads): bridge A \(switches("bridgeA")), bridge B \(switches("bridgeB"))",
      "the whole machine busy during throughput (median % of one core, of \(100 * $cores)): herald-bridge \(busy("herald-bridge")), mosquitto-alone \(busy("mosquitto-alone"))"
' "$OUT"
if [ -n "$IDLE_LINE" ]; then echo; echo "$IDLE_LINE"; fi
