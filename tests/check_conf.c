/* SPDX-License-Identifier: ISC */
/*
 * check_conf.c: unit tests of the configuration loader (common/conf*.c).
 *
 * Table-driven where it can be: the bounds test walks the key table
 * (conf_int.h's conf_tab) through key_info() and builds a file for every
 * numeric key, so a key added to the table is tested without touching this
 * file.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <openssl/sha.h>

#include "conf.h"
#include "conf_int.h"

#define TIMEOUT	10

/* The smallest valid sources section, appended to most test files. */
#define SRC	"sources:\n  demo:\n    sinks:\n      - type: log\n"
/* An http sink, its options to follow. */
#define HS	"sources:\n  demo:\n    sinks:\n      - type: http\n" \
		"        url: \"https://sink.test/\"\n"
/* A redis sink, its options to follow. */
#define RS	"sources:\n  demo:\n    sinks:\n      - type: redis\n"
/* A claim_check section's required key, and its line in one. */
#define TEST_CLAIM_KEY	"0123456789abcdef0123456789abcdef"
#define CLAIM_KEY	"  signing_key: " TEST_CLAIM_KEY "\n"
/* The start of a file with one http sink, its url to follow. */
#define EGH	"sources:\n  demo:\n    sinks:\n      - type: http\n" \
	"        url: "

/* A key of the table (conf_int.h), as the tests read it. */
enum key_kind {
	KK_OTHER = 0,	/* section, string, enum, list ... */
	KK_INT,		/* decimal integer within [min, max] */
	KK_FLOAT,		/* number within (0, fmax] */
	KK_MODE,		/* octal file mode within [min, max] */
	KK_BOOL,
};

struct key_view {
	const char		*name;	/* dotted pattern: sources.*.sinks[].url */
	enum key_kind	 kind;
	const char		*def;	/* default as YAML text, NULL: none */
	uint64_t		 min;
	uint64_t		 max;
	double			 fmax;
	int			 nullable;	/* null is accepted */
	int			 cross;		/* also bounded by another key */
	int			 required;
	int			 restart;	/* a change needs a restart */
	int			 sinks;		/* (1 << enum sink_type) mask, 0:
						 * not a sink key */
};

static int		 key_info(size_t, struct key_view *);
static struct conf	*parse(const char *, struct conf_errors *);
static struct conf	*parse_ok(const char *);
static void		 expect_err(const char *, const char *);
static int		 has_err(const struct conf_errors *, const char *);
static void		 dump_errs(const struct conf_errors *);
static void		 build(char *, size_t, const struct key_view *,
			    const char *);
static int		 build_try(const struct key_view *, const char *);
static void		 report_key(const char *, void *);

/* Entry i of the key table: 0, or -1 past its end (conf_tab_n). */
static int
key_info(size_t i, struct key_view *ki)
{
	const struct conf_key *k;

	if (i >= conf_tab_n)
		return -1;
	k = &conf_tab[i];
	memset(ki, 0, sizeof(*ki));
	ki->name = k->name;
	switch (k->type) {
	case T_U16:
	case T_U32:
	case T_U64:
		ki->kind = KK_INT;
		break;
	case T_FLOAT:
		ki->kind = KK_FLOAT;
		break;
	case T_MODE:
		ki->kind = KK_MODE;
		break;
	case T_BOOL:
		ki->kind = KK_BOOL;
		break;
	default:
		ki->kind = KK_OTHER;
		break;
	}
	ki->def = k->def;
	ki->min = k->min;
	ki->max = k->max;
	ki->fmax = k->fmax;
	ki->nullable = (k->flags & F_NULLABLE) != 0;
	ki->cross = (k->flags & F_CROSS) != 0;
	ki->required = (k->flags & F_REQUIRED) != 0;
	ki->restart = (k->flags & F_RESTART) != 0;
	ki->sinks = k->sinks;
	return 0;
}

static struct conf *
parse(const char *y, struct conf_errors *e)
{
	return conf_parse(y, strlen(y), "test.yml", e);
}

static void
dump_errs(const struct conf_errors *e)
{
	int i;

	for (i = 0; i < e->n; i++)
		fprintf(stderr, "  error: %s\n", e->msgs[i]);
}

/* Parse a file that must be valid; the caller frees the result. */
static struct conf *
parse_ok(const char *y)
{
	struct conf_errors e = { NULL, 0 };
	struct conf *cf;

	cf = parse(y, &e);
	if (cf == NULL) {
		fprintf(stderr, "unexpected errors for:\n%s", y);
		dump_errs(&e);
	}
	ck_assert_ptr_nonnull(cf);
	ck_assert_int_eq(e.n, 0);
	conf_errors_free(&e);
	return cf;
}

static int
has_err(const struct conf_errors *e, const char *msg)
{
	int i;

	for (i = 0; i < e->n; i++)
		if (strcmp(e->msgs[i], msg) == 0)
			return 1;
	return 0;
}

/* The file must be refused, with msg among the errors. */
static void
expect_err(const char *y, const char *msg)
{
	struct conf_errors e = { NULL, 0 };
	struct conf *cf;

	cf = parse(y, &e);
	ck_assert_ptr_null(cf);
	if (!has_err(&e, msg)) {
		fprintf(stderr, "expected \"%s\" for:\n%s", msg, y);
		dump_errs(&e);
	}
	ck_assert(has_err(&e, msg));
	conf_errors_free(&e);
}

/*
 * The embedded default and the defaults of every key.
 */

START_TEST(test_default_text)
{
	struct conf *cf;
	const struct source_conf *s;

	cf = parse_ok(conf_default_text());
	ck_assert_str_eq(cf->data_dir, "./ankusa-data");
	ck_assert_str_eq(cf->http.ip, "127.0.0.1");
	ck_assert_uint_eq(cf->http.port, 4000);
	ck_assert_int_eq(cf->nsources, 1);
	ck_assert_int_eq(cf->nsinks, 1);
	s = conf_source(cf, "demo");
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(s->verify.type, VERIFY_NONE);
	ck_assert_int_eq(s->sinks[0].type, SINK_LOG);
	/* The socket stays the compiled default, not in the data dir. */
	ck_assert(strcmp(cf->control.socket,
	    "./ankusa-data/control.sock") != 0);
	ck_assert_ptr_nonnull(strstr(cf->control.socket, "/control.sock"));
	conf_free(cf);
}
END_TEST

START_TEST(test_defaults)
{
	struct conf *cf;
	const struct source_conf *s;

	cf = parse_ok(SRC);
	ck_assert_str_eq(cf->log_level, "info");
	ck_assert_str_eq(cf->http.ip, "0.0.0.0");
	ck_assert_uint_eq(cf->http.port, 4000);
	ck_assert_uint_eq(cf->http.max_body_bytes, 8000000);
	ck_assert_int_eq(cf->http.routing, ROUTING_PATH);
	ck_assert_str_eq(cf->http.prefix, "/webhooks");
	ck_assert_uint_eq(cf->http.workers, 2);
	ck_assert_uint_eq(cf->http.header_timeout_ms, 10000);
	ck_assert_uint_eq(cf->http.min_body_rate, 1024);
	ck_assert_uint_eq(cf->http.max_conns_per_ip, 256);
	ck_assert_uint_eq(cf->http.max_buffered_bytes, 268435456);
	ck_assert_int_eq(cf->admin.enabled, 1);
	ck_assert_str_eq(cf->admin.ip, "127.0.0.1");
	ck_assert_uint_eq(cf->admin.port, 4002);
	ck_assert_uint_eq(cf->control.mode, 0660);
	ck_assert_int_eq(cf->rate_default.set, 0);
	ck_assert_int_eq(cf->nrate_tenants, 0);
	ck_assert_uint_eq(cf->quarantine.burst, 100);
	/* The Elixir Ankusa's defaults. */
	ck_assert(cf->quarantine.rate == 20.0);
	ck_assert_uint_eq(cf->quarantine.max_bytes, 1073741824);
	ck_assert_uint_eq(cf->batcher.partitions, 1);
	ck_assert_uint_eq(cf->admin.gauge_interval_ms, 15000);
	ck_assert_uint_eq(cf->batcher.max_batch, 256);
	ck_assert_uint_eq(cf->batcher.max_delay_ms, 0);
	ck_assert_uint_eq(cf->batcher.max_queue, 10000);
	ck_assert_uint_eq(cf->batcher.max_queue_bytes, 268435456);
	ck_assert_uint_eq(cf->dispatch.batch, 128);
	ck_assert_uint_eq(cf->dispatch.concurrency, 32);
	ck_assert_uint_eq(cf->dispatch.max_inflight, 4096);
	ck_assert_uint_eq(cf->dispatch.max_inflight_bytes, 134217728);
	ck_assert_uint_eq(cf->dispatch.attempt_timeout_ms, 30000);
	ck_assert_uint_eq(cf->dispatch.sink_concurrency, 8);
	ck_assert_uint_eq(cf->dispatch.breaker_failures, 5);
	ck_assert_uint_eq(cf->dispatch.breaker_open_ms, 30000);
	ck_assert_uint_eq(cf->dispatch.breaker_max_open_ms, 300000);
	ck_assert_uint_eq(cf->dispatch.retry.base_ms, 100);
	ck_assert_uint_eq(cf->dispatch.retry.max_ms, 300000);
	ck_assert_uint_eq(cf->dispatch.retry.max_attempts, 84);
	ck_assert_int_eq(cf->dispatch.retry.jitter, 1);
	ck_assert_uint_eq(cf->dispatch.retry.max_elapsed_ms, 86400000);
	/* A tenant's default window: a share of the global one. */
	ck_assert_uint_eq(cf->dispatch.tenant_default.max_inflight, 1024);
	ck_assert_uint_eq(cf->dispatch.tenant_default.max_inflight_bytes,
	    33554432);
	ck_assert_uint_eq(cf->dispatch.tenant_default.concurrency, 24);
	ck_assert_int_eq(cf->claim_check.enabled, 0);
	ck_assert_uint_eq(cf->claim_check.port, 4001);
	ck_assert_str_eq(cf->claim_check.ip, "127.0.0.1");
	ck_assert_uint_eq(cf->claim_check.pack_max_bytes, 16777216);
	ck_assert_uint_eq(cf->claim_check.retention_days, 0);
	ck_assert_ptr_nonnull(cf->data_dir);

	s = conf_source(cf, "demo");
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_null(s->tenant);
	ck_assert_int_eq(s->trust_url_tenant, 0);
	ck_assert_int_eq(s->verify.type, VERIFY_NONE);
	ck_assert_uint_eq(s->verify.tolerance_seconds, 300);
	ck_assert_int_eq(s->on_verify_failure, VFAIL_REJECT);
	ck_assert_int_eq(s->dedupe.enabled, 0);
	ck_assert_ptr_null(s->forward_headers);
	ck_assert_int_eq(s->has_retry, 0);
	ck_assert_uint_eq(s->retry.max_attempts, 84);
	ck_assert_int_eq(s->sinks[0].ordered, 0);
	ck_assert_int_eq(s->sinks[0].order_key.kind, KEY_NONE);
	ck_assert_ptr_null(conf_source(cf, "nope"));
	conf_free(cf);
}
END_TEST

START_TEST(test_sink_defaults)
{
	struct conf *cf;
	const struct sink_conf *k;

	cf = parse_ok("sources:\n  demo:\n    sinks:\n"
	    "      - {type: http, url: \"https://example.com/h\"}\n"
	    "      - {type: sqs, queue_url: \"https://sqs.example/1/q\"}\n"
	    "      - {type: google_pubsub, project: p, topic: t}\n");
	k = &cf->sources[0].sinks[0];
	ck_assert_int_eq(k->type, SINK_HTTP);
	ck_assert_str_eq(k->u.http.url, "https://example.com/h");
	ck_assert_str_eq(k->u.http.method, "post");
	ck_assert_uint_eq(k->timeout_ms, 5000);
	ck_assert_uint_eq(k->u.http.max_response_bytes, 65536);
	ck_assert_int_eq(k->u.http.nsecrets, 0);
	k = &cf->sources[0].sinks[1];
	ck_assert_int_eq(k->type, SINK_SQS);
	ck_assert_uint_eq(k->inline_max_bytes, 65536);
	ck_assert_uint_eq(k->max_message_bytes, 1048576);
	ck_assert_uint_eq(k->timeout_ms, 5000);
	ck_assert_ptr_null(k->u.sqs.region);
	k = &cf->sources[0].sinks[2];
	ck_assert_int_eq(k->type, SINK_PUBSUB);
	ck_assert_str_eq(k->u.pubsub.endpoint, "https://pubsub.googleapis.com");
	ck_assert_str_eq(k->u.pubsub.auth, "metadata");
	ck_assert_uint_eq(k->max_message_bytes, 10000000);
	ck_assert_int_eq(cf->nsinks, 3);
	ck_assert_str_eq(conf_sink_type_name(SINK_PUBSUB), "google_pubsub");
	conf_free(cf);
}
END_TEST

START_TEST(test_sink_nats)
{
	struct conf *cf;
	const struct sink_conf *k;
	char host[64];
	uint16_t port;
	int tls;

	cf = parse_ok("sources:\n  demo:\n    sinks:\n"
	    "      - type: nats\n"
	    "        servers: [\"nats://a.test\", \"b.test:4333\"]\n"
	    "        subject: hooks.demo\n"
	    "        auth: {token: t0k}\n"
	    "      - type: nats\n"
	    "        servers: [\"tls://n.test:4223\"]\n"
	    "        subject: s\n"
	    "        publish_timeout_ms: 250\n"
	    "        auth: {nkey_seed: "
	    "SUAJ2YNRTXX72WTAXKCEV5ES5QWMIRCJYVUXWMTJDFYDXLADDSXH6YALCA, "
	    "jwt: eyJ}\n");
	k = &cf->sources[0].sinks[0];
	ck_assert_int_eq(k->type, SINK_NATS);
	ck_assert_str_eq(k->u.nats.urls, "nats://a.test,b.test:4333");
	ck_assert_str_eq(k->u.nats.subject, "hooks.demo");
	ck_assert_uint_eq(k->u.nats.publish_timeout_ms, 5000);
	ck_assert_uint_eq(k->inline_max_bytes, 65536);
	ck_assert_str_eq(k->u.nats.token, "t0k");
	ck_assert_int_eq(k->u.nats.tls_on, 0);
	k = &cf->sources[0].sinks[1];
	ck_assert_int_eq(k->u.nats.tls_on, 1);
	ck_assert_uint_eq(k->u.nats.publish_timeout_ms, 250);
	ck_assert_str_eq(k->u.nats.jwt, "eyJ");
	ck_assert(conf_sink_batches(SINK_NATS) && conf_sink_queue(SINK_NATS));
	conf_free(cf);

	/* notifications.sinks take it too. */
	cf = parse_ok("sources:\n  demo:\n    sinks: [{type: log}]\n"
	    "notifications:\n  sinks:\n"
	    "    - {type: nats, servers: [n.test], subject: ops}\n");
	ck_assert_int_eq(cf->notify.sinks[0].type, SINK_NATS);
	ck_assert_str_eq(cf->notify.sinks[0].u.nats.urls, "n.test");
	conf_free(cf);

	ck_assert_int_eq(conf_nats_server("tls://[::1]:4223", host,
	    sizeof(host), &port, &tls), 0);
	ck_assert_str_eq(host, "::1");
	ck_assert_uint_eq(port, 4223);
	ck_assert_int_eq(tls, 1);
	ck_assert_int_eq(conf_nats_server("h", host, sizeof(host), &port,
	    &tls), 0);
	ck_assert_uint_eq(port, 4222);
	ck_assert_int_eq(tls, 0);
	ck_assert_int_eq(conf_nats_server("nats://h:1/x", host, sizeof(host),
	    &port, &tls), -1);
	ck_assert_int_eq(conf_nats_server("nats://:1", host, sizeof(host),
	    &port, &tls), -1);
	ck_assert_int_eq(conf_nats_server("h:0", host, sizeof(host), &port,
	    &tls), -1);
}
END_TEST

/* kafka: the Elixir Ankusa's keys; brokers a list, or one string of
 * them separated by commas (what one ${VAR} carries). */
START_TEST(test_sink_kafka)
{
	struct conf *cf;
	const struct sink_conf *k;
	char path[] = "/tmp/check_conf_kafka.XXXXXX", y[512];
	int fd;

	cf = parse_ok("sources:\n  demo:\n    sinks:\n"
	    "      - type: kafka\n"
	    "        brokers: \" k1.test:9092 ,[2001:db8::1]:9093,\"\n"
	    "        topic: ankusa.hooks\n"
	    "      - type: kafka\n"
	    "        brokers: [k1.test:9092]\n"
	    "        topic: t\n        key: stripe\n        ssl: true\n"
	    "        max_record_bytes: 2000000\n        inline_max_bytes: 8192\n"
	    "        sasl: {mechanism: SCRAM_SHA_512, username: u, "
	    "password: pw}\n");
	k = &cf->sources[0].sinks[0];
	ck_assert_int_eq(k->type, SINK_KAFKA);
	ck_assert_int_eq(k->u.kafka.nbrokers, 2);
	ck_assert_str_eq(k->u.kafka.brokers[0], "k1.test:9092");
	ck_assert_str_eq(k->u.kafka.brokers[1], "[2001:db8::1]:9093");
	ck_assert_str_eq(k->u.kafka.topic, "ankusa.hooks");
	ck_assert_ptr_null(k->u.kafka.key);
	ck_assert_int_eq(k->u.kafka.ssl, 0);
	ck_assert_ptr_null(k->u.kafka.sasl_mechanism);
	ck_assert_uint_eq(k->max_message_bytes, 1000000);
	ck_assert_uint_eq(k->inline_max_bytes, 65536);
	ck_assert_uint_eq(k->timeout_ms, 5000);
	k = &cf->sources[0].sinks[1];
	ck_assert_str_eq(k->u.kafka.key, "stripe");
	ck_assert_int_eq(k->u.kafka.ssl, 1);
	ck_assert_uint_eq(k->max_message_bytes, 2000000);
	ck_assert_uint_eq(k->inline_max_bytes, 8192);
	ck_assert_str_eq(k->u.kafka.sasl_mechanism, "scram_sha_512");
	ck_assert_str_eq(k->u.kafka.sasl_username, "u");
	ck_assert_str_eq(k->u.kafka.sasl_password, "pw");
	ck_assert(conf_sink_queue(SINK_KAFKA) && conf_sink_batches(SINK_KAFKA));
	conf_free(cf);

	/* The SASL password from a file, as every secret may be. */
	ck_assert_int_ne(fd = mkstemp(path), -1);
	ck_assert_int_eq(write(fd, "s3cr3t\n", 7), 7);
	close(fd);
	snprintf(y, sizeof(y), "sources:\n  demo:\n    sinks:\n"
	    "      - type: kafka\n        brokers: k.test:9092\n"
	    "        topic: t\n        sasl: {mechanism: plain, "
	    "username: u, password: \"${file:%s}\"}\n", path);
	cf = parse_ok(y);
	ck_assert_str_eq(cf->sources[0].sinks[0].u.kafka.sasl_password,
	    "s3cr3t");
	conf_free(cf);
	unlink(path);

	/* The notices' sinks take it too. */
	cf = parse_ok("notifications:\n  sinks:\n    - type: kafka\n"
	    "      brokers: k.test:9092\n      topic: ankusa.notices\n" SRC);
	ck_assert_int_eq(cf->notify.nsinks, 1);
	ck_assert_int_eq(cf->notify.sinks[0].type, SINK_KAFKA);
	ck_assert_str_eq(cf->notify.sinks[0].u.kafka.topic, "ankusa.notices");
	conf_free(cf);
}
END_TEST

/* disable_on (default [410], [] none, a list) and disable_after_s; the
 * notification sinks as the reserved source, found by conf_source. */
START_TEST(test_disable_notify)
{
	struct conf *cf;
	const struct sink_conf *k;
	const struct source_conf *n;

	cf = parse_ok("sources:\n  demo:\n    sinks:\n"
	    "      - {type: http, url: \"https://example.com/h\"}\n"
	    "      - {type: http, url: \"https://example.com/h\", "
	    "disable_on: []}\n"
	    "      - {type: http, url: \"https://example.com/h\", "
	    "disable_on: [404, 503], disable_after_s: 3600}\n"
	    "notifications:\n  sinks:\n"
	    "    - {type: http, url: \"https://example.com/n\"}\n"
	    "    - {type: log}\n");
	k = &cf->sources[0].sinks[0];
	ck_assert(conf_disable_status(k, 410));
	ck_assert(!conf_disable_status(k, 404));
	ck_assert_uint_eq(k->disable_after_s, 0);
	k = &cf->sources[0].sinks[1];
	ck_assert(!conf_disable_status(k, 410));
	k = &cf->sources[0].sinks[2];
	ck_assert(!conf_disable_status(k, 410));
	ck_assert(conf_disable_status(k, 404));
	ck_assert(conf_disable_status(k, 503));
	ck_assert(!conf_disable_status(k, 502));
	ck_assert(!conf_disable_status(k, 100000));
	ck_assert_uint_eq(k->disable_after_s, 3600);
	ck_assert_int_eq(cf->nsources, 1);
	ck_assert_int_eq(cf->notify.nsinks, 2);
	n = conf_source(cf, CONF_NOTIFY_SOURCE);
	ck_assert_ptr_eq(n, &cf->notify);
	ck_assert_str_eq(n->id, "_notifications");
	ck_assert_str_eq(n->tenant, "_ankusa");
	ck_assert_str_eq(n->sinks[0].u.http.url, "https://example.com/n");
	ck_assert_int_eq(n->sinks[1].type, SINK_LOG);
	/* dispatch.retry's policy. */
	ck_assert_uint_eq(n->retry.max_attempts,
	    cf->dispatch.retry.max_attempts);
	conf_free(cf);

	/* No notifications: no such source. */
	cf = parse_ok(SRC);
	ck_assert_ptr_null(conf_source(cf, CONF_NOTIFY_SOURCE));
	conf_free(cf);
}
END_TEST

/*
 * Bounds, for every numeric key of the table.
 */

/* A file that sets the key named by ki to val, with whatever its section
 * needs besides to be valid. */
static void
build(char *out, size_t sz, const struct key_view *ki, const char *val)
{
	char name[256], *seg[16], *s, *last, parent[256];
	const char *type = "log";
	FILE *fp;
	int n = 0, i, ind = 0, insrc, insink = 0;
	size_t len;

	snprintf(name, sizeof(name), "%s", ki->name);
	for (s = strtok(name, "."); s != NULL && n < 16; s = strtok(NULL, "."))
		seg[n++] = s;
	insrc = strcmp(seg[0], "sources") == 0;
	last = seg[n - 1];
	snprintf(parent, sizeof(parent), "%s", ki->name);
	parent[strlen(parent) - strlen(last) - 1] = '\0';

	if (ki->sinks & (1 << SINK_HTTP))
		type = "http";
	else if (ki->sinks & (1 << SINK_SQS))
		type = "sqs";
	else if (ki->sinks & (1 << SINK_PUBSUB))
		type = "google_pubsub";
	else if (ki->sinks & (1 << SINK_REDIS))
		type = "redis";
	else if (ki->sinks & (1 << SINK_NATS))
		type = "nats";
	else if (ki->sinks & (1 << SINK_RABBITMQ))
		type = "rabbitmq";
	else if (ki->sinks & (1 << SINK_KAFKA))
		type = "kafka";

	fp = fmemopen(out, sz, "w");
	ck_assert_ptr_nonnull(fp);
	for (i = 0; i < n - 1; i++) {
		s = seg[i];
		if (strcmp(s, "*") == 0)
			s = insrc ? "demo" : "acme";
		len = strlen(s);
		if (len > 2 && strcmp(s + len - 2, "[]") == 0) {
			fprintf(fp, "%*s%.*s:\n", ind, "", (int)len - 2, s);
			fprintf(fp, "%*s- type: %s\n", ind + 2, "", type);
			ind += 4;
			if (strcmp(type, "http") == 0)
				fprintf(fp, "%*surl: http://sink.test:9/\n",
				    ind, "");
			else if (strcmp(type, "sqs") == 0)
				fprintf(fp, "%*squeue_url: "
				    "http://sink.test:9/1/q\n", ind, "");
			else if (strcmp(type, "google_pubsub") == 0)
				fprintf(fp, "%*sproject: p\n%*stopic: t\n",
				    ind, "", ind, "");
			else if (strcmp(type, "redis") == 0)
				fprintf(fp, "%*surl: redis://sink.test\n"
				    "%*sstream: s\n", ind, "", ind, "");
			else if (strcmp(type, "nats") == 0)
				fprintf(fp, "%*sservers: [n.test]\n"
				    "%*ssubject: s\n", ind, "", ind, "");
			else if (strcmp(type, "rabbitmq") == 0 &&
			    strcmp(last, "url") != 0 &&
			    strcmp(last, "exchange") != 0)
				fprintf(fp, "%*surl: amqp://sink.test/\n"
				    "%*sexchange: e\n", ind, "", ind, "");
			else if (strcmp(type, "kafka") == 0)
				fprintf(fp, "%*sbrokers: k.test:9092\n"
				    "%*stopic: t\n", ind, "", ind, "");
			insink = 1;
		} else {
			fprintf(fp, "%*s%s:\n", ind, "", s);
			ind += 2;
		}
	}
	fprintf(fp, "%*s%s: %s\n", ind, "", last, val);
	if (strcmp(parent, "rate_limits.default") == 0 ||
	    strcmp(parent, "rate_limits.tenants.*") == 0)
		fprintf(fp, "%*s%s\n", ind, "", strcmp(last, "rate") == 0 ?
		    "burst: 1" : "rate: 1");
	if (strcmp(parent, "sources.*.dedupe") == 0)
		fprintf(fp, "%*sheader: x-id\n", ind, "");
	if (strcmp(parent, "sources.*.sinks[].rate") == 0 &&
	    strcmp(last, "per_second") != 0)
		fprintf(fp, "%*sper_second: 1\n", ind, "");
	/* A claim_check section needs its signing key. */
	if (strcmp(parent, "claim_check") == 0)
		fprintf(fp, "%*ssigning_key: " TEST_CLAIM_KEY "\n", ind, "");
	/* A replication section needs its sites, and heartbeats their
	 * timeout past them. */
	if (strcmp(parent, "replication") == 0) {
		if (strcmp(last, "local") != 0)
			fprintf(fp, "%*slocal: \"a:1\"\n", ind, "");
		if (strcmp(last, "peers") != 0)
			fprintf(fp, "%*speers: [\"b:2\"]\n", ind, "");
		if (strcmp(last, "heartbeat_ms") == 0)
			fprintf(fp, "%*sheartbeat_timeout_ms: 600000\n", ind, "");
	}
	if (insrc && !insink)
		fprintf(fp, "    sinks:\n      - type: log\n");
	if (!insrc)
		fputs(SRC, fp);
	fclose(fp);
}

/* 1 if the file with key = val is accepted. */
static int
build_try(const struct key_view *ki, const char *val)
{
	struct conf_errors e = { NULL, 0 };
	struct conf *cf;
	char y[4096];

	build(y, sizeof(y), ki, val);
	cf = parse(y, &e);
	if (cf == NULL && getenv("CHECK_CONF_VERBOSE") != NULL) {
		fprintf(stderr, "%s", y);
		dump_errs(&e);
	}
	conf_free(cf);
	conf_errors_free(&e);
	return cf != NULL;
}

START_TEST(test_bounds)
{
	struct key_view ki;
	char v[64];

	ck_assert_int_eq(key_info((size_t)_i, &ki), 0);
	/* Keys bounded by another key have tests of their own. */
	if (ki.cross)
		return;
	switch (ki.kind) {
	case KK_INT:
		snprintf(v, sizeof(v), "%llu", (unsigned long long)ki.min);
		ck_assert_msg(build_try(&ki, v), "%s: min %s refused", ki.name,
		    v);
		if (ki.min == 0)
			snprintf(v, sizeof(v), "-1");
		else
			snprintf(v, sizeof(v), "%llu",
			    (unsigned long long)ki.min - 1);
		ck_assert_msg(!build_try(&ki, v), "%s: %s accepted",
		    ki.name, v);
		snprintf(v, sizeof(v), "%llu", (unsigned long long)ki.max);
		ck_assert_msg(build_try(&ki, v), "%s: max %s refused", ki.name,
		    v);
		snprintf(v, sizeof(v), "%llu", (unsigned long long)ki.max + 1);
		ck_assert_msg(!build_try(&ki, v), "%s: %s accepted",
		    ki.name, v);
		ck_assert_msg(!build_try(&ki, "12abc"), "%s: 12abc accepted",
		    ki.name);
		ck_assert_int_eq(build_try(&ki, "null"), ki.nullable);
		break;
	case KK_FLOAT:
		ck_assert_msg(!build_try(&ki, "0"), "%s: 0 accepted", ki.name);
		ck_assert_msg(!build_try(&ki, "-1"), "%s: -1 accepted",
		    ki.name);
		ck_assert_msg(build_try(&ki, "0.5"), "%s: 0.5 refused",
		    ki.name);
		snprintf(v, sizeof(v), "%.17g", ki.fmax);
		ck_assert_msg(build_try(&ki, v), "%s: max %s refused", ki.name,
		    v);
		snprintf(v, sizeof(v), "%.17g", ki.fmax * 2);
		ck_assert_msg(!build_try(&ki, v), "%s: %s accepted",
		    ki.name, v);
		ck_assert_msg(!build_try(&ki, "nan"), "%s: nan accepted",
		    ki.name);
		break;
	case KK_MODE:
		snprintf(v, sizeof(v), "\"0%llo\"", (unsigned long long)ki.min);
		ck_assert_msg(build_try(&ki, v), "%s: %s refused", ki.name, v);
		snprintf(v, sizeof(v), "0%llo", (unsigned long long)ki.max);
		ck_assert_msg(build_try(&ki, v), "%s: %s refused", ki.name, v);
		snprintf(v, sizeof(v), "0%llo", (unsigned long long)ki.max + 1);
		ck_assert_msg(!build_try(&ki, v), "%s: %s accepted",
		    ki.name, v);
		ck_assert_msg(!build_try(&ki, "0698"), "%s: 0698 accepted",
		    ki.name);
		break;
	case KK_BOOL:
		ck_assert_msg(build_try(&ki, "true"), "%s: true", ki.name);
		ck_assert_msg(build_try(&ki, "false"), "%s: false", ki.name);
		ck_assert_msg(!build_try(&ki, "maybe"), "%s: maybe", ki.name);
		break;
	default:
		break;
	}
}
END_TEST

/* Every entry of the table is well formed. */
START_TEST(test_table)
{
	struct key_view ki;
	size_t i, nint = 0;

	ck_assert_int_eq(key_info(conf_tab_n, &ki), -1);
	for (i = 0; i < conf_tab_n; i++) {
		ck_assert_int_eq(key_info(i, &ki), 0);
		ck_assert_ptr_nonnull(ki.name);
		if (ki.kind == KK_INT) {
			nint++;
			ck_assert_msg(ki.min <= ki.max, "%s", ki.name);
		}
	}
	ck_assert_uint_gt(nint, 30);
}
END_TEST

/*
 * Messages.
 */

static const struct {
	const char	*yaml;
	const char	*msg;
} errs_tab[] = {
	/* a redis sink (conf_check_redis) */
	{ RS "        url: \"http://r.test\"\n        stream: s\n",
	  "sources.demo.sinks[0].url must be "
	  "redis://[[user]:password@]host[:port][/db] or rediss://...: not a "
	  "redis:// or rediss:// URL, line 5" },
	{ RS "        url: \"redis://u@r.test\"\n        stream: s\n",
	  "sources.demo.sinks[0].url must be "
	  "redis://[[user]:password@]host[:port][/db] or rediss://...: a user "
	  "without a password (write user:password@, or :password@), line 5" },
	{ RS "        url: \"redis://r.test:0\"\n        stream: s\n",
	  "sources.demo.sinks[0].url must be "
	  "redis://[[user]:password@]host[:port][/db] or rediss://...: a port "
	  "not in 1..65535, line 5" },
	{ RS "        url: \"redis://r.test/x\"\n        stream: s\n",
	  "sources.demo.sinks[0].url must be "
	  "redis://[[user]:password@]host[:port][/db] or rediss://...: a db "
	  "that is not a number in 0..2147483647, line 5" },
	{ RS "        url: \"redis://r.test\"\n",
	  "sources.demo.sinks[0] needs exactly one of channel and stream, "
	  "line 4" },
	{ RS "        url: \"redis://r.test\"\n        stream: s\n"
	  "        channel: c\n",
	  "sources.demo.sinks[0] needs exactly one of channel and stream, "
	  "line 4" },
	{ RS "        url: \"redis://r.test\"\n        channel: c\n"
	  "        maxlen: 10\n",
	  "sources.demo.sinks[0].maxlen goes with stream, line 7" },
	{ RS "        url: \"redis://r.test\"\n        stream: s\n"
	  "        tls: {server_name: r.test}\n",
	  "sources.demo.sinks[0].tls needs a rediss:// url, line 7" },
	{ RS "        url: \"redis://r.test\"\n        stream: s\n"
	  "        proxy: \"http://p.test:3128\"\n",
	  "sources.demo.sinks[0].proxy is not a known key for sink type "
	  "redis, line 7" },
	{ RS "        url: \"redis://10.1.2.3\"\n        stream: s\n",
	  "sources.demo.sinks[0].url must reach a public address or one "
	  "egress.allow covers, got 10.1.2.3 port 6379 (private), line 5" },
	{ "egress:\n  allow_plain_http: false\n"
	  "sources:\n  demo:\n    sinks:\n      - type: redis\n"
	  "        url: \"redis://203.0.113.9\"\n        stream: s\n",
	  "sources.demo.sinks[0].url must be rediss:// to reach a "
	  "non-loopback address with egress.allow_plain_http false, got "
	  "redis:// to 203.0.113.9, line 7" },
	{ RS "        stream: s\n",
	  "sources.demo.sinks[0].url is required for sink type redis, "
	  "line 4" },
	{ RS "        url: \"redis://r.test\"\n        stream: s\n"
	  "        timeout_ms: 100\n        publish_timeout_ms: 200\n",
	  "sources.demo.sinks[0].timeout_ms and publish_timeout_ms are one "
	  "setting: give one of them, line 7" },
	/* unknown keys: top level, nested, in a source, in a sink */
	{ "bogus: 1\n" SRC, "bogus is not a known key, line 1" },
	{ "http:\n  bogus: 1\n" SRC, "http.bogus is not a known key, line 2" },
	{ "dispatch:\n  retry:\n    nope: 1\n" SRC,
	  "dispatch.retry.nope is not a known key, line 3" },
	{ "sources:\n  demo:\n    bogus: 1\n    sinks:\n      - type: log\n",
	  "sources.demo.bogus is not a known key, line 3" },
	{ "sources:\n  demo:\n    verify:\n      kind: x\n"
	  "    sinks:\n      - type: log\n",
	  "sources.demo.verify.kind is not a known key, line 4" },
	{ "sources:\n  demo:\n    sinks:\n      - type: http\n"
	  "        url: http://x\n        nope: 1\n",
	  "sources.demo.sinks[0].nope is not a known key, line 6" },
	{ "sources:\n  demo:\n    sinks:\n      - type: log\n"
	  "        url: http://x\n",
	  "sources.demo.sinks[0].url is not a known key for sink type log, "
	  "line 5" },
	/* values */
	{ "http:\n  port: 70000\n" SRC,
	  "http.port must be an integer in 0..65535, got 70000, line 2" },
	{ "http:\n  port: -1\n" SRC,
	  "http.port must be an integer in 0..65535, got -1, line 2" },
	{ "log:\n  level: loud\n" SRC,
	  "log.level must be one of error, warning, info, debug, got loud, "
	  "line 2" },
	{ "http:\n  routing: host\n" SRC,
	  "http.routing must be one of path, tenant_path, got host, line 2" },
	{ "http:\n  workers: 65\n" SRC,
	  "http.workers must be an integer in 1..64, got 65, line 2" },
	{ "http:\n  header_timeout_ms: 0\n" SRC,
	  "http.header_timeout_ms must be an integer in 1..3600000, got 0, "
	  "line 2" },
	{ "http:\n  min_body_rate: 0\n" SRC,
	  "http.min_body_rate must be an integer in 1..1073741824, got 0, "
	  "line 2" },
	{ "attempts:\n  capture_bytes: 65537\n" SRC,
	  "attempts.capture_bytes must be an integer in 0..65536, got 65537, "
	  "line 2" },
	{ "attempts:\n  max_per_row: 100001\n" SRC,
	  "attempts.max_per_row must be an integer in 0..100000, got 100001, "
	  "line 2" },
	{ "retention:\n  attempts_s: -1\n" SRC,
	  "retention.attempts_s must be an integer in 0..3153600000, got -1, "
	  "line 2" },
	{ "http:\n  max_conns_per_ip: 4097\n" SRC,
	  "http.max_conns_per_ip must be an integer in 1..4096, got 4097, "
	  "line 2" },
	{ "http:\n  max_buffered_bytes: 0\n" SRC,
	  "http.max_buffered_bytes must be an integer in 1..68719476736, "
	  "got 0, line 2" },
	{ "http:\n  ip: localhost\n" SRC,
	  "http.ip must be an IPv4 or IPv6 address, got localhost, line 2" },
	{ "http:\n  prefix: hooks\n" SRC,
	  "http.prefix must be a path starting with / and not ending with / "
	  "(or just /), got hooks, line 2" },
	{ "http:\n  prefix: /hooks/\n" SRC,
	  "http.prefix must be a path starting with / and not ending with / "
	  "(or just /), got /hooks/, line 2" },
	{ "admin:\n  enabled: maybe\n" SRC,
	  "admin.enabled must be true or false, got maybe, line 2" },
	{ "control:\n  mode: \"0968\"\n" SRC,
	  "control.mode must be an octal mode in 0000..0777, got 0968, "
	  "line 2" },
	{ "http:\n  port: 1\n  port: 2\n" SRC,
	  "http.port is set twice, line 3" },
	{ "http: [1, 2]\n" SRC, "http must be a map, got a list, line 1" },
	{ "http:\n  port: {a: 1}\n" SRC,
	  "http.port must be an integer in 0..65535, got a map, line 2" },
	{ "node:\n  data_dir: \"\"\n" SRC,
	  "node.data_dir must be a non-empty string, got \"\", line 2" },
	{ "rate_limits:\n  default: {rate: 5}\n" SRC,
	  "rate_limits.default.burst is required, line 2" },
	{ "rate_limits:\n  default: {rate: 0, burst: 1}\n" SRC,
	  "rate_limits.default.rate must be a number greater than 0 and at "
	  "most 1000000000, got 0, line 2" },
	{ "rate_limits:\n  tenants:\n    \"a b\": {rate: 1, burst: 1}\n" SRC,
	  "rate_limits.tenants keys must be ids matching [A-Za-z0-9_-]{1,64}, "
	  "got a b, line 3" },
	{ "dispatch:\n  breaker_failures: -1\n" SRC,
	  "dispatch.breaker_failures must be an integer in 0..1000000, got -1, "
	  "line 2" },
	/* sources and sinks */
	{ "http:\n  port: 1\n", "sources is required, line 1" },
	{ "sources: {}\n",
	  "sources must be a map of at least one source, got an empty map, "
	  "line 1" },
	{ "sources:\n  \"bad.id\":\n    sinks: [{type: log}]\n",
	  "sources keys must be ids matching [A-Za-z0-9_-]{1,64}, got bad.id, "
	  "line 2" },
	{ "sources:\n  demo:\n    tenant: \"a/b\"\n    sinks: [{type: log}]\n",
	  "sources.demo.tenant must be an id matching [A-Za-z0-9_-]{1,64}, "
	  "got a/b, line 3" },
	{ "sources:\n  demo:\n    tenant: x\n",
	  "sources.demo.sinks is required, line 3" },
	{ "sources:\n  demo:\n    sinks: []\n",
	  "sources.demo.sinks must be a list of at least one sink, got an "
	  "empty list, line 3" },
	{ "sources:\n  demo:\n    sinks:\n      - url: http://x\n",
	  "sources.demo.sinks[0].type is required, line 4" },
	{ "sources:\n  demo:\n    sinks:\n      - type: http\n",
	  "sources.demo.sinks[0].url is required for sink type http, line 4" },
	{ "sources:\n  demo:\n    sinks:\n      - type: http\n"
	  "        url: ftp://x/\n",
	  "sources.demo.sinks[0].url must be an http:// or https:// URL, "
	  "got ftp://x/, line 5" },
	{ "sources:\n  demo:\n    sinks:\n      - type: http\n"
	  "        url: http://x/\n        method: get\n",
	  "sources.demo.sinks[0].method must be one of post, put, patch, "
	  "got get, line 6" },
	{ "sources:\n  demo:\n    sinks:\n      - type: sqs\n"
	  "        queue_url: http://x/1/q\n"
	  "        max_message_bytes: 1048577\n",
	  "sources.demo.sinks[0].max_message_bytes must be an integer in "
	  "1..1048576, got 1048577, line 6" },
	/* kafka: its brokers, its sasl section, no proxy */
	{ "sources:\n  demo:\n    sinks:\n      - type: kafka\n"
	  "        brokers: \"k.test:9092,k2.test\"\n        topic: t\n",
	  "sources.demo.sinks[0].brokers[1] must be host:port or [v6]:port "
	  "with a port in 1..65535, got k2.test, line 5" },
	{ "sources:\n  demo:\n    sinks:\n      - type: kafka\n"
	  "        brokers: \" , \"\n        topic: t\n",
	  "sources.demo.sinks[0].brokers must be a list of hosts or one "
	  "string of them separated by commas, got none, line 5" },
	{ "sources:\n  demo:\n    sinks:\n      - type: kafka\n"
	  "        brokers: [\"10.1.2.3:9092\"]\n        topic: t\n",
	  "sources.demo.sinks[0].brokers must reach a public address or one "
	  "egress.allow covers, got 10.1.2.3 port 9092 (private), line 5" },
	{ "sources:\n  demo:\n    sinks:\n      - type: kafka\n"
	  "        brokers: [k.test:9092]\n",
	  "sources.demo.sinks[0].topic is required for sink type kafka, "
	  "line 4" },
	{ "sources:\n  demo:\n    sinks:\n      - type: kafka\n"
	  "        brokers: [k.test:9092]\n        topic: t\n"
	  "        sasl: {mechanism: gssapi, username: u, password: p}\n",
	  "sources.demo.sinks[0].sasl.mechanism must be one of plain, "
	  "scram_sha_256, scram_sha_512, got gssapi, line 7" },
	{ "sources:\n  demo:\n    sinks:\n      - type: kafka\n"
	  "        brokers: [k.test:9092]\n        topic: t\n"
	  "        sasl: {mechanism: plain, username: u}\n",
	  "sources.demo.sinks[0].sasl.password is required for sink type "
	  "kafka, line 7" },
	{ "sources:\n  demo:\n    sinks:\n      - type: kafka\n"
	  "        brokers: [k.test:9092]\n        topic: t\n"
	  "        proxy: http://p.test:3128\n",
	  "sources.demo.sinks[0].proxy is not a known key for sink type "
	  "kafka, line 7" },
	{ "sources:\n  demo:\n    sinks:\n      - type: google_pubsub\n"
	  "        project: p\n",
	  "sources.demo.sinks[0].topic is required for sink type "
	  "google_pubsub, line 4" },
	{ "sources:\n  demo:\n    sinks:\n      - type: google_pubsub\n"
	  "        project: p\n        topic: t\n        auth: token\n",
	  "sources.demo.sinks[0].token is required with auth token, line 4" },
	{ "sources:\n  demo:\n    sinks:\n      - type: nats\n"
	  "        servers: [\"nats://u:p@h:1\"]\n        subject: s\n",
	  "sources.demo.sinks[0].servers[0] must be nats://host:port, "
	  "tls://host:port or host:port, got a server with credentials "
	  "(use auth), line 5" },
	{ "sources:\n  demo:\n    sinks:\n      - type: nats\n"
	  "        servers: [\"h:99999\"]\n        subject: s\n",
	  "sources.demo.sinks[0].servers[0] must be nats://host:port, "
	  "tls://host:port or host:port, got h:99999, line 5" },
	{ "sources:\n  demo:\n    sinks:\n      - type: nats\n"
	  "        servers: [h]\n",
	  "sources.demo.sinks[0].subject is required for sink type nats, "
	  "line 4" },
	{ "sources:\n  demo:\n    sinks:\n      - type: nats\n"
	  "        servers: [h]\n        subject: s\n"
	  "        auth: {username: u, password: p, token: t}\n",
	  "sources.demo.sinks[0].auth must hold exactly one of {username, "
	  "password}, {token} or {nkey_seed, jwt}, got 2, line 7" },
	{ "sources:\n  demo:\n    sinks:\n      - type: nats\n"
	  "        servers: [h]\n        subject: s\n"
	  "        auth: {username: u}\n",
	  "sources.demo.sinks[0].auth.username and password go together, "
	  "line 7" },
	{ "sources:\n  demo:\n    sinks:\n      - type: nats\n"
	  "        servers: [h]\n        subject: s\n"
	  "        auth: {nkey_seed: SUAB}\n",
	  "sources.demo.sinks[0].auth.nkey_seed must be a user NKey's seed "
	  "(SU..., 58 characters), line 7" },
	{ "sources:\n  demo:\n    sinks:\n      - type: nats\n"
	  "        servers: [h]\n        subject: s\n"
	  "        auth: {jwt: j}\n",
	  "sources.demo.sinks[0].auth.jwt needs nkey_seed, line 7" },
	{ "sources:\n  demo:\n    sinks:\n      - type: nats\n"
	  "        servers: [h]\n        subject: s\n"
	  "        proxy: http://p:3128\n",
	  "sources.demo.sinks[0].proxy is not a known key for sink type "
	  "nats, line 7" },
	{ "sources:\n  demo:\n    sinks:\n      - type: log\n"
	  "        order_key: {header: x-k}\n",
	  "sources.demo.sinks[0].ordered must be true when order_key is set, "
	  "got false, line 5" },
	{ "sources:\n  demo:\n    sinks:\n      - type: log\n"
	  "        ordered: true\n        order_key: {header: x-k, json: a}\n",
	  "sources.demo.sinks[0].order_key.json must not be set together with "
	  "header, line 6" },
	{ "sources:\n  demo:\n    event_type: {header: x-k, json: a}\n"
	  "    sinks: [{type: log}]\n",
	  "sources.demo.event_type.json must not be set together with "
	  "header, line 3" },
	{ "sources:\n  demo:\n    event_type: {}\n"
	  "    sinks: [{type: log}]\n",
	  "sources.demo.event_type must have one of header, json, got none, "
	  "line 3" },
	{ "sources:\n  demo:\n    sinks:\n      - type: log\n"
	  "        filter: {event_types: [a], jq: 'true'}\n",
	  "sources.demo.sinks[0].filter must have one of event_types, jq, "
	  "got more, line 5" },
	{ "sources:\n  demo:\n    sinks:\n      - type: log\n"
	  "        filter: {}\n",
	  "sources.demo.sinks[0].filter must have one of event_types, jq, "
	  "got none, line 5" },
	{ "sources:\n  demo:\n    sinks:\n      - type: log\n"
	  "        filter: {event_types: []}\n",
	  "sources.demo.sinks[0].filter.event_types must list at least one "
	  "event type, line 5" },
	{ "sources:\n  demo:\n    sinks:\n      - type: log\n"
	  "        filter: {event_types: [a, '*.paid']}\n",
	  "sources.demo.sinks[0].filter.event_types: \"*.paid\" is no event "
	  "type: a name, or a prefix and one * at its end, line 5" },
	{ "sources:\n  demo:\n    sinks:\n      - type: log\n"
	  "        filter: {jq: '.a | | .b'}\n",
	  "sources.demo.sinks[0].filter.jq does not compile: syntax error, "
	  "unexpected '|' (Unix shell quoting issues?) at <top-level>, "
	  "line 1:, line 5" },
	{ "sources:\n  demo:\n    sinks:\n      - type: log\n"
	  "        filter: {jq: 'nosuchfn(1)'}\n",
	  "sources.demo.sinks[0].filter.jq does not compile: nosuchfn/1 is "
	  "not defined at <top-level>, line 1:, line 5" },
	{ "sources:\n  demo:\n    verify: {type: github}\n"
	  "    sinks: [{type: log}]\n",
	  "sources.demo.verify.secret is required for verify type github, "
	  "line 3" },
	{ "sources:\n  demo:\n    verify: {type: hmac, secret: k, signed: x}\n"
	  "    sinks: [{type: log}]\n",
	  "sources.demo.verify.signature_header is required for verify type "
	  "hmac, line 3" },
	{ "sources:\n  demo:\n    verify: {type: github, secret: k, "
	  "hash: sha1}\n    sinks: [{type: log}]\n",
	  "sources.demo.verify.hash is only valid with verify type hmac, not "
	  "github, line 3" },
	{ "sources:\n  demo:\n    verify: {secret: k}\n"
	  "    sinks: [{type: log}]\n",
	  "sources.demo.verify.secret must not be set with verify type none, "
	  "line 3" },
	{ "sources:\n  demo:\n    on_verify_failure: drop\n"
	  "    sinks: [{type: log}]\n",
	  "sources.demo.on_verify_failure must be one of reject, quarantine, "
	  "accept_flag, got drop, line 3" },
	{ "sources:\n  demo:\n    dedupe: acme\n    sinks: [{type: log}]\n",
	  "sources.demo.dedupe must be one of github, standard_webhooks, svix, "
	  "shopify, stripe, got acme, line 3" },
	{ "sources:\n  demo:\n    dedupe: {ttl_seconds: 5}\n"
	  "    sinks: [{type: log}]\n",
	  "sources.demo.dedupe must have one of preset, header, json, got "
	  "none, line 3" },
	{ "sources:\n  demo:\n    forward_headers: [\"bad header\"]\n"
	  "    sinks: [{type: log}]\n",
	  "sources.demo.forward_headers[0] must be a header name, got "
	  "bad header, line 3" },
	{ "claim_check:\n  store: {type: s3}\n" SRC,
	  "claim_check.store.s3.bucket is required with store type s3, "
	  "line 2" },
	{ "claim_check:\n  port: 4001\n" SRC,
	  "claim_check.signing_key is required: claim references are signed "
	  "(v2); give at least 32 random bytes, e.g. the output of openssl "
	  "rand -base64 48, line 2" },
	{ "claim_check:\n  signing_key: 0123456789abcdef0123456789abcde\n" SRC,
	  "claim_check.signing_key must be at least 32 bytes, line 2" },
	{ "admin:\n  port: 4000\n" SRC,
	  "admin.port must differ from http.port, got 4000, line 2" },
	/* The egress guard on literal hosts. */
	{ "egress:\n  allow: [\"10.0.0.1/8\"]\n" SRC,
	  "egress.allow[0] must be an address or CIDR like 10.0.0.0/8, "
	  "127.0.0.1/32:8080 or [::1]/128:443, got 10.0.0.1/8, line 2" },
	{ "egress:\n  allow: [\"127.1\"]\n" SRC,
	  "egress.allow[0] must be an address or CIDR like 10.0.0.0/8, "
	  "127.0.0.1/32:8080 or [::1]/128:443, got 127.1, line 2" },
	{ "egress:\n  allow: \"127.0.0.0/8\"\n" SRC,
	  "egress.allow must be a list of addresses or CIDRs, each with an "
	  "optional :port, got 127.0.0.0/8, line 2" },
	/* replication */
	{ "replication:\n  peers: [\"a:1\"]\n" SRC,
	  "replication.local is required, line 2" },
	{ "replication:\n  local: \"10.0.0.1\"\n  peers: [\"a:1\"]\n" SRC,
	  "replication.local must be host:port (a name, an IPv4 address or "
	  "[IPv6], and a port 1-65535), got \"10.0.0.1\", line 2" },
	{ "replication:\n  local: \"a:70000\"\n  peers: [\"b:1\"]\n" SRC,
	  "replication.local must be host:port (a name, an IPv4 address or "
	  "[IPv6], and a port 1-65535), got \"a:70000\", line 2" },
	{ "replication:\n  local: \"::1:7\"\n  peers: [\"b:1\"]\n" SRC,
	  "replication.local must be host:port (a name, an IPv4 address or "
	  "[IPv6], and a port 1-65535), got \"::1:7\", line 2" },
	{ "replication:\n  local: \"[127.0.0.1]:7001\"\n  peers: [\"b:1\"]\n" SRC,
	  "replication.local must be host:port (a name, an IPv4 address or "
	  "[IPv6], and a port 1-65535), got \"[127.0.0.1]:7001\", line 2" },
	{ "replication:\n  local: \"300.1.1.1:7001\"\n  peers: [\"b:1\"]\n" SRC,
	  "replication.local must be host:port (a name, an IPv4 address or "
	  "[IPv6], and a port 1-65535), got \"300.1.1.1:7001\", line 2" },
	{ "replication:\n  local: \"-bad.test:7001\"\n  peers: [\"b:1\"]\n" SRC,
	  "replication.local must be host:port (a name, an IPv4 address or "
	  "[IPv6], and a port 1-65535), got \"-bad.test:7001\", line 2" },
	{ "replication:\n  local: \"a..b:7001\"\n  peers: [\"b:1\"]\n" SRC,
	  "replication.local must be host:port (a name, an IPv4 address or "
	  "[IPv6], and a port 1-65535), got \"a..b:7001\", line 2" },
	{ "replication:\n  local: \"a_b:7001\"\n  peers: [\"b:1\"]\n" SRC,
	  "replication.local must be host:port (a name, an IPv4 address or "
	  "[IPv6], and a port 1-65535), got \"a_b:7001\", line 2" },
	{ "replication:\n  local: \"[::1]:7001\"\n"
	  "  peers: [\"[0:0::1]:7001\"]\n" SRC,
	  "replication.peers[0] is replication.local ([::1]:7001): list the "
	  "other nodes only, line 3" },
	{ "replication:\n  local: \"a:1\"\n"
	  "  peers: [\"Node1.test:7001\", \"node1.TEST:7001\"]\n" SRC,
	  "replication.peers[1] repeats replication.peers[0] "
	  "(node1.TEST:7001), line 3" },
	{ "replication:\n  local: \"a:1\"\n  peers: [\"b:1\", \"[::1]x\"]\n"
	  SRC, "replication.peers[1] must be host:port, got \"[::1]x\", "
	  "line 3" },
	{ "replication:\n  local: \"a:1\"\n  peers: [\"b:1\", \"a:1\"]\n" SRC,
	  "replication.peers[1] is replication.local (a:1): list the other "
	  "nodes only, line 3" },
	{ "replication:\n  local: \"a:1\"\n  peers: [\"b:1\", \"b:1\"]\n" SRC,
	  "replication.peers[1] repeats replication.peers[0] (b:1), line 3" },
	{ "replication:\n  local: \"a:1\"\n" SRC,
	  "replication.peers must list the other nodes of the group (empty "
	  "only with replication.create: true, the first node of a new "
	  "group), line 2" },
	{ "replication:\n  local: \"a:1\"\n  create: true\n"
	  "  ack_policy: most\n" SRC,
	  "replication.ack_policy must be one of quorum, all, got most, "
	  "line 4" },
	{ "replication:\n  local: \"a:1\"\n  create: true\n"
	  "  priority: 10001\n" SRC,
	  "replication.priority must be an integer in 0..10000, got 10001, "
	  "line 4" },
	{ "replication:\n  local: \"a:1\"\n  create: true\n"
	  "  heartbeat_ms: 2000\n" SRC,
	  "replication.heartbeat_timeout_ms must exceed "
	  "replication.heartbeat_ms (2000), got 2000, line 2" },
	{ "replication:\n  local: \"a:1\"\n  create: true\n"
	  "  ack_timeout_ms: 0\n" SRC,
	  "replication.ack_timeout_ms must be an integer in 1..60000, got 0, "
	  "line 4" },
	{ "egress:\n  allow_plain_http: maybe\n" SRC,
	  "egress.allow_plain_http must be true or false, got maybe, line 2" },
	{ EGH "\"http://127.0.0.1:9/\"\n",
	  "sources.demo.sinks[0].url must reach a public address or one "
	  "egress.allow covers, got 127.0.0.1 port 9 (loopback), line 5" },
	{ EGH "\"https://[::1]/\"\n",
	  "sources.demo.sinks[0].url must reach a public address or one "
	  "egress.allow covers, got ::1 port 443 (loopback), line 5" },
	{ EGH "\"http://169.254.169.254/latest\"\n",
	  "sources.demo.sinks[0].url must reach a public address or one "
	  "egress.allow covers, got 169.254.169.254 port 80 (link-local), "
	  "line 5" },
	{ EGH "\"http://[::ffff:10.1.2.3]:8080/\"\n",
	  "sources.demo.sinks[0].url must reach a public address or one "
	  "egress.allow covers, got ::ffff:10.1.2.3 port 8080 (private), "
	  "line 5" },
	{ "egress:\n  allow: [\"127.0.0.1/32:8080\"]\n"
	  EGH "\"http://127.0.0.1:8081/\"\n",
	  "sources.demo.sinks[0].url must reach a public address or one "
	  "egress.allow covers, got 127.0.0.1 port 8081 (loopback), line 7" },
	{ EGH "\"http://2130706433/\"\n",
	  "sources.demo.sinks[0].url must have a name or an address in "
	  "standard form (a.b.c.d or [v6]) as its host, got 2130706433, "
	  "line 5" },
	{ EGH "\"http://0127.0.0.1/\"\n",
	  "sources.demo.sinks[0].url must have a name or an address in "
	  "standard form (a.b.c.d or [v6]) as its host, got 0127.0.0.1, "
	  "line 5" },
	{ EGH "\"http://sink.test:0/\"\n",
	  "sources.demo.sinks[0].url must be an http:// or https:// URL with "
	  "a host (no %) and a port in 1..65535, line 5" },
	{ "egress:\n  allow: [\"10.0.0.0/8\"]\n  allow_plain_http: false\n"
	  EGH "\"http://10.0.0.1/\"\n",
	  "sources.demo.sinks[0].url must be https:// to reach a non-loopback "
	  "address with egress.allow_plain_http false, got http:// to "
	  "10.0.0.1, line 8" },
	{ "egress:\n  allow_plain_http: false\n"
	  EGH "\"http://8.8.8.8/\"\n",
	  "sources.demo.sinks[0].url must be https:// to reach a non-loopback "
	  "address with egress.allow_plain_http false, got http:// to "
	  "8.8.8.8, line 7" },
	{ "sources:\n  demo:\n    sinks:\n      - type: sqs\n"
	  "        queue_url: \"http://192.168.0.5/1/q\"\n",
	  "sources.demo.sinks[0].queue_url must reach a public address or one "
	  "egress.allow covers, got 192.168.0.5 port 80 (private), line 5" },
	{ "sources:\n  demo:\n    sinks:\n      - type: sqs\n"
	  "        queue_url: \"https://sqs.test/1/q\"\n"
	  "        endpoint: \"http://100.64.0.1:4566\"\n",
	  "sources.demo.sinks[0].endpoint must reach a public address or one "
	  "egress.allow covers, got 100.64.0.1 port 4566 (carrier-grade NAT), "
	  "line 6" },
	{ "sources:\n  demo:\n    sinks:\n      - type: google_pubsub\n"
	  "        project: p\n        topic: t\n        auth: none\n"
	  "        endpoint: \"http://[fe80::1]:8085\"\n",
	  "sources.demo.sinks[0].endpoint must reach a public address or one "
	  "egress.allow covers, got fe80::1 port 8085 (link-local), line 8" },
	{ "claim_check:\n  store:\n    type: s3\n"
	  "    s3: {bucket: b, endpoint: \"http://127.0.0.1:9000\"}\n" SRC,
	  "claim_check.store.s3.endpoint must reach a public address or one "
	  "egress.allow covers, got 127.0.0.1 port 9000 (loopback), line 4" },
	/* issue 36: the ingest edge's keys */
	{ "http:\n  ipv6_prefix: 8\n" SRC,
	  "http.ipv6_prefix must be an integer in 16..128, got 8, line 2" },
	{ "http:\n  trusted_proxies: [\"10.0.0.1:80\"]\n" SRC,
	  "http.trusted_proxies[0] must be an address or CIDR without a "
	  "port, got 10.0.0.1:80, line 2" },
	{ "http:\n  tls:\n    cert_file: /c\n" SRC,
	  "http.tls.key_file is required with http.tls.cert_file, line 3" },
	{ "http:\n  port: 4443\n  tls: {cert_file: /c, key_file: /k}\n" SRC,
	  "http.tls.port must differ from http.port, got 4443, line 3" },
	{ "http:\n  tls:\n    min_version: \"1.1\"\n" SRC,
	  "http.tls.min_version must be one of 1.2, 1.3, got 1.1, line 3" },
	{ "http:\n  tls: {cert_file: /c, key_file: /k, client_ca_file: /a}\n"
	  "sources:\n  demo:\n    verify: {type: mtls, secret: x, san: a}\n"
	  "    sinks:\n      - type: log\n",
	  "sources.demo.verify.secret must not be set with verify type mtls, "
	  "line 5" },
	{ "http:\n  tls: {cert_file: /c, key_file: /k, client_ca_file: /a}\n"
	  "sources:\n  demo:\n    verify: {type: mtls}\n"
	  "    sinks:\n      - type: log\n",
	  "sources.demo.verify needs subject, san or fingerprint with verify "
	  "type mtls, line 5" },
	{ "http:\n  tls: {cert_file: /c, key_file: /k, client_ca_file: /a}\n"
	  "sources:\n  demo:\n    verify: {type: mtls, fingerprint: ab}\n"
	  "    sinks:\n      - type: log\n",
	  "sources.demo.verify.fingerprint must be a SHA-256 in hex (64 "
	  "digits, colons allowed), got ab, line 5" },
	{ "http:\n  tls: {cert_file: /c, key_file: /k, client_ca_file: /a}\n"
	  "sources:\n  demo:\n    verify: {type: mtls, san: a}\n"
	  "    on_verify_failure: quarantine\n    sinks:\n      - type: log\n",
	  "sources.demo.on_verify_failure must be reject or accept_flag with "
	  "verify type mtls (a held hook is verified again without its client "
	  "certificate), line 5" },
	{ "sources:\n  demo:\n    verify: {type: mtls, san: a}\n"
	  "    sinks:\n      - type: log\n",
	  "sources.demo.verify type mtls needs http.tls.client_ca_file (no "
	  "client is asked for a certificate without it), line 3" },
	{ "sources:\n  demo:\n    verify: {type: github, secret: x, san: a}\n"
	  "    sinks:\n      - type: log\n",
	  "sources.demo.verify.san is only valid with verify type mtls, not "
	  "github, line 3" },
	{ "sources:\n  demo:\n    verify: {type: slack, secret: x, "
	  "verify_token: t}\n    sinks:\n      - type: log\n",
	  "sources.demo.verify.verify_token is only valid with verify type "
	  "meta, not slack, line 3" },
	{ "sources:\n  demo:\n    verify: {type: zoom}\n"
	  "    sinks:\n      - type: log\n",
	  "sources.demo.verify.secret is required for verify type zoom, "
	  "line 3" },
	/* retry schedules: non-empty, each step >= 1, at most 64, not with
	 * base_ms or max_ms in one section */
	{ "dispatch:\n  retry: {schedule_ms: []}\n" SRC,
	  "dispatch.retry.schedule_ms must be a list of 1..64 integers, each "
	  "in 1..86400000, got a list, line 2" },
	{ "dispatch:\n  retry: {schedule_ms: [10, 0]}\n" SRC,
	  "dispatch.retry.schedule_ms[1] must be an integer in 1..86400000, "
	  "got 0, line 2" },
	{ "dispatch:\n  retry: {schedule_ms: [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
	  "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
	  "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}\n" SRC,
	  "dispatch.retry.schedule_ms must be a list of 1..64 integers, each "
	  "in 1..86400000, got a list, line 2" },
	{ "sources:\n  demo:\n    retry: {base_ms: 5, schedule_ms: [1]}\n"
	  "    sinks:\n      - type: log\n",
	  "sources.demo.retry.schedule_ms and sources.demo.retry.base_ms "
	  "exclude each other, line 3" },
	{ "sources:\n  demo:\n    sinks:\n      - type: log\n"
	  "        rate: {burst: 2}\n",
	  "sources.demo.sinks[0].rate.per_second is required for sink type "
	  "log, line 5" },
	{ "sources:\n  demo:\n    sinks:\n      - type: log\n"
	  "        rate: {per_second: 0}\n",
	  "sources.demo.sinks[0].rate.per_second must be a number greater "
	  "than 0 and at most 1000000, got 0, line 5" },
	/* destination auth, tls, proxies (conf_sinknet.c) */
	{ HS "        auth: {type: bearer}\n",
	  "sources.demo.sinks[0].auth.token is required with this auth type, "
	  "line 6" },
	{ HS "        auth: {type: basic, username: a, password: b, "
	  "token: c}\n",
	  "sources.demo.sinks[0].auth.token must not be set with auth type "
	  "basic, line 6" },
	{ HS "        auth: {type: basic, username: \"a:b\", password: c}\n",
	  "sources.demo.sinks[0].auth.username must not hold a colon, "
	  "line 6" },
	{ HS "        auth: {type: oauth2_client_credentials, client_id: a, "
	  "client_secret: b}\n",
	  "sources.demo.sinks[0].auth.token_url is required with this auth "
	  "type, line 6" },
	{ HS "        auth: {type: digest}\n",
	  "sources.demo.sinks[0].auth.type must be one of none, bearer, "
	  "basic, oauth2_client_credentials, got digest, line 6" },
	{ HS "        auth: {type: oauth2_client_credentials, client_id: a, "
	  "client_secret: b, token_url: \"http://10.0.0.1/t\"}\n",
	  "sources.demo.sinks[0].auth.token_url must reach a public address "
	  "or one egress.allow covers, got 10.0.0.1 port 80 (private), "
	  "line 6" },
	{ HS "        auth: {type: oauth2_client_credentials, client_id: a, "
	  "client_secret: b, token_url: \"http://idp.test/t\"}\n",
	  "sources.demo.sinks[0].auth.token_url must be https:// (plain http "
	  "reaches the loopback only, with a client secret on board), got "
	  "http://idp.test/t, line 6" },
	{ HS "        tls: {client_cert_file: /nonexistent/c.pem}\n",
	  "sources.demo.sinks[0].tls.client_cert_file and client_key_file go "
	  "together, line 6" },
	{ HS "        tls: {ca_file: /nonexistent/ca.pem}\n",
	  "sources.demo.sinks[0].tls.ca_file: cannot read /nonexistent/ca.pem: "
	  "No such file or directory, line 6" },
	{ "sources:\n  demo:\n    sinks:\n      - type: http\n"
	  "        url: \"http://sink.test/\"\n"
	  "        tls: {server_name: a.test}\n",
	  "sources.demo.sinks[0].tls needs an https:// url, line 6" },
	{ HS "        tls: {ca_file: relative.pem}\n",
	  "sources.demo.sinks[0].tls.ca_file must be an absolute path, got "
	  "relative.pem, line 6" },
	{ HS "        proxy: \"https://proxy.test:3128\"\n",
	  "sources.demo.sinks[0].proxy must be http://[user:pass@]host[:port] "
	  "with nothing after the port, got https://proxy.test:3128, line 6" },
	{ HS "        proxy: \"http://u:p@proxy.test:3128/x\"\n",
	  "sources.demo.sinks[0].proxy must be http://[user:pass@]host[:port] "
	  "with nothing after the port, got a URL with credentials, line 6" },
	{ HS "        proxy: \"http://192.168.1.1:3128\"\n",
	  "sources.demo.sinks[0].proxy must reach a public address or one "
	  "egress.allow covers, got 192.168.1.1 port 3128 (private), line 6" },
	{ "egress:\n  proxy: \"http://2130706433:3128\"\n" SRC,
	  "egress.proxy must have a name or an address in standard form "
	  "(a.b.c.d or [v6]) as its host, got 2130706433, line 2" },
	{ "egress:\n  allow: [\"10.0.0.0/8\"]\n  allow_plain_http: false\n"
	  "  proxy: \"http://10.1.1.1:3128\"\n" SRC
	  "      - {type: http, url: \"https://sink.test/\", "
	  "proxy: \"http://[::1]:1\"}\n",
	  "sources.demo.sinks[1].proxy must reach a public address or one "
	  "egress.allow covers, got ::1 port 1 (loopback), line 9" },
	{ "egress:\n  no_proxy: [\"a..b\"]\n" SRC,
	  "egress.no_proxy[0] must be a host name, .suffix, address, CIDR or "
	  "*, got a..b, line 2" },
	{ "sources:\n  demo:\n    sinks:\n      - type: log\n"
	  "        proxy: \"http://p.test:1\"\n",
	  "sources.demo.sinks[0].proxy is not a known key for sink type log, "
	  "line 5" },
	{ "sources:\n  demo:\n    sinks:\n      - type: http\n"
	  "        url: http://x/\n        disable_on: [410, 99]\n",
	  "sources.demo.sinks[0].disable_on[1] must be an HTTP status in "
	  "100..599, got 99, line 6" },
	{ "sources:\n  demo:\n    sinks:\n      - type: http\n"
	  "        url: http://x/\n        disable_on: 410\n",
	  "sources.demo.sinks[0].disable_on must be a list of HTTP statuses "
	  "in 100..599, got 410, line 6" },
	{ "sources:\n  demo:\n    sinks:\n      - type: log\n"
	  "        disable_on: [410]\n",
	  "sources.demo.sinks[0].disable_on is not a known key for sink type "
	  "log, line 5" },
	{ "sources:\n  _notifications:\n    sinks:\n      - type: log\n",
	  "sources._notifications: the source _notifications and the tenant "
	  "_ankusa are reserved for the notifications, line 2" },
	{ "sources:\n  demo:\n    tenant: _ankusa\n    sinks:\n"
	  "      - type: log\n",
	  "sources.demo: the source _notifications and the tenant _ankusa are "
	  "reserved for the notifications, line 2" },
	{ SRC "notifications:\n  sinks: []\n",
	  "notifications.sinks must be a list of at least one sink, got an "
	  "empty list, line 6" },
	{ SRC "notifications:\n  sinks:\n      - type: http\n",
	  "notifications.sinks[0].url is required for sink type http, "
	  "line 7" },
};

START_TEST(test_errors)
{
	expect_err(errs_tab[_i].yaml, errs_tab[_i].msg);
}
END_TEST

/* Every error is collected, not just the first. */
START_TEST(test_all_errors)
{
	struct conf_errors e = { NULL, 0 };

	ck_assert_ptr_null(parse("http:\n  port: x\n  workers: 0\n"
	    "log:\n  level: loud\nbogus: 1\n" SRC, &e));
	ck_assert_int_eq(e.n, 4);
	ck_assert_str_eq(e.msgs[0],
	    "http.port must be an integer in 0..65535, got x, line 2");
	ck_assert_str_eq(e.msgs[3], "bogus is not a known key, line 6");
	conf_errors_free(&e);
	ck_assert_int_eq(e.n, 0);
}
END_TEST

START_TEST(test_not_yaml)
{
	struct conf_errors e = { NULL, 0 };
	const char *m;

	ck_assert_ptr_null(parse("http:\n  port: [1\n", &e));
	ck_assert_int_eq(e.n, 1);
	m = e.msgs[0];
	ck_assert_msg(strncmp(m, "test.yml is not valid YAML: ", 28) == 0, "%s",
	    m);
	ck_assert_ptr_nonnull(strstr(m, ", line "));
	conf_errors_free(&e);

	ck_assert_ptr_null(parse("a: b: c\n", &e));
	ck_assert_int_eq(e.n, 1);
	ck_assert_str_eq(e.msgs[0], "test.yml is not valid YAML: mapping "
	    "values are not allowed in this context, line 1");
	conf_errors_free(&e);

	expect_err("- a\n- b\n", "test.yml must be a map at the top level, got "
	    "a list, line 1");
	expect_err("just a string\n", "test.yml must be a map at the top "
	    "level, got a string, line 1");
	expect_err("", "test.yml must be a map with at least a sources key, "
	    "got an empty document");
	expect_err("# only a comment\n", "test.yml must be a map with at least "
	    "a sources key, got an empty document");
	expect_err(SRC "---\n" SRC, "test.yml must hold one YAML document, got "
	    "more, line 5");
}
END_TEST

START_TEST(test_unknown_sink_type)
{
	expect_err("sources:\n  demo:\n    sinks:\n      - type: log\n"
	    "      - type: carrier_pigeon\n",
	    "sources.demo.sinks[1].type must be one of http, sqs, "
	    "google_pubsub, log, rabbitmq, nats, redis, kafka, got "
	    "carrier_pigeon, line 5");
}
END_TEST

/* The rabbitmq sink's keys, their defaults and the url's checks. */
START_TEST(test_rabbitmq_sink)
{
	struct conf *cf;
	const struct sink_conf *k;

	cf = parse_ok("egress:\n  allow: [127.0.0.0/8]\nsources:\n  demo:\n"
	    "    sinks:\n"
	    "      - {type: rabbitmq, url: \"amqp://127.0.0.1:5999/\", "
	    "exchange: hooks}\n"
	    "      - {type: rabbitmq, url: \"amqps://u:p@mq.example/v\", "
	    "exchange: e, exchange_type: fanout, routing_key: k, "
	    "max_inflight: 16, inline_max_bytes: 1024}\n");
	k = &cf->sources[0].sinks[0];
	ck_assert_int_eq(k->type, SINK_RABBITMQ);
	ck_assert_str_eq(k->u.rabbitmq.exchange, "hooks");
	ck_assert_str_eq(k->u.rabbitmq.exchange_type, "topic");
	ck_assert_ptr_null(k->u.rabbitmq.routing_key);
	ck_assert_uint_eq(k->u.rabbitmq.max_inflight, 256);
	ck_assert_uint_eq(k->inline_max_bytes, 65536);
	ck_assert_uint_eq(k->timeout_ms, 5000);
	k = &cf->sources[0].sinks[1];
	ck_assert_str_eq(k->u.rabbitmq.exchange_type, "fanout");
	ck_assert_str_eq(k->u.rabbitmq.routing_key, "k");
	ck_assert_uint_eq(k->u.rabbitmq.max_inflight, 16);
	ck_assert_uint_eq(k->inline_max_bytes, 1024);
	ck_assert_str_eq(conf_sink_type_name(SINK_RABBITMQ), "rabbitmq");
	conf_free(cf);

	expect_err("sources:\n  demo:\n    sinks:\n"
	    "      - {type: rabbitmq, url: \"http://h/\", exchange: e}\n",
	    "sources.demo.sinks[0].url must be an amqp:// or amqps:// URL: "
	    "not an amqp:// or amqps:// URL, line 4");
	expect_err("sources:\n  demo:\n    sinks:\n"
	    "      - {type: rabbitmq, url: \"amqp://h:0/\", exchange: e}\n",
	    "sources.demo.sinks[0].url must be an amqp:// or amqps:// URL: "
	    "a port not in 1..65535, line 4");
	expect_err("sources:\n  demo:\n    sinks:\n"
	    "      - {type: rabbitmq, url: \"amqp://h/\"}\n",
	    "sources.demo.sinks[0].exchange is required for sink type "
	    "rabbitmq, line 4");
	expect_err("sources:\n  demo:\n    sinks:\n"
	    "      - {type: rabbitmq, url: \"amqp://h/\", exchange: e, "
	    "exchange_type: x}\n",
	    "sources.demo.sinks[0].exchange_type must be one of topic, "
	    "direct, fanout, headers, got x, line 4");
	expect_err("sources:\n  demo:\n    sinks:\n"
	    "      - {type: rabbitmq, url: \"amqp://h/\", exchange: \"\"}\n",
	    "sources.demo.sinks[0].exchange must be a non-empty string, got "
	    "\"\", line 4");
	/* The egress guard on a literal address, as for an http url. */
	expect_err("sources:\n  demo:\n    sinks:\n"
	    "      - {type: rabbitmq, url: \"amqp://10.1.2.3/\", "
	    "exchange: e}\n", "sources.demo.sinks[0].url must reach a public "
	    "address or one egress.allow covers, got 10.1.2.3 port 5672 "
	    "(private), line 4");
}
END_TEST

/*
 * The Elixir Ankusa's keys: accepted at the values this daemon runs with,
 * refused with a line naming them where this build lacks the feature.
 */

static const char *const elixir_ok[] = {
	"node:\n  roles: [edge, dispatch, storage]\n",
	"node:\n  roles: [claim_check, storage, dispatch, edge]\n",
	"node:\n  roles:\n    - edge\n    - edge\n    - dispatch\n"
	    "    - storage\n",
	"wal:\n  type: disk\n",
	"source_store:\n  type: static\n",
	"routes:\n  enabled: false\n",
	"routes:\n  enabled: no\n",
	"backup:\n  enabled: false\n",
	"batcher:\n  partitions: 8\n",
	"admin:\n  gauge_interval_ms: 15000\n",
	"wal: {}\nroutes:\nbackup: {}\nsource_store: {}\n",
};

START_TEST(test_elixir_ok)
{
	char y[1024];

	snprintf(y, sizeof(y), "%s%s", elixir_ok[_i], SRC);
	conf_free(parse_ok(y));
}
END_TEST

static const struct {
	const char	*yaml;
	const char	*msg;
} elixir_refused[] = {
	{ "node:\n  roles: [edge]\n",
	  "node.roles: a node without dispatch, storage is not supported by "
	  "this build: it runs every role (edge, dispatch, storage) in one "
	  "node, line 2" },
	{ "node:\n  roles: [claim_check]\n",
	  "node.roles: a node without edge, dispatch, storage is not "
	  "supported by this build: it runs every role (edge, dispatch, "
	  "storage) in one node, line 2" },
	{ "node:\n  roles: [edge, dispatch, storage, ingest]\n",
	  "node.roles must be a list of edge, dispatch, storage, claim_check, "
	  "got ingest, line 2" },
	{ "node:\n  roles: edge\n",
	  "node.roles must be a list of edge, dispatch, storage, claim_check, "
	  "got edge, line 2" },
	{ "wal:\n  type: none\n",
	  "wal.type: none is not supported by this build: every hook is "
	  "committed to this node's store before its 201, line 2" },
	{ "wal:\n  type: disc\n",
	  "wal.type must be one of disk, got disc, line 2" },
	{ "wal:\n  type: disk\n  publish_timeout_ms: 8000\n",
	  "wal.publish_timeout_ms is not supported by this build: it applies "
	  "to wal.type none, line 3" },
	{ "routes:\n  enabled: true\n",
	  "routes.enabled: true is not supported by this build: every POST "
	  "to a source's URL is captured, line 2" },
	{ "routes:\n  enabled: false\n  max_routes: 10000\n",
	  "routes.max_routes is not supported by this build: route "
	  "management, line 3" },
	{ "routes:\n  store:\n    type: ets\n",
	  "routes.store is not supported by this build: route management, "
	  "line 2" },
	{ "backup:\n  enabled: true\n",
	  "backup.enabled: true is not supported by this build: ankusactl "
	  "backup DIR copies the running store, line 2" },
	{ "backup:\n  keep: 3\n",
	  "backup.keep is not supported by this build: ankusactl backup DIR "
	  "copies the running store, line 2" },
	{ "source_store:\n  type: redis\n",
	  "source_store.type: redis is not supported by this build: sources "
	  "come from this file only, line 2" },
	{ "source_store:\n  url: redis://x:6379\n",
	  "source_store.url is not supported by this build: sources come "
	  "from this file only, line 2" },
	{ "storage:\n  type: local\n",
	  "storage is not supported by this build: it keeps no segment "
	  "archive; claims go to claim_check.store, line 1" },
	{ "lifecycle:\n  sinks: [{type: log}]\n",
	  "lifecycle is not supported by this build: it publishes no "
	  "lifecycle events, line 1" },
	{ "claim_check:\n  store:\n    type: gcs\n",
	  "claim_check.store.type: gcs is not supported by this build, "
	  "line 3" },
	{ "claim_check:\n  store:\n    gcs: {bucket: b}\n",
	  "claim_check.store.gcs is not supported by this build: use a "
	  "local or s3 store, line 3" },
	/* Its WAL era's keys (a shared log, a polling dispatcher, a claim
	 * gateway with tokens): refused by name too. */
	{ "dispatch:\n  poll_ms: 200\n",
	  "dispatch.poll_ms is not supported by this build: dispatch wakes "
	  "at each commit and each due time, it does not poll, line 2" },
	{ "wal:\n  type: postgres\n",
	  "wal.type: postgres is not supported by this build: every hook is "
	  "committed to this node's store before its 201, line 2" },
	{ "wal:\n  postgres:\n    url: postgres://db/ankusa\n",
	  "wal.postgres is not supported by this build: every hook is "
	  "committed to this node's store; a replicated group shares one "
	  "(replication), line 2" },
	{ "claim_check:\n  max_bytes: 8000000\n",
	  "claim_check.max_bytes is not supported by this build: a body is "
	  "bounded by http.max_body_bytes, a pack by "
	  "claim_check.pack_max_bytes, line 2" },
	{ "claim_check:\n  tokens:\n    - {token: t, tenants: all}\n",
	  "claim_check.tokens is not supported by this build: the claim "
	  "gateway's tokens are claim_check.auth.tokens, without tenants, "
	  "line 2" },
	{ "claim_check:\n  remote: {url: \"http://cc:4001\"}\n",
	  "claim_check.remote is not supported by this build: every node "
	  "reads the claims from claim_check.store itself, line 2" },
	/* Still unknown: not a key of either daemon. */
	{ "routes:\n  bogus: 1\n",
	  "routes.bogus is not a known key, line 2" },
};

START_TEST(test_elixir_refused)
{
	char y[1024];

	snprintf(y, sizeof(y), "%s%s", elixir_refused[_i].yaml, SRC);
	expect_err(y, elixir_refused[_i].msg);
}
END_TEST

/*
 * A whole file of the Elixir Ankusa's WAL era, in the shape of its
 * reference file of the time (written here, with the sinks this build
 * has): every key this build lacks is refused by name, none is unknown.
 */
static const char wal_era[] =
    "node:\n"
    "  roles: [edge, dispatch, storage]\n"
    "  data_dir: /var/lib/ankusa\n"
    "log:\n"
    "  level: info\n"
    "http:\n"
    "  port: 4000\n"
    "  max_body_bytes: 8000000\n"
    "  routing: path\n"
    "  prefix: /webhooks\n"
    "admin:\n"
    "  enabled: true\n"
    "  port: 4002\n"
    "batcher:\n"
    "  partitions: 8\n"
    "  max_batch: 256\n"
    "  max_delay_ms: 5\n"
    "  max_queue: 10000\n"
    "dispatch:\n"
    "  poll_ms: 200\n"
    "  batch: 128\n"
    "  retry:\n"
    "    base_ms: 100\n"
    "    max_ms: 30000\n"
    "    max_attempts: 12\n"
    "    jitter: true\n"
    "wal:\n"
    "  type: disk\n"
    "  postgres:\n"
    "    url: postgres://ankusa@db/ankusa\n"
    "    pool_size: 10\n"
    "    ssl: false\n"
    "    migrate: true\n"
    "storage:\n"
    "  type: local\n"
    "  roll_bytes: 16777216\n"
    "  roll_ms: 30000\n"
    "claim_check:\n"
    "  signing_key: " TEST_CLAIM_KEY "\n"
    "  port: 4001\n"
    "  max_bytes: 8000000\n"
    "  retention_days: null\n"
    "  tokens:\n"
    "    - {token: secret, tenants: all}\n"
    "  remote: {url: \"http://claim-check.internal:4001\"}\n"
    "sources:\n"
    "  stripe:\n"
    "    tenant: default\n"
    "    on_verify_failure: reject\n"
    "    verify: {type: stripe, secret: whsec_x, tolerance_seconds: 300}\n"
    "    dedup: {type: rules, header: webhook-id, json_path: data.id}\n"
    "    sinks:\n"
    "      - {type: log}\n"
    "      - type: http\n"
    "        url: https://sink.example/in\n"
    "        method: post\n"
    "        timeout_ms: 5000\n"
    "        headers: {x-ankusa-env: prod}\n";

static const char *const wal_era_refused[] = {
	"dispatch.poll_ms", "wal.postgres", "storage", "claim_check.max_bytes",
	"claim_check.tokens", "claim_check.remote", "sources.stripe.dedup",
	NULL
};

START_TEST(test_elixir_wal_era)
{
	struct conf_errors e = { NULL, 0 };
	char want[128];
	size_t len;
	int i, j, found;

	ck_assert_ptr_null(parse(wal_era, &e));
	for (i = 0; i < e.n; i++) {
		if (strstr(e.msgs[i], " is not supported by this build: ") ==
		    NULL)
			fprintf(stderr, "  not refused by name: %s\n",
			    e.msgs[i]);
		ck_assert_ptr_nonnull(strstr(e.msgs[i],
		    " is not supported by this build: "));
	}
	for (j = 0; wal_era_refused[j] != NULL; j++) {
		len = (size_t)snprintf(want, sizeof(want), "%s is not "
		    "supported by this build: ", wal_era_refused[j]);
		for (found = 0, i = 0; i < e.n; i++)
			if (strncmp(e.msgs[i], want, len) == 0)
				found++;
		if (found != 1) {
			fprintf(stderr, "%s: refused %d times\n",
			    wal_era_refused[j], found);
			dump_errs(&e);
		}
		ck_assert_int_eq(found, 1);
	}
	ck_assert_int_eq(e.n, j);
	conf_errors_free(&e);

	expect_err("sources:\n  demo:\n    dedup: {type: github}\n"
	    "    sinks: [{type: log}]\n",
	    "sources.demo.dedup is not supported by this build: it is dedupe "
	    "now (a preset, or header, json and ttl_seconds), line 3");
}
END_TEST

/*
 * The ANKUSA_* environment overrides.
 */

static const char *const env_vars[] = {
	"ANKUSA_ROLES", "ANKUSA_DATA_DIR", "ANKUSA_LOG_LEVEL",
	"ANKUSA_HTTP_PORT", "PORT", "ANKUSA_ADMIN_PORT", "ANKUSA_ADMIN_IP",
	"ANKUSA_CLAIM_CHECK_PORT", "ANKUSA_CLAIM_CHECK_IP",
	"ANKUSA_ROUTES_ENABLED", "ANKUSA_ROUTES_STORE_URL",
	"ANKUSA_SOURCE_STORE_URL", "ANKUSA_WAL_TYPE", "ANKUSA_STORAGE_TYPE",
	"ANKUSA_S3_BUCKET", "ANKUSA_S3_REGION", "ANKUSA_S3_ENDPOINT",
	"ANKUSA_GCS_BUCKET", "ANKUSA_STORAGE_KEY_PREFIX",
	"ANKUSA_BACKUP_ENABLED", "ANKUSA_CONTROL_SOCKET",
	"ANKUSA_WAL_POSTGRES_URL", NULL
};

/* Before and after each test: none set (under CK_FORK=no, as valgrind
 * runs the suite, a test's overrides would reach the next ones). */
static void
env_clear(void)
{
	int i;

	for (i = 0; env_vars[i] != NULL; i++)
		unsetenv(env_vars[i]);
}

START_TEST(test_env)
{
	struct conf *cf;

	setenv("ANKUSA_HTTP_PORT", "5000", 1);
	setenv("ANKUSA_DATA_DIR", "/tmp/env-data", 1);
	setenv("ANKUSA_LOG_LEVEL", "debug", 1);
	setenv("ANKUSA_ADMIN_PORT", "5002", 1);
	setenv("ANKUSA_ADMIN_IP", "::1", 1);
	setenv("ANKUSA_CLAIM_CHECK_PORT", "5001", 1);
	setenv("ANKUSA_CLAIM_CHECK_IP", "0.0.0.0", 1);
	setenv("ANKUSA_ROLES", "edge, dispatch,storage", 1);
	setenv("ANKUSA_WAL_TYPE", "disk", 1);
	setenv("ANKUSA_ROUTES_ENABLED", "false", 1);
	setenv("ANKUSA_BACKUP_ENABLED", "false", 1);
	setenv("PORT", "6000", 1);
	setenv("ANKUSA_CONTROL_SOCKET", "/run/ankusa/control.sock", 1);
	/* The environment wins over the file. */
	cf = parse_ok("node:\n  data_dir: /var/x\nhttp:\n  port: 4100\n"
	    "admin:\n  port: 4102\ncontrol:\n  socket: /var/x/c.sock\n" SRC);
	ck_assert_str_eq(cf->control.socket, "/run/ankusa/control.sock");
	ck_assert_uint_eq(cf->http.port, 5000);
	ck_assert_str_eq(cf->data_dir, "/tmp/env-data");
	ck_assert_str_eq(cf->log_level, "debug");
	ck_assert_uint_eq(cf->admin.port, 5002);
	ck_assert_str_eq(cf->admin.ip, "::1");
	ck_assert_uint_eq(cf->claim_check.port, 5001);
	ck_assert_str_eq(cf->claim_check.ip, "0.0.0.0");
	/* It sets a value, it does not configure the gateway. */
	ck_assert_int_eq(cf->claim_check.enabled, 0);
	conf_free(cf);

	/* PORT when ANKUSA_HTTP_PORT is not set. */
	unsetenv("ANKUSA_HTTP_PORT");
	cf = parse_ok(SRC);
	ck_assert_uint_eq(cf->http.port, 6000);
	conf_free(cf);
}
END_TEST

static const struct {
	const char	*var;
	const char	*val;
	const char	*msg;
} env_bad[] = {
	{ "ANKUSA_HTTP_PORT", "80a",
	  "http.port (ANKUSA_HTTP_PORT) must be an integer in 0..65535, got "
	  "80a" },
	{ "PORT", "70000",
	  "http.port (PORT) must be an integer in 0..65535, got 70000" },
	{ "ANKUSA_ADMIN_IP", "localhost",
	  "admin.ip (ANKUSA_ADMIN_IP) must be an IPv4 or IPv6 address, got "
	  "localhost" },
	{ "ANKUSA_LOG_LEVEL", "loud",
	  "log.level (ANKUSA_LOG_LEVEL) must be one of error, warning, info, "
	  "debug, got loud" },
	{ "ANKUSA_DATA_DIR", "",
	  "node.data_dir (ANKUSA_DATA_DIR) must be a non-empty string, got "
	  "\"\"" },
	{ "ANKUSA_CONTROL_SOCKET", "",
	  "control.socket (ANKUSA_CONTROL_SOCKET) must be a path of 1..103 "
	  "bytes, got \"\"" },
	{ "ANKUSA_ROLES", "edge",
	  "node.roles (ANKUSA_ROLES): a node without dispatch, storage is not "
	  "supported by this build: it runs every role (edge, dispatch, "
	  "storage) in one node" },
	{ "ANKUSA_ROLES", "edge,dispatch,storage,gateway",
	  "node.roles (ANKUSA_ROLES) must be a list of edge, dispatch, "
	  "storage, claim_check, got gateway" },
	{ "ANKUSA_WAL_TYPE", "none",
	  "wal.type (ANKUSA_WAL_TYPE): none is not supported by this build: "
	  "every hook is committed to this node's store before its 201" },
	{ "ANKUSA_ROUTES_ENABLED", "true",
	  "routes.enabled (ANKUSA_ROUTES_ENABLED): true is not supported by "
	  "this build: every POST to a source's URL is captured" },
	{ "ANKUSA_BACKUP_ENABLED", "yes",
	  "backup.enabled (ANKUSA_BACKUP_ENABLED): true is not supported by "
	  "this build: ankusactl backup DIR copies the running store" },
	{ "ANKUSA_STORAGE_TYPE", "s3",
	  "storage.type (ANKUSA_STORAGE_TYPE) is not supported by this build: "
	  "it keeps no segment archive; claims go to claim_check.store" },
	{ "ANKUSA_S3_BUCKET", "b",
	  "storage.s3.bucket (ANKUSA_S3_BUCKET) is not supported by this "
	  "build: it keeps no segment archive; claims go to "
	  "claim_check.store" },
	{ "ANKUSA_ROUTES_STORE_URL", "redis://x",
	  "routes.store.url (ANKUSA_ROUTES_STORE_URL) is not supported by "
	  "this build: route management" },
	{ "ANKUSA_SOURCE_STORE_URL", "redis://x",
	  "source_store.url (ANKUSA_SOURCE_STORE_URL) is not supported by "
	  "this build: sources come from this file only" },
	{ "ANKUSA_WAL_POSTGRES_URL", "postgres://db/ankusa",
	  "wal.postgres.url (ANKUSA_WAL_POSTGRES_URL) is not supported by "
	  "this build: every hook is committed to this node's store; a "
	  "replicated group shares one (replication)" },
	{ "ANKUSA_WAL_TYPE", "postgres",
	  "wal.type (ANKUSA_WAL_TYPE): postgres is not supported by this "
	  "build: every hook is committed to this node's store before its "
	  "201" },
};

START_TEST(test_env_bad)
{
	setenv(env_bad[_i].var, env_bad[_i].val, 1);
	expect_err(SRC, env_bad[_i].msg);
}
END_TEST

/*
 * Interpolation.
 */

START_TEST(test_interp)
{
	struct conf *cf;

	setenv("ANK_PORT", "4100", 1);
	setenv("ANK_HOST", "relay.example", 1);
	setenv("ANK_EMPTY", "", 1);
	unsetenv("ANK_UNSET");

	cf = parse_ok("http:\n  port: ${ANK_PORT}\n" SRC);
	ck_assert_uint_eq(cf->http.port, 4100);
	conf_free(cf);

	cf = parse_ok("http:\n  port: \"${ANK_UNSET:-4200}\"\n" SRC);
	ck_assert_uint_eq(cf->http.port, 4200);
	conf_free(cf);

	/* A set variable wins over the default; an empty one does not. */
	cf = parse_ok("http:\n  port: ${ANK_PORT:-4200}\n"
	    "admin:\n  port: ${ANK_EMPTY:-4300}\n" SRC);
	ck_assert_uint_eq(cf->http.port, 4100);
	ck_assert_uint_eq(cf->admin.port, 4300);
	conf_free(cf);

	/* Inside a longer string, twice, and escaped. */
	cf = parse_ok("sources:\n  demo:\n    sinks:\n      - type: http\n"
	    "        url: \"https://${ANK_HOST}:${ANK_PORT}/in\"\n"
	    "        headers:\n          x-a: \"cost $5 $${ANK_HOST}\"\n");
	ck_assert_str_eq(cf->sources[0].sinks[0].u.http.url,
	    "https://relay.example:4100/in");
	ck_assert_int_eq(cf->sources[0].sinks[0].u.http.nheaders, 1);
	ck_assert_str_eq(cf->sources[0].sinks[0].u.http.headers[0].name, "x-a");
	ck_assert_str_eq(cf->sources[0].sinks[0].u.http.headers[0].value,
	    "cost $5 ${ANK_HOST}");
	conf_free(cf);

	expect_err("http:\n  port: ${ANK_UNSET}\n" SRC,
	    "http.port: environment variable ANK_UNSET is not set, line 2");
	expect_err("sources:\n  demo:\n    verify:\n      type: github\n"
	    "      secret: [\"${ANK_UNSET}\"]\n    sinks: [{type: log}]\n",
	    "sources.demo.verify.secret[0]: environment variable ANK_UNSET is "
	    "not set, line 5");
	expect_err("node:\n  data_dir: ${ANK_UNSET:-}\n" SRC,
	    "node.data_dir must be a non-empty string, got \"\", line 2");
	expect_err("node:\n  data_dir: /x/${ANK_HOST\n" SRC,
	    "node.data_dir: unterminated ${ in value, line 2");
	expect_err("node:\n  data_dir: /x/${1X}\n" SRC,
	    "node.data_dir: bad variable reference ${1X}, line 2");
}
END_TEST

/*
 * Cross checks.
 */

START_TEST(test_trust_url_tenant)
{
	struct conf *cf;

	expect_err("http:\n  routing: tenant_path\n"
	    "sources:\n  open:\n    sinks: [{type: log}]\n",
	    "sources.open.trust_url_tenant must be true for a shared source "
	    "with verify none under tenant_path routing, got false, line 5");
	expect_err("http:\n  routing: tenant_path\n"
	    "sources:\n  open:\n    tenant: default\n"
	    "    trust_url_tenant: false\n    sinks: [{type: log}]\n",
	    "sources.open.trust_url_tenant must be true for a shared source "
	    "with verify none under tenant_path routing, got false, line 6");

	cf = parse_ok("http:\n  routing: tenant_path\n"
	    "sources:\n  open:\n    trust_url_tenant: true\n"
	    "    sinks: [{type: log}]\n"
	    "  acme:\n    tenant: acme\n    sinks: [{type: log}]\n"
	    "  gh:\n    verify: {type: github, secret: s}\n"
	    "    sinks: [{type: log}]\n");
	ck_assert_int_eq(cf->http.routing, ROUTING_TENANT_PATH);
	ck_assert_int_eq(conf_source(cf, "open")->trust_url_tenant, 1);
	ck_assert_str_eq(conf_source(cf, "acme")->tenant, "acme");
	conf_free(cf);

	/* Under path routing the same source is fine. */
	cf = parse_ok(SRC);
	conf_free(cf);
}
END_TEST

START_TEST(test_sink_concurrency)
{
	struct conf *cf;

	cf = parse_ok("dispatch:\n  sink_concurrency: null\n" SRC);
	ck_assert_uint_eq(cf->dispatch.sink_concurrency, 0);
	conf_free(cf);
	cf = parse_ok("dispatch:\n  sink_concurrency: ~\n" SRC);
	ck_assert_uint_eq(cf->dispatch.sink_concurrency, 0);
	conf_free(cf);
	cf = parse_ok("dispatch:\n  sink_concurrency: 32\n" SRC);
	ck_assert_uint_eq(cf->dispatch.sink_concurrency, 32);
	conf_free(cf);
	cf = parse_ok("dispatch:\n  sink_concurrency: 1\n" SRC);
	ck_assert_uint_eq(cf->dispatch.sink_concurrency, 1);
	conf_free(cf);
	/* The default follows a smaller global cap. */
	cf = parse_ok("dispatch:\n  concurrency: 4\n" SRC);
	ck_assert_uint_eq(cf->dispatch.sink_concurrency, 4);
	conf_free(cf);
	cf = parse_ok("dispatch:\n  concurrency: 64\n  sink_concurrency: 64\n"
	    SRC);
	ck_assert_uint_eq(cf->dispatch.sink_concurrency, 64);
	conf_free(cf);

	expect_err("dispatch:\n  sink_concurrency: 33\n" SRC,
	    "dispatch.sink_concurrency must be null or an integer in 1..32 "
	    "(dispatch.concurrency), got 33, line 2");
	expect_err("dispatch:\n  concurrency: 4\n  sink_concurrency: 5\n" SRC,
	    "dispatch.sink_concurrency must be null or an integer in 1..4 "
	    "(dispatch.concurrency), got 5, line 3");
	expect_err("dispatch:\n  sink_concurrency: 0\n" SRC,
	    "dispatch.sink_concurrency must be null or an integer in 1..1024, "
	    "got 0, line 2");
}
END_TEST

/*
 * The deliver pool: dispatch.concurrency, plus sink_concurrency (or
 * concurrency when it is null) for each batching sink, plus
 * one, is at most 2048 processes; the check names dispatch.concurrency.
 */
START_TEST(test_deliver_pool)
{
	struct conf *cf;

	cf = parse_ok("dispatch:\n  concurrency: 1024\n" SRC);
	ck_assert_uint_eq(cf->dispatch.concurrency, 1024);
	conf_free(cf);
	cf = parse_ok("dispatch:\n  concurrency: 1023\n  sink_concurrency: "
	    "null\nsources:\n  q:\n    sinks:\n"
	    "      - {type: sqs, queue_url: \"https://sqs.example/1/q\"}\n");
	conf_free(cf);
	cf = parse_ok("dispatch:\n  concurrency: 1024\n  sink_concurrency: "
	    "1023\nsources:\n  q:\n    sinks:\n"
	    "      - {type: sqs, queue_url: \"https://sqs.example/1/q\"}\n");
	conf_free(cf);

	expect_err("dispatch:\n  concurrency: 1024\n  sink_concurrency: null\n"
	    "sources:\n  q:\n    sinks:\n"
	    "      - {type: sqs, queue_url: \"https://sqs.example/1/q\"}\n",
	    "dispatch.concurrency must be at most 1023 (the deliver pool, "
	    "concurrency + concurrency (dispatch.sink_concurrency null) for "
	    "each of 1 batching sinks + 1, is at most 2048 processes), got "
	    "1024, line 2");
	expect_err("dispatch:\n  concurrency: 1024\n  sink_concurrency: 1024\n"
	    "sources:\n  q:\n    sinks:\n"
	    "      - {type: sqs, queue_url: \"https://sqs.example/1/q\"}\n",
	    "dispatch.concurrency must be at most 1023 (the deliver pool, "
	    "concurrency + 1024 (dispatch.sink_concurrency) for each of 1 "
	    "batching sinks + 1, is at most 2048 processes), got 1024, line 2");
	/* No concurrency is small enough: sink_concurrency is the key. */
	expect_err("dispatch:\n  concurrency: 1024\n  sink_concurrency: 1024\n"
	    "sources:\n  q:\n    sinks:\n"
	    "      - {type: sqs, queue_url: \"https://sqs.example/1/q\"}\n"
	    "      - {type: google_pubsub, project: p, topic: t}\n",
	    "dispatch.sink_concurrency must be at most 511 (the deliver pool, "
	    "dispatch.concurrency 1024 + sink_concurrency for each of 2 "
	    "batching sinks + 1, is at most 2048 processes), got 1024, line 3");
}
END_TEST

START_TEST(test_breaker)
{
	struct conf *cf;

	expect_err("dispatch:\n  breaker_max_open_ms: 1000\n" SRC,
	    "dispatch.breaker_max_open_ms must be at least "
	    "dispatch.breaker_open_ms (30000), got 1000, line 2");
	cf = parse_ok("dispatch:\n  breaker_open_ms: 5000\n"
	    "  breaker_max_open_ms: 5000\n" SRC);
	ck_assert_uint_eq(cf->dispatch.breaker_max_open_ms, 5000);
	conf_free(cf);
	/* An unset maximum grows to the first open time. */
	cf = parse_ok("dispatch:\n  breaker_open_ms: 600000\n" SRC);
	ck_assert_uint_eq(cf->dispatch.breaker_max_open_ms, 600000);
	conf_free(cf);
	cf = parse_ok("dispatch:\n  breaker_failures: 0\n" SRC);
	ck_assert_uint_eq(cf->dispatch.breaker_failures, 0);
	conf_free(cf);
}
END_TEST

/*
 * Secrets.
 */

START_TEST(test_secrets)
{
	struct conf_errors e = { NULL, 0 };
	struct conf *cf;
	const struct verify_conf *v;
	int i;

	/* "hello world" and "hi" */
	cf = parse_ok("sources:\n  demo:\n    verify:\n"
	    "      secret: [whsec_aGVsbG8gd29ybGQ=, whsec_aGk=]\n"
	    "      type: standard_webhooks\n    sinks: [{type: log}]\n");
	v = &cf->sources[0].verify;
	ck_assert_int_eq(v->nsecrets, 2);
	ck_assert_uint_eq(v->secrets[0].len, 11);
	ck_assert(memcmp(v->secrets[0].data, "hello world", 11) == 0);
	ck_assert_uint_eq(v->secrets[1].len, 2);
	ck_assert(memcmp(v->secrets[1].data, "hi", 2) == 0);
	conf_free(cf);

	/* Raw secrets for the other presets. */
	cf = parse_ok("sources:\n  demo:\n    verify: {type: github, "
	    "secret: whsec_notdecoded}\n    sinks: [{type: log}]\n");
	v = &cf->sources[0].verify;
	ck_assert_int_eq(v->nsecrets, 1);
	ck_assert_uint_eq(v->secrets[0].len, 16);
	ck_assert(memcmp(v->secrets[0].data, "whsec_notdecoded", 16) == 0);
	conf_free(cf);

	/* hmac with whsec_base64. */
	cf = parse_ok("sources:\n  demo:\n    verify:\n      type: hmac\n"
	    "      secret: whsec_aGk=\n      secret_decode: whsec_base64\n"
	    "      signature_header: X-Sig\n      signed: \"{ts}.{body}\"\n"
	    "      parse: space_versions\n      version: \"v1,\"\n"
	    "    sinks: [{type: log}]\n");
	v = &cf->sources[0].verify;
	ck_assert_int_eq(v->type, VERIFY_HMAC);
	ck_assert_uint_eq(v->secrets[0].len, 2);
	ck_assert(memcmp(v->secrets[0].data, "hi", 2) == 0);
	ck_assert_str_eq(v->signed_template, "{ts}.{body}");
	ck_assert_str_eq(v->hash, "sha256");
	ck_assert_str_eq(v->encoding, "hex");
	ck_assert_str_eq(v->parse, "space_versions");
	conf_free(cf);

	/* The http sink's signing secret. */
	cf = parse_ok("sources:\n  demo:\n    sinks:\n      - type: http\n"
	    "        url: http://sink.test:9/\n        secret: whsec_aGk=\n");
	ck_assert_int_eq(cf->sources[0].sinks[0].u.http.nsecrets, 1);
	ck_assert(memcmp(cf->sources[0].sinks[0].u.http.secrets[0].data, "hi",
	    2) == 0);
	conf_free(cf);

	expect_err("sources:\n  demo:\n"
	    "    verify: {type: stripe, secret: \"\"}\n"
	    "    sinks: [{type: log}]\n",
	    "sources.demo.verify.secret must be a non-empty secret, got \"\", "
	    "line 3");
	expect_err("sources:\n  demo:\n    verify:\n"
	    "      type: standard_webhooks\n"
	    "      secret: whsec_\n    sinks: [{type: log}]\n",
	    "sources.demo.verify.secret must be whsec_ followed by non-empty, "
	    "padded, canonical base64, got a 6-byte value that is not base64, "
	    "line 5");
	expect_err("sources:\n  demo:\n    verify:\n"
	    "      type: standard_webhooks\n"
	    "      secret: whsec_a$b=\n    sinks: [{type: log}]\n",
	    "sources.demo.verify.secret must be whsec_ followed by non-empty, "
	    "padded, canonical base64, got a 10-byte value that is not "
	    "base64, line 5");
	expect_err("sources:\n  demo:\n    verify:\n"
	    "      type: standard_webhooks\n"
	    "      secret: aGVsbG8=\n    sinks: [{type: log}]\n",
	    "sources.demo.verify.secret must be whsec_ followed by non-empty, "
	    "padded, canonical base64, got a 8-byte value that is not "
	    "whsec_, line 5");
	expect_err("sources:\n  demo:\n    verify:\n"
	    "      type: standard_webhooks\n"
	    "      secret: [whsec_aGk=, whsec_a]\n    sinks: [{type: log}]\n",
	    "sources.demo.verify.secret[1] must be whsec_ followed by "
	    "non-empty, padded, canonical base64, got a 7-byte value that is "
	    "not base64, line 5");
	expect_err("sources:\n  demo:\n    sinks:\n      - type: http\n"
	    "        url: http://sink.test:9/\n        secret: plain\n",
	    "sources.demo.sinks[0].secret must be whsec_ followed by "
	    "non-empty, padded, canonical base64, got a 5-byte value that is "
	    "not whsec_, line 6");
	/* What the SDKs refuse: unpadded ("test" is dGVzdA==), and a
	 * second spelling of the same bytes. */
	expect_err("sources:\n  demo:\n    sinks:\n      - type: http\n"
	    "        url: http://sink.test:9/\n        secret: whsec_dGVzdA\n",
	    "sources.demo.sinks[0].secret must be whsec_ followed by "
	    "non-empty, padded, canonical base64, got a 12-byte value that is "
	    "unpadded, line 6");
	expect_err("sources:\n  demo:\n    verify:\n"
	    "      type: standard_webhooks\n"
	    "      secret: [whsec_aGk=, whsec_dGVzdB==]\n"
	    "    sinks: [{type: log}]\n",
	    "sources.demo.verify.secret[1] must be whsec_ followed by "
	    "non-empty, padded, canonical base64, got a 14-byte value that is "
	    "not canonical (non-zero trailing bits), line 5");
	expect_err("sources:\n  demo:\n    verify:\n      type: hmac\n"
	    "      secret: whsec_aGk\n      secret_decode: whsec_base64\n"
	    "      signature_header: X-Sig\n      signed: \"{body}\"\n"
	    "    sinks: [{type: log}]\n",
	    "sources.demo.verify.secret must be whsec_ followed by non-empty, "
	    "padded, canonical base64, got a 9-byte value that is unpadded, "
	    "line 5");
	expect_err("sources:\n  demo:\n    verify: {type: github, "
	    "secret: [a, b, c, d, e, f, g, h, i]}\n    sinks: [{type: log}]\n",
	    "sources.demo.verify.secret must be a list of at most 8 secrets, "
	    "got a list of 9, line 3");

	/* A refused secret is never echoed. */
	ck_assert_ptr_null(parse("sources:\n  demo:\n    verify:\n"
	    "      type: standard_webhooks\n      secret: whsec_TOPSECRET!\n"
	    "    sinks: [{type: log}]\n", &e));
	ck_assert_int_gt(e.n, 0);
	for (i = 0; i < e.n; i++)
		ck_assert_ptr_null(strstr(e.msgs[i], "TOPSECRET"));
	conf_errors_free(&e);
}
END_TEST

/*
 * Sources: dedupe, retry, windows, rate limits.
 */

static const struct {
	const char		*preset;
	enum keyspec_kind	 kind;
	const char		*name;
} presets_tab[] = {
	{ "github", KEY_HEADER, "x-github-delivery" },
	{ "standard_webhooks", KEY_HEADER, "webhook-id" },
	{ "svix", KEY_HEADER, "svix-id" },
	{ "shopify", KEY_HEADER, "x-shopify-webhook-id" },
	{ "stripe", KEY_JSON, "id" },
};

START_TEST(test_dedupe_presets)
{
	struct conf *cf;
	const struct dedupe_conf *d;
	char y[512];

	snprintf(y, sizeof(y), "sources:\n  demo:\n    dedupe: %s\n"
	    "    sinks: [{type: log}]\n  b:\n    dedupe: {preset: %s, "
	    "ttl_seconds: 60}\n    sinks: [{type: log}]\n",
	    presets_tab[_i].preset, presets_tab[_i].preset);
	cf = parse_ok(y);
	d = &conf_source(cf, "demo")->dedupe;
	ck_assert_int_eq(d->enabled, 1);
	ck_assert_str_eq(d->preset, presets_tab[_i].preset);
	ck_assert_int_eq(d->key.kind, presets_tab[_i].kind);
	ck_assert_str_eq(d->key.name, presets_tab[_i].name);
	ck_assert_uint_eq(d->ttl_seconds, 259200);
	d = &conf_source(cf, "b")->dedupe;
	ck_assert_int_eq(d->key.kind, presets_tab[_i].kind);
	ck_assert_uint_eq(d->ttl_seconds, 60);
	conf_free(cf);
}
END_TEST

static void
strlcat_compat(char *dst, const char *src, size_t size)
{
	size_t n = strlen(dst);

	snprintf(dst + n, size - n, "%s", src);
}
/* A source has at most CONF_MAX_SINKS sinks (their lanes travel in one
 * frame); the limit itself is accepted. */
START_TEST(test_max_sinks)
{
	char y[8192];
	struct conf *cf;
	int n, i;

	for (n = CONF_MAX_SINKS; n <= CONF_MAX_SINKS + 1; n++) {
		snprintf(y, sizeof(y), "sources:\n  a:\n    sinks:\n");
		for (i = 0; i < n; i++)
			strlcat_compat(y, "      - {type: log, ordered: true}\n",
			    sizeof(y));
		if (n == CONF_MAX_SINKS) {
			cf = parse_ok(y);
			ck_assert_int_eq(cf->nsinks, CONF_MAX_SINKS);
			conf_free(cf);
		} else
			expect_err(y, "sources.a.sinks must be a list of at "
			    "most 64 sinks, got 65, line 4");
	}
}
END_TEST

START_TEST(test_sources_misc)
{
	struct conf *cf;
	const struct source_conf *s;
	const struct sink_conf *k;

	cf = parse_ok("dispatch:\n  retry: {max_attempts: 10, jitter: false}\n"
	    "sources:\n  a:\n    retry: {base_ms: 5}\n"
	    "    dedupe: {json: data.object.id}\n"
	    "    forward_headers: [X-Request-Id, stripe-signature]\n"
	    "    on_verify_failure: quarantine\n"
	    "    sinks:\n      - type: log\n        ordered: true\n"
	    "        order_key: {json: customer}\n"
	    "      - {type: log, ordered: true}\n"
	    "  b:\n    forward_headers: []\n    sinks: [{type: log}]\n");
	s = conf_source(cf, "a");
	ck_assert_int_eq(s->has_retry, 1);
	ck_assert_uint_eq(s->retry.base_ms, 5);
	ck_assert_uint_eq(s->retry.max_ms, 300000);
	ck_assert_uint_eq(s->retry.max_attempts, 10);
	ck_assert_int_eq(s->retry.jitter, 0);
	ck_assert_int_eq(s->dedupe.key.kind, KEY_JSON);
	ck_assert_str_eq(s->dedupe.key.name, "data.object.id");
	ck_assert_ptr_null(s->dedupe.preset);
	ck_assert_int_eq(s->nforward_headers, 2);
	ck_assert_str_eq(s->forward_headers[0], "x-request-id");
	ck_assert_int_eq(s->on_verify_failure, VFAIL_QUARANTINE);
	k = &s->sinks[0];
	ck_assert_int_eq(k->ordered, 1);
	ck_assert_int_eq(k->order_key.kind, KEY_JSON);
	ck_assert_str_eq(k->order_key.name, "customer");
	ck_assert_int_eq(s->sinks[1].order_key.kind, KEY_NONE);
	s = conf_source(cf, "b");
	ck_assert_int_eq(s->has_retry, 0);
	ck_assert_uint_eq(s->retry.max_attempts, 10);
	ck_assert_ptr_nonnull(s->forward_headers);
	ck_assert_int_eq(s->nforward_headers, 0);
	ck_assert_int_eq(cf->nsinks, 3);
	conf_free(cf);
}
END_TEST

/* A source's event_type and its sinks' filters, kept as written. */
START_TEST(test_filters)
{
	struct conf *cf;
	const struct source_conf *s;

	cf = parse_ok("sources:\n  a:\n    event_type: {json: meta.Kind}\n"
	    "    sinks:\n"
	    "      - {type: log, filter: {event_types: [Invoice.*, "
	    "orders/create, '*']}}\n"
	    "      - {type: log, filter: {jq: '.amount > 100'}}\n"
	    "      - {type: log}\n"
	    "  b:\n    event_type: {header: X-Kind}\n"
	    "    sinks: [{type: log}]\n");
	s = conf_source(cf, "a");
	ck_assert_int_eq(s->event_type.kind, KEY_JSON);
	ck_assert_str_eq(s->event_type.name, "meta.Kind");
	ck_assert_int_eq(s->sinks[0].nfilter_types, 3);
	ck_assert_str_eq(s->sinks[0].filter_types[0], "Invoice.*");
	ck_assert_str_eq(s->sinks[0].filter_types[1], "orders/create");
	ck_assert_str_eq(s->sinks[0].filter_types[2], "*");
	ck_assert_ptr_null(s->sinks[0].filter_jq);
	ck_assert_str_eq(s->sinks[1].filter_jq, ".amount > 100");
	ck_assert_ptr_null(s->sinks[1].filter_types);
	ck_assert_ptr_null(s->sinks[2].filter_types);
	ck_assert_ptr_null(s->sinks[2].filter_jq);
	s = conf_source(cf, "b");
	ck_assert_int_eq(s->event_type.kind, KEY_HEADER);
	ck_assert_str_eq(s->event_type.name, "X-Kind");
	ck_assert_uint_eq(cf->http.jq_timeout_ms, 50);
	conf_free(cf);
}
END_TEST

START_TEST(test_tenants)
{
	struct conf *cf;
	const struct tenant_window *tw;
	const struct rate_limit *rl;

	cf = parse_ok("dispatch:\n  concurrency: 16\n  tenants:\n"
	    "    acme: {max_inflight: 10}\n    default: {concurrency: 4}\n"
	    "rate_limits:\n  default: {rate: 0.5, burst: 2}\n"
	    "  tenants:\n    acme: {rate: 500, burst: 1000}\n" SRC);
	tw = conf_tenant_window(cf, "acme");
	ck_assert_str_eq(tw->tenant, "acme");
	ck_assert_uint_eq(tw->max_inflight, 10);
	ck_assert_uint_eq(tw->concurrency, 4);
	ck_assert_uint_eq(tw->max_inflight_bytes, 33554432);
	tw = conf_tenant_window(cf, "other");
	ck_assert_ptr_null(tw->tenant);
	ck_assert_uint_eq(tw->concurrency, 4);
	ck_assert_uint_eq(tw->max_inflight, 1024);
	ck_assert_int_eq(cf->dispatch.ntenants, 1);
	rl = conf_rate_limit(cf, "acme");
	ck_assert_int_eq(rl->set, 1);
	ck_assert(rl->rate == 500.0);
	ck_assert_uint_eq(rl->burst, 1000);
	rl = conf_rate_limit(cf, "other");
	ck_assert_int_eq(rl->set, 1);
	ck_assert(rl->rate == 0.5);
	conf_free(cf);

	cf = parse_ok("rate_limits:\n  default: null\n" SRC);
	ck_assert_int_eq(conf_rate_limit(cf, "x")->set, 0);
	conf_free(cf);
}
END_TEST

/* claim_check.auth.tokens: each form kept as the SHA-256 of the token
 * (a file's once conf_tokens_read read it, as ankusad does while root),
 * the mistakes refused by name, scopes refused (admin.tokens' alone). */
#define TOK_A	"token-a-0123456789abcdef"
/* sha256("token-c-0123456789abcdef") */
#define TOK_C_SHA \
	"86162e11c5f38aedbd3ac455c70bf1e7bce9e8350f0a4e2a5ffad184e94651da"
START_TEST(test_tokens)
{
	char path[] = "/tmp/check_conf_tok.XXXXXX", y[1024], err[256];
	unsigned char md[32];
	struct conf *cf;
	FILE *f;
	int fd;

	ck_assert_int_ne(fd = mkstemp(path), -1);
	ck_assert_ptr_nonnull(f = fdopen(fd, "w"));
	fputs("token-b-0123456789abcdef\n", f);
	fclose(f);
	snprintf(y, sizeof(y), "claim_check:\n" CLAIM_KEY "  auth:\n"
	    "    tokens:\n"
	    "      - {name: a, token: " TOK_A "}\n"
	    "      - {name: b, token_file: %s}\n"
	    "      - {name: c, token_sha256: \"" TOK_C_SHA "\"}\n" SRC, path);
	cf = parse_ok(y);
	ck_assert_int_eq(cf->claim_check.ntokens, 3);
	ck_assert_str_eq(cf->claim_check.tokens[0].name, "a");
	SHA256((const unsigned char *)TOK_A, strlen(TOK_A), md);
	ck_assert(memcmp(cf->claim_check.tokens[0].digest, md, 32) == 0);
	ck_assert_str_eq(cf->claim_check.tokens[1].name, "b");
	ck_assert_str_eq(cf->claim_check.tokens[1].file, path);
	ck_assert(!cf->claim_check.tokens[1].has_digest);
	ck_assert_int_eq(conf_tokens_read(cf, err, sizeof(err)), 0);
	ck_assert(cf->claim_check.tokens[1].has_digest);
	SHA256((const unsigned char *)"token-b-0123456789abcdef", 24, md);
	ck_assert(memcmp(cf->claim_check.tokens[1].digest, md, 32) == 0);
	ck_assert_uint_eq(cf->claim_check.tokens[2].digest[0], 0x86);
	ck_assert_uint_eq(cf->claim_check.tokens[2].digest[31], 0xda);
	conf_free(cf);

	/* A file's token shorter than 16 bytes is refused when read. */
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs("short\n", f);
	fclose(f);
	snprintf(y, sizeof(y), "claim_check:\n" CLAIM_KEY "  auth:\n"
	    "    tokens:\n      - {name: b, token_file: %s}\n" SRC, path);
	cf = parse_ok(y);
	ck_assert_int_eq(conf_tokens_read(cf, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "claim_check.auth.tokens[0].token_file ") !=
	    NULL && strstr(err, "shorter") != NULL, "%s", err);
	conf_free(cf);
	unlink(path);
	cf = parse_ok("claim_check:\n" CLAIM_KEY "  auth:\n    tokens:\n"
	    "      - {name: a, token_file: /nonexistent/tok}\n" SRC);
	ck_assert_int_eq(conf_tokens_read(cf, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "claim_check.auth.tokens[0].token_file "
	    "/nonexistent/tok: No such file or directory");
	conf_free(cf);

	expect_err("claim_check:\n" CLAIM_KEY "  auth:\n    tokens:\n"
	    "      - {name: a, token: " TOK_A ", token_sha256: \"" TOK_C_SHA
	    "\"}\n" SRC, "claim_check.auth.tokens[0] must have exactly one "
	    "of token, token_file and token_sha256, got 2, line 5");
	expect_err("claim_check:\n" CLAIM_KEY "  auth:\n    tokens:\n"
	    "      - {token: " TOK_A "}\n" SRC, "claim_check.auth.tokens[0]"
	    ".name is required, line 5");
	expect_err("claim_check:\n" CLAIM_KEY "  auth:\n    tokens:\n"
	    "      - {name: a, token: short}\n" SRC,
	    "claim_check.auth.tokens[0].token must be at least 16 bytes, "
	    "line 5");
	expect_err("claim_check:\n" CLAIM_KEY "  auth:\n    tokens:\n"
	    "      - {name: a, token_sha256: abc}\n" SRC,
	    "claim_check.auth.tokens[0].token_sha256 must be 64 hex digits "
	    "(the SHA-256 of the token), got 3 characters that are not, "
	    "line 5");
	expect_err("claim_check:\n" CLAIM_KEY "  auth:\n    tokens:\n"
	    "      - {name: a, token: " TOK_A "}\n"
	    "      - {name: a, token: " TOK_A "x}\n" SRC,
	    "claim_check.auth.tokens[1].name: a is the name of another "
	    "token too, line 6");
	expect_err("claim_check:\n" CLAIM_KEY "  auth:\n    tokens:\n"
	    "      - {name: a, secret: " TOK_A "}\n" SRC,
	    "claim_check.auth.tokens[0].secret: unknown key (a token has "
	    "name, token, token_file and token_sha256), line 5");
	expect_err("claim_check:\n" CLAIM_KEY "  auth:\n    tokens:\n"
	    "      - {name: a, token: " TOK_A ", scopes: ['*']}\n" SRC,
	    "claim_check.auth.tokens[0].scopes: unknown key (a token has "
	    "name, token, token_file and token_sha256), line 5");
	expect_err("claim_check:\n" CLAIM_KEY "  auth:\n    tokens: x\n" SRC,
	    "claim_check.auth.tokens must be a list of tokens, got a string, "
	    "line 4");
}
END_TEST

START_TEST(test_misc_values)
{
	struct conf *cf;

	cf = parse_ok("http:\n  prefix: /\n  ip: \"::1\"\n"
	    "control:\n  mode: 0640\n  socket: /tmp/a.sock\n"
	    "log:\n  level: debug\n"
	    "claim_check:\n  retention_days: 7\n" CLAIM_KEY SRC);
	ck_assert_str_eq(cf->http.prefix, "");
	ck_assert_str_eq(cf->http.ip, "::1");
	ck_assert_uint_eq(cf->control.mode, 0640);
	ck_assert_str_eq(cf->control.socket, "/tmp/a.sock");
	ck_assert_str_eq(cf->log_level, "debug");
	ck_assert_int_eq(cf->claim_check.enabled, 1);
	ck_assert_uint_eq(cf->claim_check.retention_days, 7);
	ck_assert_str_eq(cf->claim_check.store_type, "local");
	ck_assert_ptr_nonnull(strstr(cf->claim_check.root, "/claims"));
	conf_free(cf);

	cf = parse_ok("http:\n  prefix: /in/hooks\ncontrol:\n  mode: \"660\"\n"
	    "claim_check:\n  store:\n    type: s3\n"
	    "    s3: {bucket: b, endpoint: \"http://s3.test:9000\"}\n" CLAIM_KEY
	    SRC);
	ck_assert_str_eq(cf->http.prefix, "/in/hooks");
	ck_assert_uint_eq(cf->control.mode, 0660);
	ck_assert_str_eq(cf->claim_check.s3_bucket, "b");
	ck_assert_ptr_null(cf->claim_check.root);
	conf_free(cf);

	ck_assert(conf_valid_id("a-b_C9"));
	ck_assert(!conf_valid_id(""));
	ck_assert(!conf_valid_id("a.b"));
	ck_assert(conf_valid_id("0123456789012345678901234567890123456789"
	    "012345678901234567890123"));
	ck_assert(!conf_valid_id("0123456789012345678901234567890123456789"
	    "0123456789012345678901234"));
}
END_TEST

/*
 * Reload, load, manual.
 */

static void
report_key(const char *key, void *arg)
{
	char *buf = arg;

	strcat(buf, key);
	strcat(buf, " ");
}

/* What the egress guard lets through at config time, and the keys. */
START_TEST(test_egress)
{
	struct conf *cf;

	cf = parse_ok(SRC);
	ck_assert_int_eq(cf->egress.allow_plain_http, 1);
	ck_assert_int_eq(cf->egress.nallow, 0);
	conf_free(cf);

	cf = parse_ok("egress:\n  allow: [\"127.0.0.0/8\", \"[::1]/128:443\"]\n"
	    "  allow_plain_http: false\n"
	    "sources:\n  demo:\n    sinks:\n"
	    "      - {type: http, url: \"http://127.0.0.1:9/\"}\n"
	    "      - {type: http, url: \"https://[::1]/\"}\n"
	    "      - {type: http, url: \"http://[::ffff:127.0.0.2]:9/\"}\n"
	    "      - {type: http, url: \"https://8.8.8.8/\"}\n"
	    "      - {type: http, url: \"http://localhost:9/\"}\n"
	    "      - {type: http, url: \"http://sink.test/\"}\n");
	ck_assert_int_eq(cf->egress.allow_plain_http, 0);
	ck_assert_int_eq(cf->egress.nallow, 2);
	ck_assert_str_eq(cf->egress.allow[0], "127.0.0.0/8");
	ck_assert_str_eq(cf->egress.allow[1], "[::1]/128:443");
	conf_free(cf);

	/* Plain http to a public literal is fine by default. */
	cf = parse_ok("sources:\n  demo:\n    sinks:\n"
	    "      - {type: http, url: \"http://8.8.8.8/\"}\n");
	conf_free(cf);
}
END_TEST

/* A sink's proxy: inherited, none (null or ""), its own; auth's
 * fields; egress.proxy and no_proxy. */
START_TEST(test_sinknet)
{
	struct conf *cf;
	const struct sink_conf *k;

	cf = parse_ok("egress:\n  proxy: \"http://u:p@proxy.test:3128\"\n"
	    "  no_proxy: [\"*\", \".corp.test\", corp.test, \"10.0.0.0/8\", "
	    "\"192.0.2.1\"]\n"
	    "sources:\n  demo:\n    sinks:\n"
	    "      - {type: http, url: \"https://a.test/\"}\n"
	    "      - {type: http, url: \"https://a.test/\", proxy: null}\n"
	    "      - {type: http, url: \"https://a.test/\", proxy: \"\"}\n"
	    "      - {type: sqs, queue_url: \"https://q.test/1/q\", "
	    "proxy: \"http://p2.test\"}\n"
	    "      - type: http\n        url: \"https://a.test/\"\n"
	    "        auth: {type: oauth2_client_credentials, token_url: "
	    "\"https://idp.test/t\", client_id: c, client_secret: s, "
	    "scope: \"a b\", client_auth: post}\n");
	ck_assert_str_eq(cf->egress.proxy, "http://u:p@proxy.test:3128");
	ck_assert_int_eq(cf->egress.nno_proxy, 5);
	k = cf->sources[0].sinks;
	ck_assert_int_eq(k[0].proxy_mode, SINK_PROXY_INHERIT);
	ck_assert_ptr_null(k[0].proxy);
	ck_assert_int_eq(k[1].proxy_mode, SINK_PROXY_NONE);
	ck_assert_int_eq(k[2].proxy_mode, SINK_PROXY_NONE);
	ck_assert_ptr_null(k[2].proxy);
	ck_assert_int_eq(k[3].proxy_mode, SINK_PROXY_URL);
	ck_assert_str_eq(k[3].proxy, "http://p2.test");
	ck_assert_int_eq(k[4].u.http.auth.type, SINK_AUTH_OAUTH2);
	ck_assert_str_eq(k[4].u.http.auth.scope, "a b");
	ck_assert_int_eq(k[4].u.http.auth.client_post, 1);
	ck_assert_int_eq(k[0].u.http.auth.type, SINK_AUTH_NONE);
	conf_free(cf);
}
END_TEST

START_TEST(test_replication)
{
	struct conf *cf, *a, *b;
	char keys[512] = "";

	cf = parse_ok(SRC);
	ck_assert_int_eq(cf->repl.enabled, 0);
	conf_free(cf);
	cf = parse_ok("replication:\n  local: \"10.0.0.1:7100\"\n"
	    "  peers: [\"n2.example:7100\", \"[fd00::3]:7101\"]\n" SRC);
	ck_assert_int_eq(cf->repl.enabled, 1);
	ck_assert_str_eq(cf->repl.local_host, "10.0.0.1");
	ck_assert_uint_eq(cf->repl.local_port, 7100);
	ck_assert_uint_eq(cf->repl.npeers, 2);
	ck_assert_str_eq(cf->repl.peers[0].host, "n2.example");
	ck_assert_uint_eq(cf->repl.peers[0].port, 7100);
	ck_assert_str_eq(cf->repl.peers[1].host, "fd00::3");
	ck_assert_uint_eq(cf->repl.peers[1].port, 7101);
	/* The defaults of the contract. */
	ck_assert_uint_eq(cf->repl.priority, 100);
	ck_assert_int_eq(cf->repl.create, 0);
	ck_assert_int_eq(cf->repl.ack_all, 0);
	ck_assert_uint_eq(cf->repl.ack_timeout_ms, 300);
	ck_assert_uint_eq(cf->repl.heartbeat_ms, 500);
	ck_assert_uint_eq(cf->repl.heartbeat_timeout_ms, 2000);
	conf_free(cf);

	/* A reload keeps the restart-only keys as they run, their parsed
	 * addresses with them, and takes the timeouts. */
	a = parse_ok("replication:\n  local: \"a:1\"\n  peers: [\"b:2\"]\n"
	    "  priority: 50\n" SRC);
	b = parse_ok("replication:\n  local: \"c:3\"\n"
	    "  peers: [\"d:4\", \"e:5\"]\n  priority: 0\n  ack_policy: all\n"
	    "  ack_timeout_ms: 900\n" SRC);
	ck_assert_int_eq(conf_reload_keep(a, b, report_key, keys), 4);
	ck_assert_str_eq(keys, "replication.local replication.peers "
	    "replication.priority replication.ack_policy ");
	ck_assert_str_eq(b->repl.local_host, "a");
	ck_assert_uint_eq(b->repl.local_port, 1);
	ck_assert_uint_eq(b->repl.npeers, 1);
	ck_assert_str_eq(b->repl.peers[0].host, "b");
	ck_assert_uint_eq(b->repl.peers[0].port, 2);
	ck_assert_uint_eq(b->repl.priority, 50);
	ck_assert_int_eq(b->repl.ack_all, 0);
	ck_assert_uint_eq(b->repl.ack_timeout_ms, 900);
	conf_free(b);
	/* The section removed: all of it kept. */
	keys[0] = '\0';
	b = parse_ok(SRC);
	ck_assert_int_eq(conf_reload_keep(a, b, report_key, keys), 1);
	ck_assert_str_eq(keys, "replication ");
	ck_assert_int_eq(b->repl.enabled, 1);
	ck_assert_str_eq(b->repl.local_host, "a");
	ck_assert_uint_eq(b->repl.npeers, 1);
	conf_free(b);
	conf_free(a);
}
END_TEST

/* The restart-only keys that differ are reported, once: kept, they no
 * longer differ. */
START_TEST(test_reload_check)
{
	static const char *const restart = "node:\n  data_dir: /elsewhere\n"
	    "admin:\n  ip: \"::1\"\ncontrol:\n  socket: /tmp/x.sock\n"
	    "claim_check: {signing_key: " TEST_CLAIM_KEY "}\n" SRC;
	struct conf *a, *b;
	char keys[512] = "";

	a = parse_ok(SRC);
	b = parse_ok("http:\n  port: 4100\n  workers: 4\n"
	    "dispatch:\n  concurrency: 8\n" SRC);
	ck_assert_int_eq(conf_reload_keep(a, b, report_key, keys), 1);
	ck_assert_str_eq(keys, "http.port ");
	ck_assert_int_eq(conf_reload_keep(a, b, report_key, keys), 0);
	ck_assert_int_eq(conf_reload_keep(a, a, report_key, keys), 0);
	ck_assert_str_eq(keys, "http.port ");
	conf_free(b);

	keys[0] = '\0';
	b = parse_ok(restart);
	ck_assert_int_eq(conf_reload_keep(a, b, report_key, keys), 4);
	ck_assert_str_eq(keys, "node.data_dir admin.ip control.socket "
	    "claim_check ");
	conf_free(b);
	b = parse_ok(restart);
	ck_assert_int_eq(conf_reload_keep(a, b, NULL, NULL), 4);
	conf_free(b);
	conf_free(a);
}
END_TEST

/* conf_reload_keep: the restart-only keys of the new config take the old
 * values (a section added or removed: all of it), the others stay new. */
START_TEST(test_reload_keep)
{
	struct conf *a, *b;
	char keys[512] = "";

	a = parse_ok("claim_check: {port: 4101, store: {type: local, root: "
	    "/r}, signing_key: " TEST_CLAIM_KEY "}\n" SRC);
	b = parse_ok("node:\n  data_dir: /elsewhere\nhttp:\n  port: 4100\n"
	    "  workers: 4\ncontrol:\n  socket: /tmp/x.sock\n"
	    "dispatch:\n  concurrency: 8\n" SRC);
	ck_assert_int_eq(conf_reload_keep(a, b, report_key, keys), 4);
	ck_assert_str_eq(keys, "node.data_dir http.port control.socket "
	    "claim_check ");
	ck_assert_str_eq(b->data_dir, a->data_dir);
	ck_assert_uint_eq(b->http.port, a->http.port);
	ck_assert_str_eq(b->control.socket, a->control.socket);
	ck_assert_int_eq(b->claim_check.enabled, 1);
	ck_assert_uint_eq(b->claim_check.port, 4101);
	ck_assert_str_eq(b->claim_check.store_type, "local");
	ck_assert_str_eq(b->claim_check.root, "/r");
	/* reloadable: as the new file says */
	ck_assert_uint_eq(b->http.workers, 4);
	ck_assert_uint_eq(b->dispatch.concurrency, 8);
	ck_assert_int_eq(conf_reload_keep(a, b, NULL, NULL), 0);
	conf_free(b);
	conf_free(a);
}
END_TEST

START_TEST(test_load)
{
	struct conf_errors e = { NULL, 0 };
	struct conf *cf;
	char path[] = "/tmp/check_conf.XXXXXX", m[256], *text = NULL;
	size_t len = 0;
	int fd;

	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, SRC, strlen(SRC)), (int)strlen(SRC));
	close(fd);
	cf = conf_load(path, &text, &len, &e);
	ck_assert_ptr_nonnull(cf);
	ck_assert_uint_eq(len, strlen(SRC));
	ck_assert(memcmp(text, SRC, len) == 0);
	conf_free(cf);
	free(text);
	unlink(path);

	ck_assert_ptr_null(conf_load(path, &text, &len, &e));
	ck_assert_int_eq(e.n, 1);
	snprintf(m, sizeof(m), "cannot read %s: %s", path, strerror(ENOENT));
	ck_assert_str_eq(e.msgs[0], m);
	conf_errors_free(&e);
}
END_TEST

START_TEST(test_manual)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp;

	fp = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(fp);
	conf_write_manual(fp);
	fclose(fp);
	ck_assert_ptr_nonnull(strstr(buf, ".SS http\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\\fBhttp.port\\fR\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\\fBsources.\\fIid\\fB.tenant\\fR"));
	ck_assert_ptr_nonnull(strstr(buf,
	    "\\fBdispatch.tenants.\\fItenant\\fB.concurrency\\fR"));
	ck_assert_ptr_nonnull(strstr(buf, "; a change needs a restart"));
	free(buf);

	buf = NULL;
	fp = open_memstream(&buf, &len);
	conf_write_manpage(fp);
	fclose(fp);
	ck_assert(strncmp(buf, ".\\\"", 3) == 0);
	ck_assert_ptr_nonnull(strstr(buf, "\n.TH ANKUSA.YML 5 "));
	ck_assert_ptr_nonnull(strstr(buf, "\n.SH EXAMPLES\n"));
	free(buf);
}
END_TEST

static Suite *
conf_suite(void)
{
	Suite *s = suite_create("conf");
	TCase *tc;

	tc = tcase_create("defaults");
	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_test(tc, test_default_text);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_disable_notify);
	tcase_add_test(tc, test_sink_defaults);
	tcase_add_test(tc, test_sink_nats);
	tcase_add_test(tc, test_sink_kafka);
	suite_add_tcase(s, tc);

	tc = tcase_create("bounds");
	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_test(tc, test_table);
	tcase_add_test(tc, test_egress);
	tcase_add_test(tc, test_sinknet);
	tcase_add_test(tc, test_replication);
	tcase_add_loop_test(tc, test_bounds, 0, (int)conf_tab_n);
	tcase_add_test(tc, test_sink_concurrency);
	tcase_add_test(tc, test_deliver_pool);
	tcase_add_test(tc, test_breaker);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_loop_test(tc, test_errors, 0,
	    (int)(sizeof(errs_tab) / sizeof(errs_tab[0])));
	tcase_add_test(tc, test_all_errors);
	tcase_add_test(tc, test_not_yaml);
	tcase_add_test(tc, test_rabbitmq_sink);
	tcase_add_test(tc, test_unknown_sink_type);
	suite_add_tcase(s, tc);

	tc = tcase_create("elixir");
	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_loop_test(tc, test_elixir_ok, 0,
	    (int)(sizeof(elixir_ok) / sizeof(elixir_ok[0])));
	tcase_add_loop_test(tc, test_elixir_refused, 0,
	    (int)(sizeof(elixir_refused) / sizeof(elixir_refused[0])));
	tcase_add_test(tc, test_elixir_wal_era);
	tcase_add_checked_fixture(tc, env_clear, env_clear);
	tcase_add_test(tc, test_env);
	tcase_add_loop_test(tc, test_env_bad, 0,
	    (int)(sizeof(env_bad) / sizeof(env_bad[0])));
	suite_add_tcase(s, tc);

	tc = tcase_create("interpolation");
	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_test(tc, test_interp);
	suite_add_tcase(s, tc);

	tc = tcase_create("sources");
	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_test(tc, test_trust_url_tenant);
	tcase_add_test(tc, test_secrets);
	tcase_add_loop_test(tc, test_dedupe_presets, 0,
	    (int)(sizeof(presets_tab) / sizeof(presets_tab[0])));
	tcase_add_test(tc, test_sources_misc);
	tcase_add_test(tc, test_max_sinks);
	tcase_add_test(tc, test_filters);
	tcase_add_test(tc, test_tenants);
	tcase_add_test(tc, test_misc_values);
	tcase_add_test(tc, test_tokens);
	suite_add_tcase(s, tc);

	tc = tcase_create("reload");
	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_test(tc, test_reload_check);
	tcase_add_test(tc, test_reload_keep);
	tcase_add_test(tc, test_load);
	tcase_add_test(tc, test_manual);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	SRunner *sr;
	int failed;

	/* The overrides would change the defaults under test. */
	env_clear();
	sr = srunner_create(conf_suite());
	srunner_set_fork_status(sr, CK_FORK_GETENV);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
