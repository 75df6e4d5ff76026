# SPDX-License-Identifier: ISC
"""Claim references as common/claimref.h makes them, computed here with
Python's hmac so the tests check the daemon's against another
implementation, and make references of their own (a claim id of their
choosing, an expiry in the past) signed with the tests' key.

    urn:ankusa:claim:v2:<tenant>:<claim_id>:<exp_unix>:<signature>
"""

import base64
import hashlib
import hmac
import re
import time

import ankusa

# A claim id of 52 characters (checked in with a signed reference), or of
# 26 (a v1 one, whose stored reference a delivery signed).
V2 = re.compile(r"^urn:ankusa:claim:v2:([A-Za-z0-9_-]{1,64}):"
                r"((?:[0-9A-HJKMNP-TV-Z]{26}){1,2}):(\d{1,19}):"
                r"([A-Za-z0-9_-]{43})$")
TTL = 604800                    # claim_check.ref_ttl_s's default


def signature(text, key=None):
    mac = hmac.new((key or ankusa.CLAIM_KEY).encode(), text.encode(),
                   hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def sign(tenant, cid, exp=None, key=None):
    """A v2 reference to cid of tenant, good for an hour unless exp."""
    if exp is None:
        exp = int(time.time()) + 3600
    text = "urn:ankusa:claim:v2:%s:%s:%d" % (tenant, cid, exp)
    return text + ":" + signature(text, key)


def parse(urn, key=None):
    """(tenant, claim id, exp) of a v2 reference whose signature holds
    with key (the tests' by default); an AssertionError otherwise."""
    m = V2.match(urn)
    assert m, urn
    text = urn[:urn.rindex(":")]
    assert hmac.compare_digest(signature(text, key), m.group(4)), \
        "signature of %s is not the key's" % urn
    return m.group(1), m.group(2), int(m.group(3))


def path(urn):
    """The gateway's path for a reference."""
    return "/v1/claims/" + urn
