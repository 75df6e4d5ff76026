/* SPDX-License-Identifier: ISC */
/*
 * fdpass.c: one datagram with descriptors (SCM_RIGHTS) on a
 * SOCK_SEQPACKET socket, each way: the master's root helper
 * (daemon/privsep.c) and an edge's jq supervisor (workers/jqeval.c).
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "fdpass.h"
#include "proc.h"

/* One datagram of len bytes, with the nfds descriptors of fds (none that
 * is -1): 0, or -1 with errno. */
int
fdpass_send(int sock, const void *buf, size_t len, const int *fds,
    int nfds)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int) * PROC_MAX_FDS)];
	} cm;
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh;
	struct cmsghdr *ch;
	ssize_t n;

	if (nfds > PROC_MAX_FDS) {
		errno = EINVAL;
		return -1;
	}
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (nfds > 0) {
		memset(&cm, 0, sizeof(cm));
		mh.msg_control = cm.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		ch = CMSG_FIRSTHDR(&mh);
		ch->cmsg_level = SOL_SOCKET;
		ch->cmsg_type = SCM_RIGHTS;
		ch->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(ch), fds, sizeof(int) * nfds);
	}
	while ((n = sendmsg(sock, &mh, MSG_NOSIGNAL)) == -1 && errno == EINTR)
		;
	return n == (ssize_t)len ? 0 : -1;
}

/* One datagram into buf (at most len bytes) and its descriptors into fds
 * (at most PROC_MAX_FDS, *nfds set): its length, 0 at EOF, or -1. */
ssize_t
fdpass_recv(int sock, void *buf, size_t len, int *fds, int *nfds)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int) * PROC_MAX_FDS)];
	} cm;
	struct iovec iov = { buf, len };
	struct msghdr mh;
	struct cmsghdr *ch;
	ssize_t n;

	*nfds = 0;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.buf;
	mh.msg_controllen = sizeof(cm.buf);
	while ((n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC)) == -1 &&
	    errno == EINTR)
		;
	if (n <= 0)
		return n;
	for (ch = CMSG_FIRSTHDR(&mh); ch != NULL; ch = CMSG_NXTHDR(&mh, ch))
		if (ch->cmsg_level == SOL_SOCKET &&
		    ch->cmsg_type == SCM_RIGHTS && *nfds == 0) {
			*nfds = (ch->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			memcpy(fds, CMSG_DATA(ch), sizeof(int) * *nfds);
		}
	/* A truncated datagram is refused whole (its descriptors too). */
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		while (*nfds > 0)
			close(fds[--*nfds]);
		errno = EMSGSIZE;
		return -1;
	}
	return n;
}
