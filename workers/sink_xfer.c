/* SPDX-License-Identifier: ISC */
/*
 * sink_xfer.c: one HTTP request of a queue sink (sqs, google_pubsub, the
 * GCE metadata server), over libcurl, with the whole answer kept.
 *
 * The queue sinks talk JSON APIs whose answers they must read in full
 * (per-entry results), unlike the http sink, which only wants a status.
 * The answer is kept up to the request's cap; past it the transfer is
 * aborted and the request reported as a failure ("answer over N bytes").
 * One easy handle per process, reset between requests, so connections
 * are kept alive from one batch to the next.  No redirects, http and
 * https only, TLS verification as libcurl's defaults (on), the request's
 * timeout as the transfer's deadline, no "Expect: 100-continue".
 *
 * Nothing here is fatal but a curl option the library refuses (a build
 * without the feature) and running out of memory.
 */
#include "config.h"

#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "clock.h"
#include "egress.h"
#include "job.h"
#include "log.h"
#include "sink.h"

#define SINK_XFER_UA		"ankusa/" PACKAGE_VERSION
#define SINK_XFER_WATCH_MS	100	/* between two calls of the watch */

static CURL		*sink_xfer_curl;
static sink_abort_fn	 sink_xfer_abort;
static uint64_t		 sink_xfer_last_watch;

static size_t	sink_xfer_write_cb(char *, size_t, size_t, void *);
static size_t	sink_xfer_header_cb(char *, size_t, size_t, void *);
static int	sink_xfer_info_cb(void *, curl_off_t, curl_off_t, curl_off_t,
		    curl_off_t);

void
sink_xfer_set_abort(sink_abort_fn fn)
{
	sink_xfer_abort = fn;
}

void
sink_xfer_cleanup(void)
{
	if (sink_xfer_curl != NULL)
		curl_easy_cleanup(sink_xfer_curl);
	sink_xfer_curl = NULL;
}

void
sink_xfer_done(struct sink_xfer *x)
{
	free(x->answer);
	x->answer = NULL;
	x->answerlen = 0;
}

static size_t
sink_xfer_write_cb(char *p, size_t size, size_t nmemb, void *arg)
{
	struct sink_xfer *x = arg;
	size_t n = size * nmemb;
	char *a;

	if (x->answerlen + n > x->cap) {
		x->capped = 1;
		return 0;	/* CURLE_WRITE_ERROR: read no more */
	}
	if ((a = realloc(x->answer, x->answerlen + n + 1)) == NULL)
		fatal("sink_xfer");
	x->answer = a;
	memcpy(a + x->answerlen, p, n);
	x->answerlen += n;
	a[x->answerlen] = '\0';
	return n;
}

/* Keep the last answer's Retry-After. */
static size_t
sink_xfer_header_cb(char *p, size_t size, size_t nmemb, void *arg)
{
	struct sink_xfer *x = arg;

	sink_retry_after_line(p, size * nmemb, x->retry_after,
	    sizeof(x->retry_after));
	return size * nmemb;
}

static int
sink_xfer_info_cb(void *arg, curl_off_t dltotal, curl_off_t dlnow,
    curl_off_t ultotal, curl_off_t ulnow)
{
	uint64_t now;

	if (sink_xfer_abort == NULL)
		return 0;
	now = time_mono_ms();
	if (now - sink_xfer_last_watch < SINK_XFER_WATCH_MS)
		return 0;
	sink_xfer_last_watch = now;
	return sink_xfer_abort();
}

int
sink_xfer_run(struct sink_xfer *x)
{
	struct egress_watch ew;
	CURLcode rc;
	long status = 0;

	x->status = 0;
	x->denied = 0;
	x->capped = 0;
	x->answer = NULL;
	x->answerlen = 0;
	x->retry_after[0] = '\0';
	x->error[0] = '\0';
	x->proxy_failed = 0;
	if (x->cap == 0)
		x->cap = SINK_XFER_CAP;
	if (sink_xfer_curl == NULL &&
	    (sink_xfer_curl = curl_easy_init()) == NULL)
		fatalx("curl_easy_init failed");
	curl_easy_reset(sink_xfer_curl);
	sink_xfer_last_watch = time_mono_ms();

#define SETOPT(o, v) do {						\
	if (curl_easy_setopt(sink_xfer_curl, (o), (v)) != CURLE_OK)	\
		fatalx("curl_easy_setopt %s", #o);			\
} while (0)
	SETOPT(CURLOPT_URL, x->url);
#if LIBCURL_VERSION_NUM >= 0x075500
	SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
#else
	SETOPT(CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	SETOPT(CURLOPT_NOSIGNAL, 1L);
	SETOPT(CURLOPT_FOLLOWLOCATION, 0L);
	SETOPT(CURLOPT_USERAGENT, SINK_XFER_UA);
	if (x->headers != NULL)
		SETOPT(CURLOPT_HTTPHEADER, x->headers);
	if (x->body != NULL) {
		SETOPT(CURLOPT_POST, 1L);
		SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->bodylen);
		SETOPT(CURLOPT_POSTFIELDS, (const char *)x->body);
	} else
		SETOPT(CURLOPT_HTTPGET, 1L);
	if (x->sigv4 != NULL) {
		SETOPT(CURLOPT_AWS_SIGV4, x->sigv4);
		SETOPT(CURLOPT_USERPWD, x->userpwd);
	}
	if (x->timeout_ms > 0)
		SETOPT(CURLOPT_TIMEOUT_MS, (long)x->timeout_ms);
	SETOPT(CURLOPT_ERRORBUFFER, x->error);
	SETOPT(CURLOPT_WRITEFUNCTION, sink_xfer_write_cb);
	SETOPT(CURLOPT_WRITEDATA, x);
	SETOPT(CURLOPT_HEADERFUNCTION, sink_xfer_header_cb);
	SETOPT(CURLOPT_HEADERDATA, x);
	SETOPT(CURLOPT_XFERINFOFUNCTION, sink_xfer_info_cb);
	SETOPT(CURLOPT_XFERINFODATA, x);
	SETOPT(CURLOPT_NOPROGRESS, 0L);
#undef SETOPT
	if (x->unguarded)
		egress_curl_unguarded(sink_xfer_curl);
	else {
		egress_watch_init(&ew, x->url, x->secret);
		egress_curl(sink_xfer_curl, &ew);
		/* A secret over plain http goes to loopback alone, never
		 * through a proxy that would read it. */
		if (egress_curl_proxy(sink_xfer_curl, &ew, x->url,
		    x->secret && ew.plain ? SINK_PROXY_NONE : x->proxy_mode,
		    x->proxy, x->error, sizeof(x->error)) == -1) {
			if (EGRESS_REFUSED(&ew)) {
				snprintf(x->error, sizeof(x->error), "%s",
				    ew.denied);
				x->denied = 1;
			}
			return -1;
		}
	}

	rc = curl_easy_perform(sink_xfer_curl);
	(void)curl_easy_setopt(sink_xfer_curl, CURLOPT_ERRORBUFFER, NULL);
	if (rc != CURLE_OK && !x->unguarded && EGRESS_REFUSED(&ew)) {
		snprintf(x->error, sizeof(x->error), "%s", ew.denied);
		x->denied = 1;
		return -1;
	}
	if (rc == CURLE_WRITE_ERROR && x->capped) {
		snprintf(x->error, sizeof(x->error), "answer over %zu bytes",
		    x->cap);
		return -1;
	}
	if (!x->unguarded && egress_proxy_failed(sink_xfer_curl, &ew, rc,
	    rc == CURLE_OK && curl_easy_getinfo(sink_xfer_curl,
	    CURLINFO_RESPONSE_CODE, &status) == CURLE_OK ? status : 0,
	    x->error, sizeof(x->error))) {
		x->proxy_failed = 1;
		return -1;
	}
	if (rc != CURLE_OK) {
		if (x->error[0] == '\0')
			snprintf(x->error, sizeof(x->error), "%s",
			    curl_easy_strerror(rc));
		return -1;
	}
	if (curl_easy_getinfo(sink_xfer_curl, CURLINFO_RESPONSE_CODE,
	    &status) != CURLE_OK)
		status = 0;
	/* The credentials stay in the handle until a reset: now. */
	if (x->sigv4 != NULL)
		curl_easy_reset(sink_xfer_curl);
	if (status < 100 || status > 999) {
		snprintf(x->error, sizeof(x->error),
		    "http answer without a status");
		return -1;
	}
	x->status = status;
	return 0;
}

int
sink_batch_of_one(const struct job *j, struct job_outcome *o,
    int (*run)(const struct batch *, struct batch_outcome *))
{
	struct batch b;
	struct batch_entry e;
	struct batch_outcome bo;

	batch_entry_from_job(&e, j);
	memset(&b, 0, sizeof(b));
	b.id = j->id;
	b.sink = j->sink;
	b.entries = &e;
	b.nentries = 1;
	batch_outcome_init(&bo, &b);
	run(&b, &bo);
	o->result = bo.r[0].result;
	o->retry_after_ms = bo.r[0].retry_after_ms;
	o->http_status = bo.http_status;
	memcpy(o->detail, bo.r[0].detail, sizeof(o->detail));
	batch_outcome_free(&bo);
	return o->result;
}
