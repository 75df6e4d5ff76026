# SPDX-License-Identifier: ISC
"""Privilege separation (ankusad(8), SECURITY): started as root, the master
runs as node.user after opening what needs root, its children run as
node.child_user from their start with no_new_privs, a seccomp filter and
rlimits; a data directory of another user and an unknown user are refused;
a child killed by its filter is respawned."""

import hashlib
import hmac
import http.server
import json
import os
import pwd
import re
import threading
import time

import ankusa
from ankusa import (Daemon, TestSink, _proc_children, expect_accepted, note,
                    post, proc_alive, proc_comm, wait_until)

USER = ankusa.DAEMON_USER
CHILD_USER = ankusa.CHILD_USER
GH_SECRET = "PRIVSEP-gh-verify-secret"
SINK_SECRET = "whsec_UFJJVlNFUC1zaW5rLXNpZ24="      # PRIVSEP-sink-sign

# RLIMIT_NOFILE of each kind (common/sandbox.c).
NOFILE = {"ankusa-edge": 16384, "ankusa-deliver": 256,
          "ankusa-gateway": 4096}


def _needs_root():
    """What it checks is what ankusad does when started as root."""
    ankusa.needs_root_and_users("ankusad changes user only when started "
                                "as root")


def _sanitizers():
    """True for a build with --enable-sanitizers (no filters then)."""
    with open(ankusa.binary("config.h")) as f:
        return "#define ANKUSA_SANITIZERS 1" in f.read()


def _status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.split()
    return out


def _limits(pid):
    """{name: (soft, hard)} of /proc/PID/limits."""
    out = {}
    with open("/proc/%d/limits" % pid) as f:
        next(f)
        for line in f:
            m = re.match(r"(.+?)\s{2,}(\S+)\s+(\S+)", line)
            if m:
                out[m.group(1).strip()] = (m.group(2), m.group(3))
    return out


def _children(d):
    return [p for p in _proc_children(d.pid) if proc_alive(p)]


def _refused(d, want, preexec_fn=None):
    """Start d, expect exit 78 and a log line matching want."""
    p = d.spawn(preexec_fn=preexec_fn)
    try:
        rc = p.wait(15)
    except Exception:
        raise AssertionError("ankusad did not exit; log:\n%s" %
                             ankusa.tail(d.logpath))
    # The whole log: a quick exit may write before spawn took its offset.
    log = d.log_text()
    assert rc == 78, "exit %s, want 78; log:\n%s" % (rc, log)
    assert re.search(want, log), "no %r in the log:\n%s" % (want, log)


def _socket_kind(link):
    """'unix' or 'tcp' for a /proc/PID/fd link socket:[INODE]."""
    inode = link[len("socket:["):-1]
    for kind, path in (("tcp", "/proc/net/tcp"), ("tcp", "/proc/net/tcp6"),
                       ("unix", "/proc/net/unix")):
        with open(path) as f:
            next(f)
            for line in f:
                cols = line.split()
                ino = cols[6] if kind == "unix" else cols[9]
                if ino == inode:
                    return kind
    return None


def test_privsep_ids_and_sandbox():
    """Master and every child as node.user; children NoNewPrivs 1, Seccomp
    2, no core, descriptors bounded; verification and signed deliveries
    still work."""
    _needs_root()
    pw = pwd.getpwnam(USER)
    cpw = pwd.getpwnam(CHILD_USER)
    sink = TestSink(secrets=[SINK_SECRET]).start()
    d = Daemon(sources={"gh": {
        "verify": {"type": "github", "secret": GH_SECRET},
        "retry": dict(ankusa.FAST_RETRY),
        "sinks": [{"type": "http", "url": sink.url("/signed"),
                   "secret": SINK_SECRET}]}},
        extra={"claim_check": {
            "ip": "127.0.0.1", "port": ankusa.free_port(),
            "store": {"type": "local",
                      "root": os.path.join(ankusa.tmpdir(), "claims")}}})
    d.start()
    st = _status(d.pid)
    assert st["Uid"] == [str(pw.pw_uid)] * 4, st["Uid"]
    assert st["Gid"] == [str(pw.pw_gid)] * 4, st["Gid"]
    # The children's group is the master's too (the claim store's).
    assert str(cpw.pw_gid) in st["Groups"], st["Groups"]
    assert "privsep: running as %s" % USER in d.log_since_start()
    # The data dir root made at the first start is the user's.
    assert os.stat(d.data_dir).st_uid == pw.pw_uid

    seen = {}
    # A sanitizer build runs its children unfiltered (DEPARTURES 34).
    unfiltered = _sanitizers()
    if unfiltered:
        note("a sanitizer build: children without seccomp filters")

    def all_kinds():
        kids = _children(d)
        for k in NOFILE:
            if not any(proc_comm(p) == k for p in kids):
                return False
        return True
    wait_until(all_kinds, 10, 0.1, "an edge, a deliver process and a "
               "gateway running")
    for p in _children(d):
        comm = proc_comm(p)
        if comm not in NOFILE:
            continue
        # A child enters its sandbox once it has set itself up.
        try:
            wait_until(lambda: _status(p)["NoNewPrivs"] == ["1"], 5, 0.05,
                       "%s %d in its sandbox" % (comm, p))
            if not unfiltered:
                wait_until(lambda: _status(p)["Seccomp"] == ["2"], 5,
                           0.05, "%s %d filtered" % (comm, p))
        except FileNotFoundError:
            continue                    # gone meanwhile (a respawn)
        s = _status(p)
        # node.child_user, its group and no other.
        assert s["Uid"] == [str(cpw.pw_uid)] * 4, (comm, s["Uid"])
        assert s["Gid"] == [str(cpw.pw_gid)] * 4, (comm, s["Gid"])
        assert s["Groups"] == [str(cpw.pw_gid)], (comm, s["Groups"])
        assert s["NoNewPrivs"] == ["1"], (comm, s["NoNewPrivs"])
        assert s["Seccomp"] == (["0"] if unfiltered else ["2"]), \
            (comm, s["Seccomp"])
        lim = _limits(p)
        assert lim["Max core file size"] == ("0", "0"), (comm, lim)
        want = str(NOFILE[comm])
        assert lim["Max open files"] == (want, want), (comm, lim)
        assert lim["Max locked memory"] == ("0", "0"), (comm, lim)
        seen[comm] = seen.get(comm, 0) + 1
    # One child stays root, forked before the drop (privsep.c's helper):
    # no exec, one socket beside stdio, its socketpair (it gets the ingest
    # listener only with its request at a stop), and a pidfd of each
    # child it spawned.
    # A child cloned and not yet executed is an "ankusad" too.
    helpers = []

    def one_helper():
        helpers[:] = [p for p in _children(d) if proc_comm(p) == "ankusad"]
        return len(helpers) == 1
    wait_until(one_helper, 5, 0.05, "one helper: %r" % helpers)
    fds = sorted(int(x) for x in os.listdir("/proc/%d/fd" % helpers[0]))
    assert fds[:3] == [0, 1, 2], fds
    links = [os.readlink("/proc/%d/fd/%d" % (helpers[0], f))
             for f in fds[3:]]
    socks = [x for x in links if x.startswith("socket:")]
    assert len(socks) == 1, links
    assert _socket_kind(socks[0]) == "unix", (links, "the helper holds no "
                                              "listener before a stop")
    assert all(x.startswith("socket:") or x == "anon_inode:[pidfd]"
               for x in links), links
    note("children checked: %s" % ", ".join(
        "%d %s" % (n, k) for k, n in sorted(seen.items())))

    # The edge verifies (it has the source's secret), the deliver process
    # signs (it has the sink's).
    body = b'{"privsep":1}'
    sig = "sha256=" + hmac.new(GH_SECRET.encode(), body,
                               hashlib.sha256).hexdigest()
    st_, h, data = post(d.port, "/webhooks/gh", body,
                        headers={"X-Hub-Signature-256": sig,
                                 "Content-Type": "application/json"})
    expect_accepted(st_, h, data, "signed hook")
    st_, h, data = post(d.port, "/webhooks/gh", body,
                        headers={"X-Hub-Signature-256": "sha256=" + "0" * 64})
    assert st_ == 401, (st_, data)
    wait_until(lambda: sink.received("/signed") >= 1, 15, 0.1,
               "the delivery")
    rec = sink.records("/signed")[0]
    assert rec["sig"] == "ok", rec
    assert "killed by signal" not in d.log_since_start(), \
        d.log_since_start()


def test_privsep_data_dir_of_another_user():
    """A data dir owned by another user: refused, naming the path, the
    owner and node.user."""
    _needs_root()
    nobody = pwd.getpwnam("nobody")
    d = Daemon()
    os.makedirs(d.data_dir, exist_ok=True)

    def give_away():
        os.chown(d.data_dir, nobody.pw_uid, nobody.pw_gid)
    _refused(d, r"node\.data_dir %s is owned by nobody, not by node\.user "
             r"%s" % (re.escape(d.data_dir), USER), preexec_fn=give_away)


def test_privsep_unknown_user():
    _needs_root()
    d = Daemon(extra={"node": {"user": "ankusa-no-such-user"}})
    d.extra["node"]["data_dir"] = d.data_dir
    d.write_config()
    _refused(d, r"node\.user ankusa-no-such-user: no such user")
    assert not os.path.exists(os.path.join(d.data_dir, "ankusad.lock")), \
        "the data dir was opened before the user was checked"


def test_privsep_non_root_cannot_change_user():
    """Started as another user, node.user must be that user or unset."""
    _needs_root()
    nobody = pwd.getpwnam("nobody")
    d = Daemon(extra={"node": {"user": USER}})
    d.extra["node"]["data_dir"] = d.data_dir
    d.write_config()

    def become_nobody():
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)
    _refused(d, r"node\.user %s: ankusad was started as nobody, not as "
             r"root" % USER, preexec_fn=become_nobody)


def test_privsep_filter_kill_respawned():
    """An edge that makes a system call its filter forbids (the probe
    opens a file after entering the edge's sandbox) dies of SIGSYS; the
    master logs the signal and respawns it."""
    _needs_root()
    if _sanitizers():
        raise ankusa.Skip("a sanitizer build has no seccomp filters")
    lx = ankusa.tmpdir("libexec")
    os.symlink(ankusa.program("tests/sandbox_probe"),
               os.path.join(lx, "ankusa-edge"))
    for b in ("ankusa-deliver", "ankusa-gateway"):
        os.symlink(ankusa.program(b), os.path.join(lx, b))
    d = Daemon(workers=1)
    d.env_extra["ANKUSA_LIBEXECDIR"] = lx
    d.spawn()
    pat = re.compile(r"edge 1\.0 pid (\d+) killed by signal 31 \(SIGSYS")

    def kills():
        return set(pat.findall(d.log_since_start()))
    t0 = time.monotonic()
    wait_until(lambda: len(kills()) >= 2, 15, 0.1,
               "two edges killed by SIGSYS; log:\n" + d.log_since_start())
    assert "sandbox_probe: edge entered, calling open" in \
        d.log_since_start()
    assert "edge slot 0 restarts in" in d.log_since_start()
    assert d.proc.poll() is None, "the master died"
    note("2 SIGSYS kills, respawned, in %.1f s" % (time.monotonic() - t0))



class _HeaderSink:
    """A loopback HTTP server that answers 200 and keeps the headers of
    each POST (test_sink records only a few of them)."""

    def __init__(self):
        seen = self.seen = []

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                self.rfile.read(n)
                seen.append({k.lower(): v for k, v in self.headers.items()})
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def test_privsep_quarantine_keeps_only_needed_credentials():
    """A hook held in the pen keeps Authorization and Cookie only when its
    source's verification reads them: after a rotation and a release, a
    hook signed in Authorization verifies (kept), and a github hook whose
    source forwards authorization and cookie arrives without them (not
    kept: github's verification reads neither)."""
    sink = _HeaderSink()
    try:
        url = "http://127.0.0.1:%d/in" % sink.port
        auth_src = {"verify": {"type": "hmac", "secret": "current",
                               "signature_header": "Authorization",
                               "signed": "{body}"},
                    "on_verify_failure": "quarantine",
                    "retry": dict(ankusa.FAST_RETRY),
                    "sinks": [{"type": "http", "url": url}]}
        gh_src = {"verify": {"type": "github", "secret": "current"},
                  "on_verify_failure": "quarantine",
                  "forward_headers": ["authorization", "cookie", "x-keep",
                                      "x-hub-signature-256"],
                  "retry": dict(ankusa.FAST_RETRY),
                  "sinks": [{"type": "http", "url": url}]}
        d = Daemon(sources={"auth": auth_src, "gh": gh_src}).start()
        body = b'{"held":1}'
        sig = hmac.new(b"next", body, hashlib.sha256).hexdigest()
        st, h, data = post(d.port, "/webhooks/auth", body,
                           headers={"Authorization": sig,
                                    "Cookie": "c=PRIVSEP-cookie"})
        assert st == 202, (st, data)
        st, h, data = post(d.port, "/webhooks/gh", body,
                           headers={"X-Hub-Signature-256": "sha256=" + sig,
                                    "Authorization": "Bearer PRIVSEP-auth",
                                    "Cookie": "c=PRIVSEP-cookie",
                                    "X-Keep": "1"})
        assert st == 202, (st, data)

        # Rotate: both verify now, if what they need was kept.
        auth_src["verify"]["secret"] = ["next", "current"]
        gh_src["verify"]["secret"] = ["next", "current"]
        d.write_config()
        d.ctl("reload")
        _, out, _ = d.ctl("quarantine", "release", json_out=True)
        r = json.loads(out)
        assert r == {"released": 2, "kept": 0, "failed": 0}, r
        wait_until(lambda: len(sink.seen) >= 2, 15, 0.1, "2 deliveries")
        gh = [x for x in sink.seen if x.get("x-ankusa-source") == "gh"]
        assert len(gh) == 1, sink.seen
        assert gh[0].get("x-keep") == "1", gh[0]
        assert gh[0].get("x-hub-signature-256") == "sha256=" + sig, gh[0]
        assert "authorization" not in gh[0], gh[0]
        assert "cookie" not in gh[0], gh[0]
    finally:
        sink.close()


def test_privsep_reload_reads_as_user():
    """A reload reads the file as node.user: one it may not read is a
    reload error naming the file, and the old config stays."""
    _needs_root()
    d = Daemon().start()
    os.chown(d.conf, 0, 0)
    os.chmod(d.conf, 0o600)
    rc, out, err = d.ctl("reload", check=False)
    assert rc == 1, (rc, out, err)
    assert "cannot read %s: Permission denied" % d.conf in out + err, \
        (out, err)
    assert "old config kept" in out + err, (out, err)
    os.chmod(d.conf, 0o644)
    d.ctl("reload")
    assert d.running()


def test_privsep_deliver_recycled_on_claim_root_change():
    """A deliver process may write only the local claim store its part of
    the config names: a reload that moves the store's root replaces the
    deliver processes; one that does not keeps them."""
    _needs_root()
    claims = {"ip": "127.0.0.1", "port": ankusa.free_port(),
              "store": {"type": "local",
                        "root": os.path.join(ankusa.tmpdir(), "claims-a")}}
    d = Daemon(extra={"claim_check": claims}).start()

    def delivers():
        return {p for p in _children(d) if proc_comm(p) == "ankusa-deliver"}
    wait_until(lambda: len(delivers()) > 0, 10, 0.1, "deliver processes")
    before = delivers()
    # A reload that leaves the claim store as it is.
    d.sources["github"]["sinks"][0]["timeout_ms"] = 4000
    d.write_config()
    d.ctl("reload")
    time.sleep(1.0)
    assert before <= delivers(), "deliver processes replaced needlessly"
    # The root moves: new deliver processes, the old ones gone.
    claims["store"]["root"] = os.path.join(ankusa.tmpdir(), "claims-b")
    d.write_config()
    d.ctl("reload")
    wait_until(lambda: not (before & delivers()), 15, 0.1,
               "the old deliver processes retired")
    assert delivers(), "no deliver process after the reload"
    wait_until(lambda: os.path.isdir(claims["store"]["root"]), 10, 0.1,
               "the new root made")
