/* SPDX-License-Identifier: ISC */
/*
 * edge_limits.h: what one ankusa-edge allows a client to hold, without I/O.
 *
 * The ingest limits (ankusa.yml(5), http) that are state and arithmetic,
 * kept out of the glue (edge.c) so that each is a unit test: connections
 * per client address (http.max_conns_per_ip), the body bytes the edge
 * holds (http.max_buffered_bytes), and the deadline of a body under
 * http.min_body_rate.  The head's deadline (http.header_timeout_ms) is a
 * plain timer in edge.c.  Nothing here reads a clock or a socket: times
 * are passed in.
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

/* A client address as the table keys it: IPv6, IPv4 as IPv4-mapped. */
struct edge_addr {
	unsigned char	a[16];
	int		counted;	/* holds a slot in the table */
};

/* Count a connection from sa against max.  0: counted (*out holds the
 * slot until edge_limits_conn_close); 1: sa is no IP address (a unix
 * socket), not counted; -1: the address holds max already, refused. */
int	edge_limits_conn_open(const struct sockaddr *sa, socklen_t len,
	    uint32_t max, struct edge_addr *out);
void	edge_limits_conn_close(struct edge_addr *);
/* Connections counted for the address of sa (for tests and logs). */
uint32_t edge_limits_conns(const struct edge_addr *);
/* The address as text, for a log line. */
void	edge_limits_addr_str(const struct edge_addr *, char *, size_t);

/*
 * Body bytes held by the edge.  A request reserves what its body may take
 * before the body is read; *held is what it holds.  0 if reserved; -1 if
 * that would take the edge past max (a body larger than max alone is
 * reserved when nothing else is held, so that it is not refused for
 * ever).  edge_limits_hold sets *held to n (n <= *held: a chunked body
 * read, smaller than reserved); edge_limits_release gives it all back.
 */
int	edge_limits_reserve(uint64_t *held, uint64_t need, uint64_t max);
void	edge_limits_hold(uint64_t *held, uint64_t n);
void	edge_limits_release(uint64_t *held);
uint64_t edge_limits_buffered(void);

/* The time (ms, the clock of start) by which a body that started at
 * start and has received bytes so far must have received more, to keep
 * at least rate bytes a second on average after the grace. */
uint64_t edge_limits_body_deadline(uint64_t start, uint64_t received,
	    uint64_t rate);

#endif
