/* SPDX-License-Identifier: ISC */
/*
 * sink.h: the sinks a deliver process runs, one file per implementation
 * (sink_http.c, sink_log.c, sink_sqs.c, sink_pubsub.c, sink_redis.c,
 * sink_nats.c, sink_rabbitmq.c, sink_kafka.c;
 * sink_xfer.c is the queue sinks' request helper).
 *
 * Each runs one attempt of one job synchronously and fills the outcome:
 * result, detail ("http 503", the transport's error text), http_status and
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
/* The bytes of each answer's body an outcome carries, cleaned
 * (attempts.capture_bytes; 0, the start: none). */
void	sink_http_set_capture(size_t);
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
/* One header line of an answer, as libcurl hands it (line end included):
 * a status line clears ra (a new answer begins), a Retry-After line sets
 * it to its value, trimmed ("" when it would not fit in rasz or holds a
 * NUL).  Other lines leave it. */
void	sink_retry_after_line(const char *p, size_t n, char *ra,
	    size_t rasz);
/* The webhook-signature value for every secret: "v1,<b64> v1,<b64> ...".
 * Returns a malloc'd string. */
char	*sink_http_sign(const struct blob *secrets, int nsecrets,
	    const char *id, const char *timestamp, const void *body,
	    size_t len);
/* The request's header list, built by the contract's rules, with now as
 * webhook-timestamp.  The caller frees it with curl_slist_free_all. */
struct qmsg;
struct curl_slist *sink_http_headers(const struct job *, time_t now);

/*
 * The batching sinks: one batch (common/job.h) per call, synchronously; o
 * was made by batch_outcome_init and every entry gets its own result.
 * The request limits (entries, bytes, one ordering key) are the sink's to
 * keep: a batch above them is sent as several requests.  The single-job
 * entry points run a batch of one.
 */
int	sink_sqs_batch(const struct batch *, struct batch_outcome *);
int	sink_sqs_run(const struct job *, struct job_outcome *);
int	sink_pubsub_batch(const struct batch *, struct batch_outcome *);
int	sink_pubsub_run(const struct job *, struct job_outcome *);
int	sink_redis_batch(const struct batch *, struct batch_outcome *);
int	sink_redis_run(const struct job *, struct job_outcome *);
/* The redis sink's watch during a request (as the http sink's), and
 * the close of its kept connection. */
void	sink_redis_set_abort(sink_abort_fn);
void	sink_redis_cleanup(void);
int	sink_nats_batch(const struct batch *, struct batch_outcome *);
int	sink_nats_run(const struct job *, struct job_outcome *);
/* Close the process's nats connections and libnats, if it opened it. */
void	sink_nats_cleanup(void);
/* rabbitmq: the connection is the process's, kept across batches;
 * cleanup closes it. */
int	sink_rabbitmq_batch(const struct batch *, struct batch_outcome *);
int	sink_rabbitmq_run(const struct job *, struct job_outcome *);
void	sink_rabbitmq_cleanup(void);
/* The watch called every second while confirms are awaited. */
void	sink_rabbitmq_set_abort(sink_abort_fn);

int	sink_kafka_batch(const struct batch *, struct batch_outcome *);
int	sink_kafka_run(const struct job *, struct job_outcome *);
/* The watch the kafka sink calls while it waits for reports. */
void	sink_kafka_set_abort(sink_abort_fn);
/* Close the process's kafka producers. */
void	sink_kafka_cleanup(void);
/* The kafka sink's pure parts, for tests: what a librdkafka error code
 * (rd_kafka_resp_err_t) of a report means; the producer's settings for
 * sink s (NULL with a reason in err). */
enum job_result sink_kafka_classify(int err);
struct rd_kafka_conf_s;
struct rd_kafka_conf_s *sink_kafka_conf(const struct sink_conf *s, char *err,
	    size_t errlen);

/* The pure parts of the sqs sink, for tests.  Code of a failed entry or
 * of a whole-request error (the part after '#' of an __type) and the
 * SenderFault flag: JOB_PERMANENT or JOB_ERROR. */
enum job_result sink_sqs_classify(const char *code, int sender_fault);
/* The MD5 of s as 32 lowercase hex digits and a NUL into hex. */
void	sink_sqs_md5(const void *s, size_t len, char hex[33]);
/* Append one SendMessageBatch entry for message q, Id "e<index>", to the
 * JSON at *body (qmsg_cat's buffer): its Id, MessageBody and
 * MessageAttributes, its object left open for the FIFO fields (the caller
 * closes it); first: no comma before it. */
void	sink_sqs_entry(char **body, size_t *len, size_t *cap, uint32_t index,
	    const struct qmsg *q, int first);

/*
 * sink_xfer.c: one request of a queue sink, the answer kept whole.
 */
#define SINK_XFER_CAP		(1024 * 1024)	/* default answer cap */

struct sink_xfer {
	/* The request. */
	const char		*url;
	struct curl_slist	*headers;	/* or NULL */
	const void		*body;		/* NULL: a GET */
	size_t			 bodylen;
	uint64_t		 timeout_ms;	/* 0: none */
	const char		*sigv4;		/* CURLOPT_AWS_SIGV4, or NULL */
	const char		*userpwd;	/* with sigv4: key:secret */
	size_t			 cap;		/* answer bytes; 0: default */
	int			 unguarded;	/* the metadata server: not a
						 * sink, no egress guard
						 * (workers/egress.h) */
	int			 secret;	/* a bearer token in the
						 * headers: plain http to
						 * loopback only, and never
						 * through a proxy */
	int			 proxy_mode;	/* the sink's (conf.h) */
	const char		*proxy;
	/* The answer. */
	long			 status;	/* 0: none */
	char			*answer;	/* NUL-terminated, or NULL */
	size_t			 answerlen;
	int			 capped;
	char			 retry_after[65];	/* "" none */
	char			 error[256];	/* why -1; CURL_ERROR_SIZE */
	int			 denied;	/* -1 for the egress guard:
						 * error is its reason, for
						 * good */
	int			 proxy_failed;	/* -1 at the forward
						 * proxy: error is
						 * "proxy_error: .." */
};

/* 0 with an HTTP answer (any status), or -1 with x->error. */
int	sink_xfer_run(struct sink_xfer *x);
void	sink_xfer_done(struct sink_xfer *x);	/* frees the answer */
void	sink_xfer_set_abort(sink_abort_fn);
void	sink_xfer_cleanup(void);
/* A single job of a batching sink, run as a batch of one entry. */
int	sink_batch_of_one(const struct job *, struct job_outcome *,
	    int (*)(const struct batch *, struct batch_outcome *));

/* Pub/Sub: forget the cached metadata token (tests). */
void	sink_pubsub_forget_token(void);

#endif
