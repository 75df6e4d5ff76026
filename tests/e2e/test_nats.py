# SPDX-License-Identifier: ISC
"""The nats sink against Debian's nats-server with JetStream (issue 39).

Each test starts its own nats-server -js on a free loopback port with a
store dir of its own (and, for auth and TLS, a config file), creates its
stream with tests/nats_tool (libnats, as the sink), and stops the server
at its end, also when it fails (register: end_test destroys it).  Every
message is read back from the stream by nats_tool dump and compared byte
for byte with the v1 message built here from what was posted.
"""

import base64
import concurrent.futures
import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request

import ankusa
import claimref
import qmsg
from ankusa import Daemon, Skip, expect_accepted, post


class NatsServer:
    """nats-server -js on 127.0.0.1, stopped by end_test."""

    def __init__(self, conf_extra="", port=None, tls=None):
        exe = shutil.which("nats-server")
        if exe is None:
            raise Skip("nats-server not on PATH (apt-get install "
                       "nats-server)")
        self.exe = exe
        self.port = port or ankusa.free_port()
        self.dir = ankusa.tmpdir("nats-%d" % self.port)
        self.logpath = os.path.join(self.dir, "server.log")
        self.conf = os.path.join(self.dir, "server.conf")
        with open(self.conf, "w") as f:
            f.write("listen: 127.0.0.1:%d\n" % self.port)
            f.write("jetstream { store_dir: %s }\n"
                    % json.dumps(os.path.join(self.dir, "js")))
            f.write(conf_extra)
        self.tls = tls
        self.proc = None
        ankusa.register(self)
        self.start()

    def start(self):
        log = open(self.logpath, "ab")
        self.proc = subprocess.Popen([self.exe, "-c", self.conf],
                                     stdout=log, stderr=log,
                                     start_new_session=True)
        log.close()
        ankusa.wait_until(self._up, timeout=20, what="nats-server up")

    def _up(self):
        import socket
        try:
            with socket.create_connection(("127.0.0.1", self.port), 0.5) \
                    as s:
                return s.recv(4).startswith(b"INFO")
        except OSError:
            return False

    def stop(self):
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except OSError:
            pass
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)
        self.proc = None

    def destroy(self):
        self.stop()

    def url(self):
        return "nats://127.0.0.1:%d" % self.port

    def tool(self, *args, auth=(), timeout=60):
        r = subprocess.run([ankusa.binary("tests/nats_tool")] +
                           list(auth) + [self.url()] + list(args),
                           capture_output=True, timeout=timeout)
        assert r.returncode == 0, "nats_tool %s: %s" % (
            " ".join(args), r.stderr.decode(errors="replace"))
        return r.stdout.decode()

    def stream(self, name, subject, auth=()):
        self.tool("stream", name, subject, auth=auth)

    def dump(self, name, auth=()):
        return [json.loads(line) for line in
                self.tool("dump", name, auth=auth).splitlines()]

    def count(self, name, auth=()):
        return int(self.tool("count", name, auth=auth).strip())


def nats_sink(server, subject, **kw):
    s = {"type": "nats", "servers": [server.url()], "subject": subject}
    s.update(kw)
    return s


def _post_all(d, source, bodies, workers=8, headers=None):
    def one(b):
        st, h, data = post(d.port, "/webhooks/" + source, b,
                           headers=headers)
        return expect_accepted(st, h, data, "POST %s" % source), b
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        return dict(ex.map(one, bodies))


def expected_v1(m, body, tenant, source, inline_max=65536):
    """The v1 message of a posted body, built here: its id, received_at
    and forwarded headers taken from the message (the daemon chose
    them), everything else from what was posted."""
    e = {"v": 1, "id": m["id"], "source_id": source, "tenant_id": tenant,
         "received_at": m["received_at"], "content_type": "application/json",
         "size": len(body), "sha256": hashlib.sha256(body).hexdigest(),
         "dedupe_key": None, "replay_id": None, "idempotency_key": m["id"],
         "headers": m["headers"]}
    if len(body) > inline_max:
        e["claim"] = m["claim"]
    else:
        e["body_base64"] = base64.b64encode(body).decode()
    return json.dumps(e, separators=(",", ":"), ensure_ascii=True).encode()


def check_messages(msgs, posted, tenant, source, subject, inline_max=65536,
                   fetch=None):
    """Every stored message is the v1 message of a posted hook, byte for
    byte, with its headers; returns the hook ids seen (with repeats)."""
    ids = []
    for sm in msgs:
        raw = base64.b64decode(sm["data"])
        m = qmsg.decode(raw)
        assert m["id"] in posted, m["id"]
        assert raw == expected_v1(m, posted[m["id"]], tenant, source,
                                  inline_max), raw[:200]
        qmsg.assert_matches(m, posted[m["id"]], fetch_claim=fetch)
        assert sm["subject"] == subject, sm["subject"]
        h = dict(sm["headers"])
        assert h.pop("Nats-Msg-Id") == m["id"], sm["headers"]
        qmsg.check_attributes(h, m)
        ids.append(m["id"])
    return ids


def test_nats_500_byte_for_byte():
    """500 hooks to a JetStream stream through ankusad: each stored once,
    byte for byte the v1 message, Nats-Msg-Id and the attributes as
    headers; sent in batches (fewer than 500), on one connection."""
    ns = NatsServer()
    ns.stream("HOOKS", "hooks.>")
    src = ankusa.sink_source([nats_sink(ns, "hooks.orders")],
                             tenant="acme", retry=dict(ankusa.FAST_RETRY))
    d = Daemon(sources={"orders": src}).start()
    bodies = [json.dumps({"n": i, "pad": "x" * (i % 300),
                          "s": "caf\u00e9 \U0001F600"}).encode()
              for i in range(500)]
    posted = _post_all(d, "orders", bodies, workers=16,
                       headers={"Content-Type": "application/json"})
    d.settle_all(120)
    msgs = ns.dump("HOOKS")
    ids = check_messages(msgs, posted, "acme", "orders", "hooks.orders")
    assert sorted(ids) == sorted(posted), "missing %d" % len(
        set(posted) - set(ids))
    _, out, _ = d.ctl("stats", json_out=True)
    c = json.loads(out)["counters"]
    batches = c.get('ankusa_dispatch_batches_total{sink="nats"}', 0)
    ankusa.note("nats: 500 hooks in %d batches" % batches)
    assert 0 < batches < 500, batches
    st = d.status()
    assert (st["hooks"], st["pending"]) == (0, 0), st
