# SPDX-License-Identifier: ISC
"""The consumer's side of Queue message v1: decode a message read from
SQS or Pub/Sub and check its body against what was posted.

    m = decode(text)                  # the v1 JSON, checked field by field
    body = body_of(m, fetch_claim)    # inline, or fetched by its claim
    assert_matches(m, body_posted)    # size and sha256 equal

fetch_claim(urn) -> bytes is the caller's (the claim gateway, later).
"""

import base64
import hashlib
import json
import re

KEYS = ["v", "id", "source_id", "tenant_id", "received_at", "content_type",
        "size", "sha256", "dedupe_key", "replay_id", "idempotency_key",
        "headers"]
CLAIM = re.compile(r"^urn:ankusa:claim:v2:[A-Za-z0-9_-]{1,64}:"
                   r"(?:[0-9A-HJKMNP-TV-Z]{26}){1,2}:\d{1,19}:"
                   r"[A-Za-z0-9_-]{43}$")


def decode(text):
    """The v1 message as a dict, its shape checked (keys in order)."""
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("ascii")
    m = json.loads(text)
    keys = list(m.keys())
    assert keys[:len(KEYS)] == KEYS, keys
    assert len(keys) == len(KEYS) + 1 and keys[-1] in ("body_base64",
                                                       "claim"), keys
    assert m["v"] == 1
    assert re.fullmatch(r"[0-9a-f]{64}", m["sha256"]), m["sha256"]
    assert isinstance(m["size"], int) and m["size"] >= 0
    for k, v in m["headers"].items():
        assert k == k.lower(), k
    if m["dedupe_key"] is not None:
        assert m["idempotency_key"] == "%s:%s:%s" % (
            m["tenant_id"], m["source_id"], m["dedupe_key"])
    else:
        assert m["idempotency_key"] == m["id"]
    if "claim" in m:
        # v2 as checked in now; v1 as stored before references were
        # signed (a test may plant one).
        assert CLAIM.match(m["claim"]) or m["claim"].startswith(
            "urn:ankusa:claim:v1:"), m["claim"]
    return m


def body_of(m, fetch_claim=None):
    if "body_base64" in m:
        return base64.b64decode(m["body_base64"], validate=True)
    if fetch_claim is None:
        raise AssertionError("message by claim %s and no way to fetch it"
                             % m["claim"])
    return fetch_claim(m["claim"])


def assert_matches(m, posted, fetch_claim=None):
    """The body the message stands for is the one that was posted."""
    body = body_of(m, fetch_claim)
    assert len(body) == m["size"] == len(posted), (len(body), m["size"],
                                                   len(posted))
    assert hashlib.sha256(body).hexdigest() == m["sha256"] == \
        hashlib.sha256(posted).hexdigest()


def attributes(m):
    """The attributes a v1 message must carry."""
    a = {"ankusa_id": m["id"], "ankusa_source_id": m["source_id"],
         "ankusa_tenant_id": m["tenant_id"], "ankusa_message_version": "1",
         "ankusa_idempotency_key": m["idempotency_key"],
         "content_type": m["content_type"]}
    if m["dedupe_key"] is not None:
        a["ankusa_dedupe_key"] = m["dedupe_key"]
    if m["replay_id"] is not None:
        a["ankusa_replay_id"] = m["replay_id"]
    return a


TRACEPARENT = re.compile(r"\A00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})\Z")


def check_attributes(got, m, tracestate=None):
    """got, a message's attributes, are those attributes(m) names and a
    W3C traceparent (version 00, ids not zero), with tracestate when the
    hook kept one (None: absent).  Returns the traceparent's (trace id,
    span id, flags)."""
    rest = dict(got)
    tp = rest.pop("traceparent", None)
    ts = rest.pop("tracestate", None)
    assert rest == attributes(m), (rest, attributes(m))
    assert ts == tracestate, (ts, tracestate)
    mt = TRACEPARENT.match(tp or "")
    assert mt is not None, tp
    assert int(mt.group(1), 16) != 0 and int(mt.group(2), 16) != 0, tp
    return mt.groups()
