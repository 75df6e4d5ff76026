# SPDX-License-Identifier: ISC
"""Who may use the admin API and the control socket (issue 36, section 1).

Every route of the route tables (read from daemon/admin/admin_api*.c, so
that a route added without a scope, or without its line in ankusad(8),
fails here) is refused without a token (401, WWW-Authenticate: Bearer),
refused with a token that has every scope but its own (403 naming the
scope), and admitted with a token that has only its own; /health and
/ready stay open.  token, token_file (root's alone: read before the
privilege drop) and token_sha256 all work; near misses of a token are
refused.  /metrics opens with admin.metrics_public.  No token and a
non-loopback admin.ip is exit 78.  Host, Origin and Content-Type are
checked; the listener caps its connections, bounds a head's and a body's
time and survives EMFILE.  The control socket admits root and
control.group by the peer's credentials, and refuses node.user and
strangers with a clear line.
"""

import hashlib
import json
import os
import re
import resource
import signal
import socket
import stat
import subprocess
import time

import ankusa
from ankusa import Daemon, Raw, head_bytes, request, wait_until
from test_control import _cpu_s, lowest_free_fd, root_daemon

SCOPES = {
    "SCOPE_CONFIG_READ": "config:read",
    "SCOPE_HOOKS_READ": "hooks:read",
    "SCOPE_HOOKS_READ_BODY": "hooks:read_body",
    "SCOPE_HOOKS_WRITE": "hooks:write",
    "SCOPE_DLQ_READ": "dlq:read",
    "SCOPE_DLQ_WRITE": "dlq:write",
    "SCOPE_REPLAYS_READ": "replays:read",
    "SCOPE_REPLAYS_WRITE": "replays:write",
    "SCOPE_QUARANTINE_READ": "quarantine:read",
    "SCOPE_QUARANTINE_WRITE": "quarantine:write",
    "SCOPE_RATE_LIMITS_READ": "rate_limits:read",
    "SCOPE_RATE_LIMITS_WRITE": "rate_limits:write",
    "SCOPE_SINKS_WRITE": "sinks:write",
    "SCOPE_SOURCES_WRITE": "sources:write",
    "SCOPE_BACKUP_WRITE": "backup:write",
    "SCOPE_AUDIT_READ": "audit:read",
    "SCOPE_METRICS_READ": "metrics:read",
}
# What a {} of a pattern is filled with: ids that name nothing, so that a
# route admitted answers 400, 404 or 409 and changes nothing.
PARAM = "nosuch"
HOOK_ID = "0190a6d4-0000-7000-8000-000000000000"
ROUTE_RE = re.compile(r'\{\s*ADMIN_(GET|POST|PUT|PATCH|DELETE),\s*"([^"]+)",'
                      r'\s*(SCOPE_[A-Z_]+),', re.S)


def routes():
    """[(method, pattern, scope name or None)] of every route table."""
    d = os.path.join(ankusa.SRCDIR, "daemon", "admin")
    out = []
    for n in sorted(os.listdir(d)):
        if n.startswith("admin_api") and n.endswith(".c"):
            with open(os.path.join(d, n)) as f:
                for m, pat, sc in ROUTE_RE.findall(f.read()):
                    assert sc == "SCOPE_NONE" or sc in SCOPES, (n, pat, sc)
                    out.append((m, pat, SCOPES.get(sc)))
    assert len(out) >= 25, out
    return out


def fill(pattern):
    path = pattern.replace("/v1/hooks/{}", "/v1/hooks/" + HOOK_ID)
    return path.replace("{}", PARAM)


def token_for(name):
    return "tok-%s-%s" % (name, ankusa.ADMIN_TOKEN[-8:])


def scoped_tokens():
    """Per scope, a token of that scope alone (only-*) and one of every
    other (not-*)."""
    toks = ankusa.admin_tokens()
    for sc in SCOPES.values():
        n = sc.replace(":", "-")
        toks.append({"name": "only-" + n, "token": token_for("only-" + n),
                     "scopes": [sc]})
        toks.append({"name": "not-" + n, "token": token_for("not-" + n),
                     "scopes": [o for o in SCOPES.values() if o != sc]})
    return toks


def call(d, method, path, token=None, body=None, headers=None):
    h = {"Authorization": "Bearer " + token if token else None}
    h.update(headers or {})
    st, hdrs, data = request(d.admin_port, method, path, body, headers=h,
                             timeout=30)
    try:
        doc = json.loads(data) if data else None
    except ValueError:
        doc = None
    return st, hdrs, doc


def raw_call(d, method, path, headers, body=None, timeout=10):
    r = Raw(d.admin_port, timeout)
    try:
        r.send(head_bytes(method, path, headers, body))
        return r.read_response()
    finally:
        r.close()


def test_admin_auth_scopes_every_route():
    """Each route: 401 without a token, 403 naming its scope with every
    other scope, admitted with its own alone; ankusad(8) lists each
    route with its scope."""
    d = Daemon()
    d.admin["tokens"] = scoped_tokens()
    d.write_config()
    d.start()
    with open(os.path.join(ankusa.SRCDIR, "daemon", "ankusad.8.in")) as f:
        man = f.read()
    seen = set()
    for method, pat, scope in routes():
        path = fill(pat)
        body = b"{}" if method in ("POST", "PUT", "PATCH") else None
        what = "%s %s" % (method, pat)
        line = "%s %s" % (method, pat)
        # /v1/whoami is open to any valid token, whatever its scopes.
        anytoken = pat == "/v1/whoami"
        assert re.search(r"^%s +%s( |$)" % (
            re.escape(line), re.escape(scope or ("(any token)" if anytoken
                                                 else "(open)"))), man,
            re.M), \
            "ankusad(8) does not list %s with its scope %s" % (line, scope)
        if anytoken:
            assert call(d, method, path)[0] == 401, what
            for sc in SCOPES.values():
                st, _, doc = call(d, method, path,
                                  token_for("only-" + sc.replace(":", "-")))
                assert st == 200 and doc["scopes"] == [sc], (what, st, doc)
            continue
        if scope is None:
            st, _, doc = call(d, method, path)
            assert st == 200, (what, st, doc)
            continue
        seen.add(scope)
        st, hdrs, doc = call(d, method, path, body=body)
        assert st == 401 and doc == {"error": "unauthenticated"}, \
            (what, st, doc)
        assert hdrs.get("www-authenticate") == "Bearer", (what, hdrs)
        n = scope.replace(":", "-")
        st, _, doc = call(d, method, path, token_for("not-" + n), body)
        assert st == 403 and doc == {"error": "forbidden", "scope": scope}, \
            (what, st, doc)
        st, _, doc = call(d, method, path, token_for("only-" + n), body)
        assert st not in (401, 403, 405, 415), (what, st, doc)
        st, _, doc = call(d, method, path, ankusa.ADMIN_TOKEN, body)
        assert st not in (401, 403, 405, 415), ("*", what, st, doc)
    # Every scope a route names was tried.
    assert "dlq:write" in seen and "metrics:read" in seen, seen
    # A path with no route: a valid token learns it is 404, no token 401.
    assert call(d, "GET", "/v1/nothing")[0] == 401
    assert call(d, "GET", "/v1/nothing", ankusa.ADMIN_TOKEN)[0] == 404
    assert d.stop() == 0


def test_admin_auth_token_forms():
    """token_file (mode 0600, root's: read before the drop), token_sha256
    and token are each a credential; a token off by its last byte, its
    prefix, one with a byte more, an empty one and another scheme are
    refused; /v1/config names the tokens and never shows one."""
    d = Daemon()
    tfile = os.path.join(ankusa.tmpdir("secrets"), "admin.token")
    os.chmod(os.path.dirname(tfile), 0o700)
    filed = "filed-" + os.urandom(12).hex()
    with open(tfile, "w") as f:
        f.write(filed + "\n")
    os.chmod(tfile, 0o600)
    hashed = "hashed-" + os.urandom(12).hex()
    d.admin["tokens"] = ankusa.admin_tokens() + [
        {"name": "filed", "token_file": tfile, "scopes": ["config:read"]},
        {"name": "hashed", "token_sha256":
         hashlib.sha256(hashed.encode()).hexdigest().upper(),
         "scopes": ["dlq:read", "config:read"]},
    ]
    d.write_config()
    d.start()
    st, _, doc = call(d, "GET", "/v1/config", filed)
    assert st == 200, (st, doc)
    text = json.dumps(doc)
    for secret in (filed, hashed, ankusa.ADMIN_TOKEN):
        assert secret not in text, "a token shows in /v1/config"
    toks = doc["admin"]["tokens"]
    assert [t["name"] for t in toks] == ["e2e", "filed", "hashed"], toks
    assert toks[0]["scopes"] == ["*"] and toks[1]["token_file"] == \
        "<redacted>", toks
    assert call(d, "GET", "/v1/dlq", filed)[0] == 403
    assert call(d, "GET", "/v1/dlq", hashed)[0] == 200
    tok = ankusa.ADMIN_TOKEN
    for bad in (tok[:-1] + ("0" if tok[-1] != "0" else "1"), tok[:-1],
                tok + "x", "x" * len(tok), hashlib.sha256(
                    hashed.encode()).hexdigest()):
        st, _, doc = call(d, "GET", "/v1/dlq", bad)
        assert st == 401 and doc == {"error": "unauthenticated"}, (bad, st)
    for hdr in ("Bearer", "Bearer ", "Basic " + tok, tok, "bearer " + tok):
        st, _, _ = call(d, "GET", "/v1/dlq", headers={"Authorization": hdr})
        assert st == (200 if hdr.startswith("bearer ") else 401), (hdr, st)
    # The tokens survive a reload (the file is not read again).
    d.ctl("reload")
    assert call(d, "GET", "/v1/config", filed)[0] == 200
    assert call(d, "GET", "/v1/dlq", hashed)[0] == 200
    assert d.stop() == 0


def test_admin_auth_config_errors():
    """A bad entry is a config error naming its key: two credentials, none,
    an unknown scope, a name twice, a bad digest, a relative file."""
    d = Daemon()
    cases = [
        ({"name": "a", "token": "x", "token_file": "/x", "scopes": ["*"]},
         r"admin\.tokens\[1\] must have exactly one of token, token_file "
         r"and token_sha256, got 2"),
        ({"name": "a", "scopes": ["*"]},
         r"admin\.tokens\[1\] must have exactly one of .*got 0"),
        ({"name": "a", "token": "x", "scopes": ["dlq:wrote"]},
         r"admin\.tokens\[1\]\.scopes\[0\]: unknown scope dlq:wrote"),
        ({"name": "e2e", "token": "x", "scopes": ["*"]},
         r"admin\.tokens\[1\]\.name: e2e is the name of another token"),
        ({"name": "a", "token_sha256": "abc", "scopes": ["*"]},
         r"admin\.tokens\[1\]\.token_sha256 must be 64 hex digits"),
        ({"name": "a", "token_file": "rel/path", "scopes": ["*"]},
         r"admin\.tokens\[1\]\.token_file must be an absolute path"),
        ({"name": "a", "token": "x", "scopes": []},
         r"admin\.tokens\[1\]\.scopes must be a non-empty list"),
    ]
    for entry, want in cases:
        d.admin["tokens"] = ankusa.admin_tokens() + [entry]
        d.write_config()
        rc, out = ankusa.check_config(d.conf)
        assert rc == 78 and re.search(want, out), (entry, rc, out)
    # A token_file that cannot be read: exit 78 at start, naming it.
    d.admin["tokens"] = [{"name": "a", "token_file": "/nonexistent/tok",
                          "scopes": ["*"]}]
    d.write_config()
    p = d.spawn()
    assert p.wait(15) == 78
    assert "admin.tokens[0].token_file /nonexistent/tok: No such file" in \
        d.log_text(), d.log_text()


def test_admin_auth_metrics_public():
    """admin.metrics_public opens /metrics and nothing else."""
    d = Daemon()
    d.admin["metrics_public"] = True
    d.write_config()
    d.start()
    st, _, _ = call(d, "GET", "/metrics")
    assert st == 200
    assert call(d, "GET", "/v1/dlq")[0] == 401
    d.admin["metrics_public"] = False
    d.write_config()
    d.ctl("reload")
    assert call(d, "GET", "/metrics")[0] == 401
    assert call(d, "GET", "/metrics", ankusa.ADMIN_TOKEN)[0] == 200
    assert d.stop() == 0


def test_admin_auth_no_token():
    """No token: a non-loopback admin.ip is refused (ankusad -n and the
    start, exit 78, saying why); on loopback the API is served open with
    a warning at start."""
    d = Daemon()
    d.admin = {"ip": "0.0.0.0", "port": d.admin_port}
    d.write_config()
    rc, out = ankusa.check_config(d.conf)
    assert rc == 78 and "admin.ip 0.0.0.0 is not a loopback address, and " \
        "admin.tokens is empty" in out, (rc, out)
    p = d.spawn()
    assert p.wait(15) == 78
    assert "admin.ip 0.0.0.0 is not a loopback address" in d.log_text()
    d.admin = {"ip": "127.0.0.1", "port": d.admin_port}
    d.write_config()
    d.start()
    assert "admin.tokens is empty: the admin API on 127.0.0.1:%d is open" % \
        d.admin_port in d.log_text()
    st, _, doc = call(d, "GET", "/v1/dlq")
    assert st == 200, (st, doc)
    assert d.stop() == 0


def test_admin_auth_host_origin_ctype():
    """A Host that is not the listener is 403 bad_host (a rebound name);
    an Origin not the Host is 403 bad_origin, even with a good token (a
    page of another site); a write's body must be application/json
    (415).  localhost, the address with and without the port, the
    connection's own address and admin.hosts pass."""
    d = Daemon()
    d.admin["hosts"] = ["admin.example", "lb.example:8443"]
    d.write_config()
    d.start()
    auth = ("Authorization", "Bearer " + ankusa.ADMIN_TOKEN)
    port = d.admin_port
    for host, ok in (("127.0.0.1:%d" % port, True), ("127.0.0.1", True),
                     ("localhost:%d" % port, True), ("LOCALHOST", True),
                     ("admin.example", True), ("admin.example:9", True),
                     ("lb.example:8443", True), ("lb.example:8444", False),
                     ("lb.example", False), ("evil.example", False),
                     ("evil.example:%d" % port, False),
                     ("127.0.0.1:%d" % (port + 1), False),
                     ("127.0.0.10:%d" % port, False)):
        r = raw_call(d, "GET", "/v1/dlq", [("Host", host), auth])
        if ok:
            assert r.status == 200, (host, r)
        else:
            assert r.status == 403 and r.json() == {
                "error": "bad_host", "message": "the Host header does not "
                "name this listener (admin.hosts lists more names)"}, \
                (host, r)
    # /health too: no rebound name reads anything.
    r = raw_call(d, "GET", "/health", [("Host", "evil.example")])
    assert r.status == 403 and r.json()["error"] == "bad_host", r
    # The required one: a cross-site request, token or not.
    for hdrs in ([("Host", "127.0.0.1:%d" % port),
                  ("Origin", "http://evil.example")],
                 [("Host", "127.0.0.1:%d" % port),
                  ("Origin", "http://evil.example"), auth],
                 [("Host", "127.0.0.1:%d" % port), ("Origin", "null"), auth]):
        for method, path in (("GET", "/v1/dlq"), ("POST", "/v1/retry-now"),
                             ("DELETE", "/v1/dlq?all=true")):
            r = raw_call(d, method, path, hdrs + [("Content-Length", "0")])
            assert r.status == 403 and r.json()["error"] == "bad_origin", \
                (method, hdrs, r)
    r = raw_call(d, "GET", "/v1/dlq", [("Host", "127.0.0.1:%d" % port),
                                       ("Origin", "http://127.0.0.1:%d" %
                                        port), auth])
    assert r.status == 200, r
    # Writes: JSON only.
    for ct in ("text/plain", "application/x-www-form-urlencoded",
               "multipart/form-data; boundary=x", "application/jsonx"):
        st, _, doc = call(d, "POST", "/v1/retry-now", ankusa.ADMIN_TOKEN,
                          b"{}", headers={"Content-Type": ct})
        assert st == 415 and doc["error"] == "unsupported_media_type" and \
            "application/json" in doc["message"], (ct, st, doc)
    st, _, doc = call(d, "POST", "/v1/retry-now", ankusa.ADMIN_TOKEN, b"{}",
                      headers={"Content-Type": "application/json; "
                               "charset=utf-8"})
    assert st == 200, (st, doc)
    r = raw_call(d, "POST", "/v1/retry-now", [
        ("Host", "127.0.0.1:%d" % port), auth, ("Content-Length", "2")],
        b"{}")
    assert r.status == 415, r
    r = raw_call(d, "POST", "/v1/retry-now", [
        ("Host", "127.0.0.1:%d" % port), auth, ("Content-Length", "0")])
    assert r.status == 200, r
    assert d.stop() == 0


def _closed_after(r, lo, hi):
    """r is closed by the daemon later than lo s and within hi s."""
    t0 = time.monotonic()
    assert not r.closed_by_peer(lo), "closed before %.1f s" % lo
    assert r.closed_by_peer(hi - lo), "still open after %.1f s" % hi
    return time.monotonic() - t0


def test_admin_auth_deadlines():
    """A head trickled a byte at a time (each well within the idle
    timeout) is cut at admin.head_timeout_ms; a body at
    admin.body_timeout_ms after its head; a keep-alive connection's next
    head has its own deadline; a whole request in time is answered."""
    d = Daemon()
    d.admin.update({"head_timeout_ms": 1000, "body_timeout_ms": 2000})
    d.write_config()
    d.start()
    head = head_bytes("GET", "/v1/dlq", [
        ("Host", "127.0.0.1:%d" % d.admin_port),
        ("Authorization", "Bearer " + ankusa.ADMIN_TOKEN)])
    r = Raw(d.admin_port)
    t0 = time.monotonic()
    closed = False
    for b in head[:-2]:
        try:
            r.send(bytes([b]))
        except OSError:
            closed = True
            break
        if r.readable(0.1) and r.closed_by_peer(0.01):
            closed = True
            break
        if time.monotonic() - t0 > 5:
            break
    took = time.monotonic() - t0
    assert closed and 0.8 < took < 2.0, (closed, took)
    r.close()
    # The body's deadline runs from the head.
    r = Raw(d.admin_port)
    r.send(head_bytes("POST", "/v1/retry-now", [
        ("Host", "127.0.0.1:%d" % d.admin_port),
        ("Authorization", "Bearer " + ankusa.ADMIN_TOKEN),
        ("Content-Type", "application/json"), ("Content-Length", "10")],
        b"{"))
    _closed_after(r, 1.5, 3.0)
    r.close()
    # Keep-alive: one answer, then the next head's deadline.
    r = Raw(d.admin_port)
    r.send(head)
    assert r.read_response().status == 200
    time.sleep(0.5)
    r.send(head)
    assert r.read_response().status == 200
    _closed_after(r, 0.5, 2.0)
    r.close()
    assert "admin: a request's head did not arrive in time" in d.log_text()
    assert d.stop() == 0


def test_admin_auth_connection_cap():
    """admin.max_conns idle connections hold the listener: one more waits
    unanswered in the backlog, and is answered once one of them closes."""
    d = Daemon()
    d.admin.update({"max_conns": 3, "head_timeout_ms": 30000})
    d.write_config()
    d.start()
    idle = [Raw(d.admin_port) for _ in range(3)]
    time.sleep(0.3)
    r = Raw(d.admin_port)
    r.send(head_bytes("GET", "/health", [
        ("Host", "127.0.0.1:%d" % d.admin_port)]))
    assert not r.readable(1.5), "a 4th connection was served"
    idle[0].close()
    assert r.read_response(timeout=5).status == 200
    for c in idle[1:] + [r]:
        c.close()
    # The cap's connections gone, it serves again at once.
    wait_until(lambda: request(d.admin_port, "GET", "/health",
                               timeout=2)[0] == 200, what="served again")
    assert d.stop() == 0


def test_admin_auth_emfile_no_spin():
    """With the master out of descriptors, connections to the admin port
    that cannot be accepted do not spin its loop; once descriptors are
    back, a waiting one is answered."""
    d = root_daemon()
    low = lowest_free_fd(d.pid)
    soft, hard = resource.prlimit(d.pid, resource.RLIMIT_NOFILE)
    held = []
    try:
        resource.prlimit(d.pid, resource.RLIMIT_NOFILE, (low + 2, hard))
        for _ in range(8):
            held.append(Raw(d.admin_port))
        time.sleep(0.5)
        cpu0 = _cpu_s(d.pid)
        time.sleep(3)
        spent = _cpu_s(d.pid) - cpu0
        assert spent < 0.3, "master used %.2f s of CPU in 3 s" % spent
        n = d.log_text().count("admin: accept; not accepting")
        assert 1 <= n <= 6, n
        waiting = held[-1]
        waiting.send(head_bytes("GET", "/health", [
            ("Host", "127.0.0.1:%d" % d.admin_port)]))
        for c in held[:-1]:
            c.close()
        held = [waiting]
        resource.prlimit(d.pid, resource.RLIMIT_NOFILE, (soft, hard))
        assert waiting.read_response(timeout=10).status == 200
    finally:
        for c in held:
            c.close()
        try:
            resource.prlimit(d.pid, resource.RLIMIT_NOFILE, (soft, hard))
        except OSError:
            pass
    assert d.stop() == 0


# ------------------------------------------------------------ control socket

def _group():
    """An existing group for control.group: (name, gid)."""
    import grp
    for n in ("staff", "adm", "users"):
        try:
            return n, grp.getgrnam(n).gr_gid
        except KeyError:
            pass
    raise AssertionError("no group staff, adm or users on this host")


def _ctl_as(d, uid, gid, groups=()):
    """ankusactl status run as uid:gid with the supplementary groups:
    (exit status, its output)."""
    argv = ["setpriv", "--reuid=%d" % uid, "--regid=%d" % gid]
    argv += ["--groups=" + ",".join(str(g) for g in groups)] if groups \
        else ["--clear-groups"]
    argv += [ankusa.program("ankusactl"), "-s", d.sock, "status"]
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=20)
    return r.returncode, (r.stdout + r.stderr).decode("utf-8", "replace")


def test_control_peer_credentials():
    """With control.group set (and a mode that lets anyone connect, so
    that the credentials decide): root, a user whose primary group it is
    and one who has it as a supplementary group are admitted; node.user,
    even in the group, and a stranger are refused with a line that says
    why, and the refusal is logged."""
    name, gid = _group()
    daemon_uid = ankusa.pwd.getpwnam(ankusa.DAEMON_USER).pw_uid
    d = Daemon()
    d.extra["control"] = {"socket": d.sock, "mode": "0666", "group": name}
    d.write_config()
    d.start()
    st = os.stat(d.sock)
    assert (st.st_uid, st.st_gid) == (0, gid), (st.st_uid, st.st_gid)
    assert d.ctl("status")[0] == 0
    rc, out = _ctl_as(d, 4242, 4242)
    assert rc != 0 and "not allowed: uid 4242 is not root nor a member of " \
        "control.group" in out, (rc, out)
    rc, out = _ctl_as(d, daemon_uid, gid, (gid,))
    assert rc != 0 and "uid %d is node.user" % daemon_uid in out, (rc, out)
    rc, out = _ctl_as(d, 4243, 4243, (gid,))
    assert rc == 0 and "pid" in out, (rc, out)
    rc, out = _ctl_as(d, 4244, gid)
    assert rc == 0, (rc, out)
    assert "control: refused: uid 4242 is not root" in d.log_text()
    assert d.stop() == 0


def test_control_root_only_by_default():
    """No control.group: the socket is root's (root's group), root is
    admitted and node.user is refused even when the mode would let it
    connect; a raw connect gets the error line and the close."""
    d = Daemon()
    d.extra["control"] = {"socket": d.sock, "mode": "0666"}
    d.write_config()
    d.start()
    st = os.stat(d.sock)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == \
        (0, 0, 0o666), st
    assert d.ctl("status")[0] == 0
    daemon = ankusa.pwd.getpwnam(ankusa.DAEMON_USER)
    rc, out = _ctl_as(d, daemon.pw_uid, daemon.pw_gid)
    assert rc != 0 and "node.user" in out, (rc, out)
    # The refusal may close the socket before ankusactl has written its
    # request: it still says why, every time (no SIGPIPE).
    for _ in range(30):
        rc, out = _ctl_as(d, 4242, 4242)
        assert rc == 1 and "(control.group is unset)" in out, (rc, out)
    # A raw client as a stranger: one error line, then the close.
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgroups([])
            os.setgid(4242)
            os.setuid(4242)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(5)
            s.connect(d.sock)
            # The refusal may come (and the close) before this is sent.
            signal.signal(signal.SIGPIPE, signal.SIG_IGN)
            try:
                s.sendall(b'{"cmd":"drain"}\n')
            except OSError:
                pass
            data = b""
            while True:
                try:
                    c = s.recv(4096)
                except ConnectionResetError:
                    break
                if not c:
                    break
                data += c
            doc = json.loads(data.splitlines()[0])
            if doc["ok"] is False and doc["end"] is True and \
                    doc["error"].startswith("not allowed: uid 4242"):
                code = 0
            else:
                os.write(2, b"refusal: %r\n" % data)
        except Exception as e:
            os.write(2, b"raw client: %r\n" % e)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    # The drain it asked for did not happen.
    assert d.running() and d.ctl("status")[0] == 0
    assert d.stop() == 0
