#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""A fake ankusa-edge, for tests of the master's frame readers.

usage: fake_edge.py SEND_FILE ANSWER_FILE

Started by the master in an edge's place (see test_hostile.FakeEdges):
writes the bytes of SEND_FILE (frames built by the test, the hello first)
to its channel, fd 3, in one write, then copies whatever the master sends
back into ANSWER_FILE until the master closes the channel (or 20 s pass).
"""

import socket
import sys
import time


def main():
    send, answers = sys.argv[1], sys.argv[2]
    with open(send, "rb") as f:
        data = f.read()
    ch = socket.socket(fileno=3)
    ch.sendall(data)
    ch.settimeout(1.0)
    got = bytearray()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            b = ch.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            break
        if not b:
            break
        got += b
        with open(answers, "wb") as f:
            f.write(got)
    with open(answers, "wb") as f:
        f.write(got)


if __name__ == "__main__":
    main()
