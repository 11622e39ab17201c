#!/usr/bin/env bash
# Builds the libFuzzer targets and runs them for a bounded time: heraldd's input handling (frame), the MQTT
# bridge's packet decoder (mqtt) and the D-Bus client's message decoder (dbus), sharing FUZZ_SECONDS between them,
# a third each.
#
#   bash Tests/Fuzz/run.sh                  # FUZZ_SECONDS (default 60) of fuzzing in all
#   FUZZ_SECONDS=600 bash Tests/Fuzz/run.sh
#   FUZZ_TARGET=mqtt bash Tests/Fuzz/run.sh # one target only (frame, mqtt or dbus), for all of FUZZ_SECONDS
#   bash Tests/Fuzz/run.sh path/to/crash-…  # replays inputs instead of fuzzing (exit 0: no crash), through
#                                           # FUZZ_TARGET (default frame)
#
# SwiftPM cannot link a libFuzzer binary (it insists on a main), so this compiles the sources of
# HeraldWire and HeraldBroker and the fuzzer into one module with swiftc directly (HeraldMQTT and its
# fuzzer for mqtt, HeraldDBus and its fuzzer for dbus). The checked-in corpus is only read: new inputs go to a scratch directory under
# .build/fuzz/ (git-ignored). Exits non-zero on any crash, naming the reproducer. See Tests/Fuzz/README.md.
set -euo pipefail
# Crash reports come from libFuzzer and ASan; the Swift runtime's own backtracer can hang after them.
export SWIFT_BACKTRACE=enable=no
cd "$(dirname "$0")/../.."

fuzz_dir=Tests/Fuzz
# Build output stays out of the source tree, so that tools walking Sources and Tests (swift format lint) do not
# read the copied sources.
out_dir=.build/fuzz
seconds="${FUZZ_SECONDS:-60}"

# build NAME FUZZER_SOURCE MODULE_DIRS...: compiles the modules' sources and the fuzzer into $out_dir/NAME.
build() {
    local name=$1 fuzzer=$2
    shift 2
    local build="$out_dir/$name"
    rm -rf "$build/src"
    mkdir -p "$build/src"
    local module file
    for module in "$@"; do
        for file in "$module"/*.swift; do
            # One module: the imports between them are dropped.
            sed -E '/^(public |internal |package )?import HeraldWire$/d' "$file" \
                > "$build/src/$(basename "$module")_$(basename "$file")"
        done
    done
    cp "$fuzz_dir/$fuzzer" "$build/src/"

    echo "fuzz: building $build/fuzzer"
    # ld.gold warns once per ASan helper symbol ("Cannot export local symbol"); the noise hides real errors.
    swiftc -parse-as-library -sanitize=fuzzer,address -O -g \
        -swift-version 6 -enable-upcoming-feature ExistentialAny -enable-upcoming-feature InternalImportsByDefault \
        -module-name HeraldFuzz "$build"/src/*.swift -o "$build/fuzzer" 2> "$build/build.log" || {
        grep -v "Cannot export local symbol" "$build/build.log" >&2
        echo "fuzz: the $name build failed" >&2
        exit 1
    }
    grep -v "Cannot export local symbol" "$build/build.log" >&2 || true
}

# run NAME CORPUS SECONDS: fuzzes with the build of NAME, seeded from CORPUS.
run() {
    local name=$1 corpus=$2 seconds=$3
    local build="$out_dir/$name"
    # libFuzzer writes new inputs into the first directory: a scratch copy, so the checked-in corpus only
    # seeds (it is also passed read-only as the second directory).
    rm -rf "$build/corpus"
    mkdir -p "$build/corpus"
    cp "$corpus"/* "$build/corpus/"

    echo "fuzz: running $name for ${seconds}s (log: $build/fuzz.log)"
    rm -rf "$build/artifacts"
    mkdir -p "$build/artifacts"
    set +e
    "$build/fuzzer" \
        -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$build/artifacts/" \
        "$build/corpus" "$corpus" > "$build/fuzz.log" 2>&1
    local status=$?
    set -e
    # The summary: the start, the end and the final statistics (or the crash report).
    grep -E "INITED|DONE|^stat::|^Done|ERROR|==[0-9]+==|Fatal error|Precondition failed|SUMMARY" "$build/fuzz.log" \
        | head -40 || true

    if [[ $status -ne 0 ]]; then
        tail -n 60 "$build/fuzz.log" >&2
        echo "fuzz: FAILED (exit $status): the $name target crashed or broke an invariant." >&2
        for reproducer in "$build"/artifacts/*; do
            [[ -e "$reproducer" ]] || continue
            echo "fuzz: reproducer $reproducer ($(wc -c < "$reproducer") bytes):" >&2
            od -An -tx1 -v "$reproducer" | tr -d ' \n' | fold -w 64 >&2
            echo >&2
            echo "fuzz: replay with: FUZZ_TARGET=$name bash $fuzz_dir/run.sh $reproducer" >&2
        done
        exit "$status"
    fi
    echo "fuzz: $name: no crash in ${seconds}s"
}

target="${FUZZ_TARGET:-all}"
case "$target" in
    all | frame | mqtt | dbus) ;;
    *) echo "fuzz: FUZZ_TARGET must be all, frame, mqtt or dbus, not $target" >&2; exit 64 ;;
esac

if [[ $# -gt 0 ]]; then
    [[ $target == all ]] && target=frame
    if [[ $target == frame ]]; then
        build frame FrameFuzzer.swift Sources/HeraldWire Sources/HeraldBroker
    elif [[ $target == mqtt ]]; then
        build mqtt MQTTFuzzer.swift Sources/HeraldMQTT
    else
        build dbus DBusFuzzer.swift Sources/HeraldDBus
    fi
    exec "$out_dir/$target/fuzzer" "$@"
fi

frame_seconds=0
mqtt_seconds=0
dbus_seconds=0
if [[ $target == all ]]; then
    # A third each, so CI's total stays FUZZ_SECONDS.
    frame_seconds=$(( (seconds + 2) / 3 ))
    mqtt_seconds=$(( (seconds - frame_seconds + 1) / 2 ))
    dbus_seconds=$(( seconds - frame_seconds - mqtt_seconds ))
elif [[ $target == frame ]]; then
    frame_seconds=$seconds
elif [[ $target == mqtt ]]; then
    mqtt_seconds=$seconds
else
    dbus_seconds=$seconds
fi
if [[ $frame_seconds -gt 0 ]]; then
    build frame FrameFuzzer.swift Sources/HeraldWire Sources/HeraldBroker
    run frame "$fuzz_dir/corpus" "$frame_seconds"
fi
if [[ $mqtt_seconds -gt 0 ]]; then
    build mqtt MQTTFuzzer.swift Sources/HeraldMQTT
    run mqtt "$fuzz_dir/mqtt-corpus" "$mqtt_seconds"
fi
if [[ $dbus_seconds -gt 0 ]]; then
    build dbus DBusFuzzer.swift Sources/HeraldDBus
    run dbus "$fuzz_dir/dbus-corpus" "$dbus_seconds"
fi
echo "fuzz: no crash in ${seconds}s"
