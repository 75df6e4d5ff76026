/* SPDX-License-Identifier: ISC */
/*
 * edge_limits.h: what one ankusa-edge allows a client to hold, without I/O.
 *
 * The ingest limits (ankusa.yml(5), http) that are state and arithmetic,
 * kept out of the glue (edge.c) so that each is a unit test: connections
 * per client address (http.max_conns_per_ip), the body bytes the edge
 * holds (http.max_buffered_bytes), and the deadline of a body under
 * http.min_body_rate.  The head's deadline (http.header_timeout_ms) is a
 * plain timer in edge.c.
 *
 * A client address is an IPv4 address, or an IPv6 address cut to its
 * first http.ipv6_prefix bits (a /64 by default: one host holds a whole
 * /64 as easily as one address of it).  Nothing here reads a clock or a
 * socket: times are passed in.
 */
#ifndef ANKUSA_EDGE_LIMITS_H
#define ANKUSA_EDGE_LIMITS_H

#include <sys/types.h>
#include <sys/socket.h>

#include <stddef.h>
#include <stdint.h>

/* The grace of http.min_body_rate: from the end of the head, the first
 * EDGE_LIMITS_BODY_GRACE_MS of a body are not judged (contracts: 10 s). */
#define EDGE_LIMITS_BODY_GRACE_MS	10000

struct addr_entry;

/* A client address as the table keys it: IPv6 cut to its prefix, IPv4
 * as IPv4-mapped. */
struct edge_addr {
	unsigned char		 a[16];
	int			 prefix;	/* bits kept of an IPv6 address */
	int			 counted;	/* holds a slot in the table */
	struct addr_entry	*e;		/* its entry while counted */
};

/* Count a connection from sa against max, an IPv6 address cut to
 * v6prefix bits.  0: counted (*out holds the slot until
 * edge_limits_conn_close); 1: sa is no IP address (a unix socket), not
 * counted; -1: the address holds max already, refused. */
int	edge_limits_conn_open(const struct sockaddr *sa, socklen_t len,
	    uint32_t max, int v6prefix, struct edge_addr *out);
void	edge_limits_conn_close(struct edge_addr *);
/* Connections counted for the address of sa (for tests and logs). */
uint32_t edge_limits_conns(const struct edge_addr *);
/* The address as text, for a log line: an IPv6 prefix as a/len. */
void	edge_limits_addr_str(const struct edge_addr *, char *, size_t);

/*
 * Body bytes held by the edge, charged as they arrive, never announced:
 * a Content-Length promises nothing, and a client that trickles holds
 * only what it has sent.  *held is what one request holds, charged to
 * its address ad (not counted: no address cap).  edge_limits_charge adds
 * n: 0 if charged; -1 if that would take the edge past max or the
 * address past per_addr, and nothing is charged.  A request that holds
 * every byte of the edge (or of its address) is never refused by that
 * bound, so a body larger than a bound alone is still taken.
 * edge_limits_hold sets *held to n (n <= *held: a chunked body decoded,
 * smaller than its bytes on the wire); edge_limits_release gives it all
 * back.
 */
int	edge_limits_charge(struct edge_addr *ad, uint64_t *held, uint64_t n,
	    uint64_t max, uint64_t per_addr);
void	edge_limits_hold(struct edge_addr *, uint64_t *held, uint64_t n);
void	edge_limits_release(struct edge_addr *, uint64_t *held);
uint64_t edge_limits_buffered(void);
/* The bytes the requests of an address hold. */
uint64_t edge_limits_addr_held(const struct edge_addr *);

/* The time (ms, the clock of start) by which a body that started at
 * start and has received bytes so far must have received more, to keep
 * at least rate bytes a second on average after the grace. */
uint64_t edge_limits_body_deadline(uint64_t start, uint64_t received,
	    uint64_t rate);

#endif
