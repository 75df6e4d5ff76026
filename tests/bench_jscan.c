/* SPDX-License-Identifier: ISC */
/*
 * bench_jscan.c: user CPU per call of the edge's two ways to read a JSON
 * body's event type: json_loadb, json_object_get and json_decref (the
 * edge before workers/jscan.c) against jscan (after), on a 1 KiB body.
 *
 * usage: tests/bench_jscan [ITERATIONS [PATH]]
 *
 * Two bodies, each 1024 bytes: "stripe", an event shaped as Stripe sends
 * them (data.object first, "type" near the end), and "wrk", the body of
 * tests/wrk-post.lua with WRK_TYPED ("type" first, then padding), the one
 * scripts/bench-ingest's BENCH_FILTER posts.  For each, ITERATIONS calls
 * (default 200000) of each way, timed by getrusage's user CPU, after a
 * check that both find the same type.  Prints per body:
 *
 *     BODY_jansson_ns  <ns per call>
 *     BODY_jscan_ns    <ns per call>
 *     BODY_ratio       <jansson / jscan>
 *
 * A micro benchmark only: the ingest rate with and without the filter is
 * scripts/bench-ingest's (BENCH_FILTER=1, scripts/ab).
 */
#include "config.h"

#include <sys/time.h>
#include <sys/resource.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "jscan.h"

#define BODY_LEN	1024

static const char stripe_head[] =
    "{\"id\":\"evt_1NqGJq2eZvKYlo2C0kq9fM7x\",\"object\":\"event\","
    "\"api_version\":\"2023-08-16\",\"created\":1696000000,\"data\":"
    "{\"object\":{\"id\":\"in_1NqGJp2eZvKYlo2Cw1bXa3Q2\",\"object\":"
    "\"invoice\",\"account_country\":\"US\",\"account_name\":\"Acme, "
    "Inc.\",\"amount_due\":2000,\"amount_paid\":2000,\"amount_remaining\""
    ":0,\"attempt_count\":1,\"attempted\":true,\"billing_reason\":"
    "\"subscription_cycle\",\"currency\":\"usd\",\"customer\":"
    "\"cus_OdXbF9k2mZ\",\"customer_email\":\"jenny.rosen@example.com\","
    "\"customer_name\":\"Jenny Ros\\u00e9n\",\"lines\":{\"object\":\"list\","
    "\"data\":[{\"id\":\"il_1\",\"amount\":2000,\"description\":\"1 "
    "\\u00d7 Pro (at $20.00 / month)\",\"period\":{\"start\":1696000000,"
    "\"end\":1698592000},\"quantity\":1}],\"has_more\":false,\"url\":"
    "\"/v1/invoices/in_1/lines\"},\"livemode\":false,\"metadata\":{},"
    "\"paid\":true,\"status\":\"paid\",\"subtotal\":2000,\"tax\":null,"
    "\"total\":2000,\"notes\":\"";
static const char stripe_tail[] =
    "\"}},\"livemode\":false,\"pending_webhooks\":1,\"request\":{\"id\":"
    "null,\"idempotency_key\":null},\"type\":\"invoice.paid\"}";
static const char wrk_head[] = "{\"type\":\"invoice.paid\",\"pad\":\"";
static const char wrk_tail[] = "\"}";

static double
user_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec * 1e9 + ru.ru_utime.tv_usec * 1e3;
}

static void
body_make(char *b, const char *head, const char *tail)
{
	size_t h = strlen(head), t = strlen(tail);

	if (h + t > BODY_LEN) {
		fprintf(stderr, "bench_jscan: body over %d bytes\n", BODY_LEN);
		exit(1);
	}
	memcpy(b, head, h);
	memset(b + h, 'x', BODY_LEN - h - t);
	memcpy(b + BODY_LEN - t, tail, t);
}

static void
bench(const char *name, const char *body, const char *path, long n)
{
	struct jscan_val v;
	json_t *root, *j;
	double t0, tj, ts;
	size_t sum = 0;
	long i;

	root = json_loadb(body, BODY_LEN, 0, NULL);
	j = root != NULL ? json_object_get(root, path) : NULL;
	if (!json_is_string(j) || !jscan(body, BODY_LEN, path, &v) ||
	    v.kind != JSCAN_STRING || v.rawlen != json_string_length(j) ||
	    memcmp(v.raw, json_string_value(j), v.rawlen) != 0) {
		fprintf(stderr, "bench_jscan: %s: the two disagree on %s\n",
		    name, path);
		exit(1);
	}
	json_decref(root);

	t0 = user_ns();
	for (i = 0; i < n; i++) {
		root = json_loadb(body, BODY_LEN, 0, NULL);
		j = json_object_get(root, path);
		sum += json_string_length(j);
		json_decref(root);
	}
	tj = (user_ns() - t0) / n;
	t0 = user_ns();
	for (i = 0; i < n; i++) {
		jscan(body, BODY_LEN, path, &v);
		sum += v.rawlen;
	}
	ts = (user_ns() - t0) / n;
	if (sum == 0)
		printf("\n");		/* keeps the loops */
	printf("%s_jansson_ns%*s %.0f\n", name, (int)(8 - strlen(name)), "",
	    tj);
	printf("%s_jscan_ns%*s   %.0f\n", name, (int)(8 - strlen(name)), "",
	    ts);
	printf("%s_ratio%*s       %.1f\n", name, (int)(8 - strlen(name)), "",
	    ts > 0 ? tj / ts : 0);
}

int
main(int argc, char *argv[])
{
	char stripe[BODY_LEN], wrk[BODY_LEN];
	long n = argc > 1 ? atol(argv[1]) : 200000;
	const char *path = argc > 2 ? argv[2] : "type";

	if (n <= 0) {
		fprintf(stderr, "usage: bench_jscan [ITERATIONS [PATH]]\n");
		return 1;
	}
	body_make(stripe, stripe_head, stripe_tail);
	body_make(wrk, wrk_head, wrk_tail);
	bench("stripe", stripe, path, n);
	bench("wrk", wrk, path, n);
	return 0;
}
