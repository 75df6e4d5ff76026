/* SPDX-License-Identifier: ISC */
/*
 * netconn.h: a guarded TCP connect and a bounded wait, for the clients
 * that open their own sockets (http1.c, sink_redis.c).
 *
 * netconn_open resolves host and port and tries each address in turn
 * that the egress guard (egress.h) lets through, non-blocking, with
 * TCP_NODELAY: the descriptor of the first that connects.  deadline is a
 * monotonic time in ms (clock.h), 0 for none; watch, if not NULL, is
 * called at least every NETCONN_WATCH_MS while waiting, and a nonzero
 * answer stops the wait.
 */
#ifndef ANKUSA_NETCONN_H
#define ANKUSA_NETCONN_H

#include <stddef.h>
#include <stdint.h>

#define NETCONN_WATCH_MS	100

/* ms left until deadline (0: none, UINT64_MAX), or 0 when past. */
uint64_t netconn_left_ms(uint64_t deadline);
/* Wait for ev (POLLIN, POLLOUT) on fd until deadline.  0, or -1 with err
 * (timeout, or the watch said stop). */
int	netconn_wait(int fd, short ev, uint64_t deadline, int (*watch)(void),
	    char *err, size_t errlen);
/* A new connection to host:port; plain: the guard's plain-http rule
 * applies (egress.allow_plain_http).  The fd, or -1 with err, or -2 with
 * err the egress guard's "egress_denied:<address>" when it refused every
 * address. */
int	netconn_open(const char *host, const char *port, int plain,
	    uint64_t deadline, int (*watch)(void), char *err, size_t errlen);

#endif
