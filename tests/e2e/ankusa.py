# SPDX-License-Identifier: ISC
"""Helpers for the end-to-end tests: a real ankusad in a temp dir.

Standard library only.  The harness (run.py) calls configure() once and
begin_test()/end_test() around each test; a test makes daemons with
Daemon(...) and never has to stop them itself: end_test() kills whatever a
test left running (the master and its edges), even when the test failed or
timed out.

    d = Daemon(sources={"github": hold_source()})
    d.start()
    st, hdrs, body = post(d.port, "/webhooks/github", b"{}")
"""

import atexit
import http.client
import json
import os
import pwd
import re
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

BUILD = None            # build dir holding ankusad, ankusactl, ankusa-edge
PROGRAMS = None         # copies of what the daemon's user runs (program())
SRCDIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# Every daemon's admin API takes this token (scope "*"); request() sends it
# to the admin ports of the daemons made here (ADMIN_PORTS), unless a test
# gives its own Authorization (None: none at all).
ADMIN_TOKEN = "e2e-" + os.urandom(16).hex()
ADMIN_PORTS = set()

UUIDV7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}"
                    r"-[0-9a-f]{12}$")


# The Elixir image's overrides (ankusa.yml(5), ENVIRONMENT): the tests' own
# environment must not reconfigure their daemons.
ENV_OVERRIDES = ("ANKUSA_ROLES", "ANKUSA_DATA_DIR", "ANKUSA_LOG_LEVEL",
                 "ANKUSA_HTTP_PORT", "PORT", "ANKUSA_ADMIN_PORT",
                 "ANKUSA_ADMIN_IP", "ANKUSA_CLAIM_CHECK_PORT",
                 "ANKUSA_CLAIM_CHECK_IP", "ANKUSA_ROUTES_ENABLED",
                 "ANKUSA_ROUTES_STORE_URL", "ANKUSA_SOURCE_STORE_URL",
                 "ANKUSA_WAL_TYPE", "ANKUSA_STORAGE_TYPE", "ANKUSA_S3_BUCKET",
                 "ANKUSA_S3_REGION", "ANKUSA_S3_ENDPOINT", "ANKUSA_GCS_BUCKET",
                 "ANKUSA_STORAGE_KEY_PREFIX", "ANKUSA_BACKUP_ENABLED",
                 "ANKUSA_CONTROL_SOCKET")


def base_env(extra=None):
    """The environment of a daemon or an ankusad -n: ours, without the
    overrides, plus extra."""
    e = dict(os.environ)
    for v in ENV_OVERRIDES:
        e.pop(v, None)
    e["ANKUSA_LIBEXECDIR"] = PROGRAMS
    e.update(extra or {})
    return e


class Skip(Exception):
    """Raised by a test that cannot run here; counted as skipped."""


# Run as root, the daemon runs as DAEMON_USER (below), which executes its
# children and any probe, fake or shim a test puts in their place, and
# ankusad itself again (with its shim: repl.py).  That user may not reach
# the build tree (a clone in a 0700 home, in /root): they run from copies
# in PROGRAMS, a directory of the temp dir that every user may read.  The
# harness's processes share it (ANKUSA_E2E_PROGRAMS: repl.py's scenario
# in its namespace); the one that made it removes it.
_ENV_PROGRAMS = "ANKUSA_E2E_PROGRAMS"
DAEMON_PROGRAMS = ("ankusad", "ankusa-edge", "ankusa-deliver",
                   "ankusa-gateway")


def configure(build):
    global BUILD, PROGRAMS
    BUILD = os.path.abspath(build)
    PROGRAMS = os.environ.get(_ENV_PROGRAMS)
    if not PROGRAMS or not os.path.isdir(PROGRAMS):
        PROGRAMS = tempfile.mkdtemp(prefix="ankusa-e2e-programs-")
        os.chmod(PROGRAMS, 0o755)
        atexit.register(shutil.rmtree, PROGRAMS, True)
        os.environ[_ENV_PROGRAMS] = PROGRAMS
    for c in DAEMON_PROGRAMS:
        if os.path.exists(binary(c)):
            program(c)


def binary(name):
    return os.path.join(BUILD, name)


def load_script(name):
    """scripts/NAME (a Python script without .py, such as bench) as a
    module, for the benchmarks that reuse another's helpers."""
    import importlib.machinery
    import importlib.util
    path = os.path.join(SRCDIR, "scripts", name)
    loader = importlib.machinery.SourceFileLoader(name.replace("-", "_"),
                                                  path)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def program(name):
    """The copy in PROGRAMS of the build's file name (a path under the
    build dir, else under the source tree: tests/e2e/fake_edge.py), made
    at the first call: the path to give the daemon for what its user runs
    or loads.  It keeps its base name (and its mode)."""
    src = binary(name)
    if not os.path.exists(src):
        src = os.path.join(SRCDIR, name)
    dst = os.path.join(PROGRAMS, os.path.basename(name))
    if not os.path.exists(dst):
        tmp = "%s.%d.tmp" % (dst, os.getpid())
        shutil.copy2(src, tmp)
        os.chmod(tmp, os.stat(src).st_mode | 0o444)
        os.rename(tmp, dst)
    return dst


# ---------------------------------------------------------------- test scope

# Run as root, the tests start the daemon as root and it runs as its
# node.user, ankusa by default (ankusad(8), SECURITY): the temp dirs are
# made traversable, and what a daemon writes is given to that user before
# each start (scripts/test creates the user).
DAEMON_USER = "ankusa"
# node.child_user's default: the children run as it (privsep_child.c).
CHILD_USER = "ankusa-child"


def needs_root_and_users(why):
    """Skip the test unless it runs as root (the tests run as root in CI),
    why saying what needs it; fail when a user scripts/test creates is
    missing."""
    if os.geteuid() != 0:
        raise Skip("needs root: %s (CI runs the tests as root)" % why)
    for u in (DAEMON_USER, CHILD_USER):
        try:
            pwd.getpwnam(u)
        except KeyError:
            raise AssertionError("no user %s: scripts/test creates it "
                                 "(useradd --system ...)" % u)


def give_to_daemon_user(*paths, user=DAEMON_USER):
    if os.geteuid() != 0:
        return
    try:
        pw = pwd.getpwnam(user)
    except KeyError:
        return
    for top in paths:
        if not os.path.exists(top):
            continue
        os.chown(top, pw.pw_uid, pw.pw_gid)
        for root, dirs, files in os.walk(top):
            for n in dirs + files:
                try:
                    os.chown(os.path.join(root, n), pw.pw_uid, pw.pw_gid,
                             follow_symlinks=False)
                except FileNotFoundError:
                    pass


class _Ctx:
    def __init__(self, name, tmp=None):
        self.name = name
        self.tmp = tmp or tempfile.mkdtemp(prefix="ankusa-e2e-%s-" % name)
        os.chmod(self.tmp, 0o755)
        give_to_daemon_user(self.tmp)
        self.daemons = []
        self.lock = threading.Lock()
        self.notes = []


_ctx = None


def begin_test(name, tmp=None):
    """A test's scope: its temp dir (tmp: one made already, e.g. by the
    runner of a network namespace's scenario, repl.py), its daemons."""
    global _ctx
    _ctx = _Ctx(name, tmp)
    return _ctx


def end_test(keep=False):
    """Kill every daemon the test started; remove its temp dir unless keep."""
    global _ctx
    ctx, _ctx = _ctx, None
    if ctx is None:
        return
    for d in list(ctx.daemons):
        d.destroy()
    if not keep:
        shutil.rmtree(ctx.tmp, ignore_errors=True)
    return ctx


def kill_all():
    """For the watchdog: kill every daemon of the running test now."""
    ctx = _ctx
    if ctx is None:
        return
    for d in list(ctx.daemons):
        d.destroy()


def register(obj):
    """Have end_test() call obj.destroy() (and log_tails read
    obj.logpath), like the daemons and sinks a test starts."""
    if _ctx is not None:
        with _ctx.lock:
            _ctx.daemons.append(obj)


# The claim_check.signing_key of the tests' configs (32 bytes at least).
CLAIM_KEY = "ankusa-tests-claim-signing-key-0123456789"


def kill_group(proc):
    """SIGKILL the process group of proc (a Popen started with
    start_new_session) and reap it; None or ended: nothing."""
    if proc is not None and proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait(5)


def tmpdir(sub=None):
    base = _ctx.tmp if _ctx is not None else tempfile.mkdtemp(
        prefix="ankusa-")
    if sub is None:
        return base
    p = os.path.join(base, sub)
    os.makedirs(p, exist_ok=True)
    give_to_daemon_user(p)
    return p


def note(msg):
    """A line printed after the test's PASS/FAIL line."""
    if _ctx is not None:
        _ctx.notes.append(msg)


def log_tails(lines=25):
    """The tail of each daemon's stderr log of the running test."""
    out = []
    ctx = _ctx
    if ctx is None:
        return out
    for d in ctx.daemons:
        out.append((d.logpath, tail(d.logpath, lines)))
    return out


def tail(path, lines=25):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return ""
    return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])


# ---------------------------------------------------------------- utilities

def free_port(host="127.0.0.1"):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((host, 0))
    port = s.getsockname()[1]
    s.close()
    return port


_listen_next = [None]


def listen_port(host="127.0.0.1"):
    """A port for a listener that sets no SO_REUSEADDR (Berkeley DB's
    replication manager): below the kernel's ephemeral range, so that no
    outgoing connection takes it meanwhile, and bindable now without
    SO_REUSEADDR (no socket in TIME_WAIT holds it)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    top = min(low, 32768) - 1
    base = 20000 if top > 21000 else 10000
    if _listen_next[0] is None:
        _listen_next[0] = base + os.getpid() * 7 % (top - base)
    for _ in range(top - base):
        port = _listen_next[0]
        _listen_next[0] = base if port + 1 >= top else port + 1
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind((host, port))
        except OSError:
            continue
        finally:
            s.close()
        return port
    raise AssertionError("no free port below %d on %s" % (top, host))


def wait_until(pred, timeout=5.0, interval=0.05, what="condition"):
    """Poll pred() until it returns a true value; return it or raise."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = pred()
        except Exception as e:          # noqa: BLE001 - polled predicates
            last = None
            err = e
        else:
            err = None
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.1fs waiting for %s%s" % (
                timeout, what, (" (last error: %r)" % err) if err else ""))
        time.sleep(interval)


def yaml_dump(obj, indent=0):
    """A small YAML emitter for dicts, lists and scalars (block style)."""
    pad = "  " * indent
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(v, (dict, list)) and v:
                out.append("%s%s:" % (pad, k))
                out.append(yaml_dump(v, indent + 1))
            else:
                out.append("%s%s: %s" % (pad, k, _scalar(v)))
    elif isinstance(obj, list):
        for v in obj:
            if isinstance(v, dict) and v:
                sub = yaml_dump(v, indent + 1).split("\n")
                out.append("%s- %s" % (pad, sub[0].lstrip()))
                out.extend(sub[1:])
            elif isinstance(v, list) and v:
                out.append("%s-" % pad)
                out.append(yaml_dump(v, indent + 1))
            else:
                out.append("%s- %s" % (pad, _scalar(v)))
    else:
        out.append(pad + _scalar(obj))
    return "\n".join(out)


def _scalar(v):
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, dict):
        return "{}"
    if isinstance(v, list):
        return "[]"
    return json.dumps(str(v))          # a JSON string is a YAML string


# Ingest tests look at hooks in the store, so their sinks never deliver:
# nothing listens on port 9, and a failed attempt waits an hour.
HOLD_SINK = {"type": "http", "url": "http://127.0.0.1:9/hold"}
HOLD_RETRY = {"base_ms": 3600000, "max_ms": 3600000, "jitter": False}


def hold_source(tenant=None, **extra):
    """A verify-none source; without sinks given, one that holds its hooks
    (HOLD_SINK, HOLD_RETRY)."""
    s = {}
    if tenant is not None:
        s["tenant"] = tenant
    s["verify"] = {"type": "none"}
    s.update(extra)
    if "sinks" not in s:
        s["sinks"] = [dict(HOLD_SINK)]
        s.setdefault("retry", dict(HOLD_RETRY))
    return s


def default_sources():
    """The two sources of the brief: sources=2 sinks=3, holding hooks."""
    return {
        "github": hold_source(),
        "acme-orders": hold_source(tenant="acme", retry=dict(HOLD_RETRY),
                                   sinks=[
            dict(HOLD_SINK),
            dict(HOLD_SINK, ordered=True,
                 order_key={"header": "x-order"}),
        ]),
    }


# ---------------------------------------------------------------- the daemon

def _proc_children(pid):
    kids = []
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return kids
    for t in tasks:
        try:
            with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                kids.extend(int(x) for x in f.read().split())
        except OSError:
            pass
    return kids


def proc_comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return None


def proc_alive(pid):
    """True if pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read()
    except OSError:
        return False
    state = st[st.rfind(")") + 2:].split()[0]
    return state not in ("Z", "X")


def edge_alive(pid):
    return proc_alive(pid) and proc_comm(pid) == "ankusa-edge"


def proc_environ(pid):
    """{name: value} of /proc/PID/environ (what it was executed with);
    None if it is gone."""
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    out = {}
    for e in raw.split(b"\0"):
        k, eq, v = e.decode("utf-8", "replace").partition("=")
        if eq:
            out[k] = v
    return out


def executed_children(d, want, timeout=15.0):
    """{program: [pid, ...]} of daemon d's children that executed their
    program (one forked and not yet executed is still "ankusad"), once
    there are at least want[program] of each (e.g. {"ankusa-edge": 2})."""
    out = {}

    def enough():
        out.clear()
        for k in _proc_children(d.pid):
            c = proc_comm(k)
            if c in DAEMON_PROGRAMS[1:] and proc_alive(k):
                out.setdefault(c, []).append(k)
        return all(len(out.get(c, [])) >= n for c, n in want.items())
    wait_until(enough, timeout, 0.05, "children %r" % (want,))
    return out


def _tcp_inode(server_port, client_port):
    """The inode of the server side of a loopback TCP connection."""
    for fn in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(fn) as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for l in lines:
            p = l.split()
            local, remote, inode = p[1], p[2], p[9]
            if int(local.rsplit(":", 1)[1], 16) == server_port and \
                    int(remote.rsplit(":", 1)[1], 16) == client_port:
                return inode
    return None


def socket_owner(server_port, client_port, pids):
    """Which of pids holds the server side of the connection from
    client_port, or None."""
    inode = _tcp_inode(server_port, client_port)
    if inode is None:
        return None
    want = "socket:[%s]" % inode
    for pid in pids:
        try:
            fds = os.listdir("/proc/%d/fd" % pid)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink("/proc/%d/fd/%s" % (pid, fd)) == want:
                    return pid
            except OSError:
                pass
    return None


class Daemon:
    """One ankusad -d in its own dir under the test's temp dir.

    The data dir, socket and ports stay the same across stop()/start(), so a
    restart finds the same store.  cfg() builds the config dict; edit
    self.http / self.batcher / self.sources and call write_config() to
    change it (then SIGHUP or restart)."""

    host = "127.0.0.1"                  # where http and admin listen

    def __init__(self, sources=None, name="d", workers=2, routing="path",
                 prefix="/webhooks", max_body=1000000, batcher=None,
                 extra=None, data_dir=None, verbose=False,
                 checkpoint_ms=None):
        self.dir = tmpdir(name)
        self.verbose = verbose          # ankusad -v: debug lines too
        self.checkpoint_ms = checkpoint_ms  # ANKUSA_CHECKPOINT_MS
        self.data_dir = data_dir or os.path.join(self.dir, "data")
        self.sock = os.path.join(self.dir, "control.sock")
        self.conf = os.path.join(self.dir, "ankusa.yml")
        self.port = free_port()
        self.admin_port = free_port()
        self.admin = {"ip": "127.0.0.1", "port": self.admin_port,
                      "tokens": admin_tokens()}
        ADMIN_PORTS.add(self.admin_port)
        self.http = {"ip": "127.0.0.1", "port": self.port,
                     "workers": workers, "max_body_bytes": max_body,
                     "routing": routing, "prefix": prefix}
        self.batcher = dict(batcher or {"max_queue": 10000})
        self.sources = sources if sources is not None else default_sources()
        self.extra = extra or {}
        self.proc = None
        self.pid = None
        self.starts = 0
        self.logpath = os.path.join(self.dir, "ankusad.log")
        self.known_edges = set()
        self.child_paths = []           # paths given to node.child_user
        self.launcher = []              # argv ankusad runs under (an
        #                                 exec'ing launcher: setpriv)
        self.env_extra = {}             # variables for the daemon, e.g.
        self.write_config()             # ANKUSA_HTTP_PORT
        if _ctx is not None:
            with _ctx.lock:
                _ctx.daemons.append(self)

    # -- config

    def cfg(self):
        c = {"node": {"data_dir": self.data_dir},
             "control": {"socket": self.sock},
             "http": self.http,
             "admin": self.admin,
             "batcher": self.batcher,
             "egress": {"allow": ["127.0.0.0/8", "[::1]/128"]}}
        c.update(self.extra)
        # A claim_check section needs its signing key: the tests' one,
        # unless the test gives its own.
        if isinstance(c.get("claim_check"), dict) and \
                "signing_key" not in c["claim_check"]:
            c["claim_check"] = dict(c["claim_check"], signing_key=CLAIM_KEY)
        c["sources"] = self.sources
        return c

    def write_config(self, text=None):
        if text is None:
            text = yaml_dump(self.cfg()) + "\n"
        tmp = self.conf + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.rename(tmp, self.conf)
        return text

    # -- life

    def env(self):
        e = base_env(self.env_extra)
        e.pop("ANKUSA_CONTROL_SOCKET", None)
        e.pop("ANKUSA_CHECKPOINT_MS", None)
        if self.checkpoint_ms is not None:
            e["ANKUSA_CHECKPOINT_MS"] = str(self.checkpoint_ms)
        return e

    def spawn(self, preexec_fn=None):
        """Start ankusad -d without waiting; its stderr goes to the log."""
        os.makedirs(self.dir, exist_ok=True)
        give_to_daemon_user(self.dir, self.data_dir, user=self.cfg().get(
            "node", {}).get("user", DAEMON_USER))
        # What a child the test puts in place writes (as node.child_user).
        give_to_daemon_user(*self.child_paths, user=self.cfg().get(
            "node", {}).get("child_user", CHILD_USER))
        self.starts += 1
        log = open(self.logpath, "ab")
        log.write(b"==== start %d (%s)\n" % (self.starts,
                                            time.ctime().encode()))
        log.flush()
        # Where this start's lines begin, taken before the daemon runs: it
        # may write its first lines before Popen returns here.
        self.logpos = log.tell()
        self.proc = subprocess.Popen(
            self.launcher + [program("ankusad"), "-d", "-c", self.conf] +
            (["-v"] if self.verbose else []),
            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            env=self.env(), start_new_session=True, preexec_fn=preexec_fn)
        log.close()
        self.pid = self.proc.pid
        return self.proc

    def start(self, timeout=15.0, preexec_fn=None):
        self.spawn(preexec_fn=preexec_fn)
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout=15.0):
        deadline = time.monotonic() + timeout

        def ready():
            if self.proc.poll() is not None:
                raise AssertionError(
                    "ankusad exited %s during start-up; log:\n%s" % (
                        self.proc.returncode, tail(self.logpath, 15)))
            st, _, _ = get(self.port, "/health", timeout=1.0,
                           host=self.host)
            if st != 200:
                return False
            rc, out, _ = self.ctl("status", check=False, json_out=True)
            if rc != 0:
                return False
            # Every edge has said hello (a test that breaks edges on
            # purpose may start with fewer: then health is enough).
            return json.loads(out).get("edges", 0) >= \
                self.http.get("workers", 1)

        while True:
            try:
                if ready():
                    break
            except AssertionError:
                raise
            except Exception:           # noqa: BLE001 - not up yet
                pass
            if time.monotonic() >= deadline:
                raise AssertionError(
                    "ankusad not ready after %.0fs (GET /health and "
                    "ankusactl status); log:\n%s" % (
                        timeout, tail(self.logpath, 15)))
            time.sleep(0.05)
        self.known_edges |= set(self.edges())

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        os.kill(self.pid, sig)

    def stop(self, timeout=20.0):
        """SIGTERM, wait; return the exit status."""
        if not self.running():
            return self.proc.returncode if self.proc else None
        self.known_edges |= set(self.edges())
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError("ankusad did not exit %.0fs after SIGTERM"
                                 % timeout)

    def kill9(self):
        """SIGKILL the master only (its edges must leave by themselves)."""
        self.known_edges |= set(self.edges())
        os.kill(self.pid, signal.SIGKILL)
        self.proc.wait(10)
        return self.proc.returncode

    def destroy(self):
        """Kill the master and every edge it ever had, whatever state."""
        if self.proc is not None and self.proc.poll() is None:
            self.known_edges |= set(self.edges())
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                self.proc.kill()
                self.proc.wait(5)
            except Exception:           # noqa: BLE001
                pass
        for e in list(self.known_edges):
            if edge_alive(e):
                try:
                    os.kill(e, signal.SIGKILL)
                except OSError:
                    pass
        # A killed master leaves its region files (docs/DEPARTURES 21)
        # until another store's open sweeps them: none may come.  They
        # are named by the daemon's uid (node.user's when it started as
        # root), the owner of the data directory it made.
        try:
            st = os.stat(self.data_dir)
            shutil.rmtree("/dev/shm/ankusa-store-%d-%x-%x" % (
                st.st_uid, st.st_dev, st.st_ino), ignore_errors=True)
        except OSError:
            pass

    def log_since_start(self):
        with open(self.logpath, "rb") as f:
            f.seek(getattr(self, "logpos", 0))
            return f.read().decode("utf-8", "replace")

    def log_text(self):
        with open(self.logpath, "rb") as f:
            return f.read().decode("utf-8", "replace")

    # -- processes

    def edges(self):
        """Pids of the live ankusa-edge children of the master."""
        if self.pid is None:
            return []
        return sorted(p for p in _proc_children(self.pid) if edge_alive(p))

    # -- ankusactl

    def api(self, method, path, body=None, timeout=20.0):
        """One admin API request: (status, headers, JSON body or None when
        the body is not JSON).  body: a dict (sent as JSON) or bytes."""
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        st, hdrs, data = request(self.admin_port, method, path, body,
                                 timeout=timeout, host=self.host)
        try:
            doc = json.loads(data) if data else None
        except ValueError:
            doc = None
        return st, hdrs, doc

    def ctl(self, *args, check=True, json_out=False, timeout=20):
        argv = [binary("ankusactl"), "-s", self.sock]
        if json_out:
            argv.append("-j")
        argv += list(args)
        r = subprocess.run(argv, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=timeout)
        out = r.stdout.decode("utf-8", "replace")
        err = r.stderr.decode("utf-8", "replace")
        if check and r.returncode != 0:
            raise AssertionError("ankusactl %s: exit %d: %s" % (
                " ".join(args), r.returncode, (err or out).strip()))
        return r.returncode, out, err

    def status(self):
        _, out, _ = self.ctl("status", json_out=True)
        lines = [l for l in out.splitlines() if l.strip()]
        if len(lines) != 1:
            raise AssertionError("ankusactl -j status: expected one JSON "
                                 "line, got %r" % out)
        return json.loads(lines[0])

    def queue(self, source=None, limit=None):
        args = ["queue"]
        if source is not None:
            args += ["-S", source]
        if limit is not None:
            args += ["-n", str(limit)]
        _, out, _ = self.ctl(*args, json_out=True, timeout=120)
        items = []
        for l in out.splitlines():
            if l.strip():
                items.append(json.loads(l))
        return items

    def tick(self, timeout_s=30, check=True):
        """ankusactl tick TIMEOUT_S: the rows settled (settled N), or None
        when it timed out (exit 1) and check is false."""
        rc, out, err = self.ctl("tick", str(timeout_s), check=False,
                                timeout=timeout_s + 30)
        if rc != 0:
            if check:
                raise AssertionError("ankusactl tick %s: exit %d: %s" % (
                    timeout_s, rc, (err or out).strip()))
            return None
        m = re.search(r"settled (\d+)", out)
        if not m:
            raise AssertionError("ankusactl tick: no 'settled N' in %r" %
                                 out)
        return int(m.group(1))

    def settle_all(self, timeout=120, what="settled"):
        """tick until no hook is stored and no row pending; the status
        then."""
        deadline = time.monotonic() + timeout
        while True:
            self.tick(60, check=False)
            st = self.status()
            if st["hooks"] == 0 and st["pending"] == 0:
                return st
            assert time.monotonic() < deadline, \
                "not %s %.0f s on: %r" % (what, timeout, st)
            time.sleep(0.2)

    def dlq(self, source=None, limit=None):
        args = ["dlq", "list"]
        if source is not None:
            args += ["-S", source]
        if limit is not None:
            args += ["-n", str(limit)]
        _, out, _ = self.ctl(*args, json_out=True, timeout=120)
        return [json.loads(l) for l in out.splitlines() if l.strip()]

    def breakers(self):
        _, out, _ = self.ctl("breakers", json_out=True)
        return [json.loads(l) for l in out.splitlines() if l.strip()]

    def pressure(self):
        _, out, _ = self.ctl("pressure", json_out=True)
        return json.loads(out)

    def url(self, path):
        return "http://%s:%d%s" % (self.host, self.port, path)


def admin_tokens():
    """The admin.tokens of a harness daemon: ADMIN_TOKEN, every scope."""
    return [{"name": "e2e", "token": ADMIN_TOKEN, "scopes": ["*"]}]


def check_config(path, env=None):
    """ankusad -n -c path: (exit status, stdout + stderr)."""
    r = subprocess.run([binary("ankusad"), "-n", "-c", path],
                       stdin=subprocess.DEVNULL, capture_output=True,
                       env=base_env(env), timeout=20)
    return r.returncode, (r.stdout + r.stderr).decode("utf-8", "replace")


def ankusactl(*args, timeout=20):
    r = subprocess.run([binary("ankusactl")] + list(args),
                       stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=timeout)
    return (r.returncode, r.stdout.decode("utf-8", "replace"),
            r.stderr.decode("utf-8", "replace"))


# ---------------------------------------------------------------- HTTP

def request(port, method, path, body=None, headers=None, timeout=10.0,
            conn=None, host="127.0.0.1"):
    """One request to host:port; (status, headers dict lower-cased, body
    bytes).

    With conn (an http.client.HTTPConnection) the connection is reused."""
    own = conn is None
    if own:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        h = {}
        if body is not None and method in ("POST", "PUT", "PATCH", "DELETE"):
            h["Content-Type"] = "application/json"
        if port in ADMIN_PORTS:
            h["Authorization"] = "Bearer " + ADMIN_TOKEN
        h.update(headers or {})
        h = {k: v for k, v in h.items() if v is not None}
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        if own:
            conn.close()


def post(port, path, body=b"{}", headers=None, timeout=10.0, conn=None,
         host="127.0.0.1"):
    return request(port, "POST", path, body, headers, timeout, conn, host)


def get(port, path, timeout=10.0, conn=None, host="127.0.0.1"):
    return request(port, "GET", path, None, None, timeout, conn, host)


def jbody(data):
    try:
        return json.loads(data)
    except ValueError:
        raise AssertionError("answer body is not JSON: %r" % data[:200])


def expect(status, hdrs, data, want_status, want_body=None, what=""):
    """Assert an answer's status and (exact) JSON body."""
    if status != want_status:
        raise AssertionError("%sexpected %d, got %d %r" % (
            what + ": " if what else "", want_status, status, data[:300]))
    if want_body is not None:
        got = jbody(data)
        if got != want_body:
            raise AssertionError("%sexpected body %r, got %r" % (
                what + ": " if what else "", want_body, got))
        ct = hdrs.get("content-type", "")
        if not ct.startswith("application/json"):
            raise AssertionError("%sexpected Content-Type application/json,"
                                 " got %r" % (what + ": " if what else "",
                                              ct))


def expect_accepted(status, hdrs, data, what=""):
    """Assert a 201 accepted answer; return the id."""
    if status != 201:
        raise AssertionError("%sexpected 201, got %d %r" % (
            what + ": " if what else "", status, data[:300]))
    j = jbody(data)
    if set(j) != {"status", "id"} or j["status"] != "accepted":
        raise AssertionError("%sexpected {status: accepted, id}, got %r" % (
            what + ": " if what else "", j))
    if not isinstance(j["id"], str) or not UUIDV7.match(j["id"]):
        raise AssertionError("id %r is not a lower-case UUIDv7" % (j["id"],))
    return j["id"]


def uuid7_ms(u):
    return int(u.replace("-", "")[:12], 16)


class RawResponse:
    def __init__(self, status, reason, headers, body, raw):
        self.status = status
        self.reason = reason
        self.headers = headers          # lower-cased names
        self.body = body
        self.raw = raw

    def json(self):
        return jbody(self.body)

    def __repr__(self):
        return "<%d %s %r>" % (self.status, self.reason, self.body[:200])


class Raw:
    """A raw TCP connection for requests http.client will not send."""

    def __init__(self, port, timeout=10.0):
        self.s = socket.create_connection(("127.0.0.1", port), timeout)
        self.s.settimeout(timeout)
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def readable(self, timeout=0.0):
        if self.buf:
            return True
        r, _, _ = select.select([self.s], [], [], timeout)
        return bool(r)

    def _fill(self):
        d = self.s.recv(65536)
        if not d:
            raise EOFError("connection closed by the server")
        self.buf += d

    def read_response(self, timeout=None):
        """One response (Content-Length framed, or up to close)."""
        if timeout is not None:
            self.s.settimeout(timeout)
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        status = int(parts[1])
        reason = parts[2] if len(parts) > 2 else ""
        hdrs = {}
        for l in lines[1:]:
            k, _, v = l.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        if 100 <= status < 200:
            return RawResponse(status, reason, hdrs, b"", head)
        if "content-length" in hdrs:
            n = int(hdrs["content-length"])
            while len(self.buf) < n:
                self._fill()
            body, self.buf = self.buf[:n], self.buf[n:]
        else:
            while True:
                try:
                    self._fill()
                except EOFError:
                    break
            body, self.buf = self.buf, b""
        return RawResponse(status, reason, hdrs, body, head)

    def closed_by_peer(self, timeout=3.0):
        """True if the server closes the connection within timeout."""
        self.s.settimeout(timeout)
        try:
            while True:
                d = self.s.recv(65536)
                if not d:
                    return True
                self.buf += d
        except socket.timeout:
            return False
        except ConnectionError:
            return True

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


def head_bytes(method, path, headers, body=None):
    """A request head (and body) as bytes; headers a list of pairs, values
    and names may be bytes to carry any byte."""
    out = [("%s %s HTTP/1.1\r\n" % (method, path)).encode()]
    have_host = any((k.lower() if isinstance(k, str) else k.lower().decode(
        "latin-1")) == "host" for k, _ in headers)
    if not have_host:
        out.append(b"Host: 127.0.0.1\r\n")
    for k, v in headers:
        k = k if isinstance(k, bytes) else k.encode("latin-1")
        v = v if isinstance(v, bytes) else str(v).encode("latin-1")
        out.append(k + b": " + v + b"\r\n")
    out.append(b"\r\n")
    if body:
        out.append(body)
    return b"".join(out)


def ingest_refused(d, reason):
    """ankusa_ingest_refused_total{reason} of daemon d, 0 if absent."""
    st, _, data = request(d.admin_port, "GET", "/metrics")
    assert st == 200, "GET /metrics: %d" % st
    m = re.search(r'^ankusa_ingest_refused_total\{reason="%s"\} (\S+)$' %
                  reason, data.decode(), re.M)
    return float(m.group(1)) if m else 0


class HAProxy:
    """haproxy -db -f CFG (the text given) in the test's temp dir, in the
    foreground; killed when the test ends (end_test calls destroy).
    Skip when Debian's haproxy is not installed."""

    logpath = None

    def __init__(self, text, name="haproxy"):
        exe = shutil.which("haproxy") or "/usr/sbin/haproxy"
        if not os.access(exe, os.X_OK):
            raise Skip("haproxy not installed (Debian package haproxy; "
                       "scripts/test installs it)")
        self.exe = exe
        self.dir = tmpdir(name)
        self.cfg = os.path.join(self.dir, "haproxy.cfg")
        self.logpath = os.path.join(self.dir, "haproxy.log")
        with open(self.cfg, "w") as f:
            f.write(text)
        self.proc = None
        register(self)

    def start(self):
        r = subprocess.run([self.exe, "-c", "-f", self.cfg],
                           capture_output=True, timeout=20)
        assert r.returncode == 0, r.stdout + r.stderr
        log = open(self.logpath, "ab")
        self.proc = subprocess.Popen([self.exe, "-db", "-f", self.cfg],
                                     stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=log, start_new_session=True)
        log.close()
        return self

    def destroy(self):
        kill_group(self.proc)


# ---------------------------------------------------------------- test sink

class TestSink:
    """build/tests/test_sink on a free loopback port, recording to a file in
    the test's temp dir.  Killed by end_test() like the daemons.

        s = TestSink(secrets=["whsec_..."]).start()
        s.mode("/a", status=503, fail_first=0)
        s.records()            # every recorded request, a list of dicts
        s.stats()              # {"received": N, "by_path": {...}}
    """

    __test__ = False            # not a test class for any collector

    def __init__(self, secrets=(), name="sink", port=None):
        self.dir = tmpdir(name)
        self.record = os.path.join(self.dir, "record.jsonl")
        self.logpath = os.path.join(self.dir, "test_sink.log")
        self.secrets = list(secrets)
        self.port = port or free_port()
        self.proc = None
        self.pid = None
        if _ctx is not None:
            with _ctx.lock:
                _ctx.daemons.append(self)

    def start(self, timeout=10.0):
        argv = [binary("tests/test_sink"), "-p", str(self.port),
                "-o", self.record]
        for s in self.secrets:
            argv += ["-s", s]
        log = open(self.logpath, "ab")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=log,
                                     start_new_session=True)
        log.close()
        self.pid = self.proc.pid

        def up():
            if self.proc.poll() is not None:
                raise AssertionError("test_sink exited %s: %s" % (
                    self.proc.returncode, tail(self.logpath, 5)))
            try:
                socket.create_connection(("127.0.0.1", self.port),
                                         0.5).close()
                return True
            except OSError:
                return False

        deadline = time.monotonic() + timeout
        while True:
            try:
                if up():
                    return self
            except AssertionError:
                raise
            if time.monotonic() >= deadline:
                raise AssertionError("test_sink not listening on %d" %
                                     self.port)
            time.sleep(0.02)

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.running():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def destroy(self):
        if self.running():
            try:
                self.proc.kill()
                self.proc.wait(5)
            except Exception:           # noqa: BLE001
                pass

    def url(self, path="/hook"):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def _ctl(self, method, what, obj=None):
        body = json.dumps(obj).encode() if obj is not None else None
        st, _, data = request(self.port, method, "/_ctl/" + what, body,
                              timeout=10)
        if st != 200:
            raise AssertionError("test_sink /_ctl/%s: %d %r" % (what, st,
                                                                data[:200]))
        return jbody(data) if data.strip() else None

    def mode(self, path="*", **kw):
        """How requests to path are answered from now on: status, delay_ms,
        hang, fail_first, fail_status, retry_after."""
        m = {"path": path}
        m.update(kw)
        return self._ctl("POST", "mode", m)

    def stats(self):
        return self._ctl("GET", "stats")

    def received(self, path=None):
        s = self.stats()
        if path is None:
            return s.get("received", 0)
        return s.get("by_path", {}).get(path, 0)

    def reset(self):
        return self._ctl("POST", "reset", {})

    def records(self, path=None):
        """Every request recorded so far (in arrival order), optionally only
        those to path.  A torn last line (being written) is left out."""
        try:
            with open(self.record, "rb") as f:
                data = f.read()
        except OSError:
            return []
        out = []
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if path is None or r.get("path") == path:
                out.append(r)
        return out

    def ids(self, path=None, status=None):
        """x-ankusa-id of every record (to path, answered status)."""
        return [r["x-ankusa-id"] for r in self.records(path)
                if status is None or r.get("status") == status]


class FakeSQS:
    """A loopback stand-in for SQS's SendMessageBatch (JSON protocol), for
    tests that need what moto cannot give: a request held for delay_s,
    the most requests in flight at once, every entry as it came.

        q = FakeSQS().start()
        q.delay_s = 1.0         # hold each request this long
        q.entries()             # [{"body": v1 dict, "attrs": {..}}]
        q.max_in_flight         # the most requests held at once
        q.fail = {"Code": "InvalidParameterValue", "Message": "...",
                  "SenderFault": True}     # every entry Failed so

    It answers every entry Successful with the MD5 of its body (or, with
    fail set, Failed as fail says); it checks no signature (the sink signs;
    moto's tests check that)."""

    __test__ = False

    def __init__(self):
        import hashlib
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        self.delay_s = 0.0
        self.fail = None
        self.in_flight = 0
        self.max_in_flight = 0
        self.requests = 0
        self._entries = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                req = json.loads(self.rfile.read(n))
                with fake._lock:
                    fake.in_flight += 1
                    fake.requests += 1
                    fake.max_in_flight = max(fake.max_in_flight,
                                             fake.in_flight)
                held = [True]

                def release():
                    # Before the answer goes: once it is sent, the
                    # daemon may settle and send the next request before
                    # this thread runs again, which would count one more
                    # in flight than the daemon ever had.
                    if held[0]:
                        held[0] = False
                        with fake._lock:
                            fake.in_flight -= 1

                try:
                    if fake.delay_s > 0:
                        time.sleep(fake.delay_s)
                    ok, failed = [], []
                    with fake._lock:
                        for e in req["Entries"]:
                            fake._entries.append({
                                "body": json.loads(e["MessageBody"]),
                                "attrs": {k: a["StringValue"] for k, a in
                                          e.get("MessageAttributes",
                                                {}).items()}})
                            if fake.fail is not None:
                                failed.append(dict(fake.fail, Id=e["Id"]))
                                continue
                            ok.append({"Id": e["Id"], "MessageId": "m%d" %
                                       len(fake._entries),
                                       "MD5OfMessageBody": hashlib.md5(
                                           e["MessageBody"].encode()
                                       ).hexdigest()})
                    b = json.dumps({"Successful": ok, "Failed": failed}
                                   ).encode()
                    release()
                    self.send_response(200)
                    self.send_header("Content-Type",
                                     "application/x-amz-json-1.0")
                    self.send_header("Content-Length", str(len(b)))
                    self.end_headers()
                    self.wfile.write(b)
                finally:
                    release()

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = None
        if _ctx is not None:
            with _ctx.lock:
                _ctx.daemons.append(self)

    def start(self):
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)
        self.thread.start()
        return self

    def entries(self):
        with self._lock:
            return list(self._entries)

    def sink(self, **extra):
        """An sqs sink entry that sends here."""
        s = {"type": "sqs", "queue_url": "http://127.0.0.1:%d/1/q" %
             self.port, "endpoint": "http://127.0.0.1:%d" % self.port,
             "region": "us-east-1", "access_key_id": "AKIAFAKE",
             "secret_access_key": "fake"}
        s.update(extra)
        return s

    def destroy(self):
        self.delay_s = 0.0
        self.server.shutdown()
        self.server.server_close()

    # The harness's clean-up asks these of everything it holds.
    logpath = os.devnull


def sink_source(sinks, tenant=None, retry=None, **extra):
    """A verify-none source with the given sinks (and retry override)."""
    s = hold_source(tenant=tenant, sinks=sinks, **extra)
    if retry is not None:
        s["retry"] = retry
    return s


FAST_RETRY = {"base_ms": 50, "max_ms": 200, "jitter": False}


def dispatch_conf(**kw):
    """A dispatch section for tests: fast retries unless overridden."""
    d = {"retry": dict(FAST_RETRY)}
    for k, v in kw.items():
        if k == "retry":
            d["retry"].update(v)
        else:
            d[k] = v
    return d


def parse_lines(out):
    """One JSON object per non-empty line (ankusactl -j listings)."""
    return [json.loads(l) for l in out.splitlines() if l.strip()]
