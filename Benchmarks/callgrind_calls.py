#!/usr/bin/env python3
"""callgrind_calls.py OUT [N] - from a callgrind output file: total instructions, instructions per unit of N (e.g.
deliveries), and how many times the costly runtime entry points were called (allocations, reference counting,
locks, syscalls wrappers), per unit of N. A measuring tool for Benchmarks/profile.sh, not part of the product.

callgrind writes each call as `cfn=(id) name` (the name only the first time an id appears) followed by
`calls=COUNT target`; summing COUNT per callee name gives exact call counts over the whole run."""
import re
import sys
from collections import defaultdict

WATCH = [
    "malloc", "free", "realloc", "posix_memalign", "swift_allocObject", "swift_deallocObject", "swift_retain",
    "swift_release", "swift_bridgeObjectRetain", "swift_bridgeObjectRelease", "swift_beginAccess",
    "swift_isUniquelyReferenced_nonNull_native", "swift_task_create", "swift_continuation_resume",
    "swift_task_enqueueGlobal", "pthread_mutex_lock", "pthread_cond_signal", "__lll_lock_wait",
    "read", "write", "writev", "readv", "epoll_wait", "epoll_ctl", "clock_gettime", "futex", "syscall",
    "memmove", "memcpy", "__memmove_avx_unaligned_erms",
]


def main():
    path = sys.argv[1]
    units = float(sys.argv[2]) if len(sys.argv) > 2 else 0
    names = {}
    calls = defaultdict(int)
    total = 0
    pending = None
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                total = max(total, int(line.split()[1]))
            m = re.match(r"(c?)fn=\((\d+)\)(?: (.*))?", line)
            if m:
                if m.group(3):
                    names[m.group(2)] = m.group(3).strip()
                # A `fn=` line names the function whose costs follow; only `cfn=` starts a call.
                pending = names.get(m.group(2), "?") if m.group(1) else None
                continue
            if pending and line.startswith("calls="):
                calls[pending] += int(line[6:].split()[0])
                pending = None
    print(f"total instructions: {total:,}")
    if units:
        print(f"per unit ({units:,.0f} units): {total / units:,.0f} instructions")
    print(f"{'callee':48} {'calls':>14} {'per unit':>10}")
    for callee, count in sorted(calls.items(), key=lambda kv: -kv[1]):
        base = callee.split("'")[0]
        if any(base == w or base.startswith(w + "@") or base.endswith(" " + w) for w in WATCH):
            per = f"{count / units:10.2f}" if units else ""
            print(f"{callee[:48]:48} {count:14,} {per}")


if __name__ == "__main__":
    main()
