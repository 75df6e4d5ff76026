/* SPDX-License-Identifier: ISC */
/*
 * sink_http.c: the http sink, one attempt per call, over libcurl.
 *
 * The request, per the contract: the method (post|put|patch) with the raw
 * body verbatim; Content-Type the hook's (else application/octet-stream);
 * the forwarded headers; the configured headers, which replace forwarded
 * ones of the same name; x-ankusa-id, x-ankusa-source,
 * x-ankusa-idempotency-key (tenant:source:dedupe_key with a dedupe key,
 * else the hook id) and x-ankusa-tenant, x-ankusa-dedupe-key,
 * x-ankusa-replay-id when set; x-ankusa-received-at (the edge's unix ms),
 * x-ankusa-body-sha256 (lowercase hex of the body's SHA-256 as the edge
 * computed it, stored with the hook),
 * x-ankusa-verification (ok, failed or skipped, as stored with the hook)
 * and x-ankusa-verification-flagged (true or false); traceparent (the
 * hook's trace id and flags, this attempt's span id) and tracestate when
 * the hook kept one, which replace forwarded or configured headers of
 * those names; with secrets, the Standard Webhooks headers
 * webhook-id, webhook-timestamp and webhook-signature (one v1 token per
 * secret), which replace forwarded or configured headers of those names.
 * Forwarded headers that would change the framing of our request
 * (content-length, transfer-encoding, host, connection and the other
 * hop-by-hop names, expect) and any x-ankusa-* are never passed on,
 * whatever the master sent.  A control byte in a value (a dedupe key from
 * a JSON field may hold one) is sent as %XX so it cannot split a header.
 *
 * auth: an Authorization of its own (Bearer token; Basic user:pass; an
 * OAuth2 client credentials token, workers/oauth2.c), which replaces a
 * forwarded or configured one.  A token that cannot be had fails the
 * attempt, transient, naming the token endpoint, before the sink is
 * reached (and that counts for the sink's breaker: without a token it
 * cannot be reached, and the breaker's one probe keeps a failing token
 * endpoint from being asked by every row).  A 401 with an OAuth2 token
 * drops the token and is transient: the next attempt fetches another.
 *
 * Transport: no redirects, TLS verification as libcurl's defaults (on),
 * http and https only, timeout_ms as the whole transfer's deadline, no
 * "Expect: 100-continue".  A plain http:// URL with no proxy (none
 * configured, none in the environment, or the sink's proxy: null) goes
 * through http1.c, the sink's own HTTP/1.1 client, at a fraction of
 * libcurl's CPU; https, tls options and proxies through libcurl, one easy
 * handle per process, reset between jobs.  Either keeps its connection
 * alive for the next job to the same host.  tls: the client certificate,
 * its key and the CAs are the PEM text the master read (blobs, no file
 * opened here); server_name is the URL's host for libcurl (SNI, the
 * certificate's name, Host) while CURLOPT_CONNECT_TO sends the connection
 * to the URL's own host.  A proxy (egress.h): CONNECT for https, absolute
 * form for http; a failure at the proxy is JOB_PROXY_ERROR, "proxy_error:
 * ...", which the master retries without charging the sink's breaker.
 *
 * The answer: at most max_response_bytes of its body are read.  Past that
 * the write callback aborts the transfer (the connection is then closed,
 * not reused), and the status already received decides the outcome as if
 * the body had ended there: a sink that streams forever cannot hold the
 * attempt until its timeout.  2xx is ok; 400 401 403 404 410 413 422 are
 * permanent; 408, 429 and 5xx are transient and honour Retry-After
 * (delay-seconds or an HTTP-date, parsed strictly, clamped to 1 h); any
 * other status is transient; a transport error is transient with its
 * text (curl's, or http1.c's in the same words).
 */
#include "config.h"

#include <sys/types.h>

#include <ctype.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "clock.h"
#include "egress.h"
#include "http1.h"
#include "job.h"
#include "log.h"
#include "msg.h"
#include "netaddr.h"
#include "oauth2.h"
#include "sha256.h"
#include "sink.h"
#include "trace.h"
#include "utf8.h"

#define SINK_HTTP_UA		"ankusa/" PACKAGE_VERSION
#define SINK_HTTP_WATCH_MS	100	/* between two calls of the abort watch */

/* What one libcurl transfer collects from the answer: what http1.c's
 * collects (status, cap, Retry-After, the body's start). */
struct sink_http_xfer {
	uint64_t		 cap;		/* max_response_bytes */
	uint64_t		 got;		/* body bytes seen */
	uint64_t		 last_watch;	/* mono ms */
	struct http1_answer	 a;		/* last: 64 KiB not cleared */
};

/* Where sink_http_lines hands each header line. */
typedef void	(*sink_http_line_fn)(void *, const char *);

static CURL		*sink_http_curl;	/* one per process: keep-alive */
static size_t		 sink_http_capture;	/* attempts.capture_bytes */
static char		 sink_http_excerpt[HTTP1_KEEP_MAX + 1];
static sink_abort_fn	 sink_http_abort;

static size_t	sink_http_write_cb(char *, size_t, size_t, void *);
static size_t	sink_http_header_cb(char *, size_t, size_t, void *);
static int	sink_http_xfer_cb(void *, curl_off_t, curl_off_t, curl_off_t,
		    curl_off_t);
static int	sink_http_add(sink_http_line_fn, void *, const char *,
		    const char *);
static void	sink_http_lines(const struct job *, time_t, const char *,
		    sink_http_line_fn, void *);
static int	sink_http_send(const struct job *, struct job_outcome *,
		    const char *);
static char	*sink_http_authz(const struct job *, struct job_outcome *);
static int	sink_http_tls(const struct sink_conf *, char **);
static struct curl_slist *sink_http_headers_authz(const struct job *,
		    time_t, const char *);
static void	sink_http_slist_line(void *, const char *);
static void	sink_http_http1_line(void *, const char *);
static int	sink_http_token(const char *);
static int	sink_http_framing(const char *);
static int	sink_http_signed_name(const char *);
static int	sink_http_traced(const char *);
static void	sink_http_hook_lines(const struct job *, sink_http_line_fn,
		    void *);
static int	sink_http_configured(const struct sink_conf *, const char *);
static int	sink_http_lit(const char **, const char *);
static int	sink_http_num(const char **, int, int *);
static int	sink_http_pick(const char **, const char *const *, int *);
static int	sink_http_date(const char *, time_t *);
static int	sink_http_outcome(const struct job *, struct job_outcome *,
		    const struct http1_answer *);
static int	sink_http_run_http1(const struct job *, struct job_outcome *,
		    const char *, const char *);

static const char *const sink_http_days[] = {
	"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun", NULL
};
static const char *const sink_http_ldays[] = {
	"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
	"Sunday", NULL
};
static const char *const sink_http_months[] = {
	"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
	"Nov", "Dec", NULL
};

/* Names a forwarded header may not have: they frame our own request or
 * are hop-by-hop; content-type is set from the hook's. */
static const char *const sink_http_framing_names[] = {
	"content-length", "content-type", "transfer-encoding", "host",
	"connection", "keep-alive", "te", "trailer", "upgrade", "expect",
	"proxy-connection", NULL
};

void
sink_http_set_abort(sink_abort_fn fn)
{
	sink_http_abort = fn;
}

void
sink_http_cleanup(void)
{
	http1_close();
	http1_forget_env();
	oauth2_cleanup();
	if (sink_http_curl != NULL)
		curl_easy_cleanup(sink_http_curl);
	sink_http_curl = NULL;
}

/* --- the pure parts --- */

enum job_result
sink_http_classify(long status, int *honour)
{
	*honour = 0;
	if (status >= 200 && status <= 299)
		return JOB_OK;
	switch (status) {
	case 400:
	case 401:
	case 403:
	case 404:
	case 410:
	case 413:
	case 422:
		return JOB_PERMANENT;
	case 408:
	case 429:
		*honour = 1;
		return JOB_ERROR;
	default:
		break;
	}
	if (status >= 500 && status <= 599)
		*honour = 1;
	return JOB_ERROR;
}

int
sink_http_retry_after(const char *v, time_t now, uint64_t *ms)
{
	const char *p;
	uint64_t s = 0;
	time_t t;

	if (*v >= '0' && *v <= '9') {
		/* delay-seconds = 1*DIGIT; any length, clamped. */
		for (p = v; *p != '\0'; p++) {
			if (*p < '0' || *p > '9')
				return -1;
			if (s <= SINK_RETRY_AFTER_MAX_MS / 1000)
				s = s * 10 + (*p - '0');
		}
		s *= 1000;
		*ms = s < SINK_RETRY_AFTER_MAX_MS ? s : SINK_RETRY_AFTER_MAX_MS;
		return 0;
	}
	if (sink_http_date(v, &t) == -1)
		return -1;
	if (t <= now)
		*ms = 0;
	else if ((uint64_t)(t - now) >= SINK_RETRY_AFTER_MAX_MS / 1000)
		*ms = SINK_RETRY_AFTER_MAX_MS;
	else
		*ms = (uint64_t)(t - now) * 1000;
	return 0;
}

static int
sink_http_lit(const char **p, const char *lit)
{
	size_t n = strlen(lit);

	if (strncmp(*p, lit, n) != 0)
		return -1;
	*p += n;
	return 0;
}

/* Exactly n digits. */
static int
sink_http_num(const char **p, int n, int *v)
{
	int i;

	*v = 0;
	for (i = 0; i < n; i++) {
		if ((*p)[i] < '0' || (*p)[i] > '9')
			return -1;
		*v = *v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	return 0;
}

/* One of names, case-sensitive as the grammar has it; the longest first
 * is not needed: no name is a prefix of another in one list. */
static int
sink_http_pick(const char **p, const char *const *names, int *idx)
{
	int i;

	for (i = 0; names[i] != NULL; i++)
		if (sink_http_lit(p, names[i]) == 0) {
			*idx = i;
			return 0;
		}
	return -1;
}

/*
 * HTTP-date (RFC 9110 5.6.7), the three forms a recipient must take:
 *   IMF-fixdate  Sun, 06 Nov 1994 08:49:37 GMT
 *   RFC 850      Sunday, 06-Nov-94 08:49:37 GMT
 *   asctime      Sun Nov  6 08:49:37 1994
 * Exact spacing, exact names, fields in range; the weekday is not checked
 * against the date.  A two-digit year below 70 is 20yy, else 19yy.
 */
static int
sink_http_date(const char *v, time_t *out)
{
	static const int mdays[] = {
		31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31
	};
	const char *p = v;
	struct tm tm;
	int wd, mon, day, year, hh, mi, ss, leap;

	memset(&tm, 0, sizeof(tm));
	if (sink_http_pick(&p, sink_http_ldays, &wd) == 0 && *p == ',') {
		/* RFC 850 */
		if (sink_http_lit(&p, ", ") == -1 ||
		    sink_http_num(&p, 2, &day) == -1 ||
		    sink_http_lit(&p, "-") == -1 ||
		    sink_http_pick(&p, sink_http_months, &mon) == -1 ||
		    sink_http_lit(&p, "-") == -1 ||
		    sink_http_num(&p, 2, &year) == -1 ||
		    sink_http_lit(&p, " ") == -1)
			return -1;
		year += year < 70 ? 2000 : 1900;
	} else {
		p = v;
		if (sink_http_pick(&p, sink_http_days, &wd) == -1)
			return -1;
		if (*p == ',') {
			/* IMF-fixdate */
			if (sink_http_lit(&p, ", ") == -1 ||
			    sink_http_num(&p, 2, &day) == -1 ||
			    sink_http_lit(&p, " ") == -1 ||
			    sink_http_pick(&p, sink_http_months, &mon) == -1 ||
			    sink_http_lit(&p, " ") == -1 ||
			    sink_http_num(&p, 4, &year) == -1 ||
			    sink_http_lit(&p, " ") == -1)
				return -1;
		} else {
			/* asctime: the day is 2DIGIT or SP 1DIGIT */
			if (sink_http_lit(&p, " ") == -1 ||
			    sink_http_pick(&p, sink_http_months, &mon) == -1 ||
			    sink_http_lit(&p, " ") == -1)
				return -1;
			if (*p == ' ') {
				p++;
				if (sink_http_num(&p, 1, &day) == -1)
					return -1;
			} else if (sink_http_num(&p, 2, &day) == -1)
				return -1;
			if (sink_http_lit(&p, " ") == -1 ||
			    sink_http_num(&p, 2, &hh) == -1 ||
			    sink_http_lit(&p, ":") == -1 ||
			    sink_http_num(&p, 2, &mi) == -1 ||
			    sink_http_lit(&p, ":") == -1 ||
			    sink_http_num(&p, 2, &ss) == -1 ||
			    sink_http_lit(&p, " ") == -1 ||
			    sink_http_num(&p, 4, &year) == -1 || *p != '\0')
				return -1;
			goto check;
		}
	}
	/* The common tail of IMF-fixdate and RFC 850. */
	if (sink_http_num(&p, 2, &hh) == -1 || sink_http_lit(&p, ":") == -1 ||
	    sink_http_num(&p, 2, &mi) == -1 || sink_http_lit(&p, ":") == -1 ||
	    sink_http_num(&p, 2, &ss) == -1 ||
	    sink_http_lit(&p, " GMT") == -1 || *p != '\0')
		return -1;
check:
	leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
	if (day < 1 || day > mdays[mon] || (mon == 1 && day == 29 && !leap) ||
	    hh > 23 || mi > 59 || ss > 60)
		return -1;
	tm.tm_year = year - 1900;
	tm.tm_mon = mon;
	tm.tm_mday = day;
	tm.tm_hour = hh;
	tm.tm_min = mi;
	tm.tm_sec = ss;
	*out = timegm(&tm);
	return 0;
}

char *
sink_http_sign(const struct blob *secrets, int nsecrets, const char *id,
    const char *ts, const void *body, size_t len)
{
	OSSL_PARAM params[2];
	EVP_MAC *mac;
	EVP_MAC_CTX *ctx;
	unsigned char md[EVP_MAX_MD_SIZE];
	char *out, *p;
	size_t mdlen;
	int i;

	/* "v1," + 44 base64 characters + a space or the NUL, per secret. */
	if ((out = malloc(nsecrets * 48 + 1)) == NULL)
		fatal("sink_http_sign");
	*out = '\0';
	mac = hmac_alg();
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
	    (char *)"SHA256", 0);
	params[1] = OSSL_PARAM_construct_end();
	p = out;
	for (i = 0; i < nsecrets; i++) {
		if ((ctx = EVP_MAC_CTX_new(mac)) == NULL ||
		    !EVP_MAC_init(ctx, secrets[i].data, secrets[i].len,
		    params) ||
		    !EVP_MAC_update(ctx, (const unsigned char *)id,
		    strlen(id)) ||
		    !EVP_MAC_update(ctx, (const unsigned char *)".", 1) ||
		    !EVP_MAC_update(ctx, (const unsigned char *)ts,
		    strlen(ts)) ||
		    !EVP_MAC_update(ctx, (const unsigned char *)".", 1) ||
		    (len > 0 && !EVP_MAC_update(ctx, body, len)) ||
		    !EVP_MAC_final(ctx, md, &mdlen, sizeof(md)) || mdlen != 32)
			fatalx("sink_http_sign: HMAC-SHA256 failed");
		EVP_MAC_CTX_free(ctx);
		if (i > 0)
			*p++ = ' ';
		memcpy(p, "v1,", 3);
		p += 3;
		p += EVP_EncodeBlock((unsigned char *)p, md, mdlen);
		*p = '\0';
	}
	explicit_bzero(md, sizeof(md));
	return out;
}

/* An RFC 9110 token: what a header name must be.  tchar[] is 1 for the
 * bytes a token may hold: visible ASCII but the delimiters. */
static int
sink_http_token(const char *s)
{
	static unsigned char tchar[256];
	static int ready;
	const unsigned char *p;
	int c;

	if (!ready) {
		for (c = 0x21; c < 0x7f; c++)
			tchar[c] = strchr("\"(),/:;<=>?@[\\]{}", c) == NULL;
		ready = 1;
	}
	if (*s == '\0')
		return 0;
	for (p = (const unsigned char *)s; *p != '\0'; p++)
		if (!tchar[*p])
			return 0;
	return 1;
}

static int
sink_http_framing(const char *name)
{
	int i;

	if (strncasecmp(name, "x-ankusa-", 9) == 0)
		return 1;
	for (i = 0; sink_http_framing_names[i] != NULL; i++)
		if (strcasecmp(name, sink_http_framing_names[i]) == 0)
			return 1;
	return 0;
}

static int
sink_http_signed_name(const char *name)
{
	return strcasecmp(name, "webhook-id") == 0 ||
	    strcasecmp(name, "webhook-timestamp") == 0 ||
	    strcasecmp(name, "webhook-signature") == 0;
}

/* The trace context's headers: ours, for each attempt, replace any the
 * provider sent or the config names. */
static int
sink_http_traced(const char *name)
{
	return strcasecmp(name, "traceparent") == 0 ||
	    strcasecmp(name, "tracestate") == 0;
}

static int
sink_http_configured(const struct sink_conf *s, const char *name)
{
	int i;

	for (i = 0; i < s->u.http.nheaders; i++)
		if (strcasecmp(s->u.http.headers[i].name, name) == 0)
			return 1;
	return 0;
}

/* Hand fn "name: value" (curl's "name;" for an empty value, since "name:"
 * would remove the header), control bytes as %XX.  -1 on a bad name. */
static int
sink_http_add(sink_http_line_fn fn, void *arg, const char *name,
    const char *value)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *v;
	char small[512], *line, *p;
	size_t nlen, len;

	if (!sink_http_token(name))
		return -1;
	if (value == NULL)
		value = "";
	nlen = strlen(name);
	len = nlen + 3 * strlen(value) + 3;
	/* The callee copies the line: most fit on the stack. */
	if (len <= sizeof(small))
		line = small;
	else if ((line = malloc(len)) == NULL)
		fatal("sink_http_add");
	memcpy(line, name, nlen);
	p = line + nlen;
	if (*value != '\0') {
		*p++ = ':';
		*p++ = ' ';
	} else
		*p++ = ';';
	for (v = (const unsigned char *)value; *v != '\0'; v++) {
		if ((*v < 0x20 && *v != '\t') || *v == 0x7f) {
			*p++ = '%';
			*p++ = hex[*v >> 4];
			*p++ = hex[*v & 0xf];
		} else
			*p++ = *v;
	}
	*p = '\0';
	fn(arg, line);
	if (line != small)
		free(line);
	return 0;
}

/*
 * What the SDKs read of the hook beside its ids: when the edge accepted
 * it, the body's digest and the verification as stored with the hook; and
 * the trace context, with this attempt's span id as the parent id (W3C:
 * the caller's span).
 */
static void
sink_http_hook_lines(const struct job *j, sink_http_line_fn fn, void *arg)
{
	static const char *const verification[VERIFICATION_MAX] = {
		[VERIFICATION_OK] = "ok",
		[VERIFICATION_FAILED] = "failed",
		[VERIFICATION_FLAGGED] = "failed",
		[VERIFICATION_SKIPPED] = "skipped",
	};
	static const char hex[] = "0123456789abcdef";
	char num[24], mdhex[2 * SHA256_LEN + 1], tp[TRACE_PARENT_STRLEN + 1];
	struct trace_ctx t;
	size_t i;

	snprintf(num, sizeof(num), "%" PRIu64, j->received_at);
	sink_http_add(fn, arg, "x-ankusa-received-at", num);
	/* The edge's digest, stored with the hook, not one of the bytes in
	 * hand: a consumer that checks it checks the body end to end. */
	for (i = 0; i < SHA256_LEN; i++) {
		mdhex[2 * i] = hex[j->sha256[i] >> 4];
		mdhex[2 * i + 1] = hex[j->sha256[i] & 0xf];
	}
	mdhex[2 * SHA256_LEN] = '\0';
	sink_http_add(fn, arg, "x-ankusa-body-sha256", mdhex);
	/* job_decode refused any other value. */
	sink_http_add(fn, arg, "x-ankusa-verification",
	    verification[j->verification]);
	sink_http_add(fn, arg, "x-ankusa-verification-flagged",
	    j->verification == VERIFICATION_FLAGGED ? "true" : "false");

	trace_unpack(j->trace, &t);
	trace_format(&t, j->span, tp);
	sink_http_add(fn, arg, "traceparent", tp);
	if (j->tracestate != NULL && *j->tracestate != '\0')
		sink_http_add(fn, arg, "tracestate", j->tracestate);
}

/* The request's header lines by the contract's rules, each handed to fn;
 * libcurl's "Expect:" is the caller's. */
static void
sink_http_lines(const struct job *j, time_t now, const char *authz,
    sink_http_line_fn fn, void *arg)
{
	const struct sink_conf *s = &j->sink;
	const struct header_kv *h;
	char ts[32], *idem, *sig;
	int i, signing = s->u.http.nsecrets > 0;

	if (!sink_http_configured(s, "content-type"))
		sink_http_add(fn, arg, "Content-Type",
		    j->content_type != NULL && *j->content_type != '\0' ?
		    j->content_type : "application/octet-stream");

	for (i = 0; i < j->nheaders; i++) {
		h = &j->headers[i];
		if (sink_http_framing(h->name) || sink_http_traced(h->name) ||
		    (signing && sink_http_signed_name(h->name)) ||
		    sink_http_configured(s, h->name) ||
		    (authz != NULL && strcasecmp(h->name, "authorization") ==
		    0))
			continue;
		if (sink_http_add(fn, arg, h->name, h->value) == -1)
			log_debug("hook %s: forwarded header name refused",
			    j->hook_id);
	}

	for (i = 0; i < s->u.http.nheaders; i++) {
		h = &s->u.http.headers[i];
		if (strncasecmp(h->name, "x-ankusa-", 9) == 0 ||
		    strcasecmp(h->name, "content-length") == 0 ||
		    strcasecmp(h->name, "transfer-encoding") == 0 ||
		    strcasecmp(h->name, "expect") == 0 ||
		    sink_http_traced(h->name) ||
		    (signing && sink_http_signed_name(h->name)) ||
		    (authz != NULL && strcasecmp(h->name, "authorization") ==
		    0))
			continue;
		sink_http_add(fn, arg, h->name, h->value);
	}
	/* auth's, which replaces a forwarded or configured one. */
	if (authz != NULL)
		sink_http_add(fn, arg, "Authorization", authz);

	sink_http_add(fn, arg, "x-ankusa-id", j->hook_id);
	sink_http_add(fn, arg, "x-ankusa-source", j->source);
	if (j->dedupe_key != NULL && *j->dedupe_key != '\0') {
		if (asprintf(&idem, "%s:%s:%s", j->tenant, j->source,
		    j->dedupe_key) == -1)
			fatal("sink_http_lines");
		sink_http_add(fn, arg, "x-ankusa-idempotency-key", idem);
		free(idem);
	} else
		sink_http_add(fn, arg, "x-ankusa-idempotency-key",
		    j->hook_id);
	if (j->tenant != NULL && *j->tenant != '\0')
		sink_http_add(fn, arg, "x-ankusa-tenant", j->tenant);
	if (j->dedupe_key != NULL && *j->dedupe_key != '\0')
		sink_http_add(fn, arg, "x-ankusa-dedupe-key", j->dedupe_key);
	if (j->replay_id != NULL && *j->replay_id != '\0')
		sink_http_add(fn, arg, "x-ankusa-replay-id", j->replay_id);
	sink_http_hook_lines(j, fn, arg);

	if (signing) {
		snprintf(ts, sizeof(ts), "%lld", (long long)now);
		sig = sink_http_sign(s->u.http.secrets, s->u.http.nsecrets,
		    j->hook_id, ts, j->body, j->bodylen);
		sink_http_add(fn, arg, "webhook-id", j->hook_id);
		sink_http_add(fn, arg, "webhook-timestamp", ts);
		sink_http_add(fn, arg, "webhook-signature", sig);
		free(sig);
	}
}

static void
sink_http_slist_line(void *arg, const char *line)
{
	struct curl_slist **l = arg, *n;

	if ((n = curl_slist_append(*l, line)) == NULL)
		fatalx("sink_http_headers: curl_slist_append");
	*l = n;
}

struct curl_slist *
sink_http_headers(const struct job *j, time_t now)
{
	return sink_http_headers_authz(j, now, NULL);
}

/* The same with auth's Authorization value (or NULL). */
static struct curl_slist *
sink_http_headers_authz(const struct job *j, time_t now, const char *authz)
{
	struct curl_slist *l = NULL;

	sink_http_lines(j, now, authz, sink_http_slist_line, &l);
	/* No "Expect: 100-continue" round trip before a large body. */
	sink_http_slist_line(&l, "Expect:");
	return l;
}

static void
sink_http_http1_line(void *arg, const char *line)
{
	http1_headers_add(arg, line);
}

/* --- the transfer --- */

static size_t
sink_http_write_cb(char *p, size_t size, size_t nmemb, void *arg)
{
	struct sink_http_xfer *x = arg;
	size_t n = size * nmemb;

	http1_answer_body(&x->a, p, n);
	x->got += n;
	if (x->got > x->cap) {
		x->a.capped = 1;
		return 0;	/* CURLE_WRITE_ERROR: read no more */
	}
	return n;
}

/* Headers of every answer in the transfer come here; keep the last
 * answer's Retry-After. */
static size_t
sink_http_header_cb(char *p, size_t size, size_t nmemb, void *arg)
{
	struct sink_http_xfer *x = arg;

	sink_retry_after_line(p, size * nmemb, x->a.retry_after,
	    sizeof(x->a.retry_after));
	return size * nmemb;
}

void
sink_http_set_capture(size_t n)
{
	sink_http_capture = n < HTTP1_KEEP_MAX ? n : HTTP1_KEEP_MAX;
	http1_set_keep(sink_http_capture);
}

void
sink_retry_after_line(const char *p, size_t n, char *ra, size_t rasz)
{
	const char *v, *e;
	size_t vl;

	if (n >= 5 && strncmp(p, "HTTP/", 5) == 0) {
		ra[0] = '\0';	/* a status line starts a new answer */
		return;
	}
	if (n < 12 || strncasecmp(p, "retry-after:", 12) != 0)
		return;
	v = p + 12;
	e = p + n;
	while (v < e && (*v == ' ' || *v == '\t'))
		v++;
	while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ' ||
	    e[-1] == '\t'))
		e--;
	vl = e - v;
	if (vl >= rasz || memchr(v, '\0', vl) != NULL)
		vl = 0;		/* no valid value is that long */
	memcpy(ra, v, vl);
	ra[vl] = '\0';
}

static int
sink_http_xfer_cb(void *arg, curl_off_t dltotal, curl_off_t dlnow,
    curl_off_t ultotal, curl_off_t ulnow)
{
	struct sink_http_xfer *x = arg;
	uint64_t now;

	if (sink_http_abort == NULL)
		return 0;
	now = time_mono_ms();
	if (now - x->last_watch < SINK_HTTP_WATCH_MS)
		return 0;
	x->last_watch = now;
	return sink_http_abort();
}

/*
 * auth's Authorization value for this attempt (malloc'd).  NULL when an
 * OAuth2 token cannot be had: the attempt has failed (o set), transient,
 * naming the token endpoint.
 */
static char *
sink_http_authz(const struct job *j, struct job_outcome *o)
{
	const struct sink_auth *a = &j->sink.u.http.auth;
	char err[JOB_DETAIL_MAX], *v;
	const char *tok;

	switch (a->type) {
	case SINK_AUTH_BEARER:
		if (asprintf(&v, "Bearer %s", a->token) == -1)
			fatal("sink_http_authz");
		return v;
	case SINK_AUTH_BASIC:
		return oauth2_basic(a->username, a->password);
	case SINK_AUTH_OAUTH2:
		if (oauth2_token(&j->sink, &tok, err, sizeof(err)) == -1) {
			job_outcome_set(o, JOB_ERROR, "%s", err);
			return NULL;
		}
		if (asprintf(&v, "Bearer %s", tok) == -1)
			fatal("sink_http_authz");
		return v;
	default:
		return NULL;
	}
}

int
sink_http_run(const struct job *j, struct job_outcome *o)
{
	const struct sink_conf *s = &j->sink;
	char *authz = NULL;
	int rc;

	o->result = JOB_OK;
	o->detail[0] = '\0';
	if (s->u.http.auth.type != SINK_AUTH_NONE &&
	    (authz = sink_http_authz(j, o)) == NULL)
		return o->result;
	rc = sink_http_send(j, o, authz);
	if (authz != NULL) {
		explicit_bzero(authz, strlen(authz));
		free(authz);
	}
	/* A 401 with an OAuth2 token: the token is dropped, and the next
	 * attempt fetches another, so the answer is transient. */
	if (s->u.http.auth.type == SINK_AUTH_OAUTH2 && o->http_status == 401) {
		oauth2_forget(s);
		o->result = JOB_ERROR;
		rc = o->result;
	}
	return rc;
}

/* The URL with tls.server_name as its host, and the CURLOPT_CONNECT_TO
 * entry that sends it to the URL's own host: 0, or -1 for a URL that
 * does not parse. */
static int
sink_http_tls(const struct sink_conf *s, char **url_to)
{
	const char *url = s->u.http.url, *a, *rest;
	char host[256];
	uint16_t port;
	int plain;

	if (netaddr_url(url, host, sizeof(host), &port, &plain) == -1)
		return -1;
	a = strstr(url, "://") + 3;
	rest = a + strcspn(a, "/?#");
	if (asprintf(&url_to[0], "%.*s%s:%u%s", (int)(a - url), url,
	    s->u.http.tls.server_name, port, rest) == -1 ||
	    asprintf(&url_to[1], "%s:%u:%s:%u", s->u.http.tls.server_name,
	    port, host, port) == -1)
		fatal("sink_http_tls");
	return 0;
}

static int
sink_http_send(const struct job *j, struct job_outcome *o, const char *authz)
{
	const struct sink_conf *s = &j->sink;
	const struct sink_tls *t = &s->u.http.tls;
	struct sink_http_xfer x;
	struct egress_watch ew;
	struct curl_slist *hdrs, *cto = NULL;
	struct curl_blob cert, key, ca;
	char errbuf[CURL_ERROR_SIZE], *url_to[2] = { NULL, NULL };
	const char *method = s->u.http.method, *verb, *px;
	CURLcode rc;
	long status = 0;
	int tls = t->client_cert != NULL || t->ca != NULL ||
	    t->server_name != NULL;

	if (s->u.http.url == NULL) {
		job_outcome_set(o, JOB_PERMANENT, "http sink has no url");
		return o->result;
	}
	if (method == NULL || strcmp(method, "post") == 0)
		verb = "POST";
	else if (strcmp(method, "put") == 0)
		verb = "PUT";
	else if (strcmp(method, "patch") == 0)
		verb = "PATCH";
	else {
		job_outcome_set(o, JOB_PERMANENT, "http method %s", method);
		return o->result;
	}
	/* One client's connection kept alive at a time: the other's would
	 * only be held for nothing.  http1.c speaks plain http, direct. */
	px = egress_proxy_for(s->proxy_mode, s->proxy, s->u.http.url);
	if (!tls && (px == NULL ? http1_usable(s->u.http.url) :
	    *px == '\0' && strncasecmp(s->u.http.url, "http://", 7) == 0)) {
		if (sink_http_curl != NULL) {
			curl_easy_cleanup(sink_http_curl);
			sink_http_curl = NULL;
		}
		return sink_http_run_http1(j, o, verb, authz);
	}
	http1_close();
	if (sink_http_curl == NULL &&
	    (sink_http_curl = curl_easy_init()) == NULL)
		fatalx("curl_easy_init failed");
	/* A reset keeps the connection cache: that is the keep-alive. */
	curl_easy_reset(sink_http_curl);

	memset(&x, 0, offsetof(struct sink_http_xfer, a));
	http1_answer_init(&x.a);
	x.cap = s->u.http.max_response_bytes;
	x.last_watch = time_mono_ms();
	errbuf[0] = '\0';
	if (t->server_name != NULL && sink_http_tls(s, url_to) == -1) {
		job_outcome_set(o, JOB_PERMANENT, "http sink url does not "
		    "parse");
		return o->result;
	}
	hdrs = sink_http_headers_authz(j, time(NULL), authz);

#define SETOPT(o, v) do {						\
	if (curl_easy_setopt(sink_http_curl, (o), (v)) != CURLE_OK)	\
		fatalx("curl_easy_setopt %s", #o);			\
} while (0)
	SETOPT(CURLOPT_URL, url_to[0] != NULL ? url_to[0] : s->u.http.url);
	if (url_to[1] != NULL) {
		/* SNI, the certificate's name and Host are server_name's; the
		 * connection goes to the URL's host (and is guarded there). */
		if ((cto = curl_slist_append(NULL, url_to[1])) == NULL)
			fatalx("sink_http: curl_slist_append");
		SETOPT(CURLOPT_CONNECT_TO, cto);
	}
	/* The files' PEM, as the master read them (conf_sinknet.c). */
	if (t->client_cert != NULL) {
		cert.data = t->client_cert;
		cert.len = strlen(t->client_cert);
		cert.flags = CURL_BLOB_NOCOPY;
		key.data = t->client_key;
		key.len = strlen(t->client_key);
		key.flags = CURL_BLOB_NOCOPY;
		SETOPT(CURLOPT_SSLCERT_BLOB, &cert);
		SETOPT(CURLOPT_SSLCERTTYPE, "PEM");
		SETOPT(CURLOPT_SSLKEY_BLOB, &key);
		SETOPT(CURLOPT_SSLKEYTYPE, "PEM");
	}
	if (t->ca != NULL) {
		ca.data = t->ca;
		ca.len = strlen(t->ca);
		ca.flags = CURL_BLOB_NOCOPY;
		SETOPT(CURLOPT_CAINFO_BLOB, &ca);
	}
#if LIBCURL_VERSION_NUM >= 0x075500
	SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
#else
	SETOPT(CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	SETOPT(CURLOPT_NOSIGNAL, 1L);
	SETOPT(CURLOPT_FOLLOWLOCATION, 0L);
	SETOPT(CURLOPT_USERAGENT, SINK_HTTP_UA);
	SETOPT(CURLOPT_HTTPHEADER, hdrs);
	SETOPT(CURLOPT_POST, 1L);
	if (strcmp(verb, "POST") != 0)		/* a POST by another name */
		SETOPT(CURLOPT_CUSTOMREQUEST, verb);
	SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)j->bodylen);
	SETOPT(CURLOPT_POSTFIELDS, j->body != NULL ? (const char *)j->body :
	    "");
	if (s->timeout_ms > 0)
		SETOPT(CURLOPT_TIMEOUT_MS, (long)s->timeout_ms);
	SETOPT(CURLOPT_ERRORBUFFER, errbuf);
	SETOPT(CURLOPT_WRITEFUNCTION, sink_http_write_cb);
	SETOPT(CURLOPT_WRITEDATA, &x);
	SETOPT(CURLOPT_HEADERFUNCTION, sink_http_header_cb);
	SETOPT(CURLOPT_HEADERDATA, &x);
	SETOPT(CURLOPT_XFERINFOFUNCTION, sink_http_xfer_cb);
	SETOPT(CURLOPT_XFERINFODATA, &x);
	SETOPT(CURLOPT_NOPROGRESS, 0L);
#undef SETOPT
	egress_watch_init(&ew, s->u.http.url, 0);
	egress_curl(sink_http_curl, &ew);
	if (egress_curl_proxy(sink_http_curl, &ew, s->u.http.url,
	    s->proxy_mode, s->proxy, errbuf, sizeof(errbuf)) == -1) {
		curl_slist_free_all(hdrs);
		curl_slist_free_all(cto);
		free(url_to[0]);
		free(url_to[1]);
		/* The destination refused by the guard: for good. */
		job_outcome_set(o, EGRESS_REFUSED(&ew) ? JOB_PERMANENT :
		    JOB_ERROR, "%s", EGRESS_REFUSED(&ew) ? ew.denied : errbuf);
		return o->result;
	}

	rc = curl_easy_perform(sink_http_curl);
	curl_slist_free_all(hdrs);
	curl_slist_free_all(cto);
	free(url_to[0]);
	free(url_to[1]);
	(void)curl_easy_setopt(sink_http_curl, CURLOPT_ERRORBUFFER, NULL);
	if (rc != CURLE_OK && EGRESS_REFUSED(&ew)) {
		job_outcome_set(o, JOB_PERMANENT, "%s", ew.denied);
		return o->result;
	}
	if (rc == CURLE_OK && curl_easy_getinfo(sink_http_curl,
	    CURLINFO_RESPONSE_CODE, &status) != CURLE_OK)
		status = 0;
	if (egress_proxy_failed(sink_http_curl, &ew, rc, status, errbuf,
	    sizeof(errbuf))) {
		job_outcome_set(o, JOB_PROXY_ERROR, "%s", errbuf);
		return o->result;
	}

	if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && x.a.capped)) {
		job_outcome_set(o, JOB_ERROR, "%s",
		    errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc));
		return o->result;
	}
	if (curl_easy_getinfo(sink_http_curl, CURLINFO_RESPONSE_CODE,
	    &status) != CURLE_OK)
		status = 0;
	x.a.status = status;
	return sink_http_outcome(j, o, &x.a);
}

/* The outcome of an answer, whichever client read it: its status, its
 * Retry-After, the start of its body for the log. */
static int
sink_http_outcome(const struct job *j, struct job_outcome *o,
    const struct http1_answer *a)
{
	const char *retry_after = a->retry_after;
	long status = a->status;
	uint64_t ra;
	int honour;

	if (status < 100 || status > 999) {
		job_outcome_set(o, JOB_ERROR, "http answer without a status");
		return o->result;
	}
	o->http_status = status;
	/* "http %ld", without printf: this runs for every attempt. */
	o->result = sink_http_classify(status, &honour);
	memcpy(o->detail, "http ", 5);
	o->detail[5] = (char)('0' + status / 100);
	o->detail[6] = (char)('0' + status / 10 % 10);
	o->detail[7] = (char)('0' + status % 10);
	o->detail[8] = '\0';
	if (honour && retry_after[0] != '\0') {
		if (sink_http_retry_after(retry_after, time(NULL), &ra) == 0)
			o->retry_after_ms = ra;
		else
			log_debug("hook %s: Retry-After \"%s\" ignored",
			    j->hook_id, retry_after);
	}
	/* Its start, cleaned here: the master never reads a sink's bytes
	 * as they came. */
	if (sink_http_capture > 0) {
		(void)utf8_excerpt(sink_http_excerpt, sink_http_capture + 1,
		    a->keep, a->keeplen);
		o->response = sink_http_excerpt;
	}
	/* The answer's length in the log, never its bytes (a sink may echo
	 * anything). */
	if (o->result != JOB_OK && a->keeplen > 0)
		log_debug("hook %s: http %ld, an answer of %zu bytes%s",
		    j->hook_id, status, (size_t)a->keeplen,
		    a->capped ? " (cut at max_response_bytes)" : "");
	return o->result;
}

/* The same request through http1.c (plain http, no proxy). */
static int
sink_http_run_http1(const struct job *j, struct job_outcome *o,
    const char *verb, const char *authz)
{
	const struct sink_conf *s = &j->sink;
	static struct http1_headers hdrs;	/* kept for the next job */
	struct http1_answer a;
	char err[256];
	int rc;

	hdrs.len = 0;
	sink_http_lines(j, time(NULL), authz, sink_http_http1_line, &hdrs);
	rc = http1_request(s->u.http.url, verb, &hdrs,
	    SINK_HTTP_UA, j->body, j->bodylen, s->timeout_ms,
	    s->u.http.max_response_bytes, sink_http_abort, &a, err,
	    sizeof(err));
	if (rc < 0) {
		/* -2: the egress guard refused it, for good. */
		job_outcome_set(o, rc == -2 ? JOB_PERMANENT : JOB_ERROR, "%s",
		    err);
		return o->result;
	}
	return sink_http_outcome(j, o, &a);
}
