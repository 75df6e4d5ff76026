/* SPDX-License-Identifier: ISC */
/*
 * privsep_int.h: what privsep.c (the master's user and the helper) and
 * privsep_child.c (the children's user) share; nothing else includes it.
 */
#ifndef ANKUSA_PRIVSEP_INT_H
#define ANKUSA_PRIVSEP_INT_H

#include <sys/types.h>

/* A config the daemon cannot run with: logged, exit 78. */
#define PRIVSEP_EX_CONFIG	78
void	privsep_refuse(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));

/* The user of key (node.user, node.child_user) named user; one that does
 * not exist is refused (exit 78), naming the key. */
struct passwd	*privsep_getpw(const char *key, const char *user);

/* What a start as node.user needs to give its children another user
 * (the unit's AmbientCapabilities): the helper's spawn and signals. */
#define PRIVSEP_CAPS	((1U << CAP_SETUID) | (1U << CAP_SETGID) | \
	(1U << CAP_KILL))
/* 1 when PRIVSEP_CAPS are effective; privsep_caps_drop empties every set
 * (ambient too): 0, or -1 with errno.  Both are async-signal-safe. */
int	privsep_caps_have(void);
int	privsep_caps_drop(void);

/* A request to the helper, and its answer, at most. */
#define PRIVSEP_REQ_MAX		65536
#define PRIVSEP_REP_MAX		64

/* node.child_user resolved (NULL: unset): root is 1 when this process will
 * drop from root with a helper to spawn the children; uid, gid and name
 * are node.user's.  A user that does not exist, or root, exits 78. */
void	privsep_child_init(const char *child_user, int root, uid_t uid,
	    gid_t gid, const char *name);
/* The master knows whether it has a helper (1) or not (0): with one, its
 * children run as node.child_user; without, as the master's user, which
 * is logged as a warning. */
void	privsep_child_helper(int have);
/* The helper's side of a request privsep.c does not serve itself: the
 * answer into rep (at most replen bytes); its length. */
size_t	privsep_child_serve(const unsigned char *req, size_t len,
	    const int *fds, int nfds, unsigned char *rep, size_t replen);
/* The children's group, which the master takes as a supplementary one at
 * the drop: 1 and *gid, or 0 when the children are not separated. */
int	privsep_child_group(gid_t *gid);
/* One request to the helper and its answer (privsep.c): the answer's
 * length, or -1 with errno (EPERM: there is no helper). */
ssize_t	privsep_helper_call(const void *req, size_t len, const int *fds,
	    int nfds, void *rep, size_t replen);

#endif
