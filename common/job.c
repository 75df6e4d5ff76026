/* SPDX-License-Identifier: ISC */
/*
 * job.c: the codec of MSG_DELIVER_JOB and MSG_DELIVER_OUTCOME; see job.h.
 *
 * MSG_DELIVER_JOB payload, in this order (field types as in msg.c):
 *
 *   str hook_id, str tenant, str source, u64 received_at, str content_type,
 *   u32 nheaders, then per header str name, str value,
 *   str dedupe_key, str replay_id, u32 attempt, str claim_ref,
 *   u8 verification (enum hook_verification), data trace context
 *   (TRACE_CTX_LEN bytes), str tracestate, data sha256 (32 bytes: the
 *   body's, as stored with the hook), u32 sink_index,
 *   the sink: u8 type, u8 ordered, u8 order_key kind, str order_key name,
 *     u64 timeout_ms, u64 inline_max_bytes, u64 max_message_bytes,
 *     u8 proxy_mode (enum sink_proxy_mode), str proxy, then
 *     http:   str url, str method, u32 nheaders, per header str name,
 *             str value, u32 nsecrets, per secret data bytes,
 *             u64 max_response_bytes, u8 auth type (enum
 *             sink_auth_type), str token, username, password, token_url,
 *             client_id, client_secret, scope, audience, u8 client_post,
 *             then the tls: str client_cert, client_key, ca (PEM text,
 *             read by the master), server_name
 *     sqs:    str queue_url, region, endpoint, message_group_id,
 *             access_key_id, secret_access_key, session_token
 *     pubsub: str project, topic, endpoint, ordering_key, auth, token
 *     redis:  str url, channel, stream, u64 maxlen, then the tls as an
 *             http sink's: str client_cert, client_key, ca, server_name
 *     nats:   str urls (the servers joined by ','), subject,
 *             u64 publish_timeout_ms, str username, password, token,
 *             nkey_seed, jwt, u8 tls_on, str client_cert, client_key,
 *             ca, server_name (the tls, as the http sink's)
 *     rabbitmq: str url, exchange, exchange_type, routing_key,
 *             u32 max_inflight
 *     kafka:  u32 nbrokers (1..CONF_MAX_BROKERS), per broker str
 *             host:port, str topic, key, u8 ssl, str sasl_mechanism,
 *             sasl_username, sasl_password
 *     log:    nothing
 *   u64 body length, then the body as data when the length is at most
 *   MSG_INLINE_MAX; above that no data field, and the frame carries a
 *   memfd holding exactly that many bytes.
 *
 * A string option of the sink that is absent (NULL) travels as "" and
 * comes back NULL: the config never holds an empty option.
 *
 * MSG_DELIVER_OUTCOME payload: u8 result, u64 retry_after_ms,
 * u32 http_status, u64 duration_ms, str detail.
 *
 * The batch and claim frames are batch.c's and claimjob.c's; the fields
 * all three write alike are here (job_int.h).
 *
 * Decoding is strict: counts over their bounds, an unknown sink type or
 * result, a body length that disagrees with its descriptor, a descriptor
 * where none belongs (or none where one must be), leftover bytes: each
 * refuses the frame.  Nothing here is fatal except running out of memory.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job_int.h"
#include "log.h"
#include "msg.h"
#include "netaddr.h"
#include "proc.h"
#include "utf8.h"

static int	job_ref_str(struct msg *, char **);
static int	job_get_sha256(struct msg *, unsigned char[32]);
static int	job_get_body(struct msg *, struct job *);
static void	job_add_tls(struct msg *, const struct sink_tls *);
static int	job_get_tls(struct msg *, struct sink_tls *, int);
static void	job_free_secret(char *);
static void	job_free_tls(struct sink_tls *);
static int	job_get_brokers(struct msg *, struct sink_conf *, int);

#define FRAME_KEEP	(MSG_INLINE_MAX + 2048)	/* an inline job's frame */

static unsigned char	*spare;		/* a freed frame, FRAME_KEEP bytes */

static const char *job_result_names[JOB_RESULT_MAX] = {
	[JOB_OK] = "ok",
	[JOB_ERROR] = "error",
	[JOB_PERMANENT] = "permanent",
	[JOB_PROXY_ERROR] = "proxy_error",
};

const char *
job_result_name(enum job_result r)
{
	if ((unsigned)r >= JOB_RESULT_MAX)
		return "unknown";
	return job_result_names[r];
}

const char *
job_detail_loggable(const char *detail, char *buf, size_t len)
{
	const char *cut = strstr(detail, ": ");
	size_t n = cut != NULL ? (size_t)(cut - detail) : strlen(detail);

	snprintf(buf, len, "%.*s", (int)n, detail);
	return buf;
}

/* --- encoding --- */

int
job_encode(struct msg *m, const struct job *j)
{
	msg_init(m, MSG_DELIVER_JOB, j->id);
	msg_add_str(m, j->hook_id);
	msg_add_str(m, j->tenant);
	msg_add_str(m, j->source);
	msg_add_u64(m, j->received_at);
	msg_add_str(m, j->content_type);
	job_add_pairs(m, j->headers, j->nheaders);
	msg_add_str(m, j->dedupe_key);
	msg_add_str(m, j->replay_id);
	msg_add_u32(m, j->attempt);
	msg_add_str(m, j->claim_ref);
	job_add_trace(m, j->verification, j->trace);
	msg_add_str(m, j->tracestate);
	msg_add_data(m, j->sha256, sizeof(j->sha256));
	msg_add_u32(m, j->sink_index);
	job_add_sink(m, &j->sink);

	if (proc_add_body(m, "job", j->body, j->bodylen) == -1) {
		msg_free(m);
		return -1;
	}
	return 0;
}

void
job_add_pairs(struct msg *m, const struct header_kv *kv, int n)
{
	int i;

	msg_add_u32(m, n);
	for (i = 0; i < n; i++) {
		msg_add_str(m, kv[i].name);
		msg_add_str(m, kv[i].value);
	}
}

static void
job_add_auth(struct msg *m, const struct sink_auth *a)
{
	msg_add_u8(m, a->type);
	msg_add_str(m, a->token);
	msg_add_str(m, a->username);
	msg_add_str(m, a->password);
	msg_add_str(m, a->token_url);
	msg_add_str(m, a->client_id);
	msg_add_str(m, a->client_secret);
	msg_add_str(m, a->scope);
	msg_add_str(m, a->audience);
	msg_add_u8(m, a->client_post != 0);
}

static int
job_get_auth(struct msg *m, struct sink_auth *a, int inplace)
{
	uint8_t type, post;

	if (msg_get_u8(m, &type) == -1)
		return -1;
	if (type > SINK_AUTH_OAUTH2) {
		m->err = 1;
		return -1;
	}
	a->type = type;
	if (job_get_opt(m, &a->token, inplace) == -1 ||
	    job_get_opt(m, &a->username, inplace) == -1 ||
	    job_get_opt(m, &a->password, inplace) == -1 ||
	    job_get_opt(m, &a->token_url, inplace) == -1 ||
	    job_get_opt(m, &a->client_id, inplace) == -1 ||
	    job_get_opt(m, &a->client_secret, inplace) == -1 ||
	    job_get_opt(m, &a->scope, inplace) == -1 ||
	    job_get_opt(m, &a->audience, inplace) == -1 ||
	    msg_get_u8(m, &post) == -1)
		return -1;
	if (post > 1) {
		m->err = 1;
		return -1;
	}
	a->client_post = post;
	return 0;
}

/* A sink's tls: the PEM text the master read, and the server name. */
static void
job_add_tls(struct msg *m, const struct sink_tls *t)
{
	msg_add_str(m, t->client_cert);
	msg_add_str(m, t->client_key);
	msg_add_str(m, t->ca);
	msg_add_str(m, t->server_name);
}

static int
job_get_tls(struct msg *m, struct sink_tls *t, int inplace)
{
	if (job_get_opt(m, &t->client_cert, inplace) == -1 ||
	    job_get_opt(m, &t->client_key, inplace) == -1 ||
	    job_get_opt(m, &t->ca, inplace) == -1 ||
	    job_get_opt(m, &t->server_name, inplace) == -1)
		return -1;
	return 0;
}

void
job_add_sink(struct msg *m, const struct sink_conf *s)
{
	int i;

	msg_add_u8(m, s->type);
	msg_add_u8(m, s->ordered != 0);
	msg_add_u8(m, s->order_key.kind);
	msg_add_str(m, s->order_key.name);
	msg_add_u64(m, s->timeout_ms);
	msg_add_u64(m, s->inline_max_bytes);
	msg_add_u64(m, s->max_message_bytes);
	msg_add_u8(m, s->proxy_mode);
	msg_add_str(m, s->proxy);
	switch (s->type) {
	case SINK_HTTP:
		msg_add_str(m, s->u.http.url);
		msg_add_str(m, s->u.http.method);
		job_add_pairs(m, s->u.http.headers, s->u.http.nheaders);
		msg_add_u32(m, s->u.http.nsecrets);
		for (i = 0; i < s->u.http.nsecrets; i++)
			msg_add_data(m, s->u.http.secrets[i].data,
			    s->u.http.secrets[i].len);
		msg_add_u64(m, s->u.http.max_response_bytes);
		job_add_auth(m, &s->u.http.auth);
		job_add_tls(m, &s->u.http.tls);
		break;
	case SINK_SQS:
		msg_add_str(m, s->u.sqs.queue_url);
		msg_add_str(m, s->u.sqs.region);
		msg_add_str(m, s->u.sqs.endpoint);
		msg_add_str(m, s->u.sqs.message_group_id);
		msg_add_str(m, s->u.sqs.access_key_id);
		msg_add_str(m, s->u.sqs.secret_access_key);
		msg_add_str(m, s->u.sqs.session_token);
		break;
	case SINK_PUBSUB:
		msg_add_str(m, s->u.pubsub.project);
		msg_add_str(m, s->u.pubsub.topic);
		msg_add_str(m, s->u.pubsub.endpoint);
		msg_add_str(m, s->u.pubsub.ordering_key);
		msg_add_str(m, s->u.pubsub.auth);
		msg_add_str(m, s->u.pubsub.token);
		break;
	case SINK_REDIS:
		msg_add_str(m, s->u.redis.url);
		msg_add_str(m, s->u.redis.channel);
		msg_add_str(m, s->u.redis.stream);
		msg_add_u64(m, s->u.redis.maxlen);
		job_add_tls(m, &s->u.redis.tls);
		break;
	case SINK_NATS:
		msg_add_str(m, s->u.nats.urls);
		msg_add_str(m, s->u.nats.subject);
		msg_add_u64(m, s->u.nats.publish_timeout_ms);
		msg_add_str(m, s->u.nats.username);
		msg_add_str(m, s->u.nats.password);
		msg_add_str(m, s->u.nats.token);
		msg_add_str(m, s->u.nats.nkey_seed);
		msg_add_str(m, s->u.nats.jwt);
		msg_add_u8(m, s->u.nats.tls_on != 0);
		job_add_tls(m, &s->u.nats.tls);
		break;
	case SINK_RABBITMQ:
		msg_add_str(m, s->u.rabbitmq.url);
		msg_add_str(m, s->u.rabbitmq.exchange);
		msg_add_str(m, s->u.rabbitmq.exchange_type);
		msg_add_str(m, s->u.rabbitmq.routing_key);
		msg_add_u32(m, s->u.rabbitmq.max_inflight);
		break;
	case SINK_KAFKA:
		msg_add_u32(m, s->u.kafka.nbrokers);
		for (i = 0; i < s->u.kafka.nbrokers; i++)
			msg_add_str(m, s->u.kafka.brokers[i]);
		msg_add_str(m, s->u.kafka.topic);
		msg_add_str(m, s->u.kafka.key);
		msg_add_u8(m, s->u.kafka.ssl != 0);
		msg_add_str(m, s->u.kafka.sasl_mechanism);
		msg_add_str(m, s->u.kafka.sasl_username);
		msg_add_str(m, s->u.kafka.sasl_password);
		break;
	case SINK_LOG:
		break;
	default:
		/* The master built this job from its own config. */
		fatalx("job_encode: sink type %d", (int)s->type);
	}
}

/* --- decoding --- */

/*
 * A job's strings are read in place, out of one copy of the frame (a
 * dozen strdups and frees per job showed in a deliver process's
 * profile: docs/PERFORMANCE).  The
 * copy has a NUL after the payload, so an inline body, the frame's last
 * field, is NUL-terminated as the sinks expect.  A freed copy of up to
 * FRAME_KEEP bytes is kept for the next job: a deliver process holds two
 * jobs at most (one running, one on deck), and a malloc of a kilobyte or
 * more costs glibc a sweep of its small free chunks.
 */
int
job_decode(struct msg *m, struct job *j)
{
	struct msg v;

	memset(j, 0, sizeof(*j));
	j->id = m->id;
	if (m->type != MSG_DELIVER_JOB && m->type != MSG_DELIVER_NEXT)
		return -1;
	if (spare != NULL && m->len < FRAME_KEEP) {
		j->frame = spare;	/* FRAME_KEEP bytes */
		spare = NULL;
	} else if ((j->frame = malloc(m->len < FRAME_KEEP ? FRAME_KEEP :
	    m->len + 1)) == NULL)
		fatal("job_decode");
	if (m->len > 0)
		memcpy(j->frame, m->buf, m->len);
	j->frame[m->len] = '\0';
	j->framelen = m->len;
	v = *m;
	v.buf = j->frame;
	v.cap = 0;
	if (job_ref_str(&v, &j->hook_id) == -1 ||
	    job_ref_str(&v, &j->tenant) == -1 ||
	    job_ref_str(&v, &j->source) == -1 ||
	    msg_get_u64(&v, &j->received_at) == -1 ||
	    job_ref_str(&v, &j->content_type) == -1 ||
	    job_get_pairs(&v, &j->headers, &j->nheaders, 1) == -1 ||
	    job_ref_str(&v, &j->dedupe_key) == -1 ||
	    job_ref_str(&v, &j->replay_id) == -1 ||
	    msg_get_u32(&v, &j->attempt) == -1 ||
	    job_ref_str(&v, &j->claim_ref) == -1 ||
	    job_get_trace(&v, &j->verification, j->trace) == -1 ||
	    job_ref_str(&v, &j->tracestate) == -1 ||
	    job_get_sha256(&v, j->sha256) == -1 ||
	    msg_get_u32(&v, &j->sink_index) == -1 ||
	    job_get_sink(&v, &j->sink, 1) == -1 ||
	    job_get_body(&v, j) == -1 ||
	    msg_end(&v) == -1) {
		job_free(j);
		return -1;
	}
	return 0;
}

void
job_add_trace(struct msg *m, uint8_t verification,
    const unsigned char trace[TRACE_CTX_LEN])
{
	msg_add_u8(m, verification);
	msg_add_data(m, trace, TRACE_CTX_LEN);
}

int
job_get_trace(struct msg *m, uint8_t *verification,
    unsigned char trace[TRACE_CTX_LEN])
{
	const void *p;
	size_t len;

	if (msg_get_u8(m, verification) == -1 ||
	    *verification >= VERIFICATION_MAX ||
	    msg_get_data(m, &p, &len) == -1 || len != TRACE_CTX_LEN)
		return -1;
	memcpy(trace, p, TRACE_CTX_LEN);
	return 0;
}

int
job_get_str(struct msg *m, char **out)
{
	const char *s;

	if (msg_get_str(m, &s) == -1)
		return -1;
	if ((*out = strdup(s)) == NULL)
		fatal("job_decode");
	return 0;
}

static int
job_get_sha256(struct msg *m, unsigned char out[32])
{
	const void *p;
	size_t len;

	if (msg_get_data(m, &p, &len) == -1 || len != 32)
		return -1;
	memcpy(out, p, 32);
	return 0;
}

/* A string of the frame in place: m's buffer is the job's own copy. */
static int
job_ref_str(struct msg *m, char **out)
{
	const char *s;

	if (msg_get_str(m, &s) == -1)
		return -1;
	*out = (char *)s;
	return 0;
}

/* A sink option: "" is absent.  inplace: as job_ref_str. */
int
job_get_opt(struct msg *m, char **out, int inplace)
{
	const char *s;

	if (msg_get_str(m, &s) == -1)
		return -1;
	if (*s == '\0')
		*out = NULL;
	else if (inplace)
		*out = (char *)s;
	else if ((*out = strdup(s)) == NULL)
		fatal("job_decode");
	return 0;
}

/* inplace: the names and values point into m's buffer (job_ref_str). */
int
job_get_pairs(struct msg *m, struct header_kv **kvp, int *np, int inplace)
{
	int (*get)(struct msg *, char **) = inplace ? job_ref_str :
	    job_get_str;
	struct header_kv *kv;
	uint32_t n, i;

	if (msg_get_u32(m, &n) == -1)
		return -1;
	if (n > JOB_MAX_HEADERS) {
		m->err = 1;
		return -1;
	}
	/* Not calloc, which skips glibc's per-thread cache (chan_send). */
	if ((kv = malloc((n + 1) * sizeof(*kv))) == NULL)
		fatal("job_decode");
	*kvp = kv;
	for (i = 0; i <= n; i++)
		kv[i].name = kv[i].value = NULL;
	for (i = 0; i < n; i++) {
		if (get(m, &kv[i].name) == -1 ||
		    get(m, &kv[i].value) == -1) {
			if (kv[i].name != NULL)
				i++;
			*np = i;
			return -1;
		}
	}
	*np = n;
	return 0;
}

int
job_get_sink(struct msg *m, struct sink_conf *s, int inplace)
{
	const void *p;
	size_t len;
	uint32_t n, i;
	uint8_t type, ordered, kind, pmode, ssl;

	if (msg_get_u8(m, &type) == -1 || msg_get_u8(m, &ordered) == -1 ||
	    msg_get_u8(m, &kind) == -1)
		return -1;
	if (type < SINK_HTTP || type > SINK_KAFKA ||
	    ordered > 1 ||
	    kind > KEY_JSON) {
		m->err = 1;
		return -1;
	}
	s->type = type;
	s->ordered = ordered;
	s->order_key.kind = kind;
	if (job_get_opt(m, &s->order_key.name, inplace) == -1 ||
	    msg_get_u64(m, &s->timeout_ms) == -1 ||
	    msg_get_u64(m, &s->inline_max_bytes) == -1 ||
	    msg_get_u64(m, &s->max_message_bytes) == -1 ||
	    msg_get_u8(m, &pmode) == -1 ||
	    job_get_opt(m, &s->proxy, inplace) == -1)
		return -1;
	if (pmode > SINK_PROXY_URL || (pmode == SINK_PROXY_URL) !=
	    (s->proxy != NULL)) {
		m->err = 1;
		return -1;
	}
	s->proxy_mode = pmode;
	switch (s->type) {
	case SINK_HTTP:
		if (job_get_opt(m, &s->u.http.url, inplace) == -1 ||
		    job_get_opt(m, &s->u.http.method, inplace) == -1 ||
		    job_get_pairs(m, &s->u.http.headers,
		    &s->u.http.nheaders, inplace) == -1 ||
		    msg_get_u32(m, &n) == -1)
			return -1;
		if (n > CONF_MAX_SECRETS) {
			m->err = 1;
			return -1;
		}
		for (i = 0; i < n; i++) {
			if (msg_get_data(m, &p, &len) == -1)
				return -1;
			if (inplace)
				s->u.http.secrets[i].data = (unsigned char *)p;
			else if ((s->u.http.secrets[i].data = malloc(len +
			    1)) == NULL)
				fatal("job_decode");
			else if (len > 0)
				memcpy(s->u.http.secrets[i].data, p, len);
			s->u.http.secrets[i].len = len;
			s->u.http.nsecrets = i + 1;
		}
		if (msg_get_u64(m, &s->u.http.max_response_bytes) == -1 ||
		    job_get_auth(m, &s->u.http.auth, inplace) == -1 ||
		    job_get_tls(m, &s->u.http.tls, inplace) == -1)
			return -1;
		return 0;
	case SINK_SQS:
		if (job_get_opt(m, &s->u.sqs.queue_url, inplace) == -1 ||
		    job_get_opt(m, &s->u.sqs.region, inplace) == -1 ||
		    job_get_opt(m, &s->u.sqs.endpoint, inplace) == -1 ||
		    job_get_opt(m, &s->u.sqs.message_group_id, inplace) == -1 ||
		    job_get_opt(m, &s->u.sqs.access_key_id, inplace) == -1 ||
		    job_get_opt(m, &s->u.sqs.secret_access_key, inplace) == -1 ||
		    job_get_opt(m, &s->u.sqs.session_token, inplace) == -1)
			return -1;
		return 0;
	case SINK_PUBSUB:
		if (job_get_opt(m, &s->u.pubsub.project, inplace) == -1 ||
		    job_get_opt(m, &s->u.pubsub.topic, inplace) == -1 ||
		    job_get_opt(m, &s->u.pubsub.endpoint, inplace) == -1 ||
		    job_get_opt(m, &s->u.pubsub.ordering_key, inplace) == -1 ||
		    job_get_opt(m, &s->u.pubsub.auth, inplace) == -1 ||
		    job_get_opt(m, &s->u.pubsub.token, inplace) == -1)
			return -1;
		return 0;
	case SINK_REDIS:
		if (job_get_opt(m, &s->u.redis.url, inplace) == -1 ||
		    job_get_opt(m, &s->u.redis.channel, inplace) == -1 ||
		    job_get_opt(m, &s->u.redis.stream, inplace) == -1 ||
		    msg_get_u64(m, &s->u.redis.maxlen) == -1 ||
		    job_get_tls(m, &s->u.redis.tls, inplace) == -1)
			return -1;
		return 0;
	case SINK_NATS:
		if (job_get_opt(m, &s->u.nats.urls, inplace) == -1 ||
		    job_get_opt(m, &s->u.nats.subject, inplace) == -1 ||
		    msg_get_u64(m, &s->u.nats.publish_timeout_ms) == -1 ||
		    job_get_opt(m, &s->u.nats.username, inplace) == -1 ||
		    job_get_opt(m, &s->u.nats.password, inplace) == -1 ||
		    job_get_opt(m, &s->u.nats.token, inplace) == -1 ||
		    job_get_opt(m, &s->u.nats.nkey_seed, inplace) == -1 ||
		    job_get_opt(m, &s->u.nats.jwt, inplace) == -1 ||
		    msg_get_u8(m, &pmode) == -1 || pmode > 1 ||
		    job_get_tls(m, &s->u.nats.tls, inplace) == -1) {
			m->err = 1;
			return -1;
		}
		s->u.nats.tls_on = pmode;
		return 0;
	case SINK_RABBITMQ:
		if (job_get_opt(m, &s->u.rabbitmq.url, inplace) == -1 ||
		    job_get_opt(m, &s->u.rabbitmq.exchange, inplace) == -1 ||
		    job_get_opt(m, &s->u.rabbitmq.exchange_type,
		    inplace) == -1 ||
		    job_get_opt(m, &s->u.rabbitmq.routing_key, inplace) == -1 ||
		    msg_get_u32(m, &s->u.rabbitmq.max_inflight) == -1)
			return -1;
		return 0;
	case SINK_KAFKA:
		if (job_get_brokers(m, s, inplace) == -1 ||
		    job_get_opt(m, &s->u.kafka.topic, inplace) == -1 ||
		    job_get_opt(m, &s->u.kafka.key, inplace) == -1 ||
		    msg_get_u8(m, &ssl) == -1 ||
		    job_get_opt(m, &s->u.kafka.sasl_mechanism, inplace) == -1 ||
		    job_get_opt(m, &s->u.kafka.sasl_username, inplace) == -1 ||
		    job_get_opt(m, &s->u.kafka.sasl_password, inplace) == -1)
			return -1;
		if (ssl > 1 || s->u.kafka.topic == NULL) {
			m->err = 1;
			return -1;
		}
		s->u.kafka.ssl = ssl;
		return 0;
	default:
		return 0;	/* SINK_LOG: no options */
	}
}

/* kafka's brokers, at least one, none empty; the array is malloc'd
 * (inplace: its strings point into the frame). */
static int
job_get_brokers(struct msg *m, struct sink_conf *s, int inplace)
{
	uint32_t n, i;

	if (msg_get_u32(m, &n) == -1)
		return -1;
	if (n == 0 || n > CONF_MAX_BROKERS) {
		m->err = 1;
		return -1;
	}
	if ((s->u.kafka.brokers = calloc(n, sizeof(char *))) == NULL)
		fatal("job_decode");
	for (i = 0; i < n; i++) {
		if (job_get_opt(m, &s->u.kafka.brokers[i], inplace) == -1)
			return -1;
		s->u.kafka.nbrokers = i + 1;
		if (s->u.kafka.brokers[i] == NULL) {
			m->err = 1;
			return -1;
		}
	}
	return 0;
}

/* The body: inline data, or exactly its length in the passed memfd. */
static int
job_get_body(struct msg *m, struct job *j)
{
	struct stat st;
	const void *p;
	uint64_t len;
	size_t n;

	if (msg_get_u64(m, &len) == -1)
		return -1;
	if (len <= MSG_INLINE_MAX) {
		if (m->fd != -1 || msg_get_data(m, &p, &n) == -1 ||
		    n != len) {
			m->err = 1;
			return -1;
		}
		/* In place: the frame's last field, NUL after it. */
		j->body = (unsigned char *)p;
		j->bodylen = n;
		return 0;
	}
	if (m->fd == -1 || len > JOB_MAX_BODY || fstat(m->fd, &st) == -1 ||
	    (uint64_t)st.st_size != len) {
		m->err = 1;
		return -1;
	}
	if ((j->body = (unsigned char *)proc_read_fd(m->fd, len)) == NULL) {
		if (errno == ENOMEM)
			fatal("job_decode");
		m->err = 1;
		return -1;
	}
	j->bodylen = len;
	return 0;
}

void
job_free_pairs(struct header_kv *kv, int n)
{
	int i;

	if (kv == NULL)
		return;
	for (i = 0; i < n; i++) {
		free(kv[i].name);
		free(kv[i].value);
	}
	free(kv);
}

/* A secret copy: zeroed, then freed. */
static void
job_free_secret(char *s)
{
	if (s != NULL)
		explicit_bzero(s, strlen(s));
	free(s);
}

static void
job_free_tls(struct sink_tls *t)
{
	free(t->client_cert);
	job_free_secret(t->client_key);
	free(t->ca);
	free(t->server_name);
}

void
job_free_sink(struct sink_conf *s, int inplace)
{
	int i;

	if (inplace) {
		/* Only the header array: the rest is in the frame, which the
		 * caller clears. */
		if (s->type == SINK_HTTP)
			free(s->u.http.headers);
		else if (s->type == SINK_KAFKA)
			free(s->u.kafka.brokers);
		return;
	}
	free(s->order_key.name);
	free(s->proxy);
	switch (s->type) {
	case SINK_HTTP:
		free(s->u.http.url);
		free(s->u.http.method);
		job_free_pairs(s->u.http.headers, s->u.http.nheaders);
		job_free_secret(s->u.http.auth.token);
		free(s->u.http.auth.username);
		job_free_secret(s->u.http.auth.password);
		free(s->u.http.auth.token_url);
		free(s->u.http.auth.client_id);
		job_free_secret(s->u.http.auth.client_secret);
		free(s->u.http.auth.scope);
		free(s->u.http.auth.audience);
		job_free_tls(&s->u.http.tls);
		for (i = 0; i < s->u.http.nsecrets; i++) {
			/* Secrets: leave nothing behind in freed memory. */
			explicit_bzero(s->u.http.secrets[i].data,
			    s->u.http.secrets[i].len);
			free(s->u.http.secrets[i].data);
		}
		break;
	case SINK_SQS:
		free(s->u.sqs.queue_url);
		free(s->u.sqs.region);
		free(s->u.sqs.endpoint);
		free(s->u.sqs.message_group_id);
		free(s->u.sqs.access_key_id);
		if (s->u.sqs.secret_access_key != NULL)
			explicit_bzero(s->u.sqs.secret_access_key,
			    strlen(s->u.sqs.secret_access_key));
		free(s->u.sqs.secret_access_key);
		free(s->u.sqs.session_token);
		break;
	case SINK_PUBSUB:
		free(s->u.pubsub.project);
		free(s->u.pubsub.topic);
		free(s->u.pubsub.endpoint);
		free(s->u.pubsub.ordering_key);
		free(s->u.pubsub.auth);
		free(s->u.pubsub.token);
		break;
	case SINK_REDIS:
		job_free_secret(s->u.redis.url);
		free(s->u.redis.channel);
		free(s->u.redis.stream);
		job_free_tls(&s->u.redis.tls);
		break;
	case SINK_NATS:
		free(s->u.nats.urls);
		free(s->u.nats.subject);
		free(s->u.nats.username);
		job_free_secret(s->u.nats.password);
		job_free_secret(s->u.nats.token);
		job_free_secret(s->u.nats.nkey_seed);
		free(s->u.nats.jwt);
		job_free_tls(&s->u.nats.tls);
		break;
	case SINK_RABBITMQ:
		job_free_secret(s->u.rabbitmq.url);
		free(s->u.rabbitmq.exchange);
		free(s->u.rabbitmq.exchange_type);
		free(s->u.rabbitmq.routing_key);
		break;
	case SINK_KAFKA:
		for (i = 0; i < s->u.kafka.nbrokers; i++)
			free(s->u.kafka.brokers[i]);
		free(s->u.kafka.brokers);
		free(s->u.kafka.topic);
		free(s->u.kafka.key);
		free(s->u.kafka.sasl_mechanism);
		free(s->u.kafka.sasl_username);
		job_free_secret(s->u.kafka.sasl_password);
		break;
	default:
		break;
	}
}

void
job_free(struct job *j)
{
	free(j->headers);	/* names and values are in the frame */
	if (j->bodylen > MSG_INLINE_MAX)
		free(j->body);	/* read from its memfd; else in the frame */
	job_free_sink(&j->sink, 1);
	if (j->frame != NULL) {
		/* It holds the sink's secrets too. */
		explicit_bzero(j->frame, j->framelen);
		if (spare == NULL && j->framelen < FRAME_KEEP)
			spare = j->frame;
		else
			free(j->frame);
	}
	memset(j, 0, sizeof(*j));
}

/* --- outcomes --- */

/*
 * An outcome's detail quotes the sink (an error text, a curl message) and
 * is cut to JOB_DETAIL_MAX: formatted into room to spare, then cleaned to
 * well-formed UTF-8 and cut between characters (common/utf8.h), so the
 * master stores and shows it as text.  The decoders clean it again: the
 * master does not trust a deliver process to have done so.
 */
void
job_detail_vset(char *detail, const char *fmt, va_list ap)
{
	char buf[4 * JOB_DETAIL_MAX];
	int n;

	if ((n = vsnprintf(buf, sizeof(buf), fmt, ap)) < 0)
		n = 0;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	(void)utf8_clean(detail, JOB_DETAIL_MAX, buf, (size_t)n);
}

void
job_outcome_set(struct job_outcome *o, enum job_result r, const char *fmt,
    ...)
{
	va_list ap;

	o->result = r;
	va_start(ap, fmt);
	job_detail_vset(o->detail, fmt, ap);
	va_end(ap);
}

void
job_dead_reason(char *why, size_t sz, const char *detail)
{
	size_t n = sizeof(NETADDR_DENIED_PREFIX) - 1;

	if (strncmp(detail, NETADDR_DENIED_PREFIX, n) == 0 &&
	    detail[n] != '\0')
		snprintf(why, sz, "%s", detail);
	else
		snprintf(why, sz, "permanent:%s", detail);
}

void
job_outcome_encode(struct msg *m, uint64_t id, const struct job_outcome *o)
{
	msg_init(m, MSG_DELIVER_OUTCOME, id);
	msg_add_u8(m, o->result);
	msg_add_u64(m, o->retry_after_ms);
	msg_add_u32(m, o->http_status);
	msg_add_u64(m, o->duration_ms);
	msg_add_str(m, o->detail);
	msg_add_str(m, o->response);
}

int
job_outcome_decode(struct msg *m, struct job_outcome *o)
{
	const char *s, *resp;
	uint8_t r;

	memset(o, 0, sizeof(*o));
	if (m->type != MSG_DELIVER_OUTCOME || m->fd != -1 ||
	    msg_get_u8(m, &r) == -1 ||
	    msg_get_u64(m, &o->retry_after_ms) == -1 ||
	    msg_get_u32(m, &o->http_status) == -1 ||
	    msg_get_u64(m, &o->duration_ms) == -1 ||
	    msg_get_str(m, &s) == -1 || msg_get_str(m, &resp) == -1 ||
	    msg_end(m) == -1)
		return -1;
	/* The excerpt as the deliver process made it, or the frame is
	 * refused: checked, never parsed. */
	if (r >= JOB_RESULT_MAX || strlen(s) >= sizeof(o->detail) ||
	    strlen(resp) > JOB_RESPONSE_MAX ||
	    (resp[0] != '\0' && !utf8_valid(resp, strlen(resp)))) {
		m->err = 1;
		return -1;
	}
	o->result = r;
	o->response = resp[0] != '\0' ? resp : NULL;
	(void)utf8_clean(o->detail, sizeof(o->detail), s, strlen(s));
	return 0;
}
