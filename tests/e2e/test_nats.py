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
from test_queue_glue import _breaker


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
        url = self.url().replace("nats://", "tls://") if self.tls \
            else self.url()
        auth = list(auth) + (["-c", self.tls, "-n", "nats.test"]
                             if self.tls else [])
        r = subprocess.run([ankusa.binary("tests/nats_tool")] +
                           auth + [url] + list(args),
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
    headers; sent in batches (fewer than 500)."""
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


def test_nats_connection_kept():
    """The connection lives in the deliver process: 6 waves of hooks,
    each delivered before the next is posted, with 3 deliver processes
    in all (concurrency 1, sink_concurrency 1, one for uploads), open at
    most 3 connections named ankusa (the server's connz, open and closed
    alike), however many batches they sent."""
    mport = ankusa.free_port()
    ns = NatsServer("http: 127.0.0.1:%d\n" % mport)
    ns.stream("K", "k")

    def ours():
        with urllib.request.urlopen("http://127.0.0.1:%d/connz?state=all"
                                    "&limit=10000" % mport, timeout=5) as r:
            return [c for c in json.loads(r.read())["connections"]
                    if c.get("name") == "ankusa"]

    src = ankusa.sink_source([nats_sink(ns, "k")])
    d = Daemon(sources={"k": src}, extra={"dispatch": ankusa.dispatch_conf(
        concurrency=1, sink_concurrency=1)}).start()
    for w in range(6):
        _post_all(d, "k", [b'{"w":%d,"i":%d}' % (w, i) for i in range(20)])
        ankusa.wait_until(lambda: ns.count("K") == 20 * (w + 1), 30, 0.1,
                          "wave %d" % w)
    _, out, _ = d.ctl("stats", json_out=True)
    batches = json.loads(out)["counters"].get(
        'ankusa_dispatch_batches_total{sink="nats"}', 0)
    conns = ours()
    ankusa.note("nats: %d batches on %d connections" % (batches,
                                                        len(conns)))
    assert batches >= 6, batches
    assert 1 <= len(conns) <= 3, conns
    assert sum(c["in_msgs"] for c in conns) >= 120, conns


def test_nats_claim_check():
    """Bodies above inline_max_bytes go by claim: the message carries the
    reference, byte for byte, and the claim gateway gives the body back;
    small bodies stay inline."""
    ns = NatsServer()
    ns.stream("BIG", "big")
    gw_port = ankusa.free_port()
    src = ankusa.sink_source([nats_sink(ns, "big", inline_max_bytes=1000)],
                             tenant="acme", retry=dict(ankusa.FAST_RETRY))
    d = Daemon(sources={"big": src}, extra={"claim_check": {
        "ip": "127.0.0.1", "port": gw_port,
        "store": {"type": "local", "root": os.path.join(ankusa.tmpdir(),
                                                         "claims")}}})
    d.start()
    bodies = [json.dumps({"n": i, "pad": "y" * (5000 + i)}).encode()
              for i in range(5)] + [b'{"small":%d}' % i for i in range(3)]
    posted = _post_all(d, "big", bodies, workers=4,
                       headers={"Content-Type": "application/json"})
    d.settle_all(60)

    def fetch(urn):
        claimref.parse(urn)
        with urllib.request.urlopen("http://127.0.0.1:%d%s"
                                    % (gw_port, claimref.path(urn)),
                                    timeout=10) as r:
            assert r.status == 200
            return r.read()

    msgs = ns.dump("BIG")
    ids = check_messages(msgs, posted, "acme", "big", "big",
                         inline_max=1000, fetch=fetch)
    assert sorted(ids) == sorted(posted)
    claims = [m for m in msgs if b'"claim":' in base64.b64decode(m["data"])]
    assert len(claims) == 5, len(claims)


def test_nats_no_stream_dead_lettered():
    """A subject no stream covers: the first attempt is permanent and the
    hook dead-lettered at once, the reason naming the subject; a hook to
    a covered subject of the same server is delivered."""
    ns = NatsServer()
    ns.stream("OK", "ok")
    srcs = {
        "lost": ankusa.sink_source([nats_sink(ns, "nostream.here")],
                                   retry={"max_attempts": 50}),
        "fine": ankusa.sink_source([nats_sink(ns, "ok")]),
    }
    d = Daemon(sources=srcs).start()
    st, h, data = post(d.port, "/webhooks/lost", b'{"a":1}')
    hid = expect_accepted(st, h, data, "POST lost")
    st, h, data = post(d.port, "/webhooks/fine", b'{"b":1}')
    expect_accepted(st, h, data, "POST fine")
    ankusa.wait_until(lambda: d.status()["dead"] == 1 and
                      ns.count("OK") == 1, 30, 0.1, "the dead letter")
    dl = d.dlq()
    assert len(dl) == 1, dl
    e = dl[0]
    assert (e["hook_id"], e["module"], e["attempts"]) == (hid, "nats", 1), e
    assert e["reason"] == "permanent:nats: no stream covers subject " \
        "nostream.here", e
    assert ns.count("OK") == 1


def test_nats_replay_not_deduped():
    """An archive replay inside the stream's duplicate window is stored
    again: its Nats-Msg-Id is <hook id>:replay:<replay id>
    (docs/DEPARTURES 50) and its message carries the replay id, where a
    retry of the first delivery would carry the bare hook id and be
    dropped as a duplicate."""
    ns = NatsServer()
    ns.stream("R", "r")
    src = ankusa.sink_source([nats_sink(ns, "r")], tenant="acme")
    d = Daemon(sources={"rp": src},
               extra={"retention": {"delivered_s": 3600}}).start()
    st, h, data = post(d.port, "/webhooks/rp", b'{"r":1}')
    hid = expect_accepted(st, h, data, "POST rp")
    ankusa.wait_until(lambda: ns.count("R") == 1, 20, 0.1, "the first")
    _, out, _ = d.ctl("replay", "archive", "-S", "rp", "--sink", "0",
                      json_out=True)
    rid = json.loads(out)["id"]
    ankusa.wait_until(lambda: ns.count("R") == 2, 20, 0.1, "the replay")
    first, again = ns.dump("R")
    assert first["headers"]["Nats-Msg-Id"] == hid, first["headers"]
    assert again["headers"]["Nats-Msg-Id"] == "%s:replay:%s" % (hid, rid), \
        again["headers"]
    m = qmsg.decode(base64.b64decode(again["data"]))
    assert (m["id"], m["replay_id"]) == (hid, rid), m
    assert again["headers"]["ankusa_replay_id"] == rid, again["headers"]


def test_nats_too_large_permanent():
    """A message over the server's max_payload is dead-lettered at its
    first attempt; a smaller one of the same sink is stored."""
    ns = NatsServer("max_payload: 4096\n")
    ns.stream("P", "p")
    src = ankusa.sink_source([nats_sink(ns, "p")],
                             retry={"max_attempts": 50})
    d = Daemon(sources={"big": src}).start()
    st, h, data = post(d.port, "/webhooks/big", b'"' + b"z" * 6000 + b'"')
    hid = expect_accepted(st, h, data, "POST big")
    st, h, data = post(d.port, "/webhooks/big", b'"small"')
    small = expect_accepted(st, h, data, "POST small")
    ankusa.wait_until(lambda: d.status()["dead"] == 1 and
                      ns.count("P") == 1, 20, 0.1, "the dead letter")
    e = d.dlq()[0]
    assert (e["hook_id"], e["attempts"]) == (hid, 1), e
    assert e["reason"].startswith("permanent:nats:"), e
    ankusa.note("too large: %s" % e["reason"])
    assert _delivered_ids(ns, "P") == {small}


def _post_paced(d, source, n, stop, out):
    """Post n hooks one after another (a thread); out gets id -> body of
    each answered 201/202."""
    for i in range(n):
        if stop.is_set():
            return
        b = b'{"load":%d}' % i
        try:
            st, h, data = post(d.port, "/webhooks/" + source, b)
        except OSError:
            continue
        if st in (200, 201, 202):
            out[json.loads(data)["id"]] = b
        time.sleep(0.005)


def test_nats_server_restart_under_load():
    """The server killed under load and started again on the same store:
    every accepted hook is in the stream at least once (duplicates
    counted: Nats-Msg-Id lets JetStream drop most), nothing dead-lettered;
    the deliver processes connect again by themselves."""
    import threading
    ns = NatsServer()
    ns.stream("LOAD", "load")
    src = ankusa.sink_source([nats_sink(ns, "load",
                                        publish_timeout_ms=1000)],
                             retry={"base_ms": 50, "max_ms": 300,
                                    "jitter": False, "max_attempts": 1000})
    d = Daemon(sources={"load": src}, extra={"dispatch": ankusa.dispatch_conf(
        breaker_open_ms=300, breaker_max_open_ms=1000)}).start()
    posted, stop = {}, threading.Event()
    t = threading.Thread(target=_post_paced, args=(d, "load", 600, stop,
                                                   posted))
    t.start()
    try:
        ankusa.wait_until(lambda: len(posted) >= 150, 60, 0.05,
                          "150 hooks posted")
        os.killpg(ns.proc.pid, signal.SIGKILL)
        ns.proc.wait(10)
        ns.proc = None
        time.sleep(2)
        ns.start()
    finally:
        t.join(120)
        stop.set()
    d.settle_all(120)
    ids = [json.loads(base64.b64decode(m["data"]))["id"]
           for m in ns.dump("LOAD")]
    missing = set(posted) - set(ids)
    assert not missing, "%d of %d accepted hooks not in the stream" % (
        len(missing), len(posted))
    dups = len(ids) - len(set(ids))
    failed = d.log_text().count("status=deferred")
    assert failed > 0, "no attempt failed: the server was not down"
    ankusa.note("nats restart: %d hooks accepted, %d stored, %d "
                "duplicates, %d attempts failed" % (len(posted), len(ids),
                                                    dups, failed))
    assert d.dlq() == []


test_nats_server_restart_under_load.timeout = 240


def _secret_file(name, text):
    path = os.path.join(ankusa.tmpdir(), name)
    with open(path, "w") as f:
        f.write(text + "\n")
    os.chmod(path, 0o600)
    return path


def _delivered_ids(ns, stream, auth=()):
    return {json.loads(base64.b64decode(m["data"]))["id"]
            for m in ns.dump(stream, auth=auth)}


def _post_each(d, srcs):
    """One hook to each source: source -> hook id."""
    ids = {}
    for s in srcs:
        st, h, data = post(d.port, "/webhooks/" + s, b'{"s":"%s"}' %
                           s.encode())
        ids[s] = expect_accepted(st, h, data, "POST " + s)
    return ids


def _last_error(d, hid):
    """The error of a hook's last attempt (GET /v1/hooks/{id}/attempts)."""
    st, _, body = d.api("GET", "/v1/hooks/%s/attempts" % hid)
    assert st == 200, (st, body)
    att = body["attempts"]
    return att[-1]["error"] if att else None


def test_nats_auth():
    """user/password, token and NKey authentication, each secret given
    by ${file:...}: the right ones deliver; a wrong password is a
    transient failure (the hook stays pending, its error the server's
    Authorization Violation), never a dead letter."""
    seed, pub = subprocess.run(
        [ankusa.binary("tests/nats_tool"), "nkey"], capture_output=True,
        check=True).stdout.decode().split()
    users = NatsServer(
        'authorization { users: [ {user: tool, password: toolpw}, '
        '{user: ankusa, password: "pw-%s"}, {nkey: %s} ] }\n'
        % ("x" * 8, pub))
    tok = NatsServer('authorization { token: "tok-123456" }\n')
    tool_up, tool_tok = ["-u", "tool", "-p", "toolpw"], ["-t", "tok-123456"]
    users.stream("U", "u.>", auth=tool_up)
    tok.stream("T", "t.>", auth=tool_tok)
    pw = _secret_file("nats-pw", "pw-" + "x" * 8)
    sd = _secret_file("nats-seed", seed)
    tk = _secret_file("nats-token", "tok-123456")
    srcs = {
        "up": ankusa.sink_source([nats_sink(
            users, "u.up", auth={"username": "ankusa",
                                 "password": "${file:%s}" % pw})]),
        "nk": ankusa.sink_source([nats_sink(
            users, "u.nk", auth={"nkey_seed": "${file:%s}" % sd})]),
        "tk": ankusa.sink_source([nats_sink(
            tok, "t.tk", auth={"token": "${file:%s}" % tk})]),
        "bad": ankusa.sink_source([nats_sink(
            users, "u.bad", auth={"username": "ankusa",
                                  "password": "wrong"})],
            retry={"base_ms": 100, "max_ms": 200, "jitter": False,
                   "max_attempts": 1000}),
    }
    d = Daemon(sources=srcs).start()
    ids = _post_each(d, srcs)
    ankusa.wait_until(lambda: len(_delivered_ids(users, "U", tool_up))
                      == 2 and len(_delivered_ids(tok, "T", tool_tok))
                      == 1, 30, 0.2, "the three hooks stored")
    assert _delivered_ids(users, "U", tool_up) == {ids["up"], ids["nk"]}
    assert _delivered_ids(tok, "T", tool_tok) == {ids["tk"]}
    time.sleep(1)
    assert d.dlq() == [], d.dlq()
    err = _last_error(d, ids["bad"])
    assert err is not None and "Authorization" in err, err
    ankusa.note("wrong password: %s" % err)
    st = d.status()
    assert (st["hooks"], st["dead"]) == (1, 0), st
    assert users.count("U", auth=tool_up) == 2


def _jwt_keys():
    """nats_tool jwt's lines: name -> its fields."""
    out = subprocess.run([ankusa.binary("tests/nats_tool"), "jwt"],
                         capture_output=True, check=True).stdout.decode()
    return {line.split()[0]: line.split()[1:] for line in out.splitlines()}


def test_nats_jwt():
    """Decentralized authentication: a server in operator mode (an
    operator, an account with JetStream and the system account, as
    nats_tool jwt makes them), the sink's auth {nkey_seed, jwt} a user of
    that account: delivered.  The same JWT with another user's seed (the
    nonce signed by the wrong key) is refused by the server, a transient
    failure."""
    k = _jwt_keys()
    other = _jwt_keys()
    ns = NatsServer(
        'operator: "%s"\nsystem_account: %s\nresolver: MEMORY\n'
        'resolver_preload: { %s: "%s", %s: "%s" }\n' % (
            k["operator"][0], k["system"][0], k["account"][0],
            k["account"][1], k["system"][0], k["system"][1]))
    tool = ["-s", k["user"][0], "-j", k["user"][1]]
    ns.stream("J", "j.>", auth=tool)
    seed = _secret_file("nats-user-seed", k["user"][0])
    srcs = {
        "ok": ankusa.sink_source([nats_sink(
            ns, "j.ok", auth={"nkey_seed": "${file:%s}" % seed,
                              "jwt": k["user"][1]})]),
        "wrong": ankusa.sink_source([nats_sink(
            ns, "j.wrong", auth={"nkey_seed": other["user"][0],
                                 "jwt": k["user"][1]})],
            retry={"base_ms": 100, "max_ms": 200, "jitter": False,
                   "max_attempts": 1000}),
    }
    d = Daemon(sources=srcs).start()
    ids = _post_each(d, srcs)
    ankusa.wait_until(lambda: _delivered_ids(ns, "J", tool) == {ids["ok"]},
                      30, 0.2, "the JWT user's hook stored")
    time.sleep(1)
    err = _last_error(d, ids["wrong"])
    assert err is not None and "Authorization" in err, err
    ankusa.note("a JWT with another user's seed: %s" % err)
    assert d.dlq() == []
    assert ns.count("J", auth=tool) == 1


def _tls_files(d):
    """A throwaway CA and a server certificate for nats.test, localhost
    and 127.0.0.1, signed by it (openssl)."""
    def run(*a):
        subprocess.run(["openssl"] + list(a), check=True,
                       capture_output=True, cwd=d)
    run("req", "-x509", "-newkey", "ec", "-pkeyopt",
        "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "ca.key",
        "-out", "ca.pem", "-days", "2", "-subj", "/CN=ankusa test CA")
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj",
        "/CN=nats.test")
    with open(os.path.join(d, "ext.cnf"), "w") as f:
        f.write("subjectAltName=DNS:nats.test,DNS:localhost,"
                "IP:127.0.0.1\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey",
        "ca.key", "-CAcreateserial", "-out", "server.pem", "-days", "2",
        "-extfile", "ext.cnf")
    for f in os.listdir(d):
        os.chmod(os.path.join(d, f), 0o644)
    return [os.path.join(d, f) for f in ("ca.pem", "server.pem",
                                          "server.key")]


def test_nats_tls():
    """TLS, the certificate verified: by tls.ca_file against the name in
    tls.server_name, or against a server's host as written; a wrong
    name and the system's CAs (which never signed the test CA) fail, as
    transient errors naming the certificate."""
    if shutil.which("openssl") is None:
        raise Skip("openssl not on PATH")
    ca, cert, key = _tls_files(ankusa.tmpdir("tls"))
    ns = NatsServer("tls { cert_file: %s, key_file: %s }\n"
                    % (json.dumps(cert), json.dumps(key)), tls=ca)
    ns.stream("S", "s.>")
    tls_url = "tls://127.0.0.1:%d" % ns.port
    slow = {"base_ms": 100, "max_ms": 200, "jitter": False,
            "max_attempts": 1000}
    srcs = {
        "named": ankusa.sink_source([{
            "type": "nats", "servers": [tls_url], "subject": "s.named",
            "tls": {"ca_file": ca, "server_name": "nats.test"}}]),
        "host": ankusa.sink_source([{
            "type": "nats", "servers": ["localhost:%d" % ns.port],
            "subject": "s.host", "tls": {"ca_file": ca}}]),
        "wrongname": ankusa.sink_source([{
            "type": "nats", "servers": [tls_url], "subject": "s.wrong",
            "tls": {"ca_file": ca, "server_name": "other.test"}}],
            retry=slow),
        "sysca": ankusa.sink_source([{
            "type": "nats", "servers": [tls_url], "subject": "s.sys"}],
            retry=slow),
    }
    d = Daemon(sources=srcs).start()
    ids = _post_each(d, srcs)
    ankusa.wait_until(lambda: len(_delivered_ids(ns, "S")) == 2, 30, 0.2,
                      "the two verified hooks stored")
    assert _delivered_ids(ns, "S") == {ids["named"], ids["host"]}
    time.sleep(1)
    for s in ("wrongname", "sysca"):
        err = _last_error(d, ids[s])
        assert err is not None and ("certificate" in err.lower() or
                                    "ssl" in err.lower() or
                                    "tls" in err.lower()), (s, err)
        ankusa.note("%s: %s" % (s, err))
    assert d.dlq() == []
    assert ns.count("S") == 2


def test_nats_egress_guard():
    """egress.allow empty: a server named localhost resolves to loopback,
    which the guard refuses before libnats connects; the hook is
    dead-lettered egress_denied:<address> at its first attempt and the
    server sees no client."""
    ns = NatsServer()
    ns.stream("E", "e")
    src = ankusa.sink_source([{"type": "nats", "subject": "e",
                               "servers": ["localhost:%d" % ns.port]}])
    d = Daemon(sources={"eg": src},
               extra={"egress": {"allow": []}}).start()
    st, h, data = post(d.port, "/webhooks/eg", b'{"e":1}')
    hid = expect_accepted(st, h, data, "POST eg")
    ankusa.wait_until(lambda: d.status()["dead"] == 1, 20, 0.1,
                      "the dead letter")
    e = d.dlq()[0]
    assert e["hook_id"] == hid and e["attempts"] == 1, e
    assert e["reason"] in ("egress_denied:127.0.0.1",
                           "egress_denied:::1"), e
    assert ns.count("E") == 0


def test_nats_breaker_per_key():
    """A source whose server is down opens its own key's breaker (module
    nats) while another source's hooks go on to a live server; the
    server started, the breaker closes and every parked hook is
    delivered, none dead-lettered."""
    live = NatsServer()
    live.stream("LIVE", "live")
    down_port = ankusa.free_port()
    srcs = {
        "up": ankusa.sink_source([nats_sink(live, "live")], tenant="t"),
        "down": ankusa.sink_source([{
            "type": "nats", "subject": "down",
            "servers": ["nats://127.0.0.1:%d" % down_port]}], tenant="t",
            retry={"base_ms": 50, "max_ms": 200, "jitter": False,
                   "max_attempts": 1000}),
    }
    d = Daemon(sources=srcs, extra={"dispatch": ankusa.dispatch_conf(
        breaker_failures=3, breaker_open_ms=500,
        breaker_max_open_ms=1000)}).start()
    down = _post_all(d, "down", [b'{"d":%d}' % i for i in range(30)])
    b = ankusa.wait_until(lambda: _breaker(d, "down", "open"), 20, 0.05,
                          "the breaker of down to open")
    assert (b["tenant"], b["module"]) == ("t", "nats"), b
    up = _post_all(d, "up", [b'{"u":%d}' % i for i in range(30)])
    ankusa.wait_until(lambda: _delivered_ids(live, "LIVE") == set(up), 30,
                      0.2, "the live source's hooks, breaker open")
    assert _breaker(d, "up", "open") is None, d.breakers()
    later = NatsServer(port=down_port)
    later.stream("DOWN", "down")
    ankusa.wait_until(lambda: _delivered_ids(later, "DOWN") == set(down),
                      60, 0.2, "the parked hooks after the server came")
    ankusa.wait_until(lambda: _breaker(d, "down", "open") is None, 10,
                      0.1, "the breaker to close")
    assert d.dlq() == []


def test_nats_sink_concurrency_per_key():
    """dispatch.sink_concurrency 2, two sources on a server that stops
    answering (SIGSTOP): the batches in flight (busy deliver processes)
    reach 2 per key, 4 in all, never more; the server resumed, every
    hook is stored."""
    ns = NatsServer()
    ns.stream("C", "c.>")
    srcs = {s: ankusa.sink_source([nats_sink(ns, "c." + s,
                                             publish_timeout_ms=3000)],
                                  retry={"base_ms": 50, "max_ms": 200,
                                         "jitter": False,
                                         "max_attempts": 1000})
            for s in ("k1", "k2")}
    d = Daemon(sources=srcs, extra={"dispatch": ankusa.dispatch_conf(
        sink_concurrency=2, concurrency=8, breaker_failures=100000)}
    ).start()
    posted = _post_all(d, "k1", [b'{"w":1}']) | _post_all(
        d, "k2", [b'{"w":2}'])
    ankusa.wait_until(lambda: ns.count("C") == 2, 20, 0.1, "the warm-up")
    os.kill(ns.proc.pid, signal.SIGSTOP)
    try:
        for s in ("k1", "k2"):
            posted |= _post_all(d, s, [b'{"%s":%d}' % (s.encode(), i)
                                       for i in range(200)])
        most = 0
        end = time.monotonic() + 2.5
        while time.monotonic() < end:
            most = max(most, d.status()["delivers_busy"])
            time.sleep(0.02)
    finally:
        os.kill(ns.proc.pid, signal.SIGCONT)
    ankusa.note("sink_concurrency 2, 2 keys: at most %d batches in "
                "flight" % most)
    assert most == 4, "%d batches in flight, want 2 per key" % most
    ankusa.wait_until(lambda: _delivered_ids(ns, "C") == set(posted), 90,
                      0.3, "every hook after the server resumed")
    assert d.dlq() == []


test_nats_sink_concurrency_per_key.timeout = 180
