# SPDX-License-Identifier: ISC
"""The claim gateway's limits (issue 25, section 3), on a real
ankusa-gateway (test_claims.Gateway: its fds made here as the master
makes them) over a local claim store: a 20 MiB claim is streamed with
the gateway's peak RSS far below its size, a client that reads nothing
is dropped after the write timeout, the connections past the cap are
answered 503 overload and closed, accepting at EMFILE pauses instead
of spinning, and a store failing mid-answer cuts it short and closes.
"""

import hashlib
import http.client
import json
import os
import resource
import socket
import time

import ankusa
import claimref
import frames
import test_claims
import test_control
from test_claims import Gateway, check_in, local_store

MAX_CONNS = 256         # workers/gateway_conn.h GATEWAY_MAX_CONNS
WRITE_TIMEOUT = 10      # workers/gateway_conn.h GATEWAY_WRITE_TIMEOUT
BIG = 20 * 1024 * 1024


def _big_claim(s3=False):
    """(gateway, tenant, claim id, body) for one 20 MiB claim in a local
    store, or in S3 (moto: Skip without it)."""
    body = os.urandom(1 << 20) * 20
    if s3:
        ep, key, secret = test_claims.moto()
        store = test_claims.s3_store(ep, key, secret)
        gconf = {"store": {"type": "s3", "s3": {
            "bucket": test_claims.BUCKET, "region": test_claims.REGION,
            "endpoint": ep, "access_key_id": key,
            "secret_access_key": secret}}}
    else:
        root = ankusa.tmpdir("claims")
        store = local_store(root)
        gconf = {"store": {"type": "local", "root": root}}
    # The deliver process's sandbox lets it write the root its config
    # names only.
    d = frames.Deliver(claims_root=store["root"])
    try:
        out = check_in(d, 1, store, "big", [body], timeout=120)
    finally:
        d.close()
    assert out["result"] == "ok", out
    cid = test_claims.URN.match(out["urns"][0]).group(2)
    return Gateway(gconf), "big", cid, body


def _status_kb(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError("no %s in /proc/%d/status" % (field, pid))


def _get(port, path, headers=None, conn=None):
    own = conn is None
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        h = {k.lower(): v for k, v in r.getheaders()}
        sha = hashlib.sha256()
        n = 0
        while True:
            chunk = r.read(1 << 16)
            if not chunk:
                break
            sha.update(chunk)
            n += len(chunk)
        return r.status, h, n, sha.hexdigest()
    finally:
        if own:
            c.close()


def test_gateway_streams_large_claim():
    """A 20 MiB claim, whole and as a 15 MiB range, comes back byte for
    byte while the gateway's peak RSS grows by under 4 MiB."""
    _streams_large_claim(False)


def test_gateway_streams_large_claim_s3():
    """The same from an S3 store (moto), read by ranged GETs."""
    _streams_large_claim(True)


def _streams_large_claim(s3):
    g, tenant, cid, body = _big_claim(s3)
    path = claimref.path(claimref.sign(tenant, cid))
    # One small answer first, so that what evhttp allocates once is in.
    st, _, _, _ = _get(g.port, path, {"Range": "bytes=0-9"})
    assert st == 206, st
    hwm0 = _status_kb(g.proc.pid, "VmHWM")
    st, h, n, sha = _get(g.port, path)
    assert st == 200, st
    assert int(h["content-length"]) == BIG and n == BIG, (h, n)
    assert sha == hashlib.sha256(body).hexdigest()
    a, z = 1 << 20, (16 << 20) - 1
    st, h, n, sha = _get(g.port, path, {"Range": "bytes=%d-%d" % (a, z)})
    assert st == 206 and n == z - a + 1, (st, n)
    assert sha == hashlib.sha256(body[a:z + 1]).hexdigest()
    grew = _status_kb(g.proc.pid, "VmHWM") - hwm0
    ankusa.note("gateway peak RSS grew %d KiB serving 20 MiB + 15 MiB "
                "from %s (from %d KiB)" % (grew, "s3" if s3 else "local",
                                           hwm0))
    if _asan(ankusa.binary("ankusa-gateway")):
        # ASan keeps freed memory in its quarantine: no RSS to measure.
        ankusa.note("an ASan build: peak RSS not checked")
        return
    assert grew < 4096, "peak RSS grew %d KiB for a %d MiB claim" % (
        grew, BIG >> 20)


def _asan(path):
    with open(path, "rb") as f:
        return b"__asan_init" in f.read()


def test_gateway_drops_client_that_does_not_read():
    """A client asks for 20 MiB and reads nothing: the gateway drops it
    about GATEWAY_WRITE_TIMEOUT after its last write, the client then
    finds a short body and the end, and the gateway serves on."""
    g, tenant, cid, body = _big_claim()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s.connect(("127.0.0.1", g.port))
    s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % (
        claimref.path(claimref.sign(tenant, cid)).encode()))
    t0 = time.monotonic()

    def dropped():
        return "bytes unsent" in ankusa.tail(g.logpath, 20)
    ankusa.wait_until(dropped, timeout=WRITE_TIMEOUT + 10, interval=0.2,
                      what="the gateway dropping the stalled client")
    dt = time.monotonic() - t0
    assert WRITE_TIMEOUT - 1 <= dt <= WRITE_TIMEOUT + 5, dt
    s.settimeout(10)
    got = 0
    try:
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            got += len(chunk)
    except ConnectionResetError:
        pass
    s.close()
    assert 0 < got < BIG, got
    st, h, n, sha = _get(g.port, claimref.path(claimref.sign(tenant, cid)),
                         {"Range": "bytes=0-99"})
    assert st == 206 and n == 100, (st, n)
    ankusa.note("stalled client dropped after %.1f s, %d of %d bytes sent"
                % (dt, got, BIG))


def test_gateway_connection_cap():
    """256 keep-alive connections are served; the request of one more is
    answered 503 overload with Retry-After and the connection closed;
    the 256 still work, and once some close a new one is served."""
    root = ankusa.tmpdir("claims")
    g = Gateway({"store": {"type": "local", "root": root}})
    path = claimref.path(claimref.sign("t", "0" * 52))
    held = []
    try:
        for _ in range(MAX_CONNS):
            c = http.client.HTTPConnection("127.0.0.1", g.port, timeout=10)
            st, _, _, _ = _get(g.port, path, conn=c)
            assert st == 404, st
            held.append(c)
        c = http.client.HTTPConnection("127.0.0.1", g.port, timeout=10)
        c.request("GET", path)
        r = c.getresponse()
        data = r.read()
        assert r.status == 503, (r.status, data)
        assert json.loads(data) == {"error": "overload"}, data
        assert r.getheader("Retry-After") == "1"
        assert (r.getheader("Connection") or "").lower() == "close"
        assert r.will_close
        c.close()
        assert "refusing one more" in ankusa.tail(g.logpath, 50)
        # The ones served keep being served.
        for c in (held[0], held[-1]):
            st, _, _, _ = _get(g.port, path, conn=c)
            assert st == 404, st
        for c in held[:8]:
            c.close()
        held = held[8:]

        def served():
            st, _, _, _ = _get(g.port, path)
            return st == 404
        ankusa.wait_until(served, timeout=10,
                          what="a new connection served after 8 closed")
    finally:
        for c in held:
            c.close()


def test_gateway_emfile_no_spin():
    """With the gateway's descriptors nearly all used (a low
    RLIMIT_NOFILE set on it), connections it cannot accept do not spin
    its loop; once descriptors are back it answers them."""
    root = ankusa.tmpdir("claims")
    g = Gateway({"store": {"type": "local", "root": root}})
    pid = g.proc.pid
    top = max(int(f) for f in os.listdir("/proc/%d/fd" % pid))
    soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    req = b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % (
        claimref.path(claimref.sign("t", "0" * 52)).encode())
    socks = []
    try:
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (top + 3, hard))
        for _ in range(10):
            s = socket.create_connection(("127.0.0.1", g.port), 10)
            s.sendall(req)
            socks.append(s)
        time.sleep(0.5)
        cpu0 = test_control._cpu_s(pid)
        time.sleep(3)
        used = test_control._cpu_s(pid) - cpu0
        assert used < 0.3, "gateway used %.2f s of CPU in 3 s at EMFILE" \
            % used
        assert "accept; not accepting" in ankusa.tail(g.logpath, 50)
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
        last = socks[-1]
        last.settimeout(10)
        data = last.recv(4096)
        assert data.startswith(b"HTTP/1.1 404"), data[:100]
    finally:
        for s in socks:
            s.close()
        try:
            resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
        except OSError:
            pass


def test_gateway_store_fails_mid_answer():
    """The pack is cut to 8 MiB while its claim is being sent: the answer
    ends early and the connection closes, so the client sees fewer bytes
    than its Content-Length; the gateway serves on."""
    g, tenant, cid, body = _big_claim()
    packs = [os.path.join(dp, f) for dp, _, fs in
             os.walk(os.path.dirname(g.logpath) + "/../claims") for f in fs]
    assert len(packs) == 1, packs
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s.settimeout(10)
    s.connect(("127.0.0.1", g.port))
    s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % (
        claimref.path(claimref.sign(tenant, cid)).encode()))
    got = b""
    while len(got) < (1 << 20):
        chunk = s.recv(1 << 16)
        assert chunk, "closed after %d bytes" % len(got)
        got += chunk
    head, _, first = got.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and \
        b"Content-Length: %d" % BIG in head, head
    # The gateway may have read a few MiB ahead (into the sockets'
    # buffers) by now; the rest of the 20 MiB it cannot.
    os.truncate(packs[0], 8 << 20)
    n = len(first)
    while True:
        try:
            chunk = s.recv(1 << 16)
        except ConnectionResetError:
            break
        if not chunk:
            break
        n += len(chunk)
    s.close()
    assert (1 << 20) - len(head) <= n < BIG, n
    assert "answer cut short" in ankusa.tail(g.logpath, 20)
    # What is left of the pack is still served.
    st, _, n, sha = _get(g.port, claimref.path(claimref.sign(tenant, cid)),
                         {"Range": "bytes=0-99"})
    assert st == 206 and n == 100, (st, n)
