/* SPDX-License-Identifier: ISC */
/*
 * proxyproto.c: the PROXY protocol header, versions 1 and 2; see
 * proxyproto.h.  Written from HAProxy's doc/proxy-protocol.txt.
 *
 * The parser starts from the first byte every time it is called: the
 * edge keeps the bytes until the header is whole (at most
 * PROXYPROTO_V2_MAX), so there is no state to carry and a fuzzer can feed
 * it any cut of a stream.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdint.h>
#include <string.h>

#include "netaddr.h"
#include "proxyproto.h"

static const unsigned char v2_sig[12] = {
	0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a
};
static const char v1_sig[] = "PROXY ";

#define V1_SIGLEN	(sizeof(v1_sig) - 1)
#define V1_FIELDS	6	/* PROXY, protocol, src, dst, sport, dport */

/* v2: the high nibble of byte 12, and the commands of its low one. */
#define V2_VERSION	0x20
#define V2_CMD_LOCAL	0x0
#define V2_CMD_PROXY	0x1
/* v2: the families (high nibble of byte 13) and transports (low). */
#define V2_AF_UNSPEC	0x0
#define V2_AF_INET	0x1
#define V2_AF_INET6	0x2
#define V2_AF_UNIX	0x3
#define V2_STREAM	0x1
#define V2_DGRAM	0x2
/* v2: the bytes of each family's addresses. */
#define V2_LEN_INET	12
#define V2_LEN_INET6	36
#define V2_LEN_UNIX	216

static enum proxyproto_status	fail(struct proxyproto *, const char *);
static int	v1_port(const char *, size_t, uint16_t *);
static enum proxyproto_status	v1_parse(const unsigned char *, size_t,
		    struct proxyproto *);
static enum proxyproto_status	v2_parse(const unsigned char *, size_t,
		    struct proxyproto *);
static void	set_src(struct proxyproto *, int, const void *, uint16_t);

static enum proxyproto_status
fail(struct proxyproto *pp, const char *why)
{
	pp->error = why;
	return PROXYPROTO_ERROR;
}

enum proxyproto_status
proxyproto_parse(const void *buf, size_t n, struct proxyproto *pp)
{
	const unsigned char *p = buf;
	size_t k;

	memset(pp, 0, sizeof(*pp));
	if (n == 0)
		return PROXYPROTO_MORE;
	if (p[0] == v1_sig[0]) {
		pp->version = 1;
		k = n < V1_SIGLEN ? n : V1_SIGLEN;
		if (memcmp(p, v1_sig, k) != 0)
			return fail(pp, "not a PROXY header");
		return n < V1_SIGLEN ? PROXYPROTO_MORE : v1_parse(p, n, pp);
	}
	if (p[0] == v2_sig[0]) {
		pp->version = 2;
		k = n < sizeof(v2_sig) ? n : sizeof(v2_sig);
		if (memcmp(p, v2_sig, k) != 0)
			return fail(pp, "not a PROXY header");
		return v2_parse(p, n, pp);
	}
	return fail(pp, "not a PROXY header");
}

static void
set_src(struct proxyproto *pp, int af, const void *a, uint16_t port)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)&pp->src;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&pp->src;

	memset(&pp->src, 0, sizeof(pp->src));
	pp->has_src = 1;
	if (af == AF_INET) {
		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, a, 4);
		s4->sin_port = htons(port);
		pp->srclen = sizeof(*s4);
	} else {
		s6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_addr, a, 16);
		s6->sin6_port = htons(port);
		pp->srclen = sizeof(*s6);
	}
}

/* A v1 port: 1 to 5 decimal digits, no leading zero, at most 65535. */
static int
v1_port(const char *s, size_t len, uint16_t *port)
{
	uint32_t v = 0;
	size_t i;

	if (len == 0 || len > 5 || (len > 1 && s[0] == '0'))
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint32_t)(s[i] - '0');
	}
	if (v > 65535)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

/*
 * "PROXY TCP4 src dst sport dport\r\n", TCP6 alike, or "PROXY UNKNOWN"
 * and anything up to the CRLF.  Fields are separated by one space each.
 */
static enum proxyproto_status
v1_parse(const unsigned char *p, size_t n, struct proxyproto *pp)
{
	const char *f[V1_FIELDS];
	size_t flen[V1_FIELDS], end, i, start;
	char addr[INET6_ADDRSTRLEN], a[16], dst[16];
	uint16_t sport, dport;
	int af, nf;

	for (end = 0; end < n && end < PROXYPROTO_V1_MAX; end++)
		if (p[end] == '\n')
			break;
	if (end == n && n < PROXYPROTO_V1_MAX)
		return PROXYPROTO_MORE;
	if (end >= PROXYPROTO_V1_MAX)
		return fail(pp, "PROXY v1 line too long");
	if (end == 0 || p[end - 1] != '\r')
		return fail(pp, "PROXY v1 line not ended by CRLF");
	pp->len = end + 1;
	end--;			/* the CR */

	/* UNKNOWN: whatever follows is ignored (the spec's choice). */
	if (end >= V1_SIGLEN + 7 &&
	    memcmp(p + V1_SIGLEN, "UNKNOWN", 7) == 0 &&
	    (end == V1_SIGLEN + 7 || p[V1_SIGLEN + 7] == ' '))
		return PROXYPROTO_DONE;

	nf = 0;
	start = 0;
	for (i = 0; i <= end; i++) {
		if (i < end && p[i] != ' ') {
			if (p[i] < 0x21 || p[i] > 0x7e)
				return fail(pp, "PROXY v1 byte out of range");
			continue;
		}
		if (i == start)
			return fail(pp, "PROXY v1 empty field");
		if (nf == V1_FIELDS)
			return fail(pp, "PROXY v1 too many fields");
		f[nf] = (const char *)p + start;
		flen[nf++] = i - start;
		start = i + 1;
	}
	if (nf != V1_FIELDS)
		return fail(pp, "PROXY v1 too few fields");
	if (flen[1] == 4 && memcmp(f[1], "TCP4", 4) == 0)
		af = AF_INET;
	else if (flen[1] == 4 && memcmp(f[1], "TCP6", 4) == 0)
		af = AF_INET6;
	else
		return fail(pp, "PROXY v1 unknown protocol");
	for (i = 2; i <= 3; i++) {
		if (flen[i] >= sizeof(addr))
			return fail(pp, "PROXY v1 bad address");
		memcpy(addr, f[i], flen[i]);
		addr[flen[i]] = '\0';
		if (inet_pton(af, addr, i == 2 ? a : dst) != 1)
			return fail(pp, "PROXY v1 bad address");
	}
	if (v1_port(f[4], flen[4], &sport) == -1 ||
	    v1_port(f[5], flen[5], &dport) == -1)
		return fail(pp, "PROXY v1 bad port");
	set_src(pp, af, a, sport);
	return PROXYPROTO_DONE;
}

/*
 * The binary header: signature, 0x2C (version 2, command C), 0xFT (family
 * F, transport T), a big-endian length, then the addresses of the family
 * and TLVs (type, big-endian length, value), which must fill the length
 * exactly.
 */
static enum proxyproto_status
v2_parse(const unsigned char *p, size_t n, struct proxyproto *pp)
{
	size_t len, alen, off;
	unsigned cmd, fam, tr;

	if (n < PROXYPROTO_V2_HEAD)
		return PROXYPROTO_MORE;
	if ((p[12] & 0xf0) != V2_VERSION)
		return fail(pp, "PROXY v2 bad version");
	cmd = p[12] & 0x0f;
	if (cmd != V2_CMD_LOCAL && cmd != V2_CMD_PROXY)
		return fail(pp, "PROXY v2 bad command");
	fam = p[13] >> 4;
	tr = p[13] & 0x0f;
	if (fam > V2_AF_UNIX || tr > V2_DGRAM)
		return fail(pp, "PROXY v2 bad family or transport");
	len = (size_t)p[14] << 8 | p[15];
	if (n < PROXYPROTO_V2_HEAD + len)
		return PROXYPROTO_MORE;
	pp->len = PROXYPROTO_V2_HEAD + len;
	switch (fam) {
	case V2_AF_INET:
		alen = V2_LEN_INET;
		break;
	case V2_AF_INET6:
		alen = V2_LEN_INET6;
		break;
	case V2_AF_UNIX:
		alen = V2_LEN_UNIX;
		break;
	default:
		alen = 0;
		break;
	}
	/* LOCAL: the proxy speaks for itself (a health check); its block,
	 * whatever it holds, is skipped. */
	if (cmd == V2_CMD_LOCAL)
		return PROXYPROTO_DONE;
	if (len < alen)
		return fail(pp, "PROXY v2 length short of its addresses");
	for (off = PROXYPROTO_V2_HEAD + alen; off < pp->len; ) {
		if (pp->len - off < 3)
			return fail(pp, "PROXY v2 bad TLV");
		off += 3 + ((size_t)p[off + 1] << 8 | p[off + 2]);
		if (off > pp->len)
			return fail(pp, "PROXY v2 bad TLV");
	}
	/* What the edge does not serve (unix, a datagram's addresses) falls
	 * back to the connection's own addresses, as the spec asks of a
	 * receiver for the valid combinations it does not implement; an
	 * address family without a transport is refused (the spec leaves
	 * that to the receiver). */
	if (fam == V2_AF_UNSPEC || fam == V2_AF_UNIX || tr == V2_DGRAM)
		return PROXYPROTO_DONE;
	if (tr != V2_STREAM)
		return fail(pp, "PROXY v2 address without a transport");
	if (fam == V2_AF_INET)
		set_src(pp, AF_INET, p + 16,
		    (uint16_t)(p[16 + 8] << 8 | p[16 + 9]));
	else
		set_src(pp, AF_INET6, p + 16,
		    (uint16_t)(p[16 + 32] << 8 | p[16 + 33]));
	return PROXYPROTO_DONE;
}

int
proxyproto_sniff(const void *buf, size_t n)
{
	size_t k;

	if (n == 0)
		return -1;
	k = n < V1_SIGLEN ? n : V1_SIGLEN;
	if (memcmp(buf, v1_sig, k) == 0)
		return n < V1_SIGLEN ? -1 : 1;
	k = n < sizeof(v2_sig) ? n : sizeof(v2_sig);
	if (memcmp(buf, v2_sig, k) == 0)
		return n < sizeof(v2_sig) ? -1 : 1;
	return 0;
}

int
proxyproto_trusted(const struct netaddr_cidr *t, int n,
    const struct sockaddr *sa, socklen_t len)
{
	static const uint8_t mapped[12] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
	};
	struct netaddr na;
	int i;

	if (netaddr_from_sockaddr(sa, len, &na) == -1)
		return 0;
	if (na.family == AF_INET6 && memcmp(na.a, mapped, 12) == 0) {
		na.family = AF_INET;
		memmove(na.a, na.a + 12, 4);
	}
	na.port = 0;
	/* Same family only: netaddr_cidr_match would also let a v4 entry
	 * cover 6to4 and Teredo addresses, anyone's to take. */
	for (i = 0; i < n; i++)
		if (t[i].family == na.family && netaddr_cidr_match(&t[i], &na))
			return 1;
	return 0;
}
