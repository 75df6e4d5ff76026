# SPDX-License-Identifier: ISC
"""The redis sink against Debian's redis-server, started by each test on a
free loopback port in its temp dir (an append-only file, no RDB) and
stopped when the test ends, however it ends.

The test's client speaks RESP itself over a socket (plain, or TLS with
Python's ssl), so nothing beyond python3 is needed.  Each message read
back, from a stream (XRANGE) or a channel (SUBSCRIBE), is compared byte
for byte with the v1 queue message built here (v1_of); a stream entry's
other fields with the attributes the queue sinks send (qmsg.py).
"""

import base64
import concurrent.futures
import hashlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time

import ankusa
import claimref
import qmsg
from ankusa import Daemon, dispatch_conf, expect_accepted, note, post, \
    wait_until


# ------------------------------------------------------------ the client

class RespError(Exception):
    pass


class Resp:
    """One RESP2 connection: cmd(*args) sends a command and returns its
    reply (bytes, int, list, None; an error reply raises RespError);
    read() the next reply (a subscriber's pushes)."""

    def __init__(self, port, tls=None, timeout=10.0):
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        if tls is not None:
            s = tls.wrap_socket(s, server_hostname="127.0.0.1")
        self.s = s
        self.buf = b""

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass

    def send(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if isinstance(a, str):
                a = a.encode()
            elif isinstance(a, int):
                a = b"%d" % a
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.s.sendall(b"".join(out))

    def cmd(self, *args):
        self.send(*args)
        return self.read()

    def _line(self):
        while b"\r\n" not in self.buf:
            self._more()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _more(self):
        d = self.s.recv(65536)
        if not d:
            raise ConnectionError("redis closed the connection")
        self.buf += d

    def read(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest
        if t == b"-":
            raise RespError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._more()
            v, self.buf = self.buf[:n], self.buf[n + 2:]
            return v
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise AssertionError("not RESP: %r" % line)


# ------------------------------------------------------------ the server

class Redis:
    """redis-server on a free loopback port (tls: the TLS port instead,
    with the files of a Certs), in its own dir, append-only; stop() and
    start() again keep its port, dir and data.  Skip without Debian's
    redis-server."""

    logpath = None

    def __init__(self, name="redis", args=(), certs=None,
                 fsync="everysec", port=None):
        self.exe = shutil.which("redis-server") or "/usr/bin/redis-server"
        if not os.access(self.exe, os.X_OK):
            raise ankusa.Skip("redis-server not installed (Debian package "
                              "redis-server; scripts/test installs it)")
        self.dir = ankusa.tmpdir(name)
        self.port = port or ankusa.free_port()
        self.logpath = os.path.join(self.dir, "redis.log")
        self.certs = certs
        self.argv = [self.exe, "--bind", "127.0.0.1", "--dir", self.dir,
                     "--save", "", "--appendonly", "yes", "--appendfsync",
                     fsync, "--daemonize", "no", "--logfile", self.logpath,
                     "--protected-mode", "no"]
        if certs is not None:
            self.argv += ["--port", "0", "--tls-port", str(self.port),
                          "--tls-cert-file", certs.cert, "--tls-key-file",
                          certs.key, "--tls-ca-cert-file", certs.ca,
                          "--tls-auth-clients", "no"]
        else:
            self.argv += ["--port", str(self.port)]
        self.argv += list(args)
        self.proc = None
        self.password = None
        ankusa.register(self)

    def url(self, auth="", db=None):
        u = "%s://%s127.0.0.1:%d" % ("rediss" if self.certs else "redis",
                                     auth + "@" if auth else "", self.port)
        return u if db is None else "%s/%d" % (u, db)

    def client(self):
        tls = None
        if self.certs is not None:
            tls = ssl.create_default_context(cafile=self.certs.ca)
        c = Resp(self.port, tls=tls)
        if self.password is not None:
            c.cmd("AUTH", self.password)
        return c

    def start(self, timeout=15.0):
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL,
                                     start_new_session=True)

        def up():
            assert self.proc.poll() is None, "redis-server exited: %s" % (
                ankusa.tail(self.logpath))
            try:
                c = self.client()
            except OSError:
                return False
            try:
                return c.cmd("PING") == b"PONG"
            except (OSError, RespError):
                return False
            finally:
                c.close()
        wait_until(up, timeout, 0.05, "redis-server to answer")
        return self

    def stop(self):
        """SIGTERM: redis-server syncs its AOF and exits."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(20)

    def destroy(self):
        ankusa.kill_group(self.proc)


class FakeRedis:
    """A RESP server that answers each XADD with an id, each batch of
    commands (what one read brought, whole) after delay_s, and counts the
    batches in flight at once across its connections (max_in_flight)."""

    def __init__(self, delay_s=0.3):
        self.logpath = os.path.join(ankusa.tmpdir("fakeredis"), "log")
        open(self.logpath, "w").close()
        self.delay_s = delay_s
        self.lock = threading.Lock()
        self.in_flight = self.max_in_flight = self.batches = 0
        self.entries = 0
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(64)
        self.port = self.ls.getsockname()[1]
        self.stop = False
        threading.Thread(target=self._accept, daemon=True).start()
        ankusa.register(self)

    def url(self):
        return "redis://127.0.0.1:%d" % self.port

    def _accept(self):
        while not self.stop:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,),
                             daemon=True).start()

    @staticmethod
    def _commands(buf):
        """The whole commands at buf's start: (count, bytes used)."""
        n = pos = 0
        while True:
            try:
                end = buf.index(b"\r\n", pos)
                argc = int(buf[pos + 1:end])
                p = end + 2
                for _ in range(argc):
                    e = buf.index(b"\r\n", p)
                    p = e + 2 + int(buf[p + 1:e]) + 2
                    if p > len(buf):
                        raise ValueError
            except ValueError:
                return n, pos
            n += 1
            pos = p

    def _serve(self, c):
        buf = b""
        try:
            while True:
                d = c.recv(1 << 20)
                if not d:
                    return
                buf += d
                n, used = self._commands(buf)
                if n == 0:
                    continue
                buf = buf[used:]
                with self.lock:
                    self.in_flight += 1
                    self.batches += 1
                    self.max_in_flight = max(self.max_in_flight,
                                             self.in_flight)
                time.sleep(self.delay_s)
                out = []
                with self.lock:
                    self.in_flight -= 1
                    for _ in range(n):
                        self.entries += 1
                        i = b"%d-0" % self.entries
                        out.append(b"$%d\r\n%s\r\n" % (len(i), i))
                c.sendall(b"".join(out))
        except OSError:
            return
        finally:
            c.close()

    def destroy(self):
        self.stop = True
        self.ls.close()


class Certs:
    """A throwaway CA and a server certificate for 127.0.0.1 (IP SAN),
    made with openssl in the test's dir; other=True: a second CA that
    signed nothing."""

    def __init__(self, name="certs"):
        self.dir = ankusa.tmpdir(name)
        p = lambda f: os.path.join(self.dir, f)   # noqa: E731
        self.ca, self.cakey = p("ca.pem"), p("ca.key")
        self.cert, self.key = p("server.pem"), p("server.key")
        self.other = p("other-ca.pem")

        def ossl(*a):
            subprocess.run(["openssl"] + list(a), check=True,
                           capture_output=True, timeout=60)
        ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
             self.cakey, "-out", self.ca, "-days", "2", "-subj",
             "/CN=ankusa test CA")
        ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
             p("other.key"), "-out", self.other, "-days", "2", "-subj",
             "/CN=another CA")
        ossl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", self.key,
             "-out", p("server.csr"), "-subj", "/CN=127.0.0.1")
        with open(p("ext.cnf"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\n")
        ossl("x509", "-req", "-in", p("server.csr"), "-CA", self.ca,
             "-CAkey", self.cakey, "-CAcreateserial", "-out", self.cert,
             "-days", "2", "-extfile", p("ext.cnf"))
        for f in os.listdir(self.dir):
            os.chmod(p(f), 0o644)


# ------------------------------------------------------------ the checks

def v1_of(v, posted, tenant, source, content_type):
    """The v1 message of a hook as this file builds it (the contracts'
    order, compact, ASCII), from what was posted and the two fields only
    the daemon knows (received_at, the forwarded headers), which are
    taken from the message read back."""
    idem = v["id"]
    m = {"v": 1, "id": v["id"], "source_id": source, "tenant_id": tenant,
         "received_at": v["received_at"], "content_type": content_type,
         "size": len(posted), "sha256": hashlib.sha256(posted).hexdigest(),
         "dedupe_key": None, "replay_id": None, "idempotency_key": idem,
         "headers": v["headers"]}
    if "claim" in v:
        m["claim"] = v["claim"]
    else:
        m["body_base64"] = base64.b64encode(posted).decode()
    return json.dumps(m, separators=(",", ":"), ensure_ascii=True).encode()


def check_message(raw, posted, tenant, source, started_ms, fetch=None):
    """raw, a message read back, is the v1 message of the hook it names,
    byte for byte (a claim's body fetched with fetch); its id."""
    v = qmsg.decode(raw)
    assert v["id"] in posted, "a message of no posted hook: %r" % v["id"]
    body, n = posted[v["id"]]
    assert started_ms <= v["received_at"] <= started_ms + 600000, v
    assert v["headers"].get("x-test-n") == str(n), v["headers"]
    assert raw == v1_of(v, body, tenant, source, "application/json"), \
        (raw[:300], v1_of(v, body, tenant, source, "application/json")[
            :300])
    qmsg.assert_matches(v, body, fetch_claim=fetch)
    return v["id"]


def bodies(n, tag="h"):
    """n bodies of every kind the v1 message escapes: JSON with non-ASCII
    text, raw bytes that are not UTF-8, sizes up to a few KiB."""
    out = []
    for i in range(n):
        if i % 5 == 4:
            out.append(bytes(range(256)) * (1 + i % 4))
        else:
            out.append(json.dumps({"n": i, "tag": tag, "pad": "x" * (i * 7),
                                   "t": "caf\u00e9 \u20ac \U0001F600"},
                                  ensure_ascii=False).encode())
    return out


def post_all(d, source, bs, workers=8):
    """Post each body with its index as x-test-n: {hook id: (body, n)}."""
    def one(i):
        st, h, data = post(d.port, "/webhooks/" + source, bs[i],
                           headers={"x-test-n": str(i)})
        return expect_accepted(st, h, data, "POST %s #%d" % (source, i)), \
            (bs[i], i)
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        return dict(ex.map(one, range(len(bs))))


def xfields(entry):
    """A stream entry [id, [f1, v1, ...]] as {field: bytes}."""
    f = entry[1]
    return {f[i].decode(): f[i + 1] for i in range(0, len(f), 2)}


def redis_source(url, tenant="acme", **sink):
    s = {"type": "redis", "url": url}
    s.update(sink)
    return ankusa.sink_source([s], tenant=tenant,
                              retry=dict(ankusa.FAST_RETRY,
                                         max_attempts=1000))


def attempts(d, hid):
    st, _, data = d.api("GET", "/v1/hooks/%s/attempts" % hid)
    assert st == 200, (st, data)
    return data["attempts"]


def post_one(d, source, body):
    """Post body to source: the hook id."""
    st, h, data = post(d.port, "/webhooks/" + source, body)
    return expect_accepted(st, h, data, "POST %s" % source)


def failed_attempt(d, hid, what="a failed attempt"):
    """The first failed attempt of hook hid, waited for."""
    return wait_until(lambda: [x for x in attempts(d, hid)
                               if x["outcome"] != "ok"], 15, 0.1, what)[0]


# ------------------------------------------------------------ the tests

def test_redis_stream_500():
    """500 hooks to a stream: each XADD entry's message field is the v1
    message byte for byte, its other fields the queue sinks' attributes
    (the hook id, tenant and source among them); in far fewer batches
    than hooks (pipelined), and nothing left in the store."""
    r = Redis().start()
    d = Daemon(sources={"gh": redis_source(r.url(), stream="hooks")}
               ).start()
    t0 = int(time.time() * 1000) - 1000
    posted = post_all(d, "gh", bodies(500))
    d.settle_all(120)
    c = r.client()
    assert c.cmd("XLEN", "hooks") == 500
    seen = set()
    for e in c.cmd("XRANGE", "hooks", "-", "+"):
        f = xfields(e)
        hid = check_message(f.pop("message"), posted, "acme", "gh", t0)
        v = qmsg.decode(c.cmd("XRANGE", "hooks", e[0], e[0])[0][1][1])
        qmsg.check_attributes({k: x.decode() for k, x in f.items()}, v)
        assert f["ankusa_id"].decode() == hid
        assert (f["ankusa_tenant_id"], f["ankusa_source_id"]) == \
            (b"acme", b"gh"), f
        seen.add(hid)
    assert seen == set(posted), "missing %d" % len(set(posted) - seen)
    _, out, _ = d.ctl("stats", json_out=True)
    cnt = json.loads(out)["counters"]
    batches = cnt.get('ankusa_dispatch_batches_total{sink="redis"}', 0)
    note("redis stream: 500 hooks in %d batches" % batches)
    assert 0 < batches < 500, batches


def test_redis_channel_500():
    """500 hooks PUBLISHed to a channel with a subscriber: each message
    the subscriber reads is the v1 message byte for byte, every hook's
    once at least."""
    r = Redis().start()
    sub = r.client()
    assert sub.cmd("SUBSCRIBE", "events")[0] == b"subscribe"
    got = []

    def reader():
        try:
            while len(got) < 500:
                m = sub.read()
                if m[0] == b"message":
                    got.append(m[2])
        except (OSError, ConnectionError):
            pass
    th = threading.Thread(target=reader, daemon=True)
    th.start()
    d = Daemon(sources={"ev": redis_source(r.url(), channel="events")}
               ).start()
    t0 = int(time.time() * 1000) - 1000
    posted = post_all(d, "ev", bodies(500, "c"))
    d.settle_all(120)
    wait_until(lambda: len(got) >= 500, 20, 0.05, "500 messages read")
    ids = [check_message(m, posted, "acme", "ev", t0) for m in got]
    assert set(ids) == set(posted)
    note("redis channel: %d messages for 500 hooks" % len(ids))
    sub.close()


def test_redis_claim_check():
    """A body above the sink's inline_max_bytes goes by claim: the stream
    entry's message names the claim (the v1 message byte for byte with it),
    and the consumer fetches the body from the claim gateway, sha256
    equal; the small ones stay inline."""
    r = Redis().start()
    gw_port = ankusa.free_port()
    d = Daemon(sources={"big": redis_source(r.url(), stream="big",
                                            inline_max_bytes=1000)},
               extra={"claim_check": {
                   "ip": "127.0.0.1", "port": gw_port,
                   "store": {"type": "local", "root": os.path.join(
                       ankusa.tmpdir(), "claims")}}}).start()
    t0 = int(time.time() * 1000) - 1000
    bs = [os.urandom(5000 + i) for i in range(4)] + [b'{"small":%d}' % i
                                                     for i in range(3)]
    posted = post_all(d, "big", bs, workers=4)
    d.settle_all(60)

    def fetch(urn):
        claimref.parse(urn)
        import urllib.request
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (
                gw_port, claimref.path(urn)), timeout=10) as resp:
            assert resp.status == 200
            return resp.read()
    c = r.client()
    entries = c.cmd("XRANGE", "big", "-", "+")
    assert len(entries) == 7, len(entries)
    nclaim = 0
    for e in entries:
        raw = xfields(e)["message"]
        v = qmsg.decode(raw)
        body = posted[v["id"]][0]
        if len(body) > 1000:
            assert "claim" in v, "a %d-byte body went inline" % len(body)
            nclaim += 1
        else:
            assert "body_base64" in v, v
        check_message(raw, {v["id"]: (body, posted[v["id"]][1])},
                      "acme", "big", t0, fetch)
    assert nclaim == 4, nclaim


def test_redis_maxlen_trims():
    """maxlen 50 on a stream: after 200 hooks the stream holds exactly the
    last 50 entries added (XADD MAXLEN = 50), every hook delivered."""
    r = Redis().start()
    d = Daemon(sources={"t": redis_source(r.url(), stream="trim",
                                          maxlen=50)}).start()
    posted = post_all(d, "t", [b'{"m":%d}' % i for i in range(200)])
    st = d.settle_all(60)
    assert st["hooks"] == 0, st
    c = r.client()
    assert c.cmd("XLEN", "trim") == 50
    info = c.cmd("XINFO", "STREAM", "trim")
    info = {info[i]: info[i + 1] for i in range(0, len(info), 2)}
    assert info[b"entries-added"] == 200, info
    for e in c.cmd("XRANGE", "trim", "-", "+"):
        assert qmsg.decode(xfields(e)["message"])["id"] in posted


def test_redis_channel_no_subscriber():
    """A PUBLISH that reaches no subscriber is a failed attempt, as in the
    Elixir sink: the hook stays pending, its attempts say so; once a
    subscriber listens, the next attempt delivers it."""
    r = Redis().start()
    d = Daemon(sources={"n": redis_source(r.url(), channel="nobody")}
               ).start()
    hid = post_one(d, "n", b'{"x":1}')
    a = failed_attempt(d, hid)
    assert "no subscriber on channel nobody" in a["error"], a
    assert d.status()["pending"] == 1
    sub = r.client()
    sub.cmd("SUBSCRIBE", "nobody")
    m = sub.read()
    assert m[0] == b"message" and qmsg.decode(m[2])["id"] == hid, m
    d.settle_all(30)
    sub.close()


def test_redis_restart_under_load():
    """The server stopped while 600 hooks are posted and delivered, and
    started again 2 s later on the same port and AOF (appendfsync always):
    every hook answered 201 is in the stream at least once; duplicates
    (a batch whose replies the stop cut off, sent again) are counted.
    Nothing is dead-lettered: a dropped connection costs only the
    attempts in flight."""
    r = Redis(fsync="always").start()
    d = Daemon(sources={"l": redis_source(r.url(), stream="load")},
               extra={"dispatch": dispatch_conf(breaker_open_ms=500,
                                                breaker_max_open_ms=1000)}
               ).start()
    posted = {}
    done = threading.Event()

    def load():
        try:
            posted.update(post_all(d, "l", bodies(600, "l"), workers=4))
        finally:
            done.set()
    th = threading.Thread(target=load, daemon=True)
    th.start()
    c = r.client()
    wait_until(lambda: c.cmd("XLEN", "load") >= 100, 30, 0.01,
               "100 entries before the stop")
    before = c.cmd("XLEN", "load")
    c.close()
    r.stop()
    stopped_at = time.monotonic()
    time.sleep(2)
    r.start()
    note("redis stopped %.1f s" % (time.monotonic() - stopped_at))
    assert done.wait(120), "posting did not end"
    assert len(posted) == 600
    d.settle_all(120)
    assert d.dlq() == [], d.dlq()[:3]
    c = r.client()
    ids = [qmsg.decode(xfields(e)["message"])["id"]
           for e in c.cmd("XRANGE", "load", "-", "+")]
    missing = set(posted) - set(ids)
    assert not missing, "%d hooks answered 201 missing" % len(missing)
    # The stop came while hooks were still to deliver, and cost
    # attempts.
    failed = d.log_text().count("source=l sink=0(redis) attempt=")
    failed -= d.log_text().count("status=sent")
    assert before < 600 and failed > 0, (before, failed)
    note("redis restart: %d entries before the stop; %d entries for 600 "
         "hooks, %d duplicates; %d failed attempts" % (
             before, len(ids), len(ids) - len(set(ids)), failed))


def test_redis_auth():
    """requirepass and an ACL user: a sink with the default user's
    password (from a file, ${file:...}) and one with the ACL user's name
    and password deliver; a wrong password fails every attempt with the
    server's WRONGPASS, nothing written; an ACL user without the right to
    XADD to the key, with NOPERM."""
    r = Redis(args=["--requirepass", "top secret",
                    "--user", "app", "on", ">app-pw", "~app*", "+xadd",
                    "+ping", "+select",
                    "--user", "ro", "on", ">ro-pw", "~*", "+ping"])
    r.password = "top secret"
    r.start()
    pwfile = os.path.join(ankusa.tmpdir("secrets"), "redis-pw")
    with open(pwfile, "w") as f:
        f.write("top%20secret\n")
    ankusa.give_to_daemon_user(pwfile)
    srcs = {
        "def": redis_source(r.url(":${file:%s}" % pwfile),
                            stream="s-def"),
        "acl": redis_source(r.url("app:app-pw", db=0), stream="app-s"),
        "bad": redis_source(r.url(":wrong"), stream="s-bad"),
        "ro": redis_source(r.url("ro:ro-pw"), stream="s-ro"),
    }
    d = Daemon(sources=srcs).start()
    ids = {s: post_one(d, s, b'{"s":"%s"}' % s.encode()) for s in srcs}
    c = r.client()
    wait_until(lambda: c.cmd("XLEN", "s-def") == 1 and
               c.cmd("XLEN", "app-s") == 1, 20, 0.05, "both delivered")
    for s, want in (("bad", "redis WRONGPASS: AUTH"),
                    ("ro", "redis NOPERM: XADD")):
        a = failed_attempt(d, ids[s], "a failed attempt of %s" % s)
        assert want in a["error"], a
    assert c.cmd("EXISTS", "s-bad") == 0 and c.cmd("EXISTS", "s-ro") == 0
    assert qmsg.decode(xfields(c.cmd("XRANGE", "app-s", "-", "+")[0])[
        "message"])["id"] == ids["acl"]


def test_redis_tls():
    """rediss:// to a TLS-only server: verified against tls.ca_file, the
    server's certificate naming 127.0.0.1 (an IP SAN), delivered; the
    same server with another CA, or with the system's CAs, is refused
    (the certificate does not verify), nothing written."""
    certs = Certs()
    r = Redis(certs=certs).start()
    srcs = {
        "ok": redis_source(r.url(), stream="tls-ok",
                           tls={"ca_file": certs.ca}),
        "wrongca": redis_source(r.url(), stream="tls-bad",
                                tls={"ca_file": certs.other}),
        "sysca": redis_source(r.url(), stream="tls-sys"),
    }
    d = Daemon(sources=srcs).start()
    ids = {s: post_one(d, s, b'{"t":1}') for s in srcs}
    c = r.client()
    wait_until(lambda: c.cmd("XLEN", "tls-ok") == 1, 20, 0.05,
               "delivered over TLS")
    for s in ("wrongca", "sysca"):
        a = failed_attempt(d, ids[s], "a failed attempt of %s" % s)
        assert "redis TLS" in a["error"] and "certificate" in a["error"], a
    assert c.cmd("EXISTS", "tls-bad") == 0 and \
        c.cmd("EXISTS", "tls-sys") == 0


def test_redis_breaker_per_key():
    """A redis sink key whose server is down (nothing listens on its
    port): its breaker opens, breaker.opened goes as a notice to a redis
    stream (notifications.sinks takes the type), and another key on a
    live server delivers meanwhile; the server started on that port, the
    breaker closes and every hook of the key is delivered."""
    r = Redis().start()
    dead = Redis(name="redis-dead")
    d = Daemon(sources={
        "dead": redis_source(dead.url(), stream="d"),
        "live": redis_source(r.url(), stream="l")},
        extra={"dispatch": dispatch_conf(breaker_failures=2,
                                         breaker_open_ms=300,
                                         breaker_max_open_ms=600),
               "notifications": {"sinks": [
                   {"type": "redis", "url": r.url(),
                    "stream": "notices"}]}}).start()
    post_all(d, "dead", [b'{"d":%d}' % i for i in range(5)])
    post_all(d, "live", [b'{"l":%d}' % i for i in range(5)])
    wait_until(lambda: any(b.get("source") == "dead" and
                           b.get("state") == "open"
                           for b in d.breakers()), 20, 0.05,
               "the breaker of dead to open")
    assert not any(b.get("source") == "live" and b.get("state") == "open"
                   for b in d.breakers()), d.breakers()
    c = r.client()
    wait_until(lambda: c.cmd("XLEN", "l") == 5, 20, 0.05, "live delivered")

    def notices():
        out = []
        for e in c.cmd("XRANGE", "notices", "-", "+"):
            v = qmsg.decode(xfields(e)["message"])
            assert (v["tenant_id"], v["source_id"]) == (
                "_ankusa", "_notifications"), v
            out.append(json.loads(qmsg.body_of(v)))
        return out
    ev = wait_until(lambda: [n for n in notices()
                             if n["type"] == "breaker.opened"], 20, 0.1,
                    "breaker.opened on the notices stream")[0]
    assert ev["data"]["source"] == "dead" and \
        ev["data"]["module"] == "redis", ev
    dead.start()
    d.settle_all(60)
    assert dead.client().cmd("XLEN", "d") == 5
    wait_until(lambda: [n for n in notices()
                        if n["type"] == "breaker.closed"], 20, 0.1,
               "breaker.closed on the notices stream")
    assert d.dlq() == [], d.dlq()


def test_redis_sink_concurrency():
    """dispatch.sink_concurrency bounds a redis key's batches in flight
    (each a pipelined write on a deliver process's connection): with a
    server that holds each batch 0.3 s and 16 idle deliver processes, 3
    at most and 3 reached; every hook answered."""
    f = FakeRedis(0.3)
    d = Daemon(sources={"c": redis_source(f.url(), stream="c")},
               extra={"dispatch": dispatch_conf(
                   concurrency=16, sink_concurrency=3,
                   breaker_failures=0)}).start()
    post_all(d, "c", [b'{"c":%d}' % i for i in range(150)])
    d.settle_all(60)
    assert f.entries >= 150, f.entries
    note("redis: %d batches for 150 hooks, at most %d in flight (cap 3)"
         % (f.batches, f.max_in_flight))
    assert f.max_in_flight == 3, f.max_in_flight


def test_redis_egress_guard():
    """The egress guard checks the address connected to: a url whose name
    resolves to loopback, with egress.allow empty, is refused at connect
    and dead-lettered at once as egress_denied:<address>; nothing reaches
    the server."""
    r = Redis().start()
    d = Daemon(sources={"g": redis_source(
        "redis://localhost:%d" % r.port, stream="g")},
        extra={"egress": {"allow": []}}).start()
    post_one(d, "g", b'{"g":1}')
    dl = wait_until(lambda: d.dlq(), 20, 0.1, "a dead letter")
    assert "egress_denied:" in json.dumps(dl[0]), dl[0]
    assert r.client().cmd("EXISTS", "g") == 0


def test_redis_timeout():
    """A server that stops answering (DEBUG SLEEP 3) while a batch is in
    flight: the attempt times out after publish_timeout_ms (500) and is
    retried; once the server answers again the hook is delivered."""
    r = Redis(args=["--enable-debug-command", "yes"]).start()
    d = Daemon(sources={"t": redis_source(r.url(), stream="t",
                                          publish_timeout_ms=500)}
               ).start()
    blocker = r.client()
    blocker.send("DEBUG", "SLEEP", "3")
    time.sleep(0.2)
    hid = post_one(d, "t", b'{"t":1}')
    a = failed_attempt(d, hid, "a timed-out attempt")
    assert "timed out" in a["error"], a
    assert blocker.read() == b"OK"
    d.settle_all(30)
    c = r.client()
    ids = [qmsg.decode(xfields(e)["message"])["id"]
           for e in c.cmd("XRANGE", "t", "-", "+")]
    assert hid in ids, ids


def test_redis_auth_refused_sends_nothing():
    """A refused AUTH (here a password to a server that has none) or
    SELECT (a db the server does not have) fails the attempt before any
    command of the batch is sent: the server's words in the attempt, and
    nothing written to the stream, which the next attempts would add to
    again."""
    r = Redis().start()
    d = Daemon(sources={
        "pw": redis_source(r.url(":nopass"), stream="s-pw"),
        "db": redis_source(r.url(db=999), stream="s-db")}).start()
    ids = {s: post_one(d, s, b'{"a":1}') for s in ("pw", "db")}
    for s, want in (("pw", "AUTH"), ("db", "SELECT")):
        a = failed_attempt(d, ids[s], "a failed attempt of %s" % s)
        assert "redis ERR: %s" % want in a["error"], a
    time.sleep(0.5)
    c = r.client()
    assert (c.cmd("EXISTS", "s-pw"), c.cmd("EXISTS", "s-db")) == (0, 0), \
        "the batch's commands ran behind a refused AUTH or SELECT"
