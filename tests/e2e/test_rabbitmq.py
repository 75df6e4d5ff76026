# SPDX-License-Identifier: ISC
"""The rabbitmq sink through the real daemon against Debian's
rabbitmq-server (rmq.py starts one node per run on loopback): hooks
posted to ankusad, published with confirms by the deliver processes,
consumed by tests/amqp_tool and compared byte for byte with the v1
message built here (test_queue_sinks.expected_v1); a body above
inline_max_bytes by its claim; the broker stopped under load and started
again; an exchange that does not exist; the breaker and sink_concurrency
of a sink key.

Each test has an exchange and a durable queue of its own, bound with #.
"""

import concurrent.futures
import json
import os
import re
import socket
import subprocess
import threading
import time
import urllib.request

import ankusa
import claimref
import qmsg
import rmq
from ankusa import Daemon, expect_accepted, post
from test_queue_sinks import expected_v1

_n = [0]


def _names(kind="topic"):
    _n[0] += 1
    ex, q = "ank.ex%d" % _n[0], "ank.q%d" % _n[0]
    rmq.broker().setup(ex, kind, q)
    return ex, q


def _sink(ex, **kw):
    s = {"type": "rabbitmq", "url": rmq.broker().url, "exchange": ex}
    s.update(kw)
    return s


def _conns(b):
    """The broker's client connections, by their peer port."""
    return {int(l) for l in b.ctl("list_connections", "peer_port",
                                  "-q").split() if l.isdigit()}


def _post_all(d, source, bodies, headers=None, workers=8):
    def one(ib):
        i, b = ib
        h = dict(headers(i)) if headers is not None else {}
        st, hh, data = post(d.port, "/webhooks/" + source, b, headers=h)
        return expect_accepted(st, hh, data, "POST %s" % source), (b, h)
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        return dict(ex.map(one, enumerate(bodies)))


def _check(msg, posted, tenant, source, inline_max=65536, fetch=None):
    """One consumed message: its body the v1 message of its hook, byte for
    byte; its properties and headers as the sink sets them."""
    v = qmsg.decode(msg["body"])
    assert v["id"] in posted, v["id"]
    body, hdrs = posted[v["id"]]
    e = {"hook_id": v["id"], "tenant": tenant, "source": source,
         "received_at": v["received_at"],
         "content_type": hdrs.get("Content-Type") or "",
         "headers": list(v["headers"].items()), "dedupe_key": "",
         "replay_id": "", "body": body, "claim_ref": v.get("claim")}
    want = expected_v1(e, inline_max=inline_max, claim=v.get("claim"))
    assert msg["body"] == want, (msg["body"][:300], want[:300])
    for k, val in hdrs.items():
        if k.lower() != "content-type" and val is not None:
            assert v["headers"].get(k.lower()) == val, (k, v["headers"])
    qmsg.assert_matches(v, body, fetch_claim=fetch)
    assert msg["message_id"] == v["id"], msg["message_id"]
    assert msg["content_type"] == "application/json", msg
    assert msg["delivery_mode"] == 2 and msg["app_id"] == "ankusa", msg
    assert msg["timestamp"] == v["received_at"] // 1000, msg
    qmsg.check_attributes(msg["headers"], v)
    return v


def test_rabbitmq_delivers_500():
    """500 hooks to a topic exchange: each consumed once, its body the v1
    message byte for byte, the hook id as message_id, tenant, source and
    id in the headers; the routing key <tenant>.<source>; fewer batches
    than hooks (the confirms pipelined)."""
    b = rmq.broker()
    ex, q = _names()
    src = ankusa.sink_source([_sink(ex)], tenant="acme",
                             retry=dict(ankusa.FAST_RETRY))
    d = Daemon(sources={"orders": src}).start()
    bodies = [json.dumps({"n": i, "pad": "x" * (i * 13),
                          "u": "caf\u00e9 \U0001F600"}).encode()
              if i % 5 else bytes(range(256)) * (1 + i % 7)
              for i in range(500)]

    def hdrs(i):
        # The binary bodies go without a content type.
        return {"X-Test": "t%d" % i,
                "Content-Type": "application/json" if i % 5 else None}
    posted = _post_all(d, "orders", bodies, headers=hdrs)
    d.settle_all(timeout=180)
    conns = _conns(b)
    got = b.consume(q, 500)
    assert len(got) == 500, "consumed %d of 500" % len(got)
    seen = set()
    for m in got:
        v = _check(m, posted, "acme", "orders")
        assert m["routing_key"] == "acme.orders", m["routing_key"]
        assert v["id"] not in seen, "twice: %s" % v["id"]
        seen.add(v["id"])
    assert seen == set(posted)
    _, out, _ = d.ctl("stats", json_out=True)
    c = json.loads(out)["counters"]
    batches = c.get('ankusa_dispatch_batches_total{sink="rabbitmq"}', 0)
    pool = int(re.search(r"(\d+) deliver processes", d.log_text()).group(1))
    ankusa.note("rabbitmq: 500 hooks in %d batches over %d connections "
                "(%d deliver processes)" % (batches, len(conns), pool))
    assert 0 < batches < 500, batches
    # The connections are the deliver processes', kept across jobs: at
    # most one a process, and each still open after 50 hooks more.
    assert 0 < len(conns) <= pool, (len(conns), pool)
    more = _post_all(d, "orders", [b'{"more":%d}' % i for i in range(50)])
    d.settle_all(timeout=60)
    after = _conns(b)
    assert conns <= after, (conns, after)
    assert len(b.consume(q, 50)) == 50 and len(more) == 50
    assert not b.consume(q, 1, idle_ms=500), "a message more"


test_rabbitmq_delivers_500.timeout = 300


def test_rabbitmq_claim_check():
    """Bodies above inline_max_bytes go by claim: the message carries the
    reference, the body fetched from the claim gateway is the one posted;
    small bodies stay inline.  The sink's url comes from a file of
    root's, by ${file:...}."""
    b = rmq.broker()
    ex, q = _names("fanout")
    gw = ankusa.free_port()
    # The url, password and all, from a file (${file:...}).
    secret = os.path.join(ankusa.tmpdir(), "amqp-url")
    with open(secret, "w") as f:
        f.write(b.url + "\n")
    os.chmod(secret, 0o600)
    src = ankusa.sink_source([_sink(ex, exchange_type="fanout",
                                    inline_max_bytes=1000,
                                    url="${file:%s}" % secret)],
                             tenant="acme", retry=dict(ankusa.FAST_RETRY))
    d = Daemon(sources={"big": src}, extra={"claim_check": {
        "ip": "127.0.0.1", "port": gw,
        "store": {"type": "local", "root": os.path.join(ankusa.tmpdir(),
                                                         "claims")}}})
    d.start()
    bodies = [os.urandom(5000 + i) for i in range(5)] + [b"small-%d" % i
                                                         for i in range(3)]
    posted = _post_all(d, "big", bodies, headers=lambda i: {
        "Content-Type": None})

    def fetch(urn):
        claimref.parse(urn)
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (
                gw, claimref.path(urn)), timeout=10) as r:
            assert r.status == 200
            return r.read()
    d.settle_all(timeout=60)
    got = b.consume(q, 8)
    assert len(got) == 8, "consumed %d of 8" % len(got)
    claims = 0
    for m in got:
        v = _check(m, posted, "acme", "big", inline_max=1000, fetch=fetch)
        claims += "claim" in v
        assert ("claim" in v) == (v["size"] > 1000), v
    assert claims == 5, claims


def test_rabbitmq_broker_restart():
    """201 hooks posted while the broker is stopped (rabbitmqctl stop_app:
    every connection closed, the port shut) and started again: every hook
    is delivered at least once, and the duplicates (a publish the broker
    took but whose confirm was lost with the connection) are counted."""
    b = rmq.broker()
    ex, q = _names()
    src = ankusa.sink_source([_sink(ex)], tenant="acme", retry={
        "base_ms": 100, "max_ms": 1000, "jitter": False,
        "max_attempts": 1000})
    d = Daemon(sources={"r": src}, extra={"dispatch": ankusa.dispatch_conf(
        breaker_failures=0)}).start()
    posted = {}
    stopped = []

    def poster():
        for i in range(201):
            st, h, data = post(d.port, "/webhooks/r", b'{"n":%d}' % i)
            posted[expect_accepted(st, h, data)] = i
            time.sleep(0.03)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        fut = pool.submit(poster)
        ankusa.wait_until(lambda: len(posted) >= 60, 30, 0.01,
                          "60 hooks posted")
        b.stop_app()
        stopped.append(len(posted))
        time.sleep(2)
        stopped.append(len(posted))
        b.start_app()
        fut.result(60)
    assert len(posted) == 201
    d.settle_all(timeout=120)
    got = b.consume(q, 1000, idle_ms=3000)
    ids = [qmsg.decode(m["body"])["id"] for m in got]
    missing = set(posted) - set(ids)
    assert not missing, "%d hooks never delivered" % len(missing)
    assert set(ids) <= set(posted)
    dups = len(ids) - len(set(ids))
    deferred = d.log_text().count("status=deferred")
    ankusa.note("rabbitmq restart: broker stopped at hook %d, started at "
                "%d; 201 delivered, %d duplicates, %d attempts deferred"
                % (stopped[0], stopped[1], dups, deferred))
    # The outage was seen: attempts failed while the broker was away.
    assert deferred > 0, "no attempt failed while the broker was stopped"
    assert d.dlq() == []


test_rabbitmq_broker_restart.timeout = 300


def test_rabbitmq_exchange_refused():
    """An exchange that does not exist: each hook dead-lettered at its
    first attempt, the reason naming the exchange and vhost.  An exchange
    of another type than exchange_type: the same, naming both.  A message
    no queue is bound for (returned, 312 NO_ROUTE): transient, retried
    until max_attempts."""
    ex, q = _names("direct")
    srcs = {
        "gone": ankusa.sink_source([_sink("ank.missing")], tenant="acme",
                                   retry=dict(ankusa.FAST_RETRY)),
        "kind": ankusa.sink_source([_sink(ex, exchange_type="fanout")],
                                   tenant="acme",
                                   retry=dict(ankusa.FAST_RETRY)),
        "noroute": ankusa.sink_source(
            [_sink(ex, exchange_type="direct", routing_key="nobody")],
            tenant="acme", retry=dict(ankusa.FAST_RETRY, max_attempts=2)),
    }
    d = Daemon(sources=srcs).start()
    for s in srcs:
        for i in range(3):
            st, h, data = post(d.port, "/webhooks/" + s, b'{"n":%d}' % i)
            expect_accepted(st, h, data)
    ankusa.wait_until(lambda: len(d.dlq()) == 9, 30, 0.1,
                      "9 hooks dead-lettered")
    for e in d.dlq(source="gone"):
        assert e["attempts"] == 1, e
        assert e["last_error"] == "rabbitmq exchange ank.missing does " \
            "not exist in vhost /", e
    for e in d.dlq(source="kind"):
        assert e["attempts"] == 1, e
        assert "exchange %s in vhost / is not of type fanout" % ex in \
            e["last_error"], e
    for e in d.dlq(source="noroute"):
        assert e["attempts"] == 2, e
        assert e["last_error"] == "rabbitmq returned 312: NO_ROUTE " \
            "(exchange %s, routing key nobody)" % ex, e
    assert not rmq.broker().consume(q, 1, idle_ms=300)


class _Mute:
    """A listener that accepts and reads but never answers: a broker that
    hangs.  Counts the connections open at once, the most seen."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.lock = threading.Lock()
        self.open = self.most = self.total = 0
        self.conns = set()
        self.stopped = False
        self.logpath = os.devnull       # for the harness's log tails
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopped:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                # A connection the daemon closed before it opened this
                # one may not have been seen to end yet (its thread not
                # run since): look, so that it is not counted as open
                # beside the new one.
                for o in list(self.conns):
                    try:
                        if o.recv(1, socket.MSG_PEEK |
                                  socket.MSG_DONTWAIT) == b"":
                            self.conns.discard(o)
                    except BlockingIOError:
                        pass
                    except OSError:
                        self.conns.discard(o)
                self.conns.add(c)
                self.open = len(self.conns)
                self.total += 1
                self.most = max(self.most, self.open)
            threading.Thread(target=self._drain, args=(c,),
                             daemon=True).start()

    def _drain(self, c):
        try:
            while c.recv(4096):
                pass
        except OSError:
            pass
        with self.lock:
            self.conns.discard(c)
            self.open = len(self.conns)
        c.close()

    def destroy(self):
        self.stopped = True
        self.sock.close()


def test_rabbitmq_breaker_and_concurrency():
    """Two sink keys: one to a broker that accepts and never answers
    (timeout_ms 400), one to the real broker.  The hung key has at most
    sink_concurrency (2) batches, so connections, open at once, and its
    breaker opens after 3 failures (module rabbitmq); the other key
    delivers all its hooks meanwhile, its breaker closed.  The notice of
    the open breaker reaches a rabbitmq sink of notifications.sinks."""
    b = rmq.broker()
    ex, q = _names()
    mute = _Mute()
    ankusa.register(mute)
    srcs = {
        "hung": ankusa.sink_source([{
            "type": "rabbitmq", "url": "amqp://127.0.0.1:%d/" % mute.port,
            "exchange": "x", "timeout_ms": 400, "max_inflight": 2}],
            tenant="th", retry={"base_ms": 50, "max_ms": 100,
                                "jitter": False, "max_attempts": 1000}),
        "fine": ankusa.sink_source([_sink(ex)], tenant="tf",
                                   retry=dict(ankusa.FAST_RETRY)),
    }
    nex, nq = _names("fanout")
    d = Daemon(sources=srcs, extra={"dispatch": ankusa.dispatch_conf(
        sink_concurrency=2, breaker_failures=3, breaker_open_ms=30000,
        breaker_max_open_ms=30000), "notifications": {"sinks": [
            _sink(nex, exchange_type="fanout")]}}).start()
    for i in range(20):
        st, h, data = post(d.port, "/webhooks/hung", b'{"n":%d}' % i)
        expect_accepted(st, h, data)

    def opened():
        for br in d.breakers():
            if br.get("source") == "hung" and br.get("state") == "open":
                return br
        return None
    br = ankusa.wait_until(opened, 20, 0.05, "the hung key's breaker open")
    assert (br["tenant"], br["module"]) == ("th", "rabbitmq"), br
    fine = _post_all(d, "fine", [b'{"f":%d}' % i for i in range(50)])
    ankusa.wait_until(lambda: d.status()["hooks"] == 20, 60, 0.2,
                      "the fine key's 50 hooks delivered")
    got = b.consume(q, 50)
    assert sorted(qmsg.decode(m["body"])["id"] for m in got) == \
        sorted(fine)
    ankusa.note("hung key: %d connections, at most %d at once" % (
        mute.total, mute.most))
    # The breaker opened on 3 failed attempts, each row of a batch one:
    # two batches of two rows, two connections, open it as well as three
    # of one, so the failures are counted, not the connections.
    _, out, _ = d.ctl("stats", json_out=True)
    failed = sum(n for c, n in json.loads(out)["counters"].items()
                 if c.startswith("ankusa_dispatch_deliveries_total{") and
                 'sink="rabbitmq"' in c and 'result="ok"' not in c)
    assert failed >= 3, "%d failed attempts before the breaker opened" % \
        failed
    assert mute.total >= 1, mute.total
    assert mute.most <= 2, "%d connections at once, sink_concurrency 2" \
        % mute.most
    assert all(br.get("state") != "open" for br in d.breakers()
               if br.get("source") == "fine"), d.breakers()
    assert d.dlq() == []
    # notifications.sinks takes a rabbitmq sink: the breaker.opened notice
    # is published like any hook, from the reserved tenant and source.
    notes = [qmsg.decode(m["body"]) for m in b.consume(nq, 10,
                                                        idle_ms=3000)]
    opened = [v for v in notes if json.loads(qmsg.body_of(v))["type"] ==
              "breaker.opened"]
    assert opened, notes
    assert (opened[0]["tenant_id"], opened[0]["source_id"]) == (
        "_ankusa", "_notifications"), opened[0]


def test_rabbitmq_tls_verified():
    """amqps:// verifies the broker's certificate by default: the node's
    TLS listener, whose self-signed certificate no system store holds,
    is refused (each attempt a transient failure saying why), while the
    listener itself works for a client that trusts that certificate."""
    b = rmq.broker()
    r = subprocess.run(["openssl", "s_client", "-connect",
                        "127.0.0.1:%d" % b.tls_port, "-CAfile", b.cert,
                        "-verify_hostname", "localhost", "-brief"],
                       input=b"", capture_output=True, timeout=30)
    out = (r.stdout + r.stderr).decode(errors="replace")
    assert "Verification: OK" in out, out
    src = ankusa.sink_source([{
        "type": "rabbitmq", "exchange": "amq.topic",
        "url": "amqps://guest:guest@127.0.0.1:%d/" % b.tls_port}],
        tenant="acme", retry=dict(ankusa.FAST_RETRY, max_attempts=2))
    d = Daemon(sources={"tls": src}).start()
    st, h, data = post(d.port, "/webhooks/tls", b'{"tls":1}')
    expect_accepted(st, h, data)
    ankusa.wait_until(lambda: len(d.dlq()) == 1, 30, 0.1,
                      "the hook dead-lettered")
    e = d.dlq()[0]
    ankusa.note("amqps to a self-signed broker: %s" % e["last_error"])
    assert e["attempts"] == 2, e
    assert "SSL peer cert verification failed" in e["last_error"], e


def test_rabbitmq_master_gone_while_awaiting_confirms():
    """A batch waiting for confirms that do not come (the broker's memory
    alarm blocks its publishers), timeout_ms 60 s: when the master is
    killed, the deliver process holding the batch leaves within seconds
    (the sink's wait calls the deliver process's watch every second), not
    when its minute is up."""
    b = rmq.broker()
    ex, q = _names()
    src = ankusa.sink_source([_sink(ex, timeout_ms=60000)], tenant="acme",
                             retry=dict(ankusa.FAST_RETRY))
    d = Daemon(sources={"m": src}, extra={"dispatch": ankusa.dispatch_conf(
        attempt_timeout_ms=120000)}).start()
    b.ctl("set_vm_memory_high_watermark", "0")
    try:
        st, h, data = post(d.port, "/webhooks/m", b'{"held":1}')
        expect_accepted(st, h, data)
        ankusa.wait_until(lambda: d.status()["delivers_busy"] >= 1, 10,
                          0.05, "the batch running")
        time.sleep(1.5)                 # in the wait for its confirm
        assert d.status()["delivers_busy"] >= 1, d.status()
        kids = [p for p in ankusa._proc_children(d.pid)
                if ankusa.proc_comm(p) == "ankusa-deliver"]
        assert kids
        d.kill9()
        t0 = time.monotonic()
        ankusa.wait_until(lambda: not any(ankusa.proc_alive(p)
                                          for p in kids), 10, 0.05,
                          "every deliver process gone")
        ankusa.note("deliver processes gone %.1f s after the master" % (
            time.monotonic() - t0))
    finally:
        b.ctl("set_vm_memory_high_watermark", "0.4")
    b.consume(q, 10, idle_ms=1000)


def test_rabbitmq_egress_guarded():
    """The broker's address passes the egress guard like any sink's: with
    egress.allow empty, a url whose name (localhost) resolves to the
    loopback loads (a name is judged at connect) and each hook is
    dead-lettered at its first attempt egress_denied:<address>; the
    broker never sees a connection."""
    b = rmq.broker()
    ex, q = _names()
    src = ankusa.sink_source([{
        "type": "rabbitmq", "exchange": ex,
        "url": "amqp://guest:guest@localhost:%d/" % b.port}],
        tenant="acme", retry=dict(ankusa.FAST_RETRY))
    d = Daemon(sources={"eg": src}, extra={"egress": {"allow": []}}).start()
    before = _conns(b)
    for i in range(3):
        st, h, data = post(d.port, "/webhooks/eg", b'{"n":%d}' % i)
        expect_accepted(st, h, data)
    ankusa.wait_until(lambda: len(d.dlq()) == 3, 30, 0.1,
                      "3 hooks dead-lettered")
    for e in d.dlq():
        assert e["attempts"] == 1, e
        assert e["last_error"] in ("egress_denied:127.0.0.1",
                                   "egress_denied:::1"), e
        assert e["reason"] == e["last_error"], e
    assert _conns(b) == before, (_conns(b), before)
    assert not b.consume(q, 1, idle_ms=300)


def test_rabbitmq_nack():
    """A queue that takes 5 messages and rejects the publishes past them
    (x-overflow reject-publish): the broker nacks those, each a transient
    failure of its own entry, retried until max_attempts and then
    dead-lettered naming the nack; the 5 it took are delivered.  (No
    breaker: 7 failures in one batch would open it.)"""
    b = rmq.broker()
    _n[0] += 1
    ex, q = "ank.ex%d" % _n[0], "ank.q%d" % _n[0]
    b.setup(ex, "topic", q, max_length=5)
    src = ankusa.sink_source([_sink(ex)], tenant="acme",
                             retry=dict(ankusa.FAST_RETRY, max_attempts=2))
    d = Daemon(sources={"full": src}, extra={
        "dispatch": ankusa.dispatch_conf(breaker_failures=0)}).start()
    posted = _post_all(d, "full", [b'{"n":%d}' % i for i in range(12)])
    ankusa.wait_until(lambda: len(d.dlq()) == 7, 30, 0.1,
                      "7 dead-lettered")
    dead = d.dlq()
    assert len(dead) == 7, dead
    for e in dead:
        assert e["attempts"] == 2, e
        assert e["last_error"] == "rabbitmq basic.nack (the broker did " \
            "not take it)", e
    got = b.consume(q, 12, idle_ms=1000)
    ids = {qmsg.decode(m["body"])["id"] for m in got}
    assert len(got) == 5 and ids <= set(posted), got
    assert not ids & {e["hook_id"] for e in dead}
