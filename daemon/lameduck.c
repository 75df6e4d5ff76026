/* SPDX-License-Identifier: ISC */
/*
 * lameduck.c: how long a drain keeps its edges accepting for a load
 * balancer to notice; see lameduck.h.
 *
 * A balancer is taken to poll /ready when the last two requests for it
 * came within LAMEDUCK_RECENT_MS of the drain; their gap is its polling
 * interval.  The wait ends after LAMEDUCK_CHECKS answers (HAProxy's
 * default "fall" is 3: three failed checks mark a server down), or after
 * LAMEDUCK_CHECKS intervals and LAMEDUCK_SLACK_MS, at most
 * LAMEDUCK_MAX_MS, should the polls stop coming.
 */
#include "config.h"

#include <sys/time.h>

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include <event2/event.h>

#include "clock.h"
#include "lameduck.h"
#include "log.h"

#define LAMEDUCK_CHECKS		3	/* 503s of /ready before the edges go */
#define LAMEDUCK_RECENT_MS	10000	/* two polls in this: a balancer */
#define LAMEDUCK_SLACK_MS	1000	/* beyond LAMEDUCK_CHECKS intervals */
#define LAMEDUCK_MAX_MS		10000	/* the longest wait */

static uint64_t		 asked[2];	/* mono ms of the last two, [1] last */
static struct event	*ev_end;
static void		(*done_fn)(void);
static int		 answered;	/* 503s since the drain began */

static void	lameduck_end(evutil_socket_t, short, void *);

void
lameduck_ready_asked(void)
{
	asked[0] = asked[1];
	asked[1] = time_mono_ms();
	/* Every answer of a draining node's /ready is a 503. */
	if (done_fn != NULL && ++answered == LAMEDUCK_CHECKS)
		event_active(ev_end, EV_TIMEOUT, 1);
}

int
lameduck_begin(struct event_base *base, void (*done)(void))
{
	struct timeval tv;
	uint64_t now = time_mono_ms(), iv, wait;

	if (done_fn != NULL)
		return 1;
	if (asked[0] == 0 || now - asked[0] > LAMEDUCK_RECENT_MS)
		return 0;
	iv = asked[1] - asked[0];
	wait = LAMEDUCK_CHECKS * iv + LAMEDUCK_SLACK_MS;
	if (wait > LAMEDUCK_MAX_MS)
		wait = LAMEDUCK_MAX_MS;
	if ((ev_end = evtimer_new(base, lameduck_end, NULL)) == NULL)
		fatalx("lameduck: evtimer_new");
	tv.tv_sec = wait / 1000;
	tv.tv_usec = (wait % 1000) * 1000;
	evtimer_add(ev_end, &tv);
	done_fn = done;
	answered = 0;
	log_info("stopping: /ready is polled every %" PRIu64 " ms: new hooks "
	    "are answered 503 until it has answered 503 %d times (at most %"
	    PRIu64 " ms)", iv, LAMEDUCK_CHECKS, wait);
	return 1;
}

int
lameduck_active(void)
{
	return done_fn != NULL;
}

static void
lameduck_end(evutil_socket_t fd, short what, void *arg)
{
	void (*fn)(void) = done_fn;

	log_info("stopping: /ready answered 503 %d time%s: the edges retire",
	    answered, answered == 1 ? "" : "s");
	event_free(ev_end);
	ev_end = NULL;
	done_fn = NULL;
	fn();
}
