/* SPDX-License-Identifier: ISC */
/*
 * count_sink.c: the lightest HTTP sink scripts/bench can measure against.
 *
 *   count_sink -p PORT [-a ADDR]
 *
 * Listens on ADDR (127.0.0.1) and PORT (0: any; the port is printed as
 * "count_sink: listening on ADDR:PORT" on stdout either way).  Reads every
 * HTTP/1.1 request in full (its headers, then Content-Length bytes of
 * body), counts it and answers 200 with an empty body; keep-alive unless
 * the request is HTTP/1.0 or says Connection: close.  Nothing is recorded
 * and no header but Content-Length and Connection is looked at: the point
 * is a sink whose cost per request is as near nothing as a sink's can be,
 * so that bench (a)'s raw figure is the limit of the loopback and wrk, not
 * of the sink (tests/test_sink spends tens of microseconds a request
 * recording: docs/PERFORMANCE).
 *
 * Control, on the same port:
 *   GET /_ctl/stats   {"received": N}, N the requests counted since start
 *                     (/_ctl/ requests are not counted).  There is no reset:
 *                     a reader takes differences.
 * Any other /_ctl/ request is answered 404.  A chunked body is answered
 * 501 and the connection closed; headers over CS_BUF bytes get 431 and a
 * close.
 *
 * One epoll loop over plain non-blocking sockets, level-triggered: a read
 * pass answers every whole request it holds with one write.  The listen
 * backlog is 4096 and the descriptor limit is raised to its hard limit.
 * SIGINT or SIGTERM ends it (the default action).  Exits 1 on a setup
 * error.
 */
#include "config.h"

#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define CS_BUF		16384	/* a request's headers must fit */
#define CS_OUT		8192
#define CS_EVENTS	128

static const char cs_ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
static const char cs_ok_close[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n"
    "Connection: close\r\n\r\n";

struct cs_conn {
	int		 fd;
	int		 closing;	/* close once out is written */
	size_t		 body_left;	/* of the request being read */
	size_t		 pos, len;	/* unparsed input: in[pos..len) */
	size_t		 outlen;
	char		 in[CS_BUF];
	char		 out[CS_OUT];
};

static int		 cs_ep;
static unsigned long long cs_received;

static void
cs_close(struct cs_conn *c)
{
	(void)close(c->fd);	/* leaves the epoll set with it */
	free(c);
}

/* Queues an answer; the caller has made sure CS_OUT has room. */
static void
cs_answer(struct cs_conn *c, const char *s, size_t n)
{
	memcpy(c->out + c->outlen, s, n);
	c->outlen += n;
}

/*
 * The value of header `name` (with its colon, lower case) in the header
 * block h[0..n), or NULL; *vlen its length.
 */
static const char *
cs_header(const char *h, size_t n, const char *name, size_t *vlen)
{
	size_t		 nl = strlen(name);
	const char	*p = h, *end = h + n, *eol, *v;

	while (p < end) {
		if ((eol = memchr(p, '\n', end - p)) == NULL)
			eol = end;
		if ((size_t)(eol - p) > nl && strncasecmp(p, name, nl) == 0) {
			v = p + nl;
			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			*vlen = eol - v;
			while (*vlen > 0 && (v[*vlen - 1] == '\r' ||
			    v[*vlen - 1] == ' '))
				(*vlen)--;
			return v;
		}
		p = eol + 1;
	}
	return NULL;
}

/* Answers one request whose headers are h[0..n); 0, or -1 to close. */
static int
cs_request(struct cs_conn *c, const char *h, size_t n)
{
	const char	*v, *sp, *eol;
	size_t		 vlen;
	char		 num[32], body[48], buf[200];
	int		 k;

	c->body_left = 0;
	if ((v = cs_header(h, n, "content-length:", &vlen)) != NULL) {
		if (vlen == 0 || vlen >= sizeof(num))
			return -1;
		memcpy(num, v, vlen);
		num[vlen] = '\0';
		if (strspn(num, "0123456789") != vlen)
			return -1;
		c->body_left = strtoull(num, NULL, 10);
	}
	if ((v = cs_header(h, n, "transfer-encoding:", &vlen)) != NULL) {
		static const char no[] = "HTTP/1.1 501 Not Implemented\r\n"
		    "Content-Length: 0\r\nConnection: close\r\n\r\n";

		cs_answer(c, no, sizeof(no) - 1);
		c->closing = 1;
		return 0;
	}
	if ((eol = memchr(h, '\n', n)) == NULL)
		return -1;
	if ((eol - h >= 9 && memcmp(eol - 9, "HTTP/1.0", 8) == 0) ||
	    ((v = cs_header(h, n, "connection:", &vlen)) != NULL &&
	    vlen == 5 && strncasecmp(v, "close", 5) == 0))
		c->closing = 1;
	if ((sp = memchr(h, ' ', eol - h)) == NULL ||
	    eol - sp <= 7 || memcmp(sp + 1, "/_ctl/", 6) != 0) {
		cs_received++;
		if (c->closing)
			cs_answer(c, cs_ok_close, sizeof(cs_ok_close) - 1);
		else
			cs_answer(c, cs_ok, sizeof(cs_ok) - 1);
	} else if (strncmp(h, "GET /_ctl/stats ", 16) == 0) {
		k = snprintf(body, sizeof(body), "{\"received\": %llu}",
		    cs_received);
		k = snprintf(buf, sizeof(buf), "HTTP/1.1 200 OK\r\n"
		    "Content-Type: application/json\r\nContent-Length: %d\r\n"
		    "%s\r\n%s", k, c->closing ? "Connection: close\r\n" : "",
		    body);
		cs_answer(c, buf, k);
	} else {
		k = snprintf(buf, sizeof(buf), "HTTP/1.1 404 Not Found\r\n"
		    "Content-Length: 0\r\n%s\r\n",
		    c->closing ? "Connection: close\r\n" : "");
		cs_answer(c, buf, k);
	}
	return 0;
}

/*
 * Consumes the whole requests in in[pos..len) while out has room for an
 * answer; 0, 1 if it stopped for out's room with input left, or -1 to
 * close.
 */
static int
cs_parse(struct cs_conn *c)
{
	const char	*p, *e;
	size_t		 avail, take;

	while (!c->closing && CS_OUT - c->outlen >= 256) {
		avail = c->len - c->pos;
		if (c->body_left > 0) {
			take = avail < c->body_left ? avail : c->body_left;
			c->pos += take;
			c->body_left -= take;
			if (c->body_left > 0)
				break;
			continue;
		}
		p = c->in + c->pos;
		if (avail < 4 || (e = memmem(p, avail, "\r\n\r\n", 4)) ==
		    NULL)
			break;
		c->pos += e + 4 - p;
		if (cs_request(c, p, e + 2 - p) == -1)
			return -1;
	}
	if (c->pos == c->len)
		c->pos = c->len = 0;
	else if (c->len == CS_BUF && c->pos > 0) {
		memmove(c->in, c->in + c->pos, c->len - c->pos);
		c->len -= c->pos;
		c->pos = 0;
	}
	return !c->closing && c->len > c->pos && CS_OUT - c->outlen < 256;
}

/* Writes out what it can; 1 if all is written, 0 if not, -1 on error. */
static int
cs_flush(struct cs_conn *c)
{
	ssize_t		 w;

	while (c->outlen > 0) {
		w = write(c->fd, c->out, c->outlen);
		if (w == -1) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -1;
		}
		memmove(c->out, c->out + w, c->outlen - w);
		c->outlen -= w;
	}
	return 1;
}

static void
cs_want(struct cs_conn *c, unsigned int what)
{
	struct epoll_event ev;

	ev.events = what;
	ev.data.ptr = c;
	(void)epoll_ctl(cs_ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/* One readiness event of a connection. */
static void
cs_serve(struct cs_conn *c, unsigned int events)
{
	ssize_t		 r;
	int		 f, more;

	if (events & EPOLLOUT) {
		if ((f = cs_flush(c)) == -1)
			goto gone;
		if (f == 0)
			return;
		if (c->closing)
			goto gone;
		cs_want(c, EPOLLIN);
	} else if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		if (c->len == CS_BUF) {
			/* The headers of one request fill the buffer. */
			static const char big[] = "HTTP/1.1 431 Request "
			    "Header Fields Too Large\r\nContent-Length: 0\r\n"
			    "Connection: close\r\n\r\n";

			cs_answer(c, big, sizeof(big) - 1);
			c->closing = 1;
		} else {
			r = read(c->fd, c->in + c->len, CS_BUF - c->len);
			if (r == -1 && (errno == EAGAIN || errno == EINTR))
				return;
			if (r <= 0)
				goto gone;
			c->len += r;
		}
	}
	/*
	 * Level-triggered: requests left in the buffer for out's room would
	 * get no event of their own, so they are parsed once out is written.
	 */
	do {
		if ((more = cs_parse(c)) == -1 || (f = cs_flush(c)) == -1)
			goto gone;
		if (f == 0) {
			cs_want(c, EPOLLOUT);
			return;
		}
	} while (more);
	if (c->closing)
		goto gone;
	return;
gone:
	cs_close(c);
}

static void
cs_accept(int lfd)
{
	struct epoll_event ev;
	struct cs_conn	*c;
	int		 fd;

	while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK |
	    SOCK_CLOEXEC)) != -1) {
		if ((c = malloc(sizeof(*c))) == NULL) {
			(void)close(fd);
			continue;
		}
		c->fd = fd;
		c->closing = 0;
		c->body_left = c->pos = c->len = c->outlen = 0;
		ev.events = EPOLLIN;
		ev.data.ptr = c;
		if (epoll_ctl(cs_ep, EPOLL_CTL_ADD, fd, &ev) == -1)
			cs_close(c);
	}
}

static void
cs_usage(void)
{
	fprintf(stderr, "usage: count_sink -p PORT [-a ADDR]\n");
	exit(1);
}

int
main(int argc, char *argv[])
{
	struct epoll_event evs[CS_EVENTS];
	struct sockaddr_in sin;
	struct rlimit	 rl;
	socklen_t	 slen;
	const char	*addr = "127.0.0.1";
	long		 port = -1;
	char		*end;
	int		 ch, lfd, n, i, one = 1;
	static int	 lmark;		/* the listener's epoll tag */

	while ((ch = getopt(argc, argv, "a:p:")) != -1) {
		switch (ch) {
		case 'a':
			addr = optarg;
			break;
		case 'p':
			errno = 0;
			port = strtol(optarg, &end, 10);
			if (errno != 0 || *optarg == '\0' || *end != '\0' ||
			    port < 0 || port > 65535)
				cs_usage();
			break;
		default:
			cs_usage();
		}
	}
	if (port < 0 || optind != argc)
		cs_usage();
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
		fprintf(stderr, "count_sink: bad address %s\n", addr);
		return 1;
	}
	if ((lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one,
	    sizeof(one)) == -1 ||
	    bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(lfd, 4096) == -1) {
		perror("count_sink: listen");
		return 1;
	}
	slen = sizeof(sin);
	if (getsockname(lfd, (struct sockaddr *)&sin, &slen) == -1) {
		perror("count_sink: getsockname");
		return 1;
	}
	if ((cs_ep = epoll_create1(EPOLL_CLOEXEC)) == -1) {
		perror("count_sink: epoll_create1");
		return 1;
	}
	evs[0].events = EPOLLIN;
	evs[0].data.ptr = &lmark;
	if (epoll_ctl(cs_ep, EPOLL_CTL_ADD, lfd, &evs[0]) == -1) {
		perror("count_sink: epoll_ctl");
		return 1;
	}
	printf("count_sink: listening on %s:%d\n", addr, ntohs(sin.sin_port));
	fflush(stdout);
	for (;;) {
		if ((n = epoll_wait(cs_ep, evs, CS_EVENTS, -1)) == -1) {
			if (errno == EINTR)
				continue;
			perror("count_sink: epoll_wait");
			return 1;
		}
		for (i = 0; i < n; i++) {
			if (evs[i].data.ptr == &lmark)
				cs_accept(lfd);
			else
				cs_serve(evs[i].data.ptr, evs[i].events);
		}
	}
}
