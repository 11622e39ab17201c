#!/usr/bin/env python3
"""state_client.py SOCKET COUNT RETAIN: posts COUNT posts of 32 bytes to 100 names (retained when RETAIN is 1),
request 0 in writes of 100, then a PING, and waits for its ACK: every post has been handled when it exits.
The driver of Benchmarks/state.sh; the frames are wire.md's."""
import socket
import struct
import sys


def frame(kind, flags, body):
    return struct.pack("<IBB", 2 + len(body), kind, flags) + body


def str8(text):
    data = text.encode()
    return bytes([len(data)]) + data


path, count, retain = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(path)
sock.sendall(frame(0x01, 0, struct.pack("<HH", 1, 1) + str8("state-bench")))
batch = []
for index in range(count):
    body = struct.pack("<I", 0) + str8("bench.state.n%d" % (index % 100)) + b"%032d" % index
    batch.append(frame(0x02, 1 if retain else 0, body))
    if len(batch) == 100:
        sock.sendall(b"".join(batch))
        batch = []
sock.sendall(b"".join(batch) + frame(0x06, 0, struct.pack("<I", 77)))
buffer = b""
while True:
    data = sock.recv(65536)
    if not data:
        sys.exit("heraldd closed the connection")
    buffer += data
    while len(buffer) >= 4 and len(buffer) >= 4 + struct.unpack_from("<I", buffer)[0]:
        length = struct.unpack_from("<I", buffer)[0]
        kind = buffer[4]
        if kind == 0x83 and struct.unpack_from("<I", buffer, 6)[0] == 77:
            sys.exit(0)
        if kind == 0x85:
            sys.exit("ERROR from heraldd")
        buffer = buffer[4 + length:]
