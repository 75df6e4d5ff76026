# SPDX-License-Identifier: ISC
"""Self-tests of the replication tests' harness (repl.py): the private
network namespace, cut/isolate/heal of new and established TCP connections
between 127.0.0.x addresses (the bind_preload.so shim included), a node
inside the namespace, the load generator and its checker.  They need no
replication in the daemon but the last one, which runs a group through a
kill -9 of its master and an isolation of the next one (it skips with a
daemon that has no `replication` section).
"""

import os
import socket
import subprocess
import sys
import threading
import time

import ankusa
from ankusa import (Skip, TestSink, _proc_children, check_config,
                    dispatch_conf, expect_accepted, post, proc_comm,
                    sink_source, wait_until)
import repl
from repl import Group, LoadGen, Node, node_addr

A, B, C = node_addr(0), node_addr(1), node_addr(2)


# ---------------------------------------------------------------- namespace

def _netns():
    assert repl.in_private_netns(), "not in a private network namespace"
    # The PID namespace: the scenario is its init, so its daemons die
    # with it, however it ends.
    assert os.getpid() == 1, "not the init of a PID namespace: %d" % \
        os.getpid()
    _, out = repl._ip("-o", "link", "show")
    links = [l.split(":")[1].strip() for l in out.splitlines()]
    assert links == ["lo"], "links in the namespace: %r" % links
    assert "UP" in out.split("<", 1)[1].split(">", 1)[0].split(","), out
    _, rules = repl._ip("rule", "show")
    assert "%d:\tfrom all lookup local" % repl.LOCAL_PREF in rules and \
        not rules.startswith("0:"), "rules: %r" % rules
    # Nothing but loopback is reachable from here.
    rc, out = repl._ip("route", "get", "192.0.2.1", check=False)
    assert rc != 0, "a route off the machine: %r" % out
    _, out = repl._ip("route", "get", A)
    assert out.startswith("local %s dev lo" % A), out


def test_replharness_netns():
    def host_rules():
        r = subprocess.run(["ip", "rule", "show"], capture_output=True,
                           timeout=10)
        return r.stdout
    before = host_rules() if os.geteuid() == 0 else None
    repl.in_netns(_netns, timeout=60)
    # The host's rules are what they were.
    assert host_rules() == before, "the host's ip rules changed"


def _outside():
    # in_netns() is what makes the namespace: a cut anywhere else refuses.
    try:
        repl.cut(A, B)
    except AssertionError as e:
        assert "inside in_netns" in str(e), e
        return
    raise AssertionError("cut() ran outside a namespace of its own")


def test_replharness_cut_refused_outside():
    _outside()


# ---------------------------------------------------------------- cuts

# A peer in a process of its own, its connections bound by the shim: it
# connects to argv[1]:argv[2], prints its local address, sends "tick" every
# 50 ms and prints every line it receives ("got ...") to stdout.
PEER = r"""
import socket, sys, threading, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), 5)
s.settimeout(None)
print("local %s %d" % s.getsockname(), flush=True)
def ticks():
    n = 0
    while True:
        n += 1
        s.sendall(b"tick %d\n" % n)
        time.sleep(0.05)
threading.Thread(target=ticks, daemon=True).start()
f = s.makefile("rb")
for line in f:
    print("got " + line.decode().strip(), flush=True)
"""


def _shim_env(addr):
    e = dict(os.environ)
    e["LD_PRELOAD"] = ankusa.binary(repl.SHIM)
    e["ANKUSA_TEST_BIND_ADDR"] = addr
    return e


class _Lines:
    """The lines a process prints, read by a thread."""

    def __init__(self, proc):
        self.lines = []
        self.lock = threading.Lock()
        threading.Thread(target=self._read, args=(proc.stdout,),
                         daemon=True).start()

    def _read(self, f):
        for l in f:
            with self.lock:
                self.lines.append(l.decode().strip())

    def has(self, s):
        with self.lock:
            return s in self.lines

    def first(self, prefix):
        with self.lock:
            return next((l for l in self.lines if l.startswith(prefix)),
                        None)


class _Ticks:
    """Counts the tick lines arriving on a connection."""

    def __init__(self, conn):
        self.n = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._read, args=(conn.makefile("rb"),),
                         daemon=True).start()

    def _read(self, f):
        for l in f:
            if l.startswith(b"tick "):
                with self.lock:
                    self.n += 1

    def count(self):
        with self.lock:
            return self.n


def _established():
    srv = socket.socket()
    srv.bind((B, 0))
    srv.listen(4)
    port = srv.getsockname()[1]
    p = subprocess.Popen([sys.executable, "-c", PEER, B, str(port)],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         env=_shim_env(A))
    try:
        out = _Lines(p)
        srv.settimeout(10)
        conn, peer = srv.accept()
        # The shim made the peer's connection come from its own address.
        assert peer[0] == A, "the peer connected from %r, not %s" % (peer, A)
        wait_until(lambda: out.first("local "), 5, 0.02, "the peer's line")
        assert out.first("local ").split()[1] == A, out.lines
        ticks = _Ticks(conn)
        wait_until(lambda: ticks.count() >= 3, 5, 0.02, "ticks before cut")
        conn.sendall(b"ping1\n")
        wait_until(lambda: out.has("got ping1"), 5, 0.02, "ping1 before cut")

        repl.cut(A, B)
        assert repl.cuts() == {(A, B), (B, A)}, repl.cuts()
        time.sleep(0.3)             # what was in flight lands
        n = ticks.count()
        conn.sendall(b"ping2\n")
        time.sleep(1.5)
        assert ticks.count() == n, "%s -> %s: %d ticks arrived through the " \
            "cut" % (A, B, ticks.count() - n)
        assert not out.has("got ping2"), "%s -> %s: ping2 arrived through " \
            "the cut" % (B, A)

        repl.heal_all()
        assert repl.cuts() == set(), repl.cuts()
        # TCP retransmits: the same connection carries both ways again.
        wait_until(lambda: out.has("got ping2"), 20, 0.05,
                   "ping2 on the established connection after the heal")
        wait_until(lambda: ticks.count() >= n + 3, 20, 0.05,
                   "ticks on the established connection after the heal")
        conn.sendall(b"ping3\n")
        wait_until(lambda: out.has("got ping3"), 5, 0.02, "ping3")
        conn.close()
    finally:
        p.kill()
        p.wait(5)
        srv.close()


def test_replharness_cut_established():
    repl.in_netns(_established, timeout=60)


class _Listeners:
    """A listener on each address (one port, accepting and closing)."""

    def __init__(self, addrs):
        self.socks = {}
        port = 0
        for a in addrs:
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((a, port))
            port = s.getsockname()[1]
            s.listen(64)
            self.socks[a] = s
            threading.Thread(target=self._accept, args=(s,),
                             daemon=True).start()
        self.port = port

    def _accept(self, s):
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            try:
                c.sendall(b"hi")
            except OSError:
                pass
            c.close()


def _reach(src, dst, port, timeout=1.0):
    """A new connection from src to dst:port gets the listener's greeting."""
    s = socket.socket()
    s.settimeout(timeout)
    try:
        s.bind((src, 0))
        s.connect((dst, port))
        return s.recv(2) == b"hi"
    except OSError:
        return False
    finally:
        s.close()


SHIM_CONNECT = r"""
import socket, sys
s = socket.socket()
s.settimeout(1.0)
try:
    s.connect((sys.argv[1], int(sys.argv[2])))
    print("ok" if s.recv(2) == b"hi" else "short", s.getsockname()[0])
except OSError as e:
    print("fail", e)
"""


def _shim_reach(src, dst, port):
    """The same from a process whose socket only the shim binds."""
    r = subprocess.run([sys.executable, "-c", SHIM_CONNECT, dst, str(port)],
                       stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=20, env=_shim_env(src))
    out = r.stdout.decode().split()
    if out and out[0] == "ok":
        assert out[1] == src, "shim: connected from %s, not %s" % (out[1],
                                                                    src)
        return True
    return False


def _new_connections():
    h = repl.HARNESS_ADDR
    ls = _Listeners([A, B, C, h])
    port = ls.port
    pairs = [(x, y) for x in (A, B, C) for y in (A, B, C) if x != y]
    for x, y in pairs:
        assert _reach(x, y, port), "%s -> %s before any cut" % (x, y)
    assert _shim_reach(A, B, port), "shim %s -> %s before any cut" % (A, B)

    repl.cut(A, B)
    assert not _reach(A, B, port) and not _reach(B, A, port), \
        "%s <-> %s connect through the cut" % (A, B)
    assert not _shim_reach(A, B, port), "shim %s -> %s through the cut" % (
        A, B)
    assert _reach(A, C, port) and _reach(C, B, port), \
        "cut(%s, %s) cut another link" % (A, B)
    repl.heal(A, B)
    assert _reach(A, B, port) and _reach(B, A, port), "heal(%s, %s)" % (A, B)

    repl.isolate(A, [A, B, C])
    assert repl.cuts() == {(A, B), (B, A), (A, C), (C, A)}, repl.cuts()
    for x, y in pairs:
        cutoff = A in (x, y)
        assert _reach(x, y, port) != cutoff, "isolate(%s): %s -> %s %s" % (
            A, x, y, "reaches" if cutoff else "does not reach")
    # The harness's address (load, sinks) still reaches A and A it.
    assert _reach(h, A, port) and _reach(A, h, port), \
        "isolate(%s) cut the harness's address %s" % (A, h)
    repl.heal_all()
    for x, y in pairs:
        assert _reach(x, y, port), "%s -> %s after heal_all" % (x, y)


def test_replharness_cut_new_connections():
    repl.in_netns(_new_connections, timeout=90)


# ---------------------------------------------------------------- a node

def _maps_shim(pid):
    try:
        with open("/proc/%d/maps" % pid) as f:
            return "bind_preload.so" in f.read()
    except OSError:
        return None


def _environ_shim(pid):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            return b"bind_preload.so" in f.read()
    except OSError:
        return None


def _sink_node():
    """A test sink and node 0 (no replication) delivering source s to it,
    started."""
    sink = TestSink().start()
    n = Node(0, sources={"s": sink_source([{"type": "http",
                                             "url": sink.url("/s")}])},
             extra={"dispatch": dispatch_conf()})
    return sink, n.start()


def _single_node():
    sink, n = _sink_node()
    assert n.cfg()["http"]["ip"] == A and "replication" not in n.cfg()
    assert n.role() == "single", n.role()
    # The shim is in the master and in no process it exec'd (its forked
    # root helper keeps the master's mappings; it connects nowhere).
    assert _maps_shim(n.pid), "bind_preload.so not in the master's maps"
    kids = [k for k in _proc_children(n.pid) if proc_comm(k) != "ankusad"]
    comms = sorted(proc_comm(k) for k in kids)
    assert "ankusa-edge" in comms and "ankusa-deliver" in comms, comms
    for k in kids:
        assert _maps_shim(k) is False and _environ_shim(k) is False, \
            "bind_preload.so in %s %d" % (proc_comm(k), k)
    st, h, data = post(n.port, "/webhooks/s", b'{"x":1}', host=A)
    i = expect_accepted(st, h, data, "a hook at %s" % A)
    wait_until(lambda: i in sink.ids("/s", 200), 10, 0.05,
               "the hook delivered to the sink")


def test_replharness_single_node():
    repl.in_netns(_single_node, timeout=60)


def _loadgen_single():
    sink, n = _sink_node()
    load = LoadGen(n, rate=200, path="/webhooks/s").start()
    load.wait_acked(300, timeout=30)
    load.finish()
    assert not load.other and load.errors == 0 and load.n503 == 0, \
        load.summary()
    # The append-only file holds the same ids.
    assert repl.read_acked(load.file) == load.acked, "acked file differs"
    wait_until(lambda: repl.check(load, [n], sink, "/s").lost == [], 20,
               0.1, "every acknowledged hook stored or delivered")
    n.settle_all(60)
    res = repl.check(load, [n], sink, "/s")
    assert len(res.acked) >= 300
    res.report("replharness_single", 1)
    # The checker can fail: an id never acknowledged by the node is lost.
    bad = repl.check(load.acked + ["0190c0de-0000-7000-8000-000000000000"],
                     [n], sink, "/s")
    assert len(bad.lost) == 1, bad.lost


def test_replharness_loadgen_single():
    repl.in_netns(_loadgen_single, timeout=100)


test_replharness_loadgen_single.timeout = 120


def _group_singles():
    # Three single nodes (no replication section) in the group's layout:
    # start, kill9, restart, stop, wipe, and a load that moves on.
    g = Group(replicated=False)
    assert [n.host for n in g.nodes] == [A, B, C]
    g.start()
    assert g.roles() == {n: "single" for n in g.nodes}, g.roles()
    assert g.masters() == []
    load = LoadGen(g.nodes[:2], rate=200, group=g).start()
    load.wait_acked(100)
    assert load.cur == 0, "the load left node 0 while it answered 201"
    g.kill9(0)
    load.wait_acked(100)            # now on node 1
    assert load.cur == 1 and load.errors >= 1, load.summary()
    g.restart(0)
    assert g.nodes[0].role() == "single"
    g.stop(2)
    g.wipe(2)
    assert not os.path.exists(g.nodes[2].data_dir)
    g.restart(2)
    assert g.nodes[2].status()["hooks"] == 0
    load.finish()
    assert not load.other, load.summary()
    res = repl.check(load, g.nodes[:2])
    res.report("replharness_singles", 1)


def test_replharness_group_singles():
    repl.in_netns(_group_singles, timeout=100)


test_replharness_group_singles.timeout = 120


def test_replharness_group_config():
    g = Group(priorities=(100, 50, 0), repl={"ack_timeout_ms": 500})
    want_peers = [[g.nodes[1].repl_addr, g.nodes[2].repl_addr],
                  [g.nodes[0].repl_addr, g.nodes[2].repl_addr],
                  [g.nodes[0].repl_addr, g.nodes[1].repl_addr]]
    for i, n in enumerate(g.nodes):
        r = n.cfg()["replication"]
        assert r["local"] == "%s:%d" % (node_addr(i), n.repl_port), r
        assert r["peers"] == want_peers[i], r
        assert r["priority"] == (100, 50, 0)[i], r
        assert r.get("create", False) is (i == 0), r
        assert r["ack_timeout_ms"] == 500 and r["ack_policy"] == "quorum" \
            and r["heartbeat_ms"] == 500 and \
            r["heartbeat_timeout_ms"] == 2000, r
        c = n.cfg()
        assert c["http"]["ip"] == c["admin"]["ip"] == node_addr(i), c
        with open(n.conf) as f:
            text = f.read()
        assert "replication:" in text and n.repl_addr in text, text
    assert g.by_addr(g.nodes[1].repl_addr) is g.nodes[1]
    assert g.by_addr("%s:%d" % (B, g.nodes[1].port)) is g.nodes[1]
    assert g.by_addr("127.0.0.99:1") is None


# ---------------------------------------------------------------- a group

def _group_replicated():
    sink = TestSink().start()
    g = Group(priorities=(100, 90, 80), sources={
        "s": sink_source([{"type": "http", "url": sink.url("/s")}])},
        extra={"dispatch": dispatch_conf()})
    rc, out = check_config(g.nodes[0].conf)
    if rc != 0:
        if "replication" in out:
            raise Skip("ankusad has no replication section yet (issue 26): "
                       "%s" % out.strip().splitlines()[-1])
        raise AssertionError("ankusad -n: %s" % out)
    g.start()
    m = g.wait_master(30)
    load = LoadGen(g.nodes, rate=100, path="/webhooks/s", group=g).start()
    load.wait_acked(100)
    t = g.kill9(m)
    new, secs = g.wait_new_master(m, since=t)
    ankusa.note("failover after kill -9: %.2f s" % secs)
    load.wait_acked(100)
    g.restart(m)
    g.wait_role(m, "client")
    g.isolate(new)
    newer, secs = g.wait_new_master(new, since=time.monotonic())
    ankusa.note("failover after isolation: %.2f s" % secs)
    load.wait_acked(50)
    g.heal_all()
    # The healed group may elect again (priorities): one master, the old
    # isolated one a client.
    last = g.wait_master(60)
    # Each master process, re-executed at its role changes, still has the
    # shim (so that the cuts above held).
    for n in g.running():
        assert _maps_shim(n.pid), "bind_preload.so not in %r's maps" % n
    load.finish()
    assert not load.other, load.summary()
    ankusa.note("load: %s" % load.summary())
    last.settle_all(60)
    repl.check(load, [last], sink, "/s").report("replharness_group", 1)


def test_replharness_group_replicated():
    repl.in_netns(_group_replicated, timeout=170)


test_replharness_group_replicated.timeout = 180
