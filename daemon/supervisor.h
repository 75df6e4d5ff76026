/* SPDX-License-Identifier: ISC */
/*
 * supervisor.h: the master's children: edges (http.workers of them),
 * deliver processes (conf_deliver_pool) and claim gateways (2, when
 * claim_check is set): spawning, the hello handshake, respawn with a
 * throttle, generations on reload, sending, killing and reaping.  Their
 * other frames go where main says (struct supervisor_ops; router.h).
 */
#ifndef ANKUSA_SUPERVISOR_H
#define ANKUSA_SUPERVISOR_H

#include <stdint.h>

struct deck;
struct msg;

enum child_kind {
	KIND_EDGE = 0,
	KIND_DELIVER,
	KIND_GATEWAY,		/* the claim gateway, when claim_check is set */
	KIND_MAX
};

/* What is done with the children's frames and lives: main fills it. */
struct supervisor_ops {
	/* A frame from child serial, of kind, after its hello: NULL, or
	 * why the child is recycled (router_msg). */
	const char *(*msg)(uint32_t serial, enum child_kind, struct msg *);
	/* A deliver process said hello (deck: its on-deck page,
	 * common/deck.h, or NULL), was told to retire, is gone. */
	void	(*deliver_ready)(uint32_t serial, struct deck *);
	void	(*deliver_retiring)(uint32_t serial);
	void	(*deliver_gone)(uint32_t serial);
};

void	supervisor_init(const struct supervisor_ops *);
/* Start a new generation of edges on the current config and retire the
 * previous one (it finishes the requests in hand); bring the deliver pool
 * to its configured size. */
void	supervisor_new_generation(void);
/* Retire every child of a kind (KIND_MAX: all). */
void	supervisor_retire(enum child_kind);
/* Write out, blocking, what is queued for the children of a kind (their
 * answers, before the master exits on a fatal error). */
void	supervisor_flush(enum child_kind);
/* Read now what one child has sent (its handlers run as from the loop). */
void	supervisor_poll(uint32_t serial);
/* Write now the frames queued for the children of a kind in this turn. */
void	supervisor_flush_now(enum child_kind);
/* SIGKILL what is still alive (end of a shutdown). */
void	supervisor_kill_all(void);
/* SIGKILL one child (a deliver process past its attempt's deadline). */
void	supervisor_kill(uint32_t serial);
int	supervisor_children(enum child_kind);	/* alive; KIND_MAX: all */
int	supervisor_ready(enum child_kind);	/* current generation, hello'd */
/* The sandbox features (SANDBOX_F_*) every ready child of kind of the
 * current generation has (their hellos' AND): how many children, and the
 * features in *have (0 when none). */
int	supervisor_sandbox(enum child_kind, uint32_t *have);
/* "edge", "deliver", "gateway". */
const char *supervisor_kind_name(enum child_kind);
/* A ready edge of the current generation, round robin; 0 if none. */
uint32_t supervisor_pick_edge(void);
/* Send to a child by serial; -1 if it is gone (the message's fd is
 * closed).  Serials are never reused within a run. */
int	supervisor_send(uint32_t serial, struct msg *);

#endif
