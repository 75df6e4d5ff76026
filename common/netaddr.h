/* SPDX-License-Identifier: ISC */
/*
 * netaddr.h: IP addresses as the egress guard sees them.  Pure: no
 * resolution, no traffic, no global state.
 *
 * The master's config check (common/conf_check.c) and the deliver
 * processes' guard at connect (workers/egress.c) both decide with
 * netaddr_egress(), so a URL refused at connect is the one the config
 * check would have refused had its host been a literal address.
 *
 * The denied ranges (netaddr_classify): loopback 127/8 and ::1; private
 * 10/8, 172.16/12, 192.168/16, fc00::/7 and the deprecated site-local
 * fec0::/10; link-local 169.254/16 (cloud metadata servers) and fe80::/10;
 * carrier-grade NAT 100.64/10; unspecified 0/8 and ::; multicast 224/4 and
 * ff00::/8; the broadcast 255.255.255.255 and the rest of 240/4
 * (reserved, never routed).
 *
 * IPv6 forms that carry an IPv4 address are classified by that address
 * (netaddr_embedded_v4): IPv4-mapped ::ffff:a.b.c.d (a v6 socket connects
 * to the v4 host), SIIT ::ffff:0:a.b.c.d, the NAT64 well-known prefix
 * 64:ff9b::/96 (a NAT64 gateway forwards to the v4 host), 6to4
 * 2002:AABB:CCDD::/48 (a relay tunnels to the v4 host) and Teredo
 * 2001:0::/32 by its client address (bits 96-127, inverted), the host the
 * relay delivers to.  IPv4-compatible ::a.b.c.d (deprecated by RFC 4291)
 * is classified by its v4 address when that is denied and as reserved
 * otherwise: no sink lives there.  The local-use NAT64 prefix
 * 64:ff9b:1::/48 (RFC 8215) is private as a whole: where its v4 address
 * sits depends on the prefix length its operator chose, so it cannot be
 * read, and it exists to reach private networks.
 */
#ifndef ANKUSA_NETADDR_H
#define ANKUSA_NETADDR_H

#include <sys/types.h>
#include <sys/socket.h>

#include <stddef.h>
#include <stdint.h>

/* An address's text, with room for a v6 one (INET6_ADDRSTRLEN). */
#define NETADDR_STRLEN		46
/* The dead-letter reason of a refused connection: this and the address. */
#define NETADDR_DENIED_PREFIX	"egress_denied:"

enum netaddr_class {
	NETADDR_PUBLIC = 0,
	NETADDR_LOOPBACK,
	NETADDR_PRIVATE,
	NETADDR_LINKLOCAL,
	NETADDR_CGNAT,
	NETADDR_UNSPECIFIED,
	NETADDR_MULTICAST,
	NETADDR_BROADCAST,
	NETADDR_RESERVED,
};

struct netaddr {
	int		 family;	/* AF_INET or AF_INET6 */
	uint8_t		 a[16];		/* network order; 4 bytes for v4 */
	uint16_t	 port;		/* 0: not known */
};

/* One egress.allow entry. */
struct netaddr_cidr {
	int		 family;
	uint8_t		 a[16];		/* host bits zero */
	unsigned int	 bits;		/* the prefix length */
	uint16_t	 port;		/* 0: any port */
};

/* What netaddr_egress() decides. */
enum netaddr_verdict {
	NETADDR_GO = 0,
	NETADDR_DENIED,		/* a denied range egress.allow does not
				 * cover */
	NETADDR_PLAIN,		/* plain http to a non-loopback address
				 * while plain http is not allowed */
};

/* From a struct sockaddr of family AF_INET or AF_INET6: 0, or -1. */
int	netaddr_from_sockaddr(const struct sockaddr *, socklen_t,
	    struct netaddr *);
/* The text of the address, without the port. */
void	netaddr_format(const struct netaddr *, char *buf, size_t);

enum netaddr_class netaddr_classify(const struct netaddr *);
const char *netaddr_class_name(enum netaddr_class);
/* The v4 address carried by a v6 one (the forms above): 1 with *v4 set,
 * or 0. */
int	netaddr_embedded_v4(const struct netaddr *, struct netaddr *v4);

/*
 * An egress.allow entry: an address or a CIDR, v4 or v6, with an optional
 * port: 10.0.0.0/8, 127.0.0.1/32:8080, 127.0.0.1:8080, [::1]/128:443,
 * [::1]:443, ::1, fc00::/7.  A bare address is /32 or /128.  A port needs
 * the v6 address in brackets.  Host bits past the prefix are refused (a
 * typo, not a wider range).  Addresses in inet_pton form only.  0 or -1.
 */
int	netaddr_cidr_parse(const char *, struct netaddr_cidr *);
/* Whether the entry covers the address and its port; a v6 address that
 * carries a v4 one is covered by a v4 entry that covers that. */
int	netaddr_cidr_match(const struct netaddr_cidr *, const struct netaddr *);

/*
 * A URL's host, when it is a literal address: 1 with *na set (port 0), 0
 * for a name, -1 for a numeric form that is not inet_pton's: zero-padded
 * (0127.0.0.1), decimal (2130706433), hex (0x7f.1), short (127.1) or with
 * a trailing dot.  libc's inet_aton (so getaddrinfo) and libcurl's URL
 * parser read those as an address (0127 is octal: 87), what a reader of
 * the config would not guess; they are refused, never normalised.  host
 * is as written in the URL: a v6 address in brackets, without a zone.
 */
int	netaddr_literal(const char *host, struct netaddr *na);

/*
 * The host and port of an http:// or https:// URL: the host as written
 * (brackets kept) into host, the port given or the scheme's, *plain 1 for
 * http://.  0, or -1 if it is not such a URL, the host does not fit or
 * has a '%' (percent-encoded, or a zone id), or the port is not 1..65535.
 */
int	netaddr_url(const char *url, char *host, size_t hostsz,
	    uint16_t *port, int *plain);

/*
 * The guard's decision on an address (with its port) about to be
 * connected to: denied ranges need an allow entry; plain (http://) needs
 * allow_plain_http or a loopback address.  *cls (if not NULL) gets the
 * address's class.
 */
enum netaddr_verdict netaddr_egress(const struct netaddr_cidr *allow,
	    int nallow, int allow_plain_http, const struct netaddr *a,
	    int plain, enum netaddr_class *cls);

/* The entries of egress.allow, parsed: 0 with *out (malloc'd, n entries;
 * free it), or -1 naming the index of the bad one in *bad. */
int	netaddr_allow_load(char *const *entries, int n,
	    struct netaddr_cidr **out, int *bad);

#endif
