#!/usr/bin/env python3
"""state_timing.py COUNT LABEL=SOCKET:PID ...: times retained posts, one at a time, on several heraldds at once.

Each round posts one retained value (32 bytes, to one of 100 names, with a request) to each daemon in turn, in an
order that alternates, and waits for its ACK: COUNT rounds after 1,000 of warm-up. So every daemon sees the same
moments of the machine's noise, and each post is a turn of its own (one record, one pwrite: the worst case; under
load a turn holds many). Prints per daemon the median round trip, and against the first daemon the median of the
paired differences (this round's post here minus this round's post there) and the daemon's CPU time per post (the
sum of its threads' /proc schedstat run time, in ns, over the timed rounds). Then the same posts in writes of 100
(request 0) and a PING, as a busy client sends them: heraldd's CPU time per post, which a turn of many posts shares
one pwrite among. The driver of Benchmarks/state.sh."""
import glob
import socket
import statistics
import struct
import sys
import time


def frame(kind, flags, body):
    return struct.pack("<IBB", 2 + len(body), kind, flags) + body


def str8(text):
    data = text.encode()
    return bytes([len(data)]) + data


def cpu_ns(pid):
    total = 0
    for path in glob.glob("/proc/%d/task/*/schedstat" % pid):
        with open(path) as f:
            total += int(f.read().split()[0])
    return total


class Daemon:
    def __init__(self, label, path, pid):
        self.label, self.pid = label, pid
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.sock.sendall(frame(0x01, 0, struct.pack("<HH", 1, 1) + str8("state-timing")))
        self.buffer = b""
        self.next_frame()  # WELCOME
        self.times = []

    def next_frame(self):
        while True:
            if len(self.buffer) >= 4:
                length = struct.unpack_from("<I", self.buffer)[0]
                if len(self.buffer) >= 4 + length:
                    data, self.buffer = self.buffer[: 4 + length], self.buffer[4 + length :]
                    return data
            chunk = self.sock.recv(65536)
            if not chunk:
                sys.exit("%s closed the connection" % self.label)
            self.buffer += chunk

    def batch(self, start):
        posts = b"".join(
            frame(0x02, 1, struct.pack("<I", 0) + str8("bench.state.n%d" % (i % 100)) + b"%032d" % i)
            for i in range(start, start + 100)
        )
        self.sock.sendall(posts + frame(0x06, 0, struct.pack("<I", 77)))
        while True:
            reply = self.next_frame()
            if reply[4] == 0x83 and struct.unpack_from("<I", reply, 6)[0] == 77:
                return
            if reply[4] == 0x85:
                sys.exit("ERROR from %s" % self.label)

    def post(self, index):
        body = struct.pack("<I", 1 + index % 1000000) + str8("bench.state.n%d" % (index % 100)) + b"%032d" % index
        data = frame(0x02, 1, body)
        start = time.perf_counter_ns()
        self.sock.sendall(data)
        while True:
            reply = self.next_frame()
            if reply[4] == 0x83:
                break
            if reply[4] == 0x85:
                sys.exit("ERROR from %s" % self.label)
        return time.perf_counter_ns() - start


count = int(sys.argv[1])
daemons = []
for argument in sys.argv[2:]:
    label, rest = argument.split("=", 1)
    path, pid = rest.rsplit(":", 1)
    daemons.append(Daemon(label, path, int(pid)))
for index in range(1000):
    for daemon in daemons:
        daemon.post(index)
cpu_before = [cpu_ns(d.pid) for d in daemons]
for index in range(count):
    order = daemons if index % 2 == 0 else list(reversed(daemons))
    for daemon in order:
        daemon.times.append(daemon.post(index))
cpu_after = [cpu_ns(d.pid) for d in daemons]
base = daemons[0]
base_cpu = (cpu_after[0] - cpu_before[0]) / count
for number, daemon in enumerate(daemons):
    rtt = statistics.median(daemon.times) / 1000
    cpu = (cpu_after[number] - cpu_before[number]) / count
    line = "%-12s round trip median %6.2f us, heraldd CPU %5.2f us/post" % (daemon.label, rtt, cpu / 1000)
    if daemon is not base:
        pairs = sorted(a - b for a, b in zip(daemon.times, base.times))
        q = lambda p: pairs[int(p * (len(pairs) - 1))] / 1000
        line += "; against %s: paired difference median %+.2f us (quartiles %+.2f, %+.2f), CPU %+.2f us/post" % (
            base.label, q(0.5), q(0.25), q(0.75), (cpu - base_cpu) / 1000)
    print(line)

rounds = max(count // 100, 1)
cpu_before = [cpu_ns(d.pid) for d in daemons]
for index in range(rounds):
    order = daemons if index % 2 == 0 else list(reversed(daemons))
    for daemon in order:
        daemon.batch(index * 100)
cpu_after = [cpu_ns(d.pid) for d in daemons]
posts = rounds * 100
base_cpu = (cpu_after[0] - cpu_before[0]) / posts
for number, daemon in enumerate(daemons):
    cpu = (cpu_after[number] - cpu_before[number]) / posts
    line = "%-12s in writes of 100: heraldd CPU %5.2f us/post" % (daemon.label, cpu / 1000)
    if daemon is not base:
        line += ", %+.2f us/post against %s" % ((cpu - base_cpu) / 1000, base.label)
    print(line)
