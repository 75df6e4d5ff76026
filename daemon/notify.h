/* SPDX-License-Identifier: ISC */
/*
 * notify.h: the service manager's readiness protocol (systemd's
 * NOTIFY_SOCKET, sd_notify(3)), written here rather than linked.
 *
 * A message is one datagram of NAME=VALUE lines to the AF_UNIX socket that
 * NOTIFY_SOCKET names: a path, or with a leading '@' a name in Linux's
 * abstract namespace.  The master says READY=1 (with MAINPID) once ingest
 * accepts, RELOADING=1 (with MONOTONIC_USEC) and READY=1 around a reload,
 * STOPPING=1 when it drains, STATUS= lines with its state and counts, and
 * WATCHDOG=1 every WATCHDOG_USEC / 2 from its loop when the manager asks
 * for it (WATCHDOG_USEC set, WATCHDOG_PID ours or unset).  Without
 * NOTIFY_SOCKET every call here does nothing.
 */
#ifndef ANKUSA_NOTIFY_H
#define ANKUSA_NOTIFY_H

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <stddef.h>
#include <stdint.h>

struct event_base;

enum notify_kind {
	NOTIFY_READY,		/* READY=1, MAINPID= */
	NOTIFY_RELOADING,	/* RELOADING=1, MONOTONIC_USEC= */
	NOTIFY_STOPPING,	/* STOPPING=1 */
	NOTIFY_WATCHDOG,	/* WATCHDOG=1 */
	NOTIFY_STATUS,		/* STATUS= only */
};

/* The pieces, pure, for the tests. */
/* NOTIFY_SOCKET's value as an address: 0, or -1 (not absolute, not '@',
 * empty or too long). */
int	notify_addr(const char *, struct sockaddr_un *, socklen_t *);
/* The watchdog interval in us from WATCHDOG_USEC and WATCHDOG_PID (either
 * may be NULL): 0 when off (unset, not ours), -1 when malformed. */
int	notify_watchdog(const char *usec, const char *pid, pid_t self,
	    uint64_t *usecp);
/* The message of kind with an optional status (newlines become spaces),
 * NUL-terminated; its length, or -1 if it does not fit in len. */
int	notify_format(char *buf, size_t len, enum notify_kind, pid_t pid,
	    uint64_t mono_us, const char *status);

/* From the environment, once, before any child is spawned: takes
 * NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID and unsets them, so no
 * child inherits them.  1 when a manager listens, else 0. */
int	notify_init(void);
/* In the loop: once ready() is true, READY=1; then status() every few
 * seconds (sent when it changed) and the watchdog's pings. */
void	notify_start(struct event_base *, int (*ready)(void),
	    void (*status)(char *, size_t));
void	notify_reloading(void);
void	notify_reloaded(const char *status);
void	notify_stopping(const char *status);
void	notify_status(const char *status);
void	notify_close(void);
/* Before an exec of ankusad by itself (reexec.h): the socket handed
 * down, and the watchdog's interval with it. */
void	notify_reexec_keep(void);

#endif /* ANKUSA_NOTIFY_H */
