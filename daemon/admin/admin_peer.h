/* SPDX-License-Identifier: ISC */
/*
 * admin_peer.h: who may use the control socket.
 *
 * root, and the members of control.group; never the user the master
 * runs as (node.user), whose processes include the children.  A peer is
 * known by its credentials as the kernel gives them (SO_PEERCRED and
 * SO_PEERGROUPS), not by anything it says.  A member of the group is a
 * user whose primary group it is, who has it among its supplementary
 * groups, or whom the group's entry lists.
 *
 * When ankusad was not started as root there is no user to separate:
 * the master and its children are the user that started it, which can
 * trace and signal them all anyway, so that user is admitted too.
 */
#ifndef ANKUSA_ADMIN_PEER_H
#define ANKUSA_ADMIN_PEER_H

#include <sys/types.h>

#define PEER_MAX_MEMBERS	256	/* of a group's member list */
#define PEER_MAX_GROUPS		256	/* supplementary groups looked at */

struct peer_policy {
	uid_t	 self;		/* the master's user */
	int	 self_ok;	/* admitted: not started as root */
	int	 has_group;
	gid_t	 gid;		/* control.group */
	uid_t	 members[PEER_MAX_MEMBERS];	/* its member list, as uids */
	int	 nmembers;
};

/* The policy for control.group (NULL: none), the master running as self
 * and started as root or not: 0, or -1 with err (no such group). */
int	peer_policy_init(struct peer_policy *, const char *group, uid_t self,
	    int started_root, char *err, size_t errlen);

/* 1 when a peer of uid, primary gid and the supplementary groups given is
 * admitted; else 0 with why filled (a sentence for the refusal). */
int	peer_admit(const struct peer_policy *, uid_t uid, gid_t gid,
	    const gid_t *groups, int ngroups, char *why, size_t whylen);

/* The credentials of the peer of the unix socket fd: 0, or -1.  Its
 * supplementary groups, at most max, in groups and their count in
 * *ngroups (0 where the kernel cannot say). */
int	peer_creds(int fd, uid_t *uid, gid_t *gid, gid_t *groups, int max,
	    int *ngroups);

#endif
