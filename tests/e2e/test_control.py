# SPDX-License-Identifier: ISC
"""The control socket's limits (issue 25, section 3): its mode is set
before it listens (a umask around bind, no chmod after), it serves at
most CONTROL_MAX_CONNS (64) connections at once and refuses one more
clearly, and an accept that fails with EMFILE does not spin the master.
"""

import json
import os
import resource
import shutil
import signal
import socket
import stat
import subprocess
import time

import ankusa
from ankusa import Daemon, Skip, wait_until

MAX_CONNS = 64          # daemon/admin/admin_control.c CONTROL_MAX_CONNS


def _cpu_s(pid):
    """utime + stime of pid, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        st = f.read()
    fields = st[st.rfind(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def root_daemon():
    """A started daemon whose master stays root (node.user root):
    prlimit(2) on it from outside takes its uid or CAP_SYS_RESOURCE."""
    d = Daemon()
    d.extra["node"] = {"data_dir": d.data_dir, "user": "root"}
    d.write_config()
    return d.start()


def lowest_free_fd(pid):
    """The lowest descriptor pid has free: the next one accept takes (the
    children's channels sit above 1024, leaving holes below them)."""
    used = {int(f) for f in os.listdir("/proc/%d/fd" % pid)}
    return min(set(range(len(used) + 1)) - used)


def _ctl_request(path, cmd, timeout=5.0):
    """One request on a fresh connection: the answer's objects."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        s.sendall(json.dumps({"cmd": cmd}).encode() + b"\n")
        return _read_answer(s)
    finally:
        s.close()


def _read_answer(s):
    buf = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
        if buf.endswith(b"\n") and b'"end":true' in buf.splitlines()[-1]:
            break
    return [json.loads(l) for l in buf.splitlines() if l.strip()]


def test_control_mode_before_listen():
    """strace of the master: the control socket is bound under the umask
    that gives control.mode (0640 here), the umask is put back after, and
    nothing chmods the socket; the socket has that mode."""
    if shutil.which("strace") is None:
        raise Skip("strace not installed")
    d = Daemon()
    d.extra = {"control": {"socket": d.sock, "mode": "0640"}}
    d.write_config()
    trace = os.path.join(d.dir, "strace.out")
    log = open(d.logpath, "ab")
    d.proc = subprocess.Popen(
        ["strace", "-qq", "-o", trace, "-e",
         "trace=umask,bind,chmod,fchmod,fchmodat,listen",
         ankusa.binary("ankusad"), "-d", "-c", d.conf],
        stdin=subprocess.DEVNULL, stdout=log, stderr=log,
        # LeakSanitizer cannot run under ptrace (a sanitizer build).
        env=dict(d.env(), ASAN_OPTIONS="detect_leaks=0"),
        start_new_session=True)
    log.close()
    d.pid = d.proc.pid                  # destroy() kills the session
    wait_until(lambda: d.ctl("status", check=False)[0] == 0, timeout=30,
               what="ankusactl status through strace")
    mode = stat.S_IMODE(os.stat(d.sock).st_mode)
    assert mode == 0o640, oct(mode)
    kids = ankusa._proc_children(d.proc.pid)
    assert len(kids) == 1, kids
    os.kill(kids[0], signal.SIGTERM)
    assert d.proc.wait(30) == 0
    with open(trace) as f:
        lines = [l.strip() for l in f if l.strip()]
    at = [i for i, l in enumerate(lines)
          if l.startswith("bind(") and d.sock in l]
    assert len(at) == 1, lines
    i = at[0]
    assert lines[i].endswith("= 0"), lines[i]
    assert lines[i - 1].startswith("umask(0137)"), lines[i - 1:i + 1]
    old = lines[i - 1].rsplit("=", 1)[1].strip()
    assert lines[i + 1] == "umask(0137) = 0137" or \
        lines[i + 1].startswith("umask(%s)" % old), lines[i:i + 2]
    assert not [l for l in lines if "chmod" in l and d.sock in l], lines


def test_control_connection_cap():
    """64 idle connections are accepted and served; a 65th is refused with
    an error object naming the cap (ankusactl exits 1 saying so); once
    they close, commands work again."""
    d = Daemon().start()
    held = []
    try:
        for _ in range(MAX_CONNS):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(10)
            s.connect(d.sock)
            held.append(s)

        def refused():
            rc, out, err = d.ctl("status", check=False)
            return (rc, out + err) if "too many control connections" in \
                out + err else None
        rc, text = wait_until(refused, timeout=10,
                              what="ankusactl status refused at the cap")
        assert rc == 1, (rc, text)
        assert "(64)" in text, text
        ans = None
        for _ in range(3):
            try:
                ans = _ctl_request(d.sock, "status")
            except OSError:
                continue
            break
        assert ans and ans[-1]["ok"] is False and \
            "too many" in ans[-1]["error"], ans
        # The held connections were accepted, not refused: each answers.
        for s in (held[0], held[-1]):
            s.sendall(b'{"cmd":"status"}\n')
            a = _read_answer(s)
            assert a[-1]["ok"] is True and "pid" in a[-1], a
        assert "refusing one more" in d.log_text()
    finally:
        for s in held:
            s.close()
    wait_until(lambda: d.ctl("status", check=False)[0] == 0, timeout=10,
               what="status after the connections closed")
    assert d.stop() == 0


def test_control_emfile_no_spin():
    """With the master's descriptors nearly all used (a low RLIMIT_NOFILE
    set on the running master), connections that cannot be accepted
    (EMFILE) do not spin its loop: its CPU time stays low while they
    wait; once descriptors are back it accepts and answers them."""
    d = root_daemon()
    low = lowest_free_fd(d.pid)
    soft, hard = resource.prlimit(d.pid, resource.RLIMIT_NOFILE)
    held, waiting = [], []
    try:
        resource.prlimit(d.pid, resource.RLIMIT_NOFILE, (low + 2, hard))
        # Two are accepted (and held open); the rest wait in the backlog.
        for _ in range(10):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect(d.sock)
            except BlockingIOError:
                s.close()
                break
            held.append(s)

        time.sleep(0.5)
        cpu0 = _cpu_s(d.pid)
        time.sleep(3)
        used = _cpu_s(d.pid) - cpu0
        assert used < 0.3, "master used %.2f s of CPU in 3 s at EMFILE" % \
            used
        assert "control: accept; not accepting" in d.log_text()
        lines = d.log_text().count("control: accept; not accepting")
        assert lines <= 6, "%d EMFILE lines in ~3 s" % lines
        # A waiting connection's request is read once descriptors return.
        waiting = held[-1]
        waiting.setblocking(True)
        waiting.settimeout(10)
        waiting.sendall(b'{"cmd":"status"}\n')
        for s in held[:-1]:
            s.close()
        held = [waiting]
        resource.prlimit(d.pid, resource.RLIMIT_NOFILE, (soft, hard))
        a = _read_answer(waiting)
        assert a and a[-1]["ok"] is True and "pid" in a[-1], a
    finally:
        for s in held:
            s.close()
        try:
            resource.prlimit(d.pid, resource.RLIMIT_NOFILE, (soft, hard))
        except OSError:
            pass
    assert d.ctl("status", check=False)[0] == 0
    assert d.stop() == 0
