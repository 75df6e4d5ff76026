/* SPDX-License-Identifier: ISC */
/*
 * check_sink_kafka.c: the kafka sink (workers/sink_kafka.c) against
 * librdkafka's mock cluster (rdkafka_mock.h: brokers on loopback inside
 * this process; Debian ships no Kafka broker).
 *
 * The pure parts: what an error code means, and the producer's settings
 * a sink makes (idempotence, acks, timeouts, TLS and SASL).  Then whole
 * batches: records produced and consumed back from the mock cluster with
 * an rdkafka consumer, each value byte for byte the v1 message (a claim
 * reference above inline_max_bytes), with the key and headers; a topic
 * the cluster does not have (permanent, named); a broker's refusals
 * injected (too large: permanent; not authorised: transient); the broker
 * down (transient) then up again (delivered, the producer reused); a
 * record over max_record_bytes (permanent, nothing sent); the egress
 * guard refusing the brokers' loopback address (permanent
 * egress_denied); TLS asked of a plaintext broker (transient, no
 * fallback).  The mock has no TLS listener and no SASL: neither is
 * tested against a broker.
 */
#include "config.h"

#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "conf.h"
#include "egress.h"
#include "job.h"
#include "qmsg.h"
#include "sink.h"

#define TOPIC		"hooks"
#define PRODUCE_API	0	/* the Kafka protocol's ApiKeys */
#define METADATA_API	3

static rd_kafka_t		*host;		/* holds the mock cluster */
static rd_kafka_mock_cluster_t	*mc;
static char			*brokers[1];

static struct header_kv hdrs[] = {
	{ "X-GitHub-Event", "push" },
	{ "user-agent", "GitHub-Hookshot/1" },
};

/* --- the mock cluster --- */

static void
cluster_up(void)
{
	rd_kafka_conf_t *c = rd_kafka_conf_new();
	char err[256];

	/* It connects nowhere: not a notice about that. */
	ck_assert_int_eq(rd_kafka_conf_set(c, "log_level", "4", err,
	    sizeof(err)), RD_KAFKA_CONF_OK);
	if ((host = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err))) ==
	    NULL)
		ck_abort_msg("rd_kafka_new: %s", err);
	if ((mc = rd_kafka_mock_cluster_new(host, 1)) == NULL)
		ck_abort_msg("rd_kafka_mock_cluster_new failed");
	/* Metadata v4, whose AllowAutoTopicCreation the producer sets
	 * false as a broker would see it: at its default (v2, no such
	 * field) the 2.0 mock creates every topic it is asked about. */
	ck_assert_int_eq(rd_kafka_mock_set_apiversion(mc, METADATA_API, 0, 4),
	    0);
	ck_assert_int_eq(rd_kafka_mock_topic_create(mc, TOPIC, 2, 1), 0);
	brokers[0] = strdup(rd_kafka_mock_cluster_bootstraps(mc));
}

/* The egress guard lets loopback through, as egress.allow would. */
static void
allow_loopback(void)
{
	struct conf cf;
	char *allow[] = { "127.0.0.0/8" };

	memset(&cf, 0, sizeof(cf));
	cf.egress.allow = allow;
	cf.egress.nallow = 1;
	cf.egress.allow_plain_http = 1;
	egress_configure(&cf);
}

static void
setup(void)
{
	allow_loopback();
	cluster_up();
}

static void
teardown(void)
{
	sink_kafka_cleanup();
	rd_kafka_mock_cluster_destroy(mc);
	rd_kafka_destroy(host);
	free(brokers[0]);
	egress_configure(NULL);
}

/* --- batches --- */

static void
sink_init(struct sink_conf *s, uint64_t timeout_ms)
{
	memset(s, 0, sizeof(*s));
	s->type = SINK_KAFKA;
	s->timeout_ms = timeout_ms;
	s->inline_max_bytes = 64;
	s->max_message_bytes = 1000000;
	s->u.kafka.brokers = brokers;
	s->u.kafka.nbrokers = 1;
	s->u.kafka.topic = TOPIC;
}

/* Entry i of a batch: its own hook id, body and tenant; every seventh
 * body is above inline_max_bytes and goes by its claim reference. */
static void
entry_init(struct batch_entry *e, uint32_t i, char *id, size_t idlen,
    char *body, size_t bodylen)
{
	memset(e, 0, sizeof(*e));
	e->id = 100 + i;
	snprintf(id, idlen, "01890a5d-ac96-774b-bcce-%012" PRIu32, i);
	e->hook_id = id;
	e->tenant = i % 2 ? "acme" : "globex";
	e->source = "github";
	e->received_at = 1700000000000ULL + i;
	e->content_type = "application/json";
	e->headers = hdrs;
	e->nheaders = 2;
	e->dedupe_key = i % 3 ? "" : "d-1";
	e->replay_id = "";
	e->attempt = 1;
	e->claim_ref = i % 7 == 0 ? "urn:ankusa:claim:v1:acme:"
	    "01HF8Z3M0000000000000000A0" : "";
	e->order_key = "";
	e->tracestate = "";
	if (i % 7 == 0) {
		memset(body, 'x', bodylen - 1);
		body[bodylen - 1] = '\0';
	} else
		snprintf(body, bodylen, "{\"n\":%" PRIu32 "}", i);
	e->body = (const unsigned char *)body;
	e->bodylen = strlen(body);
}

struct fixture {
	struct batch		 b;
	struct batch_entry	*e;
	char			 (*ids)[64];
	char			 (*bodies)[200];
	struct batch_outcome	 o;
};

static void
fixture_init(struct fixture *f, uint32_t n, uint64_t timeout_ms)
{
	uint32_t i;

	memset(f, 0, sizeof(*f));
	ck_assert_ptr_nonnull(f->e = calloc(n, sizeof(*f->e)));
	ck_assert_ptr_nonnull(f->ids = calloc(n, sizeof(*f->ids)));
	ck_assert_ptr_nonnull(f->bodies = calloc(n, sizeof(*f->bodies)));
	for (i = 0; i < n; i++)
		entry_init(&f->e[i], i, f->ids[i], sizeof(f->ids[i]),
		    f->bodies[i], sizeof(f->bodies[i]));
	f->b.id = 1;
	sink_init(&f->b.sink, timeout_ms);
	f->b.entries = f->e;
	f->b.nentries = n;
}

static void
fixture_run(struct fixture *f)
{
	batch_outcome_free(&f->o);
	batch_outcome_init(&f->o, &f->b);
	sink_kafka_batch(&f->b, &f->o);
}

static void
fixture_free(struct fixture *f)
{
	batch_outcome_free(&f->o);
	free(f->e);
	free(f->ids);
	free(f->bodies);
}

/* A record as consumed, copied out of librdkafka's message (a consumer
 * cannot be destroyed while its messages live). */
struct rec {
	char			*value;
	size_t			 len;
	char			*key;
	size_t			 keylen;
	int64_t			 ts;
	rd_kafka_headers_t	*h;		/* a copy */
};

/* Every record of the topic, read from the beginning by a consumer of
 * the mock cluster until want have come (or 15 s), then for a second
 * more: one more would be a duplicate (kept, one at most). */
static struct rec *
consume(int want, int *got)
{
	rd_kafka_conf_t *c = rd_kafka_conf_new();
	rd_kafka_topic_partition_list_t *tp;
	rd_kafka_headers_t *h;
	rd_kafka_message_t *m;
	rd_kafka_t *rk;
	struct rec *out, *r;
	char err[256];
	time_t end = time(NULL) + 15, quiet = 0;

	ck_assert_int_eq(rd_kafka_conf_set(c, "bootstrap.servers", brokers[0],
	    err, sizeof(err)), RD_KAFKA_CONF_OK);
	ck_assert_int_eq(rd_kafka_conf_set(c, "group.id", "check", err,
	    sizeof(err)), RD_KAFKA_CONF_OK);
	ck_assert_ptr_nonnull(rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err,
	    sizeof(err)));
	tp = rd_kafka_topic_partition_list_new(2);
	rd_kafka_topic_partition_list_add(tp, TOPIC, 0)->offset =
	    RD_KAFKA_OFFSET_BEGINNING;
	rd_kafka_topic_partition_list_add(tp, TOPIC, 1)->offset =
	    RD_KAFKA_OFFSET_BEGINNING;
	ck_assert_int_eq(rd_kafka_assign(rk, tp), 0);
	rd_kafka_topic_partition_list_destroy(tp);
	ck_assert_ptr_nonnull(out = calloc(want + 1, sizeof(*out)));
	*got = 0;
	while (*got <= want && time(NULL) < end &&
	    (quiet == 0 || time(NULL) <= quiet)) {
		if ((m = rd_kafka_consumer_poll(rk, 100)) == NULL)
			continue;
		if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
			r = &out[(*got)++];
			ck_assert_ptr_nonnull(r->value = malloc(m->len + 1));
			memcpy(r->value, m->payload, m->len);
			r->len = m->len;
			ck_assert_ptr_nonnull(r->key = malloc(m->key_len + 1));
			memcpy(r->key, m->key, m->key_len);
			r->keylen = m->key_len;
			r->ts = rd_kafka_message_timestamp(m, NULL);
			if (rd_kafka_message_headers(m, &h) == 0)
				r->h = rd_kafka_headers_copy(h);
		}
		rd_kafka_message_destroy(m);
		if (*got == want && quiet == 0)
			quiet = time(NULL) + 1;
	}
	rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
	return out;
}

static void
consumed_free(struct rec *r, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		free(r[i].value);
		free(r[i].key);
		if (r[i].h != NULL)
			rd_kafka_headers_destroy(r[i].h);
	}
	free(r);
}

/* The record carrying hook id, or NULL. */
static const struct rec *
find(const struct rec *r, int n, const char *id)
{
	const void *v;
	size_t len;
	int i;

	for (i = 0; i < n; i++)
		if (r[i].h != NULL && rd_kafka_header_get_last(r[i].h,
		    "ankusa_id", &v, &len) == 0 && len == strlen(id) &&
		    memcmp(v, id, len) == 0)
			return &r[i];
	return NULL;
}

/* --- the pure parts --- */

START_TEST(test_classify)
{
	ck_assert_int_eq(sink_kafka_classify(RD_KAFKA_RESP_ERR_NO_ERROR),
	    JOB_OK);
	ck_assert_int_eq(sink_kafka_classify(RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC),
	    JOB_PERMANENT);
	ck_assert_int_eq(sink_kafka_classify(
	    RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART), JOB_PERMANENT);
	ck_assert_int_eq(sink_kafka_classify(
	    RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE), JOB_PERMANENT);
	ck_assert_int_eq(sink_kafka_classify(RD_KAFKA_RESP_ERR_INVALID_RECORD),
	    JOB_PERMANENT);
	ck_assert_int_eq(sink_kafka_classify(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT),
	    JOB_ERROR);
	ck_assert_int_eq(sink_kafka_classify(RD_KAFKA_RESP_ERR__TRANSPORT),
	    JOB_ERROR);
	ck_assert_int_eq(sink_kafka_classify(
	    RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS), JOB_ERROR);
	/* A credential put right by a reload: not a dead letter. */
	ck_assert_int_eq(sink_kafka_classify(
	    RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED), JOB_ERROR);
	ck_assert_int_eq(sink_kafka_classify(
	    RD_KAFKA_RESP_ERR__AUTHENTICATION), JOB_ERROR);
	ck_assert_int_eq(sink_kafka_classify(RD_KAFKA_RESP_ERR__PURGE_INFLIGHT),
	    JOB_ERROR);
}
END_TEST

static void
conf_is(rd_kafka_conf_t *c, const char *name, const char *want)
{
	char v[512];
	size_t n = sizeof(v);

	ck_assert_int_eq(rd_kafka_conf_get(c, name, v, &n), RD_KAFKA_CONF_OK);
	ck_assert_msg(strcmp(v, want) == 0, "%s is %s, want %s", name, v,
	    want);
}

START_TEST(test_conf)
{
	struct sink_conf s;
	rd_kafka_conf_t *c;
	char *two[] = { "k1.test:9092", "[2001:db8::1]:9093" }, err[256];

	sink_init(&s, 7000);
	s.u.kafka.brokers = two;
	s.u.kafka.nbrokers = 2;
	ck_assert_ptr_nonnull(c = sink_kafka_conf(&s, err, sizeof(err)));
	conf_is(c, "bootstrap.servers", "k1.test:9092,[2001:db8::1]:9093");
	conf_is(c, "enable.idempotence", "true");
	conf_is(c, "acks", "-1");
	conf_is(c, "message.timeout.ms", "7000");
	conf_is(c, "allow.auto.create.topics", "false");
	conf_is(c, "security.protocol", "plaintext");
	rd_kafka_conf_destroy(c);

	/* TLS, verified; SASL's three mechanisms by the Elixir names. */
	s.u.kafka.ssl = 1;
	s.u.kafka.sasl_mechanism = "scram_sha_512";
	s.u.kafka.sasl_username = "u";
	s.u.kafka.sasl_password = "p";
	s.max_message_bytes = 5000000;
	ck_assert_ptr_nonnull(c = sink_kafka_conf(&s, err, sizeof(err)));
	conf_is(c, "security.protocol", "sasl_ssl");
	conf_is(c, "sasl.mechanisms", "SCRAM-SHA-512");
	conf_is(c, "sasl.username", "u");
	conf_is(c, "enable.ssl.certificate.verification", "true");
	conf_is(c, "ssl.endpoint.identification.algorithm", "https");
	conf_is(c, "message.max.bytes", "5004096");
	rd_kafka_conf_destroy(c);
	s.u.kafka.ssl = 0;
	s.u.kafka.sasl_mechanism = "plain";
	ck_assert_ptr_nonnull(c = sink_kafka_conf(&s, err, sizeof(err)));
	conf_is(c, "security.protocol", "sasl_plaintext");
	conf_is(c, "sasl.mechanisms", "PLAIN");
	rd_kafka_conf_destroy(c);
	s.u.kafka.sasl_mechanism = "scram_sha_256";
	ck_assert_ptr_nonnull(c = sink_kafka_conf(&s, err, sizeof(err)));
	conf_is(c, "sasl.mechanisms", "SCRAM-SHA-256");
	rd_kafka_conf_destroy(c);
}
END_TEST

/* --- against the mock cluster --- */

/* A batch produced and consumed back: each record's value is the v1
 * message byte for byte, key tenant/source (or the sink's key), the
 * attributes as headers, the hook's time as the record's. */
START_TEST(test_roundtrip)
{
	struct fixture f;
	struct qmsg q;
	struct rec *got;
	const struct rec *m;
	rd_kafka_headers_t *h;
	const void *v;
	size_t len;
	char err[64], key[64];
	uint32_t i, n = 40;
	int a, ngot, claims = 0;

	fixture_init(&f, n, 5000);
	fixture_run(&f);
	for (i = 0; i < n; i++)
		ck_assert_msg(f.o.r[i].result == JOB_OK, "entry %u: %s %s", i,
		    job_result_name(f.o.r[i].result), f.o.r[i].detail);
	ck_assert_uint_eq(f.o.r[3].id, 103);
	ck_assert_msg(strncmp(f.o.r[0].detail, "kafka hooks [", 13) == 0,
	    "%s", f.o.r[0].detail);

	got = consume(n, &ngot);
	ck_assert_int_eq(ngot, n);
	for (i = 0; i < n; i++) {
		ck_assert_ptr_nonnull(m = find(got, ngot, f.e[i].hook_id));
		ck_assert_int_eq(qmsg_build(&q, &f.e[i], 64, err,
		    sizeof(err)), 0);
		claims += q.by_claim;
		ck_assert_uint_eq(m->len, q.jsonlen);
		ck_assert_int_eq(memcmp(m->value, q.json, q.jsonlen), 0);
		snprintf(key, sizeof(key), "%s/%s", f.e[i].tenant,
		    f.e[i].source);
		ck_assert_uint_eq(m->keylen, strlen(key));
		ck_assert_int_eq(memcmp(m->key, key, m->keylen), 0);
		ck_assert_int_eq(m->ts, (int64_t)f.e[i].received_at);
		ck_assert_ptr_nonnull(h = m->h);
		ck_assert_uint_eq(rd_kafka_header_cnt(h), (size_t)q.nattrs);
		for (a = 0; a < q.nattrs; a++) {
			ck_assert_int_eq(rd_kafka_header_get(h, 0,
			    q.attrs[a].name, &v, &len), 0);
			ck_assert_uint_eq(len, strlen(q.attrs[a].value));
			ck_assert_int_eq(memcmp(v, q.attrs[a].value, len), 0);
		}
		qmsg_free(&q);
	}
	ck_assert_int_eq(claims, 6);	/* 0, 7, 14, 21, 28, 35 */
	consumed_free(got, ngot);

	/* The sink's key, for every record. */
	f.b.sink.u.kafka.key = "stripe";
	f.b.nentries = 1;
	f.e[0].hook_id = "01890a5d-ac96-774b-bcce-00000000keyd";
	fixture_run(&f);
	ck_assert_int_eq(f.o.r[0].result, JOB_OK);
	got = consume(n + 1, &ngot);
	ck_assert_int_eq(ngot, n + 1);
	ck_assert_ptr_nonnull(m = find(got, ngot, f.e[0].hook_id));
	ck_assert_uint_eq(m->keylen, 6);
	ck_assert_int_eq(memcmp(m->key, "stripe", 6), 0);
	consumed_free(got, ngot);
	fixture_free(&f);
}
END_TEST

/* A topic the cluster does not have: permanent, named; never created. */
START_TEST(test_unknown_topic)
{
	struct fixture f;

	fixture_init(&f, 3, 5000);
	f.b.sink.u.kafka.topic = "no-such-topic";
	fixture_run(&f);
	ck_assert_msg(f.o.r[0].result == JOB_PERMANENT, "%s %s",
	    job_result_name(f.o.r[0].result), f.o.r[0].detail);
	ck_assert_msg(strstr(f.o.r[0].detail, "topic no-such-topic does not "
	    "exist") != NULL, "%s", f.o.r[0].detail);
	ck_assert_int_eq(f.o.r[2].result, JOB_PERMANENT);
	fixture_free(&f);
}
END_TEST

/* The broker's refusals: too large is permanent, not authorised is
 * transient; each entry settles on its own report. */
START_TEST(test_broker_errors)
{
	struct fixture f;

	fixture_init(&f, 1, 5000);
	rd_kafka_mock_push_request_errors(mc, PRODUCE_API, 1,
	    RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
	fixture_run(&f);
	ck_assert_msg(f.o.r[0].result == JOB_PERMANENT, "%s %s",
	    job_result_name(f.o.r[0].result), f.o.r[0].detail);

	/* Nothing pushed: the next is delivered. */
	fixture_run(&f);
	ck_assert_msg(f.o.r[0].result == JOB_OK, "%s %s",
	    job_result_name(f.o.r[0].result), f.o.r[0].detail);

	/* (librdkafka then holds the topic as unauthorised until its next
	 * metadata refresh: retries, not dead letters, meanwhile.) */
	rd_kafka_mock_push_request_errors(mc, PRODUCE_API, 1,
	    RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
	fixture_run(&f);
	ck_assert_msg(f.o.r[0].result == JOB_ERROR, "%s %s",
	    job_result_name(f.o.r[0].result), f.o.r[0].detail);
	fixture_free(&f);
}
END_TEST

/* The broker down: each entry transient within the timeout; up again:
 * delivered by the same producer, every hook at least once. */
START_TEST(test_broker_down_up)
{
	struct fixture f;
	struct rec *got;
	uint64_t t0;
	uint32_t i, n = 5;
	int ngot, tries;

	fixture_init(&f, n, 1500);
	fixture_run(&f);			/* the producer connects */
	ck_assert_int_eq(f.o.r[0].result, JOB_OK);
	ck_assert_int_eq(rd_kafka_mock_broker_set_down(mc, 1), 0);
	for (i = 0; i < n; i++)
		f.e[i].received_at += 1000;	/* the retries' marks */
	t0 = (uint64_t)time(NULL);
	fixture_run(&f);
	for (i = 0; i < n; i++)
		ck_assert_msg(f.o.r[i].result == JOB_ERROR, "entry %u: %s %s",
		    i, job_result_name(f.o.r[i].result), f.o.r[i].detail);
	ck_assert_int_le((uint64_t)time(NULL) - t0, 6);

	ck_assert_int_eq(rd_kafka_mock_broker_set_up(mc, 1), 0);
	/* The retries, as the master would make them, until delivered. */
	for (tries = 0; tries < 20; tries++) {
		fixture_run(&f);
		for (i = 0; i < n && f.o.r[i].result == JOB_OK; i++)
			;
		if (i == n)
			break;
	}
	ck_assert_msg(tries < 20, "not delivered after the broker came back: "
	    "%s", f.o.r[0].detail);
	got = consume(2 * n, &ngot);
	ck_assert_int_ge(ngot, 2 * n);
	for (i = 0; i < n; i++)
		ck_assert_ptr_nonnull(find(got, ngot, f.e[i].hook_id));
	consumed_free(got, ngot);
	fixture_free(&f);
}
END_TEST

/* A record's bytes as max_record_bytes counts them: value, key (here
 * tenant/source) and headers. */
static size_t
record_bytes(const struct batch_entry *e, uint64_t inline_max)
{
	struct qmsg q;
	char err[64];
	size_t n;
	int a;

	ck_assert_int_eq(qmsg_build(&q, e, inline_max, err, sizeof(err)), 0);
	n = q.jsonlen + strlen(e->tenant) + 1 + strlen(e->source);
	for (a = 0; a < q.nattrs; a++)
		n += strlen(q.attrs[a].name) + strlen(q.attrs[a].value);
	qmsg_free(&q);
	return n;
}

/* Over max_record_bytes: permanent, before anything is sent; a record at
 * the limit goes. */
START_TEST(test_too_large)
{
	struct fixture f;
	struct rec *got;
	char want[64];
	int ngot;

	fixture_init(&f, 2, 5000);
	f.b.sink.inline_max_bytes = 1000;	/* entry 0's 199 bytes inline */
	f.b.sink.max_message_bytes = record_bytes(&f.e[1], 1000);
	ck_assert_uint_gt(record_bytes(&f.e[0], 1000),
	    f.b.sink.max_message_bytes);
	fixture_run(&f);
	ck_assert_msg(f.o.r[0].result == JOB_PERMANENT, "%s",
	    f.o.r[0].detail);
	snprintf(want, sizeof(want), "max_record_bytes %" PRIu64 ")",
	    f.b.sink.max_message_bytes);
	ck_assert_msg(strstr(f.o.r[0].detail, want) != NULL, "%s",
	    f.o.r[0].detail);
	ck_assert_int_eq(f.o.r[1].result, JOB_OK);
	got = consume(1, &ngot);
	ck_assert_int_eq(ngot, 1);
	ck_assert_ptr_nonnull(find(got, ngot, f.e[1].hook_id));
	consumed_free(got, ngot);
	fixture_free(&f);
}
END_TEST

/* The egress guard with its defaults (nothing allowed) refuses the
 * brokers' loopback address: permanent egress_denied:<address>. */
START_TEST(test_egress_denied)
{
	struct fixture f;

	egress_configure(NULL);
	fixture_init(&f, 2, 1000);
	fixture_run(&f);
	ck_assert_msg(f.o.r[0].result == JOB_PERMANENT, "%s %s",
	    job_result_name(f.o.r[0].result), f.o.r[0].detail);
	ck_assert_msg(strncmp(f.o.r[0].detail, "egress_denied:127.0.0.1",
	    23) == 0, "%s", f.o.r[0].detail);
	ck_assert_int_eq(f.o.r[1].result, JOB_PERMANENT);
	fixture_free(&f);
}
END_TEST

/* ssl: true against the mock's plaintext listener: the handshake fails,
 * transient, and the verification asked for never falls back to
 * plaintext. */
START_TEST(test_ssl_refused)
{
	struct fixture f;

	fixture_init(&f, 1, 1500);
	f.b.sink.u.kafka.ssl = 1;
	fixture_run(&f);
	ck_assert_msg(f.o.r[0].result == JOB_ERROR, "%s %s",
	    job_result_name(f.o.r[0].result), f.o.r[0].detail);
	ck_assert_msg(strstr(f.o.r[0].detail, "SSL") != NULL, "%s",
	    f.o.r[0].detail);
	fixture_free(&f);
}
END_TEST

static Suite *
sink_kafka_suite(void)
{
	Suite *s = suite_create("sink_kafka");
	TCase *tc = tcase_create("pure");
	TCase *tm = tcase_create("mock");

	tcase_add_test(tc, test_classify);
	tcase_add_test(tc, test_conf);
	suite_add_tcase(s, tc);

	tcase_set_timeout(tm, 60);
	tcase_add_checked_fixture(tm, setup, teardown);
	tcase_add_test(tm, test_roundtrip);
	tcase_add_test(tm, test_unknown_topic);
	tcase_add_test(tm, test_broker_errors);
	tcase_add_test(tm, test_broker_down_up);
	tcase_add_test(tm, test_too_large);
	tcase_add_test(tm, test_egress_denied);
	tcase_add_test(tm, test_ssl_refused);
	suite_add_tcase(s, tm);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(sink_kafka_suite());
	int nf;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? 0 : 1;
}
