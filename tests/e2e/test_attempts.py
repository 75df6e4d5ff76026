# SPDX-License-Identifier: ISC
"""The attempt log (issue 37, section 1; daemon/store/store_attempts.c,
daemon/pipeline/pipeline_store.c, daemon/admin/admin_attempts.c): every
attempt of every row is recorded in its settle's transaction with its
outcome, status, duration, error and an excerpt of the answer the deliver
process cleaned; GET /v1/hooks/{id}/attempts and ankusactl show list them,
also once the hook is delivered and gone; a round keeps its newest
attempts.max_per_row; the attempts of a hook gone go retention.attempts_s
after it, across a restart; a client of a replication group lists them."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ankusa import (Daemon, dispatch_conf, expect_accepted, post,
                    sink_source, wait_until)


class _Script(BaseHTTPRequestHandler):
    """Answers each request with the next step of the server's script: (status,
    body bytes), or "hang" (no answer for 30 s); the last step repeats."""

    protocol_version = "HTTP/1.1"

    def do_POST(self):
        n = int(self.headers.get("content-length") or 0)
        self.rfile.read(n)
        srv = self.server
        with srv.lock:
            step = srv.script[min(srv.count, len(srv.script) - 1)]
            srv.count += 1
        if step == "hang":
            time.sleep(30)
            return
        status, body = step
        self.send_response(status)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _serve(script):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Script)
    srv.daemon_threads = True
    srv.script = script
    srv.count = 0
    srv.lock = threading.Lock()
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def _url(srv):
    return "http://127.0.0.1:%d/hook" % srv.server_address[1]


def _daemon(srv, attempts=None, retention=None, retry=None, dispatch=None,
            **kw):
    dc = {"attempt_timeout_ms": 1500, "breaker_failures": 0}
    dc.update(dispatch or {})
    extra = {"dispatch": dispatch_conf(retry=retry or {}, **dc)}
    if attempts is not None:
        extra["attempts"] = attempts
    if retention is not None:
        extra["retention"] = retention
    return Daemon(sources={"s": sink_source([
        {"type": "http", "url": _url(srv), "timeout_ms": 20000}])},
        extra=extra, **kw)


def _post(d, body=b'{"a":1}'):
    st, hd, data = post(d.port, "/webhooks/s", body)
    return expect_accepted(st, hd, data, "post")


def _attempts(d, hid, limit=None):
    """Every attempt of hid through the API, following next_cursor; None
    when the answer is 404."""
    out, cur = [], None
    for _ in range(50):
        q = []
        if limit:
            q.append("limit=%d" % limit)
        if cur:
            q.append("cursor=" + cur)
        st, _, doc = d.api("GET", "/v1/hooks/%s/attempts%s" % (
            hid, "?" + "&".join(q) if q else ""))
        if st == 404:
            return None
        assert st == 200, (st, doc)
        assert set(doc) == {"attempts", "next_cursor"}, doc
        out += doc["attempts"]
        cur = doc["next_cursor"]
        if cur is None:
            return out
    raise AssertionError("more than 50 pages")


def _gone(d, hid):
    st, _, _ = d.api("GET", "/v1/hooks/" + hid)
    return st == 404


def test_attempts_three_listed():
    """A sink answers 500 with a body, then never (the master's timeout),
    then 200: three attempts, in order, with their outcomes, codes,
    durations and excerpts, listed by the API once the hook is delivered
    and gone, paged, and by ankusactl show in both its forms."""
    srv = _serve([(500, b"db down: retry later"), "hang", (200, b"thanks")])
    d = _daemon(srv).start()
    t0 = int(time.time() * 1000)
    hid = _post(d)
    wait_until(lambda: _gone(d, hid), 30, 0.1, "the hook delivered")
    a = _attempts(d, hid)
    assert [x["n"] for x in a] == [1, 2, 3], a
    assert [x["outcome"] for x in a] == ["error", "timeout", "ok"], a
    assert [x["status"] for x in a] == [500, None, 200], a
    assert all(set(x) == {"sink", "module", "n", "started_at",
                          "duration_ms", "outcome", "status", "error",
                          "response"} for x in a), a
    assert all(x["sink"] == 0 and x["module"] == "http" for x in a), a
    assert a[0]["response"] == "db down: retry later", a[0]
    assert a[0]["error"] == "http 500", a[0]
    assert a[1]["response"] is None and \
        a[1]["error"] == "attempt_timeout:1500", a[1]
    assert 1400 <= a[1]["duration_ms"] <= 5000, a[1]
    assert a[2]["response"] == "thanks", a[2]
    assert all(x["duration_ms"] < 1400 for x in (a[0], a[2])), a
    starts = [x["started_at"] for x in a]
    assert t0 - 1000 <= starts[0] <= starts[1] <= starts[2] <= \
        int(time.time() * 1000), starts
    assert _attempts(d, hid, limit=2) == a
    st, _, doc = d.api("GET", "/v1/hooks/%s/attempts?limit=2" % hid)
    assert st == 200 and len(doc["attempts"]) == 2 and \
        isinstance(doc["next_cursor"], str), doc

    # ankusactl show: the hook is gone, its attempts are listed.
    _, out, _ = d.ctl("show", hid)
    assert "gone" in out, out
    lines = out.splitlines()
    rows = [l.split() for l in lines if l[:1].isdigit()]
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("0", "http", "1"), ("0", "http", "2"), ("0", "http", "3")], out
    assert [r[-2:] for r in rows] == [["error", "500"], ["timeout", "-"],
                                      ["ok", "200"]], out
    assert 'response  "db down: retry later"' in out, out
    _, out, _ = d.ctl("show", hid, json_out=True)
    doc = json.loads(out)
    assert doc["attempts"] == a, doc

    # Another hook, still pending: show lists the hook and its attempt.
    srv.script = [(503, b"busy")]
    with srv.lock:
        srv.count = 0
    hid2 = _post(d)
    wait_until(lambda: (_attempts(d, hid2) or []) != [], 15, 0.1,
               "its first attempt")
    _, out, _ = d.ctl("show", hid2)
    assert "id           " + hid2 in out and " 503" in out, out
    _, out, _ = d.ctl("show", hid2, json_out=True)
    doc = json.loads(out)
    assert doc["id"] == hid2 and doc["attempts"][0]["status"] == 503, doc
    # An unknown hook: 404 from both.
    st, _, _ = d.api("GET", "/v1/hooks/01890000-0000-7000-8000-000000000000"
                     "/attempts")
    assert st == 404
    rc, _, _ = d.ctl("show", "01890000-0000-7000-8000-000000000000",
                     check=False)
    assert rc != 0
    srv.shutdown()


test_attempts_three_listed.timeout = 120


def test_attempts_hostile_excerpt():
    """An answer of invalid UTF-8, control bytes and markup comes back as
    valid, escaped JSON: controls and stray bytes replaced by U+FFFD, the
    rest as sent; the excerpt cut at attempts.capture_bytes."""
    body = b"<script>alert(1)</script>\x00\x1b[31m\xff\xfe\xc3\xa9\"\\" + \
        b"x" * 200
    srv = _serve([(400, body)])
    d = _daemon(srv, attempts={"capture_bytes": 64}).start()
    hid = _post(d)
    wait_until(lambda: d.dlq(), 20, 0.1, "dead-lettered")
    a = _attempts(d, hid)
    assert len(a) == 1 and a[0]["outcome"] == "permanent", a
    r = a[0]["response"]
    assert r.startswith("<script>alert(1)</script>\ufffd\ufffd[31m"
                        "\ufffd\ufffd\u00e9\"\\x"), repr(r)
    assert len(r.encode()) <= 64, repr(r)
    # The raw answer is JSON a strict parser takes, nothing unescaped.
    from ankusa import request
    st, _, raw = request(d.admin_port, "GET",
                         "/v1/hooks/%s/attempts" % hid, None)
    assert st == 200
    raw.decode("utf-8")
    assert b"\x1b" not in raw and b"\x00" not in raw, raw
    json.loads(raw)
    _, out, _ = d.ctl("show", hid)
    assert "\x1b" not in out and "\\ufffd" in out.lower(), out
    srv.shutdown()


test_attempts_hostile_excerpt.timeout = 60


def test_attempts_cap():
    """attempts.max_per_row 3: a row failing seven times keeps its last
    three."""
    srv = _serve([(500, b"no")])
    d = _daemon(srv, attempts={"max_per_row": 3},
                retry={"max_attempts": 7}).start()
    hid = _post(d)
    wait_until(lambda: d.dlq(), 30, 0.1, "dead-lettered after 7")
    a = _attempts(d, hid)
    assert [x["n"] for x in a] == [5, 6, 7], a
    assert srv.count == 7
    srv.shutdown()


test_attempts_cap.timeout = 60


def test_attempts_retention_restart():
    """A hook's attempts stay while it lives, and go retention.attempts_s
    after it is delivered, by the prune after a checkpoint, across a
    restart; another hook's stay."""
    srv = _serve([(500, b"once"), (200, b"ok")])
    d = _daemon(srv, retention={"attempts_s": 4}, checkpoint_ms=300).start()
    hid = _post(d)
    wait_until(lambda: _gone(d, hid), 20, 0.1, "delivered")
    assert len(_attempts(d, hid)) == 2
    # A live hook: its attempt outlives the retention.
    srv.script = [(503, b"busy")]
    with srv.lock:
        srv.count = 0
    live = _post(d)
    wait_until(lambda: (_attempts(d, live) or []) != [], 15, 0.1,
               "the live hook's attempt")
    d.stop()
    d.start()
    assert len(_attempts(d, hid)) == 2, "kept across the restart"
    wait_until(lambda: _attempts(d, hid) is None, 30, 0.2,
               "pruned retention.attempts_s after the hook went")
    assert len(_attempts(d, live)) >= 1
    d.stop()
    d.start()
    assert _attempts(d, hid) is None
    assert len(_attempts(d, live)) >= 1
    srv.shutdown()


test_attempts_retention_restart.timeout = 120


def test_attempts_parked():
    """A failure that opens its sink's breaker is recorded parked; the
    attempt after the breaker's open time delivers."""
    srv = _serve([(503, b"down"), (200, b"up")])
    d = _daemon(srv, dispatch={"breaker_failures": 1,
                               "breaker_open_ms": 300}).start()
    hid = _post(d)
    wait_until(lambda: _gone(d, hid), 20, 0.1, "delivered")
    a = _attempts(d, hid)
    assert [(x["n"], x["outcome"], x["status"]) for x in a] == [
        (1, "parked", 503), (2, "ok", 200)], a
    srv.shutdown()


test_attempts_parked.timeout = 60


def test_attempts_batched_sqs():
    """An sqs sink (the batching path): a request held past
    dispatch.attempt_timeout_ms is a timeout attempt, the next one ok with
    the request's status; no excerpt (the answer is the request's)."""
    from ankusa import FakeSQS
    q = FakeSQS().start()
    q.delay_s = 3.0
    d = Daemon(sources={"s": sink_source([q.sink()])}, extra={
        "dispatch": dispatch_conf(attempt_timeout_ms=1000,
                                  breaker_failures=0)}).start()
    hid = _post(d)
    wait_until(lambda: q.requests >= 1, 10, 0.05, "the first request")
    time.sleep(1.2)
    q.delay_s = 0.0
    wait_until(lambda: _gone(d, hid), 30, 0.1, "delivered")
    a = _attempts(d, hid)
    assert [x["module"] for x in a] == ["sqs"] * len(a), a
    assert a[0]["outcome"] == "timeout" and \
        a[0]["error"] == "attempt_timeout:1000", a
    assert a[-1]["outcome"] == "ok" and a[-1]["status"] == 200 and \
        a[-1]["response"] is None, a
    assert [x["n"] for x in a] == list(range(1, len(a) + 1)), a
    q.destroy()


test_attempts_batched_sqs.timeout = 60


def test_attempts_delete_takes_them():
    """DELETE /v1/hooks/{id} takes the hook's attempts at once."""
    srv = _serve([(503, b"busy")])
    d = _daemon(srv).start()
    hid = _post(d)
    wait_until(lambda: (_attempts(d, hid) or []) != [], 15, 0.1,
               "an attempt")
    wait_until(lambda: d.api("DELETE", "/v1/hooks/" + hid)[0] == 200, 15,
               0.2, "deleted (between two attempts)")
    assert _attempts(d, hid) is None
    srv.shutdown()


test_attempts_delete_takes_them.timeout = 60


def test_attempts_in_backup():
    """An online backup holds the attempt log: a daemon on the restored
    copy lists a delivered hook's attempts."""
    import os
    import shutil
    from ankusa import tmpdir
    srv = _serve([(500, b"first"), (200, b"second")])
    d = _daemon(srv).start()
    hid = _post(d)
    wait_until(lambda: _gone(d, hid), 20, 0.1, "delivered")
    want = _attempts(d, hid)
    assert [x["outcome"] for x in want] == ["error", "ok"], want
    dest = os.path.join(tmpdir(), "backup")
    d.ctl("backup", dest, timeout=120)
    d.stop()
    copy = os.path.join(tmpdir(), "copy")
    shutil.copytree(dest, copy)
    r = _daemon(srv, name="r", data_dir=copy).start()
    assert _attempts(r, hid) == want
    srv.shutdown()


test_attempts_in_backup.timeout = 120


def test_attempts_repl_client():
    """The attempts written on the master of a group are listed on its
    clients."""
    from test_replication import Group
    srv = _serve([(500, b"first"), (200, b"second")])
    g = Group(_url(srv)).start()
    m = g.master()
    st, hd, data = post(m.port, "/webhooks/s", b"{}")
    hid = expect_accepted(st, hd, data, "post")
    wait_until(lambda: len(_attempts(m, hid) or []) == 2, 30, 0.2,
               "two attempts on the master")
    want = _attempts(m, hid)
    for c in g.nodes:
        if c is m:
            continue
        wait_until(lambda: _attempts(c, hid) == want, 30, 0.2,
                   "the attempts on a client")
    srv.shutdown()


test_attempts_repl_client.timeout = 180
