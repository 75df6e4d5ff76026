/* SPDX-License-Identifier: ISC */
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
 * the connection.  Prints "sent N ok N errors N" at the end.
 *
 * It shares the machine with the daemon it measures, so it costs as little
 * as it can: one epoll loop over plain sockets, each registered once; a
 * request is one write of bytes built at the start, an answer usually one
 * read; the wait for the next due request is epoll_pwait2's, to the
 * microsecond, so no timer is armed per request.  An answer that is not a
 * 201, a connection that closes with a request in hand, a request that
 * cannot be written and one unanswered 60 s after the last was due count
 * as errors; a closed connection is reopened.
 */
#include "config.h"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define PP_BUF		8192	/* an answer's head and body */
#define PP_EVENTS	64
#define PP_DRAIN_S	60	/* after the last request, for the answers */
#define PP_WB_CHUNK	(1 << 20)	/* of lines between write-backs */

struct pconn {
	int	 fd;
	int	 busy;
	int	 idx;
	size_t	 woff;		/* busy: bytes of the request written */
	size_t	 len;		/* bytes of the answer read */
	double	 due;		/* the request in hand's */
	double	 sent;		/* and when it went */
	char	 buf[PP_BUF];
};

static struct pconn	*conns;
static int		*idle;		/* a stack of idle connections */
static int		 nidle, nconns = 64, ep;
static struct sockaddr_in sin_to;
static char		*req;
static size_t		 reqlen;
static double		 rate, secs, t0;
static unsigned long	 next_j, sent, ok, errors;
static FILE		*out;
static size_t		 out_unsent;	/* bytes since the last write-back */

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static void
pp_open(struct pconn *c)
{
	struct epoll_event ev;
	int one = 1;

	if ((c->fd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    connect(c->fd, (struct sockaddr *)&sin_to, sizeof(sin_to)) == -1 ||
	    fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK) == -1) {
		perror("pace_post: connect");
		exit(1);
	}
	(void)setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = c;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) == -1) {
		perror("pace_post: epoll_ctl");
		exit(1);
	}
	c->busy = 0;
	c->len = 0;
	idle[nidle++] = c->idx;
}

/* The connection closed or failed: a request in hand is an error. */
static void
pp_reopen(struct pconn *c)
{
	int i;

	if (c->busy)
		errors++;
	else
		for (i = 0; i < nidle; i++)
			if (idle[i] == c->idx) {
				idle[i] = idle[--nidle];
				break;
			}
	close(c->fd);
	pp_open(c);
}

static void
pp_want_out(struct pconn *c, int on)
{
	struct epoll_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.events = on ? EPOLLIN | EPOLLOUT : EPOLLIN;
	ev.data.ptr = c;
	(void)epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Write what is left of the request; -1 when the connection failed. */
static int
pp_write(struct pconn *c)
{
	ssize_t n;

	while (c->woff < reqlen) {
		n = write(c->fd, req + c->woff, reqlen - c->woff);
		if (n > 0) {
			c->woff += n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return 0;
		return -1;
	}
	return 0;
}

/* Every request that is due goes out on an idle connection. */
static void
send_due(double now)
{
	struct pconn *c;
	double due;

	for (;;) {
		due = t0 + next_j * 1000.0 / rate;
		if (due > now || due >= t0 + secs * 1000.0 || nidle == 0)
			return;
		c = &conns[idle[--nidle]];
		c->busy = 1;
		c->due = due;
		c->sent = now_ms();
		c->woff = 0;
		c->len = 0;
		next_j++;
		sent++;
		if (pp_write(c) == -1)
			pp_reopen(c);
		else if (c->woff < reqlen)
			pp_want_out(c, 1);
	}
}

/* Length of the head (through CRLF CRLF) of buf, or 0 if incomplete;
 * *status and *clen from it. */
static size_t
pp_head(const char *buf, size_t len, int *status, size_t *clen,
    int *close_after)
{
	const char *end, *p, *eol;

	if ((end = memmem(buf, len, "\r\n\r\n", 4)) == NULL)
		return 0;
	*status = 0;
	*clen = 0;
	*close_after = 0;
	if (len > 12 && strncmp(buf, "HTTP/1.", 7) == 0)
		*status = atoi(buf + 9);
	for (p = buf; p < end; p = eol + 2) {
		if ((eol = memmem(p, end + 2 - p, "\r\n", 2)) == NULL)
			break;
		if (eol - p > 15 && strncasecmp(p, "content-length:", 15) == 0)
			*clen = strtoul(p + 15, NULL, 10);
		else if (eol - p >= 17 &&
		    strncasecmp(p, "connection:", 11) == 0 &&
		    memmem(p + 11, eol - p - 11, "close", 5) != NULL)
			*close_after = 1;
	}
	return end + 4 - buf;
}

static void
pp_read(struct pconn *c)
{
	char id[64], *p, *q;
	size_t head, clen;
	ssize_t n;
	int status, close_after, w;

	n = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0 || !c->busy) {
		pp_reopen(c);
		return;
	}
	c->len += n;
	if ((head = pp_head(c->buf, c->len, &status, &clen,
	    &close_after)) == 0 || c->len < head + clen) {
		if (c->len == sizeof(c->buf))	/* too big for us */
			pp_reopen(c);
		return;
	}
	p = c->buf + head;
	if (status == 201 &&
	    (p = memmem(p, clen, "\"id\":\"", 6)) != NULL &&
	    (q = memchr(p + 6, '"', c->buf + head + clen - (p + 6))) != NULL &&
	    q - p - 6 < (int)sizeof(id)) {
		memcpy(id, p + 6, q - p - 6);
		id[q - p - 6] = '\0';
		w = fprintf(out, "%s %.3f %.3f %.3f\n", id, now_ms(),
		    c->due, c->sent);
		ok++;
		/* The write-back of the lines a megabyte at a time, not in
		 * a burst at the kernel's 30 s expiry that stalls the
		 * machine under test (as test_sink's records). */
		if (w > 0 && (out_unsent += (size_t)w) >= PP_WB_CHUNK &&
		    fflush(out) == 0) {
			(void)sync_file_range(fileno(out), 0, 0,
			    SYNC_FILE_RANGE_WRITE);
			out_unsent = 0;
		}
	} else
		errors++;
	c->busy = 0;
	c->len = 0;
	if (close_after) {
		close(c->fd);
		pp_open(c);
	} else
		idle[nidle++] = c->idx;
}

int
main(int argc, char *argv[])
{
	struct epoll_event evs[PP_EVENTS];
	struct timespec ts;
	struct pconn *c;
	const char *file = NULL, *path = NULL;
	char *body;
	size_t bodylen = 1024, headlen;
	double now, due, wait;
	int ch, port = 0, i, n, nbusy;

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
	if (port <= 0 || port > 65535 || path == NULL || rate <= 0 ||
	    secs <= 0 || file == NULL || nconns < 1 || bodylen < 16 ||
	    strlen(path) > 1024)
		goto usage;
	if ((out = fopen(file, "w")) == NULL) {
		perror(file);
		return 1;
	}

	headlen = strlen(path) + 256;
	if ((req = malloc(headlen + bodylen)) == NULL)
		return 1;
	reqlen = snprintf(req, headlen, "POST %s HTTP/1.1\r\n"
	    "Host: 127.0.0.1\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\n\r\n", path, bodylen);
	body = req + reqlen;
	memset(body, 'x', bodylen);
	memcpy(body, "{\"pad\":\"", 8);
	memcpy(body + bodylen - 2, "\"}", 2);
	reqlen += bodylen;

	memset(&sin_to, 0, sizeof(sin_to));
	sin_to.sin_family = AF_INET;
	sin_to.sin_port = htons(port);
	sin_to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((ep = epoll_create1(0)) == -1 ||
	    (conns = calloc(nconns, sizeof(*conns))) == NULL ||
	    (idle = calloc(nconns, sizeof(*idle))) == NULL)
		return 1;
	for (i = 0; i < nconns; i++) {
		conns[i].idx = i;
		pp_open(&conns[i]);
	}

	t0 = now_ms() + 100;
	for (;;) {
		now = now_ms();
		send_due(now);
		nbusy = nconns - nidle;
		due = t0 + next_j * 1000.0 / rate;
		if (due >= t0 + secs * 1000.0 && nbusy == 0)
			break;
		if (now > t0 + (secs + PP_DRAIN_S) * 1000.0) {
			errors += nbusy;	/* never answered */
			break;
		}
		if (due >= t0 + secs * 1000.0 || nidle == 0)
			wait = 1000;	/* for an answer */
		else
			wait = due - now_ms();
		if (wait < 0)
			wait = 0;
		ts.tv_sec = (time_t)(wait / 1000);
		ts.tv_nsec = (long)((wait - ts.tv_sec * 1000.0) * 1e6);
		n = epoll_pwait2(ep, evs, PP_EVENTS, &ts, NULL);
		if (n == -1 && errno == ENOSYS)
			n = epoll_wait(ep, evs, PP_EVENTS, (int)wait + 1);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			perror("pace_post: epoll");
			return 1;
		}
		for (i = 0; i < n; i++) {
			c = evs[i].data.ptr;
			if (evs[i].events & EPOLLOUT) {
				if (pp_write(c) == -1) {
					pp_reopen(c);
					continue;
				}
				if (c->woff == reqlen)
					pp_want_out(c, 0);
			}
			if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
				pp_read(c);
		}
	}
	fclose(out);
	printf("sent %lu ok %lu errors %lu\n", sent, ok, errors);
	return 0;
 usage:
	fprintf(stderr, "usage: pace_post -p port -u path -r rate -s secs "
	    "[-c conns] [-b bytes] -o file\n");
	return 2;
}
