/* SPDX-License-Identifier: ISC */
/*
 * check_job.c: the job, outcome and batch codecs (common/job.c,
 * common/batch.c); the batch cases build on the job's sample.
 *
 * Every field round-trips, for each sink type, with an inline body and a
 * 1 MiB body by memfd, 8 secrets and headers; a truncated frame, one with
 * a byte too many, a body descriptor where none belongs (and none where
 * one must be), a length that disagrees with the descriptor, and counts,
 * types or results out of range are refused.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "job.h"
#include "msg.h"
#include "proc.h"

#define BIG_BODY	(1024 * 1024)

static struct header_kv fwd[] = {
	{ "x-github-event", "push" },
	{ "user-agent", "GitHub-Hookshot/1" },
	{ "x-empty", "" },
};
static struct header_kv conf_hdrs[] = {
	{ "Authorization", "Bearer t0ken" },
	{ "X-Static", "1" },
};
static unsigned char secret_bytes[CONF_MAX_SECRETS][32];
static char *kafka_brokers[] = { "k1.test:9092", "[2001:db8::1]:9093" };
static unsigned char *big;

/* A job with every field set; the sink by type. */
static void
sample(struct job *j, enum sink_type type, size_t bodylen)
{
	int i;

	memset(j, 0, sizeof(*j));
	j->id = 0x0102030405060708ULL;
	j->hook_id = "01890a5d-ac96-774b-bcce-b302099a8057";
	j->tenant = "acme";
	j->source = "github";
	j->received_at = 1700000000123ULL;
	j->content_type = "application/json";
	j->headers = fwd;
	j->nheaders = 3;
	j->dedupe_key = "delivery-42";
	j->replay_id = "r-7";
	j->attempt = 3;
	j->claim_ref = "urn:ankusa:claim:v1:acme:01HZY3S7V2W8X9Y0Z1A2B3C4D5";
	j->verification = VERIFICATION_FLAGGED;
	for (i = 0; i < TRACE_CTX_LEN; i++)
		j->trace[i] = (unsigned char)(0xa0 + i);
	j->tracestate = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE";
	for (i = 0; i < 32; i++)
		j->sha256[i] = (unsigned char)(0x30 + i);
	j->sink_index = 5;
	if (big == NULL) {
		if ((big = malloc(BIG_BODY)) == NULL)
			abort();
		for (i = 0; i < BIG_BODY; i++)
			big[i] = (unsigned char)(i * 7 + (i >> 11));
	}
	j->body = big;
	j->bodylen = bodylen;

	j->sink.type = type;
	j->sink.ordered = 1;
	j->sink.order_key.kind = KEY_JSON;
	j->sink.order_key.name = "data.customer";
	j->sink.timeout_ms = 5000;
	j->sink.inline_max_bytes = 65536;
	j->sink.max_message_bytes = 1048576;
	switch (type) {
	case SINK_HTTP:
		j->sink.u.http.url = "https://example.test/hook?a=1";
		j->sink.u.http.method = "patch";
		j->sink.u.http.headers = conf_hdrs;
		j->sink.u.http.nheaders = 2;
		for (i = 0; i < CONF_MAX_SECRETS; i++) {
			memset(secret_bytes[i], 0x11 * i, sizeof(secret_bytes[i]));
			secret_bytes[i][0] = 0;	/* a NUL inside a secret */
			j->sink.u.http.secrets[i].data = secret_bytes[i];
			j->sink.u.http.secrets[i].len = 8 + i * 3;
		}
		j->sink.u.http.nsecrets = CONF_MAX_SECRETS;
		j->sink.u.http.max_response_bytes = 65536;
		j->sink.proxy_mode = SINK_PROXY_URL;
		j->sink.proxy = "http://u:p@proxy.test:3128";
		j->sink.u.http.auth.type = SINK_AUTH_OAUTH2;
		j->sink.u.http.auth.token_url = "https://idp.test/token";
		j->sink.u.http.auth.client_id = "cid";
		j->sink.u.http.auth.client_secret = "csecret";
		j->sink.u.http.auth.audience = "aud";
		j->sink.u.http.auth.client_post = 1;
		j->sink.u.http.tls.client_cert = "-----BEGIN CERTIFICATE-----";
		j->sink.u.http.tls.client_key = "-----BEGIN PRIVATE KEY-----";
		j->sink.u.http.tls.server_name = "sink.test";
		break;
	case SINK_SQS:
		j->sink.u.sqs.queue_url = "http://localhost:4566/000/q.fifo";
		j->sink.u.sqs.region = "eu-west-1";
		j->sink.u.sqs.endpoint = NULL;
		j->sink.u.sqs.message_group_id = "g";
		j->sink.u.sqs.access_key_id = "AKIA";
		j->sink.u.sqs.secret_access_key = "s3cr3t";
		j->sink.u.sqs.session_token = "tok";
		break;
	case SINK_PUBSUB:
		j->sink.u.pubsub.project = "p";
		j->sink.u.pubsub.topic = "t";
		j->sink.u.pubsub.endpoint = "http://localhost:8085";
		j->sink.u.pubsub.ordering_key = NULL;
		j->sink.u.pubsub.auth = "none";
		j->sink.u.pubsub.token = NULL;
		break;
	case SINK_REDIS:
		j->sink.u.redis.url = "rediss://app:pw@redis.test:6380/3";
		j->sink.u.redis.channel = NULL;
		j->sink.u.redis.stream = "hooks";
		j->sink.u.redis.maxlen = 1000000;
		j->sink.u.redis.tls.ca = "-----BEGIN CERTIFICATE-----";
		j->sink.u.redis.tls.client_cert = NULL;
		j->sink.u.redis.tls.client_key = NULL;
		j->sink.u.redis.tls.server_name = "redis.test";
		break;
	case SINK_NATS:
		j->sink.u.nats.urls = "nats://a:4222,tls://[::1]:4223";
		j->sink.u.nats.subject = "hooks.orders";
		j->sink.u.nats.publish_timeout_ms = 1234;
		j->sink.u.nats.username = "u";
		j->sink.u.nats.password = "pw";
		j->sink.u.nats.nkey_seed = "SUSEED";
		j->sink.u.nats.tls_on = 1;
		j->sink.u.nats.tls.ca = "-----BEGIN CERTIFICATE-----";
		j->sink.u.nats.tls.server_name = "nats.test";
		break;
	case SINK_RABBITMQ:
		j->sink.u.rabbitmq.url = "amqps://u:p%40ss@mq.test:5671/v";
		j->sink.u.rabbitmq.exchange = "hooks";
		j->sink.u.rabbitmq.exchange_type = "fanout";
		j->sink.u.rabbitmq.routing_key = NULL;
		j->sink.u.rabbitmq.max_inflight = 300;
		break;
	case SINK_KAFKA:
		j->sink.u.kafka.brokers = kafka_brokers;
		j->sink.u.kafka.nbrokers = 2;
		j->sink.u.kafka.topic = "ankusa.hooks";
		j->sink.u.kafka.key = NULL;
		j->sink.u.kafka.ssl = 1;
		j->sink.u.kafka.sasl_mechanism = "scram_sha_256";
		j->sink.u.kafka.sasl_username = "u";
		j->sink.u.kafka.sasl_password = "pw";
		break;
	default:
		break;
	}
}

#define ck_assert_opt_eq(a, b) do {					\
	if ((b) == NULL)						\
		ck_assert_ptr_null(a);					\
	else								\
		ck_assert_str_eq((a), (b));				\
} while (0)

static void
compare(const struct job *a, const struct job *b)
{
	int i;

	ck_assert(a->id == b->id);
	ck_assert_str_eq(a->hook_id, b->hook_id);
	ck_assert_str_eq(a->tenant, b->tenant);
	ck_assert_str_eq(a->source, b->source);
	ck_assert(a->received_at == b->received_at);
	ck_assert_str_eq(a->content_type, b->content_type);
	ck_assert_int_eq(a->nheaders, b->nheaders);
	for (i = 0; i < a->nheaders; i++) {
		ck_assert_str_eq(a->headers[i].name, b->headers[i].name);
		ck_assert_str_eq(a->headers[i].value, b->headers[i].value);
	}
	ck_assert_str_eq(a->dedupe_key, b->dedupe_key);
	ck_assert_str_eq(a->replay_id, b->replay_id);
	ck_assert_uint_eq(a->attempt, b->attempt);
	ck_assert_str_eq(a->claim_ref, b->claim_ref);
	ck_assert_uint_eq(a->verification, b->verification);
	ck_assert_int_eq(memcmp(a->trace, b->trace, TRACE_CTX_LEN), 0);
	ck_assert_str_eq(a->tracestate, b->tracestate);
	ck_assert_int_eq(memcmp(a->sha256, b->sha256, 32), 0);
	ck_assert_uint_eq(a->sink_index, b->sink_index);
	ck_assert_uint_eq(a->bodylen, b->bodylen);
	ck_assert_ptr_nonnull(b->body);
	ck_assert_int_eq(memcmp(a->body, b->body, a->bodylen), 0);
	ck_assert_uint_eq(b->body[b->bodylen], '\0');	/* the sinks' C string */

	ck_assert_int_eq(a->sink.type, b->sink.type);
	ck_assert_int_eq(a->sink.ordered, b->sink.ordered);
	ck_assert_int_eq(a->sink.order_key.kind, b->sink.order_key.kind);
	ck_assert_opt_eq(b->sink.order_key.name, a->sink.order_key.name);
	ck_assert(a->sink.timeout_ms == b->sink.timeout_ms);
	ck_assert(a->sink.inline_max_bytes == b->sink.inline_max_bytes);
	ck_assert(a->sink.max_message_bytes == b->sink.max_message_bytes);
	switch (a->sink.type) {
	case SINK_HTTP:
		ck_assert_str_eq(a->sink.u.http.url, b->sink.u.http.url);
		ck_assert_str_eq(a->sink.u.http.method, b->sink.u.http.method);
		ck_assert_int_eq(a->sink.u.http.nheaders,
		    b->sink.u.http.nheaders);
		for (i = 0; i < a->sink.u.http.nheaders; i++) {
			ck_assert_str_eq(a->sink.u.http.headers[i].name,
			    b->sink.u.http.headers[i].name);
			ck_assert_str_eq(a->sink.u.http.headers[i].value,
			    b->sink.u.http.headers[i].value);
		}
		ck_assert_int_eq(a->sink.u.http.nsecrets,
		    b->sink.u.http.nsecrets);
		for (i = 0; i < a->sink.u.http.nsecrets; i++) {
			ck_assert_uint_eq(a->sink.u.http.secrets[i].len,
			    b->sink.u.http.secrets[i].len);
			ck_assert_int_eq(memcmp(a->sink.u.http.secrets[i].data,
			    b->sink.u.http.secrets[i].data,
			    a->sink.u.http.secrets[i].len), 0);
		}
		ck_assert(a->sink.u.http.max_response_bytes ==
		    b->sink.u.http.max_response_bytes);
		ck_assert_int_eq(a->sink.proxy_mode, b->sink.proxy_mode);
		ck_assert_opt_eq(b->sink.proxy, a->sink.proxy);
		ck_assert_int_eq(a->sink.u.http.auth.type,
		    b->sink.u.http.auth.type);
		ck_assert_opt_eq(b->sink.u.http.auth.token,
		    a->sink.u.http.auth.token);
		ck_assert_opt_eq(b->sink.u.http.auth.token_url,
		    a->sink.u.http.auth.token_url);
		ck_assert_opt_eq(b->sink.u.http.auth.client_id,
		    a->sink.u.http.auth.client_id);
		ck_assert_opt_eq(b->sink.u.http.auth.client_secret,
		    a->sink.u.http.auth.client_secret);
		ck_assert_opt_eq(b->sink.u.http.auth.scope,
		    a->sink.u.http.auth.scope);
		ck_assert_opt_eq(b->sink.u.http.auth.audience,
		    a->sink.u.http.auth.audience);
		ck_assert_int_eq(a->sink.u.http.auth.client_post,
		    b->sink.u.http.auth.client_post);
		ck_assert_opt_eq(b->sink.u.http.tls.client_cert,
		    a->sink.u.http.tls.client_cert);
		ck_assert_opt_eq(b->sink.u.http.tls.client_key,
		    a->sink.u.http.tls.client_key);
		ck_assert_opt_eq(b->sink.u.http.tls.ca, a->sink.u.http.tls.ca);
		ck_assert_opt_eq(b->sink.u.http.tls.server_name,
		    a->sink.u.http.tls.server_name);
		break;
	case SINK_SQS:
		ck_assert_opt_eq(b->sink.u.sqs.queue_url, a->sink.u.sqs.queue_url);
		ck_assert_opt_eq(b->sink.u.sqs.region, a->sink.u.sqs.region);
		ck_assert_opt_eq(b->sink.u.sqs.endpoint, a->sink.u.sqs.endpoint);
		ck_assert_opt_eq(b->sink.u.sqs.message_group_id,
		    a->sink.u.sqs.message_group_id);
		ck_assert_opt_eq(b->sink.u.sqs.access_key_id,
		    a->sink.u.sqs.access_key_id);
		ck_assert_opt_eq(b->sink.u.sqs.secret_access_key,
		    a->sink.u.sqs.secret_access_key);
		ck_assert_opt_eq(b->sink.u.sqs.session_token,
		    a->sink.u.sqs.session_token);
		break;
	case SINK_PUBSUB:
		ck_assert_opt_eq(b->sink.u.pubsub.project,
		    a->sink.u.pubsub.project);
		ck_assert_opt_eq(b->sink.u.pubsub.topic, a->sink.u.pubsub.topic);
		ck_assert_opt_eq(b->sink.u.pubsub.endpoint,
		    a->sink.u.pubsub.endpoint);
		ck_assert_opt_eq(b->sink.u.pubsub.ordering_key,
		    a->sink.u.pubsub.ordering_key);
		ck_assert_opt_eq(b->sink.u.pubsub.auth, a->sink.u.pubsub.auth);
		ck_assert_opt_eq(b->sink.u.pubsub.token,
		    a->sink.u.pubsub.token);
		break;
	case SINK_REDIS:
		ck_assert_opt_eq(b->sink.u.redis.url, a->sink.u.redis.url);
		ck_assert_opt_eq(b->sink.u.redis.channel,
		    a->sink.u.redis.channel);
		ck_assert_opt_eq(b->sink.u.redis.stream, a->sink.u.redis.stream);
		ck_assert(a->sink.u.redis.maxlen == b->sink.u.redis.maxlen);
		ck_assert_opt_eq(b->sink.u.redis.tls.ca, a->sink.u.redis.tls.ca);
		ck_assert_opt_eq(b->sink.u.redis.tls.client_cert,
		    a->sink.u.redis.tls.client_cert);
		ck_assert_opt_eq(b->sink.u.redis.tls.client_key,
		    a->sink.u.redis.tls.client_key);
		ck_assert_opt_eq(b->sink.u.redis.tls.server_name,
		    a->sink.u.redis.tls.server_name);
		break;
	case SINK_NATS:
		ck_assert_opt_eq(b->sink.u.nats.urls, a->sink.u.nats.urls);
		ck_assert_opt_eq(b->sink.u.nats.subject, a->sink.u.nats.subject);
		ck_assert_uint_eq(b->sink.u.nats.publish_timeout_ms,
		    a->sink.u.nats.publish_timeout_ms);
		ck_assert_opt_eq(b->sink.u.nats.username,
		    a->sink.u.nats.username);
		ck_assert_opt_eq(b->sink.u.nats.password,
		    a->sink.u.nats.password);
		ck_assert_opt_eq(b->sink.u.nats.token, a->sink.u.nats.token);
		ck_assert_opt_eq(b->sink.u.nats.nkey_seed,
		    a->sink.u.nats.nkey_seed);
		ck_assert_opt_eq(b->sink.u.nats.jwt, a->sink.u.nats.jwt);
		ck_assert_int_eq(b->sink.u.nats.tls_on, a->sink.u.nats.tls_on);
		ck_assert_opt_eq(b->sink.u.nats.tls.client_cert,
		    a->sink.u.nats.tls.client_cert);
		ck_assert_opt_eq(b->sink.u.nats.tls.client_key,
		    a->sink.u.nats.tls.client_key);
		ck_assert_opt_eq(b->sink.u.nats.tls.ca, a->sink.u.nats.tls.ca);
		ck_assert_opt_eq(b->sink.u.nats.tls.server_name,
		    a->sink.u.nats.tls.server_name);
		break;
	case SINK_RABBITMQ:
		ck_assert_opt_eq(b->sink.u.rabbitmq.url, a->sink.u.rabbitmq.url);
		ck_assert_opt_eq(b->sink.u.rabbitmq.exchange,
		    a->sink.u.rabbitmq.exchange);
		ck_assert_opt_eq(b->sink.u.rabbitmq.exchange_type,
		    a->sink.u.rabbitmq.exchange_type);
		ck_assert_opt_eq(b->sink.u.rabbitmq.routing_key,
		    a->sink.u.rabbitmq.routing_key);
		ck_assert_uint_eq(b->sink.u.rabbitmq.max_inflight,
		    a->sink.u.rabbitmq.max_inflight);
		break;
	case SINK_KAFKA:
		ck_assert_int_eq(b->sink.u.kafka.nbrokers,
		    a->sink.u.kafka.nbrokers);
		for (i = 0; i < a->sink.u.kafka.nbrokers; i++)
			ck_assert_str_eq(b->sink.u.kafka.brokers[i],
			    a->sink.u.kafka.brokers[i]);
		ck_assert_opt_eq(b->sink.u.kafka.topic, a->sink.u.kafka.topic);
		ck_assert_opt_eq(b->sink.u.kafka.key, a->sink.u.kafka.key);
		ck_assert_int_eq(b->sink.u.kafka.ssl, a->sink.u.kafka.ssl);
		ck_assert_opt_eq(b->sink.u.kafka.sasl_mechanism,
		    a->sink.u.kafka.sasl_mechanism);
		ck_assert_opt_eq(b->sink.u.kafka.sasl_username,
		    a->sink.u.kafka.sasl_username);
		ck_assert_opt_eq(b->sink.u.kafka.sasl_password,
		    a->sink.u.kafka.sasl_password);
		break;
	default:
		break;
	}
}

/* Encode and decode through a copy of the frame, as the channel would
 * deliver it (the payload borrowed, the descriptor passed). */
static int
roundtrip(const struct msg *m, struct job *out)
{
	struct msg r;
	int rc;

	msg_init(&r, m->type, m->id);
	r.flags = m->flags;
	r.buf = m->buf;
	r.len = m->len;
	r.fd = m->fd != -1 ? dup(m->fd) : -1;
	rc = job_decode(&r, out);
	if (r.fd != -1)
		close(r.fd);
	return rc;
}

static const struct {
	enum sink_type	type;
	size_t		bodylen;
} rt_cases[] = {
	{ SINK_HTTP, 0 },
	{ SINK_HTTP, 17 },
	{ SINK_HTTP, MSG_INLINE_MAX },
	{ SINK_HTTP, MSG_INLINE_MAX + 1 },
	{ SINK_HTTP, BIG_BODY },
	{ SINK_SQS, 100 },
	{ SINK_SQS, BIG_BODY },
	{ SINK_PUBSUB, 100 },
	{ SINK_REDIS, 100 },
	{ SINK_NATS, 100 },
	{ SINK_RABBITMQ, 100 },
	{ SINK_RABBITMQ, BIG_BODY },
	{ SINK_KAFKA, 100 },
	{ SINK_KAFKA, BIG_BODY },
	{ SINK_LOG, 100 },
	{ SINK_LOG, BIG_BODY },
};

/* A log prints an outcome's detail up to its first ": ", never the
 * sink's words after it. */
START_TEST(test_detail_loggable)
{
	char buf[JOB_DETAIL_MAX], small[8];

	ck_assert_str_eq(job_detail_loggable("sqs http 400 "
	    "InvalidParameterValue: the body echoed SECRET", buf, sizeof(buf)),
	    "sqs http 400 InvalidParameterValue");
	ck_assert_str_eq(job_detail_loggable("pubsub: a message id is not a "
	    "string", buf, sizeof(buf)), "pubsub");
	ck_assert_str_eq(job_detail_loggable("http 503", buf, sizeof(buf)),
	    "http 503");
	ck_assert_str_eq(job_detail_loggable("", buf, sizeof(buf)), "");
	ck_assert_str_eq(job_detail_loggable("a:b no space", buf,
	    sizeof(buf)), "a:b no space");
	ck_assert_str_eq(job_detail_loggable("longer than eight: x", small,
	    sizeof(small)), "longer ");
}
END_TEST

START_TEST(test_roundtrip)
{
	struct job j, d;
	struct msg m;

	sample(&j, rt_cases[_i].type, rt_cases[_i].bodylen);
	ck_assert_int_eq(job_encode(&m, &j), 0);
	ck_assert_uint_eq(m.type, MSG_DELIVER_JOB);
	ck_assert(m.id == j.id);
	if (j.bodylen > MSG_INLINE_MAX) {
		ck_assert_int_ne(m.fd, -1);
		ck_assert(m.flags & MSG_F_FD);
	} else
		ck_assert_int_eq(m.fd, -1);
	ck_assert_int_eq(roundtrip(&m, &d), 0);
	compare(&j, &d);
	job_free(&d);
	msg_free(&m);
}
END_TEST

/* Empty optional strings and no headers, no secrets. */
START_TEST(test_minimal)
{
	struct job j, d;
	struct msg m;

	memset(&j, 0, sizeof(j));
	j.id = 1;
	j.hook_id = "h";
	j.tenant = "default";
	j.source = "demo";
	j.content_type = "";
	j.dedupe_key = "";
	j.replay_id = "";
	j.claim_ref = "";
	j.attempt = 1;
	j.sink.type = SINK_HTTP;
	j.sink.u.http.url = "http://127.0.0.1:1/";
	ck_assert_int_eq(job_encode(&m, &j), 0);
	ck_assert_int_eq(roundtrip(&m, &d), 0);
	ck_assert_str_eq(d.content_type, "");
	ck_assert_str_eq(d.dedupe_key, "");
	ck_assert_int_eq(d.nheaders, 0);
	ck_assert_uint_eq(d.bodylen, 0);
	ck_assert_ptr_null(d.sink.u.http.method);
	ck_assert_ptr_null(d.sink.order_key.name);
	ck_assert_int_eq(d.sink.u.http.nsecrets, 0);
	job_free(&d);
	msg_free(&m);
}
END_TEST

/* Every strict prefix of a frame is refused (the memfd case too). */
START_TEST(test_truncated)
{
	struct job j, d;
	struct msg m, r;
	size_t n;

	sample(&j, _i == 0 ? SINK_HTTP : SINK_SQS, _i == 0 ? 100 : BIG_BODY);
	ck_assert_int_eq(job_encode(&m, &j), 0);
	for (n = 0; n < m.len; n++) {
		msg_init(&r, m.type, m.id);
		r.flags = m.flags;
		r.buf = m.buf;
		r.len = n;
		r.fd = m.fd != -1 ? dup(m.fd) : -1;
		ck_assert_int_eq(job_decode(&r, &d), -1);
		ck_assert_ptr_null(d.hook_id);
		if (r.fd != -1)
			close(r.fd);
	}
	msg_free(&m);
}
END_TEST

START_TEST(test_leftover)
{
	struct job j, d;
	struct msg m;

	sample(&j, SINK_LOG, 10);
	ck_assert_int_eq(job_encode(&m, &j), 0);
	msg_add_u8(&m, 0);
	ck_assert_int_eq(roundtrip(&m, &d), -1);
	msg_free(&m);
}
END_TEST

/* The body's descriptor must be there exactly when the length says so,
 * and hold exactly that many bytes. */
START_TEST(test_body_fd)
{
	struct job j, d;
	struct msg m;
	int fd;

	/* inline body, but a descriptor came along */
	sample(&j, SINK_LOG, 10);
	ck_assert_int_eq(job_encode(&m, &j), 0);
	msg_set_fd(&m, proc_memfd("x", "0123456789", 10));
	ck_assert_int_eq(roundtrip(&m, &d), -1);
	msg_free(&m);

	/* large body, descriptor missing */
	sample(&j, SINK_LOG, BIG_BODY);
	ck_assert_int_eq(job_encode(&m, &j), 0);
	msg_set_fd(&m, -1);
	ck_assert_int_eq(roundtrip(&m, &d), -1);
	msg_free(&m);

	/* large body, descriptor one byte short */
	ck_assert_int_eq(job_encode(&m, &j), 0);
	fd = proc_memfd("short", big, BIG_BODY - 1);
	ck_assert_int_ne(fd, -1);
	msg_set_fd(&m, fd);
	ck_assert_int_eq(roundtrip(&m, &d), -1);
	msg_free(&m);
}
END_TEST

/* The hook's verification, trace context and tracestate, by hand. */
static void
add_trace(struct msg *m, uint8_t verification)
{
	static const unsigned char trace[TRACE_CTX_LEN] = { 1, 2, 3 };

	msg_add_u8(m, verification);
	msg_add_data(m, trace, sizeof(trace));
	msg_add_str(m, "");
}

/* Hand-made frames with one field out of range. */
static uint8_t head_verification;	/* VERIFICATION_OK but in one case */
static size_t head_shalen = 32;		/* a SHA-256's but in one case */

static void
head(struct msg *m, uint8_t type, uint32_t nheaders)
{
	static const unsigned char sha[32];
	uint32_t i;

	msg_init(m, MSG_DELIVER_JOB, 9);
	msg_add_str(m, "h");
	msg_add_str(m, "t");
	msg_add_str(m, "s");
	msg_add_u64(m, 1);
	msg_add_str(m, "");
	msg_add_u32(m, nheaders);
	for (i = 0; i < nheaders && i < 4; i++) {
		msg_add_str(m, "a");
		msg_add_str(m, "b");
	}
	msg_add_str(m, "");
	msg_add_str(m, "");
	msg_add_u32(m, 1);
	msg_add_str(m, "");
	add_trace(m, head_verification);
	msg_add_data(m, sha, head_shalen);
	msg_add_u32(m, 0);
	msg_add_u8(m, type);
	msg_add_u8(m, 0);
	msg_add_u8(m, 0);
	msg_add_str(m, "");
	msg_add_u64(m, 1);
	msg_add_u64(m, 1);
	msg_add_u64(m, 1);
	msg_add_u8(m, SINK_PROXY_INHERIT);
	msg_add_str(m, "");
}

START_TEST(test_garbage)
{
	struct job d;
	struct msg m;
	unsigned char junk[64];
	size_t i;

	/* the hand-made frame is right as it is */
	head(&m, SINK_LOG, 2);
	msg_add_u64(&m, 1);
	msg_add_data(&m, "x", 1);
	ck_assert_int_eq(roundtrip(&m, &d), 0);
	job_free(&d);
	msg_free(&m);

	/* a verification past the enum */
	head_verification = VERIFICATION_MAX;
	head(&m, SINK_LOG, 2);
	msg_add_u64(&m, 1);
	msg_add_data(&m, "x", 1);
	ck_assert_int_eq(roundtrip(&m, &d), -1);
	msg_free(&m);
	head_verification = VERIFICATION_OK;

	/* a digest that is not a SHA-256's length */
	head_shalen = 31;
	head(&m, SINK_LOG, 2);
	msg_add_u64(&m, 1);
	msg_add_data(&m, "x", 1);
	ck_assert_int_eq(roundtrip(&m, &d), -1);
	msg_free(&m);
	head_shalen = 32;

	/* unknown sink types */
	head(&m, 0, 0);
	msg_add_u64(&m, 0);
	msg_add_data(&m, "", 0);
	ck_assert_int_eq(roundtrip(&m, &d), -1);
	msg_free(&m);
	head(&m, SINK_LOG + 1, 0);
	msg_add_u64(&m, 0);
	msg_add_data(&m, "", 0);
	ck_assert_int_eq(roundtrip(&m, &d), -1);
	msg_free(&m);

	/* a header count past the bound */
	head(&m, SINK_LOG, JOB_MAX_HEADERS + 1);
	ck_assert_int_eq(roundtrip(&m, &d), -1);
	msg_free(&m);

	/* inline length disagreeing with the data */
	head(&m, SINK_LOG, 0);
	msg_add_u64(&m, 2);
	msg_add_data(&m, "x", 1);
	ck_assert_int_eq(roundtrip(&m, &d), -1);
	msg_free(&m);

	/* more secrets than a sink may have */
	head(&m, SINK_HTTP, 0);
	msg_add_str(&m, "http://x/");
	msg_add_str(&m, "post");
	msg_add_u32(&m, 0);
	msg_add_u32(&m, CONF_MAX_SECRETS + 1);
	for (i = 0; i < CONF_MAX_SECRETS + 1; i++)
		msg_add_data(&m, "k", 1);
	msg_add_u64(&m, 65536);
	msg_add_u64(&m, 0);
	msg_add_data(&m, "", 0);
	ck_assert_int_eq(roundtrip(&m, &d), -1);
	msg_free(&m);

	/* noise, and the wrong message type */
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)(i * 37 + 11);
	msg_init(&m, MSG_DELIVER_JOB, 9);
	msg_add_data(&m, junk, sizeof(junk));
	ck_assert_int_eq(roundtrip(&m, &d), -1);
	msg_free(&m);
	head(&m, SINK_LOG, 0);
	msg_add_u64(&m, 0);
	msg_add_data(&m, "", 0);
	m.type = MSG_DELIVER_OUTCOME;
	ck_assert_int_eq(roundtrip(&m, &d), -1);
	msg_free(&m);
}
END_TEST

START_TEST(test_outcome)
{
	struct job_outcome o, d;
	struct msg m, r;
	size_t n;

	memset(&o, 0, sizeof(o));
	job_outcome_set(&o, JOB_ERROR, "http %d", 503);
	o.retry_after_ms = 120000;
	o.http_status = 503;
	o.duration_ms = 42;
	job_outcome_encode(&m, 77, &o);
	ck_assert_uint_eq(m.type, MSG_DELIVER_OUTCOME);
	ck_assert(m.id == 77);
	ck_assert_int_eq(job_outcome_decode(&m, &d), 0);
	ck_assert_int_eq(d.result, JOB_ERROR);
	ck_assert(d.retry_after_ms == 120000);
	ck_assert_uint_eq(d.http_status, 503);
	ck_assert(d.duration_ms == 42);
	ck_assert_str_eq(d.detail, "http 503");
	ck_assert_str_eq(job_result_name(d.result), "error");

	/* every prefix refused */
	for (n = 0; n < m.len; n++) {
		msg_init(&r, m.type, m.id);
		r.buf = m.buf;
		r.len = n;
		ck_assert_int_eq(job_outcome_decode(&r, &d), -1);
	}
	msg_free(&m);

	/* an unknown result; a byte too many */
	msg_init(&m, MSG_DELIVER_OUTCOME, 1);
	msg_add_u8(&m, JOB_RESULT_MAX);
	msg_add_u64(&m, 0);
	msg_add_u32(&m, 0);
	msg_add_u64(&m, 0);
	msg_add_str(&m, "");
	msg_add_str(&m, "");
	ck_assert_int_eq(job_outcome_decode(&m, &d), -1);
	msg_free(&m);
	job_outcome_encode(&m, 1, &o);
	msg_add_u8(&m, 0);
	ck_assert_int_eq(job_outcome_decode(&m, &d), -1);
	msg_free(&m);
}
END_TEST

/* The answer's excerpt: carried as the sink made it, none as NULL; one
 * that is not UTF-8, or longer than JOB_RESPONSE_MAX, refuses the
 * frame. */
START_TEST(test_outcome_response)
{
	static char longest[JOB_RESPONSE_MAX + 2];
	struct job_outcome o, d;
	struct msg m;

	memset(&o, 0, sizeof(o));
	job_outcome_set(&o, JOB_ERROR, "http %d", 500);
	o.response = "db down: <b>\xc3\xa9</b>";
	job_outcome_encode(&m, 7, &o);
	ck_assert_int_eq(job_outcome_decode(&m, &d), 0);
	ck_assert_str_eq(d.response, "db down: <b>\xc3\xa9</b>");
	msg_free(&m);
	o.response = NULL;
	job_outcome_encode(&m, 7, &o);
	ck_assert_int_eq(job_outcome_decode(&m, &d), 0);
	ck_assert_ptr_null(d.response);
	msg_free(&m);
	o.response = "bad \xff byte";
	job_outcome_encode(&m, 7, &o);
	ck_assert_int_eq(job_outcome_decode(&m, &d), -1);
	msg_free(&m);
	memset(longest, 'a', JOB_RESPONSE_MAX);
	o.response = longest;
	job_outcome_encode(&m, 7, &o);
	ck_assert_int_eq(job_outcome_decode(&m, &d), 0);
	msg_free(&m);
	longest[JOB_RESPONSE_MAX] = 'a';
	job_outcome_encode(&m, 7, &o);
	ck_assert_int_eq(job_outcome_decode(&m, &d), -1);
	msg_free(&m);
}
END_TEST

/* A detail longer than the field is cut, not overflowed. */
START_TEST(test_outcome_long)
{
	struct job_outcome o;
	char big_detail[1000];

	memset(big_detail, 'a', sizeof(big_detail) - 1);
	big_detail[sizeof(big_detail) - 1] = '\0';
	job_outcome_set(&o, JOB_PERMANENT, "%s", big_detail);
	ck_assert_uint_eq(strlen(o.detail), JOB_DETAIL_MAX - 1);
	ck_assert_str_eq(job_result_name(JOB_PERMANENT), "permanent");
	ck_assert_str_eq(job_result_name(JOB_OK), "ok");
}
END_TEST

/* --- batches --- */

#define NBATCH	BATCH_MAX_ENTRIES

static struct batch_entry bentries[NBATCH + 1];

/* A batch of n entries of sink type; entry i's body is (i * step) % 9973
 * bytes of big, starting at i (all empty with step 0). */
static void
bsample(struct batch *b, enum sink_type type, uint32_t n, size_t step)
{
	struct job j;
	struct batch_entry *e;
	uint32_t i;
	static char hooks[NBATCH + 1][40];

	sample(&j, type, 0);
	memset(b, 0, sizeof(*b));
	b->id = 0x1122334455667788ULL;
	b->sink = j.sink;
	b->entries = bentries;
	b->nentries = n;
	for (i = 0; i < n; i++) {
		e = &bentries[i];
		batch_entry_from_job(e, &j);
		e->id = 1000000 + i * 3;
		snprintf(hooks[i], sizeof(hooks[i]), "hook-%u", i);
		e->hook_id = hooks[i];
		e->attempt = i + 1;
		e->order_key = i % 2 ? "k1" : "";
		e->claim_ref = i % 3 ? "" : "urn:ankusa:claim:v1:acme:X";
		e->verification = i % VERIFICATION_MAX;
		e->trace[i % TRACE_CTX_LEN] ^= (unsigned char)i;
		e->tracestate = i % 2 ? "" : "k=v";
		e->nheaders = i % 4;
		e->body = big + i;
		e->bodylen = step == 0 ? 0 : (i * step) % 9973;
	}
}

static int
broundtrip(const struct msg *m, struct batch *out)
{
	struct msg r;
	int rc;

	msg_init(&r, m->type, m->id);
	r.flags = m->flags;
	r.buf = m->buf;
	r.len = m->len;
	r.fd = m->fd != -1 ? dup(m->fd) : -1;
	rc = batch_decode(&r, out);
	if (r.fd != -1)
		close(r.fd);
	return rc;
}

static void
bcompare(const struct batch *a, const struct batch *b)
{
	struct job ja, jb;
	uint32_t i;
	int k;

	ck_assert(a->id == b->id);
	ck_assert_uint_eq(a->nentries, b->nentries);
	memset(&ja, 0, sizeof(ja));
	memset(&jb, 0, sizeof(jb));
	ja.sink = a->sink;
	jb.sink = b->sink;
	ck_assert_int_eq(a->sink.type, b->sink.type);
	ck_assert(a->sink.max_message_bytes == b->sink.max_message_bytes);
	for (i = 0; i < a->nentries; i++) {
		const struct batch_entry *x = &a->entries[i];
		const struct batch_entry *y = &b->entries[i];

		ck_assert(x->id == y->id);
		ck_assert_str_eq(x->hook_id, y->hook_id);
		ck_assert_str_eq(x->tenant, y->tenant);
		ck_assert_str_eq(x->source, y->source);
		ck_assert(x->received_at == y->received_at);
		ck_assert_str_eq(x->content_type, y->content_type);
		ck_assert_int_eq(x->nheaders, y->nheaders);
		for (k = 0; k < x->nheaders; k++) {
			ck_assert_str_eq(x->headers[k].name,
			    y->headers[k].name);
			ck_assert_str_eq(x->headers[k].value,
			    y->headers[k].value);
		}
		ck_assert_str_eq(x->dedupe_key, y->dedupe_key);
		ck_assert_str_eq(x->replay_id, y->replay_id);
		ck_assert_uint_eq(x->attempt, y->attempt);
		ck_assert_str_eq(x->claim_ref, y->claim_ref);
		ck_assert_uint_eq(x->verification, y->verification);
		ck_assert_int_eq(memcmp(x->trace, y->trace, TRACE_CTX_LEN), 0);
		ck_assert_str_eq(x->tracestate, y->tracestate);
		ck_assert_str_eq(x->order_key, y->order_key);
		ck_assert_uint_eq(x->bodylen, y->bodylen);
		ck_assert_ptr_nonnull(y->body);
		if (x->bodylen > 0)
			ck_assert_int_eq(memcmp(x->body, y->body,
			    x->bodylen), 0);
	}
}

static const struct {
	enum sink_type	type;
	uint32_t	n;
	size_t		step;
	int		fd;
} brt_cases[] = {
	{ SINK_SQS, 1, 0, 0 },			/* one empty body */
	{ SINK_SQS, 10, 7, 0 },			/* 315 bytes, inline */
	{ SINK_PUBSUB, NBATCH, 0, 0 },		/* 1000 empty bodies */
	{ SINK_PUBSUB, NBATCH, 13, 1 },		/* about 5 MB, memfd */
	{ SINK_SQS, NBATCH, 1, 1 },
	{ SINK_RABBITMQ, 256, 3, 1 },
};

START_TEST(test_batch_roundtrip)
{
	struct batch b, d;
	struct msg m;

	bsample(&b, brt_cases[_i].type, brt_cases[_i].n, brt_cases[_i].step);
	ck_assert_int_eq(batch_encode(&m, &b), 0);
	ck_assert_uint_eq(m.type, MSG_BATCH_JOB);
	ck_assert(m.id == b.id);
	if (brt_cases[_i].fd) {
		ck_assert_int_ne(m.fd, -1);
		ck_assert(m.flags & MSG_F_FD);
	} else
		ck_assert_int_eq(m.fd, -1);
	ck_assert_int_eq(broundtrip(&m, &d), 0);
	bcompare(&b, &d);
	batch_free(&d);
	ck_assert_ptr_null(d.entries);
	msg_free(&m);
}
END_TEST

/* Every cut of the frame is refused, with a memfd and without. */
START_TEST(test_batch_truncated)
{
	struct batch b, d;
	struct msg m, r;
	size_t n;

	bsample(&b, SINK_SQS, 5, _i == 0 ? 9 : 2000);
	ck_assert_int_eq(batch_encode(&m, &b), 0);
	ck_assert_int_eq(m.fd != -1, _i == 1);
	for (n = 0; n < m.len; n++) {
		msg_init(&r, m.type, m.id);
		r.flags = m.flags;
		r.buf = m.buf;
		r.len = n;
		r.fd = m.fd != -1 ? dup(m.fd) : -1;
		ck_assert_int_eq(batch_decode(&r, &d), -1);
		ck_assert_ptr_null(d.entries);
		if (r.fd != -1)
			close(r.fd);
	}
	/* A byte too many. */
	msg_add_u8(&m, 0);
	ck_assert_int_eq(broundtrip(&m, &d), -1);
	msg_free(&m);
}
END_TEST

START_TEST(test_batch_refused)
{
	struct batch b, d;
	struct msg m;
	int fd;

	/* No entries, too many. */
	bsample(&b, SINK_SQS, 0, 1);
	ck_assert_int_eq(batch_encode(&m, &b), -1);
	ck_assert_int_eq(errno, EINVAL);
	bsample(&b, SINK_SQS, NBATCH + 1, 1);
	ck_assert_int_eq(batch_encode(&m, &b), -1);
	ck_assert_int_eq(errno, EINVAL);

	/* A descriptor with inline bodies. */
	bsample(&b, SINK_SQS, 3, 5);
	ck_assert_int_eq(batch_encode(&m, &b), 0);
	ck_assert_int_eq(m.fd, -1);
	fd = proc_memfd("x", "abc", 3);
	ck_assert_int_ne(fd, -1);
	msg_set_fd(&m, fd);
	ck_assert_int_eq(broundtrip(&m, &d), -1);
	msg_free(&m);

	/* No descriptor where the bodies need one. */
	bsample(&b, SINK_SQS, 3, 3000);
	ck_assert_int_eq(batch_encode(&m, &b), 0);
	ck_assert_int_ne(m.fd, -1);
	close(m.fd);
	m.fd = -1;
	ck_assert_int_eq(broundtrip(&m, &d), -1);
	msg_free(&m);

	/* Two entries with one id. */
	bsample(&b, SINK_SQS, 3, 5);
	bentries[2].id = bentries[0].id;
	ck_assert_int_eq(batch_encode(&m, &b), 0);
	ck_assert_int_eq(broundtrip(&m, &d), -1);
	msg_free(&m);

	/* A job frame is not a batch. */
	bsample(&b, SINK_SQS, 3, 5);
	ck_assert_int_eq(batch_encode(&m, &b), 0);
	m.type = MSG_DELIVER_JOB;
	ck_assert_int_eq(broundtrip(&m, &d), -1);
	msg_free(&m);
}
END_TEST

/* A batch may carry the claim store, for the attempt's own check-in. */
START_TEST(test_batch_claim_store)
{
	struct claim_store cs;
	struct batch b, d;
	struct msg m;

	memset(&cs, 0, sizeof(cs));
	cs.type = "s3";
	cs.bucket = "claims";
	cs.region = "eu-west-1";
	cs.endpoint = "http://127.0.0.1:9";
	cs.access_key_id = "AKIA";
	cs.secret_access_key = "secret";
	cs.pack_max_bytes = 16777216;
	bsample(&b, SINK_SQS, 3, 5);
	b.claim = &cs;
	ck_assert_int_eq(batch_encode(&m, &b), 0);
	ck_assert_int_eq(broundtrip(&m, &d), 0);
	ck_assert_ptr_nonnull(d.claim);
	ck_assert_str_eq(d.claim->type, "s3");
	ck_assert_str_eq(d.claim->bucket, "claims");
	ck_assert_str_eq(d.claim->secret_access_key, "secret");
	ck_assert_ptr_null(d.claim->root);
	ck_assert_uint_eq(d.claim->pack_max_bytes, 16777216);
	batch_free(&d);
	msg_free(&m);
	/* A store of an unknown type is refused. */
	cs.type = "ftp";
	bsample(&b, SINK_SQS, 3, 5);
	b.claim = &cs;
	ck_assert_int_eq(batch_encode(&m, &b), 0);
	ck_assert_int_eq(broundtrip(&m, &d), -1);
	msg_free(&m);
}
END_TEST

/* An entry's offset must follow the one before: patch the second entry's
 * offset in a hand-built frame. */
START_TEST(test_batch_offsets)
{
	struct batch d;
	struct msg m;
	struct job j;
	int i;

	sample(&j, SINK_LOG, 0);
	msg_init(&m, MSG_BATCH_JOB, 9);
	msg_add_u8(&m, SINK_LOG);
	msg_add_u8(&m, 0);
	msg_add_u8(&m, KEY_NONE);
	msg_add_str(&m, "");
	msg_add_u64(&m, 5000);
	msg_add_u64(&m, 65536);
	msg_add_u64(&m, 1048576);
	msg_add_u8(&m, SINK_PROXY_INHERIT);
	msg_add_str(&m, "");
	msg_add_u32(&m, 2);
	for (i = 0; i < 2; i++) {
		msg_add_u64(&m, i);
		msg_add_str(&m, "h");
		msg_add_str(&m, "t");
		msg_add_str(&m, "s");
		msg_add_u64(&m, 1);
		msg_add_str(&m, "");
		msg_add_u32(&m, 0);
		msg_add_str(&m, "");
		msg_add_str(&m, "");
		msg_add_u32(&m, 1);
		msg_add_str(&m, "");
		add_trace(&m, 0);
		msg_add_str(&m, "");
		msg_add_u64(&m, _i == 0 ? i * 2 : (i == 0 ? 0 : 1));
		msg_add_u64(&m, 2);
	}
	msg_add_u8(&m, 0);	/* no claim store */
	msg_add_u64(&m, 4);
	msg_add_data(&m, "abcd", 4);
	/* _i 0: right; 1: the second overlaps the first. */
	ck_assert_int_eq(broundtrip(&m, &d), _i == 0 ? 0 : -1);
	if (_i == 0) {
		ck_assert_int_eq(memcmp(d.entries[1].body, "cd", 2), 0);
		batch_free(&d);
	}
	msg_free(&m);
}
END_TEST

START_TEST(test_batch_outcome)
{
	struct batch b;
	struct batch_outcome o, d;
	struct msg m, r;
	uint32_t i;
	size_t n;

	bsample(&b, SINK_PUBSUB, NBATCH, 0);
	batch_outcome_init(&o, &b);
	ck_assert_uint_eq(o.n, NBATCH);
	for (i = 0; i < o.n; i++) {
		batch_outcome_set(&o.r[i], i % JOB_RESULT_MAX, "entry %u", i);
		o.r[i].retry_after_ms = i * 10;
	}
	o.http_status = 200;
	o.duration_ms = 77;
	batch_outcome_encode(&m, b.id, &o);
	ck_assert_uint_eq(m.type, MSG_BATCH_OUTCOME);
	msg_init(&r, m.type, m.id);
	r.buf = m.buf;
	r.len = m.len;
	ck_assert_int_eq(batch_outcome_decode(&r, &d), 0);
	ck_assert_uint_eq(d.n, NBATCH);
	ck_assert_uint_eq(d.http_status, 200);
	ck_assert(d.duration_ms == 77);
	for (i = 0; i < d.n; i++) {
		ck_assert(d.r[i].id == bentries[i].id);
		ck_assert_int_eq(d.r[i].result, i % JOB_RESULT_MAX);
		ck_assert(d.r[i].retry_after_ms == i * 10);
		ck_assert_str_eq(d.r[i].detail, o.r[i].detail);
	}
	batch_outcome_free(&d);
	/* Every cut refused, and a byte too many. */
	for (n = 0; n < m.len; n += 1 + n / 64) {
		msg_init(&r, m.type, m.id);
		r.buf = m.buf;
		r.len = n;
		ck_assert_int_eq(batch_outcome_decode(&r, &d), -1);
		ck_assert_ptr_null(d.r);
	}
	msg_add_u8(&m, 0);
	msg_init(&r, m.type, m.id);
	r.buf = m.buf;
	r.len = m.len;
	ck_assert_int_eq(batch_outcome_decode(&r, &d), -1);
	msg_free(&m);
	/* A result out of range. */
	o.r[3].result = JOB_RESULT_MAX;
	batch_outcome_encode(&m, b.id, &o);
	msg_init(&r, m.type, m.id);
	r.buf = m.buf;
	r.len = m.len;
	ck_assert_int_eq(batch_outcome_decode(&r, &d), -1);
	msg_free(&m);
	batch_outcome_free(&o);
}
END_TEST

static Suite *
job_suite(void)
{
	Suite *s = suite_create("job");
	TCase *tc;

	tc = tcase_create("job");
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, test_roundtrip, 0,
	    sizeof(rt_cases) / sizeof(rt_cases[0]));
	tcase_add_test(tc, test_minimal);
	tcase_add_loop_test(tc, test_truncated, 0, 2);
	tcase_add_test(tc, test_leftover);
	tcase_add_test(tc, test_body_fd);
	tcase_add_test(tc, test_garbage);
	suite_add_tcase(s, tc);

	tc = tcase_create("batch");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_batch_roundtrip, 0,
	    sizeof(brt_cases) / sizeof(brt_cases[0]));
	tcase_add_loop_test(tc, test_batch_truncated, 0, 2);
	tcase_add_test(tc, test_batch_refused);
	tcase_add_test(tc, test_batch_claim_store);
	tcase_add_loop_test(tc, test_batch_offsets, 0, 2);
	tcase_add_test(tc, test_batch_outcome);
	suite_add_tcase(s, tc);

	tc = tcase_create("outcome");
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_outcome);
	tcase_add_test(tc, test_outcome_long);
	tcase_add_test(tc, test_outcome_response);
	tcase_add_test(tc, test_detail_loggable);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(job_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
