#!/usr/bin/env python3
"""fdstore_stub.py PATH: a stand-in for systemd's descriptor store, for benchmarks: binds a datagram socket at
PATH (heraldd's NOTIFY_SOCKET, with FDSTORE set) and keeps the descriptors sent to it with FDSTORE=1 under their
FDNAME, closing them on FDSTOREREMOVE=1, until killed: heraldd then keeps its state log in a memfd, as under
systemd 254 or later. It hands nothing back (each run starts empty)."""
import array
import os
import socket
import sys

sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(sys.argv[1])
kept = {}
while True:
    message, ancillary, _, _ = sock.recvmsg(4096, socket.CMSG_SPACE(64 * 4))
    fields = dict(line.split("=", 1) for line in message.decode().split("\n") if "=" in line)
    fds = array.array("i")
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    name = fields.get("FDNAME", "stored")
    if fields.get("FDSTOREREMOVE") == "1":
        for fd in kept.pop(name, []):
            os.close(fd)
    kept.setdefault(name, []).extend(fds)
