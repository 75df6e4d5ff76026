/* SPDX-License-Identifier: ISC */
/*
 * qmsg.c: Queue message v1 (see qmsg.h): the JSON body and attributes of
 * one hook for the queue sinks.
 *
 * Pure and deterministic: the same entry gives the same bytes, which the
 * sqs sink's MD5 check and the tests depend on.  Nothing here fails but
 * a missing claim reference; running out of memory is fatal.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "job.h"
#include "log.h"
#include "qmsg.h"
#include "sha256.h"
#include "trace.h"
#include "utf8.h"

static void	qmsg_grow(char **, size_t *, size_t *, size_t);
static void	qmsg_put(char **, size_t *, size_t *, const char *, size_t);
static void	qmsg_puts(char **, size_t *, size_t *, const char *);
static void	qmsg_key(char **, size_t *, size_t *, const char *);
static void	qmsg_opt(char **, size_t *, size_t *, const char *);
static void	qmsg_u(char **, size_t *, size_t *, unsigned);
static void	qmsg_headers(char **, size_t *, size_t *,
		    const struct batch_entry *);
static void	qmsg_lower(char **, size_t *, size_t *, const char *);

static const char qmsg_hex[] = "0123456789abcdef";

static void
qmsg_grow(char **buf, size_t *len, size_t *cap, size_t n)
{
	size_t c;

	if (*len + n + 1 <= *cap)
		return;
	c = *cap ? *cap : 256;
	while (c < *len + n + 1)
		c *= 2;
	if ((*buf = realloc(*buf, c)) == NULL)
		fatal("qmsg");
	*cap = c;
}

static void
qmsg_put(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
	qmsg_grow(buf, len, cap, n);
	memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[*len] = '\0';
}

static void
qmsg_puts(char **buf, size_t *len, size_t *cap, const char *s)
{
	qmsg_put(buf, len, cap, s, strlen(s));
}

void
qmsg_cat(char **buf, size_t *len, size_t *cap, const char *s)
{
	qmsg_put(buf, len, cap, s, strlen(s));
}

/* ,"key": (the comma unless first in its object) */
static void
qmsg_key(char **buf, size_t *len, size_t *cap, const char *k)
{
	if (*len > 0 && (*buf)[*len - 1] != '{')
		qmsg_puts(buf, len, cap, ",");
	qmsg_json_str(buf, len, cap, k, strlen(k));
	qmsg_puts(buf, len, cap, ":");
}

/* A string, or null for NULL or "". */
static void
qmsg_opt(char **buf, size_t *len, size_t *cap, const char *s)
{
	if (s == NULL || *s == '\0')
		qmsg_puts(buf, len, cap, "null");
	else
		qmsg_json_str(buf, len, cap, s, strlen(s));
}

static void
qmsg_u(char **buf, size_t *len, size_t *cap, unsigned c)
{
	char e[7];

	e[0] = '\\';
	e[1] = 'u';
	e[2] = qmsg_hex[(c >> 12) & 0xf];
	e[3] = qmsg_hex[(c >> 8) & 0xf];
	e[4] = qmsg_hex[(c >> 4) & 0xf];
	e[5] = qmsg_hex[c & 0xf];
	qmsg_put(buf, len, cap, e, 6);
}

void
qmsg_json_str(char **buf, size_t *len, size_t *cap, const char *s,
    size_t slen)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, k, run;
	unsigned c;

	qmsg_puts(buf, len, cap, "\"");
	while (i < slen) {
		/* A run of bytes that go as they are. */
		for (run = i; run < slen && p[run] >= 0x20 && p[run] < 0x7f &&
		    p[run] != '"' && p[run] != '\\'; run++)
			;
		if (run > i) {
			qmsg_put(buf, len, cap, s + i, run - i);
			i = run;
			continue;
		}
		c = p[i];
		switch (c) {
		case '"':
			qmsg_puts(buf, len, cap, "\\\"");
			break;
		case '\\':
			qmsg_puts(buf, len, cap, "\\\\");
			break;
		case '\n':
			qmsg_puts(buf, len, cap, "\\n");
			break;
		case '\r':
			qmsg_puts(buf, len, cap, "\\r");
			break;
		case '\t':
			qmsg_puts(buf, len, cap, "\\t");
			break;
		default:
			if (c < 0x80) {
				qmsg_u(buf, len, cap, c);	/* controls, DEL */
				break;
			}
			if ((k = utf8_seq(p + i, slen - i, &c)) == 0) {
				qmsg_u(buf, len, cap, 0xfffd);
				break;
			}
			if (c >= 0x10000) {
				c -= 0x10000;
				qmsg_u(buf, len, cap, 0xd800 | (c >> 10));
				qmsg_u(buf, len, cap, 0xdc00 | (c & 0x3ff));
			} else
				qmsg_u(buf, len, cap, c);
			i += k;
			continue;
		}
		i++;
	}
	qmsg_puts(buf, len, cap, "\"");
}

/* A header name, lower-cased, as a JSON string. */
static void
qmsg_lower(char **buf, size_t *len, size_t *cap, const char *name)
{
	char *l;
	size_t i, n = strlen(name);

	if ((l = malloc(n + 1)) == NULL)
		fatal("qmsg");
	for (i = 0; i < n; i++)
		l[i] = name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 :
		    name[i];
	qmsg_json_str(buf, len, cap, l, n);
	free(l);
}

/* "headers":{...}: first positions, repeated names joined with ", ". */
static void
qmsg_headers(char **buf, size_t *len, size_t *cap,
    const struct batch_entry *e)
{
	char *v = NULL;
	size_t vlen, vcap;
	int i, k, seen;

	qmsg_key(buf, len, cap, "headers");
	qmsg_puts(buf, len, cap, "{");
	for (i = 0; i < e->nheaders; i++) {
		for (seen = 0, k = 0; k < i && !seen; k++)
			seen = strcasecmp(e->headers[k].name,
			    e->headers[i].name) == 0;
		if (seen)
			continue;
		vlen = vcap = 0;
		qmsg_puts(&v, &vlen, &vcap, e->headers[i].value);
		for (k = i + 1; k < e->nheaders; k++)
			if (strcasecmp(e->headers[k].name,
			    e->headers[i].name) == 0) {
				qmsg_puts(&v, &vlen, &vcap, ", ");
				qmsg_puts(&v, &vlen, &vcap,
				    e->headers[k].value);
			}
		if (i > 0 && (*buf)[*len - 1] != '{')
			qmsg_puts(buf, len, cap, ",");
		qmsg_lower(buf, len, cap, e->headers[i].name);
		qmsg_puts(buf, len, cap, ":");
		qmsg_json_str(buf, len, cap, v, vlen);
	}
	free(v);
	qmsg_puts(buf, len, cap, "}");
}

int
qmsg_build(struct qmsg *q, const struct batch_entry *e, uint64_t inline_max,
    char *err, size_t errlen)
{
	unsigned char md[SHA256_LEN];
	struct trace_ctx t;
	unsigned int i;
	char num[32], hex[65], *b64, *buf = NULL;
	size_t len = 0, cap = 0;
	const char *ctype;

	memset(q, 0, sizeof(*q));
	q->by_claim = e->bodylen > inline_max;
	if (q->by_claim && (e->claim_ref == NULL || *e->claim_ref == '\0')) {
		snprintf(err, errlen, "claim check-in missing");
		return -1;
	}
	if (e->dedupe_key != NULL && *e->dedupe_key != '\0') {
		if (asprintf(&q->idem, "%s:%s:%s", e->tenant, e->source,
		    e->dedupe_key) == -1)
			fatal("qmsg_build");
	} else if ((q->idem = strdup(e->hook_id)) == NULL)
		fatal("qmsg_build");
	ctype = e->content_type != NULL && *e->content_type != '\0' ?
	    e->content_type : QMSG_DEFAULT_TYPE;

	sha256(e->body, e->bodylen, md);
	for (i = 0; i < SHA256_LEN; i++) {
		hex[2 * i] = qmsg_hex[md[i] >> 4];
		hex[2 * i + 1] = qmsg_hex[md[i] & 0xf];
	}
	hex[64] = '\0';

	qmsg_puts(&buf, &len, &cap, "{\"v\":1");
	qmsg_key(&buf, &len, &cap, "id");
	qmsg_opt(&buf, &len, &cap, e->hook_id);
	qmsg_key(&buf, &len, &cap, "source_id");
	qmsg_opt(&buf, &len, &cap, e->source);
	qmsg_key(&buf, &len, &cap, "tenant_id");
	qmsg_opt(&buf, &len, &cap, e->tenant);
	qmsg_key(&buf, &len, &cap, "received_at");
	snprintf(num, sizeof(num), "%llu", (unsigned long long)e->received_at);
	qmsg_puts(&buf, &len, &cap, num);
	qmsg_key(&buf, &len, &cap, "content_type");
	qmsg_opt(&buf, &len, &cap, ctype);
	qmsg_key(&buf, &len, &cap, "size");
	snprintf(num, sizeof(num), "%zu", e->bodylen);
	qmsg_puts(&buf, &len, &cap, num);
	qmsg_key(&buf, &len, &cap, "sha256");
	qmsg_opt(&buf, &len, &cap, hex);
	qmsg_key(&buf, &len, &cap, "dedupe_key");
	qmsg_opt(&buf, &len, &cap, e->dedupe_key);
	qmsg_key(&buf, &len, &cap, "replay_id");
	qmsg_opt(&buf, &len, &cap, e->replay_id);
	qmsg_key(&buf, &len, &cap, "idempotency_key");
	qmsg_opt(&buf, &len, &cap, q->idem);
	qmsg_headers(&buf, &len, &cap, e);
	if (q->by_claim) {
		qmsg_key(&buf, &len, &cap, "claim");
		qmsg_opt(&buf, &len, &cap, e->claim_ref);
	} else {
		/* 4 characters per 3 bytes, rounded up, and the NUL. */
		if ((b64 = malloc((e->bodylen + 2) / 3 * 4 + 1)) == NULL)
			fatal("qmsg_build");
		b64[0] = '\0';
		if (e->bodylen > 0)
			EVP_EncodeBlock((unsigned char *)b64, e->body,
			    e->bodylen);
		qmsg_key(&buf, &len, &cap, "body_base64");
		qmsg_puts(&buf, &len, &cap, "\"");
		qmsg_puts(&buf, &len, &cap, b64);
		qmsg_puts(&buf, &len, &cap, "\"");
		free(b64);
	}
	qmsg_puts(&buf, &len, &cap, "}");
	q->json = buf;
	q->jsonlen = len;

#define ATTR(n, v) do {							\
	q->attrs[q->nattrs].name = (n);					\
	q->attrs[q->nattrs++].value = (v);				\
} while (0)
	ATTR("ankusa_id", e->hook_id);
	ATTR("ankusa_source_id", e->source);
	ATTR("ankusa_tenant_id", e->tenant);
	ATTR("ankusa_message_version", QMSG_VERSION);
	ATTR("ankusa_idempotency_key", q->idem);
	ATTR("content_type", ctype);
	if (e->dedupe_key != NULL && *e->dedupe_key != '\0')
		ATTR("ankusa_dedupe_key", e->dedupe_key);
	if (e->replay_id != NULL && *e->replay_id != '\0')
		ATTR("ankusa_replay_id", e->replay_id);
	trace_unpack(e->trace, &t);
	trace_format(&t, e->span, q->traceparent);
	ATTR("traceparent", q->traceparent);
	if (e->tracestate != NULL && *e->tracestate != '\0')
		ATTR("tracestate", e->tracestate);
#undef ATTR
	return 0;
}

void
qmsg_free(struct qmsg *q)
{
	free(q->json);
	free(q->idem);
	memset(q, 0, sizeof(*q));
}

size_t
qmsg_attrs_bytes(const struct qmsg *q)
{
	size_t n = 0;
	int i;

	for (i = 0; i < q->nattrs; i++)
		n += strlen(q->attrs[i].name) + strlen("String") +
		    strlen(q->attrs[i].value);
	return n;
}
