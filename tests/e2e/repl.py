#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""The replication tests' harness (issue 26, section 3): three real ankusad
nodes of one group on one machine, loopback only, in a private network
namespace where the links between them can be cut.

A scenario is a module-level function of a tests/e2e/test_*.py file; its
test function runs it in the namespace and reports its result like any
other test (its failure, its notes, the tails of its daemons' logs):

    def _failover():                    # runs inside the namespace
        g = repl.Group(priorities=(100, 90, 80)).start()
        old = g.wait_master()
        load = repl.LoadGen(g.nodes, rate=200, group=g).start()
        t = g.kill9(old)
        new, secs = g.wait_new_master(old, since=t)   # failover time
        ...
        load.finish()
        repl.check(load, [new], sink).report("failover", 1)

    def test_repl_failover():
        repl.in_netns(_failover, timeout=170)
    test_repl_failover.timeout = 180

in_netns() runs `unshare --net --pid --fork --kill-child --mount-proc
python3 repl.py --scenario MODULE:FUNC ...`: the scenario, its daemons, its
sinks and its load all run in a new network namespace (only `lo`, brought
up; no route off the machine exists there) and a new PID namespace (so that
when the scenario's process dies, killed by the watchdog or not, the kernel
kills every daemon it started).  Node i listens on 127.0.0.(11+i) (ingest,
admin and repmgr); the harness, its load and its sinks use 127.0.0.1.

Cutting links: Berkeley DB's repmgr does not bind its sockets, so every
node's connections would come from 127.0.0.1.  Each node's master process
gets tests/bind_preload.so (LD_PRELOAD; it binds an unbound TCP socket to
ANKUSA_TEST_BIND_ADDR before a connect to 127.0.0.0/8, and takes itself
out of the environment, so the children the master execs run without it).
Then cut(a, b) is `ip rule add pref 10 from A to B blackhole` and the
reverse, after the local table's rule was moved from pref 0 to pref 100;
an established connection is cut too (a new rule flushes the routes the
sockets cached), its data flows again after heal (TCP retransmits).

Run as root only (unshare); otherwise in_netns() skips.  Standard library
only.
"""

import argparse
import importlib
import json
import os
import pwd
import shutil
import subprocess
import sys
import threading
import time
import http.client

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import ankusa  # noqa: E402
from ankusa import (Daemon, Skip, binary, free_port, jbody,  # noqa: E402
                    listen_port)
import faults  # noqa: E402

HARNESS_ADDR = "127.0.0.1"      # the load generator, the sinks, ankusactl


def node_addr(i):
    """The loopback address of node i (0-based): 127.0.0.11, .12, ..."""
    return "127.0.0.%d" % (11 + i)


CUT_PREF = 10                   # our blackhole rules
LOCAL_PREF = 100                # where the local table's rule goes
SHIM = "tests/bind_preload.so"  # in the build dir

_ENV_HOST_NETNS = "ANKUSA_HOST_NETNS"   # the runner's netns inode


# ---------------------------------------------------------------- namespace

def _netns_ino():
    return os.stat("/proc/self/ns/net").st_ino


_ns_ready = False
_unshare_ok = None


def in_private_netns():
    """True in a scenario's namespace, set up by setup_netns(): the only
    place where ip rules may be changed."""
    host = os.environ.get(_ENV_HOST_NETNS)
    return _ns_ready and host is not None and str(_netns_ino()) != host


def _ip(*args, check=True):
    r = subprocess.run(["ip"] + list(args), stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=10)
    if check and r.returncode != 0:
        raise AssertionError("ip %s: exit %d: %s" % (
            " ".join(args), r.returncode,
            r.stderr.decode("utf-8", "replace").strip()))
    return r.returncode, r.stdout.decode("utf-8", "replace")


def setup_netns():
    """In a new network namespace (refused anywhere else): lo up, the local
    table's rule from pref 0 to LOCAL_PREF, so that rules at CUT_PREF are
    looked at first."""
    global _ns_ready
    host = os.environ.get(_ENV_HOST_NETNS)
    if host is None or str(_netns_ino()) == host:
        raise AssertionError("setup_netns: not in a network namespace of "
                             "our own (refusing to touch this one's rules)")
    _ip("link", "set", "lo", "up")
    _ip("rule", "add", "pref", str(LOCAL_PREF), "lookup", "local")
    _ip("rule", "del", "pref", "0")
    _ns_ready = True


def _guard():
    if not in_private_netns():
        raise AssertionError("network cuts only inside in_netns()'s "
                             "namespace")


_cuts = set()
_cuts_lock = threading.Lock()


def _addr(x):
    return x.host if isinstance(x, Node) else x


def cut(a, b):
    """Cut the link between a and b (Nodes or addresses), both directions,
    new and established connections."""
    _guard()
    a, b = _addr(a), _addr(b)
    with _cuts_lock:
        for s, d in ((a, b), (b, a)):
            if (s, d) in _cuts:
                continue
            _ip("rule", "add", "pref", str(CUT_PREF), "from", s, "to", d,
                "blackhole")
            _cuts.add((s, d))


def heal(a, b):
    """Undo cut(a, b)."""
    _guard()
    a, b = _addr(a), _addr(b)
    with _cuts_lock:
        for s, d in ((a, b), (b, a)):
            if (s, d) in _cuts:
                _ip("rule", "del", "pref", str(CUT_PREF), "from", s, "to",
                    d, "blackhole")
                _cuts.discard((s, d))


def isolate(a, others):
    """Cut a from each of others (Nodes or addresses)."""
    for o in others:
        if _addr(o) != _addr(a):
            cut(a, o)


def heal_all():
    """Remove every cut; check that none is left."""
    _guard()
    with _cuts_lock:
        for _ in range(1000):
            rc, _ = _ip("rule", "del", "pref", str(CUT_PREF), check=False)
            if rc != 0:
                break
        _cuts.clear()
        _, out = _ip("rule", "show", "pref", str(CUT_PREF))
        if out.strip():
            raise AssertionError("heal_all: rules left: %s" % out.strip())


def cuts():
    """The (from, to) pairs cut now, as the kernel lists them."""
    _, out = _ip("rule", "show", "pref", str(CUT_PREF))
    pairs = set()
    for line in out.splitlines():
        w = line.split()
        if "from" in w and "to" in w:
            pairs.add((w[w.index("from") + 1], w[w.index("to") + 1]))
    return pairs


def _can_unshare():
    global _unshare_ok
    if _unshare_ok is None:
        try:
            r = subprocess.run(["unshare", "--net", "--pid", "--fork",
                                "--mount-proc", "true"],
                               stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=20)
            _unshare_ok = (r.returncode == 0, r.stderr.decode(
                "utf-8", "replace").strip())
        except (OSError, subprocess.TimeoutExpired) as e:
            _unshare_ok = (False, str(e))
    return _unshare_ok


def _region_dirs(path):
    """The /dev/shm homes a store on the data dir path may have left
    (store_bdb.c names them by the daemon's euid: root's, or node.user's
    after the drop), existing ones."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    uids = {os.geteuid()}
    try:
        uids.add(pwd.getpwnam(ankusa.DAEMON_USER).pw_uid)
    except KeyError:
        pass
    out = []
    for u in sorted(uids):
        p = "/dev/shm/ankusa-store-%d-%x-%x" % (u, st.st_dev, st.st_ino)
        if os.path.isdir(p):
            out.append(p)
    return out


def _sweep_regions(top):
    """Remove what the killed stores under top left in /dev/shm."""
    for root, dirs, _ in os.walk(top):
        for d in dirs:
            for p in _region_dirs(os.path.join(root, d)):
                shutil.rmtree(p, ignore_errors=True)


class _NsLog:
    """A log of the namespace's run, for run.py's failure tails; destroy()
    (the watchdog's, end_test's) kills the namespace."""

    def __init__(self, path, proc):
        self.logpath = path
        self.proc = proc

    def destroy(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()        # --kill-child: the namespace goes
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass


def in_netns(scenario, timeout=110):
    """Run scenario (a module-level function of a tests/e2e module) in a
    private network and PID namespace; raise its failure (AssertionError
    with its message) or its Skip here, relay its notes.  The tails of the
    logs it leaves in the test's temp dir go with a failure.  Killed (and
    failed) after timeout seconds: keep it under the test's watchdog."""
    if os.geteuid() != 0:
        raise Skip("needs root: unshare -n makes the private network "
                   "namespace the replication tests cut links in")
    for tool in ("unshare", "ip"):
        if shutil.which(tool) is None:
            raise Skip("%s not installed (util-linux, iproute2: scripts/test"
                       " installs them)" % tool)
    ok, why = _can_unshare()
    if not ok:
        raise Skip("unshare --net --pid not permitted here: %s" % why)
    mod = sys.modules[scenario.__module__]
    tmp = ankusa.tmpdir()
    result = os.path.join(tmp, "netns-result.json")
    logpath = os.path.join(tmp, "netns.log")        # its stderr
    outpath = os.path.join(tmp, "netns.out")        # its stdout
    argv = ["unshare", "--net", "--pid", "--fork", "--kill-child=SIGKILL",
            "--mount-proc", sys.executable, os.path.abspath(__file__),
            "--scenario", "%s:%s" % (os.path.splitext(os.path.basename(
                mod.__file__))[0], scenario.__name__),
            "--build", ankusa.BUILD, "--tmp", tmp, "--result", result]
    env = dict(os.environ)
    env[_ENV_HOST_NETNS] = str(_netns_ino())
    env["PYTHONUNBUFFERED"] = "1"
    with open(logpath, "ab") as log, open(outpath, "ab") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=log, env=env, start_new_session=True)
    ns = _NsLog(logpath, proc)
    ankusa.register(ns)
    timed_out = False
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        ns.destroy()
    _sweep_regions(tmp)     # a namespace killed leaves its stores' regions
    # What it printed, as if it ran here (scripts/chaos reads a test's
    # `chaos CASE: ...` lines before its PASS line).
    try:
        with open(outpath, "rb") as f:
            sys.stdout.write(f.read().decode("utf-8", "replace"))
        sys.stdout.flush()
    except OSError:
        pass
    # Every log the scenario left, for the failure's tails.
    for root, _, files in sorted(os.walk(tmp)):
        for fn in sorted(files):
            p = os.path.join(root, fn)
            if fn.endswith(".log") and p != logpath:
                ankusa.register(_NsLog(p, None))
    if timed_out:
        raise AssertionError("scenario %s timed out after %.0fs (its "
                             "namespace killed)" % (scenario.__name__,
                                                    timeout))
    try:
        with open(result) as f:
            res = json.load(f)
    except (OSError, ValueError):
        raise AssertionError("scenario %s left no result (exit %s); see "
                             "netns.log" % (scenario.__name__,
                                            proc.returncode))
    for n in res.get("notes", []):
        ankusa.note(n)
    if res["status"] == "skip":
        raise Skip(res["reason"])
    if res["status"] != "pass":
        raise AssertionError("in the namespace: %s" % res["reason"])


def _child_main(a):
    """The namespace's side of in_netns()."""
    ankusa.configure(a.build)
    modname, func = a.scenario.split(":", 1)
    res = {"status": "fail", "reason": "did not run", "notes": []}
    ctx = ankusa.begin_test(func, tmp=a.tmp)
    try:
        setup_netns()
        f = getattr(importlib.import_module(modname), func)
        f()
        res = {"status": "pass", "reason": ""}
    except Skip as e:
        res = {"status": "skip", "reason": str(e)}
    except BaseException as e:          # noqa: BLE001 - report everything
        import run
        res = {"status": "fail", "reason": run.reason_of(e)}
    finally:
        res["notes"] = list(ctx.notes)
        ankusa.end_test(keep=True)      # the runner's end_test removes it
        tmpres = a.result + ".tmp"
        with open(tmpres, "w") as f:
            json.dump(res, f)
        os.rename(tmpres, a.result)
    print("scenario %s: %s %s" % (func, res["status"], res["reason"]),
          file=sys.stderr, flush=True)
    return 0


# ---------------------------------------------------------------- nodes

class Node(Daemon):
    """One ankusad of a group: ingest, admin and repmgr on its own loopback
    address, its master process sending from it (bind_preload.so).

    replication: the dict of the `replication` section (None: a single
    node, no section).  index: its place in the group."""

    def __init__(self, index, replication=None, shim=True, **kw):
        self.index = index
        self.host = node_addr(index)
        self.repl_port = listen_port(self.host)
        self.replication = replication
        self.shim = shim
        kw.setdefault("name", "node%d" % index)
        super().__init__(**kw)
        self.port = free_port(self.host)
        self.admin_port = free_port(self.host)
        self.http["ip"] = self.host
        self.http["port"] = self.port
        # The token in a file only root may read: an exec of ankusad by
        # itself (a role change), as node.user, must not need to read it.
        tfile = os.path.join(ankusa.tmpdir("secret-node%d" % index),
                             "admin.token")
        with open(tfile, "w") as f:
            f.write(ankusa.ADMIN_TOKEN + "\n")
        os.chmod(tfile, 0o600)
        self.admin = {"ip": self.host, "port": self.admin_port,
                      "tokens": [{"name": "e2e", "token_file": tfile,
                                  "scopes": ["*"]}]}
        ankusa.ADMIN_PORTS.add(self.admin_port)
        self.write_config()

    @property
    def repl_addr(self):
        """host:port of its repmgr listener (replication.local)."""
        return "%s:%d" % (self.host, self.repl_port)

    def cfg(self):
        c = super().cfg()
        if self.replication is not None:
            c["replication"] = dict(self.replication)
        return c

    def env(self):
        e = super().env()
        if self.shim:
            if not os.access(binary(SHIM), os.R_OK):
                raise AssertionError("%s not built (make check builds it)"
                                     % binary(SHIM))
            # Still loaded when the master, now node.user, executes
            # itself again: a copy that user may read.
            shim = ankusa.program(SHIM)
            pre = e.get("LD_PRELOAD")
            e["LD_PRELOAD"] = shim + (":" + pre if pre else "")
            e["ANKUSA_TEST_BIND_ADDR"] = self.host
            # A sanitizer build's runtime would want to be preloaded first.
            asan = e.get("ASAN_OPTIONS")
            e["ASAN_OPTIONS"] = (asan + ":" if asan else "") + \
                "verify_asan_link_order=0"
        return e

    # -- what it says it is

    def health(self, timeout=2.0):
        """GET /health on the admin port: the JSON body, or None."""
        try:
            st, _, doc = self.api("GET", "/health", timeout=timeout)
        except (OSError, http.client.HTTPException):
            return None
        return doc if st == 200 else None

    def role(self, timeout=3.0):
        """master, client or single (ankusactl -j status's role; a daemon
        without it is single), or None when it does not answer."""
        if not self.running():
            return None
        try:
            rc, out, _ = self.ctl("status", check=False, json_out=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        if rc != 0:
            return None
        try:
            st = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return None
        h = self.health(timeout)
        if h is None:
            return None
        role = st.get("role", "single")
        hrole = h.get("role", role)
        # The two must agree; if not (a role changing), ask again.
        return role if hrole == role else None

    def destroy(self):
        super().destroy()
        # Daemon.destroy looks for root's name; the store runs as
        # node.user.
        if not self.running():
            for p in _region_dirs(self.data_dir):
                shutil.rmtree(p, ignore_errors=True)

    def wipe(self):
        """Remove its data directory (it must be down): the next start
        joins through its peers and is initialised by repmgr."""
        assert not self.running(), "wipe: node %d is running" % self.index
        self.destroy()          # its region files in /dev/shm go too
        shutil.rmtree(self.data_dir, ignore_errors=True)
        if self.replication is not None:
            self.replication["create"] = False
            self.write_config()

    def __repr__(self):
        return "<node%d %s>" % (self.index, self.host)


REPL_DEFAULTS = {"ack_policy": "quorum", "ack_timeout_ms": 300,
                 "heartbeat_ms": 500, "heartbeat_timeout_ms": 2000}


class Group:
    """n nodes of one replication group (replicated=False: n single nodes
    with the same layout, no replication section).

        g = Group(priorities=(100, 90, 80), sources=..., repl={...})
        g.start()                   # node 0 with create: true, first time
        m = g.wait_master()         # exactly one master, the rest clients
        g.kill9(m); new, secs = g.wait_new_master(m)

    repl overrides REPL_DEFAULTS (ack_policy, *_ms); daemon_kw go to each
    Node (Daemon's keywords: sources, workers, batcher, extra, ...)."""

    def __init__(self, priorities=(100, 100, 100), replicated=True,
                 repl=None, shim=True, **daemon_kw):
        self.replicated = replicated
        self.nodes = []
        for i, _ in enumerate(priorities):
            self.nodes.append(Node(i, None, shim=shim, **daemon_kw))
        if replicated:
            for i, n in enumerate(self.nodes):
                r = {"local": n.repl_addr,
                     "peers": [o.repl_addr for o in self.nodes if o is not n],
                     "priority": priorities[i]}
                if i == 0:
                    r["create"] = True
                r.update(REPL_DEFAULTS)
                r.update(repl or {})
                n.replication = r
                n.write_config()
        self.started = False

    def node(self, x):
        return x if isinstance(x, Node) else self.nodes[x]

    def by_addr(self, addr):
        """The node whose repmgr or ingest listens on addr (host:port),
        or None."""
        for n in self.nodes:
            if addr in (n.repl_addr, "%s:%d" % (n.host, n.port)):
                return n
        return None

    # -- life

    def start(self, timeout=60.0):
        """Start every node not running, one after the other, each waited
        for (node 0, which creates the group, first): a node started
        before the group exists may wait a connection retry to join."""
        for n in self.nodes:
            if not n.running():
                n.start(timeout)
        if not self.started:
            self.started = True
            first = self.nodes[0]
            if first.replication is not None:
                first.replication.pop("create", None)
                first.write_config()
        return self

    def restart(self, x, timeout=60.0):
        """Start node x again (after a kill9, stop or wipe)."""
        n = self.node(x)
        assert not n.running(), "restart: %r is running" % n
        n.start(timeout)
        return n

    def kill9(self, x):
        """SIGKILL node x's master; return the monotonic time of the
        kill."""
        n = self.node(x)
        n.kill9()
        return time.monotonic()

    def stop(self, x, timeout=20.0):
        return self.node(x).stop(timeout)

    def wipe(self, x):
        self.node(x).wipe()

    def running(self):
        return [n for n in self.nodes if n.running()]

    # -- roles

    def roles(self):
        """{node: role or None} of every running node."""
        return {n: n.role() for n in self.running()}

    def masters(self):
        return [n for n, r in self.roles().items() if r == "master"]

    def wait_master(self, timeout=30.0, among=None, stable=2.0):
        """Wait until exactly one node of among (default: every running
        node) says master and every other one of among says client, and
        they have said so for stable seconds (after a heal, the group may
        elect again); return it."""
        deadline = time.monotonic() + timeout
        seen, since = None, None
        while True:
            nodes = among if among is not None else self.running()
            rs = {n: n.role() for n in nodes}
            m = [n for n, r in rs.items() if r == "master"]
            if len(m) == 1 and all(r == "client" for n, r in rs.items()
                                   if n is not m[0]):
                if m[0] is not seen:
                    seen, since = m[0], time.monotonic()
                if time.monotonic() - since >= stable:
                    return m[0]
            else:
                seen = None
            if time.monotonic() >= deadline:
                raise AssertionError("no single master after %.1fs: roles "
                                     "%r" % (timeout, rs))
            time.sleep(0.05)

    def wait_new_master(self, old, timeout=30.0, since=None):
        """Wait until a node other than old says master (old may be down
        or cut off and still say it); return (node, seconds since `since`
        (default: now), the failover time)."""
        t0 = since if since is not None else time.monotonic()
        old = self.node(old)

        def new():
            for n in self.running():
                if n is not old and n.role() == "master":
                    return n
            return None
        n = ankusa.wait_until(new, timeout, 0.05,
                              "a new master other than %r" % old)
        return n, time.monotonic() - t0

    def wait_role(self, x, role, timeout=30.0):
        n = self.node(x)
        ankusa.wait_until(lambda: n.role() == role, timeout, 0.05,
                          "%r to say %s" % (n, role))
        return n

    # -- the network

    def cut(self, a, b):
        cut(self.node(a), self.node(b))

    def heal(self, a, b):
        heal(self.node(a), self.node(b))

    def isolate(self, a):
        isolate(self.node(a), self.nodes)

    def heal_all(self):
        heal_all()


# ---------------------------------------------------------------- load

class LoadGen:
    """A thread posting hooks at rate a second (paced) to nodes (a Node or a
    list), each id answered 201 appended to acked and to an append-only
    file (path; default loadgen-acked.txt in the test's temp dir).

    It sticks to one node while it answers 201; on a 503 not_master it goes
    to the master the answer names (a node's repmgr or ingest host:port;
    needs group=) or else the next node; on any other 503 (kept in codes)
    or a connection error it tries the next node.  Counters: sent, acked,
    n503 (by error in codes), errors (connection errors and timeouts),
    other (unexpected answers, (status, body) pairs: a scenario should
    find none)."""

    def __init__(self, nodes, rate=100.0, path="/webhooks/github",
                 body=faults.BODY, acked_file=None, timeout=5.0,
                 group=None, name="loadgen"):
        self.nodes = list(nodes) if isinstance(nodes, (list, tuple)) \
            else [nodes]
        self.group = group
        self.rate = float(rate)
        self.path = path
        self.body = body
        self.timeout = timeout
        self.file = acked_file or os.path.join(ankusa.tmpdir(),
                                               name + "-acked.txt")
        self.acked = []
        self.codes = {}
        self.sent = 0
        self.errors = 0
        self.other = []
        self.lock = threading.Lock()
        self.stop_ev = threading.Event()
        self.fatal = None
        self.thread = threading.Thread(target=self._guarded, name=name,
                                       daemon=True)
        self.cur = 0
        self._conns = {}

    @property
    def n503(self):
        with self.lock:
            return sum(self.codes.values())

    def start(self):
        self.thread.start()
        return self

    def finish(self, timeout=30.0):
        """Stop and join; return self."""
        self.stop_ev.set()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), \
            "load generator still running %.0fs after its stop" % timeout
        for c in self._conns.values():
            c.close()
        if self.fatal is not None:
            raise AssertionError("load generator failed: %r" % self.fatal)
        return self

    def count(self):
        with self.lock:
            return len(self.acked)

    def wait_acked(self, n, timeout=30.0):
        """Wait until at least n more hooks than now are acknowledged."""
        want = self.count() + n
        ankusa.wait_until(lambda: self.count() >= want, timeout, 0.02,
                          "%d hooks acknowledged (have %d)" % (
                              want, self.count()))

    def _conn(self, n):
        c = self._conns.get(n)
        if c is None:
            c = http.client.HTTPConnection(n.host, n.port,
                                           timeout=self.timeout)
            self._conns[n] = c
        return c

    def _drop(self, n):
        c = self._conns.pop(n, None)
        if c is not None:
            c.close()

    def _next(self, hint=None):
        if hint is not None and self.group is not None:
            m = self.group.by_addr(hint)
            if m is not None and m in self.nodes:
                self.cur = self.nodes.index(m)
                return
        self.cur = (self.cur + 1) % len(self.nodes)

    def _guarded(self):
        try:
            self._run()
        except BaseException as e:      # noqa: BLE001 - finish() raises it
            self.fatal = e

    def _run(self):
        gap = 1.0 / self.rate
        nxt = time.monotonic()
        seq = 0
        with open(self.file, "a") as out:
            while not self.stop_ev.is_set():
                now = time.monotonic()
                if now < nxt:
                    self.stop_ev.wait(nxt - now)
                    continue
                nxt = max(nxt + gap, now - 1.0)    # no burst after a stall
                n = self.nodes[self.cur]
                seq += 1
                try:
                    st, h, data = ankusa.post(
                        n.port, self.path, self.body, conn=self._conn(n),
                        headers={"x-loadgen-seq": str(seq)})
                except (OSError, http.client.HTTPException):
                    self._drop(n)
                    with self.lock:
                        self.sent += 1
                        self.errors += 1
                    self._next()
                    continue
                with self.lock:
                    self.sent += 1
                if st == 201:
                    try:
                        i = ankusa.expect_accepted(st, h, data)
                    except AssertionError:
                        with self.lock:
                            self.other.append((st, data[:200]))
                        continue
                    with self.lock:
                        self.acked.append(i)
                    out.write(i + "\n")
                    out.flush()
                    continue
                try:
                    doc = jbody(data)
                except AssertionError:
                    doc = {}
                err = doc.get("error") if isinstance(doc, dict) else None
                if st == 503:
                    with self.lock:
                        k = err or "503"
                        self.codes[k] = self.codes.get(k, 0) + 1
                    self._next(doc.get("master") if err == "not_master"
                               else None)
                    continue
                with self.lock:
                    self.other.append((st, data[:200]))
                self._next()

    def summary(self):
        with self.lock:
            return ("sent %d, acknowledged %d, 503 %d %r, errors %d, other "
                    "%d" % (self.sent, len(self.acked),
                            sum(self.codes.values()), self.codes,
                            self.errors, len(self.other)))


def read_acked(path):
    """The ids of a LoadGen's append-only file (a torn last line left
    out)."""
    try:
        with open(path) as f:
            data = f.read()
    except OSError:
        return []
    lines = data.split("\n")
    return [l for l in lines[:-1] if l]


class Check:
    """What check() found: acked, lost, duplicated; report() prints the
    line scripts/chaos reads."""

    def __init__(self, acked, lost, dups):
        self.acked = acked
        self.lost = lost
        self.duplicated = dups

    def line(self, rounds):
        return "rounds %d, acknowledged %d, lost %d, duplicated %d" % (
            rounds, len(set(self.acked)), len(self.lost), self.duplicated)

    def report(self, case, rounds):
        """Print and note `chaos CASE: rounds N, acknowledged N, lost N,
        duplicated N`; assert none lost."""
        faults.report(case, rounds, self.acked, self.lost, self.duplicated)
        assert not self.lost, "%s: %d of %d acknowledged hooks lost, e.g. " \
            "%s" % (case, len(self.lost), len(set(self.acked)),
                    self.lost[:3])
        return self


def check(acked, nodes, sink=None, path=None):
    """Every id of acked (a list of ids or a LoadGen) must be stored on one
    of nodes (ankusactl -j queue: on a group, pass [the master]) or
    delivered (answered 200) to sink (on path).  Duplicated: deliveries past
    an id's first."""
    ids = acked.acked if isinstance(acked, LoadGen) else list(acked)
    have = set()
    for n in nodes:
        have |= {h["id"] for h in n.queue()}
    dups = 0
    if sink is not None:
        have |= set(faults.delivered(sink, path))
        dups = faults.duplicated(sink, path)
    lost = [i for i in ids if i not in have]
    return Check(ids, lost, dups)


def main():
    ap = argparse.ArgumentParser(description="run one scenario in this "
                                 "(new) network namespace: in_netns()'s "
                                 "other side")
    ap.add_argument("--scenario", required=True, help="MODULE:FUNC")
    ap.add_argument("--build", required=True)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--result", required=True)
    # Run as a script, this file is __main__: the scenario's `import repl`
    # must find the module whose namespace state setup_netns() sets.
    import repl
    return repl._child_main(ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
