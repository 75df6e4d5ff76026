/* SPDX-License-Identifier: ISC */
/*
 * proxyproto.h: the PROXY protocol header (HAProxy's proxy-protocol.txt,
 * versions 1 and 2) that a trusted proxy sends before a connection's
 * first byte, naming the client it accepted.  Pure: no I/O, no state
 * between calls; the edge (workers/edge.c) feeds it the connection's
 * first bytes until it says DONE or ERROR.
 *
 * Version 1 is one text line, "PROXY TCP4|TCP6|UNKNOWN ...\r\n", at most
 * PROXYPROTO_V1_MAX bytes with its CRLF.  Version 2 is a 12-byte
 * signature, a version and command byte, a family and transport byte, a
 * 16-bit length and that many bytes: the addresses, then TLVs, which are
 * skipped.  Anything else -- a wrong byte anywhere, an address that is
 * not in its family's standard text form, a port past 65535, a length too
 * short for its family, a line past the bound -- is an error: the
 * connection is refused, never read as HTTP.
 *
 * A header that names no client (v1 UNKNOWN, v2 LOCAL, v2 PROXY over an
 * unspecified or unix family or a datagram transport) leaves the
 * connection's own address in force: *src is not set (has_src 0).
 */
#ifndef ANKUSA_PROXYPROTO_H
#define ANKUSA_PROXYPROTO_H

#include <sys/types.h>
#include <sys/socket.h>

#include <stddef.h>
#include <stdint.h>

#define PROXYPROTO_V1_MAX	107	/* the line, CRLF included */
#define PROXYPROTO_V2_HEAD	16	/* signature, version, family, length */
#define PROXYPROTO_V2_MAX	(PROXYPROTO_V2_HEAD + 65535)

enum proxyproto_status {
	PROXYPROTO_MORE = 0,	/* a prefix of a header: feed more */
	PROXYPROTO_DONE,	/* a whole header of len bytes */
	PROXYPROTO_ERROR,	/* not a header: error names why */
};

struct proxyproto {
	int			 version;	/* 1 or 2, once known */
	size_t			 len;		/* the header's bytes (DONE) */
	int			 has_src;	/* src holds the client */
	struct sockaddr_storage	 src;
	socklen_t		 srclen;
	const char		*error;		/* a static reason (ERROR) */
};

/* Parse the first n bytes of a connection, from its first byte. */
enum proxyproto_status proxyproto_parse(const void *buf, size_t n,
		    struct proxyproto *);

/* Whether the first n bytes of a connection begin a PROXY header, valid
 * or not ("PROXY " or v2's 12-byte signature): 1 yes, 0 no, -1 too few
 * bytes to tell (a proper prefix of either). */
int	proxyproto_sniff(const void *buf, size_t n);

struct netaddr_cidr;
/* Whether the peer sa is one of the n trusted entries (netaddr.h; no
 * ports).  An IPv4-mapped IPv6 peer is its IPv4 address; no other IPv6
 * form counts as the IPv4 address it may carry. */
int	proxyproto_trusted(const struct netaddr_cidr *, int n,
	    const struct sockaddr *sa, socklen_t len);

#endif
