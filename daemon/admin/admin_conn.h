/* SPDX-License-Identifier: ISC */
/*
 * admin_conn.h: the admin listener's connections: how many at once, how
 * long a request may take to arrive, and accept(2)'s failures.
 *
 * At most admin.max_conns connections are open: at the cap the listener
 * stops accepting, and the next ones wait in the kernel's backlog until
 * one closes.  A request's head must arrive within admin.head_timeout_ms
 * of the connection (or of the previous answer on it), its body within
 * admin.body_timeout_ms of its head; else the connection is shut down.
 * No deadline runs while a handler has the request.  An accept that fails
 * for want of descriptors or memory stops accepting for
 * ADMIN_ACCEPT_PAUSE_MS, as the control socket does, instead of
 * spinning the loop on the connection that waits.
 */
#ifndef ANKUSA_ADMIN_CONN_H
#define ANKUSA_ADMIN_CONN_H

#include <stdint.h>

struct evhttp;
struct evhttp_bound_socket;
struct evhttp_request;

#define ADMIN_ACCEPT_PAUSE_MS	1000

/* Watch the connections of http, accepting on bound: 0, or -1. */
int	admin_conn_init(struct evhttp *, struct evhttp_bound_socket *,
	    uint32_t max_conns, uint64_t head_ms, uint64_t body_ms);
/* A request was read whole and goes to its handler: its connection's
 * deadline stops, and starts again for the next head once it is
 * answered. */
void	admin_conn_dispatched(struct evhttp_request *);
/* Connections open now. */
int	admin_conn_count(void);
void	admin_conn_close(void);

#endif
