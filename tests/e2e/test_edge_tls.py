# SPDX-License-Identifier: ISC
"""TLS on ingest (issue 36, section 3): http.tls beside the plain
listener, with certificates made at test time by openssl(1) in the test's
temp dir (an expired one under faketime): a good certificate serves 201
with ALPN http/1.1 while clients that fail their handshakes cost no one
else; an expired certificate and one from a CA the client does not trust
fail at the client; TLS 1.0 is refused by the edge; client certificates
from http.tls.client_ca_file are accepted, others refused; a SIGHUP with a
new certificate puts it in force for new connections while an open
keep-alive connection is still answered.

Every test is named test_edge_tls_*, talks to 127.0.0.1 only and ends by
itself.
"""

import http.client
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time

from ankusa import (Daemon, Skip, default_sources, expect, expect_accepted,
                    free_port, give_to_daemon_user, hold_source,
                    ingest_refused, note, post, tmpdir, wait_until)


def openssl(*args, fake=None):
    cmd = ["openssl"] + list(args)
    if fake is not None:
        if shutil.which("faketime") is None:
            raise Skip("faketime not installed (scripts/test installs it)")
        cmd = ["faketime", fake] + cmd
    r = subprocess.run(cmd, capture_output=True, timeout=60)
    assert r.returncode == 0, (cmd, r.stderr.decode(errors="replace"))


class PKI:
    """A CA and the certificates it signs, as PEM files in dir."""

    def __init__(self, dir, name):
        self.dir = dir
        self.name = name
        self.key = self.path(name + ".key")
        self.crt = self.path(name + ".crt")
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt",
                "ec_paramgen_curve:P-256", "-nodes", "-keyout", self.key,
                "-out", self.crt, "-days", "2", "-subj",
                "/CN=%s" % name)

    def path(self, f):
        return os.path.join(self.dir, f)

    def issue(self, cn, san="IP:127.0.0.1,DNS:localhost", days=2,
              fake=None, client=False):
        """(cert, key) paths of a certificate for cn signed by this CA."""
        key, csr, crt = (self.path(cn + x) for x in (".key", ".csr",
                                                     ".crt"))
        ext = self.path(cn + ".ext")
        with open(ext, "w") as f:
            f.write("subjectAltName=%s\n" % san)
            f.write("extendedKeyUsage=%s\n" % (
                "clientAuth" if client else "serverAuth"))
        openssl("req", "-newkey", "ec", "-pkeyopt",
                "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
                "-out", csr, "-subj", "/CN=%s" % cn)
        openssl("x509", "-req", "-in", csr, "-CA", self.crt, "-CAkey",
                self.key, "-CAcreateserial", "-out", crt, "-days",
                str(days), "-extfile", ext, fake=fake)
        return crt, key


def tls_daemon(server, client_ca=None, sources=None, http=None, **tls):
    """A daemon with one edge, the plain listener and http.tls with the
    (cert, key) server; the files readable by the daemon's user."""
    d = Daemon(workers=1, sources=sources)
    d.http.update(http or {})
    t = {"ip": "127.0.0.1", "port": free_port(), "cert_file": server[0],
         "key_file": server[1]}
    if client_ca is not None:
        t["client_ca_file"] = client_ca
    t.update(tls)
    d.http["tls"] = t
    d.tls_port = t["port"]
    d.write_config()
    give_to_daemon_user(os.path.dirname(server[0]))
    return d.start()


def client_ctx(ca, cert=None, alpn=("http/1.1",)):
    ctx = ssl.create_default_context(cafile=ca)
    if alpn:
        ctx.set_alpn_protocols(list(alpn))
    if cert is not None:
        ctx.load_cert_chain(cert[0], cert[1])
    return ctx


def https_post(d, ctx, conn=None, body=b'{"tls":1}'):
    """A POST over HTTPS, on conn (kept) or a connection of its own."""
    if conn is not None:
        return post(d.tls_port, "/webhooks/github", body, conn=conn)
    conn = http.client.HTTPSConnection("127.0.0.1", d.tls_port, timeout=10,
                                       context=ctx)
    try:
        return post(d.tls_port, "/webhooks/github", body, conn=conn)
    finally:
        conn.close()


def handshake(d, ctx):
    """An SSL socket to the TLS listener, handshake done (or raises)."""
    raw = socket.create_connection(("127.0.0.1", d.tls_port), 10)
    try:
        return ctx.wrap_socket(raw, server_hostname="127.0.0.1")
    except Exception:
        raw.close()
        raise


def peer_cn(s):
    for rdn in s.getpeercert()["subject"]:
        for k, v in rdn:
            if k == "commonName":
                return v
    return None


def test_edge_tls_good_and_failed_handshakes():
    """With a good certificate: a POST over HTTPS is 201, ALPN says
    http/1.1 and the plain listener serves beside it; a client that
    offers only h2 is refused; 40 clients that stall or botch their
    handshakes slow no one: a good client is answered in under 2 s
    meanwhile; the failures are counted (tls_handshake); a stop drains
    and exits 0."""
    dir = tmpdir("pki")
    ca = PKI(dir, "ca")
    d = tls_daemon(ca.issue("server"))
    ctx = client_ctx(ca.crt)
    st, h, data = https_post(d, ctx)
    expect_accepted(st, h, data, "HTTPS")
    s = handshake(d, ctx)
    assert s.selected_alpn_protocol() == "http/1.1", \
        s.selected_alpn_protocol()
    assert s.version() in ("TLSv1.2", "TLSv1.3"), s.version()
    s.close()
    st, h, data = post(d.port, "/webhooks/github")
    expect_accepted(st, h, data, "plain HTTP beside TLS")
    try:
        handshake(d, client_ctx(ca.crt, alpn=("h2",))).close()
        raise AssertionError("a client offering only h2 was served")
    except ssl.SSLError as e:
        note("h2 only: %s" % e.reason)
    bad = []
    try:
        for i in range(20):
            # Stalled: a connection that sends nothing of a handshake.
            bad.append(socket.create_connection(("127.0.0.1", d.tls_port),
                                                10))
            # Botched: garbage where a ClientHello belongs.
            b = socket.create_connection(("127.0.0.1", d.tls_port), 10)
            b.sendall(b"\x16\x03\x01\x00\x05hello" + os.urandom(64))
            bad.append(b)
        t0 = time.monotonic()
        st, h, data = https_post(d, ctx)
        took = time.monotonic() - t0
        expect_accepted(st, h, data, "beside 40 bad handshakes")
        note("good client beside 40 bad handshakes: %.3f s" % took)
        assert took < 2.0, took
    finally:
        for b in bad:
            b.close()
    wait_until(lambda: ingest_refused(d, "tls_handshake") >= 21,
               timeout=10, what="failed handshakes counted")
    assert len(d.queue()) == 3
    # A stop with both listeners: the edges drain, the master exits 0,
    # and neither port takes a connection after.
    assert d.stop() == 0
    for port in (d.port, d.tls_port):
        try:
            socket.create_connection(("127.0.0.1", port), 2).close()
            raise AssertionError("port %d open after the stop" % port)
        except ConnectionRefusedError:
            pass


def test_edge_tls_expired_wrong_ca_old_version():
    """An expired certificate and one from a CA the client does not trust
    fail the client's verification; a client that speaks only TLS 1.0 is
    refused by the edge with a protocol_version alert; with
    min_version 1.3, a TLS 1.2 client is refused the same way."""
    dir = tmpdir("pki")
    ca = PKI(dir, "ca")
    other = PKI(dir, "other")
    expired = ca.issue("expired", days=1, fake=time.strftime(
        "%Y-%m-%d %H:%M:%S", time.localtime(time.time() - 10 * 86400)))
    d = tls_daemon(expired)
    try:
        https_post(d, client_ctx(ca.crt))
        raise AssertionError("an expired certificate was accepted")
    except ssl.SSLCertVerificationError as e:
        note("expired: %s" % e.verify_message)
        assert "expired" in e.verify_message, e.verify_message
    d.stop()

    d = tls_daemon(ca.issue("server"))
    try:
        https_post(d, client_ctx(other.crt))
        raise AssertionError("a certificate of an untrusted CA accepted")
    except ssl.SSLCertVerificationError as e:
        note("wrong CA: %s" % e.verify_message)

    old = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    old.check_hostname = False
    old.verify_mode = ssl.CERT_NONE
    old.set_ciphers("DEFAULT:@SECLEVEL=0")
    old.minimum_version = ssl.TLSVersion.TLSv1
    old.maximum_version = ssl.TLSVersion.TLSv1
    try:
        handshake(d, old).close()
        raise AssertionError("TLS 1.0 was spoken")
    except ssl.SSLError as e:
        note("TLS 1.0: %s" % e.reason)
        # The edge's alert, not the client's own refusal.
        assert e.reason == "TLSV1_ALERT_PROTOCOL_VERSION", e.reason
    d.stop()

    d = tls_daemon(ca.issue("server13"), min_version="1.3")
    v12 = client_ctx(ca.crt)
    v12.maximum_version = ssl.TLSVersion.TLSv1_2
    try:
        handshake(d, v12).close()
        raise AssertionError("TLS 1.2 spoken under min_version 1.3")
    except ssl.SSLError as e:
        note("TLS 1.2 under 1.3: %s" % e.reason)
        assert e.reason == "TLSV1_ALERT_PROTOCOL_VERSION", e.reason
    st, h, data = https_post(d, client_ctx(ca.crt))
    expect_accepted(st, h, data, "TLS 1.3")


def test_edge_tls_client_certificates():
    """With http.tls.client_ca_file: a client certificate of that CA is
    accepted (201), one of another CA fails the handshake, and a client
    without one is still served."""
    dir = tmpdir("pki")
    ca = PKI(dir, "ca")
    clients = PKI(dir, "clients")
    other = PKI(dir, "other")
    d = tls_daemon(ca.issue("server"), client_ca=clients.crt)
    good = clients.issue("provider-a", san="DNS:provider-a.example",
                         client=True)
    st, h, data = https_post(d, client_ctx(ca.crt, cert=good))
    expect_accepted(st, h, data, "a client certificate of client_ca_file")
    st, h, data = https_post(d, client_ctx(ca.crt))
    expect_accepted(st, h, data, "no client certificate")
    bad = other.issue("intruder", client=True)
    try:
        st, h, data = https_post(d, client_ctx(ca.crt, cert=bad))
        raise AssertionError("a client certificate of another CA: %d" % st)
    except (ssl.SSLError, ConnectionError) as e:
        note("client certificate of another CA: %r" % e)
    assert len(d.queue()) == 2


def test_edge_tls_sighup_new_certificate():
    """A SIGHUP after the certificate's files are replaced: a new
    connection sees the new certificate, and a keep-alive connection
    opened before is still answered.  Before that, a SIGHUP with a key
    that is not the certificate's is a reload error: the old certificate
    stays in force."""
    dir = tmpdir("pki")
    ca = PKI(dir, "ca")
    crt, key = ca.issue("first")
    d = tls_daemon((crt, key))
    ctx = client_ctx(ca.crt)
    s = handshake(d, ctx)
    assert peer_cn(s) == "first"
    s.close()
    kept = http.client.HTTPSConnection("127.0.0.1", d.tls_port, timeout=10,
                                       context=ctx)
    st, h, data = https_post(d, ctx, conn=kept)
    expect_accepted(st, h, data, "keep-alive, first request")
    ncrt, nkey = ca.issue("second")
    _, stray = ca.issue("stray")
    shutil.copyfile(ncrt, crt)
    shutil.copyfile(stray, key)
    give_to_daemon_user(dir)
    os.kill(d.pid, signal.SIGHUP)

    def logged():
        with open(d.logpath, errors="replace") as f:
            return "not the key of http.tls.cert_file" in f.read()
    wait_until(logged, timeout=10, what="the bad key refused at reload")
    s = handshake(d, ctx)
    assert peer_cn(s) == "first", peer_cn(s)
    s.close()
    shutil.copyfile(ncrt, crt)
    shutil.copyfile(nkey, key)
    give_to_daemon_user(dir)
    os.kill(d.pid, signal.SIGHUP)

    def renewed():
        s = handshake(d, ctx)
        try:
            return peer_cn(s) == "second"
        finally:
            s.close()
    wait_until(renewed, timeout=15, what="the new certificate served")
    st, h, data = https_post(d, ctx, conn=kept)
    expect_accepted(st, h, data, "keep-alive, after the SIGHUP")
    kept.close()
    assert len(d.queue()) == 2


def fingerprint(crt):
    r = subprocess.run(["openssl", "x509", "-in", crt, "-noout",
                        "-fingerprint", "-sha256"], capture_output=True,
                       text=True, timeout=20)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip().split("=", 1)[1]


def test_edge_tls_mtls_sources():
    """Sources with verify type mtls (san, subject, fingerprint): the
    client certificate of http.tls.client_ca_file that matches is 201;
    another of the same CA is 401 client_certificate_mismatch; a client
    without one, over TLS or plain HTTP, is 401 no_client_certificate;
    a source with verify none is served without one."""
    dir = tmpdir("pki")
    ca = PKI(dir, "ca")
    clients = PKI(dir, "clients")
    a = clients.issue("provider-a", san="DNS:provider-a.example",
                      client=True)
    b = clients.issue("provider-b", san="DNS:provider-b.example",
                      client=True)
    sources = default_sources()
    sources["by-san"] = hold_source(verify={"type": "mtls",
                                            "san": "provider-a.example"})
    sources["by-subject"] = hold_source(verify={"type": "mtls",
                                                "subject": "CN=provider-a"})
    sources["by-fp"] = hold_source(verify={"type": "mtls",
                                           "fingerprint": fingerprint(a[0])})
    d = tls_daemon(ca.issue("server"), client_ca=clients.crt,
                   sources=sources)
    ok = 0
    for src in ("by-san", "by-subject", "by-fp"):
        path = "/webhooks/" + src
        for who, cert, want in (("a", a, None),
                                ("b", b, "client_certificate_mismatch"),
                                ("none", None, "no_client_certificate")):
            conn = http.client.HTTPSConnection(
                "127.0.0.1", d.tls_port, timeout=10,
                context=client_ctx(ca.crt, cert=cert))
            try:
                st, h, data = post(d.tls_port, path, b"{}", conn=conn)
            finally:
                conn.close()
            what = "%s with %s's certificate" % (src, who)
            if want is None:
                expect_accepted(st, h, data, what)
                ok += 1
            else:
                expect(st, h, data, 401, {"error": "verification_failed",
                                          "reason": want}, what)
        st, h, data = post(d.port, path, b"{}")
        expect(st, h, data, 401, {"error": "verification_failed",
                                  "reason": "no_client_certificate"},
               src + " over plain HTTP")
    st, h, data = post(d.port, "/webhooks/github", b"{}")
    expect_accepted(st, h, data, "verify none over plain HTTP")
    assert len(d.queue()) == ok + 1


def test_edge_tls_handshake_deadline():
    """A handshake has http.header_timeout_ms (2 s here) from the accept:
    a client that sends nothing, or half a ClientHello, is closed by the
    edge by then, and the half one is counted as tls_handshake."""
    dir = tmpdir("pki")
    ca = PKI(dir, "ca")
    d = tls_daemon(ca.issue("server"), http={"header_timeout_ms": 2000})
    silent = socket.create_connection(("127.0.0.1", d.tls_port), 10)
    half = socket.create_connection(("127.0.0.1", d.tls_port), 10)
    half.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
    t0 = time.monotonic()
    try:
        for s in (silent, half):
            s.settimeout(8)
            try:
                assert s.recv(4096) == b"", "data from the edge"
            except ConnectionError:
                pass
            took = time.monotonic() - t0
            note("closed after %.1f s" % took)
            assert 1.5 <= took < 4.0, took
    finally:
        silent.close()
        half.close()
    wait_until(lambda: ingest_refused(d, "tls_handshake") >= 1,
               timeout=10, what="the half handshake counted")
