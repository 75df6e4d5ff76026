/* SPDX-License-Identifier: ISC */
/*
 * admin_peer.c: the control socket's admission by the peer's
 * credentials; see admin_peer.h.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>

#include "admin_peer.h"

int
peer_policy_init(struct peer_policy *pp, const char *group, uid_t self,
    int started_root, char *err, size_t errlen)
{
	struct group *gr;
	struct passwd *pw;
	char **m;

	memset(pp, 0, sizeof(*pp));
	pp->self = self;
	pp->self_ok = !started_root;
	if (group == NULL)
		return 0;
	errno = 0;
	if ((gr = getgrnam(group)) == NULL) {
		snprintf(err, errlen, "control.group %s: %s", group,
		    errno != 0 ? strerror(errno) : "no such group");
		return -1;
	}
	pp->has_group = 1;
	pp->gid = gr->gr_gid;
	/* The member list as uids, resolved once, as root, at start. */
	for (m = gr->gr_mem; m != NULL && *m != NULL &&
	    pp->nmembers < PEER_MAX_MEMBERS; m++)
		if ((pw = getpwnam(*m)) != NULL)
			pp->members[pp->nmembers++] = pw->pw_uid;
	return 0;
}

int
peer_admit(const struct peer_policy *pp, uid_t uid, gid_t gid,
    const gid_t *groups, int ngroups, char *why, size_t whylen)
{
	int i;

	if (uid == 0)
		return 1;
	if (uid == pp->self) {
		if (pp->self_ok)
			return 1;
		snprintf(why, whylen, "uid %u is node.user, the user of "
		    "ankusad's own processes: the control socket admits root "
		    "and control.group only", (unsigned)uid);
		return 0;
	}
	if (pp->has_group) {
		if (gid == pp->gid)
			return 1;
		for (i = 0; i < ngroups; i++)
			if (groups[i] == pp->gid)
				return 1;
		for (i = 0; i < pp->nmembers; i++)
			if (pp->members[i] == uid)
				return 1;
	}
	snprintf(why, whylen, "uid %u is not root%s: the control socket "
	    "admits root and control.group only", (unsigned)uid,
	    pp->has_group ? " nor a member of control.group" : ""
	    " (control.group is unset)");
	return 0;
}

int
peer_creds(int fd, uid_t *uid, gid_t *gid, gid_t *groups, int max,
    int *ngroups)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);

	*ngroups = 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) == -1 ||
	    len != sizeof(uc))
		return -1;
	*uid = uc.uid;
	*gid = uc.gid;
#ifdef SO_PEERGROUPS
	/* More than max groups (ERANGE): none are taken, and the primary
	 * group and the member list still decide. */
	len = (socklen_t)(max * sizeof(gid_t));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0)
		*ngroups = (int)(len / sizeof(gid_t));
#endif
	return 0;
}
