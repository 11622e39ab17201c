#!/usr/bin/env bash
# The newcomer's check: clone the committed tree into a temporary directory and run the README's two commands
# there, in the README's order, with nothing built before, as someone with only the Swift toolchain would:
#   1. `swift run herald demo`, whose transcript must show "alice went away" and "alice came back" once each;
#   2. `swift test`, with PATH narrowed so that zsh, fish and desktop-file-validate are not found, and without
#      HERALD_REQUIRE_TEST_TOOLS: the tests that need them must be skipped, visibly, and the run must pass.
# .ci/run runs it after the main test run. It costs a second build from scratch: that is the newcomer's build.
set -euo pipefail

repository=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/herald-fresh-XXXXXX")
trap 'rm -rf "$work"' EXIT

git clone --quiet --no-hardlinks "$repository" "$work/herald"
echo "fresh-clone: cloned $(git -C "$work/herald" rev-parse --short HEAD) into $work/herald"

# A PATH without the hidden tools: each PATH directory that holds one of them is replaced by a directory of
# symbolic links to everything else in it. Directories without them (the Swift toolchain's among them) stay as
# they are.
hidden="zsh fish desktop-file-validate"
narrowed=""
index=0
IFS=: read -r -a directories <<<"$PATH"
for directory in "${directories[@]}"; do
    [ -n "$directory" ] && [ -d "$directory" ] || continue
    holds=no
    for tool in $hidden; do
        [ -e "$directory/$tool" ] && holds=yes
    done
    if [ "$holds" = yes ]; then
        index=$((index + 1))
        shadow="$work/path-$index"
        mkdir "$shadow"
        for entry in "$directory"/* "$directory"/.[!.]*; do
            [ -e "$entry" ] || continue
            name=${entry##*/}
            case " $hidden " in *" $name "*) continue ;; esac
            ln -s "$entry" "$shadow/$name"
        done
        directory=$shadow
    fi
    narrowed="${narrowed:+$narrowed:}$directory"
done
for tool in $hidden; do
    if PATH="$narrowed" command -v "$tool" >/dev/null 2>&1; then
        echo "fresh-clone: could not hide $tool from PATH" >&2
        exit 1
    fi
done

cd "$work/herald"
echo "fresh-clone: swift run herald demo"
env -u HERALD_REQUIRE_TEST_TOOLS PATH="$narrowed" swift run herald demo 2>&1 | tee "$work/demo.log"
away=$(grep -c -- '\* alice went away$' "$work/demo.log" || true)
back=$(grep -c -- '\* alice came back$' "$work/demo.log" || true)
if [ "$away" != 1 ] || [ "$back" != 1 ]; then
    echo "fresh-clone: the demo's transcript shows 'alice went away' $away times and 'alice came back' $back times" >&2
    exit 1
fi

echo "fresh-clone: swift test, without $hidden"
env -u HERALD_REQUIRE_TEST_TOOLS PATH="$narrowed" swift test 2>&1 | tee "$work/test.log"
skipped=$(grep -c ' skipped: ' "$work/test.log" || true)
for tool in $hidden; do
    if ! grep ' skipped: ' "$work/test.log" | grep -q -- "needs.*$tool"; then
        echo "fresh-clone: no test was skipped for want of $tool" >&2
        exit 1
    fi
done
echo "fresh-clone: passed; $skipped tests skipped for want of a tool"
