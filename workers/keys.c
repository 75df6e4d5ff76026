/* SPDX-License-Identifier: ISC */
/*
 * keys.c: the keys a source reads from a request; see keys.h.
 *
 * Header values are taken as the parser left them (OWS trimmed).  JSON is
 * read by jscan.c, which accepts what jansson's json_loadb with no flags
 * accepts: a body that is not an object or array at the top, invalid
 * UTF-8, a "\u0000" in a string or an integer outside json_int_t makes
 * the whole body unparsable, so no JSON key is found in it; of duplicate
 * members the last wins.  Path segments are matched literally; the
 * configuration refuses empty segments.  A string without escapes is
 * returned where it lies in the body; one with escapes is decoded into
 * k->str, grown as needed.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf.h"
#include "httpreq.h"
#include "jscan.h"
#include "keys.h"
#include "log.h"
#include "sha256.h"

static const char *hdrs_request_get(const struct keys_hdrs *, const char *,
		    size_t *);
static const char *hdrs_pairs_get(const struct keys_hdrs *, const char *,
		    size_t *);

static const char *
hdrs_request_get(const struct keys_hdrs *h, const char *name, size_t *lenp)
{
	const struct httpreq *r = h->arg;
	const struct httpreq_header *hd;
	size_t nlen = strlen(name);
	int i;

	for (i = 0; i < r->nheaders; i++) {
		hd = &r->headers[i];
		if (hd->namelen == nlen &&
		    strncasecmp(hd->name, name, nlen) == 0) {
			*lenp = hd->valuelen;
			return hd->value;
		}
	}
	return NULL;
}

static const char *
hdrs_pairs_get(const struct keys_hdrs *h, const char *name, size_t *lenp)
{
	const struct header_kv *kv = h->arg;
	int i;

	for (i = 0; i < h->n; i++)
		if (strcasecmp(kv[i].name, name) == 0) {
			*lenp = strlen(kv[i].value);
			return kv[i].value;
		}
	return NULL;
}

void
keys_hdrs_request(struct keys_hdrs *h, const struct httpreq *r)
{
	h->get = hdrs_request_get;
	h->arg = r;
	h->n = r->nheaders;
}

void
keys_hdrs_pairs(struct keys_hdrs *h, const struct header_kv *kv, int n)
{
	h->get = hdrs_pairs_get;
	h->arg = kv;
	h->n = n;
}

const char *
keys_header(const struct keys_hdrs *h, const char *name, size_t *lenp)
{
	size_t len = 0;
	const char *v;

	v = h->get(h, name, &len);
	*lenp = v != NULL ? len : 0;
	return v;
}

void
keys_init(struct keys_ctx *k, const struct keys_hdrs *h, const void *body,
    size_t bodylen)
{
	memset(k, 0, sizeof(*k));
	k->hdrs = h;
	k->body = body;
	k->bodylen = bodylen;
	k->json = -1;
}

void
keys_free(struct keys_ctx *k)
{
	free(k->str);
	k->str = NULL;
	k->strcap = 0;
	k->json = -1;
}

int
keys_get(struct keys_ctx *k, const struct keyspec *ks, const char **keyp,
    size_t *lenp)
{
	struct jscan_val jv;
	const char *v;
	size_t len;
	int n;

	*keyp = NULL;
	*lenp = 0;
	if (ks->name == NULL)
		return 0;
	switch (ks->kind) {
	case KEY_HEADER:
		if ((v = keys_header(k->hdrs, ks->name, &len)) == NULL ||
		    len == 0)
			return 0;
		*keyp = v;
		*lenp = len;
		return 1;
	case KEY_JSON:
		/* An empty body is no JSON. */
		if (k->json == 0 || k->body == NULL || k->bodylen == 0)
			return 0;
		if ((k->json = jscan(k->body, k->bodylen, ks->name, &jv)) == 0)
			return 0;
		if (jv.kind == JSCAN_STRING) {
			if (jv.rawlen == 0)
				return 0;
			if (!jv.escaped) {
				*keyp = jv.raw;
				*lenp = jv.rawlen;
				return 1;
			}
			if (k->strcap < jv.rawlen) {
				free(k->str);
				if ((k->str = malloc(jv.rawlen)) == NULL)
					fatal("keys");
				k->strcap = jv.rawlen;
			}
			*keyp = k->str;
			*lenp = jscan_unescape(jv.raw, jv.rawlen, k->str);
			return 1;
		}
		if (jv.kind == JSCAN_INTEGER) {
			n = snprintf(k->num, sizeof(k->num), "%lld",
			    jv.integer);
			if (n < 0 || (size_t)n >= sizeof(k->num))
				return 0;
			*keyp = k->num;
			*lenp = n;
			return 1;
		}
		return 0;
	default:
		return 0;
	}
}

int
keys_dedupe(const struct source_conf *src, struct keys_ctx *k, char *out,
    size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[SHA256_LEN];
	const char *key;
	size_t len, i;
	char *p;

	if (outlen < KEYS_DEDUPE_MAX + 1)
		return -1;
	out[0] = '\0';
	if (!src->dedupe.enabled || !keys_get(k, &src->dedupe.key, &key, &len))
		return 0;
	if (len <= KEYS_DEDUPE_MAX && memchr(key, '\0', len) == NULL) {
		memcpy(out, key, len);
		out[len] = '\0';
		return len;
	}
	sha256(key, len, md);
	p = out;
	memcpy(p, "sha256:", 7);
	p += 7;
	for (i = 0; i < sizeof(md); i++) {
		*p++ = hex[md[i] >> 4];
		*p++ = hex[md[i] & 0xf];
	}
	*p = '\0';
	return p - out;
}
