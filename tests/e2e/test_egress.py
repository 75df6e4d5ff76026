# SPDX-License-Identifier: ISC
"""The egress guard end to end (workers/egress.c, common/netaddr.c): the
real ankusad and its deliver processes against a live tests/test_sink on
127.0.0.1.  Loopback only: every URL here is 127.0.0.1, ::1 or a name that
resolves to them; the other literals (10.0.0.1, 192.0.2.1) only go to
ankusad -n, which connects nowhere.

The harness's configs allow loopback (Daemon.cfg()); these tests take
that away (egress: {allow: []}) or narrow it."""

import os
import socket

from ankusa import (Daemon, TestSink, check_config, dispatch_conf,
                    expect_accepted, post, sink_source, tmpdir, wait_until)

NO_EGRESS = {"allow": []}


def localhost_addrs(port):
    """What "localhost" resolves to here, as the guard would name them."""
    return {"egress_denied:" + ai[4][0] for ai in
            socket.getaddrinfo("localhost", port, 0, socket.SOCK_STREAM)}


def post_n(d, source, n):
    ids = []
    for i in range(n):
        st, hd, data = post(d.port, "/webhooks/" + source, b'{"n":%d}' % i)
        ids.append(expect_accepted(st, hd, data, "post %d" % i))
    return ids


def wait_dead(d, source, n):
    return wait_until(lambda: (lambda l: l if len(l) >= n else None)(
        d.dlq(source=source)), 20, 0.05, "%d dead letters of %s" % (n,
                                                                   source))


def no_open_breaker(d, source):
    for b in d.breakers():
        assert not (b.get("source") == source and
                    b.get("state") == "open"), \
            "the guard's refusals opened a breaker: %r" % b


def write(name, text):
    path = os.path.join(tmpdir(), name)
    with open(path, "w") as f:
        f.write(text)
    return path


def test_egress_refused_by_default():
    """Nothing allowed: a sink named localhost (a live test_sink on
    127.0.0.1) is resolved, the address checked and refused before any
    connect; each hook is dead-lettered egress_denied:127.0.0.1 at its
    first attempt, nothing reaches the sink, and the breaker (opening at
    one failure here) stays closed: a refusal is no sink failure."""
    s = TestSink().start()
    url = "http://localhost:%d/hook" % s.port
    d = Daemon(sources={"src": sink_source([{"type": "http", "url": url}],
                                           tenant="teg")},
               extra={"egress": NO_EGRESS,
                      "dispatch": dispatch_conf(breaker_failures=1)}
               ).start()
    ids = post_n(d, "src", 5)
    dl = wait_dead(d, "src", 5)
    want = localhost_addrs(s.port)
    assert {e["hook_id"] for e in dl} == set(ids), dl
    for e in dl:
        assert e["reason"] in want, "reason %r, want one of %r" % (
            e["reason"], want)
        assert e["attempts"] == 1, e
    if want == {"egress_denied:127.0.0.1"}:
        assert {e["reason"] for e in dl} == want
    assert s.received() == 0, "a refused sink got %d requests" % \
        s.received()
    no_open_breaker(d, "src")
    st = d.status()
    assert (st["pending"], st["dead"]) == (0, 5), st
    assert "egress: refused " in d.log_text(), "no log line says why"
    d.stop()


def test_egress_allowed_reaches_the_sink():
    """egress.allow 127.0.0.0/8 (and ::1): the same sink, by name and by
    literal, gets every hook; with allow_plain_http false too, since the
    address is loopback."""
    s = TestSink().start()
    sinks = [{"type": "http", "url": "http://localhost:%d/name" % s.port},
             {"type": "http", "url": s.url("/literal")}]
    d = Daemon(sources={"src": sink_source(sinks)},
               extra={"egress": {"allow": ["127.0.0.0/8", "[::1]/128"],
                                 "allow_plain_http": False},
                      "dispatch": dispatch_conf()}).start()
    ids = post_n(d, "src", 4)
    wait_until(lambda: s.received("/name") >= 4 and
               s.received("/literal") >= 4, 20, 0.05, "8 deliveries")
    got = {r["x-ankusa-id"] for r in s.records()}
    assert set(ids) <= got, (ids, got)
    assert d.dlq(source="src") == []
    d.stop()


def test_egress_port_restricted():
    """An allow entry with a port lets that port through and no other:
    localhost on the sink's port is delivered, on another live sink's
    port it is dead-lettered without a request reaching it."""
    s1 = TestSink(name="s1").start()
    s2 = TestSink(name="s2").start()
    allow = ["127.0.0.1/32:%d" % s1.port, "[::1]/128:%d" % s1.port]
    d = Daemon(sources={
        "ok": sink_source([{"type": "http", "url":
                            "http://localhost:%d/p1" % s1.port}]),
        "no": sink_source([{"type": "http", "url":
                            "http://localhost:%d/p2" % s2.port}])},
        extra={"egress": {"allow": allow},
               "dispatch": dispatch_conf()}).start()
    post_n(d, "ok", 3)
    post_n(d, "no", 3)
    wait_until(lambda: s1.received("/p1") >= 3, 20, 0.05,
               "3 deliveries on the allowed port")
    dl = wait_dead(d, "no", 3)
    for e in dl:
        assert e["reason"] in localhost_addrs(s2.port), e
    assert s2.received() == 0, s2.stats()
    assert d.dlq(source="ok") == []
    d.stop()

    # The literal of the other port is a config error at -n.
    text = ("egress:\n  allow: [\"127.0.0.1/32:%d\"]\n"
            "sources:\n  src:\n    verify: {type: none}\n"
            "    sinks:\n      - type: http\n"
            "        url: \"http://127.0.0.1:%d/p2\"\n" % (s1.port, s2.port))
    rc, out = check_config(write("port.yml", text))
    assert rc == 78, (rc, out)
    assert ("sources.src.sinks[0].url must reach a public address or one "
            "egress.allow covers, got 127.0.0.1 port %d (loopback)" %
            s2.port) in out, out


CONFIG_ERRORS = [
    # A literal denied address, each URL key.
    ("sources:\n  src:\n    verify: {type: none}\n    sinks:\n"
     "      - {type: http, url: \"http://127.0.0.1:9/h\"}\n",
     "sources.src.sinks[0].url must reach a public address or one "
     "egress.allow covers, got 127.0.0.1 port 9 (loopback), line 5"),
    ("sources:\n  src:\n    verify: {type: none}\n    sinks:\n"
     "      - {type: http, url: \"http://[::1]:9/h\"}\n",
     "sources.src.sinks[0].url must reach a public address or one "
     "egress.allow covers, got ::1 port 9 (loopback), line 5"),
    ("sources:\n  src:\n    verify: {type: none}\n    sinks:\n"
     "      - {type: http, url: \"http://169.254.169.254/\"}\n",
     "got 169.254.169.254 port 80 (link-local)"),
    ("sources:\n  src:\n    verify: {type: none}\n    sinks:\n"
     "      - {type: sqs, queue_url: \"http://127.0.0.1:9/1/q\"}\n",
     "sources.src.sinks[0].queue_url must reach a public address"),
    ("sources:\n  src:\n    verify: {type: none}\n    sinks:\n"
     "      - {type: google_pubsub, project: p, topic: t, auth: none,"
     " endpoint: \"http://127.0.0.1:8085\"}\n",
     "sources.src.sinks[0].endpoint must reach a public address"),
    ("claim_check:\n  store:\n    type: s3\n"
     "    s3: {bucket: b, endpoint: \"http://127.0.0.1:9000\"}\n"
     "sources:\n  src:\n    sinks: [{type: log}]\n",
     "claim_check.store.s3.endpoint must reach a public address or one "
     "egress.allow covers, got 127.0.0.1 port 9000 (loopback), line 4"),
    # A numeric host in another form than inet_pton's.
    ("sources:\n  src:\n    verify: {type: none}\n    sinks:\n"
     "      - {type: http, url: \"http://2130706433:9/h\"}\n",
     "sources.src.sinks[0].url must have a name or an address in "
     "standard form (a.b.c.d or [v6]) as its host, got 2130706433"),
    ("sources:\n  src:\n    verify: {type: none}\n    sinks:\n"
     "      - {type: http, url: \"http://127.1:9/h\"}\n",
     "got 127.1"),
    # allow_plain_http false: http:// to a non-loopback literal, allowed
    # or public.
    ("egress:\n  allow: [\"10.0.0.0/8\"]\n  allow_plain_http: false\n"
     "sources:\n  src:\n    verify: {type: none}\n    sinks:\n"
     "      - {type: http, url: \"http://10.0.0.1/h\"}\n",
     "sources.src.sinks[0].url must be https:// to reach a non-loopback "
     "address with egress.allow_plain_http false, got http:// to "
     "10.0.0.1, line 8"),
    ("egress:\n  allow_plain_http: false\n"
     "sources:\n  src:\n    verify: {type: none}\n    sinks:\n"
     "      - {type: http, url: \"http://192.0.2.1/h\"}\n",
     "got http:// to 192.0.2.1"),
    # A bad allow entry.
    ("egress:\n  allow: [\"10.0.0.1/8\"]\n"
     "sources:\n  src:\n    sinks: [{type: log}]\n",
     "egress.allow[0] must be an address or CIDR like 10.0.0.0/8, "
     "127.0.0.1/32:8080 or [::1]/128:443, got 10.0.0.1/8, line 2"),
]


def test_egress_config_errors():
    """ankusad -n: a literal denied address in a URL key is a config error
    naming the key (exit 78); so is plain http to a non-loopback literal
    with allow_plain_http false, and a numeric host not in standard form.
    Nothing connects: -n only reads the file."""
    for i, (text, msg) in enumerate(CONFIG_ERRORS):
        rc, out = check_config(write("bad-%d.yml" % i, text))
        assert rc == 78, "%r: exit %d: %s" % (text, rc, out)
        assert msg in out, "%r: want %r in: %s" % (text, msg, out)
    # The same files pass with the addresses allowed (and https).
    ok = ("egress:\n  allow: [\"127.0.0.0/8\", \"[::1]/128\", "
          "\"169.254.169.254\"]\n  allow_plain_http: false\n"
          "sources:\n  src:\n    verify: {type: none}\n    sinks:\n"
          "      - {type: http, url: \"http://127.0.0.1:9/h\"}\n"
          "      - {type: http, url: \"http://[::1]:9/h\"}\n"
          "      - {type: http, url: \"https://169.254.169.254/\"}\n"
          "      - {type: http, url: \"https://192.0.2.1/\"}\n"
          "      - {type: http, url: \"http://localhost:9/\"}\n")
    rc, out = check_config(write("ok.yml", ok))
    assert rc == 0 and "config OK" in out, (rc, out)


def test_egress_queue_sink_guarded():
    """The queue sinks' requests (sink_xfer.c): a real ankusa-deliver
    given no config keeps the guard's defaults, so a Pub/Sub batch to a
    live server on 127.0.0.1 is refused for good, every entry
    egress_denied:127.0.0.1, and the server sees nothing; given the
    harness's config (loopback allowed) the same batch is delivered."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import frames
    from test_queue_sinks import PROJECT, sample_entries

    hits = []

    class Publish(BaseHTTPRequestHandler):
        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            req = json.loads(self.rfile.read(n))
            hits.append(self.path)
            b = json.dumps({"messageIds": [str(i) for i in
                                           range(len(req["messages"]))]})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(b)))
            self.end_headers()
            self.wfile.write(b.encode())

        def log_message(self, *a):
            pass

    api = ThreadingHTTPServer(("127.0.0.1", 0), Publish)
    threading.Thread(target=api.serve_forever, daemon=True).start()
    ep = "http://127.0.0.1:%d" % api.server_address[1]
    ents = sample_entries(3, prefix="eg")
    try:
        d = frames.Deliver(conf=None)
        try:
            out = d.batch(1, frames.pubsub_sink(PROJECT, "topic-e", ep,
                                                auth="none"), ents)
        finally:
            d.close()
        assert [(r["result"], r["detail"]) for r in out["entries"]] == \
            [("permanent", "egress_denied:127.0.0.1")] * 3, out
        assert hits == [], "the server got %d requests" % len(hits)
        d = frames.Deliver()
        try:
            out = d.batch(2, frames.pubsub_sink(PROJECT, "topic-e", ep,
                                                auth="none"), ents)
        finally:
            d.close()
        assert [r["result"] for r in out["entries"]] == ["ok"] * 3, out
        assert len(hits) == 1, hits
    finally:
        api.shutdown()
