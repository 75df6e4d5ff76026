# SPDX-License-Identifier: ISC
"""Ingest: every status code of the contract, against the real daemon.

See shared/ankusa-contracts.md, "Ingest".  Each test starts its own ankusad
(two sources: `github` with a log sink, `acme-orders` bound to tenant acme
with two http sinks, one ordered: sources=2 sinks=3; their sinks never
deliver, so hooks stay in the store).
"""

import concurrent.futures
import http.client
import os
import resource
import signal
import socket
import subprocess
import threading
import time

from ankusa import (SRCDIR, Daemon, Raw, Skip, ankusactl, binary,
                    check_config, expect, expect_accepted, get, head_bytes,
                    jbody, hold_source, note, post, request, tail, tmpdir,
                    uuid7_ms, wait_until)
import ankusa

LIMIT = 1000000          # http.max_body_bytes of these tests


def queue_by_id(d, **kw):
    return {h["id"]: h for h in d.queue(**kw)}


# ------------------------------------------------------------------ 201

def test_accept_201_and_listed():
    d = Daemon().start()
    body = b'{"action":"opened","n":1}'
    t0 = int(time.time() * 1000)
    st, h, data = post(d.port, "/webhooks/github", body)
    gid = expect_accepted(st, h, data, "POST /webhooks/github")
    t1 = int(time.time() * 1000)
    assert h.get("content-type", "").startswith("application/json"), \
        "201 Content-Type %r" % h.get("content-type")
    # The UUIDv7 time is the receive time, in ms.
    assert t0 - 5 <= uuid7_ms(gid) <= t1 + 5, \
        "id %s time %d not within [%d, %d]" % (gid, uuid7_ms(gid), t0, t1)

    # The daemon says which log checksum libdb uses, proved at the open
    # (daemon/store/store_logsum.h): the installed build exports logsum.
    assert "store: log checksums by logsum" in d.log_text(), \
        "no checksum line in the log:\n%s" % d.log_text()[-2000:]

    body2 = b'{"order":42}' + b"x" * 1000
    st, h, data = post(d.port, "/webhooks/acme-orders", body2,
                       headers={"x-order": "o-42"})
    aid = expect_accepted(st, h, data, "POST /webhooks/acme-orders")

    # A query string does not change the route (nor is it an error).
    st, h, data = post(d.port, "/webhooks/github?delivery=1&x=y", body)
    qid = expect_accepted(st, h, data, "POST /webhooks/github?delivery=1")

    q = queue_by_id(d)
    assert set(q) == {gid, aid, qid}, "queue lists %r, want %r" % (
        sorted(q), sorted([gid, aid, qid]))
    g, a = q[gid], q[aid]
    for k in ("id", "seq", "tenant", "source", "received_at", "size",
              "rows"):
        assert k in g, "queue entry lacks %r: %r" % (k, g)
    assert (g["tenant"], g["source"], g["size"], g["rows"]) == \
        ("default", "github", len(body), 1), "github hook listed as %r" % g
    assert (a["tenant"], a["source"], a["size"], a["rows"]) == \
        ("acme", "acme-orders", len(body2), 2), "acme hook listed as %r" % a
    assert t0 - 5 <= g["received_at"] <= t1 + 5, \
        "received_at %r not within [%d, %d]" % (g["received_at"], t0, t1)
    assert a["seq"] > g["seq"], "seq did not increase: %r then %r" % (
        g["seq"], a["seq"])
    st = d.status()
    assert st["hooks"] == 3, "status hooks %r, want 3" % st["hooks"]


def test_ids_increase_in_order():
    d = Daemon().start()
    ids = []
    conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=10)
    for i in range(40):
        st, h, data = post(d.port, "/webhooks/github", b'{"i":%d}' % i,
                           conn=conn)
        ids.append(expect_accepted(st, h, data, "post %d" % i))
    conn.close()
    for a, b in zip(ids, ids[1:]):
        assert a < b, "ids not increasing: %s then %s" % (a, b)
    q = d.queue()
    seqs = {h["id"]: h["seq"] for h in q}
    assert [seqs.get(i) for i in ids] == sorted(seqs[i] for i in ids), \
        "seq order differs from answer order"
    assert len(set(seqs.values())) == len(seqs), "duplicate seq in queue"
    listed = [h["seq"] for h in q]
    assert listed == sorted(listed), "queue not listed in seq order"


def test_body_bytes_and_sizes():
    """An empty body, a binary body, exactly the cap: all stored with their
    exact size."""
    d = Daemon().start()
    cases = [b"", bytes(range(256)) * 4, b"y" * LIMIT]
    ids = []
    for b in cases:
        st, h, data = post(d.port, "/webhooks/github", b,
                           headers={"Content-Type":
                                    "application/octet-stream"})
        ids.append(expect_accepted(st, h, data, "body of %d bytes" % len(b)))
    q = queue_by_id(d)
    for i, b in zip(ids, cases):
        assert i in q, "id %s not listed" % i
        assert q[i]["size"] == len(b), "size %r, want %d" % (q[i]["size"],
                                                             len(b))


# ------------------------------------------------------------------ 404

def test_unknown_source_404():
    d = Daemon().start()
    want = {"error": "unknown_source"}
    for path in ["/webhooks/nosuch", "/webhooks/Github",
                 "/webhooks/bad.id", "/webhooks/bad%20id",
                 "/webhooks/" + "a" * 65, "/webhooks/github/extra",
                 "/webhooks/", "/webhooks//github", "/webhooks/gith*b"]:
        st, h, data = post(d.port, path, b"{}")
        expect(st, h, data, 404, want, "POST %s" % path)
    # Outside the prefix: 404 too (not_found or unknown_source).
    st, h, data = post(d.port, "/other/github", b"{}")
    assert st == 404, "POST /other/github: %d %r" % (st, data)
    assert jbody(data).get("error") in ("not_found", "unknown_source"), data
    assert d.status()["hooks"] == 0, "a refused hook was stored"


def test_tenant_path_routing():
    srcs = {
        "acme-orders": hold_source(tenant="acme"),
        "shared": hold_source(trust_url_tenant=True),
    }
    d = Daemon(sources=srcs, routing="tenant_path").start()
    st, h, data = post(d.port, "/webhooks/acme/acme-orders", b"{}")
    a = expect_accepted(st, h, data, "acme/acme-orders")
    st, h, data = post(d.port, "/webhooks/globex/shared", b"{}")
    g = expect_accepted(st, h, data, "globex/shared")
    want = {"error": "unknown_source"}
    for path in ["/webhooks/globex/acme-orders", "/webhooks/acme-orders",
                 "/webhooks/shared", "/webhooks/acme/nosuch",
                 "/webhooks/bad.tenant/shared", "/webhooks/acme/shared/x",
                 "/webhooks/_ankusa/shared"]:
        st, h, data = post(d.port, path, b"{}")
        expect(st, h, data, 404, want, "POST %s" % path)
    q = queue_by_id(d)
    assert set(q) == {a, g}, "queue %r" % sorted(q)
    assert (q[a]["tenant"], q[a]["source"]) == ("acme", "acme-orders"), q[a]
    assert (q[g]["tenant"], q[g]["source"]) == ("globex", "shared"), q[g]


def test_prefix_root():
    d = Daemon(prefix="/").start()
    st, h, data = post(d.port, "/github", b"{}")
    expect_accepted(st, h, data, "POST /github with prefix /")
    st, h, data = post(d.port, "/webhooks/github", b"{}")
    assert st == 404, "POST /webhooks/github with prefix /: %d" % st


# ------------------------------------------------------------------ 413

def test_413_by_content_length_before_body():
    d = Daemon().start()
    r = Raw(d.port)
    r.send(head_bytes("POST", "/webhooks/github",
                      [("Content-Type", "application/json"),
                       ("Content-Length", str(10 ** 9))]))
    # No body byte is sent: the answer must come anyway.
    resp = r.read_response(timeout=5)
    assert resp.status == 413, resp
    assert resp.json() == {"error": "payload_too_large", "limit": LIMIT}, \
        resp.body
    assert r.closed_by_peer(5), "connection still open after the 413"
    r.close()

    # One byte over the cap, by Content-Length.
    st, h, data = post(d.port, "/webhooks/github", b"z" * (LIMIT + 1))
    expect(st, h, data, 413, {"error": "payload_too_large", "limit": LIMIT},
           "body of limit+1 bytes")
    # Order of checks: 413 comes before 404 unknown source (check 2 < 3)
    # and before the header check (4).
    r = Raw(d.port)
    r.send(head_bytes("POST", "/webhooks/nosuch",
                      [("Content-Length", str(LIMIT + 1)),
                       ("X-Bad", b"a\x01b")]))
    resp = r.read_response(timeout=5)
    assert resp.status == 413, "huge CL to unknown source: %r" % resp
    r.close()
    assert d.status()["hooks"] == 0


def _send_until_answer(r, chunks):
    """Send chunks, stopping as soon as the server answers."""
    for c in chunks:
        if r.readable(0):
            return
        try:
            r.send(c)
        except (BrokenPipeError, ConnectionResetError):
            return


def test_413_chunked():
    d = Daemon().start()
    # Under the cap: accepted, size is the decoded length.
    parts = [b"a" * 1000, b"b" * 2000, b"c" * 7]
    body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + \
        b"0\r\n\r\n"
    r = Raw(d.port)
    r.send(head_bytes("POST", "/webhooks/github",
                      [("Transfer-Encoding", "chunked"),
                       ("Content-Type", "application/json")], body))
    resp = r.read_response(timeout=10)
    assert resp.status == 201, "small chunked body: %r" % resp
    cid = resp.json()["id"]
    r.close()
    q = queue_by_id(d)
    assert q[cid]["size"] == 3007, "chunked size %r" % q[cid]["size"]

    # Over the cap: 413 while reading.
    r = Raw(d.port)
    r.send(head_bytes("POST", "/webhooks/github",
                      [("Transfer-Encoding", "chunked")]))
    chunk = b"x" * 65536
    _send_until_answer(r, [b"%x\r\n%s\r\n" % (len(chunk), chunk)] * 40)
    resp = r.read_response(timeout=10)
    assert resp.status == 413, "chunked body over the cap: %r" % resp
    assert resp.json() == {"error": "payload_too_large", "limit": LIMIT}, \
        resp.body
    r.close()
    assert d.status()["hooks"] == 1, "the oversized chunked hook was stored"


# ------------------------------------------------------------------ 400

def test_400_invalid_header():
    d = Daemon().start()
    cases = [
        (b"x-bad", b"a\x01b", "x-bad"),
        (b"x-del", b"abc\x7f", "x-del"),
        (b"x-high", b"caf\xc3\xa9", "x-high"),
        (b"x-b\x01d", b"fine", "x-b\x01d"),
        (b"x-c\x7fd", b"fine", "x-c\x7fd"),
    ]
    for name, value, want in cases:
        r = Raw(d.port)
        r.send(head_bytes("POST", "/webhooks/github",
                          [("Content-Type", "application/json"),
                           ("Content-Length", "2"), (name, value)], b"{}"))
        resp = r.read_response(timeout=5)
        r.close()
        assert resp.status == 400, "%r: %r: %r" % (name, value, resp)
        assert resp.json() == {"error": "invalid_header", "header": want}, \
            "%r: %r: body %r" % (name, value, resp.body)
    # A tab in a value is fine.
    r = Raw(d.port)
    r.send(head_bytes("POST", "/webhooks/github",
                      [("Content-Length", "2"), ("X-Tab", b"a\tb")], b"{}"))
    resp = r.read_response(timeout=5)
    r.close()
    assert resp.status == 201, "tab in a header value: %r" % resp
    # Check 3 before 4: an unknown source with a bad header is a 404.
    r = Raw(d.port)
    r.send(head_bytes("POST", "/webhooks/nosuch",
                      [("Content-Length", "2"), ("X-Bad", b"\x01")], b"{}"))
    resp = r.read_response(timeout=5)
    r.close()
    assert resp.status == 404, "unknown source + bad header: %r" % resp
    assert d.status()["hooks"] == 1


# ------------------------------------------------------------------ 405 etc.

def test_405_and_health_ready():
    d = Daemon().start()
    for m in ("GET", "PUT", "DELETE"):
        st, h, data = request(d.port, m, "/webhooks/github",
                              b"{}" if m == "PUT" else None)
        assert st == 405, "%s /webhooks/github: %d %r" % (m, st, data)
        assert jbody(data).get("error"), "405 body %r" % data
        assert "POST" in h.get("allow", ""), "405 without Allow: POST: %r" \
            % h
    st, h, data = get(d.port, "/health")
    assert st == 200 and jbody(data).get("status") == "ok", (st, data)
    st, h, data = get(d.port, "/ready")
    assert st == 200 and jbody(data).get("status") == "ready", (st, data)
    assert d.status()["hooks"] == 0


def test_keep_alive_two_requests():
    d = Daemon().start()
    r = Raw(d.port)
    ids = []
    for i in range(3):
        b = b'{"k":%d}' % i
        r.send(head_bytes("POST", "/webhooks/github",
                          [("Content-Type", "application/json"),
                           ("Content-Length", str(len(b)))], b))
        resp = r.read_response(timeout=10)
        assert resp.status == 201, "request %d on one connection: %r" % (
            i, resp)
        assert resp.headers.get("connection", "").lower() != "close", \
            "server closes a keep-alive connection: %r" % resp.headers
        ids.append(resp.json()["id"])
    # GET /health on the same connection, too.
    r.send(head_bytes("GET", "/health", []))
    resp = r.read_response(timeout=10)
    assert resp.status == 200, resp
    # Two requests in one write (pipelined): two answers, in order.
    two = b"".join(head_bytes("POST", "/webhooks/github",
                              [("Content-Length", "10")], b'{"pipe":%d}'
                              % i) for i in (1, 2))
    r.send(two)
    for i in (1, 2):
        resp = r.read_response(timeout=10)
        assert resp.status == 201, "pipelined request %d: %r" % (i, resp)
        ids.append(resp.json()["id"])
    r.close()
    assert len(set(ids)) == 5
    assert ids[3] < ids[4], "pipelined answers out of order"
    assert set(ids) <= set(queue_by_id(d))

    # HTTP/1.0 without keep-alive: answered, then closed.
    r = Raw(d.port)
    r.send(b"POST /webhooks/github HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}")
    resp = r.read_response(timeout=10)
    assert resp.status == 201, "HTTP/1.0 POST: %r" % resp
    assert r.closed_by_peer(5), "HTTP/1.0 connection left open"
    r.close()


def test_400_bad_framing():
    """Malformed Content-Length: 400, never stored."""
    d = Daemon().start()
    for cl in (b"abc", b"-1", b"1 2", b"0x10"):
        r = Raw(d.port)
        r.send(head_bytes("POST", "/webhooks/github",
                          [("Content-Length", cl)], b"{}"))
        resp = r.read_response(timeout=5)
        r.close()
        assert resp.status == 400, "Content-Length %r: %r" % (cl, resp)
    assert d.status()["hooks"] == 0


def test_expect_100_continue():
    d = Daemon().start()
    r = Raw(d.port)
    r.send(head_bytes("POST", "/webhooks/github",
                      [("Content-Type", "application/json"),
                       ("Content-Length", "11"), ("Expect", "100-continue")]))
    resp = r.read_response(timeout=5)
    assert resp.status == 100, "expected 100 Continue first, got %r" % resp
    r.send(b'{"ok":true}')
    resp = r.read_response(timeout=10)
    assert resp.status == 201, "after 100-continue: %r" % resp
    hid = resp.json()["id"]
    r.close()
    assert queue_by_id(d)[hid]["size"] == 11
    # A refused request gets its refusal, not 100 Continue.
    r = Raw(d.port)
    r.send(head_bytes("POST", "/webhooks/github",
                      [("Content-Length", str(LIMIT + 1)),
                       ("Expect", "100-continue")]))
    resp = r.read_response(timeout=5)
    assert resp.status == 413, "oversized with Expect: %r" % resp
    r.close()


# ------------------------------------------------------------------ config

def test_config_check():
    d = Daemon()                        # not started: only its config
    rc, out = check_config(d.conf)
    assert rc == 0, "ankusad -n on a good config: exit %d: %s" % (rc, out)
    assert "config OK: sources=2 sinks=3" in out, out

    bad = [
        ("http", "port", 70000, "http.port"),
        ("http", "bogus_key", 1, "http.bogus_key"),
        ("batcher", "max_queue", 0, "batcher.max_queue"),
        ("http", "routing", "sideways", "http.routing"),
    ]
    for sect, key, val, name in bad:
        d2 = Daemon(name="bad-%s" % key)
        getattr(d2, sect)[key] = val
        d2.write_config()
        rc, out = check_config(d2.conf)
        assert rc == 78, "%s: %r: exit %d, want 78: %s" % (name, val, rc,
                                                           out)
        assert name in out, "%s: error does not name the key: %s" % (name,
                                                                    out)
    # A shared source under tenant_path with verify none and no
    # trust_url_tenant is refused.
    d3 = Daemon(name="bad-trust", routing="tenant_path",
                sources={"shared": hold_source()})
    rc, out = check_config(d3.conf)
    assert rc == 78, "shared source without trust_url_tenant: exit %d: %s" \
        % (rc, out)
    assert "sources.shared" in out, out
    # Not YAML at all.
    d4 = Daemon(name="bad-yaml")
    d4.write_config("node: [unclosed\n  - {\n")
    rc, out = check_config(d4.conf)
    assert rc == 78, "not YAML: exit %d: %s" % (rc, out)
    # The daemon itself refuses a bad config with 78, too.
    p = subprocess.run([binary("ankusad"), "-d", "-c", d3.conf],
                       stdin=subprocess.DEVNULL, capture_output=True,
                       env=d3.env(), timeout=20)
    assert p.returncode == 78, "ankusad -d on a bad config: exit %d" % \
        p.returncode


def test_man_page_from_key_table():
    # ankusa.yml(5) is written by ankusad -M from the key table: the page
    # the build makes from daemon/ankusa.yml.5.in (with the configured
    # paths, as ankusad is built with them) must be what the key table
    # says today, byte for byte.
    p = subprocess.run([binary("ankusad"), "-M"], stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=20)
    assert p.returncode == 0, "ankusad -M: exit %d: %s" % (p.returncode,
                                                          p.stderr)
    with open(os.path.join(ankusa.BUILD, "daemon", "ankusa.yml.5"),
              "rb") as f:
        page = f.read().decode()
    out = p.stdout.decode()
    if out != page:
        a, b = page.splitlines(), out.splitlines()
        n = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]),
                 min(len(a), len(b)))
        raise AssertionError("daemon/ankusa.yml.5.in is not ankusad -M's "
                             "output (make update-man); first difference "
                             "at line %d:\n  built: %r\n  -M:    %r" % (
                                 n + 1, a[n] if n < len(a) else None,
                                 b[n] if n < len(b) else None))


def test_second_daemon_refuses():
    d = Daemon().start()
    d2 = Daemon(name="second", data_dir=d.data_dir)
    p = d2.spawn()
    try:
        rc = p.wait(10)
    except subprocess.TimeoutExpired:
        raise AssertionError("a second ankusad on the same data dir is "
                             "still running after 10 s")
    log = d2.log_text()
    assert rc == 1, "second ankusad exit %d, want 1: %s" % (rc, log[-500:])
    assert str(d.pid) in log, "refusal does not name pid %d: %s" % (
        d.pid, log[-500:])
    st, h, data = post(d.port, "/webhooks/github", b"{}")
    expect_accepted(st, h, data, "first daemon after the refusal")
    assert d.running()


def test_lock_of_a_killed_instance_waited():
    """After a kill -9, a child of the dead master that was forked but not
    yet executed still holds the data directory's lock (flock: it shares
    the open file) for a moment: a new ankusad waits for it (2 s) while
    the pid in the lock file is gone, instead of refusing to start."""
    d = Daemon()
    os.makedirs(d.data_dir, exist_ok=True)
    gone = subprocess.Popen(["true"])
    gone.wait()
    lock = os.path.join(d.data_dir, "ankusad.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    import fcntl
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, b"%d\n" % gone.pid)
    ankusa.give_to_daemon_user(d.dir)
    threading.Timer(0.7, os.close, (fd,)).start()
    d.start()
    expect_accepted(*post(d.port, "/webhooks/github", b"{}"))
    assert "is in use" not in d.log_text(), d.log_text()[-500:]


def test_sighup_reload():
    d = Daemon().start()
    gen1 = set(d.edges())
    # A broken config: logged, the old one kept.
    good = open(d.conf).read()
    d.write_config("node: {data_dir: 1\nsources: [[[\n")
    d.signal(signal.SIGHUP)
    time.sleep(1.0)
    assert d.running(), "ankusad died on SIGHUP with a broken config"
    st, h, data = post(d.port, "/webhooks/github", b"{}")
    expect_accepted(st, h, data, "after a broken reload")
    d.write_config(good)

    # A semantically bad config (range error) is refused as well.
    d.http["workers"] = 0
    d.write_config()
    d.signal(signal.SIGHUP)
    time.sleep(1.0)
    assert d.running()
    st, h, data = post(d.port, "/webhooks/github", b"{}")
    expect_accepted(st, h, data, "after a range-error reload")
    d.http["workers"] = 2

    # A new source: accepted after the reload.
    st, h, data = post(d.port, "/webhooks/newsrc", b"{}")
    expect(st, h, data, 404, {"error": "unknown_source"}, "before reload")
    d.sources["newsrc"] = hold_source(tenant="beta")
    d.write_config()
    d.signal(signal.SIGHUP)

    def new_ok():
        st, h, data = post(d.port, "/webhooks/newsrc", b"{}")
        return st == 201
    wait_until(new_ok, 10, 0.1, "POST /webhooks/newsrc to give 201 after "
               "SIGHUP")
    st, h, data = post(d.port, "/webhooks/newsrc", b'{"n":1}')
    nid = expect_accepted(st, h, data, "new source")
    st, h, data = post(d.port, "/webhooks/github", b"{}")
    expect_accepted(st, h, data, "old source after reload")
    q = queue_by_id(d)
    assert (q[nid]["tenant"], q[nid]["source"]) == ("beta", "newsrc"), \
        q[nid]
    # A new generation of edges replaced the old one.
    wait_until(lambda: not (set(d.edges()) & gen1) and
               len(d.edges()) == 2, 10, 0.1,
               "the old edges %s to be replaced by 2 new ones" % sorted(gen1))
    assert d.status()["edges"] == 2


# ------------------------------------------------------------------ ankusactl

def test_ctl_exit_codes():
    d = Daemon().start()
    sock = d.sock
    for args, what in [([], "no command"), (["-s", sock, "bogus"],
                                             "unknown command"),
                       (["-s", sock, "queue", "-n", "x"], "queue -n x"),
                       (["-s", sock, "queue", "extra"], "queue extra"),
                       (["-s", sock, "status", "extra"], "status extra"),
                       (["-Z"], "unknown option")]:
        rc, out, err = ankusactl(*args)
        assert rc == 2, "ankusactl %s (%s): exit %d, want 2" % (
            " ".join(args), what, rc)
    nosock = os.path.join(tmpdir(), "nothing-here.sock")
    for args in (["status"], ["-j", "queue"]):
        rc, out, err = ankusactl("-s", nosock, *args)
        assert rc == 3, "ankusactl %s with no daemon: exit %d, want 3" % (
            args, rc)
    rc, out, err = ankusactl("-s", sock, "status")
    assert rc == 0, (rc, err)

    st = d.status()
    for k in ("version", "pid", "hooks", "pending", "inflight", "dead",
              "edges", "delivers", "draining"):
        assert k in st, "status lacks %r: %r" % (k, st)
    assert st["pid"] == d.pid, "status pid %r, want %d" % (st["pid"], d.pid)
    assert st["edges"] == 2, "status edges %r, want 2" % st["edges"]
    assert st["draining"] in (False, 0), st["draining"]
    assert st["hooks"] == 0 and st["dead"] == 0, st

    # After the daemon is gone: 3.
    assert d.stop() == 0
    rc, out, err = ankusactl("-s", sock, "status")
    assert rc == 3, "ankusactl status after stop: exit %d, want 3" % rc


def test_queue_filter_and_limit():
    d = Daemon().start()
    g = [expect_accepted(*post(d.port, "/webhooks/github", b"{}"))
         for _ in range(3)]
    a = [expect_accepted(*post(d.port, "/webhooks/acme-orders", b"{}",
                               headers={"x-order": "k%d" % i}))
         for i in range(2)]
    allq = d.queue()
    assert [h["id"] for h in allq] == g + a, "queue order %r" % allq
    qg = d.queue(source="github")
    assert sorted(h["id"] for h in qg) == sorted(g), qg
    qa = d.queue(source="acme-orders")
    assert sorted(h["id"] for h in qa) == sorted(a), qa
    assert all(h["rows"] == 2 for h in qa), qa
    assert d.queue(source="nosuch") == []
    q2 = d.queue(limit=2)
    assert len(q2) == 2, "queue -n 2 listed %d" % len(q2)
    assert {h["id"] for h in q2} <= set(g + a)
    q1 = d.queue(source="acme-orders", limit=1)
    assert len(q1) == 1 and q1[0]["id"] in a, q1
    st = d.status()
    assert st["hooks"] == 5, "status hooks %r, want 5" % st["hooks"]


# ------------------------------------------------------------------ 503

def test_overload_503():
    d = Daemon(batcher={"max_queue": 1, "max_delay_ms": 200}).start()
    n = 64
    barrier = threading.Barrier(n)

    def one(i):
        c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
        c.connect()
        barrier.wait()
        try:
            return post(d.port, "/webhooks/github", b'{"i":%d}' % i, conn=c)
        finally:
            c.close()

    answers = []
    for _ in range(3):
        with concurrent.futures.ThreadPoolExecutor(n) as ex:
            answers += list(ex.map(one, range(n)))
        if any(st == 503 for st, _, _ in answers):
            break
    ok = []
    n503 = 0
    for st, h, data in answers:
        if st == 201:
            ok.append(expect_accepted(st, h, data))
        elif st == 503:
            expect(st, h, data, 503, {"error": "overload"}, "overload")
            assert h.get("retry-after") == "1", "Retry-After %r" % h.get(
                "retry-after")
            n503 += 1
        else:
            raise AssertionError("unexpected answer %d %r" % (st, data))
    note("overload: %d x 201, %d x 503" % (len(ok), n503))
    assert n503 > 0, "no 503 overload out of %d posts with max_queue 1" % (
        len(answers))
    assert ok, "no 201 at all"
    q = queue_by_id(d)
    missing = [i for i in ok if i not in q]
    assert not missing, "%d acknowledged ids not stored: %s" % (
        len(missing), missing[:5])
    assert len(q) == len(ok), "%d stored, %d acknowledged: a 503 was " \
        "stored" % (len(q), len(ok))


def test_overload_503_by_bytes():
    """batcher.max_queue_bytes bounds the commit queue too."""
    d = Daemon(batcher={"max_queue": 10000, "max_queue_bytes": 3000,
                        "max_delay_ms": 200}).start()
    n = 32
    barrier = threading.Barrier(n)

    def one(i):
        c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
        c.connect()
        barrier.wait()
        try:
            return post(d.port, "/webhooks/github", b"b" * 1024, conn=c)
        finally:
            c.close()

    with concurrent.futures.ThreadPoolExecutor(n) as ex:
        answers = list(ex.map(one, range(n)))
    ok = [expect_accepted(st, h, data) for st, h, data in answers
          if st == 201]
    for st, h, data in answers:
        if st != 201:
            expect(st, h, data, 503, {"error": "overload"}, "overload")
    note("overload by bytes: %d x 201, %d x 503" % (len(ok),
                                                   len(answers) - len(ok)))
    assert len(ok) < n, "no 503 with max_queue_bytes 3000 and %d x 1 KiB" \
        % n
    assert ok, "no 201 at all"
    q = queue_by_id(d)
    assert set(q) == set(ok), "stored %d, acknowledged %d" % (len(q),
                                                              len(ok))


def test_sigterm_while_posting():
    d = Daemon().start()
    stop = threading.Event()
    acked, bad, lock = [], [], threading.Lock()
    draining = []

    def client():
        c = None
        while not stop.is_set():
            try:
                if c is None:
                    c = http.client.HTTPConnection("127.0.0.1", d.port,
                                                   timeout=10)
                st, h, data = post(d.port, "/webhooks/github", b"x" * 512,
                                   conn=c)
            except (OSError, http.client.HTTPException):
                c = None
                time.sleep(0.01)
                continue
            with lock:
                if st == 201:
                    acked.append(expect_accepted(st, h, data))
                elif st == 503 and jbody(data) == {"error": "draining"}:
                    draining.append(h.get("retry-after"))
                else:
                    bad.append((st, data[:200]))
            if st != 201:
                c.close()
                c = None

    ths = [threading.Thread(target=client) for _ in range(8)]
    for t in ths:
        t.start()
    time.sleep(0.7)
    rc = d.stop()
    time.sleep(0.3)
    stop.set()
    for t in ths:
        t.join(20)
    assert rc == 0, "ankusad exit %r after SIGTERM, want 0" % rc
    assert not bad, "answers other than 201 / 503 draining: %r" % bad[:5]
    assert acked, "no hook acknowledged before SIGTERM"
    d.start()
    q = queue_by_id(d)
    missing = [i for i in acked if i not in q]
    note("sigterm: %d acknowledged, %d stored, %d x 503 draining" % (
        len(acked), len(q), len(draining)))
    assert all(ra is not None for ra in draining), \
        "503 draining without Retry-After"
    assert not missing, "%d of %d acknowledged hooks lost across SIGTERM" % (
        len(missing), len(acked))


def test_store_unavailable_503():
    """A commit that cannot be written (EFBIG past RLIMIT_FSIZE, a real
    write(2) failure without root) gives 503 store_unavailable, the daemon
    keeps running, and commits succeed again once writes do."""
    if not hasattr(resource, "prlimit"):
        raise Skip("no prlimit(2) here to make the store's writes fail")
    d = Daemon(max_body=200000)
    # The test changes the master's RLIMIT_FSIZE from outside, which takes
    # the master's own uid or CAP_SYS_RESOURCE: it runs as root here.
    d.extra["node"] = {"data_dir": d.data_dir, "user": "root"}
    d.write_config()
    d.start()
    # Warm up: environment files exist.
    warm = expect_accepted(*post(d.port, "/webhooks/github", b"{}"))
    d.stop()
    cap = 4 * 1024 * 1024

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    d.start(preexec_fn=limit)
    try:
        resource.prlimit(d.pid, resource.RLIMIT_FSIZE,
                         (cap, resource.RLIM_INFINITY))
    except (OSError, ValueError) as e:
        raise Skip("prlimit(RLIMIT_FSIZE) refused: %s" % e)
    acked, body = [warm], b"q" * 150000
    got = None
    for i in range(120):
        st, h, data = post(d.port, "/webhooks/github", body, timeout=30)
        if st == 201:
            acked.append(expect_accepted(st, h, data))
            continue
        got = (st, h, data)
        break
    if got is None:
        raise Skip("the store wrote %d x 150 KB past RLIMIT_FSIZE %d "
                   "without an error (preallocated files?)" % (
                       len(acked), cap))
    st, h, data = got
    expect(st, h, data, 503, {"error": "store_unavailable"},
           "commit past RLIMIT_FSIZE")
    assert h.get("retry-after") == "1", h
    assert d.running(), "ankusad died on a failed commit"
    st, h, data = get(d.port, "/health")
    assert st == 200, "/health after a failed commit: %d" % st
    # Writes possible again: the daemon retries and accepts.
    resource.prlimit(d.pid, resource.RLIMIT_FSIZE,
                     (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    probes = []

    def accepts():
        st, h, data = post(d.port, "/webhooks/github", b"{}", timeout=30)
        probes.append(st)
        if st == 201:
            acked.append(expect_accepted(st, h, data))
            return True
        expect(st, h, data, 503, {"error": "store_unavailable"}, "probe")
        return False
    wait_until(accepts, 20, 0.5, "a 201 once the store can write again")
    q = queue_by_id(d)
    missing = [i for i in acked if i not in q]
    assert not missing, "acknowledged ids not stored: %s" % missing[:5]
    big_acked = len(acked) - 2          # minus the warm-up and the probe
    big_stored = sum(1 for h in q.values() if h["size"] == len(body))
    note("EFBIG: %d x 201 before the 503; probes after raising the limit: "
         "%r" % (big_acked, probes))
    assert len(q) == len(acked), "%d hooks stored, %d answered 201 (probe "\
        "answers %r): a 503 store_unavailable was stored" % (
            len(q), len(acked), probes)
    assert d.stop() == 0
    d.start()
    q = queue_by_id(d)
    missing = [i for i in acked if i not in q]
    assert not missing, "acknowledged ids lost after restart: %s" % (
        missing[:5])
    # The refused hook's commit failed: it must not be stored (contract:
    # no hook is answered 503 and then stored; nothing is acknowledged
    # before a synced commit), or the provider's retry makes it a
    # duplicate.
    assert big_stored == big_acked, "a hook answered 503 " \
        "store_unavailable (its commit failed with EFBIG) is stored anyway:" \
        " %d hooks of %d bytes stored, %d answered 201" % (
            big_stored, len(body), big_acked)


def test_fsync_failure_503():
    """When an fdatasync/fsync of the master fails (EIO injected with
    strace), no hook is answered 201: the batch is answered 503
    store_unavailable (or, for a hook whose answer the exit overtook, the
    connection closes), and ankusad exits 1 with a line naming the failed
    flush rather than acknowledge anything after it.  Restarted, its
    recovery keeps every hook answered 201 before, and it accepts again."""
    import shutil
    if shutil.which("strace") is None:
        raise Skip("strace not installed (needed to inject EIO into "
                   "fdatasync)")
    d = Daemon().start()
    acked = [expect_accepted(*post(d.port, "/webhooks/github", b"{}"))
             for _ in range(3)]
    trace = os.path.join(tmpdir(), "strace.out")
    s = subprocess.Popen(["strace", "-qq", "-o", trace, "-e",
                          "trace=fdatasync,fsync", "-e",
                          "inject=fdatasync,fsync:error=EIO", "-p",
                          str(d.pid)], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)
    if s.poll() is not None:
        raise Skip("strace cannot attach: %s" % s.stderr.read().decode(
            "utf-8", "replace").strip())
    answers = []
    try:
        for i in range(3):
            try:
                st, h, data = post(d.port, "/webhooks/github",
                                   b'{"f":%d}' % i, timeout=30)
            except (ConnectionError, http.client.HTTPException, OSError):
                answers.append("closed")
                continue
            if st == 201:
                acked.append(expect_accepted(st, h, data))
                raise AssertionError("201 while fdatasync fails: %r"
                                     % data)
            expect(st, h, data, 503, {"error": "store_unavailable"},
                   "commit whose sync failed")
            assert h.get("retry-after") == "1", h
            answers.append(503)
        rc = d.proc.wait(20)
    finally:
        s.send_signal(signal.SIGINT)
        s.wait(10)
    with open(trace) as f:
        injected = sum(1 for l in f if "INJECTED" in l)
    assert injected > 0, "no fdatasync/fsync was made (none injected)"
    assert answers and answers[0] == 503, (
        "the hook whose flush failed was not answered 503: %r" % answers)
    assert rc == 1, "ankusad exit %r after a failed flush, not 1" % rc
    log = [l for l in tail(d.logpath, 1000).splitlines()
           if "stopping: the store must be recovered" in l]
    assert log and "log flush" in log[0], tail(d.logpath, 40)
    d.start()
    q = queue_by_id(d)
    assert all(i in q for i in acked), "acknowledged ids lost on restart"
    acked.append(expect_accepted(*post(d.port, "/webhooks/github", b"{}")))
    note("fsync EIO: answers %r, ankusad exit 1; restarted: %d acked "
         "hooks all stored, accepting again" % (answers, len(acked)))
    assert d.stop() == 0


test_overload_503.timeout = 180
test_store_unavailable_503.timeout = 180
