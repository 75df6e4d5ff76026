/* SPDX-License-Identifier: ISC */
/*
 * lameduck.h: the first step of a drain behind a load balancer.
 *
 * A node behind HAProxy (README, "A fleet behind a load balancer") must
 * leave without a failed provider request.  When its drain begins, the
 * balancer still sends it requests until its health check (GET /ready on
 * the admin port) has seen the node answer 503 a few times.  If the edges
 * stopped accepting at once, a request sent in that time would wait in
 * the listener's backlog and be reset at the exit, which the balancer
 * cannot tell from a request the node took.  So while /ready is being
 * polled, the drain keeps the edges accepting, answering every new hook
 * 503 "draining" with Retry-After before it is stored (a balancer retries
 * that on another node), until /ready has answered 503 LAMEDUCK_CHECKS
 * times or about that many of its polling intervals have passed; then the
 * edges retire.  A node whose /ready nobody polls retires its edges at
 * once, as before.
 */
#ifndef ANKUSA_LAMEDUCK_H
#define ANKUSA_LAMEDUCK_H

struct event_base;

/* GET /ready was asked (and is being answered). */
void	lameduck_ready_asked(void);
/* A drain begins: 1 if done() will be called later (the load balancer
 * has to notice first), 0 if nothing polls /ready and done is not
 * called: the caller goes on at once. */
int	lameduck_begin(struct event_base *, void (*done)(void));
/* 1 between a lameduck_begin() that answered 1 and its done(). */
int	lameduck_active(void);

#endif
