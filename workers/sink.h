/*
 * sink.h: the sinks a deliver process runs, one file per implementation
 * (sink_http.c, sink_log.c; sink_sqs.c and sink_pubsub.c to come).
 *
 * Each runs one attempt of one job synchronously and fills the outcome:
 * result, detail ("http 503", curl's error text), http_status and
 * retry_after_ms where it has them.  It returns the result.  The caller
 * (workers/deliver.c) times the attempt and sends the outcome; a sink never
 * touches the channel to the master.  A sink never fails the process for
 * anything the remote end does: every such thing is an outcome.
 */
#ifndef ANKUSA_SINK_H
#define ANKUSA_SINK_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "job.h"

struct curl_slist;

/* The longest Retry-After honoured, and the caps the master applies too. */
#define SINK_RETRY_AFTER_MAX_MS	3600000ULL	/* 1 h */

/* Called now and then during a long transfer; nonzero aborts it. */
typedef int (*sink_abort_fn)(void);

int	sink_log_run(const struct job *, struct job_outcome *);

int	sink_http_run(const struct job *, struct job_outcome *);
/* The watch the http sink calls during a transfer (deliver.c: is the
 * master still there?). */
void	sink_http_set_abort(sink_abort_fn);
/* Release the process's curl handle (and its kept-alive connections). */
void	sink_http_cleanup(void);

/*
 * The pure parts of the http sink, exposed for tests.
 */
/* What a status means: JOB_OK, JOB_PERMANENT or JOB_ERROR; *honour set to
 * 1 when a Retry-After in that answer counts (408, 429, 5xx). */
enum job_result sink_http_classify(long status, int *honour);
/* A Retry-After value (no surrounding whitespace): delay-seconds or an
 * HTTP-date (IMF-fixdate, RFC 850 or asctime form, all in GMT), relative
 * to now.  0 and *ms (clamped to SINK_RETRY_AFTER_MAX_MS; 0 for a date
 * already past), or -1 for anything else. */
int	sink_http_retry_after(const char *value, time_t now, uint64_t *ms);
/* The webhook-signature value for every secret: "v1,<b64> v1,<b64> ...".
 * Returns a malloc'd string. */
char	*sink_http_sign(const struct blob *secrets, int nsecrets,
	    const char *id, const char *timestamp, const void *body,
	    size_t len);
/* The request's header list, built by the contract's rules, with now as
 * webhook-timestamp.  The caller frees it with curl_slist_free_all. */
struct curl_slist *sink_http_headers(const struct job *, time_t now);

#endif
