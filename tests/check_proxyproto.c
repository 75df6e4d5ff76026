/* SPDX-License-Identifier: ISC */
/*
 * check_proxyproto.c: unit tests for workers/proxyproto.c, the PROXY
 * protocol header: the examples of HAProxy's proxy-protocol.txt, every
 * cut of them (a prefix is MORE, never an error), and malformed headers.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "netaddr.h"
#include "proxyproto.h"

#define CASE_TIMEOUT	10

static const unsigned char sig[12] = {
	0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a
};

static void	expect_src(const struct proxyproto *, int, const char *,
		    uint16_t);
static void	expect_prefixes_more(const void *, size_t);

static void
expect_src(const struct proxyproto *pp, int af, const char *a, uint16_t port)
{
	const struct sockaddr_in *s4 = (const void *)&pp->src;
	const struct sockaddr_in6 *s6 = (const void *)&pp->src;
	char buf[INET6_ADDRSTRLEN];

	ck_assert_int_eq(pp->has_src, 1);
	ck_assert_int_eq(pp->src.ss_family, af);
	if (af == AF_INET) {
		ck_assert_uint_eq(pp->srclen, sizeof(*s4));
		ck_assert_ptr_nonnull(inet_ntop(AF_INET, &s4->sin_addr, buf,
		    sizeof(buf)));
		ck_assert_uint_eq(ntohs(s4->sin_port), port);
	} else {
		ck_assert_uint_eq(pp->srclen, sizeof(*s6));
		ck_assert_ptr_nonnull(inet_ntop(AF_INET6, &s6->sin6_addr, buf,
		    sizeof(buf)));
		ck_assert_uint_eq(ntohs(s6->sin6_port), port);
	}
	ck_assert_str_eq(buf, a);
}

/* Every proper prefix of a good header asks for more. */
static void
expect_prefixes_more(const void *h, size_t n)
{
	struct proxyproto pp;
	size_t i;

	for (i = 0; i < n; i++)
		ck_assert_msg(proxyproto_parse(h, i, &pp) == PROXYPROTO_MORE,
		    "prefix of %zu bytes: %s", i, pp.error ? pp.error : "");
}

/* The spec's v1 examples, with HTTP after them. */
START_TEST(test_v1_examples)
{
	static const char t4[] =
	    "PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\nGET / HTTP/1.1";
	static const char t6[] = "PROXY TCP6 2001:db8::1 ::1 65535 0\r\n";
	static const char un[] = "PROXY UNKNOWN\r\n";
	static const char unx[] =
	    "PROXY UNKNOWN ffff:f...f:ffff ffff:f...f:ffff 65535 65535\r\n";
	struct proxyproto pp;

	ck_assert_int_eq(proxyproto_parse(t4, sizeof(t4) - 1, &pp),
	    PROXYPROTO_DONE);
	ck_assert_int_eq(pp.version, 1);
	ck_assert_uint_eq(pp.len, strchr(t4, '\n') - t4 + 1);
	expect_src(&pp, AF_INET, "192.168.0.1", 56324);
	expect_prefixes_more(t4, pp.len);

	ck_assert_int_eq(proxyproto_parse(t6, sizeof(t6) - 1, &pp),
	    PROXYPROTO_DONE);
	expect_src(&pp, AF_INET6, "2001:db8::1", 65535);
	expect_prefixes_more(t6, sizeof(t6) - 1);

	ck_assert_int_eq(proxyproto_parse(un, sizeof(un) - 1, &pp),
	    PROXYPROTO_DONE);
	ck_assert_int_eq(pp.has_src, 0);
	ck_assert_uint_eq(pp.len, sizeof(un) - 1);
	ck_assert_int_eq(proxyproto_parse(unx, sizeof(unx) - 1, &pp),
	    PROXYPROTO_DONE);
	ck_assert_int_eq(pp.has_src, 0);
	ck_assert_uint_eq(pp.len, sizeof(unx) - 1);
}
END_TEST

/* The worst case of the spec, 107 bytes, passes; 108 does not. */
START_TEST(test_v1_bound)
{
	char line[200];
	struct proxyproto pp;
	size_t n;

	strcpy(line, "PROXY UNKNOWN ");
	n = strlen(line);
	memset(line + n, 'x', PROXYPROTO_V1_MAX - 2 - n);
	memcpy(line + PROXYPROTO_V1_MAX - 2, "\r\n", 2);
	ck_assert_int_eq(proxyproto_parse(line, PROXYPROTO_V1_MAX, &pp),
	    PROXYPROTO_DONE);
	ck_assert_uint_eq(pp.len, PROXYPROTO_V1_MAX);
	memset(line + n, 'x', PROXYPROTO_V1_MAX - 1 - n);
	memcpy(line + PROXYPROTO_V1_MAX - 1, "\r\n", 2);
	ck_assert_int_eq(proxyproto_parse(line, PROXYPROTO_V1_MAX + 1, &pp),
	    PROXYPROTO_ERROR);
	/* No CRLF in 107 bytes: refused without waiting for more. */
	memset(line + n, 'x', sizeof(line) - n);
	ck_assert_int_eq(proxyproto_parse(line, PROXYPROTO_V1_MAX, &pp),
	    PROXYPROTO_ERROR);
	ck_assert_int_eq(proxyproto_parse(line, PROXYPROTO_V1_MAX - 1, &pp),
	    PROXYPROTO_MORE);
}
END_TEST

static const char *const v1_bad[] = {
	"GET / HTTP/1.1\r\n",				/* no header */
	"PROXY\r\n",
	"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n",		/* LF alone */
	"PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n",
	"PROXY tcp4 1.2.3.4 5.6.7.8 1 2\r\n",
	"PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n",		/* a field short */
	"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n",		/* one too many */
	"PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n",		/* two spaces */
	"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n",		/* trailing space */
	"PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n",
	"PROXY TCP4 01.2.3.4 5.6.7.8 1 2\r\n",		/* not standard form */
	"PROXY TCP4 1.2.3 5.6.7.8 1 2\r\n",
	"PROXY TCP4 ::1 5.6.7.8 1 2\r\n",		/* v6 under TCP4 */
	"PROXY TCP6 1.2.3.4 ::1 1 2\r\n",		/* v4 under TCP6 */
	"PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n",
	"PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n",
	"PROXY TCP4 1.2.3.4 5.6.7.8 -1 2\r\n",
	"PROXY TCP4 1.2.3.4 5.6.7.8 1 2x\r\n",
	"PROXY TCP4 1.2.3.4\t5.6.7.8 1 2\r\n",
	"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\r\n",
	"PROXY UNKNOWNX\r\n",
	"\r\n\r\nPROXY",					/* a v2 start gone wrong */
};

START_TEST(test_v1_malformed)
{
	struct proxyproto pp;
	const char *h = v1_bad[_i];

	ck_assert_msg(proxyproto_parse(h, strlen(h), &pp) == PROXYPROTO_ERROR,
	    "accepted %s", h);
	ck_assert_ptr_nonnull(pp.error);
}
END_TEST

/* A v2 header: the signature, ver_cmd, fam, then body of blen bytes. */
static size_t
v2(unsigned char *out, unsigned vc, unsigned fam, const void *body,
    size_t blen)
{
	memcpy(out, sig, 12);
	out[12] = (unsigned char)vc;
	out[13] = (unsigned char)fam;
	out[14] = (unsigned char)(blen >> 8);
	out[15] = (unsigned char)blen;
	memcpy(out + 16, body, blen);
	return 16 + blen;
}

/* PROXY over TCP/IPv4 and TCP/IPv6, with TLVs skipped; LOCAL. */
START_TEST(test_v2_examples)
{
	static const unsigned char in4[] = {
		192, 0, 2, 1, 198, 51, 100, 7, 0xdb, 0xc4, 0x01, 0xbb,
		/* PP2_TYPE_ALPN "h2", PP2_TYPE_NOOP of 0 bytes */
		0x01, 0x00, 0x02, 'h', '2', 0x04, 0x00, 0x00,
	};
	unsigned char in6[36], h[300], buf[300];
	struct proxyproto pp;
	size_t n;

	n = v2(h, 0x21, 0x11, in4, sizeof(in4));
	memcpy(h + n, "GET", 3);
	ck_assert_int_eq(proxyproto_parse(h, n + 3, &pp), PROXYPROTO_DONE);
	ck_assert_int_eq(pp.version, 2);
	ck_assert_uint_eq(pp.len, n);
	expect_src(&pp, AF_INET, "192.0.2.1", 56260);
	expect_prefixes_more(h, n);

	memset(in6, 0, sizeof(in6));
	ck_assert_int_eq(inet_pton(AF_INET6, "2001:db8::42", in6), 1);
	in6[32] = 0x30;
	in6[33] = 0x39;
	n = v2(h, 0x21, 0x21, in6, sizeof(in6));
	ck_assert_int_eq(proxyproto_parse(h, n, &pp), PROXYPROTO_DONE);
	expect_src(&pp, AF_INET6, "2001:db8::42", 12345);

	/* LOCAL: a health check of the proxy's own; nothing to read. */
	n = v2(h, 0x20, 0x00, "", 0);
	ck_assert_int_eq(proxyproto_parse(h, n, &pp), PROXYPROTO_DONE);
	ck_assert_int_eq(pp.has_src, 0);
	ck_assert_uint_eq(pp.len, 16);
	n = v2(h, 0x20, 0x11, in4, 12);
	ck_assert_int_eq(proxyproto_parse(h, n, &pp), PROXYPROTO_DONE);
	ck_assert_int_eq(pp.has_src, 0);

	/* UDP: valid, not served; the connection's address stays. */
	n = v2(h, 0x21, 0x12, in4, 12);
	ck_assert_int_eq(proxyproto_parse(h, n, &pp), PROXYPROTO_DONE);
	ck_assert_int_eq(pp.has_src, 0);

	/* PROXY over UNSPEC and UNIX: the connection's address stays. */
	n = v2(h, 0x21, 0x00, "", 0);
	ck_assert_int_eq(proxyproto_parse(h, n, &pp), PROXYPROTO_DONE);
	ck_assert_int_eq(pp.has_src, 0);
	memset(buf, 0, 216);
	n = v2(h, 0x21, 0x31, buf, 216);
	ck_assert_int_eq(proxyproto_parse(h, n, &pp), PROXYPROTO_DONE);
	ck_assert_int_eq(pp.has_src, 0);
}
END_TEST

START_TEST(test_v2_malformed)
{
	static const unsigned char in4[12] = { 10, 0, 0, 1, 10, 0, 0, 2 };
	unsigned char h[300], body[40];
	struct proxyproto pp;
	size_t n;

	n = v2(h, 0x11, 0x11, in4, 12);			/* version 1 */
	ck_assert_int_eq(proxyproto_parse(h, n, &pp), PROXYPROTO_ERROR);
	n = v2(h, 0x22, 0x11, in4, 12);			/* command 2 */
	ck_assert_int_eq(proxyproto_parse(h, n, &pp), PROXYPROTO_ERROR);
	n = v2(h, 0x21, 0x41, in4, 12);			/* family 4 */
	ck_assert_int_eq(proxyproto_parse(h, n, &pp), PROXYPROTO_ERROR);
	n = v2(h, 0x21, 0x13, in4, 12);			/* transport 3 */
	ck_assert_int_eq(proxyproto_parse(h, n, &pp), PROXYPROTO_ERROR);
	n = v2(h, 0x21, 0x10, in4, 12);			/* no transport */
	ck_assert_int_eq(proxyproto_parse(h, n, &pp), PROXYPROTO_ERROR);
	n = v2(h, 0x21, 0x11, in4, 11);			/* short */
	ck_assert_int_eq(proxyproto_parse(h, n, &pp), PROXYPROTO_ERROR);
	n = v2(h, 0x21, 0x21, in4, 12);			/* v6, 12 bytes */
	ck_assert_int_eq(proxyproto_parse(h, n, &pp), PROXYPROTO_ERROR);
	/* A TLV that runs past the length, and a stray byte after one. */
	memcpy(body, in4, 12);
	memcpy(body + 12, "\x01\x00\x05hi", 5);
	n = v2(h, 0x21, 0x11, body, 17);
	ck_assert_int_eq(proxyproto_parse(h, n, &pp), PROXYPROTO_ERROR);
	memcpy(body + 12, "\x01\x00\x02hi!", 6);
	n = v2(h, 0x21, 0x11, body, 18);
	ck_assert_int_eq(proxyproto_parse(h, n, &pp), PROXYPROTO_ERROR);
	/* A wrong byte in the signature, at each place. */
	for (n = 1; n < 12; n++) {
		v2(h, 0x21, 0x11, in4, 12);
		h[n] ^= 0x40;
		ck_assert_int_eq(proxyproto_parse(h, 28, &pp),
		    PROXYPROTO_ERROR);
		ck_assert_int_eq(proxyproto_parse(h, n + 1, &pp),
		    PROXYPROTO_ERROR);
	}
	/* A length that asks for more waits for it: the edge's deadline
	 * ends a header that never comes. */
	n = v2(h, 0x21, 0x11, in4, 12);
	h[14] = 0xff;
	ck_assert_int_eq(proxyproto_parse(h, n, &pp), PROXYPROTO_MORE);
}
END_TEST

/* The first bytes of a connection: a PROXY header, valid or not, is told
 * from HTTP as soon as the bytes allow. */
START_TEST(test_sniff)
{
	ck_assert_int_eq(proxyproto_sniff("", 0), -1);
	ck_assert_int_eq(proxyproto_sniff("P", 1), -1);
	ck_assert_int_eq(proxyproto_sniff("PROXY", 5), -1);
	ck_assert_int_eq(proxyproto_sniff("PROXY ", 6), 1);
	ck_assert_int_eq(proxyproto_sniff("PROXY garbage", 13), 1);
	ck_assert_int_eq(proxyproto_sniff("POST /", 6), 0);
	ck_assert_int_eq(proxyproto_sniff("GET", 3), 0);
	ck_assert_int_eq(proxyproto_sniff(sig, 11), -1);
	ck_assert_int_eq(proxyproto_sniff(sig, 12), 1);
	ck_assert_int_eq(proxyproto_sniff("\r\n", 2), -1);
	ck_assert_int_eq(proxyproto_sniff("\r\nGET", 5), 0);
}
END_TEST

/* Trusted by CIDR, v4 and v6; a mapped v4 peer as v4; a 6to4 address
 * that carries a trusted v4 one is not trusted. */
START_TEST(test_trusted)
{
	char *const entries[] = { "127.0.0.2/32", "10.1.0.0/16", "fd00::/8" };
	struct netaddr_cidr *t;
	struct sockaddr_storage ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	int bad;

	ck_assert_int_eq(netaddr_allow_load(entries, 3, &t, &bad), 0);
	memset(&ss, 0, sizeof(ss));
	s4->sin_family = AF_INET;
	s4->sin_port = htons(9);
	inet_pton(AF_INET, "127.0.0.2", &s4->sin_addr);
	ck_assert_int_eq(proxyproto_trusted(t, 3, (void *)&ss, sizeof(*s4)),
	    1);
	inet_pton(AF_INET, "127.0.0.3", &s4->sin_addr);
	ck_assert_int_eq(proxyproto_trusted(t, 3, (void *)&ss, sizeof(*s4)),
	    0);
	inet_pton(AF_INET, "10.1.200.3", &s4->sin_addr);
	ck_assert_int_eq(proxyproto_trusted(t, 3, (void *)&ss, sizeof(*s4)),
	    1);
	ck_assert_int_eq(proxyproto_trusted(t, 0, (void *)&ss, sizeof(*s4)),
	    0);
	memset(&ss, 0, sizeof(ss));
	s6->sin6_family = AF_INET6;
	inet_pton(AF_INET6, "::ffff:127.0.0.2", &s6->sin6_addr);
	ck_assert_int_eq(proxyproto_trusted(t, 3, (void *)&ss, sizeof(*s6)),
	    1);
	inet_pton(AF_INET6, "2002:7f00:2::1", &s6->sin6_addr);
	ck_assert_int_eq(proxyproto_trusted(t, 3, (void *)&ss, sizeof(*s6)),
	    0);
	inet_pton(AF_INET6, "fd12::1", &s6->sin6_addr);
	ck_assert_int_eq(proxyproto_trusted(t, 3, (void *)&ss, sizeof(*s6)),
	    1);
	free(t);
}
END_TEST

static Suite *
proxyproto_suite(void)
{
	Suite *s = suite_create("proxyproto");
	TCase *tc;

	tc = tcase_create("v1");
	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_test(tc, test_v1_examples);
	tcase_add_test(tc, test_v1_bound);
	tcase_add_loop_test(tc, test_v1_malformed, 0,
	    (int)(sizeof(v1_bad) / sizeof(v1_bad[0])));
	suite_add_tcase(s, tc);

	tc = tcase_create("v2");
	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_test(tc, test_v2_examples);
	tcase_add_test(tc, test_v2_malformed);
	suite_add_tcase(s, tc);

	tc = tcase_create("edge");
	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_test(tc, test_sniff);
	tcase_add_test(tc, test_trusted);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(proxyproto_suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
