# SPDX-License-Identifier: ISC
"""The boundary between the master and its children (ankusad(8),
SECURITY): the children run as node.child_user, so that one that is
compromised can neither connect to the control socket, nor signal or
prlimit the master, nor read the config; shown by a probe
(tests/boundary_probe.c) the master runs in a child's place, with no
sandbox and under the deliver process's, and against the same probe run
as node.user, where each of those succeeds."""

import ctypes
import hashlib
import hmac
import json
import os
import pwd
import re
import shutil
import subprocess
import time

import ankusa
from ankusa import Daemon, note, wait_until

USER = ankusa.DAEMON_USER
CHILD_USER = ankusa.CHILD_USER

# The probe's checks and what a child may not do.
DENIED = {"connect": "Permission denied", "read": "Permission denied",
          "kill": "Operation not permitted",
          "prlimit": "Operation not permitted"}


def _needs_root():
    ankusa.needs_root_and_users("the children change user only when "
                                "ankusad starts as root")


def _probe_daemon(extra=None):
    """A daemon whose two edges are the probe: slot 0 without a sandbox,
    slot 1 in the deliver process's (the widest: it may open files and
    connect).  The config is as installed: root, group node.user, 0640."""
    lx = ankusa.tmpdir("libexec")
    d = Daemon(workers=2, extra=extra)
    script = os.path.join(lx, "ankusa-edge")
    with open(script, "w") as f:
        # argv: -g GEN -i INDEX [-d] [-v]
        f.write('#!/bin/sh\ncase "$4" in 0) k=none ;; *) k=deliver ;; '
                'esac\nexec %s "$k" %s %s "$@"\n' % (
                    ankusa.program("tests/boundary_probe"), d.sock,
                    d.conf))
    os.chmod(script, 0o755)
    for b in ("ankusa-deliver", "ankusa-gateway"):
        os.symlink(ankusa.program(b), os.path.join(lx, b))
    d.env_extra["ANKUSA_LIBEXECDIR"] = lx
    os.chown(d.conf, 0, pwd.getpwnam(USER).pw_gid)
    os.chmod(d.conf, 0o640)
    return d


def _results(d, kind):
    """{check: result} of the first probe of kind that finished."""
    log = d.log_since_start()
    m = re.search(r"boundary_probe: %s: uid (\d+) (\d+), master "
                  r"(\d+)\n((?:.*\n)*?).*boundary_probe: done" % kind, log)
    if m is None:
        return None
    out = {"uid": [int(m.group(i)) for i in (1, 2)],
           "master": int(m.group(3))}
    for line in m.group(4).splitlines():
        r = re.search(r"boundary_probe: ([a-z-]+): (.*)$", line)
        if r:
            out[r.group(1)] = r.group(2)
    return out


def _wait_probes(d):
    wait_until(lambda: _results(d, "none") and _results(d, "deliver"),
               15, 0.1, "both probes' results; log:\n%s" % (
                   d.log_since_start()[-3000:]))
    return _results(d, "none"), _results(d, "deliver")


def test_boundary_probe_as_child():
    """As node.child_user, with and without the deliver sandbox: the
    control socket, the master's signals and limits and the config are
    out of reach; signalling itself is not."""
    _needs_root()
    child = pwd.getpwnam(CHILD_USER)
    d = _probe_daemon()
    d.spawn()
    try:
        for r in _wait_probes(d):
            assert r["uid"] == [child.pw_uid] * 2, r
            assert r["master"] == d.pid, (r, d.pid)
            for check, want in DENIED.items():
                assert r[check] == want, (check, r)
            assert r["kill-self"] == "ok", r
        assert "privsep: the children run as %s" % CHILD_USER in \
            d.log_since_start()
        # The master is untouched: it still answers its operator.
        rc, out, err = d.ctl("status", check=False)
        assert rc == 0, (rc, out, err)
    finally:
        d.stop()
    note("probe as %s: %s" % (CHILD_USER, ", ".join(
        "%s %s" % kv for kv in sorted(DENIED.items()))))


def test_boundary_same_user_warned():
    """node.child_user set to node.user: the same probe signals the
    master, reads its limits and the config (what the boundary
    prevents), and the master warns at start.  (The control socket
    refuses node.user either way: control.c admits root and
    control.group only.)"""
    _needs_root()
    master = pwd.getpwnam(USER)
    d = _probe_daemon(extra={"node": {"child_user": USER}})
    d.extra["node"]["data_dir"] = d.data_dir
    d.write_config()
    os.chown(d.conf, 0, master.pw_gid)
    os.chmod(d.conf, 0o640)
    d.spawn()
    try:
        none, _ = _wait_probes(d)
        assert none["uid"] == [master.pw_uid] * 2, none
        assert none["read"] == "ok", none
        assert none["kill"] == "ok", none
        assert none["prlimit"] == "ok", none
        assert re.search(r"warning: privsep: node\.child_user is node\.user "
                         r"%s" % USER, d.log_since_start()), \
            d.log_since_start()
    finally:
        d.stop()


def test_boundary_unknown_child_user():
    """A node.child_user that does not exist: exit 78, naming it, before
    anything is opened."""
    _needs_root()
    d = Daemon(extra={"node": {"child_user": "ankusa-no-such-child"}})
    d.extra["node"]["data_dir"] = d.data_dir
    d.write_config()
    p = d.spawn()
    t0 = time.monotonic()
    while p.poll() is None and time.monotonic() - t0 < 10:
        time.sleep(0.05)
    assert p.returncode == 78, p.returncode
    assert "node.child_user ankusa-no-such-child: no such user" in \
        d.log_since_start(), d.log_since_start()


def _listen_inodes(port):
    """The inodes of the sockets listening on port (/proc/net/tcp{,6})."""
    out = set()
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(f).read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            cols = line.split()
            if cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == \
                    port:
                out.add(cols[9])
    return out


def _socket_inodes(pid):
    out = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except FileNotFoundError:
            continue
        if link.startswith("socket:["):
            out.add(link[len("socket:["):-1])
    return out


def test_boundary_listener_only_in_edges():
    """The ingest listener is held by the master and its edges alone: a
    deliver process or a gateway has no descriptor of it to shut down or
    set options on (the edges' filters refuse them that: check_sandbox)."""
    _needs_root()
    claims = {"ip": "127.0.0.1", "port": ankusa.free_port(),
              "store": {"type": "local",
                        "root": os.path.join(ankusa.tmpdir(), "claims")}}
    d = Daemon(extra={"claim_check": claims}).start()
    try:
        ingest = _listen_inodes(d.port)
        assert ingest, "no listener found on port %d" % d.port
        held = {}
        for p in ankusa._proc_children(d.pid):
            comm = ankusa.proc_comm(p)
            try:
                held.setdefault(comm, []).append(
                    bool(_socket_inodes(p) & ingest))
            except FileNotFoundError:
                continue
        assert held.get("ankusa-edge") and all(held["ankusa-edge"]), held
        for k in ("ankusa-deliver", "ankusa-gateway"):
            assert held.get(k), (k, held)
            assert not any(held[k]), (k, "holds the ingest listener")
    finally:
        d.stop()


def _capget(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1], 16)
    return None


def test_boundary_capability_start():
    """Started as node.user with CAP_SETUID, CAP_SETGID and CAP_KILL (the
    systemd unit's AmbientCapabilities, here by setpriv): the children
    run as node.child_user, the helper keeps those three, the master and
    the children have none; the probe is refused as under a root start."""
    _needs_root()
    child = pwd.getpwnam(CHILD_USER)
    d = _probe_daemon()
    caps = "+setuid,+setgid,+kill"
    d.launcher = ["setpriv", "--reuid=" + USER, "--regid=" + USER,
                  "--init-groups", "--inh-caps=" + caps,
                  "--ambient-caps=" + caps, "--"]
    d.spawn()
    try:
        none, sandboxed = _wait_probes(d)
        for r in (none, sandboxed):
            assert r["uid"] == [child.pw_uid] * 2, r
            for check, want in DENIED.items():
                assert r[check] == want, (check, r)
        log = d.log_since_start()
        assert "privsep: the children run as %s" % CHILD_USER in log, log
        assert "its capabilities dropped" in log, log
        # CapEff, CapPrm, CapAmb: the master none; its helper the three.
        for f in ("CapEff", "CapPrm", "CapAmb"):
            assert _capget(d.pid, f) == 0, (f, _capget(d.pid, f))
        # A child cloned and not yet executed is an "ankusad" too.
        helpers = []

        def one_helper():
            helpers[:] = [p for p in ankusa._proc_children(d.pid)
                          if ankusa.proc_comm(p) == "ankusad"]
            return len(helpers) == 1
        wait_until(one_helper, 5, 0.05, "one helper: %r" % helpers)
        want = (1 << 5) | (1 << 6) | (1 << 7)   # CAP_KILL, SETGID, SETUID
        assert _capget(helpers[0], "CapEff") == want, \
            hex(_capget(helpers[0], "CapEff"))
        rc, out, err = d.ctl("status", check=False)
        assert rc == 0, (rc, out, err)
    finally:
        d.stop()


def test_boundary_non_root_start_warned():
    """Started as node.user with no capability: no helper, the children
    run as the master's user, and the start says so as a warning."""
    _needs_root()
    master = pwd.getpwnam(USER)
    d = _probe_daemon()
    d.launcher = ["setpriv", "--reuid=" + USER, "--regid=" + USER,
                  "--init-groups", "--"]
    d.spawn()
    try:
        none, _ = _wait_probes(d)
        assert none["uid"] == [master.pw_uid] * 2, none
        assert none["kill"] == "ok", none
        assert re.search(r"warning: privsep: started as %s, not as root: "
                         r"the children run as %s too" % (USER, USER),
                         d.log_since_start()), d.log_since_start()
    finally:
        d.stop()


def _unit_syscalls():
    """The system calls the generated unit's SystemCallFilter= lines
    allow, each @group expanded by systemd-analyze syscall-filter."""
    exe = shutil.which("systemd-analyze")
    assert exe, "systemd-analyze is missing (scripts/test installs systemd)"
    unit = ankusa.binary("scripts/ankusad.service")
    names = []
    with open(unit) as f:
        for line in f:
            if line.startswith("SystemCallFilter="):
                names += line.split("=", 1)[1].split()
    assert names and not any(n.startswith("~") for n in names), names
    seen, out = set(), set()

    def expand(name):
        if name in seen:
            return
        seen.add(name)
        if not name.startswith("@"):
            out.add(name)
            return
        r = subprocess.run([exe, "syscall-filter", name],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, (name, r.stderr)
        for line in r.stdout.splitlines()[1:]:
            w = line.strip()
            if w and not w.startswith("#"):
                expand(w)
    for n in names:
        expand(n)
    return out


def _kernel_landlock():
    """The kernel's Landlock ABI, or 0 (asked outside any filter)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return max(libc.syscall(444, None, ctypes.c_size_t(0),
                            ctypes.c_uint32(1)), 0)


def _under_unit_filter(names):
    """A daemon started as the unit starts it (ankusa with its three
    capabilities) under a filter that allows names, EPERM otherwise."""
    lst = os.path.join(ankusa.tmpdir(), "syscalls-%d" % len(names))
    with open(lst, "w") as f:
        f.write("\n".join(sorted(names)) + "\n")
    os.chmod(lst, 0o644)
    d = Daemon(workers=1)
    caps = "+setuid,+setgid,+kill"
    d.launcher = ["setpriv", "--reuid=" + USER, "--regid=" + USER,
                  "--init-groups", "--inh-caps=" + caps,
                  "--ambient-caps=" + caps, "--",
                  ankusa.program("tests/unit_filter"), lst]
    # LeakSanitizer traces at exit, which the unit's filter refuses.
    d.env_extra["LSAN_OPTIONS"] = "detect_leaks=0"
    d.start()
    return d


def test_boundary_landlock_under_unit_filter():
    """The installed unit's SystemCallFilter= lets Landlock's calls
    through, so every child has its ruleset (status, /metrics); the same
    filter without them (the unit before) refuses them EPERM and each
    child says at start, as a warning, that it runs without Landlock."""
    _needs_root()
    allowed = _unit_syscalls()
    ll = {"landlock_create_ruleset", "landlock_add_rule",
          "landlock_restrict_self"}
    assert ll <= allowed, "the unit's filter lacks %s" % (ll - allowed)
    abi = _kernel_landlock()
    # A sanitizer build's children have no ruleset and no filter.
    sanitizers = _sanitizers()
    for names, want in ((allowed - ll, False),
                        (allowed, abi > 0 and not sanitizers)):
        d = _under_unit_filter(names)
        try:
            log = d.log_since_start()
            said = re.search(r"unit_filter: landlock: (.*)", log).group(1)
            if names is allowed:
                assert said == ("ABI %d" % abi if abi else said), said
                assert "Operation not permitted" not in said, said
            else:
                assert said == "Operation not permitted", said
            st = json.loads(d.ctl("status", json_out=True)[1])
            kinds = st["sandbox"]
            assert {"edge", "deliver"} <= set(kinds), kinds
            for k, f in kinds.items():
                assert f["landlock"] is want, (k, f, want)
                assert f["seccomp"] is not sanitizers, (k, f)
                assert f["no_new_privs"], (k, f)
            _, _, body = ankusa.get(d.admin_port, "/metrics")
            text = body.decode()
            for k in kinds:
                line = 'ankusa_sandbox{child="%s",feature="landlock"} %d' % (
                    k, 1 if want else 0)
                assert line in text, (line, [
                    x for x in text.splitlines() if "sandbox" in x])
            warned = re.findall(r"ankusa-(?:edge|deliver)\[\d+\]: "
                                r"warning: .*sandbox: no Landlock "
                                r"\(Operation not permitted: a seccomp "
                                r"filter above ankusad refuses", log)
            if want or names is allowed or sanitizers:
                assert not warned, warned
            else:
                assert warned, log[-3000:]
        finally:
            d.stop()
    note("kernel Landlock ABI %d; the unit's filter: %d calls" % (
        abi, len(allowed)))


def _sanitizers():
    """True for a build with --enable-sanitizers (no filters, no
    ruleset, dumpable)."""
    with open(ankusa.binary("config.h")) as f:
        return "#define ANKUSA_SANITIZERS 1" in f.read()


def test_boundary_not_dumpable():
    """The master and every child are not dumpable (PR_SET_DUMPABLE 0):
    their /proc/PID files are root's, though they run as ankusa and
    ankusa-child; ankusactl status says not_dumpable for each kind."""
    _needs_root()
    sanitizers = _sanitizers()
    d = Daemon().start()
    try:
        pids = [d.pid] + [p for p in ankusa._proc_children(d.pid)
                          if ankusa.proc_comm(p) != "ankusad"]
        assert len(pids) > 2, pids
        for p in pids:
            # A sanitizer build's master is left as its change of ids
            # leaves it (fs.suid_dumpable), its children dumpable.
            if sanitizers and p == d.pid:
                continue
            try:
                with open("/proc/%d/status" % p) as f:
                    real = int([x for x in f if x.startswith("Uid:")][0]
                               .split()[1])
                assert real != 0, (p, ankusa.proc_comm(p))
                want = real if sanitizers else 0
                # A child is so once it has entered its sandbox.
                wait_until(lambda: os.stat("/proc/%d/environ" % p)
                           .st_uid == want, 5, 0.05, "%s %d's /proc owned "
                           "by uid %d" % (ankusa.proc_comm(p), p, want))
            except FileNotFoundError:
                continue                # gone meanwhile (a respawn)
        st = json.loads(d.ctl("status", json_out=True)[1])
        for k, f in st["sandbox"].items():
            assert f["not_dumpable"] is (not sanitizers), (k, f)
    finally:
        d.stop()


def _signed(secret, body):
    return "sha256=" + hmac.new(secret.encode(), body,
                                hashlib.sha256).hexdigest()


def test_boundary_secret_from_root_file():
    """A source's secret in a file only root may read (${file:PATH}): read
    before the drop, the edge verifies with it (it gets the bytes, never
    the path); the config holding no secret of its own, no warning; a
    reload, as node.user, is refused naming the key and the path."""
    _needs_root()
    secret = "boundary-file-secret"
    path = os.path.join(ankusa.tmpdir(), "gh.secret")
    with open(path, "w") as f:
        f.write(secret + "\n")
    os.chmod(path, 0o600)
    d = Daemon(sources={"gh": {
        "verify": {"type": "github", "secret": "${file:%s}" % path},
        "sinks": [{"type": "log"}]}})
    d.start()
    try:
        os.chown(path, 0, 0)            # and root's alone after the start
        body = b'{"from":"file"}'
        st, h, data = ankusa.post(d.port, "/webhooks/gh", body, headers={
            "X-Hub-Signature-256": _signed(secret, body),
            "Content-Type": "application/json"})
        ankusa.expect_accepted(st, h, data, "signed with the file's secret")
        st, _, _ = ankusa.post(d.port, "/webhooks/gh", body, headers={
            "X-Hub-Signature-256": _signed(secret + "\n", body),
            "Content-Type": "application/json"})
        assert st == 401, st            # the newline was stripped
        assert "holds secrets" not in d.log_since_start()
        # A reload reads it as node.user, who may not: an error naming
        # the key and the path, and the config in force kept.
        rc, out, err = d.ctl("reload", check=False)
        assert rc == 1, (rc, out, err)
        assert "sources.gh.verify.secret: cannot read %s: Permission " \
            "denied" % path in out + err, (out, err)
        st, h, data = ankusa.post(d.port, "/webhooks/gh", body, headers={
            "X-Hub-Signature-256": _signed(secret, body),
            "Content-Type": "application/json"})
        ankusa.expect_accepted(st, h, data, "after the refused reload")
    finally:
        d.stop()


def test_boundary_readable_config_with_secret_warned():
    """A config that writes a secret in its text and that every user may
    read: a warning at the start naming the file, its mode and the key;
    the same file 0640 (group node.user's): none."""
    _needs_root()
    d = Daemon(sources={"gh": {
        "verify": {"type": "github", "secret": "written-in-the-file"},
        "sinks": [{"type": "log"}]}})
    os.chmod(d.conf, 0o644)
    d.start()
    want = re.compile(r"warning: config: %s holds secrets \(sources\.gh\."
                      r"verify\.secret, and maybe more\) and every user can "
                      r"read it \(mode 0644\)" % re.escape(d.conf))
    try:
        assert want.search(d.log_since_start()), d.log_since_start()
    finally:
        d.stop()
    os.chown(d.conf, 0, pwd.getpwnam(USER).pw_gid)
    os.chmod(d.conf, 0o640)
    d.start()
    try:
        assert "holds secrets" not in d.log_since_start()
    finally:
        d.stop()
