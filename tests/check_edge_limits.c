/* SPDX-License-Identifier: ISC */
/*
 * check_edge_limits.c: unit tests for workers/edge_limits.c, what one edge
 * lets a client hold: connections per address, body bytes held, the
 * deadline of a body under http.min_body_rate.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "edge_limits.h"

#define CASE_TIMEOUT	10

static socklen_t	sa_v4(struct sockaddr_storage *, const char *);
static socklen_t	sa_v6(struct sockaddr_storage *, const char *);

static socklen_t
sa_v4(struct sockaddr_storage *ss, const char *a)
{
	struct sockaddr_in *s = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	s->sin_family = AF_INET;
	s->sin_port = htons(40000);
	ck_assert_int_eq(inet_pton(AF_INET, a, &s->sin_addr), 1);
	return sizeof(*s);
}

static socklen_t
sa_v6(struct sockaddr_storage *ss, const char *a)
{
	struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	s->sin6_family = AF_INET6;
	s->sin6_port = htons(40001);
	ck_assert_int_eq(inet_pton(AF_INET6, a, &s->sin6_addr), 1);
	return sizeof(*s);
}

/* Up to the cap per address; another address is not affected; a closed
 * connection gives its slot back; the ports do not matter. */
START_TEST(test_conns_per_address)
{
	struct sockaddr_storage ss;
	struct edge_addr a[4], b, over;
	socklen_t n;
	char buf[64];
	int i;

	n = sa_v4(&ss, "127.0.0.1");
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(edge_limits_conn_open((struct sockaddr *)&ss,
		    n, 3, 128, &a[i]), 0);
	ck_assert_uint_eq(edge_limits_conns(&a[0]), 3);
	ck_assert_int_eq(edge_limits_conn_open((struct sockaddr *)&ss, n, 3, 128,
	    &over), -1);
	ck_assert_int_eq(over.counted, 0);
	edge_limits_addr_str(&over, buf, sizeof(buf));
	ck_assert_str_eq(buf, "127.0.0.1");

	n = sa_v4(&ss, "127.0.0.2");
	ck_assert_int_eq(edge_limits_conn_open((struct sockaddr *)&ss, n, 3, 128,
	    &b), 0);
	ck_assert_uint_eq(edge_limits_conns(&b), 1);

	edge_limits_conn_close(&a[1]);
	edge_limits_conn_close(&a[1]);		/* a second close is none */
	ck_assert_uint_eq(edge_limits_conns(&a[0]), 2);
	n = sa_v4(&ss, "127.0.0.1");
	ck_assert_int_eq(edge_limits_conn_open((struct sockaddr *)&ss, n, 3, 128,
	    &a[3]), 0);
	ck_assert_int_eq(edge_limits_conn_open((struct sockaddr *)&ss, n, 3, 128,
	    &over), -1);

	edge_limits_conn_close(&a[0]);
	edge_limits_conn_close(&a[2]);
	edge_limits_conn_close(&a[3]);
	edge_limits_conn_close(&b);
	ck_assert_uint_eq(edge_limits_conns(&a[0]), 0);
	ck_assert_uint_eq(edge_limits_conns(&b), 0);
}
END_TEST

/* An IPv4-mapped IPv6 client is its IPv4 address; a unix socket is not
 * counted. */
START_TEST(test_conns_mapped_and_unix)
{
	struct sockaddr_storage ss;
	struct sockaddr_un *un = (struct sockaddr_un *)&ss;
	struct edge_addr v4, v6, m, u;
	socklen_t n;
	char buf[64];

	n = sa_v4(&ss, "192.0.2.7");
	ck_assert_int_eq(edge_limits_conn_open((struct sockaddr *)&ss, n, 2, 128,
	    &v4), 0);
	n = sa_v6(&ss, "::ffff:192.0.2.7");
	ck_assert_int_eq(edge_limits_conn_open((struct sockaddr *)&ss, n, 2, 128,
	    &m), 0);
	ck_assert_int_eq(edge_limits_conn_open((struct sockaddr *)&ss, n, 2, 128,
	    &u), -1);
	n = sa_v6(&ss, "2001:db8::7");
	ck_assert_int_eq(edge_limits_conn_open((struct sockaddr *)&ss, n, 2, 128,
	    &v6), 0);
	edge_limits_addr_str(&v6, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2001:db8::7");

	memset(&ss, 0, sizeof(ss));
	un->sun_family = AF_UNIX;
	ck_assert_int_eq(edge_limits_conn_open((struct sockaddr *)&ss,
	    sizeof(*un), 1, 128, &u), 1);
	ck_assert_int_eq(u.counted, 0);
	edge_limits_conn_close(&u);		/* harmless */

	edge_limits_conn_close(&v4);
	edge_limits_conn_close(&m);
	edge_limits_conn_close(&v6);
}
END_TEST

/* Bytes charged as they arrive, up to the edge's bound; one body larger
 * than the bound only when nothing else is held; a chunked body's bytes
 * shrink to its decoded size. */
START_TEST(test_buffered)
{
	struct edge_addr u;
	uint64_t a = 0, b = 0, c = 0;

	memset(&u, 0, sizeof(u));	/* not counted: no address cap */
	ck_assert_int_eq(edge_limits_charge(&u, &a, 600, 1000, 10), 0);
	ck_assert_int_eq(edge_limits_charge(&u, &b, 400, 1000, 10), 0);
	ck_assert_uint_eq(edge_limits_buffered(), 1000);
	ck_assert_int_eq(edge_limits_charge(&u, &c, 1, 1000, 10), -1);
	ck_assert_uint_eq(c, 0);
	ck_assert_uint_eq(edge_limits_buffered(), 1000);
	edge_limits_hold(&u, &a, 100);		/* a chunked body: 100 read */
	ck_assert_uint_eq(edge_limits_buffered(), 500);
	ck_assert_int_eq(edge_limits_charge(&u, &c, 500, 1000, 10), 0);
	ck_assert_int_eq(edge_limits_charge(&u, &c, 1, 1000, 10), -1);
	edge_limits_release(&u, &a);
	edge_limits_release(&u, &b);
	edge_limits_release(&u, &c);
	edge_limits_release(&u, &c);		/* nothing held: no-op */
	ck_assert_uint_eq(edge_limits_buffered(), 0);

	/* Alone, a body goes on past the bound, and holds off the rest. */
	ck_assert_int_eq(edge_limits_charge(&u, &a, 5000, 1000, 10), 0);
	ck_assert_int_eq(edge_limits_charge(&u, &a, 5000, 1000, 10), 0);
	ck_assert_int_eq(edge_limits_charge(&u, &b, 1, 1000, 10), -1);
	edge_limits_release(&u, &a);
	ck_assert_int_eq(edge_limits_charge(&u, &b, 1, 1000, 10), 0);
	ck_assert_int_eq(edge_limits_charge(&u, &a, UINT64_MAX, 1000, 10),
	    -1);
	edge_limits_release(&u, &b);
	ck_assert_uint_eq(edge_limits_buffered(), 0);
}
END_TEST

/*
 * The issue-36 starvation: many requests of one address each announce a
 * large body and send a little.  Nothing is charged for what they only
 * announce; what they send is capped by the address's share, past which
 * its own requests are refused, never another address's.
 */
START_TEST(test_buffered_per_address)
{
	struct sockaddr_storage ss;
	struct edge_addr slow[40], other;
	uint64_t held[40], oh = 0;
	socklen_t n;
	int i, refused = 0;

	n = sa_v4(&ss, "127.0.0.2");
	for (i = 0; i < 40; i++) {
		held[i] = 0;
		ck_assert_int_eq(edge_limits_conn_open((struct sockaddr *)&ss,
		    n, 256, 128, &slow[i]), 0);
		/* 100 bytes each of an announced 8 MB: all taken. */
		ck_assert_int_eq(edge_limits_charge(&slow[i], &held[i], 100,
		    1000000, 250000), 0);
	}
	ck_assert_uint_eq(edge_limits_addr_held(&slow[0]), 4000);
	/* They push on: 10000 more each, 250000 for the address. */
	for (i = 0; i < 40; i++)
		if (edge_limits_charge(&slow[i], &held[i], 10000, 1000000,
		    250000) == -1)
			refused++;
	ck_assert_int_eq(refused, 40 - 24);
	ck_assert_uint_le(edge_limits_addr_held(&slow[0]), 250000);
	/* Another address takes a whole body beside them. */
	n = sa_v4(&ss, "127.0.0.3");
	ck_assert_int_eq(edge_limits_conn_open((struct sockaddr *)&ss, n, 256,
	    128, &other), 0);
	ck_assert_int_eq(edge_limits_charge(&other, &oh, 200000, 1000000,
	    250000), 0);
	ck_assert_uint_eq(edge_limits_addr_held(&other), 200000);
	/* One request that holds all its address's bytes passes the cap. */
	ck_assert_int_eq(edge_limits_charge(&other, &oh, 100000, 1000000,
	    250000), 0);
	edge_limits_release(&other, &oh);
	edge_limits_conn_close(&other);
	for (i = 0; i < 40; i++) {
		edge_limits_release(&slow[i], &held[i]);
		edge_limits_conn_close(&slow[i]);
	}
	ck_assert_uint_eq(edge_limits_buffered(), 0);
}
END_TEST

/* IPv6 clients count by their prefix: a /64 by default, any length
 * configured; IPv4 and IPv4-mapped addresses are whole. */
START_TEST(test_conns_ipv6_prefix)
{
	struct sockaddr_storage ss;
	struct edge_addr a, b, c, d, m1, m2;
	socklen_t n;
	char buf[64];

	n = sa_v6(&ss, "2001:db8:1:2:aaaa::1");
	ck_assert_int_eq(edge_limits_conn_open((struct sockaddr *)&ss, n, 2,
	    64, &a), 0);
	edge_limits_addr_str(&a, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2001:db8:1:2::/64");
	n = sa_v6(&ss, "2001:db8:1:2:ffff:1:2:3");
	ck_assert_int_eq(edge_limits_conn_open((struct sockaddr *)&ss, n, 2,
	    64, &b), 0);
	ck_assert_uint_eq(edge_limits_conns(&a), 2);
	ck_assert_int_eq(edge_limits_conn_open((struct sockaddr *)&ss, n, 2,
	    64, &c), -1);
	/* The next /64 is another client. */
	n = sa_v6(&ss, "2001:db8:1:3::1");
	ck_assert_int_eq(edge_limits_conn_open((struct sockaddr *)&ss, n, 2,
	    64, &c), 0);
	ck_assert_uint_eq(edge_limits_conns(&c), 1);
	/* A /60: 2001:db8:1:3:: and 2001:db8:1:f:: share 2001:db8:1::/60. */
	n = sa_v6(&ss, "2001:db8:1:f::9");
	ck_assert_int_eq(edge_limits_conn_open((struct sockaddr *)&ss, n, 2,
	    60, &d), 0);
	edge_limits_addr_str(&d, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2001:db8:1::/60");
	edge_limits_conn_close(&d);
	/* IPv4-mapped addresses are never cut. */
	n = sa_v6(&ss, "::ffff:192.0.2.1");
	ck_assert_int_eq(edge_limits_conn_open((struct sockaddr *)&ss, n, 1,
	    64, &m1), 0);
	n = sa_v6(&ss, "::ffff:192.0.2.2");
	ck_assert_int_eq(edge_limits_conn_open((struct sockaddr *)&ss, n, 1,
	    64, &m2), 0);
	edge_limits_addr_str(&m2, buf, sizeof(buf));
	ck_assert_str_eq(buf, "192.0.2.2");
	edge_limits_conn_close(&a);
	edge_limits_conn_close(&b);
	edge_limits_conn_close(&c);
	edge_limits_conn_close(&m1);
	edge_limits_conn_close(&m2);
}
END_TEST

struct rate_case {
	uint64_t	start, received, rate, deadline;
};

static const struct rate_case rate_cases[] = {
	{ 0, 0, 1024, EDGE_LIMITS_BODY_GRACE_MS },
	{ 5000, 0, 1024, 5000 + EDGE_LIMITS_BODY_GRACE_MS },
	{ 0, 1024, 1024, EDGE_LIMITS_BODY_GRACE_MS + 1000 },
	{ 0, 512, 1024, EDGE_LIMITS_BODY_GRACE_MS + 500 },
	{ 0, 100, 100, EDGE_LIMITS_BODY_GRACE_MS + 1000 },
	{ 0, 8000000, 1024, EDGE_LIMITS_BODY_GRACE_MS + 7812500 },
	{ 0, UINT64_MAX, 1024, UINT64_MAX },
	{ UINT64_MAX - 5, 0, 1024, UINT64_MAX },
};

START_TEST(test_body_deadline)
{
	const struct rate_case *tc = &rate_cases[_i];

	ck_assert_uint_eq(edge_limits_body_deadline(tc->start, tc->received,
	    tc->rate), tc->deadline);
}
END_TEST

static Suite *
edge_limits_suite(void)
{
	Suite *s = suite_create("edge_limits");
	TCase *tc;

	tc = tcase_create("conns");
	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_test(tc, test_conns_per_address);
	tcase_add_test(tc, test_conns_mapped_and_unix);
	tcase_add_test(tc, test_conns_ipv6_prefix);
	suite_add_tcase(s, tc);

	tc = tcase_create("buffered");
	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_test(tc, test_buffered);
	tcase_add_test(tc, test_buffered_per_address);
	suite_add_tcase(s, tc);

	tc = tcase_create("rate");
	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_loop_test(tc, test_body_deadline, 0,
	    (int)(sizeof(rate_cases) / sizeof(rate_cases[0])));
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(edge_limits_suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
