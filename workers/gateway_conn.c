/* SPDX-License-Identifier: ISC */
/*
 * gateway_conn.c: the claim gateway's connections; see gateway_conn.h.
 *
 * libevent 2.1's evhttp has no connection cap (evhttp_set_max_connections
 * came with 2.2) and no callback at accept.  A connection is counted from
 * its first request, when we first see it, to evhttp's close callback,
 * which evhttp calls whenever it frees a server connection.  One that has
 * sent nothing is not accepted at all: the listener is TCP_DEFER_ACCEPT
 * (GATEWAY_TIMEOUT), so the kernel holds it until its first bytes come;
 * one that sends part of a head is closed by evhttp's own timeout
 * (GATEWAY_TIMEOUT).  A connection whose first request finds
 * GATEWAY_MAX_CONNS others is answered 503 and closed (gateway.c).
 *
 * Each counted connection's bufferevent gets a write timeout of
 * GATEWAY_WRITE_TIMEOUT: an answer that could not be written for that
 * long (a client that reads nothing) fails the connection and evhttp
 * frees it.  The read timeout stays evhttp's (GATEWAY_TIMEOUT), for idle
 * keep-alive connections.
 *
 * The listener (evhttp's evconnlistener) gets an error callback: an
 * accept that fails with EMFILE, ENFILE, ENOBUFS or ENOMEM would fail
 * again at once on the connection still waiting, so accepting stops for
 * GATEWAY_ACCEPT_PAUSE_MS instead of spinning the loop.
 */
#include "config.h"

#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <stdlib.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "gateway_conn.h"
#include "log.h"

/* A connection seen, until evhttp frees it. */
struct gwconn {
	TAILQ_ENTRY(gwconn)	 entry;
	struct evhttp_connection *evcon;
	int			 refused;	/* one past the cap */
	void			(*on_close)(void *);
	void			*arg;
};

static TAILQ_HEAD(, gwconn)	 conns = TAILQ_HEAD_INITIALIZER(conns);
static struct evconnlistener	*lev;
static struct event		*ev_resume;
static int			 nconns;
static struct log_limit		 refuse_log =
				    LOG_LIMIT_INIT("gateway refusals", 1);

static struct gwconn *gateway_conn_find(struct evhttp_connection *);
static void	gateway_conn_closed(struct evhttp_connection *, void *);
static void	gateway_conn_accept_error(struct evconnlistener *, void *);
static void	gateway_conn_resume(evutil_socket_t, short, void *);

void
gateway_conn_init(struct event_base *base, struct evhttp *http,
    struct evhttp_bound_socket *bound, int listen_fd)
{
	int secs = GATEWAY_TIMEOUT;

	if (setsockopt(listen_fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs,
	    sizeof(secs)) == -1)
		log_warn("listener: TCP_DEFER_ACCEPT");
	lev = evhttp_bound_socket_get_listener(bound);
	evconnlistener_set_error_cb(lev, gateway_conn_accept_error);
	if ((ev_resume = evtimer_new(base, gateway_conn_resume, NULL)) == NULL)
		fatalx("evtimer_new");
}

void
gateway_conn_stop(void)
{
	if (ev_resume != NULL)
		event_free(ev_resume);
	ev_resume = NULL;
	lev = NULL;
}

static struct gwconn *
gateway_conn_find(struct evhttp_connection *evcon)
{
	struct gwconn *c;

	TAILQ_FOREACH(c, &conns, entry)
		if (c->evcon == evcon)
			return c;
	return NULL;
}

int
gateway_conn_admit(struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct timeval rtv = { GATEWAY_TIMEOUT, 0 };
	struct timeval wtv = { GATEWAY_WRITE_TIMEOUT, 0 };
	struct gwconn *c;

	if (evcon == NULL)
		return 0;
	if ((c = gateway_conn_find(evcon)) != NULL)
		return !c->refused;
	if ((c = calloc(1, sizeof(*c))) == NULL)
		fatal("gateway: connection");
	c->evcon = evcon;
	TAILQ_INSERT_TAIL(&conns, c, entry);
	evhttp_connection_set_closecb(evcon, gateway_conn_closed, c);
	bufferevent_set_timeouts(evhttp_connection_get_bufferevent(evcon),
	    &rtv, &wtv);
	if (nconns >= GATEWAY_MAX_CONNS) {
		c->refused = 1;
		if (log_limit_take(&refuse_log, LOG_LEVEL_WARN))
			log_warnx("%d connections open, refusing one more",
			    nconns);
		return 0;
	}
	nconns++;
	return 1;
}

int
gateway_conn_on_close(struct evhttp_request *req, void (*fn)(void *),
    void *arg)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct gwconn *c;

	if (evcon == NULL || (c = gateway_conn_find(evcon)) == NULL)
		return -1;
	c->on_close = fn;
	c->arg = arg;
	return 0;
}

/* evhttp frees the connection. */
static void
gateway_conn_closed(struct evhttp_connection *evcon, void *arg)
{
	struct gwconn *c = arg;

	TAILQ_REMOVE(&conns, c, entry);
	if (!c->refused)
		nconns--;
	if (c->on_close != NULL)
		c->on_close(c->arg);
	free(c);
}

static void
gateway_conn_accept_error(struct evconnlistener *l, void *arg)
{
	struct timeval tv = { GATEWAY_ACCEPT_PAUSE_MS / 1000,
	    (GATEWAY_ACCEPT_PAUSE_MS % 1000) * 1000 };

	errno = EVUTIL_SOCKET_ERROR();
	log_warn("accept; not accepting for %d ms", GATEWAY_ACCEPT_PAUSE_MS);
	evconnlistener_disable(l);
	if (ev_resume != NULL)
		evtimer_add(ev_resume, &tv);
}

static void
gateway_conn_resume(evutil_socket_t fd, short ev, void *arg)
{
	if (lev != NULL)
		evconnlistener_enable(lev);
}
