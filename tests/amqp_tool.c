/* SPDX-License-Identifier: ISC */
/*
 * amqp_tool.c: a plain AMQP 0-9-1 client over librabbitmq for the rabbitmq
 * sink's tests (tests/e2e/test_rabbitmq.py) and scripts/bench-rabbitmq.
 *
 *   amqp_tool ping HOST PORT
 *	connect, log in, open a channel: exit 0 when the broker is up
 *   amqp_tool setup HOST PORT EXCHANGE TYPE QUEUE KEY [MAXLEN]
 *	declare EXCHANGE (durable, of TYPE) and QUEUE (durable; with MAXLEN,
 *	x-max-length MAXLEN and x-overflow reject-publish: a publish past it
 *	is nacked), bind them with KEY
 *   amqp_tool consume HOST PORT QUEUE COUNT IDLE_MS
 *	consume QUEUE (acked one by one) until COUNT messages came or none
 *	for IDLE_MS; each message one line of JSON on stdout:
 *	{"message_id","content_type","delivery_mode","app_id","timestamp",
 *	 "routing_key","headers":{name: value},"body"}, strings escaped as
 *	JSON (\u00XX for control bytes and bytes above 0x7e: the sink's
 *	bodies are ASCII, so the body's bytes come back exactly).  "ready" on
 *	stderr once the consumer is registered.
 *   amqp_tool publish HOST PORT EXCHANGE KEY COUNT SIZE WINDOW
 *	publish COUNT persistent messages of SIZE bytes with publisher
 *	confirms, at most WINDOW awaiting theirs; prints "published N in S s:
 *	R/s" (N confirmed by basic.ack).
 *
 * guest/guest on vhost /.  Exits 1 on any error, with a line on stderr.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <amqp.h>
#include <amqp_tcp_socket.h>

static amqp_connection_state_t	conn;

static void
die_reply(amqp_rpc_reply_t r, const char *what)
{
	if (r.reply_type == AMQP_RESPONSE_NORMAL)
		return;
	if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
	    r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
		amqp_channel_close_t *c = r.reply.decoded;

		fprintf(stderr, "amqp_tool: %s: %.*s\n", what,
		    (int)c->reply_text.len, (char *)c->reply_text.bytes);
	} else if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION)
		fprintf(stderr, "amqp_tool: %s: %s\n", what,
		    amqp_error_string2(r.library_error));
	else
		fprintf(stderr, "amqp_tool: %s: failed (%d)\n", what,
		    (int)r.reply_type);
	exit(1);
}

static void
open_conn(const char *host, const char *port)
{
	amqp_socket_t *s;

	conn = amqp_new_connection();
	if ((s = amqp_tcp_socket_new(conn)) == NULL ||
	    amqp_socket_open(s, host, atoi(port)) != AMQP_STATUS_OK) {
		fprintf(stderr, "amqp_tool: cannot connect to %s:%s\n", host,
		    port);
		exit(1);
	}
	die_reply(amqp_login(conn, "/", 0, 131072, 0, AMQP_SASL_METHOD_PLAIN,
	    "guest", "guest"), "login");
	amqp_channel_open(conn, 1);
	die_reply(amqp_get_rpc_reply(conn), "channel.open");
}

static void
json_str(const void *p, size_t n)
{
	const unsigned char *s = p;
	size_t i;

	putchar('"');
	for (i = 0; i < n; i++) {
		if (s[i] == '"' || s[i] == '\\')
			printf("\\%c", s[i]);
		else if (s[i] < 0x20 || s[i] > 0x7e)
			printf("\\u%04x", s[i]);
		else
			putchar(s[i]);
	}
	putchar('"');
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int
consume(const char *queue, long count, long idle_ms)
{
	amqp_envelope_t env;
	amqp_rpc_reply_t r;
	amqp_basic_properties_t *p;
	struct timeval tv;
	long got = 0;
	int i;

	amqp_basic_qos(conn, 1, 0, 512, 0);
	die_reply(amqp_get_rpc_reply(conn), "basic.qos");
	amqp_basic_consume(conn, 1, amqp_cstring_bytes(queue), amqp_empty_bytes,
	    0, 0, 0, amqp_empty_table);
	die_reply(amqp_get_rpc_reply(conn), "basic.consume");
	fprintf(stderr, "ready\n");
	while (got < count) {
		tv.tv_sec = idle_ms / 1000;
		tv.tv_usec = (idle_ms % 1000) * 1000;
		amqp_maybe_release_buffers(conn);
		r = amqp_consume_message(conn, &env, &tv, 0);
		if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
		    r.library_error == AMQP_STATUS_TIMEOUT)
			break;
		die_reply(r, "consume");
		p = &env.message.properties;
		printf("{\"message_id\":");
		json_str(p->message_id.bytes, (p->_flags &
		    AMQP_BASIC_MESSAGE_ID_FLAG) ? p->message_id.len : 0);
		printf(",\"content_type\":");
		json_str(p->content_type.bytes, (p->_flags &
		    AMQP_BASIC_CONTENT_TYPE_FLAG) ? p->content_type.len : 0);
		printf(",\"app_id\":");
		json_str(p->app_id.bytes, (p->_flags &
		    AMQP_BASIC_APP_ID_FLAG) ? p->app_id.len : 0);
		printf(",\"delivery_mode\":%d,\"timestamp\":%llu",
		    (p->_flags & AMQP_BASIC_DELIVERY_MODE_FLAG) ?
		    p->delivery_mode : 0, (p->_flags &
		    AMQP_BASIC_TIMESTAMP_FLAG) ?
		    (unsigned long long)p->timestamp : 0ULL);
		printf(",\"routing_key\":");
		json_str(env.routing_key.bytes, env.routing_key.len);
		printf(",\"headers\":{");
		for (i = 0; (p->_flags & AMQP_BASIC_HEADERS_FLAG) &&
		    i < p->headers.num_entries; i++) {
			amqp_table_entry_t *e = &p->headers.entries[i];

			if (i > 0)
				putchar(',');
			json_str(e->key.bytes, e->key.len);
			putchar(':');
			if (e->value.kind == AMQP_FIELD_KIND_UTF8 ||
			    e->value.kind == AMQP_FIELD_KIND_BYTES)
				json_str(e->value.value.bytes.bytes,
				    e->value.value.bytes.len);
			else
				printf("null");
		}
		printf("},\"body\":");
		json_str(env.message.body.bytes, env.message.body.len);
		printf("}\n");
		fflush(stdout);
		if (amqp_basic_ack(conn, 1, env.delivery_tag, 0) != 0) {
			fprintf(stderr, "amqp_tool: basic.ack failed\n");
			return 1;
		}
		amqp_destroy_envelope(&env);
		got++;
	}
	return 0;
}

static int
publish(const char *ex, const char *key, long count, long size, long window)
{
	amqp_basic_properties_t p;
	amqp_frame_t f;
	amqp_bytes_t body;
	char *buf;
	long sent = 0, acked = 0, out = 0;
	uint64_t tag;
	double t0, t;

	if ((buf = malloc(size + 1)) == NULL)
		return 1;
	memset(buf, 'x', size);
	body.bytes = buf;
	body.len = size;
	amqp_confirm_select(conn, 1);
	die_reply(amqp_get_rpc_reply(conn), "confirm.select");
	memset(&p, 0, sizeof(p));
	p._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG;
	p.content_type = amqp_cstring_bytes("application/json");
	p.delivery_mode = AMQP_DELIVERY_PERSISTENT;
	t0 = now_s();
	while (acked < count) {
		if (sent < count && out < window) {
			if (amqp_basic_publish(conn, 1, amqp_cstring_bytes(ex),
			    amqp_cstring_bytes(key), 0, 0, &p, body) != 0) {
				fprintf(stderr, "amqp_tool: publish failed\n");
				return 1;
			}
			sent++;
			out++;
			continue;
		}
		if (amqp_simple_wait_frame(conn, &f) != AMQP_STATUS_OK) {
			fprintf(stderr, "amqp_tool: connection lost\n");
			return 1;
		}
		if (f.frame_type != AMQP_FRAME_METHOD)
			continue;
		if (f.payload.method.id == AMQP_BASIC_ACK_METHOD) {
			amqp_basic_ack_t *a = f.payload.method.decoded;

			tag = a->delivery_tag;
			if (a->multiple) {
				out -= (long)tag - acked;
				acked = (long)tag;
			} else {
				out--;
				acked++;
			}
		} else if (f.payload.method.id == AMQP_BASIC_NACK_METHOD) {
			fprintf(stderr, "amqp_tool: nack\n");
			return 1;
		}
		amqp_maybe_release_buffers(conn);
	}
	t = now_s() - t0;
	printf("published %ld in %.3f s: %.0f/s\n", acked, t, acked / t);
	free(buf);
	return 0;
}

int
main(int argc, char *argv[])
{
	amqp_table_entry_t qa[2];
	amqp_table_t args = amqp_empty_table;
	int rc = 0;

	if (argc >= 4 && strcmp(argv[1], "ping") == 0)
		open_conn(argv[2], argv[3]);
	else if (argc >= 8 && strcmp(argv[1], "setup") == 0) {
		open_conn(argv[2], argv[3]);
		amqp_exchange_declare(conn, 1, amqp_cstring_bytes(argv[4]),
		    amqp_cstring_bytes(argv[5]), 0, 1, 0, 0, amqp_empty_table);
		die_reply(amqp_get_rpc_reply(conn), "exchange.declare");
		if (argc >= 9) {
			qa[0].key = amqp_cstring_bytes("x-max-length");
			qa[0].value.kind = AMQP_FIELD_KIND_I64;
			qa[0].value.value.i64 = atol(argv[8]);
			qa[1].key = amqp_cstring_bytes("x-overflow");
			qa[1].value.kind = AMQP_FIELD_KIND_UTF8;
			qa[1].value.value.bytes =
			    amqp_cstring_bytes("reject-publish");
			args.num_entries = 2;
			args.entries = qa;
		}
		amqp_queue_declare(conn, 1, amqp_cstring_bytes(argv[6]), 0, 1,
		    0, 0, args);
		die_reply(amqp_get_rpc_reply(conn), "queue.declare");
		amqp_queue_bind(conn, 1, amqp_cstring_bytes(argv[6]),
		    amqp_cstring_bytes(argv[4]), amqp_cstring_bytes(argv[7]),
		    amqp_empty_table);
		die_reply(amqp_get_rpc_reply(conn), "queue.bind");
	} else if (argc >= 7 && strcmp(argv[1], "consume") == 0) {
		open_conn(argv[2], argv[3]);
		rc = consume(argv[4], atol(argv[5]), atol(argv[6]));
	} else if (argc >= 9 && strcmp(argv[1], "publish") == 0) {
		open_conn(argv[2], argv[3]);
		rc = publish(argv[4], argv[5], atol(argv[6]), atol(argv[7]),
		    atol(argv[8]));
	} else {
		fprintf(stderr, "usage: amqp_tool ping|setup|consume|publish "
		    "...\n");
		return 1;
	}
	amqp_channel_close(conn, 1, AMQP_REPLY_SUCCESS);
	amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
	amqp_destroy_connection(conn);
	return rc;
}
