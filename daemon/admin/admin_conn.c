/* SPDX-License-Identifier: ISC */
/*
 * admin_conn.c: the admin listener's connection cap, deadlines and accept
 * errors; see admin_conn.h.
 *
 * evhttp (libevent 2.1) neither counts its connections nor bounds the
 * time a request takes, and owns its accept loop.  It does let the
 * caller make each connection's bufferevent (evhttp_set_bevcb): each is
 * made here, with a reference of this module's own and a callback on its
 * input buffer.  The callback sees bytes arrive (a head ends at its
 * first empty line).  evhttp frees a connection's bufferevent when it is
 * done with it, which clears its callbacks; the reference kept here
 * keeps the object (and its socket, which evhttp has shut down for
 * writing) until a sweep, every ADMIN_SWEEP_MS while connections are
 * open, finds it so, lets it go and counts the connection closed.  The
 * same sweep runs the deadlines: a late request's socket is shut down,
 * and evhttp reads the end of the stream and frees the connection its own
 * way.  (A filter bufferevent, whose free callback would say when a
 * connection goes, loses an answer written just before a close: evhttp
 * frees the connection once the filter, not the socket, has taken it.)
 */
#include "config.h"

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "admin_conn.h"
#include "clock.h"
#include "log.h"
#include "master.h"

#define ADMIN_SWEEP_MS		100

enum aconn_state {
	AC_HEAD,		/* reading a head */
	AC_BODY,		/* reading a body */
	AC_HANDLED,		/* a handler has the request */
};

struct aconn {
	struct bufferevent	*bev;		/* evhttp's, and ours */
	struct evbuffer_cb_entry *incb;
	enum aconn_state	 state;
	uint64_t		 deadline;	/* mono ms; AC_HANDLED: none */
	int			 eols;		/* line ends in a row */
	TAILQ_ENTRY(aconn)	 entry;
};

static TAILQ_HEAD(, aconn) aconns = TAILQ_HEAD_INITIALIZER(aconns);
static struct evconnlistener *alistener;
static struct event	*ev_pause, *ev_sweep;
static int		 paused;	/* after an accept error */
static int		 naconns;
static uint32_t		 max_conns;
static uint64_t		 head_ms, body_ms;
static struct log_limit	 deadline_log =
			    LOG_LIMIT_INIT("admin deadlines", 1);

static struct bufferevent *aconn_new(struct event_base *, void *);
static void	aconn_input(struct evbuffer *,
		    const struct evbuffer_cb_info *, void *);
static void	aconn_release(struct aconn *);
static void	aconn_sweep(evutil_socket_t, short, void *);
static void	aconn_answered(struct evhttp_request *, void *);
static void	aconn_accept_error(struct evconnlistener *, void *);
static void	aconn_resume(evutil_socket_t, short, void *);
static void	aconn_listen(void);

static void
ms_tv(uint64_t ms, struct timeval *tv)
{
	tv->tv_sec = (time_t)(ms / 1000);
	tv->tv_usec = (suseconds_t)(ms % 1000) * 1000;
}

int
admin_conn_init(struct evhttp *http, struct evhttp_bound_socket *bound,
    uint32_t maxc, uint64_t hms, uint64_t bms)
{
	max_conns = maxc;
	head_ms = hms;
	body_ms = bms;
	if ((ev_pause = evtimer_new(env->base, aconn_resume, NULL)) == NULL ||
	    (ev_sweep = evtimer_new(env->base, aconn_sweep, NULL)) == NULL)
		return -1;
	alistener = evhttp_bound_socket_get_listener(bound);
	evconnlistener_set_error_cb(alistener, aconn_accept_error);
	evhttp_set_bevcb(http, aconn_new, NULL);
	return 0;
}

/* After evhttp_free: every connection's bufferevent is evhttp's no more. */
void
admin_conn_close(void)
{
	struct aconn *c;

	alistener = NULL;		/* freed with evhttp */
	while ((c = TAILQ_FIRST(&aconns)) != NULL)
		aconn_release(c);
	if (ev_pause != NULL)
		event_free(ev_pause);
	if (ev_sweep != NULL)
		event_free(ev_sweep);
	ev_pause = ev_sweep = NULL;
}

int
admin_conn_count(void)
{
	return naconns;
}

/* Accept while under the cap and not paused, else not. */
static void
aconn_listen(void)
{
	if (alistener == NULL)
		return;
	if (!paused && (uint32_t)naconns < max_conns)
		evconnlistener_enable(alistener);
	else
		evconnlistener_disable(alistener);
}

/* evhttp's bufferevent for a connection it accepted (its fd comes
 * after); NULL would make evhttp make its own, so failing is fatal. */
static struct bufferevent *
aconn_new(struct event_base *base, void *arg)
{
	struct timeval tv;
	struct aconn *c;

	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    (c->bev = bufferevent_socket_new(base, -1,
	    BEV_OPT_CLOSE_ON_FREE)) == NULL ||
	    (c->incb = evbuffer_add_cb(bufferevent_get_input(c->bev),
	    aconn_input, c)) == NULL)
		fatalx("admin: out of memory for a connection");
	bufferevent_incref(c->bev);
	c->state = AC_HEAD;
	c->deadline = time_mono_ms() + head_ms;
	TAILQ_INSERT_TAIL(&aconns, c, entry);
	naconns++;
	aconn_listen();
	if (!evtimer_pending(ev_sweep, NULL)) {
		ms_tv(ADMIN_SWEEP_MS, &tv);
		evtimer_add(ev_sweep, &tv);
	}
	return c->bev;
}

/* Let go of a connection evhttp is done with: its socket closes. */
static void
aconn_release(struct aconn *c)
{
	TAILQ_REMOVE(&aconns, c, entry);
	evbuffer_remove_cb_entry(bufferevent_get_input(c->bev), c->incb);
	bufferevent_decref(c->bev);
	free(c);
	naconns--;
	aconn_listen();
}

/*
 * Bytes arrived (or were taken): while a head is read, look for its end
 * (an empty line: two line ends with nothing but CRs between) in the new
 * ones, at the buffer's end; then the body's deadline runs.
 */
static void
aconn_input(struct evbuffer *buf, const struct evbuffer_cb_info *info,
    void *arg)
{
	struct aconn *c = arg;
	struct evbuffer_iovec v[8];
	struct evbuffer_ptr at;
	const unsigned char *p;
	size_t j, left;
	int i, n;

	if (c->state != AC_HEAD || info->n_added == 0)
		return;
	left = info->n_added;
	if (evbuffer_ptr_set(buf, &at, evbuffer_get_length(buf) - left,
	    EVBUFFER_PTR_SET) == -1)
		return;
	n = evbuffer_peek(buf, (ev_ssize_t)left, &at, v, 8);
	for (i = 0; i < n && i < 8 && left > 0; i++)
		for (p = v[i].iov_base, j = 0; j < v[i].iov_len && left > 0;
		    j++, left--) {
			if (p[j] == '\n' && ++c->eols == 2) {
				c->state = AC_BODY;
				c->deadline = time_mono_ms() + body_ms;
				return;
			}
			if (p[j] != '\n' && p[j] != '\r')
				c->eols = 0;
		}
}

/* evhttp cleared the callbacks when it freed its connection. */
static int
aconn_gone(struct aconn *c)
{
	bufferevent_event_cb ecb;

	bufferevent_getcb(c->bev, NULL, NULL, &ecb, NULL);
	return ecb == NULL;
}

static void
aconn_sweep(evutil_socket_t fd, short ev, void *arg)
{
	struct aconn *c, *next;
	struct timeval tv;
	uint64_t now = time_mono_ms();
	evutil_socket_t sfd;

	for (c = TAILQ_FIRST(&aconns); c != NULL; c = next) {
		next = TAILQ_NEXT(c, entry);
		if (aconn_gone(c)) {
			aconn_release(c);
			continue;
		}
		if (c->state == AC_HANDLED || now < c->deadline)
			continue;
		if (log_limit_take(&deadline_log, LOG_LEVEL_INFO))
			log_info("admin: a request's %s did not arrive in "
			    "time: closing its connection", c->state ==
			    AC_HEAD ? "head" : "body");
		c->state = AC_HANDLED;		/* once */
		if ((sfd = bufferevent_getfd(c->bev)) != -1)
			(void)shutdown(sfd, SHUT_RDWR);
	}
	if (!TAILQ_EMPTY(&aconns)) {
		ms_tv(ADMIN_SWEEP_MS, &tv);
		evtimer_add(ev_sweep, &tv);
	}
}

static struct aconn *
aconn_of(struct evhttp_request *req)
{
	struct evhttp_connection *conn = evhttp_request_get_connection(req);
	struct bufferevent *bev;
	struct aconn *c;

	if (conn == NULL)
		return NULL;
	bev = evhttp_connection_get_bufferevent(conn);
	TAILQ_FOREACH(c, &aconns, entry)
		if (c->bev == bev)
			return c;
	return NULL;
}

void
admin_conn_dispatched(struct evhttp_request *req)
{
	struct aconn *c;

	if ((c = aconn_of(req)) == NULL)
		return;
	c->state = AC_HANDLED;
	evhttp_request_set_on_complete_cb(req, aconn_answered, NULL);
}

/* The answer is written: the next head's deadline runs. */
static void
aconn_answered(struct evhttp_request *req, void *arg)
{
	struct aconn *c;

	if ((c = aconn_of(req)) == NULL)
		return;
	c->state = AC_HEAD;
	c->eols = 0;
	c->deadline = time_mono_ms() + head_ms;
}

/*
 * accept(2) failed with something libevent does not retry: most likely
 * EMFILE or ENFILE, and the connection is still waiting, so the listener
 * would be readable again at once: stop accepting for a while.
 */
static void
aconn_accept_error(struct evconnlistener *l, void *arg)
{
	struct timeval tv;
	int e = EVUTIL_SOCKET_ERROR();

	errno = e;
	log_warn("admin: accept; not accepting for %d ms",
	    ADMIN_ACCEPT_PAUSE_MS);
	paused = 1;
	aconn_listen();
	ms_tv(ADMIN_ACCEPT_PAUSE_MS, &tv);
	evtimer_add(ev_pause, &tv);
}

static void
aconn_resume(evutil_socket_t fd, short ev, void *arg)
{
	paused = 0;
	aconn_listen();
}
