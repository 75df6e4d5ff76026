/* SPDX-License-Identifier: ISC */
/*
 * edge_int.h: what the edge's files share.  edge.c is the process and its
 * connections (listeners, accept, TLS, the PROXY preamble, the head's
 * reading, timers, writing the answer); edge_request.c is a request once
 * its head is in (the ingest contract's checks, the body, the submit to
 * the master and the master's answers).  Nothing else includes it.
 */
#ifndef ANKUSA_EDGE_INT_H
#define ANKUSA_EDGE_INT_H

#include <sys/queue.h>

#include <stddef.h>
#include <stdint.h>

#include "edge_limits.h"
#include "httpreq.h"

struct bufferevent;
struct chan;
struct conf;
struct event;
struct msg;
struct verify_peer;

enum conn_state {
	CS_PROXY = 0,	/* a trusted proxy's: reading its PROXY header */
	CS_HEAD,	/* reading a request head (or idle before one) */
	CS_BODY,	/* reading the body */
	CS_WAIT,	/* the master has the request; waiting for its answer */
	CS_WRITE,	/* writing the answer */
	CS_LINGER,	/* answer sent, write side shut, draining input */
};

enum conn_wait {
	WAIT_HOOK = 0,	/* MSG_HOOK_SUBMIT sent */
	WAIT_READY,	/* MSG_READY_QUERY sent */
};

struct conn {
	TAILQ_ENTRY(conn)	 entry;		/* conns */
	TAILQ_ENTRY(conn)	 wentry;	/* waiting, in CS_WAIT only */
	struct bufferevent	*bev;
	struct event		*timer;		/* head, body, idle, linger */
	enum conn_state		 state;
	int			 head_timed;	/* the head's deadline is armed */
	int			 sniffed;	/* its first bytes are no PROXY
						 * header (not a trusted proxy's) */
	int			 tls;		/* on the http.tls listener */
	int			 tls_up;	/* its handshake is done */
	struct verify_peer	*peer;		/* its client certificate */
	struct edge_addr	 addr;		/* its http.max_conns_per_ip slot */
	uint64_t		 held;		/* http.max_buffered_bytes share */
	uint64_t		 body_start;	/* mono ms, the head's end */
	uint64_t		 body_last;	/* mono ms, the last body byte */
	uint64_t		 body_bytes;	/* body bytes taken, as sent */
	enum conn_wait		 wait;
	uint64_t		 reqid;		/* echoed by the master */
	struct httpreq		 req;
	struct httpreq_route	 route;
	const struct source_conf *src;		/* set once check 3 passed */
	struct httpreq_chunked	 chunked;
	int			 in_chunked;	/* body is chunked */
	uint64_t		 remaining;	/* body bytes still to read */
	unsigned char		*body;
	size_t			 bodylen;
	size_t			 bodycap;
	uint64_t		 received_at;	/* ms, request line complete */
	int			 keep_alive;	/* after the answer in hand */
	int			 head;		/* HEAD: answer without body */
	int			 eof;		/* the client shut its side */
};

/* edge.c: the process. */
extern struct conf	*edge_conf;	/* for life: a reload retires us */
extern struct chan	*edge_master;
extern const char	*edge_node_role;	/* /health */
/* No jq evaluator can be had any more (filter_stuck, workers/filter.h):
 * retire as at MSG_CHILD_RETIRE; the master replaces an edge that
 * exits. */
void	edge_retire_stuck(void);

/* edge.c: a connection. */
/* Write an answer; the write callback goes on from there. */
void	conn_answer(struct conn *, struct httpreq_answer *);
/* Refuse a request whose framing we cannot trust: answer and close. */
void	conn_refuse(struct conn *, int status, const char *error);
void	conn_free(struct conn *);
/* Arm the connection's one timer; 0 disarms it. */
void	conn_timer(struct conn *, int seconds);
void	conn_timer_ms(struct conn *, uint64_t);

/* edge_request.c: a request once its head is in. */
/* The checks of the ingest contract before the body; then the body. */
void	edge_request_head(struct conn *);
/* The body's bytes: 1 if the state moved on, 0 if more input is
 * needed. */
int	edge_request_body(struct conn *);
/* The body's deadline: 408 once passed, else the timer armed for it. */
void	edge_request_body_timer(struct conn *);
/* Out of the requests the master has (CS_WAIT), as c is answered or
 * freed. */
void	edge_request_unwait(struct conn *);
/* The master's frames about requests. */
void	edge_request_hook_result(struct msg *);
void	edge_request_ready_result(struct msg *);
void	edge_request_quarantine_check(struct msg *);

#endif
