/* SPDX-License-Identifier: ISC */
/*
 * handshake.c: the providers' handshakes; see handshake.h.
 *
 * Only the few members a handshake reads are looked at; the answer is
 * built from the challenge alone, checked to be visible ASCII, so nothing
 * else of the provider's bytes is echoed.  Zoom's answer is written by
 * jansson, which escapes it as JSON.
 */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "conf.h"
#include "handshake.h"
#include "httpreq.h"
#include "log.h"
#include "sha256.h"

#define SLACK_EVENT	"url_verification"
#define ZOOM_EVENT	"endpoint.url_validation"

/* The hub.* parameters of a Meta GET, decoded. */
struct hub {
	char	mode[HANDSHAKE_CHALLENGE_MAX + 1];
	char	token[HANDSHAKE_CHALLENGE_MAX + 1];
	char	challenge[HANDSHAKE_CHALLENGE_MAX + 1];
	int	has_mode, has_token, has_challenge;
};

static int	 json_media_type(const char *);
static int	 too_deep(const unsigned char *, size_t);
static int	 challenge_ok(const char *, size_t);
static char	*dup_n(const char *, size_t);
static enum handshake_verdict bad(struct httpreq_answer *, const char *);
static enum handshake_verdict slack_answer(json_t *, struct httpreq_answer *);
static enum handshake_verdict zoom_answer(const struct source_conf *,
		    json_t *, struct httpreq_answer *);
static int	 url_decode(const char *, size_t, char *, size_t);
static int	 hub_parse(const char *, size_t, struct hub *);

const char *
handshake_name(const struct source_conf *src)
{
	switch (src->verify.type) {
	case VERIFY_SLACK:
		return SLACK_EVENT;
	case VERIFY_ZOOM:
		return ZOOM_EVENT;
	case VERIFY_META:
		return "hub.challenge";
	default:
		return NULL;
	}
}

/* "application/json", without case, then the end or its parameters. */
static int
json_media_type(const char *ct)
{
	static const char mt[] = "application/json";

	if (ct == NULL || strncasecmp(ct, mt, sizeof(mt) - 1) != 0)
		return 0;
	ct += sizeof(mt) - 1;
	return *ct == '\0' || *ct == ';' || *ct == ' ' || *ct == '\t';
}

/* Whether arrays and objects nest deeper than HANDSHAKE_DEPTH_MAX, read
 * outside strings: one pass, before the parser's recursion sees it. */
static int
too_deep(const unsigned char *p, size_t len)
{
	size_t i, depth = 0;
	int in_str = 0, esc = 0;

	for (i = 0; i < len; i++) {
		if (in_str) {
			if (esc)
				esc = 0;
			else if (p[i] == '\\')
				esc = 1;
			else if (p[i] == '"')
				in_str = 0;
			continue;
		}
		switch (p[i]) {
		case '"':
			in_str = 1;
			break;
		case '{':
		case '[':
			if (++depth > HANDSHAKE_DEPTH_MAX)
				return 1;
			break;
		case '}':
		case ']':
			if (depth > 0)
				depth--;
			break;
		}
	}
	return 0;
}

/* 1..HANDSHAKE_CHALLENGE_MAX bytes of visible ASCII. */
static int
challenge_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > HANDSHAKE_CHALLENGE_MAX)
		return 0;
	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
			return 0;
	return 1;
}

static char *
dup_n(const char *s, size_t len)
{
	char *d;

	if ((d = malloc(len + 1)) == NULL)
		fatal("handshake");
	memcpy(d, s, len);
	d[len] = '\0';
	return d;
}

static enum handshake_verdict
bad(struct httpreq_answer *a, const char *reason)
{
	httpreq_answer_reason(a, 400, "bad_handshake", reason);
	return HANDSHAKE_BAD;
}

/* Slack documents a text/plain answer of the challenge first. */
static enum handshake_verdict
slack_answer(json_t *o, struct httpreq_answer *a)
{
	json_t *c = json_object_get(o, "challenge");

	if (!json_is_string(c) ||
	    !challenge_ok(json_string_value(c), json_string_length(c)))
		return bad(a, "challenge");
	httpreq_answer_echo(a, "text/plain",
	    dup_n(json_string_value(c), json_string_length(c)));
	a->handshake = 1;
	return HANDSHAKE_ANSWERED;
}

/* {"plainToken":P,"encryptedToken":hex(HMAC-SHA256(secret, P))}: the
 * newest secret is the one Zoom holds once a rotation is done. */
static enum handshake_verdict
zoom_answer(const struct source_conf *src, json_t *o,
    struct httpreq_answer *a)
{
	static const char hex[] = "0123456789abcdef";
	const struct blob *key = &src->verify.secrets[0];
	unsigned char md[EVP_MAX_MD_SIZE];
	char mdhex[2 * EVP_MAX_MD_SIZE + 1];
	unsigned int mdlen = 0, i;
	json_t *p, *t, *r;
	char *body;

	p = json_object_get(o, "payload");
	if (!json_is_object(p))
		return bad(a, "payload");
	t = json_object_get(p, "plainToken");
	if (!json_is_string(t) ||
	    !challenge_ok(json_string_value(t), json_string_length(t)))
		return bad(a, "plainToken");
	if (src->verify.nsecrets < 1 || HMAC(EVP_sha256(), key->data,
	    (int)key->len, (const unsigned char *)json_string_value(t),
	    json_string_length(t), md, &mdlen) == NULL)
		fatalx("handshake: HMAC-SHA256 failed");
	for (i = 0; i < mdlen; i++) {
		mdhex[2 * i] = hex[md[i] >> 4];
		mdhex[2 * i + 1] = hex[md[i] & 0xf];
	}
	mdhex[2 * mdlen] = '\0';
	OPENSSL_cleanse(md, sizeof(md));
	if ((r = json_pack("{s:O,s:s}", "plainToken", t, "encryptedToken",
	    mdhex)) == NULL ||
	    (body = json_dumps(r, JSON_COMPACT)) == NULL)
		fatalx("handshake: out of memory");
	json_decref(r);
	httpreq_answer_echo(a, "application/json", body);
	a->handshake = 1;
	return HANDSHAKE_ANSWERED;
}

enum handshake_verdict
handshake_post(const struct source_conf *src, const char *content_type,
    const void *body, size_t len, struct httpreq_answer *a)
{
	const char *event, *member;
	enum handshake_verdict v;
	json_t *o, *e;

	switch (src->verify.type) {
	case VERIFY_SLACK:
		event = SLACK_EVENT;
		member = "type";
		break;
	case VERIFY_ZOOM:
		event = ZOOM_EVENT;
		member = "event";
		break;
	default:
		return HANDSHAKE_NONE;
	}
	if (!json_media_type(content_type) || len == 0 ||
	    len > HANDSHAKE_BODY_MAX ||
	    memmem(body, len, event, strlen(event)) == NULL)
		return HANDSHAKE_NONE;
	if (too_deep(body, len))
		return bad(a, "too_deep");
	if ((o = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL)) == NULL)
		return bad(a, "invalid_json");
	e = json_object_get(o, member);
	if (!json_is_object(o) || !json_is_string(e) ||
	    strcmp(json_string_value(e), event) != 0 ||
	    json_string_length(e) != strlen(event))
		v = HANDSHAKE_NONE;
	else if (src->verify.type == VERIFY_SLACK)
		v = slack_answer(o, a);
	else
		v = zoom_answer(src, o, a);
	json_decref(o);
	return v;
}

/*
 * application/x-www-form-urlencoded: "+" is a space, %XX a byte.  Into out
 * (outsz bytes, NUL-terminated); -1 for a bad escape, a NUL byte, or a
 * value that does not fit.
 */
static int
url_decode(const char *s, size_t len, char *out, size_t outsz)
{
	size_t i, n = 0;
	int hi, lo;
	char c;

	for (i = 0; i < len; i++) {
		c = s[i];
		if (c == '+')
			c = ' ';
		else if (c == '%') {
			if (i + 2 >= len)
				return -1;
			if ((hi = OPENSSL_hexchar2int((unsigned char)s[i + 1]))
			    < 0 || (lo = OPENSSL_hexchar2int(
			    (unsigned char)s[i + 2])) < 0)
				return -1;
			c = (char)(hi << 4 | lo);
			i += 2;
		}
		if (c == '\0' || n + 1 >= outsz)
			return -1;
		out[n++] = c;
	}
	out[n] = '\0';
	return 0;
}

/* The hub.* parameters of a query (q, len bytes, without "?" and the
 * fragment); -1 for a bad one, or one given twice. */
static int
hub_parse(const char *q, size_t len, struct hub *h)
{
	const char *item, *end = q + len, *sep, *eq;
	char name[32], *dst;
	int *has;

	memset(h, 0, sizeof(*h));
	for (item = q; item < end; item = sep + 1) {
		if ((sep = memchr(item, '&', end - item)) == NULL)
			sep = end;
		if ((eq = memchr(item, '=', sep - item)) == NULL)
			eq = sep;
		/* Names longer than ours are not ours. */
		if (url_decode(item, eq - item, name, sizeof(name)) == -1)
			continue;
		if (strcmp(name, "hub.mode") == 0)
			dst = h->mode, has = &h->has_mode;
		else if (strcmp(name, "hub.verify_token") == 0)
			dst = h->token, has = &h->has_token;
		else if (strcmp(name, "hub.challenge") == 0)
			dst = h->challenge, has = &h->has_challenge;
		else
			continue;
		if (*has || url_decode(eq < sep ? eq + 1 : sep,
		    eq < sep ? (size_t)(sep - eq - 1) : 0, dst,
		    HANDSHAKE_CHALLENGE_MAX + 1) == -1)
			return -1;
		*has = 1;
	}
	return 0;
}

enum handshake_verdict
handshake_get(const struct source_conf *src, const char *target,
    struct httpreq_answer *a)
{
	unsigned char want[SHA256_LEN], got[SHA256_LEN];
	const char *q, *tok = src->verify.verify_token;
	struct hub h;
	int match;

	if (src->verify.type != VERIFY_META)
		return HANDSHAKE_NONE;
	/* The query: after the first "?", unless a fragment came first. */
	q = target + strcspn(target, "?#");
	if (*q++ != '?')
		return HANDSHAKE_NONE;
	/* Only a hub.* parameter can be refused. */
	if (hub_parse(q, strcspn(q, "#"), &h) == -1)
		return bad(a, "query");
	if (!h.has_mode)
		return HANDSHAKE_NONE;
	if (strcmp(h.mode, "subscribe") != 0)
		return bad(a, "hub.mode");
	/* Digests of equal length: the comparison tells no length. */
	sha256(h.token, strlen(h.token), got);
	sha256(tok != NULL ? tok : "", tok != NULL ? strlen(tok) : 0, want);
	match = tok != NULL && h.has_token &&
	    CRYPTO_memcmp(want, got, sizeof(want)) == 0;
	OPENSSL_cleanse(&h.token, sizeof(h.token));
	if (!match) {
		httpreq_answer_reason(a, 403, "verify_token_mismatch",
		    tok == NULL ? "verify_token_unset" : "hub.verify_token");
		return HANDSHAKE_FORBIDDEN;
	}
	if (!h.has_challenge || !challenge_ok(h.challenge,
	    strlen(h.challenge)))
		return bad(a, "hub.challenge");
	httpreq_answer_echo(a, "text/plain", dup_n(h.challenge,
	    strlen(h.challenge)));
	a->handshake = 1;
	return HANDSHAKE_ANSWERED;
}
