# SPDX-License-Identifier: ISC
"""Auto-disable and operational notices (issue 38, section 5): a sink key
answering one of its disable_on, or failing every attempt for
disable_after_s, is disabled (its rows held, no attempt spent) until a
resume; notifications.sinks receive the notices as Standard
Webhooks-signed JSON, delivered as hooks of the reserved source
_notifications (daemon/notice.c, daemon/admin/admin_ops.c's ops_disable,
daemon/pipeline/pipeline_store.c's outcome_disable)."""

import base64
import hashlib
import hmac
import http.server
import json
import threading
import time

from ankusa import (Daemon, TestSink, dispatch_conf, expect_accepted,
                    post, sink_source, wait_until)

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


class NoticeSink:
    """A loopback HTTP server that keeps each request (headers, body) and
    answers status (settable)."""

    def __init__(self, status=200):
        self.got = []
        self.status = status
        self.lock = threading.Lock()
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(n)
                with outer.lock:
                    outer.got.append(({k.lower(): v for k, v in
                                       self.headers.items()}, body))
                    st = outer.status
                self.send_response(st)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        self.th = threading.Thread(target=self.srv.serve_forever,
                                   daemon=True)
        self.th.start()

    def url(self):
        return "http://127.0.0.1:%d/notices" % self.port

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()

    def events(self, typ=None):
        with self.lock:
            got = list(self.got)
        out = []
        for hd, body in got:
            ev = json.loads(body)
            if typ is None or ev["type"] == typ:
                out.append((hd, body, ev))
        return out


def verify_sig(hd, body, secret=SECRET):
    """The Standard Webhooks signature: v1,base64(HMAC-SHA256(key,
    id.timestamp.body)), the key the secret's base64 after whsec_."""
    key = base64.b64decode(secret[len("whsec_"):])
    signed = ("%s.%s." % (hd["webhook-id"], hd["webhook-timestamp"])
              ).encode() + body
    want = base64.b64encode(hmac.new(key, signed, hashlib.sha256)
                            .digest()).decode()
    sigs = [s.split(",", 1)[1] for s in hd["webhook-signature"].split()]
    assert want in sigs, (hd, body)


def check_event(ev, typ):
    assert ev["type"] == typ, ev
    assert set(ev) == {"type", "timestamp", "data"}, ev
    # RFC 3339, UTC.
    time.strptime(ev["timestamp"][:19], "%Y-%m-%dT%H:%M:%S")
    assert ev["timestamp"].endswith("Z"), ev


def first_event(ns, typ, timeout=20):
    """The first notice of typ, waited for, its shape and Standard
    Webhooks signature checked: (headers, event)."""
    wait_until(lambda: ns.events(typ), timeout, what=typ)
    hd, body, ev = ns.events(typ)[0]
    check_event(ev, typ)
    verify_sig(hd, body)
    return hd, ev


def post_n(d, source, n):
    ids = []
    for i in range(n):
        st, hd, data = post(d.port, "/webhooks/" + source, b'{"n":%d}' % i)
        ids.append(expect_accepted(st, hd, data, "post"))
    return ids


def notify_daemon(s, ns, sink_extra=None, dispatch=None, notify_extra=None):
    sk = {"type": "http", "url": s.url("/a")}
    sk.update(sink_extra or {})
    nsk = {"type": "http", "url": ns.url(), "secret": SECRET}
    nsk.update(notify_extra or {})
    return Daemon(sources={"a": sink_source([sk])}, extra={
        "dispatch": dispatch or dispatch_conf(),
        "notifications": {"sinks": [nsk]}}).start()


def test_notify_disable_on_410():
    """A 410 disables the key: its rows are held (no attempt spent),
    shown disabled with the reason in GET /v1/pauses and ankusactl
    status, audited as ankusad's, counted, and sink.disabled (signed) goes
    to the notification sink; the disable survives a restart; resume
    delivers the held rows and sends sink.enabled."""
    s = TestSink().start()
    ns = NoticeSink()
    try:
        d = notify_daemon(s, ns)
        s.mode("/a", status=410)
        ids = post_n(d, "a", 3)
        hd, ev = first_event(ns, "sink.disabled")
        assert ev["data"]["source"] == "a" and ev["data"]["sink"] == 0 \
            and ev["data"]["module"] == "http" and \
            ev["data"]["reason"] == "disable_on: 410", ev
        assert hd["x-ankusa-source"] == "_notifications" and \
            hd["x-ankusa-tenant"] == "_ankusa", hd

        # Held: the attempts that got a 410 (those running when the first
        # came back, one when the hooks come one by one), none after.
        d.tick(10, check=False)
        n = s.received("/a")
        time.sleep(1)
        assert 1 <= n <= 3 and s.received("/a") == n, s.stats()
        st = d.status()
        assert st["pending"] == 3, st
        assert {"source": "a", "sink": 0, "state": "disabled",
                "reason": "disable_on: 410"}.items() <= \
            st["paused"][0].items(), st["paused"]
        code, _, doc = d.api("GET", "/v1/pauses")
        assert code == 200 and doc["paused"][0]["state"] == "disabled" \
            and doc["paused"][0]["reason"] == "disable_on: 410", doc
        code, _, doc = d.api("GET", "/v1/sinks")
        key = [k for k in doc["sinks"] if k["source_id"] == "a"][0]
        assert code == 200 and key["paused"] is True and \
            key["disabled"] == "disable_on: 410", key
        code, _, doc = d.api("GET", "/v1/audit?actor=ankusad")
        assert code == 200 and any(
            e["action"] == "sink.disable" and e["target"] == "a#0"
            for e in doc["entries"]), doc
        code, _, _ = d.api("GET", "/metrics")
        assert code == 200
        # Each row held, shown disabled; the one answered 410 spent its
        # attempt, the others none.
        attempts = []
        for hid in ids:
            code, _, doc = d.api("GET", "/v1/hooks/" + hid)
            assert code == 200, (code, doc)
            (row,) = doc["rows"]
            assert row["state"] == "disabled" and \
                row["disabled_reason"] == "disable_on: 410", row
            attempts.append(row["attempts"])
        assert sum(attempts) == n and max(attempts) == 1, (attempts, n)
        # The reserved source takes no hook from outside; the config
        # shows the notification sink, its secret redacted.
        st, _, _ = post(d.port, "/webhooks/_notifications", b"{}")
        assert st == 404, st
        code, _, doc = d.api("GET", "/v1/config")
        nsk = doc["notifications"]["sinks"][0]
        assert nsk["url"] == ns.url() and SECRET not in json.dumps(doc) \
            and nsk["disable_on"] == [410], nsk

        # A restart: still disabled, still held.
        d.stop()
        d.start()
        time.sleep(1)
        assert s.received("/a") == n, s.stats()
        code, _, doc = d.api("GET", "/v1/pauses")
        assert doc["paused"][0]["reason"] == "disable_on: 410", doc

        # Resume: the held rows go, sink.enabled is sent.
        s.mode("/a", status=200)
        d.ctl("resume", "a#0")
        wait_until(lambda: s.received("/a") >= n + 3, 20, what="held rows")
        d.settle_all(60)
        assert len(set(s.ids("/a", status=200))) == 3, s.stats()
        _, ev = first_event(ns, "sink.enabled")
        assert ev["data"]["source"] == "a", ev
        code, _, doc = d.api("GET", "/v1/pauses")
        assert doc["paused"] == [], doc
    finally:
        ns.close()


def test_notify_disable_on_empty():
    """disable_on: [] never disables: a 410 is dead-lettered as the
    contracts classify it, and no notice is made."""
    s = TestSink().start()
    ns = NoticeSink()
    try:
        d = notify_daemon(s, ns, sink_extra={"disable_on": []})
        s.mode("/a", status=410)
        post_n(d, "a", 1)
        wait_until(lambda: d.status()["dead"] == 1, 20, what="dead")
        st = d.status()
        assert st["paused"] == [] and st["pending"] == 0, st
        time.sleep(0.5)
        assert ns.events() == [], ns.events()
    finally:
        ns.close()


def test_notify_disable_after_s():
    """A key failing every attempt for disable_after_s is disabled with
    the reason "disable_after_s: 1 of failures"."""
    s = TestSink().start()
    ns = NoticeSink()
    try:
        d = notify_daemon(s, ns, sink_extra={"disable_after_s": 1},
                          dispatch=dispatch_conf(breaker_failures=0))
        s.mode("/a", status=503)
        post_n(d, "a", 2)
        _, ev = first_event(ns, "sink.disabled")
        assert ev["data"]["reason"] == "disable_after_s: 1 of failures", \
            ev
        n = s.received("/a")
        d.tick(10, check=False)
        time.sleep(1)
        # At most the attempts in flight at the disable end after it.
        assert s.received("/a") <= n + 2, (n, s.stats())
        m = s.received("/a")
        time.sleep(1)
        assert s.received("/a") == m, s.stats()
        assert d.status()["pending"] == 2
    finally:
        ns.close()


def test_notify_sink_fails_no_loop():
    """A notification sink that answers 410 is disabled itself, and that
    makes no notice about it (logged only): nothing loops."""
    s = TestSink().start()
    ns = NoticeSink(status=410)
    try:
        d = notify_daemon(s, ns)
        s.mode("/a", status=410)
        post_n(d, "a", 1)
        wait_until(lambda: ns.events("sink.disabled"), 20,
                   what="sink.disabled")
        wait_until(lambda: any(p["source"] == "_notifications"
                               for p in d.status()["paused"]), 20,
                   what="the notification sink disabled")
        time.sleep(1.5)
        assert len(ns.events()) == 1, ns.events()
        st = d.status()
        # The user row and the one notice, both held: nothing else made.
        assert st["pending"] == 2, st
        with open(d.logpath, encoding="utf-8", errors="replace") as f:
            assert "logged only" in f.read()
    finally:
        ns.close()


def test_notify_breaker_dlq_replay():
    """breaker.opened and breaker.closed of a failing sink key, then
    dlq.threshold once queue.dlq.warn_rows is crossed, then
    replay.finished of a dlq replay; each signed."""
    s = TestSink().start()
    ns = NoticeSink()
    try:
        d = Daemon(sources={"a": sink_source([
            {"type": "http", "url": s.url("/a")},
            {"type": "http", "url": s.url("/b"), "disable_on": []}])},
            extra={"dispatch": dispatch_conf(breaker_failures=2,
                                             breaker_open_ms=300),
                   "queue": {"dlq": {"warn_rows": 1}},
                   "notifications": {"sinks": [
                       {"type": "http", "url": ns.url(),
                        "secret": SECRET}]}}).start()
        s.mode("/a", status=503)
        s.mode("/b", status=400)
        post_n(d, "a", 2)
        _, ev = first_event(ns, "breaker.opened")
        assert ev["data"]["source"] == "a" and ev["data"]["sink"] == 0 \
            and ev["data"]["module"] == "http", ev
        s.mode("/a", status=200)
        first_event(ns, "breaker.closed")
        # Two rows of /b dead (400): over warn_rows 1, said once.
        _, ev = first_event(ns, "dlq.threshold")
        assert ev["data"]["rows"] == 2 and ev["data"]["warn_rows"] == 1, ev
        s.mode("/b", status=200)
        st, _, j = d.api("POST", "/v1/replays", {"kind": "dlq"})
        assert st in (200, 201, 202), (st, j)
        _, ev = first_event(ns, "replay.finished", 30)
        assert ev["data"]["id"] == j["id"] and \
            ev["data"]["kind"] == "dlq" and ev["data"]["moved"] == 2, ev
        time.sleep(1.5)
        assert len(ns.events("dlq.threshold")) == 1, ns.events()
    finally:
        ns.close()


def test_notify_master_changed():
    """A failover: the node elected master, once it is one, makes
    replication.master_changed naming itself, delivered (signed) to the
    notification sink."""
    from test_replication import Group
    s = TestSink().start()
    ns = NoticeSink()
    try:
        g = Group(s.url("/s"))
        for d in g.nodes:
            d.extra["notifications"] = {"sinks": [
                {"type": "http", "url": ns.url(), "secret": SECRET}]}
            d.write_config()
        g.start()
        m = g.master()
        time.sleep(1)
        assert ns.events("replication.master_changed") == [], ns.events()
        m.kill9()
        m2 = g.master(60)
        assert m2 is not m
        _, ev = first_event(ns, "replication.master_changed", 60)
        assert ev["data"]["master"] == g.addr(g.nodes.index(m2)), \
            (ev, g.addr(g.nodes.index(m2)))
    finally:
        ns.close()
