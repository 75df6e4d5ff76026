# SPDX-License-Identifier: ISC
"""The PROXY protocol on ingest (issue 36, section 3): behind a real
HAProxy (Debian's haproxy, in the foreground with -db, mode tcp, on
loopback) sending version 2 (send-proxy-v2) and version 1 (send-proxy),
the client address the header carries is the one http.max_conns_per_ip
counts and the log names; a PROXY header from an address not in
http.trusted_proxies is refused, and so is a trusted proxy's connection
without one.

HAProxy connects from 127.0.0.4 (its server line's source), the only
trusted proxy; the test's clients connect to HAProxy from 127.0.0.5 and
127.0.0.6, and straight to the daemon from 127.0.0.1 and 127.0.0.4.
"""

import socket
import time

import ankusa
from ankusa import (Daemon, expect_accepted, free_port, head_bytes,
                    ingest_refused, note, wait_until)

PROXY_SRC = "127.0.0.4"

HAPROXY_CFG = """\
global
    maxconn 200

defaults
    mode tcp
    timeout connect 2s
    timeout client 30s
    timeout server 30s

frontend ingest
    bind 127.0.0.1:{port}
    default_backend ankusa

backend ankusa
    server n1 127.0.0.1:{dport} source {src} {send}
"""


def haproxy(dport, send):
    """HAProxy forwarding to the daemon with a PROXY header of the given
    kind (send-proxy or send-proxy-v2), listening once this returns."""
    port = free_port()
    lb = ankusa.HAProxy(HAPROXY_CFG.format(port=port, dport=dport,
                                           src=PROXY_SRC, send=send),
                        name="haproxy-" + send)
    lb.port = port
    lb.start()
    wait_until(lambda: listening(port), timeout=10,
               what="haproxy listening")
    return lb


def listening(port):
    try:
        socket.create_connection(("127.0.0.1", port), 1).close()
        return True
    except OSError:
        return False


def proxy_daemon(**http):
    d = Daemon(workers=1)
    d.http.update({"trusted_proxies": [PROXY_SRC + "/32"]})
    d.http.update(http)
    d.write_config()
    return d.start()


def connect(port, src):
    return socket.create_connection(("127.0.0.1", port), 10,
                                    source_address=(src, 0))


def post_on(s, body=b'{"a":1}'):
    """One POST on socket s; (status, body) or None if closed unanswered."""
    try:
        s.sendall(head_bytes("POST", "/webhooks/github",
                             [("Content-Length", str(len(body))),
                              ("Connection", "close")], body))
    except ConnectionError:
        return None
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except ConnectionError:
        pass
    if not data:
        return None
    head, _, rest = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), rest


def closed_unanswered(s, timeout=5):
    s.settimeout(timeout)
    try:
        return s.recv(65536) == b""
    except ConnectionError:
        return True
    except socket.timeout:
        return False


def behind(send):
    """Through HAProxy with send: 201s; the per-client cap counts the
    client the header names, not HAProxy; the refusal's log line names
    the client."""
    d = proxy_daemon(max_conns_per_ip=2)
    lb = haproxy(d.port, send)
    st, body = post_on(connect(lb.port, "127.0.0.5"))
    expect_accepted(st, {}, body, "through haproxy (%s)" % send)
    # Two idle connections of 127.0.0.5 fill its cap; a third is refused,
    # while 127.0.0.6, through the same proxy, is served.
    held = [connect(lb.port, "127.0.0.5") for _ in range(2)]
    try:
        time.sleep(0.5)
        third = connect(lb.port, "127.0.0.5")
        assert closed_unanswered(third), \
            "a third connection of 127.0.0.5 was kept"
        third.close()
        st, body = post_on(connect(lb.port, "127.0.0.6"))
        expect_accepted(st, {}, body, "127.0.0.6 beside 127.0.0.5's cap")
        wait_until(lambda: ingest_refused(d, "conns_per_ip") == 1,
                   timeout=10,
                   what="one conns_per_ip refusal counted")
        with open(d.logpath, errors="replace") as f:
            log = f.read()
        assert "connection from 127.0.0.5 refused" in log, \
            "the refusal does not name the client"
        assert "connection from %s" % PROXY_SRC not in log
    finally:
        for s in held:
            s.close()
    assert len(d.queue()) == 2


def test_edge_proxy_v2_haproxy():
    """HAProxy with send-proxy-v2: see behind()."""
    behind("send-proxy-v2")


def test_edge_proxy_v1_haproxy():
    """HAProxy with send-proxy (version 1): see behind()."""
    behind("send-proxy")


def test_edge_proxy_forged_refused():
    """A PROXY header (v1 or v2) from 127.0.0.1, not a trusted proxy, is
    refused: the connection closed unanswered, counted as
    proxy_untrusted and logged (at most once a second); a trusted
    proxy's connection without a header, or with a malformed one, is
    refused as proxy_missing; plain HTTP from 127.0.0.1 is served."""
    d = proxy_daemon()
    v1 = b"PROXY TCP4 203.0.113.9 127.0.0.1 5555 80\r\n"
    v2 = (b"\r\n\r\n\x00\r\nQUIT\n\x21\x11\x00\x0c" +
          socket.inet_aton("203.0.113.9") + socket.inet_aton("127.0.0.1") +
          b"\x15\xb3\x00\x50")
    for forged in (v1, v2):
        s = connect(d.port, "127.0.0.1")
        s.sendall(forged)
        assert post_on(s) is None, "a forged PROXY header was answered"
        s.close()
    wait_until(lambda: ingest_refused(d, "proxy_untrusted") == 2,
               timeout=10,
               what="2 proxy_untrusted refusals counted")
    for first in (b"", b"PROXY TCP4 nonsense\r\n"):
        s = connect(d.port, PROXY_SRC)
        s.sendall(first)
        assert post_on(s) is None, \
            "a trusted proxy's connection without a good header answered"
        s.close()
    wait_until(lambda: ingest_refused(d, "proxy_missing") == 2,
               timeout=10,
               what="2 proxy_missing refusals counted")
    st, body = post_on(connect(d.port, "127.0.0.1"))
    expect_accepted(st, {}, body, "plain HTTP from 127.0.0.1")
    with open(d.logpath, errors="replace") as f:
        log = f.read()
    assert "connection from 127.0.0.1 refused: a PROXY header" in log, \
        "the forged header was not logged"
    note("log: " + [l for l in log.splitlines() if "proxy:" in l][0])
