/* SPDX-License-Identifier: ISC */
/*
 * gateway_conn.h: the claim gateway's connections (workers/gateway.c):
 * how many it serves at once, how long a client that reads nothing may
 * keep an answer waiting, and accepting that pauses instead of spinning
 * when descriptors run out.
 */
#ifndef ANKUSA_GATEWAY_CONN_H
#define ANKUSA_GATEWAY_CONN_H

#define GATEWAY_MAX_CONNS	256	/* connections served at once */
#define GATEWAY_TIMEOUT		60	/* s: a request head, an idle conn */
#define GATEWAY_WRITE_TIMEOUT	10	/* s with nothing written: dropped */
#define GATEWAY_ACCEPT_PAUSE_MS	1000	/* no accepting after EMFILE & co */

struct event_base;
struct evhttp;
struct evhttp_bound_socket;
struct evhttp_request;

/* Bound the connections of http, accepted on bound (fd listen_fd). */
void	gateway_conn_init(struct event_base *, struct evhttp *,
	    struct evhttp_bound_socket *, int listen_fd);
/* The listener is going away: no more pauses. */
void	gateway_conn_stop(void);
/* At each request: 1 if it may be served, 0 if its connection is one
 * past GATEWAY_MAX_CONNS (answer 503 and close it). */
int	gateway_conn_admit(struct evhttp_request *);
/* fn(arg) when req's connection is freed (0), until cleared with a NULL
 * fn; -1 if req has no connection any more. */
int	gateway_conn_on_close(struct evhttp_request *, void (*fn)(void *),
	    void *arg);

#endif
