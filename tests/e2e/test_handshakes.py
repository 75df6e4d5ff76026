# SPDX-License-Identifier: ISC
"""Providers' handshakes (issue 38, part 7), answered by the edge of the
real daemon and never stored nor delivered: Slack's url_verification,
Meta's hub.challenge GET, Zoom's endpoint.url_validation.

Each test runs a source of the provider's preset beside a real sink
(tests/test_sink), posts the handshake signed as the provider signs it
(computed here, in Python, independently of workers/), a forged or hostile
one, and one ordinary hook; then checks that only the ordinary hook was
stored and delivered, and the counters.
"""

import hashlib
import hmac
import json
import os
import time

from ankusa import (Daemon, TestSink, expect, expect_accepted,
                    give_to_daemon_user, post, request, sink_source,
                    tmpdir, wait_until)

SLACK_SECRET = "slack-signing-secret"
ZOOM_SECRET = "zoom-secret-token"
META_SECRET = "meta-app-secret"
META_TOKEN = "verify me+please"


def hm_hex(key, msg):
    return hmac.new(key.encode(), msg, hashlib.sha256).hexdigest()


def slack_headers(secret, body, t=None):
    t = int(time.time()) if t is None else t
    return {"Content-Type": "application/json",
            "X-Slack-Request-Timestamp": str(t),
            "X-Slack-Signature": "v0=" + hm_hex(secret, b"v0:%d:" % t +
                                                body)}


def zoom_headers(secret, body, t=None):
    t = int(time.time()) if t is None else t
    return {"Content-Type": "application/json; charset=utf-8",
            "x-zm-request-timestamp": str(t),
            "x-zm-signature": "v0=" + hm_hex(secret, b"v0:%d:" % t + body)}


def meta_headers(secret, body):
    return {"Content-Type": "application/json",
            "X-Hub-Signature-256": "sha256=" + hm_hex(secret, body)}


def counters(d):
    _, out, _ = d.ctl("stats", json_out=True)
    return json.loads(out)["counters"]


def counter(c, name, **labels):
    key = name + "{" + ",".join('%s="%s"' % kv for kv in labels.items()) \
        + "}"
    return c.get(key, 0)


def start(source, verify):
    """A daemon with one source of the preset delivering to a real sink."""
    s = TestSink().start()
    src = sink_source([{"type": "http", "url": s.url("/" + source)}])
    src["verify"] = verify
    d = Daemon(sources={source: src}).start()
    return d, s


def expect_echo(st, h, data, ctype, what):
    assert st == 200, "%s: expected 200, got %d %r" % (what, st, data[:200])
    assert h.get("content-type", "").split(";")[0] == ctype, \
        "%s: Content-Type %r, want %s" % (what, h.get("content-type"), ctype)
    assert h.get("x-content-type-options") == "nosniff", \
        "%s: no X-Content-Type-Options: nosniff in %r" % (what, h)


def only_the_hook_delivered(d, s, source, path, handshakes):
    """The ordinary hook, and it alone, reaches the sink; nothing stays;
    the handshakes answered are counted."""
    wait_until(lambda: s.received(path) >= 1, 20, 0.05, "the hook delivered")
    st = d.settle_all(60)
    assert st["hooks"] == 0, "hooks left: %r" % st
    time.sleep(0.3)
    recs = s.records()
    assert len(recs) == 1, "the sink got %d requests: %r" % (
        len(recs), [r.get("body", "")[:80] for r in recs])
    c = counters(d)
    assert counter(c, "ankusa_ingest_requests_total", source_id=source,
                   outcome="committed") == 1, c
    assert counter(c, "ankusa_ingest_requests_total", source_id=source,
                   outcome="handshake") == handshakes, c
    return c


def test_slack_url_verification():
    d, s = start("slack", {"type": "slack", "secret": SLACK_SECRET})
    path = "/webhooks/slack"
    challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    body = json.dumps({"token": "Jhj5dZrVaK7ZwHHjRyZWjbDl",
                       "challenge": challenge,
                       "type": "url_verification"}).encode()
    st, h, data = post(d.port, path, body,
                       headers=slack_headers(SLACK_SECRET, body))
    expect_echo(st, h, data, "text/plain", "url_verification")
    assert data == challenge.encode(), "answer %r" % data

    # Forged, or signed too long ago: refused as any forgery is.
    st, h, data = post(d.port, path, body,
                       headers=slack_headers("wrong", body))
    expect(st, h, data, 401, {"error": "verification_failed",
                              "reason": "no_match"}, "forged")
    st, h, data = post(d.port, path, body, headers=slack_headers(
        SLACK_SECRET, body, t=int(time.time()) - 301))
    expect(st, h, data, 401, {"error": "verification_failed",
                              "reason": "timestamp_out_of_tolerance"},
           "replayed")

    # Hostile, though signed: 400, and the edge goes on.
    hostile = [
        (json.dumps({"type": "url_verification",
                     "challenge": "x" * 10000}).encode(), "challenge"),
        (json.dumps({"type": "url_verification",
                     "challenge": {"a": 1}}).encode(), "challenge"),
        (json.dumps({"type": "url_verification",
                     "challenge": "<script>alert(1)</script> x"}).encode(),
         "challenge"),
        (b'{"type":"url_verification","challenge":"c"', "invalid_json"),
        (b'{"type":"url_verification","challenge":"c","x":' +
         b"[" * 5000 + b"]" * 5000 + b"}", "too_deep"),
    ]
    for b, reason in hostile:
        st, h, data = post(d.port, path, b,
                           headers=slack_headers(SLACK_SECRET, b))
        expect(st, h, data, 400, {"error": "bad_handshake",
                                  "reason": reason}, "hostile " + reason)

    # An ordinary event (mentioning the handshake) is a hook.
    ev = json.dumps({"type": "event_callback", "event": {
        "type": "message", "text": "about url_verification"}}).encode()
    st, h, data = post(d.port, path, ev,
                       headers=slack_headers(SLACK_SECRET, ev))
    expect_accepted(st, h, data, "event")

    c = only_the_hook_delivered(d, s, "slack", "/slack", 1)
    assert counter(c, "ankusa_ingest_refused_total",
                   reason="bad_handshake") == len(hostile), c
    assert counter(c, "ankusa_ingest_refused_total",
                   reason="verification_failed") == 2, c
    assert "handshake: source slack tenant default: url_verification " \
        "answered" in d.log_since_start(), "no log line"


def test_meta_hub_challenge():
    tokfile = os.path.join(tmpdir("secrets"), "meta_token")
    with open(tokfile, "w") as f:
        f.write(META_TOKEN + "\n")
    os.chmod(tokfile, 0o600)
    give_to_daemon_user(os.path.dirname(tokfile))
    d, s = start("fb", {"type": "meta", "secret": META_SECRET,
                        "verify_token": "${file:%s}" % tokfile})
    path = "/webhooks/fb"
    q = "?hub.mode=subscribe&hub.verify_token=verify+me%2Bplease" \
        "&hub.challenge=1158201444"
    st, h, data = request(d.port, "GET", path + q)
    expect_echo(st, h, data, "text/plain", "hub.challenge")
    assert data == b"1158201444", "answer %r" % data

    # A wrong token, or none.
    for bad in ("?hub.mode=subscribe&hub.verify_token=verify+me+please"
                "&hub.challenge=1",
                "?hub.mode=subscribe&hub.challenge=1"):
        st, h, data = request(d.port, "GET", path + bad)
        expect(st, h, data, 403, {"error": "verify_token_mismatch",
                                  "reason": "hub.verify_token"}, bad)
    # Hostile: a huge challenge, a NUL byte.
    for bad in ("?hub.mode=subscribe&hub.verify_token=verify+me%2Bplease"
                "&hub.challenge=" + "9" * 4000,
                "?hub.mode=subscribe&hub.verify_token=verify+me%2Bplease"
                "&hub.challenge=1%002"):
        st, h, data = request(d.port, "GET", path + bad)
        expect(st, h, data, 400, {"error": "bad_handshake",
                                  "reason": "query"}, bad[-20:])
    # Any other GET keeps its answer.
    st, h, data = request(d.port, "GET", path + "?x=1")
    expect(st, h, data, 405, {"error": "method_not_allowed"}, "plain GET")
    assert h.get("allow") == "POST"

    # The POSTs: signed as Meta signs them, or forged.
    ev = json.dumps({"object": "page", "entry": [{"id": "1"}]}).encode()
    st, h, data = post(d.port, path, ev, headers=meta_headers("wrong", ev))
    expect(st, h, data, 401, {"error": "verification_failed",
                              "reason": "no_match"}, "forged POST")
    st, h, data = post(d.port, path, ev,
                       headers=meta_headers(META_SECRET, ev))
    expect_accepted(st, h, data, "signed POST")

    # The token is a secret: GET /v1/config does not show it.
    st, _, doc = d.api("GET", "/v1/config")
    assert st == 200, st
    text = json.dumps(doc)
    assert "verify me" not in text and META_SECRET not in text, text
    assert doc["sources"]["fb"]["verify"]["verify_token"] == "<redacted>", \
        doc["sources"]["fb"]["verify"]

    c = only_the_hook_delivered(d, s, "fb", "/fb", 1)
    assert counter(c, "ankusa_ingest_refused_total",
                   reason="verify_token_mismatch") == 2, c
    assert counter(c, "ankusa_ingest_refused_total",
                   reason="bad_handshake") == 2, c


def test_zoom_url_validation():
    d, s = start("zoom", {"type": "zoom", "secret": ZOOM_SECRET})
    path = "/webhooks/zoom"
    for token in ("qgg8vlvZRS6UYooatFL8Aw", 'a"b\\c</x>'):
        body = json.dumps({"payload": {"plainToken": token},
                           "event_ts": 1654503849680,
                           "event": "endpoint.url_validation"}).encode()
        st, h, data = post(d.port, path, body,
                           headers=zoom_headers(ZOOM_SECRET, body))
        expect_echo(st, h, data, "application/json", "url_validation")
        got = json.loads(data)
        want = {"plainToken": token,
                "encryptedToken": hm_hex(ZOOM_SECRET, token.encode())}
        assert got == want, "answer %r, want %r" % (got, want)

    body = json.dumps({"payload": {"plainToken": "p"},
                       "event": "endpoint.url_validation"}).encode()
    st, h, data = post(d.port, path, body,
                       headers=zoom_headers("wrong", body))
    expect(st, h, data, 401, {"error": "verification_failed",
                              "reason": "no_match"}, "forged")
    st, h, data = post(d.port, path, body, headers={
        "Content-Type": "application/json",
        "x-zm-request-timestamp": str(int(time.time()))})
    expect(st, h, data, 401, {"error": "verification_failed",
                              "reason": "missing_signature"}, "unsigned")
    bad = json.dumps({"payload": {"plainToken": 12},
                      "event": "endpoint.url_validation"}).encode()
    st, h, data = post(d.port, path, bad,
                       headers=zoom_headers(ZOOM_SECRET, bad))
    expect(st, h, data, 400, {"error": "bad_handshake",
                              "reason": "plainToken"}, "non-string")

    ev = json.dumps({"event": "meeting.started",
                     "payload": {"object": {"id": "1"}}}).encode()
    st, h, data = post(d.port, path, ev,
                       headers=zoom_headers(ZOOM_SECRET, ev))
    expect_accepted(st, h, data, "event")

    c = only_the_hook_delivered(d, s, "zoom", "/zoom", 2)
    assert counter(c, "ankusa_verify_failures_total", source_id="zoom",
                   scheme="zoom") == 2, c
