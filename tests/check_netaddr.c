/* SPDX-License-Identifier: ISC */
/*
 * check_netaddr.c: the egress guard's address classifier, egress.allow
 * parser, URL host reader and decision (common/netaddr.c).  No traffic:
 * every address is built in memory.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "netaddr.h"

/* An address from its text (v6 if it has a ':'), with a port. */
static struct netaddr
addr(const char *s, uint16_t port)
{
	struct netaddr na;

	memset(&na, 0, sizeof(na));
	na.family = strchr(s, ':') != NULL ? AF_INET6 : AF_INET;
	ck_assert_msg(inet_pton(na.family, s, na.a) == 1, "bad test address %s",
	    s);
	na.port = port;
	return na;
}

/* Every range boundary: the first and last address in, and the
 * neighbours just outside. */
static const struct {
	const char		*a;
	enum netaddr_class	 c;
} class_cases[] = {
	{ "0.0.0.0", NETADDR_UNSPECIFIED },
	{ "0.255.255.255", NETADDR_UNSPECIFIED },
	{ "1.0.0.0", NETADDR_PUBLIC },
	{ "9.255.255.255", NETADDR_PUBLIC },
	{ "10.0.0.0", NETADDR_PRIVATE },
	{ "10.255.255.255", NETADDR_PRIVATE },
	{ "11.0.0.0", NETADDR_PUBLIC },
	{ "100.63.255.255", NETADDR_PUBLIC },
	{ "100.64.0.0", NETADDR_CGNAT },
	{ "100.127.255.255", NETADDR_CGNAT },
	{ "100.128.0.0", NETADDR_PUBLIC },
	{ "126.255.255.255", NETADDR_PUBLIC },
	{ "127.0.0.0", NETADDR_LOOPBACK },
	{ "127.0.0.1", NETADDR_LOOPBACK },
	{ "127.255.255.255", NETADDR_LOOPBACK },
	{ "128.0.0.0", NETADDR_PUBLIC },
	{ "169.253.255.255", NETADDR_PUBLIC },
	{ "169.254.0.0", NETADDR_LINKLOCAL },
	{ "169.254.169.254", NETADDR_LINKLOCAL },	/* metadata */
	{ "169.254.255.255", NETADDR_LINKLOCAL },
	{ "169.255.0.0", NETADDR_PUBLIC },
	{ "172.15.255.255", NETADDR_PUBLIC },
	{ "172.16.0.0", NETADDR_PRIVATE },
	{ "172.31.255.255", NETADDR_PRIVATE },
	{ "172.32.0.0", NETADDR_PUBLIC },
	{ "192.167.255.255", NETADDR_PUBLIC },
	{ "192.168.0.0", NETADDR_PRIVATE },
	{ "192.168.255.255", NETADDR_PRIVATE },
	{ "192.169.0.0", NETADDR_PUBLIC },
	{ "8.8.8.8", NETADDR_PUBLIC },
	{ "223.255.255.255", NETADDR_PUBLIC },
	{ "224.0.0.0", NETADDR_MULTICAST },
	{ "239.255.255.255", NETADDR_MULTICAST },
	{ "240.0.0.0", NETADDR_RESERVED },
	{ "255.255.255.254", NETADDR_RESERVED },
	{ "255.255.255.255", NETADDR_BROADCAST },
	{ "::", NETADDR_UNSPECIFIED },
	{ "::1", NETADDR_LOOPBACK },
	{ "::2", NETADDR_UNSPECIFIED },		/* compat 0.0.0.2 */
	{ "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NETADDR_PUBLIC },
	{ "fc00::", NETADDR_PRIVATE },
	{ "fd12:3456::1", NETADDR_PRIVATE },
	{ "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NETADDR_PRIVATE },
	{ "fe00::", NETADDR_PUBLIC },
	{ "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NETADDR_PUBLIC },
	{ "fe80::", NETADDR_LINKLOCAL },
	{ "fe80::1", NETADDR_LINKLOCAL },
	{ "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NETADDR_LINKLOCAL },
	{ "fec0::", NETADDR_PRIVATE },		/* site-local */
	{ "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NETADDR_PRIVATE },
	{ "ff00::", NETADDR_MULTICAST },
	{ "ff02::1", NETADDR_MULTICAST },
	{ "2606:4700::1111", NETADDR_PUBLIC },
	{ "2001:db8::1", NETADDR_PUBLIC },	/* not routed, not denied */
	/* IPv4-mapped */
	{ "::ffff:127.0.0.1", NETADDR_LOOPBACK },
	{ "::ffff:10.1.2.3", NETADDR_PRIVATE },
	{ "::ffff:169.254.169.254", NETADDR_LINKLOCAL },
	{ "::ffff:100.64.0.1", NETADDR_CGNAT },
	{ "::ffff:0.0.0.0", NETADDR_UNSPECIFIED },
	{ "::ffff:224.0.0.1", NETADDR_MULTICAST },
	{ "::ffff:255.255.255.255", NETADDR_BROADCAST },
	{ "::ffff:8.8.8.8", NETADDR_PUBLIC },
	{ "::fffe:7f00:1", NETADDR_PUBLIC },	/* not a mapped form */
	/* SIIT */
	{ "::ffff:0:7f00:1", NETADDR_LOOPBACK },
	{ "::ffff:0:808:808", NETADDR_PUBLIC },
	/* IPv4-compatible (deprecated): denied whatever it carries */
	{ "::127.0.0.1", NETADDR_LOOPBACK },
	{ "::192.168.1.1", NETADDR_PRIVATE },
	{ "::8.8.8.8", NETADDR_RESERVED },
	/* NAT64 */
	{ "64:ff9b::7f00:1", NETADDR_LOOPBACK },
	{ "64:ff9b::a9fe:a9fe", NETADDR_LINKLOCAL },
	{ "64:ff9b::808:808", NETADDR_PUBLIC },
	{ "64:ff9b:1::808:808", NETADDR_PRIVATE },	/* local-use */
	{ "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", NETADDR_PRIVATE },
	{ "64:ff9b:2::", NETADDR_PUBLIC },
	/* 6to4 */
	{ "2002:7f00:1::", NETADDR_LOOPBACK },
	{ "2002:a00:1::1", NETADDR_PRIVATE },
	{ "2002:a9fe:a9fe::", NETADDR_LINKLOCAL },
	{ "2002:808:808::1", NETADDR_PUBLIC },
	/* Teredo: the client address, inverted, in the last 32 bits */
	{ "2001:0:4136:e378:8000:63bf:80ff:fffe", NETADDR_LOOPBACK },
	{ "2001:0:4136:e378:8000:63bf:f7f7:f7f7", NETADDR_PUBLIC },
	{ "2001:1::80ff:fffe", NETADDR_PUBLIC },	/* not Teredo */
};

START_TEST(test_classify)
{
	struct netaddr na = addr(class_cases[_i].a, 0);

	ck_assert_msg(netaddr_classify(&na) == class_cases[_i].c,
	    "%s: %s, not %s", class_cases[_i].a,
	    netaddr_class_name(netaddr_classify(&na)),
	    netaddr_class_name(class_cases[_i].c));
}
END_TEST

START_TEST(test_sockaddr)
{
	struct sockaddr_in s4;
	struct sockaddr_in6 s6;
	struct sockaddr sa;
	struct netaddr na;
	char buf[NETADDR_STRLEN];

	memset(&s4, 0, sizeof(s4));
	s4.sin_family = AF_INET;
	s4.sin_port = htons(8080);
	s4.sin_addr.s_addr = htonl(0x7f000001);
	ck_assert_int_eq(netaddr_from_sockaddr((struct sockaddr *)&s4,
	    sizeof(s4), &na), 0);
	ck_assert_int_eq(na.family, AF_INET);
	ck_assert_uint_eq(na.port, 8080);
	netaddr_format(&na, buf, sizeof(buf));
	ck_assert_str_eq(buf, "127.0.0.1");
	ck_assert_int_eq(netaddr_classify(&na), NETADDR_LOOPBACK);
	/* Short: refused. */
	ck_assert_int_eq(netaddr_from_sockaddr((struct sockaddr *)&s4,
	    sizeof(s4) - 1, &na), -1);

	memset(&s6, 0, sizeof(s6));
	s6.sin6_family = AF_INET6;
	s6.sin6_port = htons(443);
	ck_assert_int_eq(inet_pton(AF_INET6, "::ffff:169.254.169.254",
	    &s6.sin6_addr), 1);
	ck_assert_int_eq(netaddr_from_sockaddr((struct sockaddr *)&s6,
	    sizeof(s6), &na), 0);
	netaddr_format(&na, buf, sizeof(buf));
	ck_assert_str_eq(buf, "::ffff:169.254.169.254");
	ck_assert_uint_eq(na.port, 443);
	ck_assert_int_eq(netaddr_classify(&na), NETADDR_LINKLOCAL);

	memset(&sa, 0, sizeof(sa));
	sa.sa_family = AF_UNIX;
	ck_assert_int_eq(netaddr_from_sockaddr(&sa, sizeof(sa), &na), -1);
	ck_assert_int_eq(netaddr_from_sockaddr(NULL, 0, &na), -1);
}
END_TEST

START_TEST(test_embedded)
{
	struct netaddr na, v4;
	char buf[NETADDR_STRLEN];

	na = addr("::ffff:10.0.0.1", 0);
	ck_assert_int_eq(netaddr_embedded_v4(&na, &v4), 1);
	netaddr_format(&v4, buf, sizeof(buf));
	ck_assert_str_eq(buf, "10.0.0.1");
	na = addr("2002:c0a8:101::", 0);
	ck_assert_int_eq(netaddr_embedded_v4(&na, &v4), 1);
	netaddr_format(&v4, buf, sizeof(buf));
	ck_assert_str_eq(buf, "192.168.1.1");
	na = addr("::1", 0);
	ck_assert_int_eq(netaddr_embedded_v4(&na, &v4), 0);
	na = addr("::", 0);
	ck_assert_int_eq(netaddr_embedded_v4(&na, &v4), 0);
	na = addr("2606:4700::1111", 0);
	ck_assert_int_eq(netaddr_embedded_v4(&na, &v4), 0);
	na = addr("127.0.0.1", 0);
	ck_assert_int_eq(netaddr_embedded_v4(&na, &v4), 0);
}
END_TEST

/* egress.allow entries: text, valid, family, bits, port. */
static const struct {
	const char	*s;
	int		 ok;
	int		 family;
	unsigned int	 bits;
	uint16_t	 port;
} cidr_cases[] = {
	{ "10.0.0.0/8", 1, AF_INET, 8, 0 },
	{ "127.0.0.1/32:8080", 1, AF_INET, 32, 8080 },
	{ "127.0.0.1", 1, AF_INET, 32, 0 },
	{ "127.0.0.1:8080", 1, AF_INET, 32, 8080 },
	{ "0.0.0.0/0", 1, AF_INET, 0, 0 },
	{ "172.16.0.0/12", 1, AF_INET, 12, 0 },
	{ "[::1]/128:443", 1, AF_INET6, 128, 443 },
	{ "[::1]:443", 1, AF_INET6, 128, 443 },
	{ "[::1]", 1, AF_INET6, 128, 0 },
	{ "::1", 1, AF_INET6, 128, 0 },
	{ "::1/128", 1, AF_INET6, 128, 0 },
	{ "fc00::/7", 1, AF_INET6, 7, 0 },
	{ "[fe80::]/10", 1, AF_INET6, 10, 0 },
	{ "::ffff:127.0.0.1", 1, AF_INET6, 128, 0 },
	{ "10.0.0.1/8", 0, 0, 0, 0 },		/* host bits set */
	{ "172.17.0.0/12", 0, 0, 0, 0 },
	{ "fc00::1/7", 0, 0, 0, 0 },
	{ "fd00::/7", 0, 0, 0, 0 },
	{ "10.0.0.0/33", 0, 0, 0, 0 },
	{ "::/129", 0, 0, 0, 0 },
	{ "10.0.0.0/", 0, 0, 0, 0 },
	{ "10.0.0.0/08", 0, 0, 0, 0 },
	{ "10.0.0.0/-1", 0, 0, 0, 0 },
	{ "10.0.0.0/8:", 0, 0, 0, 0 },
	{ "10.0.0.0/8:0", 0, 0, 0, 0 },
	{ "10.0.0.0/8:65536", 0, 0, 0, 0 },
	{ "10.0.0.0/8:80x", 0, 0, 0, 0 },
	{ "::1:443", 1, AF_INET6, 128, 0 },	/* an address, ::1:1bb */
	{ "::1/128:443", 0, 0, 0, 0 },		/* a port needs brackets */
	{ "[::1", 0, 0, 0, 0 },
	{ "[]", 0, 0, 0, 0 },
	{ "[10.0.0.1]", 0, 0, 0, 0 },
	{ "0127.0.0.1", 0, 0, 0, 0 },		/* inet_pton forms only */
	{ "127.1", 0, 0, 0, 0 },
	{ "2130706433", 0, 0, 0, 0 },
	{ "0x7f000001", 0, 0, 0, 0 },
	{ "localhost", 0, 0, 0, 0 },
	{ "", 0, 0, 0, 0 },
	{ "/8", 0, 0, 0, 0 },
	{ "10.0.0.0 /8", 0, 0, 0, 0 },
	{ "10.0.0.0/8 ", 0, 0, 0, 0 },
};

START_TEST(test_cidr_parse)
{
	struct netaddr_cidr c;
	int r = netaddr_cidr_parse(cidr_cases[_i].s, &c);

	ck_assert_msg((r == 0) == cidr_cases[_i].ok, "\"%s\": %d",
	    cidr_cases[_i].s, r);
	if (r != 0)
		return;
	ck_assert_int_eq(c.family, cidr_cases[_i].family);
	ck_assert_uint_eq(c.bits, cidr_cases[_i].bits);
	ck_assert_uint_eq(c.port, cidr_cases[_i].port);
}
END_TEST

START_TEST(test_cidr_match)
{
	struct netaddr_cidr c;
	struct netaddr na;

	ck_assert_int_eq(netaddr_cidr_parse("127.0.0.0/8", &c), 0);
	na = addr("127.0.0.1", 80);
	ck_assert(netaddr_cidr_match(&c, &na));
	na = addr("127.255.255.255", 1);
	ck_assert(netaddr_cidr_match(&c, &na));
	na = addr("128.0.0.0", 80);
	ck_assert(!netaddr_cidr_match(&c, &na));
	na = addr("126.255.255.255", 80);
	ck_assert(!netaddr_cidr_match(&c, &na));
	/* A v4 entry covers the v6 forms that carry its addresses. */
	na = addr("::ffff:127.0.0.1", 80);
	ck_assert(netaddr_cidr_match(&c, &na));
	na = addr("64:ff9b::7f00:1", 80);
	ck_assert(netaddr_cidr_match(&c, &na));
	na = addr("::1", 80);
	ck_assert(!netaddr_cidr_match(&c, &na));

	ck_assert_int_eq(netaddr_cidr_parse("172.16.0.0/12", &c), 0);
	na = addr("172.31.255.255", 80);
	ck_assert(netaddr_cidr_match(&c, &na));
	na = addr("172.32.0.0", 80);
	ck_assert(!netaddr_cidr_match(&c, &na));
	na = addr("172.15.255.255", 80);
	ck_assert(!netaddr_cidr_match(&c, &na));

	/* Ports. */
	ck_assert_int_eq(netaddr_cidr_parse("127.0.0.1/32:8080", &c), 0);
	na = addr("127.0.0.1", 8080);
	ck_assert(netaddr_cidr_match(&c, &na));
	na = addr("127.0.0.1", 8081);
	ck_assert(!netaddr_cidr_match(&c, &na));
	na = addr("127.0.0.2", 8080);
	ck_assert(!netaddr_cidr_match(&c, &na));

	ck_assert_int_eq(netaddr_cidr_parse("[::1]/128:443", &c), 0);
	na = addr("::1", 443);
	ck_assert(netaddr_cidr_match(&c, &na));
	na = addr("::1", 80);
	ck_assert(!netaddr_cidr_match(&c, &na));
	na = addr("127.0.0.1", 443);
	ck_assert(!netaddr_cidr_match(&c, &na));

	ck_assert_int_eq(netaddr_cidr_parse("fc00::/7", &c), 0);
	na = addr("fdff::1", 1);
	ck_assert(netaddr_cidr_match(&c, &na));
	na = addr("fe00::", 1);
	ck_assert(!netaddr_cidr_match(&c, &na));
	na = addr("fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 1);
	ck_assert(!netaddr_cidr_match(&c, &na));

	ck_assert_int_eq(netaddr_cidr_parse("0.0.0.0/0", &c), 0);
	na = addr("10.1.2.3", 1);
	ck_assert(netaddr_cidr_match(&c, &na));
}
END_TEST

/*
 * URL hosts: 1 a literal, 0 a name, -1 refused.  The refused numeric
 * forms are those inet_aton (getaddrinfo's reading) and libcurl's URL
 * parser take as an address while inet_pton does not; as is the
 * trailing dot.
 */
static const struct {
	const char	*h;
	int		 r;
	const char	*as;	/* the literal's text */
} literal_cases[] = {
	{ "127.0.0.1", 1, "127.0.0.1" },
	{ "10.0.0.1", 1, "10.0.0.1" },
	{ "[::1]", 1, "::1" },
	{ "[::ffff:127.0.0.1]", 1, "::ffff:127.0.0.1" },
	{ "[fe80::1]", 1, "fe80::1" },
	{ "localhost", 0, NULL },
	{ "example.com", 0, NULL },
	{ "metadata.google.internal", 0, NULL },
	{ "localhost.", 0, NULL },
	{ "1e100.net", 0, NULL },
	{ "a.b.c1", 0, NULL },
	{ "0127.0.0.1", -1, NULL },	/* octal 0127: 87.0.0.1 */
	{ "0177.0.0.1", -1, NULL },	/* octal: 127.0.0.1 */
	{ "127.000.000.001", -1, NULL },
	{ "2130706433", -1, NULL },	/* decimal 127.0.0.1 */
	{ "0x7f000001", -1, NULL },
	{ "0X7F000001", -1, NULL },
	{ "0x7f.0.0.1", -1, NULL },
	{ "127.1", -1, NULL },		/* short: 127.0.0.1 */
	{ "127.0.1", -1, NULL },
	{ "10.1", -1, NULL },
	{ "127.0.0.1.", -1, NULL },	/* trailing dot */
	{ "1.2.3.4.5", -1, NULL },
	{ "example.123", -1, NULL },	/* ends in a number */
	{ "example.0x1", -1, NULL },
	{ "0x", -1, NULL },
	{ "[fe80::1%eth0]", -1, NULL },	/* a zone */
	{ "[localhost]", -1, NULL },
	{ "[127.0.0.1]", -1, NULL },
	{ "[::1", -1, NULL },
	{ "::1", -1, NULL },		/* v6 without brackets */
};

START_TEST(test_literal)
{
	struct netaddr na;
	char buf[NETADDR_STRLEN];
	int r = netaddr_literal(literal_cases[_i].h, &na);

	ck_assert_msg(r == literal_cases[_i].r, "%s: %d, not %d",
	    literal_cases[_i].h, r, literal_cases[_i].r);
	if (r == 1) {
		netaddr_format(&na, buf, sizeof(buf));
		ck_assert_str_eq(buf, literal_cases[_i].as);
	}
}
END_TEST

/* What libc would have connected to for the forms refused above: the
 * reason they are refused, shown. */
START_TEST(test_literal_libc)
{
	static const struct {
		const char	*h;
		uint32_t	 a;
	} aton[] = {
		{ "0127.0.0.1", 0x57000001 },
		{ "0177.0.0.1", 0x7f000001 },
		{ "2130706433", 0x7f000001 },
		{ "0x7f000001", 0x7f000001 },
		{ "127.1", 0x7f000001 },
		{ "10.1", 0x0a000001 },
	};
	struct in_addr in;
	struct netaddr na;
	size_t i;

	for (i = 0; i < sizeof(aton) / sizeof(aton[0]); i++) {
		ck_assert_int_eq(inet_aton(aton[i].h, &in), 1);
		ck_assert_uint_eq(ntohl(in.s_addr), aton[i].a);
		ck_assert_int_eq(inet_pton(AF_INET, aton[i].h, &in), 0);
		ck_assert_int_eq(netaddr_literal(aton[i].h, &na), -1);
	}
}
END_TEST

/* URLs: host as written, port, plain; or -1. */
static const struct {
	const char	*url;
	int		 r;
	const char	*host;
	uint16_t	 port;
	int		 plain;
} url_cases[] = {
	{ "http://127.0.0.1:8080/x", 0, "127.0.0.1", 8080, 1 },
	{ "http://127.0.0.1", 0, "127.0.0.1", 80, 1 },
	{ "https://example.com/a?b#c", 0, "example.com", 443, 0 },
	{ "HTTPS://Example.COM:8443", 0, "Example.COM", 8443, 0 },
	{ "http://[::1]:9000/", 0, "[::1]", 9000, 1 },
	{ "http://[::1]/", 0, "[::1]", 80, 1 },
	{ "http://user:pw@10.0.0.1:81/", 0, "10.0.0.1", 81, 1 },
	{ "http://a@b@10.0.0.1/", 0, "10.0.0.1", 80, 1 },
	{ "http://example.com:/", 0, "example.com", 80, 1 },
	{ "http://example.com?q", 0, "example.com", 80, 1 },
	{ "http://h#f", 0, "h", 80, 1 },
	{ "ftp://example.com/", -1, NULL, 0, 0 },
	{ "http://", -1, NULL, 0, 0 },
	{ "http:///x", -1, NULL, 0, 0 },
	{ "http://:80/", -1, NULL, 0, 0 },
	{ "http://h:0/", -1, NULL, 0, 0 },
	{ "http://h:65536/", -1, NULL, 0, 0 },
	{ "http://h:8x/", -1, NULL, 0, 0 },
	{ "http://h:-1/", -1, NULL, 0, 0 },
	{ "http://[::1/", -1, NULL, 0, 0 },
	{ "http://[::1]x/", -1, NULL, 0, 0 },
	{ "http://%31%32%37.0.0.1/", -1, NULL, 0, 0 },
	{ "http://[fe80::1%25eth0]/", -1, NULL, 0, 0 },
	{ "http://127.0.0.1\\@example.com/", -1, NULL, 0, 0 },
};

START_TEST(test_url)
{
	char host[256];
	uint16_t port = 0;
	int plain = -1;
	int r = netaddr_url(url_cases[_i].url, host, sizeof(host), &port,
	    &plain);

	ck_assert_msg(r == url_cases[_i].r, "%s: %d", url_cases[_i].url, r);
	if (r != 0)
		return;
	ck_assert_str_eq(host, url_cases[_i].host);
	ck_assert_uint_eq(port, url_cases[_i].port);
	ck_assert_int_eq(plain, url_cases[_i].plain);
}
END_TEST

START_TEST(test_url_small)
{
	char host[4];
	uint16_t port;
	int plain;

	ck_assert_int_eq(netaddr_url("http://abc/", host, sizeof(host), &port,
	    &plain), 0);
	ck_assert_int_eq(netaddr_url("http://abcd/", host, sizeof(host),
	    &port, &plain), -1);
}
END_TEST

START_TEST(test_egress)
{
	struct netaddr_cidr allow[2];
	enum netaddr_class c;
	struct netaddr na;

	/* Nothing allowed: public goes, every denied range is refused. */
	na = addr("8.8.8.8", 443);
	ck_assert_int_eq(netaddr_egress(NULL, 0, 1, &na, 0, &c), NETADDR_GO);
	ck_assert_int_eq(c, NETADDR_PUBLIC);
	na = addr("127.0.0.1", 80);
	ck_assert_int_eq(netaddr_egress(NULL, 0, 1, &na, 1, &c),
	    NETADDR_DENIED);
	ck_assert_int_eq(c, NETADDR_LOOPBACK);
	na = addr("::ffff:169.254.169.254", 80);
	ck_assert_int_eq(netaddr_egress(NULL, 0, 1, &na, 1, NULL),
	    NETADDR_DENIED);

	/* Allowed ranges, one with a port. */
	ck_assert_int_eq(netaddr_cidr_parse("127.0.0.0/8", &allow[0]), 0);
	ck_assert_int_eq(netaddr_cidr_parse("10.0.0.0/8:8443", &allow[1]), 0);
	na = addr("127.0.0.5", 80);
	ck_assert_int_eq(netaddr_egress(allow, 2, 1, &na, 1, NULL),
	    NETADDR_GO);
	na = addr("::ffff:127.0.0.5", 80);
	ck_assert_int_eq(netaddr_egress(allow, 2, 1, &na, 1, NULL),
	    NETADDR_GO);
	na = addr("::1", 80);
	ck_assert_int_eq(netaddr_egress(allow, 2, 1, &na, 1, NULL),
	    NETADDR_DENIED);
	na = addr("10.0.0.1", 8443);
	ck_assert_int_eq(netaddr_egress(allow, 2, 1, &na, 0, NULL),
	    NETADDR_GO);
	na = addr("10.0.0.1", 443);
	ck_assert_int_eq(netaddr_egress(allow, 2, 1, &na, 0, NULL),
	    NETADDR_DENIED);

	/* Plain http off: loopback still goes, nothing else does. */
	na = addr("127.0.0.5", 80);
	ck_assert_int_eq(netaddr_egress(allow, 2, 0, &na, 1, NULL),
	    NETADDR_GO);
	na = addr("10.0.0.1", 8443);
	ck_assert_int_eq(netaddr_egress(allow, 2, 0, &na, 1, NULL),
	    NETADDR_PLAIN);
	ck_assert_int_eq(netaddr_egress(allow, 2, 0, &na, 0, NULL),
	    NETADDR_GO);
	na = addr("8.8.8.8", 80);
	ck_assert_int_eq(netaddr_egress(allow, 2, 0, &na, 1, NULL),
	    NETADDR_PLAIN);
	ck_assert_int_eq(netaddr_egress(allow, 2, 1, &na, 1, NULL),
	    NETADDR_GO);
	/* Denied comes before plain. */
	na = addr("192.168.1.1", 80);
	ck_assert_int_eq(netaddr_egress(allow, 2, 0, &na, 1, NULL),
	    NETADDR_DENIED);
}
END_TEST

START_TEST(test_allow_load)
{
	char *ok[] = { "127.0.0.0/8", "[::1]/128" };
	char *bad[] = { "127.0.0.0/8", "10.0.0.1/8" };
	struct netaddr_cidr *c;
	int i = -1;

	ck_assert_int_eq(netaddr_allow_load(ok, 2, &c, &i), 0);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(c[1].family, AF_INET6);
	free(c);
	ck_assert_int_eq(netaddr_allow_load(bad, 2, &c, &i), -1);
	ck_assert_int_eq(i, 1);
	ck_assert_ptr_null(c);
	ck_assert_int_eq(netaddr_allow_load(NULL, 0, &c, &i), 0);
	ck_assert_ptr_null(c);
}
END_TEST

START_TEST(test_class_names)
{
	ck_assert_str_eq(netaddr_class_name(NETADDR_LINKLOCAL), "link-local");
	ck_assert_str_eq(netaddr_class_name(NETADDR_RESERVED), "reserved");
	ck_assert_str_eq(netaddr_class_name((enum netaddr_class)99),
	    "unknown");
}
END_TEST

static Suite *
netaddr_suite(void)
{
	Suite *s = suite_create("netaddr");
	TCase *tc = tcase_create("netaddr");

	tcase_set_timeout(tc, 10);
	tcase_add_loop_test(tc, test_classify, 0,
	    sizeof(class_cases) / sizeof(class_cases[0]));
	tcase_add_test(tc, test_sockaddr);
	tcase_add_test(tc, test_embedded);
	tcase_add_loop_test(tc, test_cidr_parse, 0,
	    sizeof(cidr_cases) / sizeof(cidr_cases[0]));
	tcase_add_test(tc, test_cidr_match);
	tcase_add_loop_test(tc, test_literal, 0,
	    sizeof(literal_cases) / sizeof(literal_cases[0]));
	tcase_add_test(tc, test_literal_libc);
	tcase_add_loop_test(tc, test_url, 0,
	    sizeof(url_cases) / sizeof(url_cases[0]));
	tcase_add_test(tc, test_url_small);
	tcase_add_test(tc, test_egress);
	tcase_add_test(tc, test_allow_load);
	tcase_add_test(tc, test_class_names);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(netaddr_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
