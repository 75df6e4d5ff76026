/* SPDX-License-Identifier: ISC */
/*
 * netconn.c: a guarded TCP connect and a bounded wait; see netconn.h.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "egress.h"
#include "netconn.h"

/* ms left until deadline (0: none): at least 1, or 0 when past. */
uint64_t
netconn_left_ms(uint64_t deadline)
{
	uint64_t now;

	if (deadline == 0)
		return UINT64_MAX;
	now = time_mono_ms();
	return now < deadline ? deadline - now : 0;
}

/* Wait for ev on fd until deadline, calling watch between slices.  0, or
 * -1 with err (timeout, or the watch said stop). */
int
netconn_wait(int fd, short ev, uint64_t deadline, int (*watch)(void),
    char *err, size_t errlen)
{
	struct pollfd pfd;
	uint64_t left;
	int r;

	for (;;) {
		if ((left = netconn_left_ms(deadline)) == 0) {
			snprintf(err, errlen, "Operation timed out");
			return -1;
		}
		pfd.fd = fd;
		pfd.events = ev;
		pfd.revents = 0;
		r = poll(&pfd, 1, left < NETCONN_WATCH_MS ? (int)left :
		    NETCONN_WATCH_MS);
		if (r == -1 && errno != EINTR) {
			snprintf(err, errlen, "poll: %s", strerror(errno));
			return -1;
		}
		if (r == 1)
			return 0;
		if (watch != NULL && watch() != 0) {
			snprintf(err, errlen, "aborted");
			return -1;
		}
	}
}

int
netconn_open(const char *host, const char *port, int plain,
    uint64_t deadline, int (*watch)(void), char *err, size_t errlen)
{
	struct addrinfo hints, *res, *ai;
	struct egress_watch ew;
	socklen_t sl;
	int fd = -1, e, one = 1, r;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if ((r = getaddrinfo(host, port, &hints, &res)) != 0) {
		snprintf(err, errlen, "Could not resolve host: %s (%s)", host,
		    gai_strerror(r));
		return -1;
	}
	snprintf(err, errlen, "Failed to connect to %s port %s", host, port);
	egress_watch_init(&ew, NULL, 0);
	ew.plain = plain;
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		if (egress_check(&ew, ai->ai_addr, ai->ai_addrlen) == -1)
			continue;
		if ((fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, ai->ai_protocol)) == -1)
			continue;
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
		    sizeof(one));
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		e = errno;
		if (e == EINPROGRESS) {
			if (netconn_wait(fd, POLLOUT, deadline, watch, err,
			    errlen) == -1) {
				close(fd);
				fd = -1;
				break;	/* out of time */
			}
			sl = sizeof(e);
			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) == 0 &&
			    e == 0)
				break;
		}
		snprintf(err, errlen, "Failed to connect to %s port %s: %s",
		    host, port, strerror(e));
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd == -1 && EGRESS_REFUSED(&ew)) {
		snprintf(err, errlen, "%s", ew.denied);
		return -2;
	}
	return fd;
}
