# SPDX-License-Identifier: ISC
"""The children's start (ankusad(8), ENVIRONMENT): the master executes each
edge, deliver process and claim gateway with an environment made for its
kind, of the variables it reads and nothing else of the master's: no
NOTIFY_SOCKET, WATCHDOG_*, LISTEN_*, no variable that its part of the
configuration does not name (a provider's secret only in the edges), AWS_*
only where a sink or the claim store takes its credentials from them.  The
root helper, forked and never executed, keeps no variable.  A child that
the daemon's user may not execute is named in the log with the reason."""

import hashlib
import hmac
import os
import shutil

import ankusa
from ankusa import (Daemon, FakeSQS, Skip, TestSink, _proc_children,
                    executed_children, expect_accepted, post,
                    proc_alive, proc_comm, proc_environ, wait_until)

KINDS = ankusa.DAEMON_PROGRAMS[1:]         # the children's programs
GH_SECRET = "CHILDENV-gh-verify-secret"

# What the master's environment holds besides the harness's: the service
# manager's, socket activation's, secrets no child's part names, and the
# variables some kind of child reads.
MASTER_ENV = {
    "NOTIFY_SOCKET": "/nonexistent/ankusa-notify",
    "WATCHDOG_USEC": "400000",
    "WATCHDOG_PID": "1",
    "LISTEN_FDS": "2",
    "LISTEN_PID": "1",
    "LISTEN_FDNAMES": "http:admin",
    "CHILDENV_GH_SECRET": GH_SECRET,
    "CHILDENV_SINK_PATH": "in",
    "CHILDENV_UNNAMED_SECRET": "CHILDENV-nobody-names-it",
    "DATABASE_PASSWORD": "CHILDENV-db-password",
    "AWS_ACCESS_KEY_ID": "AKIACHILDENV",
    "AWS_SECRET_ACCESS_KEY": "CHILDENV-aws-secret",
    "AWS_REGION": "us-east-1",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "127.0.0.1,localhost",
    "TZ": "UTC0",
    "LD_LIBRARY_PATH": "/nonexistent/ankusa-lib",
    "ANKUSA_LOG_LEVEL": "info",
}
# Every AWS_* of the master's (the harness's own environment may hold
# more, e.g. AWS_CA_BUNDLE).
AWS = {n for n in list(os.environ) + list(MASTER_ENV)
       if n.startswith("AWS_")}
PROXIES = {"HTTPS_PROXY", "NO_PROXY"}
# Read by every kind when the master has them (the harness's own
# environment may): not asserted either way.
OPTIONAL = {"JOURNAL_STREAM", "OPENSSL_CONF", "ASAN_OPTIONS", "LSAN_OPTIONS",
            "UBSAN_OPTIONS"}


def _check(d, want_names, want=None):
    """Every child executed of each kind has the master's values of the
    names want_names[kind] (a set) and nothing else but OPTIONAL."""
    master = d.env()
    kids = executed_children(d, want or {k: 1 for k in want_names})
    for kind, names in want_names.items():
        for pid in kids.get(kind, []):
            env = proc_environ(pid)
            if env is None:
                continue
            got = set(env) - OPTIONAL
            assert got == names, "%s %d: %s, want %s" % (
                kind, pid, sorted(got), sorted(names))
            for n in names:
                assert env[n] == master.get(n) or (
                    n == "ANKUSA_NODE_ROLE" and env[n] == "single"), \
                    "%s %d: %s=%r, the master's %r" % (
                        kind, pid, n, env[n], master.get(n))
    return kids


def _root_helper(d):
    for p in _proc_children(d.pid):
        if proc_alive(p) and proc_comm(p) == "ankusad" and \
                os.stat("/proc/%d" % p).st_uid == 0:
            return p
    return None


def test_children_environment():
    """Each kind of child gets what it reads: the edges the variable of
    their source's secret, the deliver processes and the gateways that of
    their claim store, the deliver processes the proxy's; every kind TZ
    and the ANKUSA_* override of a key of its part.  None gets the
    service manager's, socket activation's or an unnamed secret, nor
    AWS_* while no sink and no claim store reads them.  A reload that adds
    an sqs sink without credentials starts deliver processes that have
    AWS_* (and deliver with them); the edges and gateways still do not."""
    sink = TestSink().start()
    sqs = FakeSQS().start()
    claims = ankusa.tmpdir("claims")
    src = {"verify": {"type": "github", "secret": "${CHILDENV_GH_SECRET}"},
           "retry": dict(ankusa.FAST_RETRY),
           "sinks": [{"type": "http",
                      "url": sink.url("/${CHILDENV_SINK_PATH}")}]}
    d = Daemon(sources={"gh": src}, workers=2,
               extra={"claim_check": {
                   "ip": "127.0.0.1", "port": ankusa.free_port(),
                   "store": {"type": "local",
                             "root": "${CHILDENV_CLAIMS}"}}})
    d.env_extra = dict(MASTER_ENV, CHILDENV_CLAIMS=claims)
    d.start()

    base = {"TZ", "LD_LIBRARY_PATH", "ANKUSA_LOG_LEVEL"}
    want = {"ankusa-edge": base | {"CHILDENV_GH_SECRET", "ANKUSA_NODE_ROLE"},
            "ankusa-deliver": base | {"CHILDENV_CLAIMS"} | PROXIES,
            "ankusa-gateway": base | {"CHILDENV_CLAIMS"}}
    _check(d, want)

    # The edge verifies with the secret it got, the deliver process
    # sends to the URL the master resolved.
    body = b'{"childenv":1}'
    sig = hmac.new(GH_SECRET.encode(), body, hashlib.sha256).hexdigest()
    hid = expect_accepted(*post(d.port, "/webhooks/gh", body, headers={
        "X-Hub-Signature-256": "sha256=" + sig}))
    wait_until(lambda: hid in sink.ids("/in", 200), 10, 0.05,
               "the hook delivered to /in")

    # An sqs sink that takes its credentials from AWS_*: a new generation
    # of deliver processes, which have them.
    before = set(executed_children(d, {"ankusa-deliver": 1})[
        "ankusa-deliver"])
    q = sqs.sink()
    del q["access_key_id"], q["secret_access_key"]
    src["sinks"].append(q)
    d.write_config()
    d.ctl("reload")
    wait_until(lambda: not before & set(executed_children(
        d, {"ankusa-deliver": 1})["ankusa-deliver"]), 15, 0.05,
        "the deliver processes of before replaced")
    want["ankusa-deliver"] = want["ankusa-deliver"] | AWS
    _check(d, want)
    hid = expect_accepted(*post(d.port, "/webhooks/gh", body, headers={
        "X-Hub-Signature-256": "sha256=" + sig}))
    wait_until(lambda: any(e["body"].get("id") == hid
                           for e in sqs.entries()), 15, 0.05,
               "the hook sent to SQS with the AWS_* credentials")


test_children_environment.timeout = 90


def test_root_helper_environment():
    """The root helper (forked by a master started as root, never
    executed) keeps no variable at all of the master's."""
    if os.geteuid() != 0:
        raise Skip("needs root: ankusad forks its root helper only when "
                   "started as root")
    d = Daemon()
    d.env_extra = dict(MASTER_ENV)
    d.start()
    h = wait_until(lambda: _root_helper(d), 10, 0.05, "the root helper")
    env = proc_environ(h)
    assert env == {}, "the root helper %d keeps %s" % (h, sorted(env))


def test_children_environment_s3_claims():
    """A claim store in S3 without credentials in the file: the deliver
    processes and the gateways get AWS_* and the proxy's variables (they
    connect out); the edges get neither."""
    d = Daemon(extra={"claim_check": {
        "ip": "127.0.0.1", "port": ankusa.free_port(),
        "store": {"type": "s3", "s3": {"bucket": "childenv",
                                       "endpoint": "http://127.0.0.1:9"}}}})
    d.env_extra = dict(MASTER_ENV)
    d.start()
    base = {"TZ", "LD_LIBRARY_PATH", "ANKUSA_LOG_LEVEL"}
    _check(d, {"ankusa-edge": base | {"ANKUSA_NODE_ROLE"},
               "ankusa-deliver": base | PROXIES | AWS,
               "ankusa-gateway": base | PROXIES | AWS})


def test_child_not_executable_named():
    """Children in a directory the daemon's user cannot reach (a build in
    a 0700 home): each failed start names the program and the reason."""
    if os.geteuid() != 0:
        raise Skip("needs root: the daemon runs as root's node.user only "
                   "when started as root")
    lx = os.path.join(ankusa.tmpdir(), "private-libexec")
    os.mkdir(lx, 0o700)
    for k in KINDS:
        shutil.copy2(ankusa.program(k), os.path.join(lx, k))
    d = Daemon(workers=1)
    d.env_extra["ANKUSA_LIBEXECDIR"] = lx
    d.spawn()
    want = "cannot execute %s/ankusa-edge as %s: Permission denied" % (
        lx, ankusa.CHILD_USER)
    wait_until(lambda: want in d.log_since_start(), 15, 0.1,
               "%r in the log" % want)
    assert d.proc.poll() is None, "the master exited"
