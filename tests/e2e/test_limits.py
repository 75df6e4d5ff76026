# SPDX-License-Identifier: ISC
"""Ingest limits (issue 25, section 3): the head's deadline in total
(http.header_timeout_ms), the body's minimum rate after its grace
(http.min_body_rate), connections per client address
(http.max_conns_per_ip), body bytes held by an edge
(http.max_buffered_bytes), bounded chunk extensions and trailers, and
dedupe followers counted in the commit queue's bounds.

Every test is named test_limits_* (scripts/chaos runs them by that
prefix), talks to 127.0.0.0/8 only and ends by itself.
"""

import concurrent.futures
import http.client
import re
import socket
import threading
import time

from ankusa import (Daemon, Raw, expect, expect_accepted, head_bytes,
                    hold_source, ingest_refused, jbody, note, post,
                    wait_until)


def limits_daemon(workers=1, batcher=None, sources=None, **http):
    """A daemon with one edge (per-edge limits are then the node's) and
    the given http.* keys."""
    d = Daemon(workers=workers, batcher=batcher, sources=sources)
    d.http.update(http)
    d.write_config()
    return d.start()


def stored_ids(d):
    return {h["id"] for h in d.queue()}


def trickle(raw, data, interval, stop):
    """Send data one byte every interval seconds until stop is set or the
    server closes; returns the time of the first byte."""
    first = None
    for i in range(len(data)):
        if stop.is_set():
            break
        try:
            raw.send(data[i:i + 1])
        except OSError:
            break
        if first is None:
            first = time.monotonic()
        if stop.wait(interval):
            break
    return first


def read_408(raw, timeout):
    r = raw.read_response(timeout=timeout)
    assert r.status == 408, "expected 408, got %r" % r
    assert r.json() == {"error": "request_timeout"}, r.body
    assert r.headers.get("connection", "").lower() == "close", r.headers
    assert raw.closed_by_peer(5), "the connection stayed open after a 408"
    return r


HEAD_MS = 3000


def test_limits_head_trickle_408():
    """A head sent a byte a second is answered 408 once
    http.header_timeout_ms has passed in total, although the client never
    stops sending; a connection's first request is timed from the accept;
    a later one from its own first byte, the keep-alive wait before it not
    counted; a connection that sends nothing is closed without a word."""
    d = limits_daemon(header_timeout_ms=HEAD_MS)
    head = head_bytes("POST", "/webhooks/github",
                      [("Content-Length", "2")]) + b"{}"
    pool = concurrent.futures.ThreadPoolExecutor(8)
    stops = []

    def trickled(delay):
        """(s from connect to the 408, s from the first byte to it)."""
        raw = Raw(d.port, timeout=30)
        t0 = time.monotonic()
        stop = threading.Event()
        stops.append(stop)
        time.sleep(delay)
        f = pool.submit(trickle, raw, head, 1.0, stop)
        try:
            read_408(raw, 20)
            t = time.monotonic()
        finally:
            stop.set()
            raw.close()
        return t - t0, t - f.result()

    def silent():
        raw = Raw(d.port, timeout=30)
        t0 = time.monotonic()
        try:
            assert raw.closed_by_peer(15), "a silent connection stayed"
            assert raw.buf == b"", "a silent connection got %r" % raw.buf
            return time.monotonic() - t0
        finally:
            raw.close()

    at_once = pool.submit(trickled, 0)
    late = pool.submit(trickled, 2.0)
    quiet = pool.submit(silent)
    try:
        total, since_first = at_once.result(timeout=30)
        note("trickle from the accept: 408 after %.1f s" % total)
        assert HEAD_MS / 1000 - 0.2 <= total < HEAD_MS / 1000 + 2, total
        total, since_first = late.result(timeout=30)
        note("first byte 2 s after the accept: 408 %.1f s after the "
             "accept, %.1f s after the first byte" % (total, since_first))
        assert HEAD_MS / 1000 - 0.2 <= total < HEAD_MS / 1000 + 2, total
        assert since_first < HEAD_MS / 1000 - 0.5, since_first
        t = quiet.result(timeout=30)
        note("silent connection closed after %.1f s" % t)
        assert HEAD_MS / 1000 - 0.2 <= t < HEAD_MS / 1000 + 2, t
    finally:
        for s in stops:
            s.set()
        pool.shutdown(wait=True)

    # Keep-alive: an idle wait longer than the head's deadline is no
    # timeout; the next head is timed from its first byte.
    raw = Raw(d.port, timeout=30)
    try:
        raw.send(head)
        r = raw.read_response(timeout=10)
        expect_accepted(r.status, r.headers, r.body, "first request")
        time.sleep(HEAD_MS / 1000 + 1)
        raw.send(head)
        r = raw.read_response(timeout=10)
        expect_accepted(r.status, r.headers, r.body, "after an idle wait")
        stop = threading.Event()
        th = threading.Thread(target=trickle, args=(raw, head, 1.0, stop))
        t0 = time.monotonic()
        th.start()
        try:
            read_408(raw, 20)
        finally:
            stop.set()
            th.join(10)
        t = time.monotonic() - t0
        note("third request trickled: 408 after %.1f s" % t)
        assert HEAD_MS / 1000 - 0.2 <= t < HEAD_MS / 1000 + 2, t
    finally:
        raw.close()
    wait_until(lambda: ingest_refused(d, "request_timeout") == 3,
               timeout=10,
               what="3 request_timeout refusals counted")
    # The edge goes on: a plain post still works.
    st, h, data = post(d.port, "/webhooks/github", b"{}")
    expect_accepted(st, h, data, "after the 408s")


test_limits_head_trickle_408.timeout = 90


def test_limits_slow_body_408():
    """A body below http.min_body_rate on average is answered 408 after
    the grace of 10 s (200 bytes/s against 1024: cut when 200 t < 1024 (t
    - 10), near 12.4 s), while a body at 2 KiB/s for 14 s from the same
    address is taken and stored."""
    d = limits_daemon(min_body_rate=1024)
    slow_len, fast_len = 100000, 14 * 2048

    def slow():
        raw = Raw(d.port, timeout=40)
        stop = threading.Event()
        try:
            raw.send(head_bytes("POST", "/webhooks/github",
                                [("Content-Length", str(slow_len))]))
            t0 = time.monotonic()

            def feed():
                while not stop.is_set():
                    try:
                        raw.send(b"a" * 200)
                    except OSError:
                        return
                    stop.wait(1.0)
            th = threading.Thread(target=feed)
            th.start()
            try:
                read_408(raw, 30)
            finally:
                stop.set()
                th.join(10)
            return time.monotonic() - t0
        finally:
            raw.close()

    def fast():
        raw = Raw(d.port, timeout=40)
        try:
            raw.send(head_bytes("POST", "/webhooks/github",
                                [("Content-Length", str(fast_len))]))
            t0 = time.monotonic()
            for _ in range(14 * 4):
                raw.send(b"b" * 512)
                time.sleep(0.25)
            r = raw.read_response(timeout=20)
            return (expect_accepted(r.status, r.headers, r.body,
                                    "a body at 2 KiB/s"),
                    time.monotonic() - t0)
        finally:
            raw.close()

    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        fs, ff = ex.submit(slow), ex.submit(fast)
        t = fs.result(timeout=60)
        gid, tf = ff.result(timeout=60)
    note("slow body (200 B/s) cut after %.1f s; 2 KiB/s body of %d bytes "
         "taken in %.1f s" % (t, fast_len, tf))
    assert 11.5 <= t < 14.5, "the slow body was cut after %.1f s" % t
    assert tf > 12, tf
    assert stored_ids(d) == {gid}, "stored %r, acknowledged %r" % (
        stored_ids(d), gid)
    wait_until(lambda: ingest_refused(d, "request_timeout") == 1,
               timeout=10,
               what="the slow body counted as request_timeout")


test_limits_slow_body_408.timeout = 90


def connect_from(port, src, timeout=10):
    return socket.create_connection(("127.0.0.1", port), timeout,
                                    source_address=(src, 0))


def refused_at_accept(port, src, extra, timeout=5):
    """True if the server resets or closes a new connection from src
    without an answer (the reset may even come before connect returns)."""
    try:
        s = connect_from(port, src)
    except ConnectionResetError:
        return True
    extra.append(s)
    s.settimeout(timeout)
    try:
        s.sendall(head_bytes("GET", "/health", []))
        return s.recv(65536) == b""
    except socket.timeout:
        return False
    except OSError:
        return True


def health_on(s, timeout=10):
    """GET /health on s (keep-alive); True if answered 200."""
    s.settimeout(timeout)
    s.sendall(head_bytes("GET", "/health", []))
    buf = b""
    while b"\r\n\r\n" not in buf or not buf.endswith(b"}"):
        d = s.recv(65536)
        if not d:
            return False
        buf += d
    return buf.startswith(b"HTTP/1.1 200 ")


def test_limits_conns_per_ip():
    """With http.max_conns_per_ip 3 on one edge, a fourth connection from
    127.0.0.1 is closed as it is accepted, while the three it has go on
    working, 127.0.0.2 still connects, and a slot freed is taken again;
    the refusals are counted and logged at most once a second."""
    d = limits_daemon(max_conns_per_ip=3)
    held = [connect_from(d.port, "127.0.0.1") for _ in range(3)]
    extra = []
    try:
        for s in held:
            assert health_on(s), "a held connection was not answered"
        assert refused_at_accept(d.port, "127.0.0.1", extra), \
            "a fourth connection was answered"
        other = connect_from(d.port, "127.0.0.2")
        extra.append(other)
        assert health_on(other), "127.0.0.2 was refused"
        for s in held:
            assert health_on(s), "a held connection stopped working"
        # A flood from the same address: every one refused.
        t0 = time.monotonic()
        for _ in range(30):
            assert refused_at_accept(d.port, "127.0.0.1", extra), \
                "a flood connection was answered"
        flood_s = time.monotonic() - t0
        wait_until(lambda: ingest_refused(d, "conns_per_ip") == 31,
                   timeout=10,
                   what="31 conns_per_ip refusals counted")
        # Free a slot: the next connection from 127.0.0.1 is served.
        held.pop().close()
        # The edge may see the close a moment after the client made it.
        ok = False
        for _ in range(20):
            try:
                s = connect_from(d.port, "127.0.0.1")
                extra.append(s)
                if health_on(s, 5):
                    ok = True
                    break
            except OSError:
                pass
            time.sleep(0.1)
        assert ok, "a freed slot was not given back"
        for s in held:
            assert health_on(s), "a held connection stopped working"
        lines = [l for l in d.log_since_start().splitlines()
                 if "http.max_conns_per_ip" in l]
        note("31 refused in %.1f s; %d log lines" % (flood_s, len(lines)))
        assert lines, "no refusal logged"
        assert len(lines) <= flood_s + 3, "refusals not rate-limited: " \
            "%d lines in %.1f s" % (len(lines), flood_s)
        assert "127.0.0.1" in lines[0], lines[0]
    finally:
        for s in held + extra:
            s.close()


def test_limits_buffered_overload():
    """With http.max_buffered_bytes 10000 on one edge, body bytes are
    counted as they arrive, never as announced: a request announcing
    1000000 bytes and sending 10 holds 10, and another is taken beside
    it; a request whose bytes would take the edge past the bound is
    answered 503 overload with Retry-After and the connection closed
    (after its 100 Continue: nothing is refused for what it announces),
    both while another body is being read and while one waits for the
    master's commit; the bytes held are taken, and every 201 is
    stored."""
    d = limits_daemon(max_buffered_bytes=10000,
                      batcher={"max_queue": 10000, "max_delay_ms": 2000})
    acked = []

    def overloaded(n):
        raw = Raw(d.port, timeout=20)
        try:
            raw.send(head_bytes("POST", "/webhooks/github",
                                [("Content-Length", str(n)),
                                 ("Expect", "100-continue")]))
            r = raw.read_response(timeout=10)
            assert r.status == 100, "expected 100 Continue, got %r" % r
            try:
                raw.send(b"b" * n)
            except OSError:
                pass
            r = raw.read_response(timeout=10)
            expect(r.status, r.headers, r.body, 503, {"error": "overload"})
            assert r.headers.get("retry-after") == "1", r.headers
            assert raw.closed_by_peer(5), "open after a 503"
        finally:
            raw.close()

    # D announces 1000000 bytes and sends 10: it holds 10, not 1000000.
    big = Raw(d.port, timeout=30)
    big.send(head_bytes("POST", "/webhooks/github",
                        [("Content-Length", "1000000")]) + b"d" * 10)
    # A: 8000 bytes announced, 6000 sent: held while it is read.
    a = Raw(d.port, timeout=30)
    a.send(head_bytes("POST", "/webhooks/github",
                      [("Content-Length", "8000")]) + b"a" * 6000)
    time.sleep(0.3)
    overloaded(5000)
    # C fits beside A and D (7010 <= 10000): taken.
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        fc = ex.submit(post, d.port, "/webhooks/github", b"c" * 1000,
                       None, 20)
        a.send(b"a" * 2000)
        # A's body is read and waits in the master's batch (2 s): still
        # held, so B is still refused.
        time.sleep(0.5)
        overloaded(4000)
        ra = a.read_response(timeout=20)
        acked.append(expect_accepted(ra.status, ra.headers, ra.body, "A"))
        st, h, data = fc.result(timeout=20)
        acked.append(expect_accepted(st, h, data, "C"))
    a.close()
    # Only D's 10 bytes held now: B is taken.
    st, h, data = post(d.port, "/webhooks/github", b"b" * 4000, timeout=20)
    acked.append(expect_accepted(st, h, data, "B retried"))
    big.close()
    assert stored_ids(d) == set(acked), "stored %r, acknowledged %r" % (
        stored_ids(d), acked)
    wait_until(lambda: ingest_refused(d, "overload") == 2,
               timeout=10,
               what="2 overload refusals counted")


SLOW_SENDERS = 40
SLOW_BODY = 8000000
SLOW_SENT = 2000000


def test_limits_slow_senders_no_starvation():
    """Issue 36: 40 requests from 127.0.0.2, each announcing an 8 MB body,
    sending 2 MB of it and then a byte a second, on one edge with the
    default http.max_buffered_bytes (256 MiB: the 320 MB they announce
    would have filled it) and http.max_buffered_bytes_per_ip (64 MiB: the
    80 MB they send go past it).  Their own requests past their address's
    share are answered 503 overload; meanwhile 127.0.0.3 posts a 6 MB
    body and gets 201 in under 2 s, three times (when announcements were
    reserved, the 33 taken held 264 MB and 127.0.0.3 got 503)."""
    d = limits_daemon(max_body_bytes=SLOW_BODY,
                      batcher={"max_queue": 10000, "max_delay_ms": 5})
    stop = threading.Event()
    slow = []
    head = head_bytes("POST", "/webhooks/github",
                      [("Content-Length", str(SLOW_BODY))])
    chunk = b"s" * SLOW_SENT

    def open_slow():
        s = socket.create_connection(("127.0.0.1", d.port), 20,
                                     source_address=("127.0.0.2", 0))
        slow.append(s)
        try:
            s.sendall(head + chunk)
        except OSError:
            pass

    def trickler():
        while not stop.wait(1.0):
            for s in list(slow):
                try:
                    s.send(b"s")
                except OSError:
                    pass

    def refused_503(s):
        """True if s was answered 503 overload and closed."""
        s.settimeout(0.2)
        data = b""
        try:
            while True:
                d2 = s.recv(65536)
                if not d2:
                    break
                data += d2
        except (socket.timeout, ConnectionError):
            pass
        return data.startswith(b"HTTP/1.1 503 ") and b'"overload"' in data

    t = threading.Thread(target=trickler, daemon=True)
    try:
        for _ in range(SLOW_SENDERS):
            open_slow()
        t.start()
        time.sleep(0.5)
        for i in range(3):
            c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=10,
                                           source_address=("127.0.0.3", 0))
            t0 = time.monotonic()
            try:
                c.request("POST", "/webhooks/github", body=b"o" * 6000000,
                          headers={"Content-Type": "application/json"})
                r = c.getresponse()
                data = r.read()
            finally:
                c.close()
            took = time.monotonic() - t0
            note("127.0.0.3 post %d: %d in %.2f s" % (i, r.status, took))
            expect_accepted(r.status, dict(r.getheaders()), data,
                            "127.0.0.3 beside the slow senders")
            assert took < 2.0, "127.0.0.3 waited %.2f s" % took
        n503 = sum(1 for s in slow if refused_503(s))
        cap = 64 * 1024 * 1024
        note("slow senders: %d of %d answered 503 overload" % (
            n503, SLOW_SENDERS))
        # 33 of them fit 64 MiB at 2 MB; the rest are their own address's
        # to refuse.
        assert n503 == SLOW_SENDERS - cap // SLOW_SENT, n503
    finally:
        stop.set()
        for s in slow:
            s.close()
    wait_until(lambda: ingest_refused(d, "overload") ==
               SLOW_SENDERS - cap // SLOW_SENT, timeout=10,
               what="the overload refusals counted")


test_limits_slow_senders_no_starvation.timeout = 60


def chunked(chunks, trailers=()):
    """A chunked POST: chunks as (data, extension bytes) pairs."""
    body = b""
    for data, ext in chunks:
        body += b"%x%s\r\n%s\r\n" % (len(data), ext, data)
    body += b"0\r\n" + b"".join(t + b"\r\n" for t in trailers) + b"\r\n"
    return head_bytes("POST", "/webhooks/github",
                      [("Transfer-Encoding", "chunked")], body)


def test_limits_chunk_bounds():
    """Chunk extensions and trailers are bounded: 16 extensions a size
    line, 16 KiB of them a body, 16 trailer fields, 8 KiB of trailers;
    past them 400 bad_request (extensions) or 431 headers_too_large
    (trailers), within them 201."""
    d = limits_daemon()
    cases = [
        ("16 extensions", chunked([(b"{}", b";e" * 16)]), 201, None),
        ("17 extensions", chunked([(b"{}", b";e" * 17)]), 400,
         "bad_request"),
        ("16 KB of extensions", chunked([(b"x", b";" + b"e" * 999)] * 16),
         201, None),
        ("17 KB of extensions", chunked([(b"x", b";" + b"e" * 999)] * 17),
         400, "bad_request"),
        ("16 trailers", chunked([(b"{}", b"")], [b"t: v"] * 16), 201, None),
        ("17 trailers", chunked([(b"{}", b"")], [b"t: v"] * 17), 431,
         "headers_too_large"),
        ("9 KiB of trailers", chunked([(b"{}", b"")],
                                      [b"t: " + b"v" * 1019] * 9), 431,
         "headers_too_large"),
    ]
    acked = []
    for what, req, want, err in cases:
        raw = Raw(d.port, timeout=10)
        try:
            raw.send(req)
            r = raw.read_response(timeout=10)
            if want == 201:
                acked.append(expect_accepted(r.status, r.headers, r.body,
                                             what))
            else:
                expect(r.status, r.headers, r.body, want, {"error": err},
                       what)
                assert raw.closed_by_peer(5), "%s: left open" % what
        finally:
            raw.close()
    assert stored_ids(d) == set(acked), "stored %r, acknowledged %r" % (
        stored_ids(d), acked)


def test_limits_dedupe_followers_bounded():
    """Hooks that follow a queued hook's dedupe key count against
    batcher.max_queue like any hook: with max_queue 4 and a batch held
    3 s, a flood of 21 posts of one key gets as many 201s (the leader and
    3 duplicates, all with its id) as a flood of 21 distinct keys, and the
    rest 503 overload; one hook stored for the key."""
    d = limits_daemon(workers=2, sources={
        "gh": hold_source(dedupe="github")},
        batcher={"max_queue": 4, "max_delay_ms": 3000})
    n = 20

    def flood(keys):
        conns = []
        for _ in keys:
            c = socket.create_connection(("127.0.0.1", d.port), 10)
            conns.append(c)
        barrier = threading.Barrier(len(keys))

        def one(i):
            barrier.wait()
            return post(d.port, "/webhooks/gh", b'{"n":%d}' % i,
                        {"X-GitHub-Delivery": keys[i]}, 20)
        try:
            with concurrent.futures.ThreadPoolExecutor(len(keys)) as ex:
                return list(ex.map(one, range(len(keys))))
        finally:
            for c in conns:
                c.close()

    def leader_and_flood(keys, lead_key):
        with concurrent.futures.ThreadPoolExecutor(1) as ex:
            fl = ex.submit(post, d.port, "/webhooks/gh", b'{"lead":1}',
                           {"X-GitHub-Delivery": lead_key}, 20)
            time.sleep(0.3)
            answers = flood(keys)
            return fl.result(timeout=20), answers

    results = {}
    for kind, keys, lead in (
            ("distinct", ["k-%d" % i for i in range(n)], "lead-a"),
            ("one key", ["lead-b"] * n, "lead-b")):
        (st, h, data), answers = leader_and_flood(keys, lead)
        lid = expect_accepted(st, h, data, "%s: leader" % kind)
        ok = [a for a in answers if a[0] == 201]
        for st, h, data in answers:
            if st != 201:
                expect(st, h, data, 503, {"error": "overload"},
                       "%s: past the queue" % kind)
                assert h.get("retry-after") == "1", h
        if kind == "one key":
            for st, h, data in ok:
                j = jbody(data)
                assert j == {"status": "accepted", "id": lid,
                             "duplicate": True}, j
        results[kind] = len(ok)
        note("%s: leader + %d x 201, %d x 503" % (kind, len(ok),
                                                  n - len(ok)))
    assert results["distinct"] == 3, results
    assert results["one key"] == results["distinct"], \
        "followers of one key not bounded like hooks: %r" % results
    q = d.queue()
    assert len(q) == 2 + results["distinct"], \
        "stored %d hooks: the 2 leaders and %d distinct" % (
            len(q), results["distinct"])


test_limits_dedupe_followers_bounded.timeout = 60
