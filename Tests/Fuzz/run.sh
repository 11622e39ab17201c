#!/usr/bin/env bash
# Builds the libFuzzer target for heraldd's input handling and runs it for a bounded time.
#
#   bash Tests/Fuzz/run.sh                  # FUZZ_SECONDS (default 60) of fuzzing
#   FUZZ_SECONDS=600 bash Tests/Fuzz/run.sh
#   bash Tests/Fuzz/run.sh path/to/crash-…  # replays inputs instead of fuzzing (exit 0: no crash)
#
# SwiftPM cannot link a libFuzzer binary (it insists on a main), so this compiles the sources of
# HeraldWire and HeraldBroker and the fuzzer into one module with swiftc directly. The checked-in
# corpus is only read: new inputs go to a scratch directory under Tests/Fuzz/build/ (git-ignored).
# Exits non-zero on any crash, naming the reproducer. See Tests/Fuzz/README.md.
set -euo pipefail
# Crash reports come from libFuzzer and ASan; the Swift runtime's own backtracer can hang after them.
export SWIFT_BACKTRACE=enable=no
cd "$(dirname "$0")/../.."

fuzz_dir=Tests/Fuzz
build="$fuzz_dir/build"
seconds="${FUZZ_SECONDS:-60}"

rm -rf "$build/src"
mkdir -p "$build/src"
for file in Sources/HeraldWire/*.swift Sources/HeraldBroker/*.swift; do
    # One module: the imports between the two are dropped.
    sed -E '/^(public |internal |package )?import HeraldWire$/d' "$file" \
        > "$build/src/$(basename "$(dirname "$file")")_$(basename "$file")"
done
cp "$fuzz_dir/FrameFuzzer.swift" "$build/src/"

echo "fuzz: building $build/fuzzer"
# ld.gold warns once per ASan helper symbol ("Cannot export local symbol"); the noise hides real errors.
swiftc -parse-as-library -sanitize=fuzzer,address -O -g \
    -swift-version 6 -enable-upcoming-feature ExistentialAny -enable-upcoming-feature InternalImportsByDefault \
    -module-name HeraldFuzz "$build"/src/*.swift -o "$build/fuzzer" 2> "$build/build.log" || {
    grep -v "Cannot export local symbol" "$build/build.log" >&2
    echo "fuzz: the build failed" >&2
    exit 1
}
grep -v "Cannot export local symbol" "$build/build.log" >&2 || true

if [[ $# -gt 0 ]]; then
    exec "$build/fuzzer" "$@"
fi

# libFuzzer writes new inputs into the first directory: a scratch copy, so the checked-in corpus only
# seeds (it is also passed read-only as the second directory).
rm -rf "$build/corpus"
mkdir -p "$build/corpus"
cp "$fuzz_dir"/corpus/* "$build/corpus/"

echo "fuzz: running for ${seconds}s (log: $build/fuzz.log)"
rm -rf "$build/artifacts"
mkdir -p "$build/artifacts"
set +e
"$build/fuzzer" \
    -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/" \
    "$build/corpus" "$fuzz_dir/corpus" > "$build/fuzz.log" 2>&1
status=$?
set -e
# The summary: the start, the end and the final statistics (or the crash report).
grep -E "INITED|DONE|^stat::|^Done|ERROR|==[0-9]+==|Fatal error|Precondition failed|SUMMARY" "$build/fuzz.log" | head -40 || true

if [[ $status -ne 0 ]]; then
    tail -n 60 "$build/fuzz.log" >&2
    echo "fuzz: FAILED (exit $status): heraldd's input handling crashed or broke an invariant." >&2
    for reproducer in "$build"/artifacts/*; do
        [[ -e "$reproducer" ]] || continue
        echo "fuzz: reproducer $reproducer ($(wc -c < "$reproducer") bytes):" >&2
        od -An -tx1 -v "$reproducer" | tr -d ' \n' | fold -w 64 >&2
        echo >&2
        echo "fuzz: replay with: bash $fuzz_dir/run.sh $reproducer" >&2
    done
    exit "$status"
fi
echo "fuzz: no crash in ${seconds}s"
