/*
 * supervisor.h: the master's children (edges; deliver processes come with
 * dispatch): spawning, the hello handshake, respawn with a throttle,
 * generations on reload, and routing their messages.
 */
#ifndef ANKUSA_SUPERVISOR_H
#define ANKUSA_SUPERVISOR_H

#include <stdint.h>

struct msg;

void	supervisor_init(void);
/* Start a new generation of http.workers edges on the current config and
 * retire the previous generation (it finishes the requests in hand). */
void	supervisor_new_generation(void);
/* Retire every child; supervisor_children() then falls to 0. */
void	supervisor_retire_all(void);
/* SIGKILL what is still alive (end of a shutdown). */
void	supervisor_kill_all(void);
int	supervisor_children(void);		/* alive, any state */
int	supervisor_edges_ready(void);		/* current generation, hello'd */
/* A ready edge of the current generation, round robin; 0 if none. */
uint32_t supervisor_pick_edge(void);
/* Send to a child by serial; -1 if it is gone (the message's fd is
 * closed).  Serials are never reused within a run. */
int	supervisor_send(uint32_t serial, struct msg *);

#endif
