/* SPDX-License-Identifier: ISC */
/*
 * notify.c: READY, RELOADING, STOPPING, STATUS and WATCHDOG to the service
 * manager over NOTIFY_SOCKET; see notify.h.
 *
 * One datagram socket, opened and connected by notify_init before the
 * master drops anything, so that it keeps working whatever the master can
 * reach later (another user, another root).
 * A send that fails is logged once and otherwise ignored: the manager is
 * told nothing more, the daemon goes on.  The watchdog's pings come from
 * a timer of the master's own loop, so a loop that hangs stops them and
 * the manager restarts the service.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "clock.h"
#include "log.h"
#include "notify.h"
#include "reexec.h"

#define NOTIFY_MSG_MAX		1024
#define NOTIFY_STATUS_MAX	256
#define NOTIFY_STATUS_MS	5000	/* between status() calls */
#define NOTIFY_POLL_MS		20	/* ready() until it is true */

static int			 notify_fd = -1;
static struct sockaddr_un	 notify_sun;
static socklen_t		 notify_sunlen;
static uint64_t			 notify_wd_us;	/* 0: no watchdog */
static int			 notify_ready_sent;
static int			 notify_stopped;
static int			 notify_failed;
static int			 (*notify_ready_fn)(void);
static void			 (*notify_status_fn)(char *, size_t);
static char			 notify_last[NOTIFY_STATUS_MAX];
static struct event		*ev_poll;
static struct event		*ev_status;
static struct event		*ev_watchdog;

static void	notify_send(enum notify_kind, const char *);
static void	poll_cb(evutil_socket_t, short, void *);
static void	status_cb(evutil_socket_t, short, void *);
static void	watchdog_cb(evutil_socket_t, short, void *);
static void	ms_tv(uint64_t, struct timeval *);

int
notify_addr(const char *s, struct sockaddr_un *sun, socklen_t *lenp)
{
	size_t n;

	if (s == NULL || (s[0] != '/' && s[0] != '@'))
		return -1;
	n = strlen(s);
	if (n < 2 || n >= sizeof(sun->sun_path))
		return -1;
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path, s, n);
	if (s[0] == '@') {
		/* Abstract: the name is every byte after the NUL, no
		 * terminator of its own, so the length counts it exactly. */
		sun->sun_path[0] = '\0';
		*lenp = offsetof(struct sockaddr_un, sun_path) + n;
	} else
		*lenp = offsetof(struct sockaddr_un, sun_path) + n + 1;
	return 0;
}

int
notify_watchdog(const char *usec, const char *pid, pid_t self,
    uint64_t *usecp)
{
	unsigned long long v;
	char *end;

	*usecp = 0;
	if (usec == NULL || *usec == '\0')
		return 0;
	if (pid != NULL && *pid != '\0') {
		errno = 0;
		v = strtoull(pid, &end, 10);
		if (errno != 0 || *end != '\0' || *pid < '0' || *pid > '9')
			return -1;
		if (v != (unsigned long long)self)
			return 0;
	}
	errno = 0;
	v = strtoull(usec, &end, 10);
	if (errno != 0 || *end != '\0' || *usec < '0' || *usec > '9' ||
	    v == 0)
		return -1;
	*usecp = v;
	return 0;
}

int
notify_format(char *buf, size_t len, enum notify_kind kind, pid_t pid,
    uint64_t mono_us, const char *status)
{
	size_t off;
	int n = 0;
	char *p;

	switch (kind) {
	case NOTIFY_READY:
		n = snprintf(buf, len, "READY=1\nMAINPID=%ld\n", (long)pid);
		break;
	case NOTIFY_RELOADING:
		n = snprintf(buf, len, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64
		    "\n", mono_us);
		break;
	case NOTIFY_STOPPING:
		n = snprintf(buf, len, "STOPPING=1\n");
		break;
	case NOTIFY_WATCHDOG:
		n = snprintf(buf, len, "WATCHDOG=1\n");
		break;
	case NOTIFY_STATUS:
		n = snprintf(buf, len, "%s", "");
		break;
	}
	if (n < 0 || (size_t)n >= len)
		return -1;
	if (status == NULL)
		return n;
	off = n;
	n = snprintf(buf + off, len - off, "STATUS=%s\n", status);
	if (n < 0 || (size_t)n >= len - off)
		return -1;
	/* One line: a newline inside would start another assignment. */
	for (p = buf + off + 7; p < buf + off + n - 1; p++)
		if (*p == '\n')
			*p = ' ';
	return off + n;
}

void
notify_reexec_keep(void)
{
	char buf[32];

	if (notify_fd == -1)
		return;
	reexec_keep("notify", notify_fd);
	if (notify_wd_us != 0) {
		snprintf(buf, sizeof(buf), "%llu",
		    (unsigned long long)notify_wd_us);
		(void)setenv("WATCHDOG_USEC", buf, 1);
		snprintf(buf, sizeof(buf), "%ld", (long)getpid());
		(void)setenv("WATCHDOG_PID", buf, 1);
	}
}

int
notify_init(void)
{
	const char *s;
	int rc;

	/* An exec of ankusad by itself hands its connected socket down
	 * (notify_reexec_keep). */
	if ((notify_fd = reexec_take("notify")) != -1)
		;
	else if ((s = getenv("NOTIFY_SOCKET")) != NULL && *s != '\0') {
		if (notify_addr(s, &notify_sun, &notify_sunlen) == -1)
			log_warnx("NOTIFY_SOCKET=%s: not an absolute path or "
			    "an @name; the service manager is not told",
			    s);
		else if ((notify_fd = socket(AF_UNIX, SOCK_DGRAM |
		    SOCK_CLOEXEC, 0)) == -1)
			log_warn("NOTIFY_SOCKET: socket");
		else if (connect(notify_fd, (struct sockaddr *)&notify_sun,
		    notify_sunlen) == -1) {
			log_warn("NOTIFY_SOCKET=%s: connect; the service "
			    "manager is not told", s);
			close(notify_fd);
			notify_fd = -1;
		}
	}
	rc = notify_watchdog(getenv("WATCHDOG_USEC"), getenv("WATCHDOG_PID"),
	    getpid(), &notify_wd_us);
	if (rc == -1)
		log_warnx("WATCHDOG_USEC=%s WATCHDOG_PID=%s: not numbers; no "
		    "watchdog pings", getenv("WATCHDOG_USEC"),
		    getenv("WATCHDOG_PID") != NULL ? getenv("WATCHDOG_PID") :
		    "(unset)");
	if (notify_fd == -1)
		notify_wd_us = 0;
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	return notify_fd != -1;
}

static void
notify_send(enum notify_kind kind, const char *status)
{
	char buf[NOTIFY_MSG_MAX];
	int n;

	if (notify_fd == -1)
		return;
	n = notify_format(buf, sizeof(buf), kind, getpid(), time_mono_us(),
	    status);
	if (n == -1) {
		log_warnx("notify: message too long, not sent");
		return;
	}
	if (send(notify_fd, buf, n, MSG_NOSIGNAL) == n) {
		notify_failed = 0;
		return;
	}
	/* Once per run of failures: a manager gone is no reason to stop. */
	if (!notify_failed)
		log_warn("notify: send to NOTIFY_SOCKET");
	notify_failed = 1;
}

static void
ms_tv(uint64_t ms, struct timeval *tv)
{
	tv->tv_sec = ms / 1000;
	tv->tv_usec = ms % 1000 * 1000;
}

void
notify_start(struct event_base *base, int (*ready)(void),
    void (*status)(char *, size_t))
{
	struct timeval tv;

	if (notify_fd == -1)
		return;
	notify_ready_fn = ready;
	notify_status_fn = status;
	ev_poll = evtimer_new(base, poll_cb, NULL);
	ev_status = event_new(base, -1, EV_PERSIST, status_cb, NULL);
	if (ev_poll == NULL || ev_status == NULL)
		fatalx("notify: libevent");
	ms_tv(0, &tv);
	evtimer_add(ev_poll, &tv);
	if (notify_wd_us != 0) {
		ev_watchdog = event_new(base, -1, EV_PERSIST, watchdog_cb,
		    NULL);
		if (ev_watchdog == NULL)
			fatalx("notify: libevent");
		/* Half the manager's timeout, as sd_watchdog_enabled(3)
		 * advises: one late turn of the loop is no restart. */
		tv.tv_sec = notify_wd_us / 2 / 1000000;
		tv.tv_usec = notify_wd_us / 2 % 1000000;
		event_add(ev_watchdog, &tv);
		log_debug("notify: watchdog pings every %" PRIu64 " us",
		    notify_wd_us / 2);
		notify_send(NOTIFY_WATCHDOG, NULL);
	}
}

static void
poll_cb(evutil_socket_t fd, short ev, void *arg)
{
	char status[NOTIFY_STATUS_MAX];
	struct timeval tv;

	if (notify_stopped)
		return;
	if (!notify_ready_fn()) {
		ms_tv(NOTIFY_POLL_MS, &tv);
		evtimer_add(ev_poll, &tv);
		return;
	}
	notify_status_fn(status, sizeof(status));
	snprintf(notify_last, sizeof(notify_last), "%s", status);
	notify_send(NOTIFY_READY, status);
	notify_ready_sent = 1;
	ms_tv(NOTIFY_STATUS_MS, &tv);
	event_add(ev_status, &tv);
}

static void
status_cb(evutil_socket_t fd, short ev, void *arg)
{
	char status[NOTIFY_STATUS_MAX];

	notify_status_fn(status, sizeof(status));
	notify_status(status);
}

static void
watchdog_cb(evutil_socket_t fd, short ev, void *arg)
{
	notify_send(NOTIFY_WATCHDOG, NULL);
}

void
notify_reloading(void)
{
	/* Before READY=1 the poll says it when the new config is in force. */
	if (!notify_ready_sent || notify_stopped)
		return;
	notify_send(NOTIFY_RELOADING, "reloading");
}

void
notify_reloaded(const char *status)
{
	if (!notify_ready_sent || notify_stopped)
		return;
	snprintf(notify_last, sizeof(notify_last), "%s", status);
	notify_send(NOTIFY_READY, status);
}

void
notify_stopping(const char *status)
{
	struct timeval tv;

	if (notify_stopped)
		return;
	notify_stopped = 1;
	if (ev_poll != NULL)
		event_del(ev_poll);
	snprintf(notify_last, sizeof(notify_last), "%s", status);
	notify_send(NOTIFY_STOPPING, status);
	/* The drain's counts go on, so the manager shows its progress. */
	if (ev_status != NULL && !event_pending(ev_status, EV_TIMEOUT,
	    NULL)) {
		ms_tv(NOTIFY_STATUS_MS, &tv);
		event_add(ev_status, &tv);
	}
}

void
notify_status(const char *status)
{
	if (notify_fd == -1 || strcmp(status, notify_last) == 0)
		return;
	snprintf(notify_last, sizeof(notify_last), "%s", status);
	notify_send(NOTIFY_STATUS, status);
}

void
notify_close(void)
{
	if (ev_poll != NULL)
		event_free(ev_poll);
	if (ev_status != NULL)
		event_free(ev_status);
	if (ev_watchdog != NULL)
		event_free(ev_watchdog);
	ev_poll = ev_status = ev_watchdog = NULL;
	if (notify_fd != -1)
		close(notify_fd);
	notify_fd = -1;
}
