/* SPDX-License-Identifier: ISC */
/*
 * netaddr.c: the egress guard's address classifier, its egress.allow
 * parser and its reading of a URL's host (netaddr.h says which ranges are
 * denied and which IPv6 forms are read for the IPv4 address they carry).
 * Pure: nothing here resolves a name or opens a socket.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "netaddr.h"

/* How a v6 address carries a v4 one. */
enum embed {
	EMBED_NONE = 0,
	EMBED_MAPPED,		/* ::ffff:0:0/96 */
	EMBED_SIIT,		/* ::ffff:0:0:0/96 */
	EMBED_COMPAT,		/* ::/96 but :: and ::1 */
	EMBED_NAT64,		/* 64:ff9b::/96 */
	EMBED_6TO4,		/* 2002::/16 */
	EMBED_TEREDO,		/* 2001:0::/32, the client address */
};

static enum embed	embedded(const struct netaddr *, struct netaddr *);
static enum netaddr_class classify4(const uint8_t *);
static int	prefix_match(const uint8_t *, const uint8_t *, unsigned int);
static int	parse_uint(const char *, size_t, unsigned long,
		    unsigned long *);
static int	ends_in_number(const char *);

static const char *const class_names[] = {
	"public", "loopback", "private", "link-local", "carrier-grade NAT",
	"unspecified", "multicast", "broadcast", "reserved"
};

int
netaddr_from_sockaddr(const struct sockaddr *sa, socklen_t len,
    struct netaddr *na)
{
	const struct sockaddr_in *s4;
	const struct sockaddr_in6 *s6;

	memset(na, 0, sizeof(*na));
	if (sa == NULL)
		return -1;
	if (sa->sa_family == AF_INET && len >= sizeof(*s4)) {
		s4 = (const struct sockaddr_in *)(const void *)sa;
		na->family = AF_INET;
		memcpy(na->a, &s4->sin_addr, 4);
		na->port = ntohs(s4->sin_port);
		return 0;
	}
	if (sa->sa_family == AF_INET6 && len >= sizeof(*s6)) {
		s6 = (const struct sockaddr_in6 *)(const void *)sa;
		na->family = AF_INET6;
		memcpy(na->a, &s6->sin6_addr, 16);
		na->port = ntohs(s6->sin6_port);
		return 0;
	}
	return -1;
}

void
netaddr_format(const struct netaddr *na, char *buf, size_t sz)
{
	if (sz == 0)
		return;
	if ((na->family != AF_INET && na->family != AF_INET6) ||
	    inet_ntop(na->family, na->a, buf, sz) == NULL)
		snprintf(buf, sz, "?");
}

const char *
netaddr_class_name(enum netaddr_class c)
{
	if ((size_t)c < sizeof(class_names) / sizeof(class_names[0]))
		return class_names[c];
	return "unknown";
}

/* A v4 address, 4 bytes in network order. */
static enum netaddr_class
classify4(const uint8_t *a)
{
	if (a[0] == 0)
		return NETADDR_UNSPECIFIED;		/* 0/8 */
	if (a[0] == 127)
		return NETADDR_LOOPBACK;		/* 127/8 */
	if (a[0] == 10 ||				/* 10/8 */
	    (a[0] == 172 && (a[1] & 0xf0) == 16) ||	/* 172.16/12 */
	    (a[0] == 192 && a[1] == 168))		/* 192.168/16 */
		return NETADDR_PRIVATE;
	if (a[0] == 169 && a[1] == 254)
		return NETADDR_LINKLOCAL;		/* 169.254/16 */
	if (a[0] == 100 && (a[1] & 0xc0) == 64)
		return NETADDR_CGNAT;			/* 100.64/10 */
	if ((a[0] & 0xf0) == 224)
		return NETADDR_MULTICAST;		/* 224/4 */
	if (a[0] == 255 && a[1] == 255 && a[2] == 255 && a[3] == 255)
		return NETADDR_BROADCAST;
	if ((a[0] & 0xf0) == 240)
		return NETADDR_RESERVED;		/* 240/4 */
	return NETADDR_PUBLIC;
}

static enum embed
embedded(const struct netaddr *na, struct netaddr *v4)
{
	static const uint8_t zero[12];
	static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b };
	const uint8_t *a = na->a;
	enum embed e = EMBED_NONE;
	int i;

	if (na->family != AF_INET6)
		return EMBED_NONE;
	memset(v4, 0, sizeof(*v4));
	v4->family = AF_INET;
	v4->port = na->port;
	if (memcmp(a, zero, 10) == 0 && a[10] == 0xff && a[11] == 0xff)
		e = EMBED_MAPPED;
	else if (memcmp(a, zero, 8) == 0 && a[8] == 0xff && a[9] == 0xff &&
	    a[10] == 0 && a[11] == 0)
		e = EMBED_SIIT;
	else if (memcmp(a, zero, 12) == 0) {
		/* :: and ::1 are v6's own. */
		if (a[12] == 0 && a[13] == 0 && a[14] == 0 && a[15] <= 1)
			return EMBED_NONE;
		e = EMBED_COMPAT;
	} else if (memcmp(a, nat64, 12) == 0)
		e = EMBED_NAT64;
	else if (a[0] == 0x20 && a[1] == 0x02) {
		memcpy(v4->a, a + 2, 4);
		return EMBED_6TO4;
	} else if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0) {
		for (i = 0; i < 4; i++)
			v4->a[i] = (uint8_t)~a[12 + i];
		return EMBED_TEREDO;
	}
	if (e != EMBED_NONE)
		memcpy(v4->a, a + 12, 4);
	return e;
}

int
netaddr_embedded_v4(const struct netaddr *na, struct netaddr *v4)
{
	return embedded(na, v4) != EMBED_NONE;
}

enum netaddr_class
netaddr_classify(const struct netaddr *na)
{
	static const uint8_t zero[16];
	struct netaddr v4;
	enum netaddr_class c;
	enum embed e;
	const uint8_t *a = na->a;

	if (na->family == AF_INET)
		return classify4(a);
	if (na->family != AF_INET6)
		return NETADDR_RESERVED;
	if (memcmp(a, zero, 16) == 0)
		return NETADDR_UNSPECIFIED;
	if (memcmp(a, zero, 15) == 0 && a[15] == 1)
		return NETADDR_LOOPBACK;
	if ((e = embedded(na, &v4)) != EMBED_NONE) {
		c = classify4(v4.a);
		if (e == EMBED_COMPAT && c == NETADDR_PUBLIC)
			return NETADDR_RESERVED;
		return c;
	}
	if (a[0] == 0x00 && a[1] == 0x64 && a[2] == 0xff && a[3] == 0x9b &&
	    a[4] == 0x00 && a[5] == 0x01)
		return NETADDR_PRIVATE;			/* 64:ff9b:1::/48 */
	if ((a[0] & 0xfe) == 0xfc)
		return NETADDR_PRIVATE;			/* fc00::/7 */
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
		return NETADDR_LINKLOCAL;		/* fe80::/10 */
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0)
		return NETADDR_PRIVATE;			/* fec0::/10 */
	if (a[0] == 0xff)
		return NETADDR_MULTICAST;		/* ff00::/8 */
	return NETADDR_PUBLIC;
}

static int
prefix_match(const uint8_t *a, const uint8_t *p, unsigned int bits)
{
	unsigned int full = bits / 8, rest = bits % 8;
	uint8_t mask;

	if (memcmp(a, p, full) != 0)
		return 0;
	if (rest == 0)
		return 1;
	mask = (uint8_t)(0xff << (8 - rest));
	return (a[full] & mask) == (p[full] & mask);
}

/* Decimal digits s[0..n) as a number at most max: 0, or -1. */
static int
parse_uint(const char *s, size_t n, unsigned long max, unsigned long *v)
{
	size_t i;

	if (n == 0 || n > 5)
		return -1;
	for (*v = 0, i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		*v = *v * 10 + (unsigned long)(s[i] - '0');
	}
	return *v <= max ? 0 : -1;
}

int
netaddr_cidr_parse(const char *s, struct netaddr_cidr *c)
{
	char addr[NETADDR_STRLEN];
	const char *end, *rest, *slash, *colon;
	unsigned long v;
	size_t n, i;
	unsigned int max;

	memset(c, 0, sizeof(*c));
	if (s[0] == '[') {
		if ((end = strchr(s, ']')) == NULL)
			return -1;
		n = (size_t)(end - s - 1);
		if (n == 0 || n >= sizeof(addr))
			return -1;
		memcpy(addr, s + 1, n);
		addr[n] = '\0';
		c->family = AF_INET6;
		rest = end + 1;
	} else if (strchr(s, '.') == NULL || strchr(s, ':') !=
	    strrchr(s, ':')) {
		/* v6 without brackets: no port. */
		n = strcspn(s, "/");
		if (n == 0 || n >= sizeof(addr))
			return -1;
		memcpy(addr, s, n);
		addr[n] = '\0';
		c->family = AF_INET6;
		rest = s + n;
		if (strchr(rest, ':') != NULL)
			return -1;
	} else {
		n = strcspn(s, "/:");
		if (n == 0 || n >= sizeof(addr))
			return -1;
		memcpy(addr, s, n);
		addr[n] = '\0';
		c->family = AF_INET;
		rest = s + n;
	}
	if (inet_pton(c->family, addr, c->a) != 1)
		return -1;
	max = c->family == AF_INET ? 32 : 128;
	c->bits = max;
	if (*rest == '/') {
		slash = rest + 1;
		n = strcspn(slash, ":");
		if (parse_uint(slash, n, max, &v) == -1 || (n > 1 &&
		    slash[0] == '0'))
			return -1;
		c->bits = (unsigned int)v;
		rest = slash + n;
	}
	if (*rest == ':') {
		colon = rest + 1;
		n = strlen(colon);
		if (parse_uint(colon, n, 65535, &v) == -1 || v == 0)
			return -1;
		c->port = (uint16_t)v;
		rest = colon + n;
	}
	if (*rest != '\0')
		return -1;
	/* Host bits set past the prefix: refused. */
	for (i = 0; i < max / 8; i++)
		if (i * 8 >= c->bits && c->a[i] != 0)
			return -1;
		else if (i * 8 < c->bits && (i + 1) * 8 > c->bits &&
		    (c->a[i] & (uint8_t)(0xff >> (c->bits - i * 8))) != 0)
			return -1;
	return 0;
}

int
netaddr_cidr_match(const struct netaddr_cidr *c, const struct netaddr *na)
{
	struct netaddr v4;

	if (c->port != 0 && c->port != na->port)
		return 0;
	if (c->family == na->family)
		return prefix_match(na->a, c->a, c->bits);
	if (c->family == AF_INET && embedded(na, &v4) != EMBED_NONE)
		return prefix_match(v4.a, c->a, c->bits);
	return 0;
}

/* The WHATWG URL standard's "ends in a number": the last label (a
 * trailing dot dropped) is decimal digits or 0x and hex digits, which
 * makes the host an IPv4 number to a URL parser. */
static int
ends_in_number(const char *h)
{
	const char *last, *end;
	size_t n, i;

	n = strlen(h);
	if (n > 0 && h[n - 1] == '.')
		n--;
	if (n == 0)
		return 0;
	for (last = h + n; last > h && last[-1] != '.'; last--)
		;
	end = h + n;
	if (end - last >= 2 && last[0] == '0' &&
	    (last[1] == 'x' || last[1] == 'X')) {
		for (i = 2; last + i < end; i++)
			if (strchr("0123456789abcdefABCDEF", last[i]) == NULL)
				return 0;
		return 1;
	}
	for (i = 0; last + i < end; i++)
		if (last[i] < '0' || last[i] > '9')
			return 0;
	return 1;
}

int
netaddr_literal(const char *host, struct netaddr *na)
{
	char v6[NETADDR_STRLEN];
	size_t n;

	memset(na, 0, sizeof(*na));
	n = strlen(host);
	if (n > 0 && host[0] == '[') {
		if (n < 3 || host[n - 1] != ']' || n - 2 >= sizeof(v6))
			return -1;
		memcpy(v6, host + 1, n - 2);
		v6[n - 2] = '\0';
		if (inet_pton(AF_INET6, v6, na->a) != 1)
			return -1;
		na->family = AF_INET6;
		return 1;
	}
	if (strchr(host, ':') != NULL)
		return -1;
	if (inet_pton(AF_INET, host, na->a) == 1) {
		na->family = AF_INET;
		return 1;
	}
	return ends_in_number(host) ? -1 : 0;
}

int
netaddr_url(const char *url, char *host, size_t hostsz, uint16_t *port,
    int *plain)
{
	const char *a, *end, *at, *h, *he, *p;
	unsigned long v;
	size_t n;

	if (strncasecmp(url, "http://", 7) == 0) {
		*plain = 1;
		*port = 80;
		a = url + 7;
	} else if (strncasecmp(url, "https://", 8) == 0) {
		*plain = 0;
		*port = 443;
		a = url + 8;
	} else
		return -1;
	end = a + strcspn(a, "/?#");
	if (memchr(a, '\\', (size_t)(end - a)) != NULL)
		return -1;
	for (at = end; at > a && at[-1] != '@'; at--)
		;
	h = at;				/* past the userinfo, if any */
	if (*h == '[') {
		if ((he = memchr(h, ']', (size_t)(end - h))) == NULL)
			return -1;
		he++;
	} else if ((he = memchr(h, ':', (size_t)(end - h))) == NULL)
		he = end;
	n = (size_t)(he - h);
	if (n == 0 || n >= hostsz || memchr(h, '%', n) != NULL)
		return -1;
	memcpy(host, h, n);
	host[n] = '\0';
	if (he < end) {
		if (*he != ':')
			return -1;
		p = he + 1;
		if (p < end) {
			if (parse_uint(p, (size_t)(end - p), 65535, &v) == -1 ||
			    v == 0)
				return -1;
			*port = (uint16_t)v;
		}
	}
	return 0;
}

enum netaddr_verdict
netaddr_egress(const struct netaddr_cidr *allow, int nallow,
    int allow_plain_http, const struct netaddr *a, int plain,
    enum netaddr_class *cls)
{
	enum netaddr_class c;
	int i;

	c = netaddr_classify(a);
	if (cls != NULL)
		*cls = c;
	if (c != NETADDR_PUBLIC) {
		for (i = 0; i < nallow; i++)
			if (netaddr_cidr_match(&allow[i], a))
				break;
		if (i == nallow)
			return NETADDR_DENIED;
	}
	if (plain && !allow_plain_http && c != NETADDR_LOOPBACK)
		return NETADDR_PLAIN;
	return NETADDR_GO;
}

int
netaddr_allow_load(char *const *entries, int n, struct netaddr_cidr **out,
    int *bad)
{
	struct netaddr_cidr *c;
	int i;

	*out = NULL;
	if (n <= 0)
		return 0;
	if ((c = calloc((size_t)n, sizeof(*c))) == NULL)
		abort();
	for (i = 0; i < n; i++)
		if (netaddr_cidr_parse(entries[i], &c[i]) == -1) {
			free(c);
			*bad = i;
			return -1;
		}
	*out = c;
	return 0;
}
