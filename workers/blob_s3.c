/* SPDX-License-Identifier: ISC */
/*
 * blob_s3.c: the s3 claim store: an S3 bucket (or MinIO, or any S3-
 * compatible server) over libcurl, signed with SigV4 (CURLOPT_AWS_SIGV4,
 * "aws:amz:<region>:s3").
 *
 * Requests are path-style, <endpoint>/<bucket>/<key>, the endpoint
 * https://s3.<region>.amazonaws.com unless claim_check.store.s3.endpoint
 * names another.  Each key segment is percent-encoded as SigV4's
 * canonical URI wants it (everything but A-Za-z0-9-._~), so what curl
 * signs is what the server recomputes.  The payload's SHA-256 is always
 * sent as x-amz-content-sha256 (S3 requires it).  Put: PUT of the whole
 * object.  Get: GET with "Range: bytes=a-b" (a server that ignores the
 * range and answers 200 is read past the skipped bytes).
 *
 * Credentials: access_key_id / secret_access_key / session_token from the
 * options, else AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
 * AWS_SESSION_TOKEN; the region from the options, else AWS_REGION, else
 * AWS_DEFAULT_REGION, else us-east-1.
 *
 * Answers: 2xx ok; 404 not found (but NoSuchBucket is an error: the
 * config is wrong, not the claim); 416 a short object; anything else, and
 * every transport error, an error naming the status and S3's <Code>.  One
 * curl handle per store, reset between requests, so connections are kept.
 */
#include "config.h"

#include <sys/types.h>

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "blob.h"
#include "clock.h"
#include "egress.h"
#include "job.h"
#include "log.h"
#include "sha256.h"

#define BLOB_S3_UA		"ankusa/" PACKAGE_VERSION
#define BLOB_S3_ERRBODY		1024	/* error answer bytes kept */
#define BLOB_S3_WATCH_MS	100	/* between two calls of the abort fn */

struct blob_s3 {
	CURL		*curl;
	char		*base;		/* endpoint/bucket, no trailing / */
	char		*sigv4;		/* aws:amz:<region>:s3 */
	char		*key_id;
	char		*secret;
	char		*token;		/* NULL: none */
};

/* One request's answer as it arrives. */
struct blob_s3_xfer {
	struct blob_store *bs;
	unsigned char	*buf;		/* get: the caller's */
	uint64_t	 off;		/* get: the range asked for */
	size_t		 len;
	uint64_t	 pos;		/* object offset of the next byte */
	size_t		 got;		/* bytes into buf */
	int		 ranged;	/* a range was asked for */
	char		 errbody[BLOB_S3_ERRBODY + 1];
	size_t		 errlen;
	uint64_t	 last_watch;	/* mono ms */
};

static int	blob_s3_open(struct blob_store *, const struct claim_store *,
		    char *, size_t);
static enum blob_status blob_s3_put(struct blob_store *, const char *,
		    const void *, size_t, char *, size_t);
static enum blob_status blob_s3_get(struct blob_store *, const char *,
		    uint64_t, size_t, void *, char *, size_t);
static void	blob_s3_close(struct blob_store *);
static char	*blob_s3_opt(const char *, const char *);
static char	*blob_s3_url(struct blob_s3 *, const char *);
static size_t	blob_s3_write_cb(char *, size_t, size_t, void *);
static int	blob_s3_xfer_cb(void *, curl_off_t, curl_off_t, curl_off_t,
		    curl_off_t);
static int	blob_s3_request(struct blob_store *, const char *,
		    const char *, const void *, size_t, struct blob_s3_xfer *,
		    long *, char *, size_t);
static void	blob_s3_code(const struct blob_s3_xfer *, char *, size_t);

const struct blob_ops blob_s3_ops = {
	"s3",
	blob_s3_open,
	blob_s3_put,
	blob_s3_get,
	blob_s3_close,
};

/* The option if set, else the environment variable's value if set. */
static char *
blob_s3_opt(const char *opt, const char *env)
{
	const char *v = opt;
	char *s;

	if ((v == NULL || *v == '\0') && env != NULL)
		v = getenv(env);
	if (v == NULL || *v == '\0')
		return NULL;
	if ((s = strdup(v)) == NULL)
		fatal("blob_s3_open");
	return s;
}

static int
blob_s3_open(struct blob_store *bs, const struct claim_store *cs, char *err,
    size_t errlen)
{
	struct blob_s3 *s;
	char *region, *endpoint = NULL;
	size_t n;

	if (cs->bucket == NULL || *cs->bucket == '\0' ||
	    strpbrk(cs->bucket, "/?#% ") != NULL) {
		snprintf(err, errlen, "claim store s3: bad or no bucket");
		return -1;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL)
		fatal("blob_s3_open");
	if (cs->access_key_id != NULL && *cs->access_key_id != '\0') {
		s->key_id = blob_s3_opt(cs->access_key_id, NULL);
		s->secret = blob_s3_opt(cs->secret_access_key, NULL);
		s->token = blob_s3_opt(cs->session_token, NULL);
	} else {
		s->key_id = blob_s3_opt(NULL, "AWS_ACCESS_KEY_ID");
		s->secret = blob_s3_opt(NULL, "AWS_SECRET_ACCESS_KEY");
		s->token = blob_s3_opt(NULL, "AWS_SESSION_TOKEN");
	}
	if (s->key_id == NULL || s->secret == NULL) {
		snprintf(err, errlen, "claim store s3: no credentials (options "
		    "or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)");
		goto fail;
	}
	if ((region = blob_s3_opt(cs->region, "AWS_REGION")) == NULL &&
	    (region = blob_s3_opt(NULL, "AWS_DEFAULT_REGION")) == NULL &&
	    (region = strdup("us-east-1")) == NULL)
		fatal("blob_s3_open");
	if (strchr(region, ':') != NULL) {
		snprintf(err, errlen, "claim store s3: bad region");
		free(region);
		goto fail;
	}
	if (asprintf(&s->sigv4, "aws:amz:%s:s3", region) == -1)
		fatal("blob_s3_open");
	if (cs->endpoint != NULL && *cs->endpoint != '\0') {
		if ((endpoint = strdup(cs->endpoint)) == NULL)
			fatal("blob_s3_open");
	} else if (asprintf(&endpoint, "https://s3.%s.amazonaws.com",
	    region) == -1)
		fatal("blob_s3_open");
	free(region);
	n = strlen(endpoint);
	while (n > 0 && endpoint[n - 1] == '/')
		endpoint[--n] = '\0';
	if (asprintf(&s->base, "%s/%s", endpoint, cs->bucket) == -1)
		fatal("blob_s3_open");
	free(endpoint);
	if ((s->curl = curl_easy_init()) == NULL)
		fatalx("curl_easy_init failed");
	bs->priv = s;
	return 0;
fail:
	bs->priv = s;
	blob_s3_close(bs);
	bs->priv = NULL;
	return -1;
}

static void
blob_s3_close(struct blob_store *bs)
{
	struct blob_s3 *s = bs->priv;

	if (s == NULL)
		return;
	if (s->curl != NULL)
		curl_easy_cleanup(s->curl);
	free(s->base);
	free(s->sigv4);
	free(s->key_id);
	if (s->secret != NULL)
		explicit_bzero(s->secret, strlen(s->secret));
	free(s->secret);
	if (s->token != NULL)
		explicit_bzero(s->token, strlen(s->token));
	free(s->token);
	free(s);
}

/* base/key, each byte of the key but '/' and unreserved ones as %XX. */
static char *
blob_s3_url(struct blob_s3 *s, const char *key)
{
	static const char hex[] = "0123456789ABCDEF";
	char *url, *o;
	const char *p;

	if ((url = malloc(strlen(s->base) + 1 + 3 * strlen(key) + 1)) == NULL)
		fatal("blob_s3_url");
	o = url + sprintf(url, "%s/", s->base);
	for (p = key; *p != '\0'; p++) {
		unsigned char c = *p;

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' ||
		    c == '_' || c == '~' || c == '/')
			*o++ = c;
		else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 0x0f];
		}
	}
	*o = '\0';
	return url;
}

/*
 * 2xx bytes of a get go into the caller's buffer, the part of them in
 * [off, off + len); anything else is an error answer, kept for its
 * <Code>.  More than asked for is not an error (a server may send the
 * whole object): the surplus is dropped.
 */
static size_t
blob_s3_write_cb(char *p, size_t size, size_t nmemb, void *arg)
{
	struct blob_s3_xfer *x = arg;
	struct blob_s3 *s = x->bs->priv;
	size_t n = size * nmemb, skip, take;
	long status = 0;

	(void)curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status > 299 || x->buf == NULL) {
		take = n < BLOB_S3_ERRBODY - x->errlen ? n :
		    BLOB_S3_ERRBODY - x->errlen;
		memcpy(x->errbody + x->errlen, p, take);
		x->errlen += take;
		x->errbody[x->errlen] = '\0';
		return n;
	}
	/* A 206 starts where the range did, a 200 at the object's start. */
	if (x->got == 0 && x->pos == 0 && status == 206 && x->ranged)
		x->pos = x->off;
	skip = 0;
	if (x->pos < x->off)
		skip = x->off - x->pos < n ? x->off - x->pos : n;
	take = n - skip;
	if (take > x->len - x->got)
		take = x->len - x->got;
	if (take > 0)
		memcpy(x->buf + x->got, p + skip, take);
	x->got += take;
	x->pos += n;
	return n;
}

static int
blob_s3_xfer_cb(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut,
    curl_off_t un)
{
	struct blob_s3_xfer *x = arg;
	uint64_t now;

	if (x->bs->abort == NULL)
		return 0;
	now = time_mono_ms();
	if (now - x->last_watch < BLOB_S3_WATCH_MS)
		return 0;
	x->last_watch = now;
	return x->bs->abort() != 0;
}

/* S3's error <Code>, or "" */
static void
blob_s3_code(const struct blob_s3_xfer *x, char *out, size_t outlen)
{
	const char *a, *b;
	size_t n;

	out[0] = '\0';
	if ((a = strstr(x->errbody, "<Code>")) == NULL)
		return;
	a += strlen("<Code>");
	if ((b = strstr(a, "</Code>")) == NULL)
		return;
	n = b - a < (ptrdiff_t)outlen - 1 ? (size_t)(b - a) : outlen - 1;
	memcpy(out, a, n);
	out[n] = '\0';
}

/*
 * One request; method PUT (body, len) or GET (x has the range).
 * 0 with *statusp, or -1 with err for a transport error.
 */
static int
blob_s3_request(struct blob_store *bs, const char *method, const char *key,
    const void *body, size_t len, struct blob_s3_xfer *x, long *statusp,
    char *err, size_t errlen)
{
	struct blob_s3 *s = bs->priv;
	struct curl_slist *hdrs = NULL, *h;
	unsigned char md[SHA256_LEN];
	char errbuf[CURL_ERROR_SIZE], line[128], *url, *tok = NULL;
	char hex[2 * SHA256_LEN + 1];
	struct egress_watch ew;
	CURLcode rc;
	size_t i;
	int r = 0;

	sha256(body, len, md);
	for (i = 0; i < sizeof(md); i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	snprintf(line, sizeof(line), "x-amz-content-sha256: %s", hex);
	if ((h = curl_slist_append(hdrs, line)) == NULL)
		fatalx("curl_slist_append");
	hdrs = h;
	if (x->ranged) {
		snprintf(line, sizeof(line), "Range: bytes=%" PRIu64 "-%" PRIu64,
		    x->off, x->off + x->len - 1);
		if ((h = curl_slist_append(hdrs, line)) == NULL)
			fatalx("curl_slist_append");
		hdrs = h;
	}
	/*
	 * Not the form type POSTFIELDS implies.  Every header given here is
	 * signed, so none may be a removal ("Expect:"): curl would sign a
	 * header it never sends.  The Expect: 100-continue curl adds to a
	 * large body is unsigned, which S3 allows.
	 */
	if (strcmp(method, "PUT") == 0) {
		if ((h = curl_slist_append(hdrs, "Content-Type: "
		    "application/octet-stream")) == NULL)
			fatalx("curl_slist_append");
		hdrs = h;
	}
	if (s->token != NULL) {
		if (asprintf(&tok, "x-amz-security-token: %s", s->token) == -1)
			fatal("blob_s3_request");
		if ((h = curl_slist_append(hdrs, tok)) == NULL)
			fatalx("curl_slist_append");
		hdrs = h;
	}
	url = blob_s3_url(s, key);

	curl_easy_reset(s->curl);
	errbuf[0] = '\0';
	x->bs = bs;
	x->last_watch = time_mono_ms();
#define SETOPT(o, v) do {						\
	if (curl_easy_setopt(s->curl, (o), (v)) != CURLE_OK)		\
		fatalx("curl_easy_setopt %s", #o);			\
} while (0)
	SETOPT(CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500
	SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
#else
	SETOPT(CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	SETOPT(CURLOPT_NOSIGNAL, 1L);
	SETOPT(CURLOPT_FOLLOWLOCATION, 0L);
	SETOPT(CURLOPT_USERAGENT, BLOB_S3_UA);
	SETOPT(CURLOPT_AWS_SIGV4, s->sigv4);
	SETOPT(CURLOPT_USERNAME, s->key_id);
	SETOPT(CURLOPT_PASSWORD, s->secret);
	SETOPT(CURLOPT_HTTPHEADER, hdrs);
	if (strcmp(method, "PUT") == 0) {
		SETOPT(CURLOPT_POST, 1L);
		SETOPT(CURLOPT_CUSTOMREQUEST, "PUT");
		SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
		SETOPT(CURLOPT_POSTFIELDS, body != NULL ? body : "");
	}
	if (bs->timeout_ms > 0)
		SETOPT(CURLOPT_TIMEOUT_MS, (long)bs->timeout_ms);
	SETOPT(CURLOPT_ERRORBUFFER, errbuf);
	SETOPT(CURLOPT_WRITEFUNCTION, blob_s3_write_cb);
	SETOPT(CURLOPT_WRITEDATA, x);
	SETOPT(CURLOPT_XFERINFOFUNCTION, blob_s3_xfer_cb);
	SETOPT(CURLOPT_XFERINFODATA, x);
	SETOPT(CURLOPT_NOPROGRESS, 0L);
#undef SETOPT
	egress_watch_init(&ew, url, 0);
	egress_curl(s->curl, &ew);

	rc = curl_easy_perform(s->curl);
	(void)curl_easy_setopt(s->curl, CURLOPT_ERRORBUFFER, NULL);
	if (rc != CURLE_OK && EGRESS_REFUSED(&ew)) {
		snprintf(err, errlen, "claim store s3: %s %s: %s", method, key,
		    ew.denied);
		r = -1;
	} else if (rc != CURLE_OK) {
		snprintf(err, errlen, "claim store s3: %s %s: %s", method, key,
		    errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc));
		r = -1;
	} else if (curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE,
	    statusp) != CURLE_OK) {
		snprintf(err, errlen, "claim store s3: %s %s: no status",
		    method, key);
		r = -1;
	}
	curl_slist_free_all(hdrs);
	if (tok != NULL) {
		explicit_bzero(tok, strlen(tok));
		free(tok);
	}
	free(url);
	return r;
}

static enum blob_status
blob_s3_put(struct blob_store *bs, const char *key, const void *data,
    size_t len, char *err, size_t errlen)
{
	struct blob_s3_xfer x;
	char code[64];
	long status;

	memset(&x, 0, sizeof(x));
	if (blob_s3_request(bs, "PUT", key, data, len, &x, &status, err,
	    errlen) == -1)
		return BLOB_ERROR;
	if (status >= 200 && status <= 299)
		return BLOB_OK;
	blob_s3_code(&x, code, sizeof(code));
	snprintf(err, errlen, "claim store s3: PUT %s: http %ld%s%s", key,
	    status, code[0] != '\0' ? " " : "", code);
	return BLOB_ERROR;
}

static enum blob_status
blob_s3_get(struct blob_store *bs, const char *key, uint64_t off, size_t len,
    void *buf, char *err, size_t errlen)
{
	struct blob_s3_xfer x;
	char code[64];
	long status;

	memset(&x, 0, sizeof(x));
	x.buf = buf;
	x.off = off;
	x.len = len;
	x.ranged = 1;
	if (blob_s3_request(bs, "GET", key, NULL, 0, &x, &status, err,
	    errlen) == -1)
		return BLOB_ERROR;
	if (status == 200 || status == 206) {
		if (x.got == len)
			return BLOB_OK;
		snprintf(err, errlen, "claim store s3: GET %s: %zu of %zu "
		    "bytes at %" PRIu64, key, x.got, len, off);
		return BLOB_RANGE;
	}
	blob_s3_code(&x, code, sizeof(code));
	snprintf(err, errlen, "claim store s3: GET %s: http %ld%s%s", key,
	    status, code[0] != '\0' ? " " : "", code);
	if (status == 404 && strcmp(code, "NoSuchBucket") != 0)
		return BLOB_NOTFOUND;
	if (status == 416)
		return BLOB_RANGE;
	return BLOB_ERROR;
}

