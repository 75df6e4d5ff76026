# SPDX-License-Identifier: ISC
"""Destination authentication (issue 38, section 4; workers/sink_http.c,
workers/oauth2.c, common/conf_sinknet.c): an http sink's auth bearer and
basic as seen by the sink; OAuth2 client credentials against a token
endpoint written here (the token kept across attempts, fetched again
after a short expires_in and after a 401); mutual TLS against a TLS
server that demands a client certificate, made by openssl(1) here; and
the secrets redacted in GET /v1/config.  Everything on loopback."""

import base64
import json
import os
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ankusa import (Daemon, dispatch_conf, expect_accepted, post,
                    sink_source, tmpdir, wait_until)


class _Sink(BaseHTTPRequestHandler):
    """Records each request's Authorization; answers the server's
    verdict(authorization) status."""

    protocol_version = "HTTP/1.1"

    def do_POST(self):
        n = int(self.headers.get("content-length") or 0)
        self.rfile.read(n)
        srv = self.server
        auth = self.headers.get("authorization")
        with srv.lock:
            srv.seen.append(auth)
        st = srv.verdict(auth)
        self.send_response(st)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self):
        self.do_POST()

    def log_message(self, *args):
        pass


class _Token(BaseHTTPRequestHandler):
    """A token endpoint: checks the client's basic credentials and the
    form, answers tok-1, tok-2, ... with the server's expires_in."""

    protocol_version = "HTTP/1.1"

    def do_POST(self):
        n = int(self.headers.get("content-length") or 0)
        form = self.rfile.read(n).decode()
        srv = self.server
        want = "Basic " + base64.b64encode(b"cid:s3cr%2Bt").decode()
        ok = self.headers.get("authorization") == want and \
            "grant_type=client_credentials" in form and \
            "audience=https%3A%2F%2Fapi.test" in form
        with srv.lock:
            srv.count += 1
            tok = "tok-%d" % srv.count
            srv.forms.append(form)
        body = json.dumps({"access_token": tok, "token_type": "Bearer",
                           "expires_in": srv.expires_in}).encode() \
            if ok else b'{"error":"invalid_client"}'
        self.send_response(200 if ok else 401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _serve(handler, ctx=None, **attrs):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    srv.lock = threading.Lock()
    for k, v in attrs.items():
        setattr(srv, k, v)
    if ctx is not None:
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def _daemon(sink, concurrency=None):
    dc = {"breaker_failures": 0}
    if concurrency is not None:
        dc["concurrency"] = concurrency
    return Daemon(sources={"s": sink_source([sink])},
                  extra={"dispatch": dispatch_conf(
                      retry={"base_ms": 100, "max_ms": 200,
                             "max_attempts": 10, "jitter": False},
                      **dc)}).start()


def _post(d):
    st, hd, data = post(d.port, "/webhooks/s", b'{"a":1}')
    return expect_accepted(st, hd, data, "post")


def _url(srv, scheme="http"):
    return "%s://127.0.0.1:%d/hook" % (scheme, srv.server_address[1])


def _secret_file(name, text):
    p = os.path.join(tmpdir("secrets"), name)
    with open(p, "w") as f:
        f.write(text + "\n")
    os.chmod(p, 0o600)
    return p


def test_bearer_and_basic():
    """bearer's token (from a file) and basic's credentials reach the
    sink as Authorization, in place of a configured one; GET /v1/config
    shows neither."""
    srv = _serve(_Sink, seen=[], verdict=lambda a: 200)
    tok = _secret_file("tok", "sekrit-bearer")
    d = Daemon(sources={
        "b": sink_source([{"type": "http", "url": _url(srv),
                           "headers": {"Authorization": "Bearer old"},
                           "auth": {"type": "bearer",
                                    "token": "${file:%s}" % tok}}]),
        "c": sink_source([{"type": "http", "url": _url(srv),
                           "auth": {"type": "basic", "username": "al",
                                    "password": "pw:1"}}])}).start()
    for s in ("b", "c"):
        st, hd, data = post(d.port, "/webhooks/" + s, b"{}")
        expect_accepted(st, hd, data, s)
    wait_until(lambda: len(srv.seen) >= 2, 15, 0.05, "two deliveries")
    assert sorted(srv.seen) == sorted([
        "Bearer sekrit-bearer",
        "Basic " + base64.b64encode(b"al:pw:1").decode()]), srv.seen
    st, _, doc = d.api("GET", "/v1/config")
    assert st == 200, doc
    text = json.dumps(doc)
    assert "sekrit" not in text and "pw:1" not in text, text
    a = doc["sources"]["b"]["sinks"][0]["auth"]
    assert a["type"] == "bearer" and a["token"] == "<redacted>", a


def test_oauth2_cached_refreshed_and_401():
    """One token serves several attempts; a short expires_in has it
    fetched again; a 401 from the sink drops it and the next attempt
    fetches another, which is delivered.  dispatch.concurrency 1: two
    deliver processes, each with its own token."""
    tk = _serve(_Token, count=0, forms=[], expires_in=3600)
    state = {"reject": set()}

    def verdict(auth):
        return 401 if auth in state["reject"] else 200
    srv = _serve(_Sink, seen=[], verdict=verdict)
    sec = _secret_file("cs", "s3cr+t")
    d = _daemon({"type": "http", "url": _url(srv),
                 "auth": {"type": "oauth2_client_credentials",
                          "token_url": _url(tk).replace("/hook", "/token"),
                          "client_id": "cid",
                          "client_secret": "${file:%s}" % sec,
                          "audience": "https://api.test"}},
                concurrency=1)
    for i in range(6):
        _post(d)
        wait_until(lambda: len(srv.seen) >= i + 1, 15, 0.05, "a delivery")
    assert all(a.startswith("Bearer tok-") for a in srv.seen), srv.seen
    first = tk.count
    assert 1 <= first <= 2, (first, srv.seen)
    # A 401 to every token given so far: each dropped by its process,
    # which fetches another, and the hook is delivered.
    state["reject"] = set(srv.seen)
    n0 = len(srv.seen)
    hid = _post(d)
    wait_until(lambda: d.api("GET", "/v1/hooks/" + hid)[0] == 404, 15,
               0.1, "the hook delivered")
    st, _, doc = d.api("GET", "/v1/hooks/%s/attempts" % hid)
    outs = [(a["outcome"], a["status"]) for a in doc["attempts"]]
    assert outs[-1] == ("ok", 200), outs
    assert ("error", 401) in outs, outs
    # A refused token is dropped: never sent again by its process.
    for i in range(6):
        hid = _post(d)
        wait_until(lambda: d.api("GET", "/v1/hooks/" + hid)[0] == 404,
                   15, 0.1, "a hook delivered")
    assert all(srv.seen[n0:].count(t) <= 1 for t in state["reject"]), \
        srv.seen
    assert tk.count > first, (first, tk.count)
    # A life of 1 s (the kept tokens refused once more, so that each
    # process gets one): each attempt 1.2 s apart fetches a token.
    tk.expires_in = 1
    state["reject"] = set(srv.seen)
    for i in range(3):
        hid = _post(d)
        wait_until(lambda: d.api("GET", "/v1/hooks/" + hid)[0] == 404,
                   15, 0.1, "a hook delivered")
    time.sleep(1.2)
    base = tk.count
    for i in range(3):
        n = len(srv.seen)
        _post(d)
        wait_until(lambda: len(srv.seen) > n, 15, 0.05, "a delivery")
        time.sleep(1.2)
    assert tk.count == base + 3, (base, tk.count)


def test_oauth2_endpoint_down():
    """A token endpoint that refuses: a transient attempt error naming it
    (never the secret), retried."""
    tk = _serve(_Token, count=0, forms=[], expires_in=3600)
    srv = _serve(_Sink, seen=[], verdict=lambda a: 200)
    d = _daemon({"type": "http", "url": _url(srv),
                 "auth": {"type": "oauth2_client_credentials",
                          "token_url": _url(tk).replace("/hook", "/token"),
                          "client_id": "cid", "client_secret": "wrong",
                          "audience": "https://api.test"}})
    hid = _post(d)

    def two():
        st, _, doc = d.api("GET", "/v1/hooks/%s/attempts" % hid)
        return st == 200 and len(doc["attempts"]) >= 2 and doc
    doc = wait_until(two, 15, 0.1, "two attempts")
    for a in doc["attempts"]:
        assert a["outcome"] == "error", a
        assert a["error"].startswith("oauth2: token endpoint http://"
                                     "127.0.0.1:%d/token: http 401" %
                                     tk.server_address[1]), a
        assert "wrong" not in a["error"], a
    assert srv.seen == [], srv.seen


def _openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_pki(dir):
    """A CA, a server certificate for 127.0.0.1 and sink.test, and a
    client certificate: their paths."""
    p = {k: os.path.join(dir, k) for k in (
        "ca.crt", "ca.key", "srv.crt", "srv.key", "srv.csr", "cli.crt",
        "cli.key", "cli.csr", "ext")}
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt",
             "ec_paramgen_curve:P-256", "-nodes", "-keyout", p["ca.key"],
             "-out", p["ca.crt"], "-days", "2", "-subj", "/CN=test ca")
    with open(p["ext"], "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:sink.test\n")
    for who, cn in (("srv", "sink.test"), ("cli", "client")):
        _openssl("req", "-newkey", "ec", "-pkeyopt",
                 "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                 p[who + ".key"], "-out", p[who + ".csr"], "-subj",
                 "/CN=" + cn)
        _openssl("x509", "-req", "-in", p[who + ".csr"], "-CA",
                 p["ca.crt"], "-CAkey", p["ca.key"], "-CAcreateserial",
                 "-out", p[who + ".crt"], "-days", "2",
                 *(["-extfile", p["ext"]] if who == "srv" else []))
    for k in ("cli.key", "cli.crt", "ca.crt"):
        os.chmod(p[k], 0o644)
    return p


def tls_server(p, verdict=lambda a: 200, demand=True):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(p["srv.crt"], p["srv.key"])
    if demand:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(p["ca.crt"])
    return _serve(_Sink, ctx=ctx, seen=[], verdict=verdict)


def test_mtls():
    """A sink that demands a client certificate: delivered with tls's
    files (read by ankusad, the deliver process opens none); without
    them, the handshake fails and the hook is not delivered; server_name
    is the name verified."""
    p = make_pki(tmpdir("pki"))
    srv = tls_server(p)
    good = {"type": "http", "url": _url(srv, "https"),
            "tls": {"client_cert_file": p["cli.crt"],
                    "client_key_file": p["cli.key"],
                    "ca_file": p["ca.crt"], "server_name": "sink.test"}}
    bare = {"type": "http", "url": _url(srv, "https"),
            "tls": {"ca_file": p["ca.crt"]}}
    d = Daemon(sources={"g": sink_source([good]),
                        "b": sink_source([bare])}).start()
    st, hd, data = post(d.port, "/webhooks/g", b"{}")
    hg = expect_accepted(st, hd, data, "g")
    st, hd, data = post(d.port, "/webhooks/b", b"{}")
    hb = expect_accepted(st, hd, data, "b")
    wait_until(lambda: d.api("GET", "/v1/hooks/" + hg)[0] == 404, 15, 0.1,
               "the mTLS hook delivered")
    assert len(srv.seen) == 1, srv.seen

    def failed():
        st, _, doc = d.api("GET", "/v1/hooks/%s/attempts" % hb)
        return st == 200 and doc["attempts"] and doc
    doc = wait_until(failed, 15, 0.1, "an attempt without a certificate")
    assert doc["attempts"][0]["outcome"] == "error", doc
    assert d.api("GET", "/v1/hooks/" + hb)[0] == 200
    assert len(srv.seen) == 1, srv.seen
