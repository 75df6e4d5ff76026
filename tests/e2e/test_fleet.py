# SPDX-License-Identifier: ISC
"""A fleet behind a load balancer (issue 25, section 6): three nodes of
the real daemon, each with its own data directory, behind HAProxy
(Debian's haproxy, run in the foreground with -db on loopback ports, its
config written here), /ready on each node's admin port as the health
check.  Load goes through HAProxy while one node is drained
(ankusactl drain); every request must be answered 201 (HAProxy retries a
503 that a node answered before storing, and a refused connection, on
another node), and every 201's id must reach the sink.  The drained
node's data directory still holds what it accepted and had not yet
delivered: it is started again to deliver them, as README's "A fleet
behind a load balancer" says an operator does.
"""

import http.client
import re
import threading
import time

import ankusa
from ankusa import Daemon, Skip, TestSink, wait_until

CHECK_INTER_MS = 100    # HAProxy's health check interval here

HAPROXY_CFG = """\
global
    log stderr format short local0 info
    maxconn 512

defaults
    mode http
    log global
    option httplog
    timeout connect 1s
    timeout client 10s
    timeout server 10s
    timeout check 1s
    # A new connection to a node for every request: a keep-alive
    # connection a draining node closes while a request is on its way
    # could not be told from a request the node took.
    option http-server-close
    http-reuse never
    # Retry only what a node has certainly not stored: a connection that
    # could not be made, or a 503 (ankusad answers 503 before it stores,
    # docs: README "A fleet behind a load balancer"); on another node.
    # A request can be sent again only if haproxy holds all of it: wait
    # for the whole body (it must fit in tune.bufsize) before forwarding.
    option http-buffer-request
    retries 3
    option redispatch 1
    retry-on {retry_on}
{extra}
frontend ingest
    bind 127.0.0.1:{port}
    default_backend ankusa

backend ankusa
    balance roundrobin
    option httpchk GET /ready
    http-check expect status 200
    default-server inter {inter}ms fastinter {inter}ms downinter {inter}ms fall 1 rise 2
{servers}
"""


class HAProxy(ankusa.HAProxy):
    """The fleet's HAProxy (HAPROXY_CFG) in front of nodes."""

    def __init__(self, nodes, retry_on="conn-failure 503", extra=""):
        self.port = ankusa.free_port()
        servers = "\n".join(
            "    server n%d 127.0.0.1:%d check port %d" % (
                i + 1, d.port, d.admin_port) for i, d in enumerate(nodes))
        super().__init__(HAPROXY_CFG.format(
            port=self.port, inter=CHECK_INTER_MS, servers=servers,
            retry_on=retry_on, extra=extra))


class Load:
    """nthreads clients posting to HAProxy, one connection a request, as
    providers do; every answer kept."""

    def __init__(self, port, nthreads=4, path="/webhooks/github"):
        self.port = port
        self.path = path
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.answers = []               # (status, id or body, seq)
        self.threads = [threading.Thread(target=self.run, args=(i,),
                                         daemon=True)
                        for i in range(nthreads)]
        self.seq = 0

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def run(self, k):
        n = 0
        while not self.stop.is_set():
            n += 1
            body = ('{"client":%d,"n":%d}' % (k, n)).encode()
            t0 = time.monotonic()
            try:
                st, hdrs, data = ankusa.post(self.port, self.path, body,
                                             timeout=15)
            except (OSError, http.client.HTTPException) as e:
                st, hdrs, data = -1, {}, repr(e).encode()
            rec = (st, data, time.monotonic() - t0,
                   hdrs.get("retry-after"))
            with self.lock:
                self.answers.append(rec)

    def count(self):
        with self.lock:
            return len(self.answers)

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(30)
        return list(self.answers)


def test_fleet_drain_behind_haproxy():
    """Three nodes behind HAProxy; load through it; one node drained
    mid-load: no request failed, every 201 delivered."""
    sink = TestSink().start()
    nodes = []
    for i in range(3):
        d = Daemon(name="n%d" % (i + 1), sources={
            "github": ankusa.sink_source([{"type": "http",
                                           "url": sink.url()}],
                                         retry=dict(ankusa.FAST_RETRY))})
        nodes.append(d)
    for d in nodes:
        d.start()
    lb = HAProxy(nodes).start()

    probes = []

    def all_up():
        try:
            st, _, data = ankusa.post(lb.port, "/webhooks/github", b"{}",
                                      timeout=2)
        except OSError:
            return False
        if st == 201:
            probes.append(ankusa.jbody(data)["id"])
        return st == 201
    wait_until(all_up, timeout=20, what="HAProxy forwarding")
    # Every node up in HAProxy's view (rise 2) before the load starts.
    time.sleep(3 * CHECK_INTER_MS / 1000.0)

    load = Load(lb.port).start()
    wait_until(lambda: load.count() >= 150, timeout=60,
               what="150 answers through HAProxy")
    victim = nodes[1]
    before = load.count()
    rc, out, err = victim.ctl("drain", "30", check=False, timeout=60)
    assert rc == 0, (rc, out, err)
    assert victim.proc.wait(30) == 0
    drained_at = load.count()
    # Load goes on with two nodes, then stops.
    wait_until(lambda: load.count() >= drained_at + 150, timeout=60,
               what="150 more answers after the drain")
    answers = load.finish()
    lb_log = ankusa.tail(lb.logpath, 40)

    failed = [a for a in answers if a[0] != 201]
    assert not failed, "%d of %d requests not 201, e.g. %r; haproxy:\n%s" % (
        len(failed), len(answers), failed[:5], lb_log)
    ids = [ankusa.jbody(a[1])["id"] for a in answers] + probes
    assert len(set(ids)) == len(ids), "an id answered twice"
    # No request waited for a connection that the draining node would
    # not take (HAProxy's "timeout connect", 1 s, then another node).
    slowest = max(a[2] for a in answers[before:drained_at])
    assert slowest < 0.9, "a request took %.2f s during the drain" % slowest
    # The node was drained under load, and kept its edges answering 503
    # until HAProxy's check had seen /ready say so three times.
    assert drained_at > before
    vlog = victim.log_text()
    assert "/ready is polled every" in vlog, ankusa.tail(victim.logpath)
    assert "/ready answered 503 3 times" in vlog, \
        ankusa.tail(victim.logpath)

    # The drained node keeps what it had not delivered: start it again.
    victim.start()

    def delivered():
        got = set(sink.ids())
        missing = [i for i in ids if i not in got]
        return not missing or None
    try:
        wait_until(delivered, timeout=60, what="every 201 delivered")
    except AssertionError:
        got = set(sink.ids())
        missing = [i for i in ids if i not in got]
        raise AssertionError("%d of %d accepted hooks not delivered, e.g. "
                             "%r" % (len(missing), len(ids), missing[:3]))
    # haproxy's log: the fifth of "actconn/feconn/beconn/srv_conn/retries"
    # is "+N" for a request redispatched to another server.
    with open(lb.logpath, errors="replace") as f:
        moved = sum(1 for l in f if " 201 " in l and
                    re.search(r" \d+/\d+/\d+/\d+/\+\d+ ", l))
    ankusa.note("fleet: %d requests through HAProxy, all 201, %d of them "
                "redispatched after a 503 or a refused connection; %d "
                "answered during the drain, the slowest in %.0f ms; %d "
                "deliveries for %d hooks" % (
                    len(answers), moved, drained_at - before,
                    1000 * max(a[2] for a in answers[before:drained_at]),
                    len(sink.ids()), len(ids)))
    for d in nodes:
        assert d.stop() == 0
