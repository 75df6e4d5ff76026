# SPDX-License-Identifier: ISC
"""A forward proxy (issue 38, section 6; workers/egress.c, sink_http.c,
daemon/dispatch/dispatch_settle.c): a small CONNECT proxy written here
carries https deliveries (CONNECT, TLS end to end) and plain http ones
(absolute form), with its Proxy-Authorization from egress.proxy's
userinfo; a sink's proxy: null and egress.no_proxy go direct; the guard
checks the destination before CONNECT; a failure at the proxy (its 502
to CONNECT, a refused connection) is proxy_error in the attempt log and
the delivery log line, retried, and does not open the destination's
breaker.  Everything on loopback."""

import base64
import json
import socket
import socketserver
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import frames
from ankusa import (Daemon, dispatch_conf, expect_accepted, free_port,
                    post, sink_source, tmpdir, wait_until)
from test_queue_sinks import sample_entries
from test_sink_auth import _Sink, _serve, make_pki, tls_server


class _ProxyHandler(socketserver.StreamRequestHandler):
    """CONNECT host:port: 200 and a tunnel, or the server's fail status;
    an absolute-form request: relayed with Connection: close."""

    def handle(self):
        srv = self.server
        head = b""
        while b"\r\n\r\n" not in head:
            b = self.connection.recv(65536)
            if not b:
                return
            head += b
        hd, rest = head.split(b"\r\n\r\n", 1)
        lines = hd.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        fields = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            fields[k.strip().lower()] = v.strip()
        with srv.lock:
            srv.seen.append((method, target,
                             fields.get("proxy-authorization")))
        if method == "CONNECT":
            if srv.fail:
                self.connection.sendall(
                    b"HTTP/1.1 %d Bad Gateway\r\nContent-Length: 0\r\n"
                    b"\r\n" % srv.fail)
                return
            host, port = target.rsplit(":", 1)
            up = socket.create_connection((host, int(port)), 5)
            self.connection.sendall(
                b"HTTP/1.1 200 Connection established\r\n\r\n")
            if rest:
                up.sendall(rest)
            self._pipe(up)
            return
        # Absolute form: http://host:port/path.
        hostport = target.split("/", 3)[2]
        path = "/" + target.split("/", 3)[3] if target.count("/") >= 3 \
            else "/"
        host, _, port = hostport.partition(":")
        up = socket.create_connection((host, int(port or 80)), 5)
        keep = [ln for ln in lines[1:] if not ln.lower().startswith(
            ("proxy-", "connection"))]
        up.sendall(("%s %s HTTP/1.1\r\n%s\r\nConnection: close\r\n\r\n" % (
            method, path, "\r\n".join(keep))).encode("latin-1") + rest)
        self._pipe(up)

    def _pipe(self, up):
        a = self.connection
        a.settimeout(10)
        up.settimeout(10)

        def one(src, dst):
            try:
                while True:
                    b = src.recv(65536)
                    if not b:
                        break
                    dst.sendall(b)
            except OSError:
                pass
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        t = threading.Thread(target=one, args=(up, a), daemon=True)
        t.start()
        one(a, up)
        t.join(10)
        up.close()


class _Proxy(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def proxy(fail=0):
    srv = _Proxy(("127.0.0.1", 0), _ProxyHandler)
    srv.lock = threading.Lock()
    srv.seen = []
    srv.fail = fail
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def _purl(px, cred=""):
    return "http://%s127.0.0.1:%d" % (cred, px.server_address[1])


def _post(d, src):
    st, hd, data = post(d.port, "/webhooks/" + src, b'{"a":1}')
    return expect_accepted(st, hd, data, src)


def _delivered(d, hid):
    return d.api("GET", "/v1/hooks/" + hid)[0] == 404


def _attempts(d, hid):
    st, _, doc = d.api("GET", "/v1/hooks/%s/attempts" % hid)
    assert st == 200, (st, doc)
    return doc["attempts"]


def test_proxy_https_and_http():
    """egress.proxy carries an https delivery by CONNECT (TLS verified end
    to end with the sink's ca_file) and a plain http one in absolute form,
    each with Proxy-Authorization; a sink with proxy: null and a host in
    egress.no_proxy go direct; GET /v1/config hides the credentials."""
    p = make_pki(tmpdir("pki"))
    tsrv = tls_server(p, demand=False)
    psrv = _serve(_Sink, seen=[], verdict=lambda a: 200)
    px = proxy()
    tport, pport = tsrv.server_address[1], psrv.server_address[1]
    d = Daemon(sources={
        "tls": sink_source([{"type": "http", "url":
                             "https://127.0.0.1:%d/hook" % tport,
                             "tls": {"ca_file": p["ca.crt"]}}]),
        "plain": sink_source([{"type": "http", "url":
                               "http://127.0.0.1:%d/hook" % pport}]),
        "none": sink_source([{"type": "http", "url":
                              "http://127.0.0.1:%d/n" % pport,
                              "proxy": None}]),
        "np": sink_source([{"type": "http", "url":
                            "http://localhost:%d/np" % pport}])},
        extra={"egress": {"allow": ["127.0.0.0/8", "[::1]/128"],
                          "proxy": _purl(px, "pu:pp@"),
                          "no_proxy": ["localhost"]}}).start()
    hids = [_post(d, s) for s in ("tls", "plain", "none", "np")]
    for h in hids:
        wait_until(lambda: _delivered(d, h), 15, 0.1, "delivered " + h)
    auth = "Basic " + base64.b64encode(b"pu:pp").decode()
    assert sorted(px.seen) == sorted([
        ("CONNECT", "127.0.0.1:%d" % tport, auth),
        ("POST", "http://127.0.0.1:%d/hook" % pport, auth)]), px.seen
    assert len(tsrv.seen) == 1 and len(psrv.seen) == 3, \
        (tsrv.seen, psrv.seen)
    st, _, doc = d.api("GET", "/v1/config")
    assert doc["egress"]["proxy"] == "http://<redacted>@127.0.0.1:%d" % \
        px.server_address[1], doc["egress"]
    assert doc["egress"]["no_proxy"] == ["localhost"], doc["egress"]


def test_proxy_502_not_charged():
    """The proxy's 502 to CONNECT: proxy_error in the attempt log and the
    delivery log line, retried; with breaker_failures 1 and a long open
    time, the retry goes at its retry delay (the breaker did not open) and
    is delivered once the proxy lets it through."""
    p = make_pki(tmpdir("pki"))
    tsrv = tls_server(p, demand=False)
    px = proxy(fail=502)
    tport = tsrv.server_address[1]
    d = Daemon(sources={"s": sink_source([{
        "type": "http", "url": "https://127.0.0.1:%d/hook" % tport,
        "tls": {"ca_file": p["ca.crt"]}, "proxy": _purl(px)}])},
        extra={"dispatch": dispatch_conf(
            breaker_failures=1, breaker_open_ms=60000,
            retry={"base_ms": 300, "max_ms": 300, "max_attempts": 20,
                   "jitter": False})}).start()
    hid = _post(d, "s")

    def two():
        a = _attempts(d, hid)
        return len(a) >= 2 and a
    a = wait_until(two, 15, 0.1, "two attempts")
    for x in a[:2]:
        assert x["outcome"] == "error" and x["status"] is None, x
        assert x["error"] == \
            "proxy_error: the proxy answered CONNECT with 502", x
    assert tsrv.seen == [], tsrv.seen
    px.fail = 0
    wait_until(lambda: _delivered(d, hid), 15, 0.1, "delivered")
    assert len(tsrv.seen) == 1, tsrv.seen
    with open(d.logpath) as f:
        log = f.read()
    assert 'attempt=1 status=deferred' in log and \
        'reason="proxy_error"' in log, log[-2000:]
    assert "breaker open" not in log, log[-2000:]


def test_proxy_refused_and_guard():
    """A proxy that refuses connections is proxy_error too; a destination
    the guard refuses is refused before CONNECT is sent (egress.allow
    covers the proxy's port only): dead-lettered egress_denied, the proxy
    never asked."""
    dead = free_port()
    p2 = proxy()
    d = Daemon(sources={
        "r": sink_source([{"type": "http", "url": "https://localhost:7/h",
                           "proxy": "http://127.0.0.1:%d" % dead}]),
        "g": sink_source([{"type": "http", "url": "https://localhost:9/h",
                           "proxy": _purl(p2)}])},
        extra={"egress": {"allow": [
            "127.0.0.1/32:%d" % dead, "127.0.0.1/32:7", "[::1]/128:7",
            "127.0.0.1/32:%d" % p2.server_address[1]]},
            "dispatch": dispatch_conf(
                breaker_failures=1, breaker_open_ms=60000,
                retry={"base_ms": 200, "max_ms": 200, "max_attempts": 20,
                       "jitter": False})}).start()
    hr = _post(d, "r")
    hg = _post(d, "g")

    def two():
        a = _attempts(d, hr)
        return len(a) >= 2 and a
    a = wait_until(two, 15, 0.1, "two refused attempts")
    assert all(x["error"] == "proxy_error: could not connect to the proxy"
               for x in a), a
    wait_until(lambda: _attempts(d, hg), 15, 0.1, "the guarded attempt")
    g = _attempts(d, hg)
    assert g[0]["outcome"] == "egress_denied" and \
        g[0]["error"] in ("egress_denied:127.0.0.1",
                          "egress_denied:::1"), g
    assert p2.seen == [], p2.seen


class _Meta(BaseHTTPRequestHandler):
    """A metadata server: the token, to Metadata-Flavor: Google."""

    def do_GET(self):
        self.server.hits.append(self.path)
        b = json.dumps({"access_token": "ya29.meta", "expires_in": 3599,
                        "token_type": "Bearer"}).encode()
        self.send_response(200 if self.headers.get("Metadata-Flavor") ==
                           "Google" else 403)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def log_message(self, *a):
        pass


class _PubSub(BaseHTTPRequestHandler):
    """topics.publish: a message id per message, the Authorization kept."""

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        req = json.loads(self.rfile.read(n))
        self.server.auth.append(self.headers.get("Authorization"))
        b = json.dumps({"messageIds": [str(i) for i in
                                       range(len(req["messages"]))]})
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b.encode())

    def log_message(self, *a):
        pass


def test_proxy_pubsub_metadata_never_proxied():
    """A google_pubsub sink with a proxy (its own, or egress.proxy): with
    auth none its publish goes through the proxy (absolute form); with
    auth metadata, neither the metadata server's request nor the publish
    carrying its token does."""
    meta = ThreadingHTTPServer(("127.0.0.1", 0), _Meta)
    api = ThreadingHTTPServer(("127.0.0.1", 0), _PubSub)
    meta.hits, api.auth = [], []
    for srv in (meta, api):
        srv.daemon_threads = True
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    px = proxy()
    ep = "http://127.0.0.1:%d" % api.server_address[1]
    d = frames.Deliver(env={"GCE_METADATA_HOST":
                            "127.0.0.1:%d" % meta.server_address[1]},
                       conf='egress: {allow: ["127.0.0.0/8"], proxy: '
                       '"%s"}\nsources: {x: {sinks: [{type: log}]}}\n' %
                       _purl(px))
    try:
        ents = sample_entries(2, prefix="p")
        out = d.batch(30, frames.pubsub_sink("proj", "t", ep, auth="none",
                                             proxy=_purl(px)), ents)
        assert [r["result"] for r in out["entries"]] == ["ok"] * 2, out
        assert px.seen == [("POST", ep + "/v1/projects/proj/topics/"
                            "t:publish", None)], px.seen
        out = d.batch(31, frames.pubsub_sink("proj", "t", ep,
                                             auth="metadata",
                                             proxy=_purl(px)), ents)
        assert [r["result"] for r in out["entries"]] == ["ok"] * 2, out
        # egress.proxy, no proxy of the sink's own: the same.
        out = d.batch(32, frames.pubsub_sink("proj", "t", ep,
                                             auth="metadata"), ents)
        assert [r["result"] for r in out["entries"]] == ["ok"] * 2, out
        assert len(meta.hits) == 1, meta.hits
        assert len(px.seen) == 1, px.seen
        assert api.auth == [None] + ["Bearer ya29.meta"] * 2, api.auth
    finally:
        d.close()
        meta.shutdown()
        api.shutdown()


def test_proxy_queue_sink_proxy_error():
    """A queue sink's proxy that refuses: every entry proxy_error (a result
    of its own, so the master charges no breaker)."""
    d = frames.Deliver()
    try:
        out = d.batch(40, frames.pubsub_sink(
            "proj", "t", "http://127.0.0.1:9", auth="none",
            proxy="http://127.0.0.1:%d" % free_port()),
            sample_entries(2, prefix="q"))
        for r in out["entries"]:
            assert r["result"] == "proxy_error" and r["detail"] == \
                "proxy_error: could not connect to the proxy", r
    finally:
        d.close()
