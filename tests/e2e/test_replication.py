# SPDX-License-Identifier: ISC
"""A replicated group (issue 26): three nodes of the real daemon on this
machine, each with its own data directory, their replication and ingest
ports on 127.0.0.1, Berkeley DB's replication manager between them.

- the group forms: one master, two clients; a client answers ingest 503
  not_master naming the master, its /ready is 503, an admin write 409;
  its status and /health give its role; what the master stored is on the
  clients;
- kill -9 of the master under load, rounds: a new master is elected,
  every hook answered 201 by any master is delivered, the failover time
  is printed;
- a wiped client rejoins by internal initialisation, is made master and
  delivers every hook, bodies byte for byte; a backup on a client;
- a master whose clients are gone answers 503 store_unavailable, not
  201, and 201 again when one is back.
"""

import ctypes
import hashlib
import json
import os
import pwd
import shutil
import signal
import subprocess
import threading
import time

import ankusa
import faults
from ankusa import (Daemon, TestSink, dispatch_conf, get, jbody, listen_port,
                    note, post, request, sink_source, wait_until)
from test_systemd import Notify

ROUNDS = int(os.environ.get("ANKUSA_REPL_ROUNDS", "5"))
REPL = {"ack_timeout_ms": 300, "heartbeat_ms": 200,
        "heartbeat_timeout_ms": 1000}


class Group:
    """Three nodes; node 0 creates the group."""

    def __init__(self, sink_url, n=3, priorities=None, **repl):
        self.ports = [listen_port() for _ in range(n)]
        self.nodes = []
        for i in range(n):
            r = dict(REPL)
            r.update(repl)
            r["local"] = "127.0.0.1:%d" % self.ports[i]
            r["peers"] = ["127.0.0.1:%d" % p for j, p in
                          enumerate(self.ports) if j != i]
            if i == 0:
                r["create"] = True
            if priorities is not None:
                r["priority"] = priorities[i]
            d = Daemon(name="n%d" % i, sources={
                "s": sink_source([{"type": "http", "url": sink_url}]),
            }, extra={"replication": r,
                      "dispatch": dispatch_conf()})
            self.nodes.append(d)

    def addr(self, i):
        return "127.0.0.1:%d" % self.ports[i]

    def start(self):
        for d in self.nodes:
            d.start(timeout=60)
        return self

    def role(self, d):
        try:
            st, _, body = get(d.port, "/health", timeout=1.0)
        except OSError:
            return None
        if st != 200:
            return None
        return jbody(body).get("role")

    def master(self, timeout=30.0):
        """The node that says it is master, waiting for one."""
        found = []

        def one():
            found[:] = [d for d in self.nodes if d.running() and
                        self.role(d) == "master"]
            return len(found) == 1
        wait_until(one, timeout, 0.05, "one master")
        return found[0]


def _post_any(nodes, body):
    """Post to whichever node takes it: (status, id or None, node)."""
    last = None
    for d in nodes:
        if not d.running():
            continue
        try:
            st, hdrs, data = post(d.port, "/webhooks/s", body, timeout=5.0)
        except OSError:
            continue
        last = st
        if st == 201:
            return 201, jbody(data)["id"], d
    return last, None, None


def test_repl_group_roles():
    sink = TestSink().start()
    g = Group(sink.url("/s")).start()
    m = g.master()
    assert m is g.nodes[0], "the creator is the first master"
    ids = []
    for i in range(20):
        st, hdrs, data = post(m.port, "/webhooks/s", b'{"n":%d}' % i)
        assert st == 201, (st, data)
        ids.append(jbody(data)["id"])
    wait_until(lambda: set(ids) <= set(sink.ids("/s")), 15, 0.05,
               "every hook delivered by the master")
    for c in g.nodes[1:]:
        assert g.role(c) == "client"
        st, hdrs, data = post(c.port, "/webhooks/s", b"{}")
        doc = jbody(data)
        assert st == 503 and doc == {"error": "not_master",
                                     "master": g.addr(0)}, (st, doc)
        assert hdrs.get("retry-after") == "1", hdrs
        st, _, data = get(c.port, "/ready")
        assert st == 503 and jbody(data)["reason"] == "not_master", data
        st, _, doc = c.api("POST", "/v1/retry-now", {})
        assert st == 409 and doc["error"] == "not_master" and \
            doc["master"] == g.addr(0), (st, doc)
        # The dispatch functions: unavailable on a client, whose pipeline
        # is down (the master dispatches), naming the master; the admin
        # API's dead-letter is a write: 409 not_master.
        for args in (("tick", "5"), ("pressure",),
                     ("dead-letter-source", "s")):
            rc, out, err = c.ctl(*args, check=False, timeout=10)
            assert rc == 1 and "unavailable" in err and \
                "not_master" in err and g.addr(0) in err, \
                (args, rc, out, err)
        st, _, doc = c.api("POST", "/v1/tenants/default/sources/s/"
                           "dead-letter", {})
        assert st == 409 and doc["error"] == "not_master", (st, doc)
        s = c.status()
        assert s["role"] == "client" and s["master"] == g.addr(0), s
        assert len(s["replication"]["sites"]) == 2, s
        assert all(x["connected"] for x in s["replication"]["sites"]), s
        # The master beats each second: a client that keeps up is
        # within a beat or so of it.
        wait_until(lambda: 0 <= c.status()["replication"]["lag_ms"] <
                   3000, 10, 0.1, "a client's lag known and small")
    s = m.status()
    assert s["role"] == "master" and s["master"] == g.addr(0), s
    # Delivered once each: the clients dispatch nothing.
    time.sleep(1.0)
    seen = sink.ids("/s")
    assert len(seen) == len(set(seen)) == len(ids), \
        "%d attempts for %d hooks" % (len(seen), len(ids))
    # Held hooks are on every node.
    sink.mode("/s", status=503)
    for i in range(10):
        st, _, _ = post(m.port, "/webhooks/s", b'{"held":%d}' % i)
        assert st == 201
    for c in g.nodes[1:]:
        wait_until(lambda: c.status()["hooks"] == m.status()["hooks"] ==
                   10, 10, 0.1, "the clients hold the master's hooks")
        # Reads on a client: its copy of the store.
        assert len(c.queue("s")) == len(m.queue("s")) == 10
        assert c.dlq() == m.dlq() == []


def test_repl_failover_kill9():
    sink = TestSink().start()
    g = Group(sink.url("/s")).start()
    acked = []
    stop = threading.Event()
    refused = [0]

    def load():
        n = 0
        while not stop.is_set():
            st, hid, _ = _post_any(g.nodes, b'{"n":%d}' % n)
            n += 1
            if st == 201:
                acked.append(hid)
            else:
                refused[0] += 1
                time.sleep(0.02)

    t = threading.Thread(target=load, daemon=True)
    t.start()
    times = []
    try:
        for rnd in range(ROUNDS):
            m = g.master()
            before = len(acked)
            wait_until(lambda: len(acked) >= before + 50, 20, 0.02,
                       "load on the master")
            t0 = time.monotonic()
            m.kill9()
            n0 = len(acked)
            wait_until(lambda: len(acked) > n0, 60, 0.02,
                       "a 201 from a new master")
            times.append(time.monotonic() - t0)
            g.master()
            m.start(timeout=60)
    finally:
        stop.set()
        t.join(10)
    note("failover (kill -9 to the next 201), s: %s" % ", ".join(
        "%.2f" % x for x in times))
    want = set(acked)
    wait_until(lambda: want <= set(sink.ids("/s")), 60, 0.1,
               "every hook answered 201 delivered")
    seen = sink.ids("/s")
    note("refused (503 or no connection) while failing over: %d; "
         "failover median %.2f s, max %.2f s" % (
             refused[0], sorted(times)[len(times) // 2], max(times)))
    faults.report("repl_kill9", ROUNDS, want, want - set(seen),
                  len(seen) - len(set(seen)))


test_repl_failover_kill9.timeout = max(600, 30 * ROUNDS)


def test_repl_quorum_lost():
    sink = TestSink().start()
    g = Group(sink.url("/s")).start()
    m = g.master()
    st, _, _ = post(m.port, "/webhooks/s", b"{}")
    assert st == 201
    for c in g.nodes[1:]:
        c.kill9()
    t0 = time.monotonic()
    st, hdrs, data = post(m.port, "/webhooks/s", b'{"alone":1}')
    took = time.monotonic() - t0
    assert st == 503 and jbody(data)["error"] == "store_unavailable", \
        (st, data)
    assert hdrs.get("retry-after") == "1", hdrs
    st, _, data = get(m.port, "/ready")
    assert st == 503, data
    note("a master alone: 503 in %.2f s" % took)
    g.nodes[1].start(timeout=60)
    wait_until(lambda: post(m.port, "/webhooks/s", b'{"back":1}')[0] ==
               201, 30, 0.2, "201 again with a client back")


def test_repl_rollback_handles_dead():
    """A client whose store replication rolls back: node 1 (priority 0,
    never master) holds a batch of node 0's that node 2 never saw (it was
    in doubt, answered 503: a site that cannot be elected makes no
    quorum); node 0 dies and node 2 is elected with the shorter log.  Node
    1 rolls the batch back, its next read meets DB_REP_HANDLE_DEAD, and it
    executes itself again (same pid) as a client holding what the new
    master holds; every hook answered 201 is delivered."""
    sink = TestSink().start()
    sink.mode("/s", status=503)     # every hook held in the store
    g = Group(sink.url("/s"), priorities=(100, 0, 100)).start()
    m = g.master()
    assert m is g.nodes[0]
    c, other = g.nodes[1], g.nodes[2]
    ids = []
    for i in range(10):
        st, _, data = post(m.port, "/webhooks/s", b'{"n":%d}' % i)
        assert st == 201, (st, data)
        ids.append(jbody(data)["id"])
    wait_until(lambda: c.status()["hooks"] == other.status()["hooks"] ==
               10, 15, 0.1, "both clients hold the 10 hooks")
    other.stop()
    st, hdrs, data = post(m.port, "/webhooks/s", b'{"doubt":1}')
    assert st == 503 and jbody(data)["error"] == "store_unavailable" and \
        hdrs.get("retry-after") == "1", (st, data)
    wait_until(lambda: c.status()["hooks"] == 11, 15, 0.1,
               "the unelectable client holds the batch in doubt")
    pid = c.pid
    m.kill9()
    other.start(timeout=60)
    new = g.master(60)
    assert new is other, "the electable site is elected"
    wait_until(lambda: "handles are dead" in c.log_text(), 30, 0.2,
               "the rolled back client's handles found dead", )

    def back():
        try:
            return g.role(c) == "client" and c.status()["hooks"] == 10
        except (OSError, AssertionError, KeyError, ValueError):
            return False
    wait_until(back, 60, 0.2, "the client back, without the rolled back "
               "batch")
    assert c.pid == pid and c.running(), "executed again in place"
    # An unelectable client makes no quorum: the new master commits
    # nothing for good until node 0 is back (a client now, rolling its
    # own copy of the batch back as it joins).
    m.start(timeout=60)
    assert g.role(m) == "client"
    sink.mode("/s", status=200)
    wait_until(lambda: new.api("POST", "/v1/retry-now", {})[0] == 200, 30,
               0.5, "retry now on the new master")
    wait_until(lambda: set(ids) <= set(sink.ids("/s")), 30, 0.1,
               "every 201 delivered by the new master")
    note("a client's batch in doubt rolled back: handles dead, executed "
         "again in place; the %d hooks answered 201 delivered" % len(ids))


test_repl_rollback_handles_dead.timeout = 240


def test_repl_wiped_replica_rejoins_and_delivers():
    """A client whose data directory is wiped joins again and is
    initialised by the master (tables and recent log); made master (the
    old master stopped, the other client unelectable), it delivers every
    stored hook, bodies byte for byte, and a backup taken on it while it
    was a client holds them too.  Its priority (the highest) makes the
    election after the master's stop its; the other client stays
    electable, so that it acknowledges (under quorum an unelectable site
    does not)."""
    sink = TestSink().start()
    sink.mode("/s", status=503)
    g = Group(sink.url("/s"), priorities=(100, 100, 200)).start()
    m = g.master()
    sent = {}
    for i in range(200):
        body = json.dumps({"n": i, "pad": "x" * (i * 37 % 3000)}).encode()
        st, _, data = post(m.port, "/webhooks/s", body)
        assert st == 201, (st, data)
        sent[jbody(data)["id"]] = hashlib.sha256(body).hexdigest()
    w = g.nodes[2]
    w.stop()
    shutil.rmtree(w.data_dir)
    w.start(timeout=60)
    assert g.role(w) == "client"
    wait_until(lambda: w.status()["hooks"] == len(sent), 20, 0.1,
               "the wiped client holds every hook again")
    # Joined by an internal initialisation (INIT_DONE at its join).
    assert w.status()["replication"]["inits"] >= 1, w.status()
    # A backup on a client.
    dest = os.path.join(w.dir, "backup")
    rc, out, err = w.ctl("backup", dest, check=False, json_out=True)
    assert rc == 0, (rc, out, err)
    # Neither the initialisation nor the backup has a word for the lock
    # file in the data directory (it is no table).
    for d in g.nodes:
        assert "unexpected file type" not in d.log_text(), [
            x for x in d.log_text().splitlines() if "unexpected" in x][:2]
    # The wiped node becomes master.
    g.nodes[0].stop()
    wait_until(lambda: g.role(w) == "master", 30, 0.1, "the wiped node "
               "elected")
    sink.mode("/s", status=200)
    wait_until(lambda: set(sent) <= set(sink.ids("/s", status=200)), 30,
               0.1, "every hook delivered by the re-initialised node")
    got = {r["x-ankusa-id"]: r["sha256"] for r in sink.records("/s")
           if r.get("status") == 200}
    bad = [i for i in sent if got.get(i) != sent[i]]
    assert not bad, "%d bodies differ, e.g. %s" % (len(bad), bad[:3])
    note("wiped client: %d hooks re-initialised, delivered byte for byte "
         "after its election" % len(sent))
    # The backup restores into a single node that holds them all.
    r = Daemon(name="restored", data_dir=dest, sources={
        "s": sink_source([{"type": "http", "url": sink.url("/r")}])})
    r.start(timeout=60)
    wait_until(lambda: set(sent) <= set(sink.ids("/r", status=200)), 30,
               0.1, "the client's backup delivers every hook")


test_repl_wiped_replica_rejoins_and_delivers.timeout = 300


def test_repl_haproxy_failover():
    """HAProxy in front of the three (/ready on each node's admin port as
    the check: only the master is up): through a kill -9 of the master,
    providers see 201s and 503s with Retry-After, nothing else, and every
    201 is delivered.  HAProxy retries on another node a request whose
    connection failed, that a node answered 503 (before storing), or
    that the dying master closed without an answer (it may have stored
    it: a duplicate, as a provider's own retry would be)."""
    from test_fleet import HAProxy, Load
    sink = TestSink().start()
    g = Group(sink.url("/s")).start()
    lb = HAProxy(g.nodes, retry_on="conn-failure empty-response 503",
                 extra="    http-error status 503 content-type "
                 "application/json string "
                 "'{\"error\":\"unavailable\"}' hdr Retry-After 1\n")
    lb.start()
    wait_until(lambda: post(lb.port, "/webhooks/s", b"{}")[0] == 201, 30,
               0.1, "HAProxy forwarding to the master")
    load = Load(lb.port, nthreads=4, path="/webhooks/s").start()
    wait_until(lambda: load.count() >= 200, 60, 0.05, "load through it")
    m = g.master()
    m.kill9()
    at = load.count()
    new = g.master(timeout=60)
    assert new is not m
    wait_until(lambda: sum(1 for a in load.answers[at:] if a[0] == 201) >=
               200, 60, 0.05, "201s from the new master")
    answers = load.finish()
    bad = [a for a in answers if a[0] not in (201, 503) or
           (a[0] == 503 and a[3] is None)]
    assert not bad, "%d of %d answers neither 201 nor 503 with "\
        "Retry-After, e.g. %r; haproxy:\n%s" % (
            len(bad), len(answers), bad[:5], ankusa.tail(lb.logpath, 30))
    acked = {jbody(a[1])["id"] for a in answers if a[0] == 201}
    wait_until(lambda: acked <= set(sink.ids("/s")), 60, 0.1,
               "every 201 through HAProxy delivered")
    note("through HAProxy: %d answers, %d 201, %d 503 while failing over"
         % (len(answers), len(acked), sum(a[0] == 503 for a in answers)))


test_repl_haproxy_failover.timeout = 300


def _site_lag(d, addr):
    """The lag in bytes d's status gives the site at addr, or None."""
    for s in d.status()["replication"]["sites"]:
        if s["address"] == addr:
            return s["lag_bytes"]
    return None


def _lag_series(d):
    """ankusa_replication_lag_bytes on d's /metrics: {site: bytes}."""
    st, _, data = request(d.admin_port, "GET", "/metrics")
    assert st == 200, st
    out = {}
    for line in data.decode().splitlines():
        if line.startswith("ankusa_replication_lag_bytes{"):
            site = line.split('site="', 1)[1].split('"', 1)[0]
            out[site] = float(line.rsplit(" ", 1)[1])
    return out


def test_repl_stopped_replica_catches_up():
    """A client stopped for a while under load (the other acknowledges,
    so the master keeps answering 201) catches up when it is started
    again: it holds what the master holds.  The master's status and
    /metrics give how far behind it is in bytes, and the lag falls back
    once it has caught up."""
    sink = TestSink().start()
    sink.mode("/s", status=503)
    g = Group(sink.url("/s")).start()
    m = g.master()
    lag = g.nodes[2]
    # Every site reports its log's end each second.
    wait_until(lambda: all(x["lag_bytes"] >= 0 for x in
                           m.status()["replication"]["sites"]), 15, 0.1,
               "the master knows each client's lag in bytes")
    wait_until(lambda: 0 <= g.nodes[1].status()["replication"]
               ["lag_bytes"] < 65536, 15, 0.1,
               "a client knows its own lag in bytes")
    lag.stop()
    n = refused = 0
    pad = b"x" * 1024
    t0 = time.monotonic()
    while time.monotonic() - t0 < 5.0:
        # A batch in flight as the client went may be in doubt: 503,
        # Retry-After, and the provider's retry.
        st, hdrs, data = post(m.port, "/webhooks/s",
                              b'{"n":%d,"pad":"%s"}' % (n, pad))
        if st == 503 and jbody(data)["error"] == "store_unavailable" \
                and hdrs.get("retry-after") == "1" and refused < 5:
            refused += 1
            continue
        assert st == 201, (st, data)
        n += 1
    # The stopped client is behind by every hook since (bodies of 1 KiB
    # and more): in status and in /metrics.
    wait_until(lambda: _site_lag(m, g.addr(2)) >= n * 1024, 10, 0.2,
               "the master counts the stopped client's lag")
    behind = _site_lag(m, g.addr(2))
    assert _lag_series(m).get(g.addr(2), -1) >= n * 1024, _lag_series(m)
    lag.start(timeout=60)
    # The group's master from here on: with this module's heartbeat
    # timeout of 1 s, a master busy with the client's catch-up on a loaded
    # machine has lost an election to the other client (seen once in a
    # whole-suite run beside other work), and a client does not report
    # the other sites' lag.  The catch-up is checked against whichever
    # node is master.
    def master():
        return g.master(5.0)
    # In doubt ones may be stored too: the client holds what the master
    # holds, at least every 201.
    wait_until(lambda: lag.status()["hooks"] == master().status()["hooks"]
               >= n, 30, 0.1, "the stopped client caught up")
    wait_until(lambda: 0 <= _site_lag(master(), g.addr(2)) < 65536, 15,
               0.2, "its lag in bytes back under 64 KiB")
    if master() is not m:
        note("the group elected n%d while the client caught up" %
             g.nodes.index(master()))
    wait_until(lambda: 0 <= lag.status()["replication"]["lag_bytes"] <
               65536 and 0 <= _lag_series(lag).get(g.addr(2), -1) < 65536,
               15, 0.2, "its own lag in bytes known and small")
    note("a client stopped for 5 s of load (%d hooks, %d answered 503 "
         "in doubt) was %d bytes behind, and caught up" %
         (n, refused, behind))


def test_repl_hung_client_named():
    """A client that hangs (SIGSTOP) keeps its connection, and with it the
    master's log files (Berkeley DB keeps every log file from the last
    one a connected site acknowledged): the master names it in its log
    once it has been silent for 15 s, with how far behind it is.  The
    master goes on answering 201 (the other client acknowledges), and the
    client, continued, catches up."""
    sink = TestSink().start()
    sink.mode("/s", status=503)
    g = Group(sink.url("/s")).start()
    m = g.master()
    c = g.nodes[2]
    wait_until(lambda: _site_lag(m, g.addr(2)) is not None and
               _site_lag(m, g.addr(2)) >= 0, 15, 0.1,
               "the master has the client's lag")
    c.signal(signal.SIGSTOP)
    n = 0
    try:
        t0 = time.monotonic()
        want = "site %s is connected but has not reported" % g.addr(2)
        while want not in m.log_text() and time.monotonic() - t0 < 40:
            st, _, data = post(m.port, "/webhooks/s",
                               b'{"n":%d,"pad":"%s"}' % (n, b"h" * 512))
            assert st == 201, (st, data)
            n += 1
            time.sleep(0.01)
        took = time.monotonic() - t0
        assert want in m.log_text(), "the hung client was not named"
        assert took >= 14, "named after %.1f s" % took
    finally:
        c.signal(signal.SIGCONT)
    wait_until(lambda: c.status()["hooks"] == m.status()["hooks"] >= n, 30,
               0.2, "the continued client caught up")
    note("a hung client named by the master after %.1f s (%d hooks "
         "answered 201 meanwhile)" % (took, n))


def test_repl_replay_runs_on_master_only():
    """A replay job started on the master is in every node's store; only
    the master runs it: a client lists it (a read) and writes nothing, so
    it logs no refused write; after a failover the new master takes the
    job up from its cursor and finishes it."""
    sink = TestSink().start()
    sink.mode("/s", status=410)
    g = Group(sink.url("/s"))
    for d in g.nodes:       # the contracts' 410: dead-lettered
        d.sources["s"]["sinks"][0]["disable_on"] = []
        d.write_config()
    g.start()
    m = g.master()
    for i in range(30):
        st, _, data = post(m.port, "/webhooks/s", b'{"r":%d}' % i)
        assert st == 201, (st, data)
    wait_until(lambda: m.status()["dead"] == 30, 30, 0.1, "30 dead letters")
    sink.mode("/s", status=200)
    st, _, j = m.api("POST", "/v1/replays", {"kind": "dlq", "rate": 5})
    assert st == 202, (st, j)
    rid = j["id"]
    c = g.nodes[1]
    marks = {d.dir: len(d.log_text()) for d in g.nodes[1:]}
    wait_until(lambda: c.api("GET", "/v1/replays/" + rid)[0] == 200, 15,
               0.2, "the job listed on a client")
    time.sleep(3.0)
    for d in g.nodes[1:]:
        late = d.log_text()[marks[d.dir]:]
        bad = [x for x in late.splitlines() if "warning" in x or
               "error" in x]
        assert not bad, "%s: %s" % (d.dir, bad[:3])
    # The master goes; the job goes on on the new one.
    m.kill9()
    new = g.master(60)
    wait_until(lambda: new.api("GET", "/v1/replays/" + rid)[2].get("state")
               == "done", 60, 0.5, "the replay done on the new master")
    got = {r["x-ankusa-id"] for r in sink.records("/s")
           if r["status"] == 200 and r.get("x-ankusa-replay-id") == rid}
    assert len(got) == 30, "%d of 30 replayed" % len(got)
    note("a replay of 30 dead letters at 5/s: run by the master only, "
         "finished by the next after a kill -9")


test_repl_replay_runs_on_master_only.timeout = 240


def _partition():
    """Runs inside a private network namespace (repl.in_netns)."""
    import repl
    sink = TestSink().start()
    g = repl.Group(sources={
        "s": sink_source([{"type": "http", "url": sink.url("/s")}])},
        extra={"dispatch": dispatch_conf()})
    g.start()
    m = g.wait_master(30)
    load = repl.LoadGen(g.nodes, rate=100, path="/webhooks/s",
                        group=g).start()
    load.wait_acked(100)
    t_cut = time.monotonic()
    g.isolate(m)
    # Past one ack timeout the cut-off master answers no 201: its commits
    # get no quorum.
    time.sleep(REPL["ack_timeout_ms"] / 1000.0 + 0.5)
    late = []
    t_end = time.monotonic() + 3.0
    while time.monotonic() < t_end:
        st, _, data = post(m.port, "/webhooks/s", b'{"cut":1}',
                           host=m.host, timeout=5.0)
        late.append(st)
    assert 201 not in late, "the cut-off master answered 201 %d times" % \
        late.count(201)
    new, secs = g.wait_new_master(m, since=t_cut)
    note("cut-off master: %d posts, none 201 (%s); a new master in "
         "%.2f s" % (len(late), sorted(set(late)), secs))
    load.wait_acked(100)
    g.heal_all()
    g.wait_role(m, "client", timeout=60)
    last = g.wait_master(60)
    load.finish()
    assert not load.other, load.summary()
    note("load: %s" % load.summary())
    last.settle_all(90)
    repl.check(load, [last], sink, "/s").report("repl_partition", 1)


def test_repl_partition():
    """A master cut off from both peers (inside a private network
    namespace, ip rule blackholes between the nodes' 127.0.0.x): no 201
    from it after the ack timeout, a new master elected, the old one a
    client after the heal, every 201 delivered."""
    import repl
    repl.in_netns(_partition, timeout=170)


test_repl_partition.timeout = 180


# ------------------------------------------------ the root helper, re-exec

def _root_helper(pid):
    """The privsep helper of ankusad pid (privsep.c): its child that is
    ankusad, not exec'd, and root, the oldest such (a child the helper
    has cloned and not yet executed is one too, for a moment); None if
    it has none."""
    found = []
    for p in ankusa._proc_children(pid):
        try:
            if ankusa.proc_alive(p) and ankusa.proc_comm(p) == "ankusad" \
                    and os.stat("/proc/%d" % p).st_uid == 0:
                with open("/proc/%d/stat" % p) as f:
                    st = f.read()
                found.append((int(st[st.rfind(")") + 2:].split()[19]), p))
        except FileNotFoundError:
            continue
    return min(found)[1] if found else None


def _name(d):
    return os.path.basename(d.dir)


def _ppid(pid):
    with open("/proc/%d/stat" % pid) as f:
        st = f.read()
    return int(st[st.rfind(")") + 2:].split()[1])


def _reexecs(d):
    return d.log_since_start().count("executing ankusad again")


def _wait_reexec_master(g, d, before):
    """d, a client, is elected and executes itself again (repl.c): wait
    for the exec and for it to say master after it."""
    wait_until(lambda: _reexecs(d) > before, 60, 0.05,
               "%s executing itself again as master" % _name(d))
    wait_until(lambda: g.role(d) == "master", 60, 0.05,
               "%s master after its exec" % _name(d))
    assert d.running(), "%s exited at its exec" % _name(d)


def _check_helper_kept(d, helper):
    """After d's exec the helper forked by the first image still runs, is
    d's child, root, and holds its socketpair end alone."""
    assert helper is not None, "%s has no root helper before the exec" % \
        _name(d)
    assert ankusa.proc_alive(helper), \
        "%s: the root helper %d is gone after the exec (log:\n%s)" % (
            _name(d), helper, ankusa.tail(d.logpath))
    assert _ppid(helper) == d.pid, (helper, _ppid(helper), d.pid)
    assert _root_helper(d.pid) == helper
    # Stdio, its socketpair end, and a pidfd of each child it spawned;
    # while it spawns one, that child's descriptors too, for a moment.
    seen = []

    def own_only():
        fds = sorted(int(x) for x in os.listdir("/proc/%d/fd" % helper))
        links = [os.readlink("/proc/%d/fd/%d" % (helper, x))
                 for x in fds[3:]]
        seen[:] = [fds[:3]] + links
        return fds[:3] == [0, 1, 2] and \
            len([x for x in links if x.startswith("socket:")]) == 1 and \
            all(x.startswith("socket:") or x == "anon_inode:[pidfd]"
                for x in links)
    wait_until(own_only, 10, 0.02, "the helper holding its socketpair "
               "end and pidfds alone: %r" % seen)
    # The re-executed image holds the other end (ss -x: the peer's
    # inode).
    assert _master_end(d, helper) is not None, \
        "the re-executed ankusad holds no end of the helper's socketpair"


def _master_end(d, helper):
    """The descriptor of ankusad d that is the peer of its helper's
    socketpair end (ss -x gives the peer's inode), or None."""
    socks = []

    def one_socket():
        # Not while it spawns a child, holding that child's channel too.
        socks[:] = [x for x in (os.readlink("/proc/%d/fd/%s" % (helper, y))
                                for y in os.listdir("/proc/%d/fd" % helper))
                    if x.startswith("socket:[")]
        return len(socks) == 1
    wait_until(one_socket, 10, 0.02, "the helper holding one socket")
    link = socks[0]
    peer = _unix_peer(link[len("socket:["):-1])
    for x in os.listdir("/proc/%d/fd" % d.pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (d.pid, x)) == \
                    "socket:[%s]" % peer:
                return int(x)
        except OSError:
            pass
    return None


def _hold_master_end(d, helper):
    """A copy in this process of ankusad d's end of the helper's
    socketpair (pidfd_getfd(2)): with it held, the helper sees no EOF when
    d dies, so only its look at its parent (getppid, privsep.c) can end
    it.  None (noted) where the kernel has no pidfd_getfd (before 5.6).
    434 and 438 are the numbers of every architecture but alpha's."""
    libc = ctypes.CDLL(None, use_errno=True)
    end = _master_end(d, helper)
    assert end is not None, "%s holds no end of the helper's socketpair" \
        % _name(d)
    pidfd = libc.syscall(434, d.pid, 0)             # pidfd_open
    if pidfd < 0:
        note("pidfd_open: %s: the helper's exit at a kill -9 is checked "
             "with its EOF too" % os.strerror(ctypes.get_errno()))
        return None
    try:
        fd = libc.syscall(438, pidfd, end, 0)       # pidfd_getfd
    finally:
        os.close(pidfd)
    if fd < 0:
        note("pidfd_getfd: %s: the helper's exit at a kill -9 is checked "
             "with its EOF too" % os.strerror(ctypes.get_errno()))
        return None
    return fd


def _unix_peer(inode):
    """The inode of the peer of the unix socket inode (ss -x), or None."""
    r = subprocess.run(["ss", "-xn"], capture_output=True, timeout=10,
                       stdin=subprocess.DEVNULL)
    for line in r.stdout.decode("utf-8", "replace").splitlines()[1:]:
        w = line.split()
        if len(w) >= 8 and w[-3] == inode:
            return w[-1]
    return None


def _kill9_helper_goes(d, helper, hold):
    """kill -9 of d, executed again since it forked helper: the helper
    goes too.  hold: with a copy of d's end of their socketpair held here
    (no EOF for the helper), so that only its look at its parent ends it
    (privsep.c, PRIVSEP_PARENT_MS)."""
    held = _hold_master_end(d, helper) if hold else None
    how = "its end of the socketpair closed" if held is None else \
        "its parent gone, the socketpair held open by the test"
    try:
        t0 = time.monotonic()
        d.kill9()
        wait_until(lambda: not ankusa.proc_alive(helper), 5, 0.02,
                   "the helper %d gone with its parent %s, killed after "
                   "its exec (%s)" % (helper, _name(d), how))
    finally:
        if held is not None:
            os.close(held)
    note("%s killed -9 after its exec: helper %d gone in %.2f s (%s)" % (
        _name(d), helper, time.monotonic() - t0, how))


def test_repl_root_helper_survives_reexec():
    """Started as root with node.user an unprivileged user, a client
    elected master executes itself again (repl.c, reexec.c): the root
    helper forked by its first image (privsep.c) is still its child after
    the exec, holding its socketpair with the new image; a stop then
    attaches the ingest listener's SYN-drop filter through it when the
    kernel refuses it to the user (EPERM injected with strace); a kill -9
    after an exec leaves no helper behind, by EOF or, its socketpair held
    open elsewhere, by its look at its parent."""
    if os.geteuid() != 0:
        raise ankusa.Skip("needs root (ankusad forks its root helper only "
                          "when started as root)")
    if shutil.which("strace") is None:
        raise ankusa.Skip("strace not installed (needed to refuse the "
                          "filter to node.user; scripts/test installs it)")
    if shutil.which("ss") is None:
        raise ankusa.Skip("ss not installed (iproute2: scripts/test "
                          "installs it)")
    try:
        pwd.getpwnam(ankusa.DAEMON_USER)
    except KeyError:
        raise AssertionError("no user %s: scripts/test creates it "
                             "(useradd --system ...)" % ankusa.DAEMON_USER)
    sink = TestSink().start()
    g = Group(sink.url("/s"))
    for d in g.nodes:
        d.extra["node"] = {"user": ankusa.DAEMON_USER,
                           "data_dir": d.data_dir}
        # A mode that lets node.user connect: its credentials refuse it.
        d.extra["control"] = {"socket": d.sock, "mode": "0666"}
        # The token in a file only root reads: the exec, as node.user,
        # must take it from the image before.
        tfile = os.path.join(ankusa.tmpdir("secret-" + _name(d)),
                             "admin.token")
        with open(tfile, "w") as f:
            f.write(ankusa.ADMIN_TOKEN + "\n")
        os.chmod(tfile, 0o600)
        d.admin["tokens"] = [{"name": "e2e", "token_file": tfile,
                              "scopes": ["*"]}]
        d.write_config()
    g.start()
    a = g.master()
    assert a is g.nodes[0]
    helpers = {d: _root_helper(d.pid) for d in g.nodes}
    assert all(helpers.values()), helpers

    # 1. The master killed: a client elected, executed again, its helper
    # kept.
    before = {d: _reexecs(d) for d in g.nodes}
    a.kill9()
    x = g.master(60)
    _wait_reexec_master(g, x, before[x])
    _check_helper_kept(x, helpers[x])
    note("%s elected and executed again: helper %d kept, its parent %d" %
         (_name(x), helpers[x], x.pid))
    # The new image, node.user from its start, still refuses node.user on
    # its control socket and takes the token of a file only root reads.
    du = pwd.getpwnam(ankusa.DAEMON_USER)
    r = subprocess.run(["setpriv", "--reuid=%d" % du.pw_uid,
                        "--regid=%d" % du.pw_gid, "--clear-groups",
                        ankusa.program("ankusactl"), "-s", x.sock, "status"],
                       capture_output=True, timeout=20,
                       stdin=subprocess.DEVNULL)
    out = (r.stdout + r.stderr).decode("utf-8", "replace")
    assert r.returncode != 0 and "is node.user" in out, (r.returncode, out)
    st, _, doc = x.api("GET", "/v1/config")
    assert st == 200, (st, doc)

    # 2. kill -9 of the re-executed master: its helper goes with it (the
    # old master back first, for a quorum to elect the next one, which
    # executes itself again in turn).
    a.start(timeout=60)
    wait_until(lambda: g.role(a) == "client", 60, 0.05, "the old master "
               "back as a client")
    helpers[a] = _root_helper(a.pid)
    before = {d: _reexecs(d) for d in g.nodes}
    _kill9_helper_goes(x, helpers[x], hold=False)
    y = g.master(60)
    _wait_reexec_master(g, y, before[y])
    _check_helper_kept(y, helpers[y])
    x.start(timeout=60)
    wait_until(lambda: g.role(x) == "client", 60, 0.05, "%s back as a "
               "client" % _name(x))
    helpers[x] = _root_helper(x.pid)

    # 3. A stop of the re-executed master: the kernel refuses it the
    # filter (EPERM injected into its main thread's setsockopt), the
    # helper attaches it (traced, not faulted).
    tmp = ankusa.tmpdir()
    mtrace = os.path.join(tmp, "master-setsockopt.trace")
    htrace = os.path.join(tmp, "helper-setsockopt.trace")
    before = {d: _reexecs(d) for d in g.nodes}
    ht = faults.strace_attach(helpers[y], ["setsockopt"], htrace)
    mt = faults.strace_attach(y.pid, ["setsockopt"], mtrace, error="EPERM",
                              when="1+")
    try:
        rc = y.stop()
    finally:
        faults.stop_tracer(mt)
        faults.stop_tracer(ht)
    with open(mtrace) as f:
        mlines = [ln.strip() for ln in f if "SO_ATTACH_FILTER" in ln]
    with open(htrace) as f:
        hlines = [ln.strip() for ln in f if "SO_ATTACH_FILTER" in ln]
    assert mlines and all("EPERM" in ln and "INJECTED" in ln
                          for ln in mlines), mlines
    assert len(hlines) == 1 and hlines[0].endswith("= 0"), hlines
    assert rc == 0, "exit %s:\n%s" % (rc, ankusa.tail(y.logpath))
    log = y.log_since_start()
    assert "SO_ATTACH_FILTER" not in log, log
    wait_until(lambda: not ankusa.proc_alive(helpers[y]), 5, 0.02,
               "the helper gone after its act and its parent's exit")
    note("%s re-executed, stopped with the filter refused to %s: the "
         "helper attached it (%s)" % (_name(y), ankusa.DAEMON_USER,
                                      hlines[0][:60]))

    # 4. The two left elect one, which executes itself again; killed -9
    # with its end of the socketpair held open here, its helper still
    # goes.
    w = g.master(60)
    _wait_reexec_master(g, w, before[w])
    _check_helper_kept(w, helpers[w])
    _kill9_helper_goes(w, helpers[w], hold=True)


test_repl_root_helper_survives_reexec.timeout = 300


def test_repl_reexec_notify_children_environment():
    """A client elected master executes itself again (reexec.c) and keeps
    what the master needs of its environment: its connection to
    NOTIFY_SOCKET (READY=1 again from the new image, MAINPID the same pid,
    the watchdog's pings go on) and the variables its config and children
    read; the new image's children get none of the service manager's
    variables, of the descriptors handed down (ANKUSA_INHERIT_FDS) or of
    the master's secrets, and the edges say the new role."""
    sink = TestSink().start()
    g = Group(sink.url("/s"))
    notify = {}
    for d in g.nodes:
        notify[d] = Notify(abstract=True)
        d.env_extra = {"NOTIFY_SOCKET": notify[d].addr,
                       "WATCHDOG_USEC": "400000",
                       "REEXEC_MASTER_SECRET": "never-in-a-child",
                       "AWS_SECRET_ACCESS_KEY": "never-in-a-child"}
    try:
        g.start()
        a = g.master()
        before = {d: _reexecs(d) for d in g.nodes}
        seen = {d: len(notify[d].all()) for d in g.nodes}
        a.kill9()
        x = g.master(60)
        _wait_reexec_master(g, x, before[x])
        n = notify[x]
        i, t_ready, f = n.wait_for("READY", "1", after=seen[x], timeout=30)
        assert f.get("MAINPID") == str(x.pid), f
        time.sleep(1.0)
        pings = [t for t, m in n.all() if m.get("WATCHDOG") == "1" and
                 t > t_ready]
        assert len(pings) >= 3, "%d watchdog pings in the second after " \
            "the new image's READY=1" % len(pings)

        gone = {"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID",
                "ANKUSA_INHERIT_FDS", "REEXEC_MASTER_SECRET",
                "AWS_SECRET_ACCESS_KEY"}
        kids = ankusa.executed_children(x, {"ankusa-edge": 1,
                                            "ankusa-deliver": 1})
        for prog, pids in kids.items():
            for k in pids:
                env = ankusa.proc_environ(k)
                if env is None:
                    continue
                assert not gone & set(env), "%s %d of the new image has " \
                    "%s" % (prog, k, sorted(gone & set(env)))
                if prog == "ankusa-edge":
                    assert env.get("ANKUSA_NODE_ROLE") == "master", env
        note("%s executed again: READY=1 and %d pings from the new image, "
             "its children clean" % (_name(x), len(pings)))
    finally:
        for s in notify.values():
            s.close()


test_repl_reexec_notify_children_environment.timeout = 180
