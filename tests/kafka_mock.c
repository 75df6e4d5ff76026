/* SPDX-License-Identifier: ISC */
/*
 * kafka_mock.c: a Kafka cluster for the end-to-end tests and
 * scripts/bench-kafka, librdkafka's mock cluster (rdkafka_mock.h) held by
 * this process on loopback: Debian ships no Kafka broker.
 *
 *   kafka_mock [-b brokers] [-p partitions] TOPIC...
 *
 * Creates the topics (-p partitions each, default 2) on a cluster of -b
 * brokers (default 1), prints its bootstrap servers as the first line of
 * standard output, then reads every record of the topics from the
 * beginning and prints one JSON line for each:
 *
 *   {"topic":..,"partition":N,"offset":N,"ts":ms,"key":"<base64>",
 *    "value":"<base64>","headers":[["name","<base64>"],..]}
 *
 * Commands, one a line on standard input: "down" and "up" take every
 * broker down (connections closed, none accepted) and up again, then
 * print "done down" or "done up" (the mock's calls return once its
 * thread has done it, so a test that waits for the line knows the
 * brokers are down before it goes on); "bench N
 * SIZE" produces N records of SIZE bytes to the topic "bench" (created
 * then) with a plain idempotent producer (acks=all) and prints "bench N
 * US" (microseconds) when every one has its report (its records are not printed).  A
 * record the consumer reads as an error is said on standard error.  This
 * consumer of the 2.0 mock stops printing at about 5 MB of records in one
 * partition (the records are fetched, not handed over): a test keeps below
 * that, or starts another cluster.  EOF
 * on standard input ends it (so does SIGTERM): it stops by itself when
 * its test goes.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <openssl/evp.h>

#define METADATA_API	3	/* the Kafka protocol's ApiKey */

static rd_kafka_mock_cluster_t	*mc;
static int			 nbrokers = 1;
static volatile sig_atomic_t	 stop;

static void
usage(void)
{
	fprintf(stderr, "usage: kafka_mock [-b brokers] [-p partitions] "
	    "TOPIC...\n");
	exit(2);
}

static void
on_term(int sig)
{
	stop = 1;
}

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static json_t *
b64(const void *p, size_t len)
{
	char *s;
	json_t *j;

	if ((s = malloc((len + 2) / 3 * 4 + 1)) == NULL)
		abort();
	s[0] = '\0';
	if (len > 0)
		EVP_EncodeBlock((unsigned char *)s, p, len);
	j = json_string(s);
	free(s);
	return j;
}

static void
print_record(const rd_kafka_message_t *m)
{
	rd_kafka_headers_t *h;
	json_t *o, *hs;
	const char *name;
	const void *v;
	size_t i, len;
	char *line;

	hs = json_array();
	if (rd_kafka_message_headers(m, &h) == 0)
		for (i = 0; rd_kafka_header_get_all(h, i, &name, &v, &len) ==
		    0; i++)
			json_array_append_new(hs, json_pack("[so]", name,
			    b64(v, len)));
	o = json_pack("{sssisIsIsososo}", "topic", rd_kafka_topic_name(m->rkt),
	    "partition", (int)m->partition, "offset", (json_int_t)m->offset,
	    "ts", (json_int_t)rd_kafka_message_timestamp(m, NULL), "key",
	    b64(m->key, m->key_len), "value", b64(m->payload, m->len),
	    "headers", hs);
	line = json_dumps(o, JSON_COMPACT);
	printf("%s\n", line);
	fflush(stdout);
	free(line);
	json_decref(o);
}

static void
set_brokers(int up)
{
	int i;

	for (i = 1; i <= nbrokers; i++)
		if ((up ? rd_kafka_mock_broker_set_up(mc, i) :
		    rd_kafka_mock_broker_set_down(mc, i)) != 0)
			fprintf(stderr, "kafka_mock: broker %d not set %s\n",
			    i, up ? "up" : "down");
}

static void
bench_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	long *left = opaque;

	if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR)
		fprintf(stderr, "kafka_mock: bench: %s\n",
		    rd_kafka_err2str(m->err));
	(*left)--;
}

/* n records of size bytes with a plain producer: "bench N US". */
static void
bench(const char *bootstraps, long n, size_t size)
{
	rd_kafka_conf_t *c = rd_kafka_conf_new();
	rd_kafka_t *rk;
	char err[256], *buf;
	long i, left = n;
	uint64_t t0;

	if ((buf = malloc(size + 1)) == NULL)
		abort();
	memset(buf, 'x', size);
	rd_kafka_mock_topic_create(mc, "bench", 2, 1);
	if (rd_kafka_conf_set(c, "bootstrap.servers", bootstraps, err,
	    sizeof(err)) != RD_KAFKA_CONF_OK ||
	    rd_kafka_conf_set(c, "enable.idempotence", "true", err,
	    sizeof(err)) != RD_KAFKA_CONF_OK) {
		fprintf(stderr, "kafka_mock: %s\n", err);
		exit(1);
	}
	rd_kafka_conf_set_opaque(c, &left);
	rd_kafka_conf_set_dr_msg_cb(c, bench_dr);
	if ((rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err))) ==
	    NULL) {
		fprintf(stderr, "kafka_mock: %s\n", err);
		exit(1);
	}
	t0 = now_us();
	for (i = 0; i < n; i++)
		while (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("bench"),
		    RD_KAFKA_V_VALUE(buf, size), RD_KAFKA_V_KEY("k", 1),
		    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END) ==
		    RD_KAFKA_RESP_ERR__QUEUE_FULL)
			rd_kafka_poll(rk, 10);
	while (left > 0)
		rd_kafka_poll(rk, 10);
	printf("bench %ld %" PRIu64 "\n", n, now_us() - t0);
	fflush(stdout);
	rd_kafka_destroy(rk);
	free(buf);
}

int
main(int argc, char *argv[])
{
	rd_kafka_conf_t *c;
	rd_kafka_topic_partition_list_t *tp;
	rd_kafka_message_t *m;
	rd_kafka_t *host, *rk;
	struct pollfd pfd;
	char err[256], line[256], *bootstraps;
	long n;
	size_t size;
	int ch, parts = 2, i, p;

	while ((ch = getopt(argc, argv, "b:p:")) != -1)
		switch (ch) {
		case 'b':
			nbrokers = atoi(optarg);
			break;
		case 'p':
			parts = atoi(optarg);
			break;
		default:
			usage();
		}
	argc -= optind;
	argv += optind;
	if (argc < 1 || nbrokers < 1 || parts < 1)
		usage();
	signal(SIGTERM, on_term);
	signal(SIGPIPE, SIG_IGN);

	c = rd_kafka_conf_new();
	(void)rd_kafka_conf_set(c, "log_level", "4", err, sizeof(err));
	if ((host = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err))) ==
	    NULL || (mc = rd_kafka_mock_cluster_new(host, nbrokers)) == NULL) {
		fprintf(stderr, "kafka_mock: no mock cluster: %s\n", err);
		return 1;
	}
	/* Metadata v4, whose AllowAutoTopicCreation a producer sets: at the
	 * 2.0 mock's default (v2) every topic asked about is created. */
	rd_kafka_mock_set_apiversion(mc, METADATA_API, 0, 4);
	for (i = 0; i < argc; i++)
		rd_kafka_mock_topic_create(mc, argv[i], parts,
		    nbrokers < 3 ? nbrokers : 3);
	bootstraps = strdup(rd_kafka_mock_cluster_bootstraps(mc));
	printf("%s\n", bootstraps);
	fflush(stdout);

	c = rd_kafka_conf_new();
	if (rd_kafka_conf_set(c, "bootstrap.servers", bootstraps, err,
	    sizeof(err)) != RD_KAFKA_CONF_OK ||
	    rd_kafka_conf_set(c, "group.id", "kafka_mock", err,
	    sizeof(err)) != RD_KAFKA_CONF_OK ||
	    rd_kafka_conf_set(c, "log_level", "3", err, sizeof(err)) !=
	    RD_KAFKA_CONF_OK ||
	    (rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof(err))) ==
	    NULL) {
		fprintf(stderr, "kafka_mock: consumer: %s\n", err);
		return 1;
	}
	tp = rd_kafka_topic_partition_list_new(argc * parts);
	for (i = 0; i < argc; i++)
		for (p = 0; p < parts; p++)
			rd_kafka_topic_partition_list_add(tp, argv[i], p)->
			    offset = RD_KAFKA_OFFSET_BEGINNING;
	if (rd_kafka_assign(rk, tp) != 0) {
		fprintf(stderr, "kafka_mock: assign failed\n");
		return 1;
	}
	rd_kafka_topic_partition_list_destroy(tp);

	pfd.fd = STDIN_FILENO;
	pfd.events = POLLIN;
	while (!stop) {
		if ((m = rd_kafka_consumer_poll(rk, 50)) != NULL) {
			if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR)
				print_record(m);
			else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
				fprintf(stderr, "kafka_mock: consumer: %s\n",
				    rd_kafka_message_errstr(m));
			rd_kafka_message_destroy(m);
		}
		if (poll(&pfd, 1, 0) <= 0)
			continue;
		if (fgets(line, sizeof(line), stdin) == NULL)
			break;		/* EOF: the test is gone */
		if (strcmp(line, "down\n") == 0 ||
		    strcmp(line, "up\n") == 0) {
			set_brokers(line[0] == 'u');
			printf("done %s", line);
			fflush(stdout);
		}
		else if (sscanf(line, "bench %ld %zu", &n, &size) == 2)
			bench(bootstraps, n, size);
		else
			fprintf(stderr, "kafka_mock: unknown command %s",
			    line);
	}
	rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
	rd_kafka_mock_cluster_destroy(mc);
	rd_kafka_destroy(host);
	free(bootstraps);
	return 0;
}
