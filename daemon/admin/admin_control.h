/* SPDX-License-Identifier: ISC */
/*
 * admin_control.h: the control socket that ankusactl talks to.
 *
 * A unix stream socket (control.socket, mode control.mode).  A client sends
 * one JSON object per line, {"cmd": NAME, ...arguments}; the master answers
 * with JSON objects, one per line, the last of which has "end": true and
 * either "ok": true or "ok": false with "error".  Listings stream: they are
 * written as the socket drains, so a million hooks never sit in memory.
 */
#ifndef ANKUSA_CONTROL_H
#define ANKUSA_CONTROL_H

#include <sys/types.h>

/* 0, or -1 with err filled (path in use, cannot bind, no such group).
 * Started as root, the socket is root's and group's (root's when group
 * is NULL); who may connect is admin_peer.h's. */
int	control_init(const char *path, mode_t mode, const char *group,
	    char *err, size_t errlen);
int	control_fd(void);	/* its listening socket, or -1 */
/* Connections whose last answer is not all written yet (a stop waits). */
int	control_unsent(void);
void	control_close(void);

#endif
