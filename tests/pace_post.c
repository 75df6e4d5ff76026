/*
 * pace_post.c: an open-loop paced HTTP load generator for scripts/bench.
 *
 *   pace_post -p PORT -u PATH -r RATE -s SECS [-c CONNS] [-b BYTES] -o FILE
 *
 * Posts a JSON body of BYTES (1024) to 127.0.0.1:PORT PATH at RATE requests
 * per second for SECS seconds: request j is due at t0 + j / RATE and goes
 * out on an idle keep-alive connection of CONNS (64) as soon as it is due
 * (if none is idle it waits, and its lateness shows).  For every 201 it
 * writes a line "ID T201_MS DUE_MS SENT_MS" (wall ms, to the microsecond)
 * to FILE, ID the answer's "id", SENT_MS when the request was handed to
 * the connection.  Prints "sent N ok N errors N" at the end.  One libevent loop: it
 * costs far less CPU than the Python clients, so the machine it shares
 * with the daemon stays the daemon's.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

struct pconn {
	struct evhttp_connection	*evcon;
	int				 busy;
	double				 due;	/* the request in hand's */
	double				 sent;	/* and when it went */
};

static struct event_base	*base;
static struct pconn		*conns;
static int			 nconns = 64;
static const char		*path;
static char			*body;
static size_t			 bodylen = 1024;
static double			 rate, secs, t0;
static unsigned long		 next_j, sent, ok, errors;
static FILE			*out;
static struct event		*ev_tick;

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static void	send_due(void);

static void
done_cb(struct evhttp_request *req, void *arg)
{
	struct pconn *c = arg;
	struct evbuffer *buf;
	char id[64], *p, *q;
	size_t len;

	c->busy = 0;
	if (req == NULL || evhttp_request_get_response_code(req) != 201) {
		errors++;
		send_due();
		return;
	}
	buf = evhttp_request_get_input_buffer(req);
	len = evbuffer_get_length(buf);
	p = (char *)evbuffer_pullup(buf, len);
	if (p != NULL && (p = memmem(p, len, "\"id\":\"", 6)) != NULL &&
	    (q = memchr(p + 6, '"', 48)) != NULL && q - p - 6 < (int)sizeof(id)) {
		memcpy(id, p + 6, q - p - 6);
		id[q - p - 6] = '\0';
		fprintf(out, "%s %.3f %.3f %.3f\n", id, now_ms(), c->due,
		    c->sent);
		ok++;
	} else
		errors++;
	send_due();
}

/* Every request that is due goes out on an idle connection. */
static void
send_due(void)
{
	struct evhttp_request *req;
	double now = now_ms(), due;
	int i;

	for (;;) {
		due = t0 + next_j * 1000.0 / rate;
		if (due > now || due >= t0 + secs * 1000.0)
			return;
		for (i = 0; i < nconns; i++)
			if (!conns[i].busy)
				break;
		if (i == nconns)
			return;		/* all busy: it waits, late */
		req = evhttp_request_new(done_cb, &conns[i]);
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Host", "127.0.0.1");
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Content-Type", "application/json");
		evbuffer_add(evhttp_request_get_output_buffer(req), body,
		    bodylen);
		conns[i].busy = 1;
		conns[i].due = due;
		conns[i].sent = now_ms();
		if (evhttp_make_request(conns[i].evcon, req, EVHTTP_REQ_POST,
		    path) == -1) {
			conns[i].busy = 0;
			errors++;
		}
		next_j++;
		sent++;
	}
}

static void
tick_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct timeval tv = { 0, 500 };
	int i, idle = 1;

	send_due();
	if (t0 + next_j * 1000.0 / rate >= t0 + secs * 1000.0) {
		for (i = 0; i < nconns; i++)
			if (conns[i].busy)
				idle = 0;
		if (idle) {
			event_base_loopexit(base, NULL);
			return;
		}
	}
	evtimer_add(ev_tick, &tv);
}

int
main(int argc, char *argv[])
{
	struct timeval tv = { 0, 0 };
	const char *file = NULL;
	int ch, port = 0, i;

	while ((ch = getopt(argc, argv, "b:c:o:p:r:s:u:")) != -1) {
		switch (ch) {
		case 'b':
			bodylen = strtoul(optarg, NULL, 10);
			break;
		case 'c':
			nconns = atoi(optarg);
			break;
		case 'o':
			file = optarg;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 'r':
			rate = strtod(optarg, NULL);
			break;
		case 's':
			secs = strtod(optarg, NULL);
			break;
		case 'u':
			path = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (port <= 0 || path == NULL || rate <= 0 || secs <= 0 ||
	    file == NULL || nconns < 1 || bodylen < 16)
		goto usage;
	if ((out = fopen(file, "w")) == NULL) {
		perror(file);
		return 1;
	}
	if ((body = malloc(bodylen)) == NULL)
		return 1;
	memset(body, 'x', bodylen);
	memcpy(body, "{\"pad\":\"", 8);
	memcpy(body + bodylen - 2, "\"}", 2);
	base = event_base_new();
	if ((conns = calloc(nconns, sizeof(*conns))) == NULL)
		return 1;
	for (i = 0; i < nconns; i++)
		conns[i].evcon = evhttp_connection_base_new(base, NULL,
		    "127.0.0.1", port);
	ev_tick = evtimer_new(base, tick_cb, NULL);
	t0 = now_ms() + 100;
	evtimer_add(ev_tick, &tv);
	event_base_dispatch(base);
	fclose(out);
	printf("sent %lu ok %lu errors %lu\n", sent, ok, errors);
	return 0;
 usage:
	fprintf(stderr, "usage: pace_post -p port -u path -r rate -s secs "
	    "[-c conns] [-b bytes] -o file\n");
	return 2;
}
