/* SPDX-License-Identifier: ISC */
/*
 * sink_kafka.c: the kafka sink, batched: every entry of a batch is
 * produced to the topic with librdkafka, then the producer is polled
 * until each entry has its delivery report, and each entry settles on its
 * own report.
 *
 * A record: its value the v1 queue message (qmsg.h) byte for byte, as on
 * SQS and Pub/Sub; its key the sink's key, else "<tenant>/<source>" (the
 * Elixir Ankusa's default), which picks the partition; its headers the
 * message's attributes in their order (ankusa_id, ankusa_source_id,
 * ankusa_tenant_id, ankusa_message_version, ankusa_idempotency_key,
 * content_type, then those that are set); its timestamp the hook's
 * received_at.
 *
 * The producer is idempotent (enable.idempotence: acks=all, and its own
 * retries write no duplicate), never creates topics
 * (allow.auto.create.topics false) and gives every record its report
 * within message.timeout.ms, the sink's timeout_ms.  A report without an
 * error means every in-sync replica has the record.  Producers live in
 * the deliver process, one per connection setting (brokers, ssl, sasl,
 * record and time limits), reused across batches: at most
 * SINK_KAFKA_KEEP, the one used least recently closed first.  One whose
 * idempotence failed for good (a fatal error), or that still owes a
 * report when its batch is given up, is closed after the batch.
 *
 * Results, per entry: ok on a report without an error; permanent, before
 * anything is sent, for a record (value, key and headers) over
 * max_record_bytes; permanent for a topic the cluster does not have, a
 * record the broker refuses as too large, invalid or out of its timestamp
 * range (sink_kafka_classify); else transient (brokers down, timeouts,
 * authentication and authorisation, not enough replicas), naming
 * librdkafka's error and the last one a broker connection reported.  An
 * entry that failed while the egress guard refused a broker address and
 * let none through is permanent egress_denied:<address>.
 *
 * Threads: librdkafka runs its own (one per broker and a few more), which
 * the deliver sandbox allows.  The egress guard runs in them, in the
 * connect callback, under the producer's lock: every address the producer
 * connects to, the bootstrap brokers and those the cluster's metadata
 * names, is checked first.  Delivery reports, errors and librdkafka's log
 * lines are served on the caller's thread by rd_kafka_poll (log.queue).
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "clock.h"
#include "egress.h"
#include "job.h"
#include "log.h"
#include "qmsg.h"
#include "sink.h"

#define SINK_KAFKA_KEEP		4	/* producers kept per process */
#define SINK_KAFKA_SLICE_MS	100	/* a poll; the abort watch between */
#define SINK_KAFKA_GRACE_MS	2000	/* past message.timeout.ms, whose
					 * scan runs about once a second */
#define SINK_KAFKA_PROPAGATION_MS "1000"	/* a topic missing from the
						 * metadata this long is
						 * unknown */
#define SINK_KAFKA_MAX_MSG	1000000000ULL	/* message.max.bytes' top */
#define SINK_KAFKA_FRAMING	4096	/* message.max.bytes over a record */

/* A producer kept for its connection setting. */
struct kprod {
	rd_kafka_t		*rk;
	char			*ident;		/* the setting, as made by
						 * sink_kafka_ident */
	size_t			 identlen;
	uint64_t		 used;		/* the latest use's stamp */
	pthread_mutex_t		 mu;		/* guards watch */
	struct egress_watch	 watch;		/* its connects, all threads */
	char			 lasterr[256];	/* the last error_cb's text */
	int			 fatal;		/* close it after the batch */
};

/* One entry of the batch in hand. */
struct kslot {
	struct qmsg		 q;
	int			 built;		/* q holds a message */
	int			 waiting;	/* produced, no report yet */
	int			 reported;
	rd_kafka_resp_err_t	 err;		/* the report's */
	int32_t			 partition;
	int64_t			 offset;
	int			*pending;	/* the batch's count of waiting */
};

static struct kprod	*kprods[SINK_KAFKA_KEEP];
static uint64_t		 kstamp;
static sink_abort_fn	 kabort;
/* A broker down or refusing makes librdkafka say so at every retry. */
static struct log_limit	 klog_limit = LOG_LIMIT_INIT("kafka warnings", 5);

static char	*sink_kafka_ident(const struct sink_conf *, size_t *);
static struct kprod *sink_kafka_producer(const struct sink_conf *, char *,
		    size_t);
static void	sink_kafka_close(struct kprod *);
static int	sink_kafka_connect_cb(int, const struct sockaddr *, int,
		    const char *, void *);
static void	sink_kafka_dr_cb(rd_kafka_t *, const rd_kafka_message_t *,
		    void *);
static void	sink_kafka_error_cb(rd_kafka_t *, int, const char *, void *);
static void	sink_kafka_log_cb(const rd_kafka_t *, int, const char *,
		    const char *);
static void	sink_kafka_produce(struct kprod *, const struct batch *,
		    uint32_t, struct kslot *, struct batch_result *,
		    uint64_t);
static void	sink_kafka_wait(struct kprod *, int *, uint64_t);
static void	sink_kafka_settle(struct kprod *, const struct batch *,
		    struct kslot *, struct batch_result *);

/* --- the pure parts --- */

enum job_result
sink_kafka_classify(int err)
{
	switch (err) {
	case RD_KAFKA_RESP_ERR_NO_ERROR:
		return JOB_OK;
	case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
	case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
	case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
	case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
	case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
	case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
	case RD_KAFKA_RESP_ERR_INVALID_RECORD:
	case RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP:
		return JOB_PERMANENT;
	default:
		return JOB_ERROR;
	}
}

void
sink_kafka_set_abort(sink_abort_fn fn)
{
	kabort = fn;
}

rd_kafka_conf_t *
sink_kafka_conf(const struct sink_conf *s, char *err, size_t errlen)
{
	rd_kafka_conf_t *c;
	char *servers = NULL, num[32];
	size_t len = 0, cap = 0;
	uint64_t maxmsg;
	const char *proto, *mech = NULL;
	int i, ok = 1;

	if (s->u.kafka.nbrokers < 1 || s->u.kafka.topic == NULL) {
		snprintf(err, errlen, "kafka sink has no brokers or topic");
		return NULL;
	}
	for (i = 0; i < s->u.kafka.nbrokers; i++) {
		if (i > 0)
			qmsg_cat(&servers, &len, &cap, ",");
		qmsg_cat(&servers, &len, &cap, s->u.kafka.brokers[i]);
	}
	if (s->u.kafka.sasl_mechanism == NULL)
		proto = s->u.kafka.ssl ? "ssl" : "plaintext";
	else {
		proto = s->u.kafka.ssl ? "sasl_ssl" : "sasl_plaintext";
		if (strcmp(s->u.kafka.sasl_mechanism, "plain") == 0)
			mech = "PLAIN";
		else if (strcmp(s->u.kafka.sasl_mechanism,
		    "scram_sha_256") == 0)
			mech = "SCRAM-SHA-256";
		else if (strcmp(s->u.kafka.sasl_mechanism,
		    "scram_sha_512") == 0)
			mech = "SCRAM-SHA-512";
		else {
			snprintf(err, errlen, "kafka: sasl mechanism %s",
			    s->u.kafka.sasl_mechanism);
			free(servers);
			return NULL;
		}
	}
	/* A record at max_record_bytes must pass librdkafka's own check,
	 * which counts the framing too. */
	maxmsg = s->max_message_bytes + SINK_KAFKA_FRAMING;
	if (maxmsg < 1000000)
		maxmsg = 1000000;
	if (maxmsg > SINK_KAFKA_MAX_MSG)
		maxmsg = SINK_KAFKA_MAX_MSG;

	c = rd_kafka_conf_new();
#define SET(k, v) do {							\
	if (ok && rd_kafka_conf_set(c, (k), (v), err, errlen) !=	\
	    RD_KAFKA_CONF_OK)						\
		ok = 0;							\
} while (0)
	SET("bootstrap.servers", servers);
	SET("client.id", "ankusa");
	SET("enable.idempotence", "true");
	SET("acks", "all");
	snprintf(num, sizeof(num), "%" PRIu64, s->timeout_ms > 0 ?
	    s->timeout_ms : 5000);
	SET("message.timeout.ms", num);
	snprintf(num, sizeof(num), "%" PRIu64, maxmsg);
	SET("message.max.bytes", num);
	SET("allow.auto.create.topics", "false");
	SET("topic.metadata.propagation.max.ms", SINK_KAFKA_PROPAGATION_MS);
	SET("security.protocol", proto);
	if (s->u.kafka.ssl) {
		/* Verified: the chain against the system's CAs, the name
		 * against the broker's (librdkafka's defaults, said). */
		SET("enable.ssl.certificate.verification", "true");
		SET("ssl.endpoint.identification.algorithm", "https");
	}
	if (mech != NULL) {
		SET("sasl.mechanisms", mech);
		SET("sasl.username", s->u.kafka.sasl_username != NULL ?
		    s->u.kafka.sasl_username : "");
		SET("sasl.password", s->u.kafka.sasl_password != NULL ?
		    s->u.kafka.sasl_password : "");
	}
	SET("log.queue", "true");
#undef SET
	free(servers);
	if (!ok) {
		rd_kafka_conf_destroy(c);
		return NULL;
	}
	return c;
}

/* --- the producers --- */

/* The setting a producer is made for, NUL-separated (the password among
 * it: cleared when freed). */
static char *
sink_kafka_ident(const struct sink_conf *s, size_t *lenp)
{
	char *buf = NULL, num[64];
	size_t len = 0, cap = 0;
	int i;

#define PUT(v) do {							\
	qmsg_cat(&buf, &len, &cap, (v) != NULL ? (v) : "");		\
	qmsg_cat(&buf, &len, &cap, "\x1f");				\
} while (0)
	for (i = 0; i < s->u.kafka.nbrokers; i++)
		PUT(s->u.kafka.brokers[i]);
	snprintf(num, sizeof(num), "%d|%" PRIu64 "|%" PRIu64, s->u.kafka.ssl,
	    s->max_message_bytes, s->timeout_ms);
	PUT(num);
	PUT(s->u.kafka.sasl_mechanism);
	PUT(s->u.kafka.sasl_username);
	PUT(s->u.kafka.sasl_password);
#undef PUT
	*lenp = len;
	return buf;
}

static struct kprod *
sink_kafka_producer(const struct sink_conf *s, char *err, size_t errlen)
{
	struct kprod *p;
	rd_kafka_conf_t *c;
	char *ident;
	size_t len;
	int i, slot = -1;

	ident = sink_kafka_ident(s, &len);
	for (i = 0; i < SINK_KAFKA_KEEP; i++) {
		p = kprods[i];
		if (p != NULL && p->identlen == len &&
		    memcmp(p->ident, ident, len) == 0) {
			explicit_bzero(ident, len);
			free(ident);
			p->used = ++kstamp;
			return p;
		}
	}
	/* A free place, else the one used least recently. */
	for (i = 0; i < SINK_KAFKA_KEEP && slot == -1; i++)
		if (kprods[i] == NULL)
			slot = i;
	if (slot == -1)
		for (slot = 0, i = 1; i < SINK_KAFKA_KEEP; i++)
			if (kprods[i]->used < kprods[slot]->used)
				slot = i;
	if ((c = sink_kafka_conf(s, err, errlen)) == NULL) {
		explicit_bzero(ident, len);
		free(ident);
		return NULL;
	}
	if (kprods[slot] != NULL) {
		sink_kafka_close(kprods[slot]);
		kprods[slot] = NULL;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL)
		fatal("sink_kafka");
	if (pthread_mutex_init(&p->mu, NULL) != 0)
		fatalx("sink_kafka: pthread_mutex_init");
	p->ident = ident;
	p->identlen = len;
	/* Plaintext is judged as plain http is (egress.allow_plain_http). */
	egress_watch_init(&p->watch, NULL, 0);
	p->watch.plain = !s->u.kafka.ssl;
	rd_kafka_conf_set_opaque(c, p);
	rd_kafka_conf_set_connect_cb(c, sink_kafka_connect_cb);
	rd_kafka_conf_set_dr_msg_cb(c, sink_kafka_dr_cb);
	rd_kafka_conf_set_error_cb(c, sink_kafka_error_cb);
	rd_kafka_conf_set_log_cb(c, sink_kafka_log_cb);
	/* rd_kafka_new owns c on success only. */
	if ((p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, errlen)) ==
	    NULL) {
		rd_kafka_conf_destroy(c);
		explicit_bzero(ident, len);
		free(ident);
		pthread_mutex_destroy(&p->mu);
		free(p);
		return NULL;
	}
	/* The log lines come to rd_kafka_poll, on this thread. */
	(void)rd_kafka_set_log_queue(p->rk, NULL);
	p->used = ++kstamp;
	kprods[slot] = p;
	log_debug("kafka: producer for %s (%s)", s->u.kafka.brokers[0],
	    rd_kafka_name(p->rk));
	return p;
}

static void
sink_kafka_close(struct kprod *p)
{
	int i;

	for (i = 0; i < SINK_KAFKA_KEEP; i++)
		if (kprods[i] == p)
			kprods[i] = NULL;
	/* Anything still queued is purged: its batch was given up. */
	(void)rd_kafka_purge(p->rk, RD_KAFKA_PURGE_F_QUEUE |
	    RD_KAFKA_PURGE_F_INFLIGHT);
	rd_kafka_destroy(p->rk);
	pthread_mutex_destroy(&p->mu);
	explicit_bzero(p->ident, p->identlen);
	free(p->ident);
	free(p);
}

void
sink_kafka_cleanup(void)
{
	int i;

	for (i = 0; i < SINK_KAFKA_KEEP; i++)
		if (kprods[i] != NULL)
			sink_kafka_close(kprods[i]);
}

/* --- librdkafka's callbacks --- */

/* A broker connection (one of librdkafka's threads): the egress guard,
 * then a non-blocking connect, as librdkafka's own. */
static int
sink_kafka_connect_cb(int fd, const struct sockaddr *sa, int salen,
    const char *id, void *opaque)
{
	struct kprod *p = opaque;
	int rc;

	pthread_mutex_lock(&p->mu);
	rc = egress_check(&p->watch, sa, (socklen_t)salen);
	pthread_mutex_unlock(&p->mu);
	if (rc == -1)
		return EACCES;
	if (connect(fd, sa, (socklen_t)salen) == -1 && errno != EINPROGRESS)
		return errno;
	return 0;
}

/* A delivery report, in rd_kafka_poll. */
static void
sink_kafka_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	struct kslot *s = m->_private;

	if (s == NULL || !s->waiting)
		return;
	s->waiting = 0;
	s->reported = 1;
	s->err = m->err;
	s->partition = m->partition;
	s->offset = m->offset;
	(*s->pending)--;
}

/* A client-wide error, in rd_kafka_poll: kept for the details of the
 * entries that fail; a fatal one closes the producer after its batch. */
static void
sink_kafka_error_cb(rd_kafka_t *rk, int err, const char *reason,
    void *opaque)
{
	struct kprod *p = opaque;
	char why[256], shown[256];

	if (err == RD_KAFKA_RESP_ERR__FATAL) {
		(void)rd_kafka_fatal_error(rk, why, sizeof(why));
		p->fatal = 1;
		log_warnx("kafka: %s: fatal: %s", rd_kafka_name(rk),
		    log_clean(shown, sizeof(shown), why));
		reason = why;
	} else
		log_debug("kafka: %s: %s", rd_kafka_name(rk),
		    log_clean(shown, sizeof(shown), reason));
	snprintf(p->lasterr, sizeof(p->lasterr), "%s", reason);
}

/* librdkafka's own log lines, in rd_kafka_poll (log.queue): its errors
 * as warnings (at most a few a second), the rest for debugging; cleaned,
 * for they quote the brokers. */
static void
sink_kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac,
    const char *buf)
{
	char shown[512];

	if (level <= 3) {
		if (log_limit_take(&klog_limit, LOG_LEVEL_WARN))
			log_warnx("kafka: %s: %s: %s", rd_kafka_name(rk), fac,
			    log_clean(shown, sizeof(shown), buf));
	} else
		log_debug("kafka: %s: %s: %s", rd_kafka_name(rk), fac,
		    log_clean(shown, sizeof(shown), buf));
}

/* --- the batch --- */

int
sink_kafka_run(const struct job *j, struct job_outcome *o)
{
	return sink_batch_of_one(j, o, sink_kafka_batch);
}

int
sink_kafka_batch(const struct batch *b, struct batch_outcome *o)
{
	struct kprod *p;
	struct kslot *s;
	char err[JOB_DETAIL_MAX];
	uint64_t deadline;
	uint32_t i;
	int pending = 0;

	if ((p = sink_kafka_producer(&b->sink, err, sizeof(err))) == NULL) {
		/* Nothing can be sent: librdkafka refused the setting. */
		for (i = 0; i < b->nentries; i++)
			batch_outcome_set(&o->r[i], JOB_ERROR, "kafka: %s",
			    err);
		return o->n > 0 ? o->r[0].result : JOB_OK;
	}
	if ((s = calloc(b->nentries, sizeof(*s))) == NULL)
		fatal("sink_kafka");
	deadline = time_mono_ms() + (b->sink.timeout_ms > 0 ?
	    b->sink.timeout_ms : 5000) + SINK_KAFKA_GRACE_MS;
	for (i = 0; i < b->nentries; i++) {
		s[i].pending = &pending;
		sink_kafka_produce(p, b, i, &s[i], &o->r[i], deadline);
		if (s[i].waiting)
			pending++;
	}
	sink_kafka_wait(p, &pending, deadline);
	for (i = 0; i < b->nentries; i++)
		sink_kafka_settle(p, b, &s[i], &o->r[i]);
	/* A report still owed would come to a slot freed below. */
	if (pending > 0 || p->fatal)
		sink_kafka_close(p);
	for (i = 0; i < b->nentries; i++)
		qmsg_free(&s[i].q);
	free(s);
	return o->n > 0 ? o->r[0].result : JOB_OK;
}

/* Produce entry i; s->waiting when its report is to come, else r is its
 * result already. */
static void
sink_kafka_produce(struct kprod *p, const struct batch *b, uint32_t i,
    struct kslot *s, struct batch_result *r, uint64_t deadline)
{
	const struct batch_entry *e = &b->entries[i];
	rd_kafka_headers_t *h;
	rd_kafka_resp_err_t rc;
	char err[JOB_DETAIL_MAX], *key;
	size_t size;
	int a;

	if (qmsg_build(&s->q, e, b->sink.inline_max_bytes, err,
	    sizeof(err)) == -1) {
		batch_outcome_set(r, JOB_ERROR, "%s", err);
		return;
	}
	s->built = 1;
	if (b->sink.u.kafka.key != NULL)
		key = strdup(b->sink.u.kafka.key);
	else if (asprintf(&key, "%s/%s", e->tenant, e->source) == -1)
		key = NULL;
	if (key == NULL)
		fatal("sink_kafka");
	size = s->q.jsonlen + strlen(key);
	for (a = 0; a < s->q.nattrs; a++)
		size += strlen(s->q.attrs[a].name) +
		    strlen(s->q.attrs[a].value);
	if (size > b->sink.max_message_bytes) {
		batch_outcome_set(r, JOB_PERMANENT, "kafka: record too large "
		    "(%zu bytes, max_record_bytes %" PRIu64 ")", size,
		    b->sink.max_message_bytes);
		free(key);
		return;
	}
	for (;;) {
		if ((h = rd_kafka_headers_new(s->q.nattrs)) == NULL)
			fatalx("sink_kafka: rd_kafka_headers_new");
		for (a = 0; a < s->q.nattrs; a++)
			if (rd_kafka_header_add(h, s->q.attrs[a].name, -1,
			    s->q.attrs[a].value, -1) != 0)
				fatalx("sink_kafka: rd_kafka_header_add");
		/* The value is not copied (no RD_KAFKA_MSG_F_COPY): s->q
		 * outlives the report. */
		s->waiting = 1;
		rc = rd_kafka_producev(p->rk,
		    RD_KAFKA_V_TOPIC(b->sink.u.kafka.topic),
		    RD_KAFKA_V_VALUE(s->q.json, s->q.jsonlen),
		    RD_KAFKA_V_KEY(key, strlen(key)),
		    RD_KAFKA_V_MSGFLAGS(0),
		    RD_KAFKA_V_HEADERS(h),
		    RD_KAFKA_V_TIMESTAMP((int64_t)e->received_at),
		    RD_KAFKA_V_OPAQUE(s),
		    RD_KAFKA_V_END);
		if (rc == RD_KAFKA_RESP_ERR_NO_ERROR)
			break;
		/* Not taken: the headers are still ours. */
		s->waiting = 0;
		rd_kafka_headers_destroy(h);
		if (rc != RD_KAFKA_RESP_ERR__QUEUE_FULL ||
		    time_mono_ms() >= deadline) {
			batch_outcome_set(r, sink_kafka_classify(rc),
			    "kafka: %s", rd_kafka_err2str(rc));
			break;
		}
		rd_kafka_poll(p->rk, SINK_KAFKA_SLICE_MS);
	}
	free(key);	/* the key is copied */
}

/* Serve the reports until none is owed or the deadline passes; then what
 * is still queued or in flight is purged, and its reports served. */
static void
sink_kafka_wait(struct kprod *p, int *pending, uint64_t deadline)
{
	uint64_t now;

	while (*pending > 0 && (now = time_mono_ms()) < deadline) {
		rd_kafka_poll(p->rk, deadline - now < SINK_KAFKA_SLICE_MS ?
		    (int)(deadline - now) : SINK_KAFKA_SLICE_MS);
		if (kabort != NULL)
			(void)kabort();
	}
	if (*pending == 0)
		return;
	(void)rd_kafka_purge(p->rk, RD_KAFKA_PURGE_F_QUEUE |
	    RD_KAFKA_PURGE_F_INFLIGHT);
	rd_kafka_poll(p->rk, 0);
}

/* Entry s's result from its report (one that has its result already is
 * left alone). */
static void
sink_kafka_settle(struct kprod *p, const struct batch *b, struct kslot *s,
    struct batch_result *r)
{
	enum job_result res;
	char denied[EGRESS_DENIED_MAX];
	int refused;

	if (s->waiting) {
		s->waiting = 0;
		batch_outcome_set(r, JOB_ERROR, "kafka: no delivery report "
		    "within %" PRIu64 " ms%s%s", b->sink.timeout_ms,
		    p->lasterr[0] != '\0' ? ": " : "", p->lasterr);
		return;
	}
	if (!s->reported)
		return;
	res = sink_kafka_classify(s->err);
	if (res == JOB_OK) {
		batch_outcome_set(r, JOB_OK, "kafka %s [%" PRId32 "] @%" PRId64,
		    b->sink.u.kafka.topic, s->partition, s->offset);
		return;
	}
	pthread_mutex_lock(&p->mu);
	refused = EGRESS_REFUSED(&p->watch);
	memcpy(denied, p->watch.denied, sizeof(denied));
	pthread_mutex_unlock(&p->mu);
	if (res == JOB_ERROR && refused)
		batch_outcome_set(r, JOB_PERMANENT, "%s", denied);
	else if (s->err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
	    s->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
		batch_outcome_set(r, res, "kafka: topic %s does not exist: %s",
		    b->sink.u.kafka.topic, rd_kafka_err2str(s->err));
	else
		batch_outcome_set(r, res, "kafka: %s%s%s",
		    rd_kafka_err2str(s->err), res == JOB_ERROR &&
		    p->lasterr[0] != '\0' ? ": " : "", res == JOB_ERROR ?
		    p->lasterr : "");
}
