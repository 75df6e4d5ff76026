/* SPDX-License-Identifier: ISC */
/*
 * fdpass.h: one datagram with descriptors (SCM_RIGHTS) on a
 * SOCK_SEQPACKET socket, each way; see fdpass.c.
 */
#ifndef ANKUSA_FDPASS_H
#define ANKUSA_FDPASS_H

#include <sys/types.h>

#include <stddef.h>

/* One datagram of len bytes, with the nfds descriptors of fds (at most
 * PROC_MAX_FDS): 0, or -1 with errno.  Never raises SIGPIPE. */
int	fdpass_send(int sock, const void *buf, size_t len, const int *fds,
	    int nfds);
/* One datagram into buf (at most len bytes) and its descriptors into fds
 * (at most PROC_MAX_FDS, *nfds set, close-on-exec): its length, 0 at
 * EOF, or -1 (a truncated one is refused whole, descriptors closed:
 * EMSGSIZE). */
ssize_t	fdpass_recv(int sock, void *buf, size_t len, int *fds, int *nfds);

#endif
