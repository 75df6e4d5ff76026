/* SPDX-License-Identifier: ISC */
/*
 * privsep.h: the master's change of user (node.user); see privsep.c.
 */
#ifndef ANKUSA_PRIVSEP_H
#define ANKUSA_PRIVSEP_H

#include <sys/types.h>

/* node.user when the key is unset and ankusad starts as root. */
#define PRIVSEP_DEFAULT_USER	"ankusa"

/* Resolve node.user (NULL: unset) before anything is opened; a user that
 * does not exist, or one a non-root start cannot become, is logged and the
 * daemon exits 78. */
void		 privsep_init(const char *user);
/* The name of the user the daemon runs as, or will after the drop. */
const char	*privsep_user(void);
/* The data directory: created (as root: owned by the user) when missing;
 * one owned by another user is logged and the daemon exits 78. */
void		 privsep_data_dir(const char *dir);
/* Take the user's effective ids while the store is opened, so that what it
 * creates is the user's, and root's back after (no-ops unless root). */
void		 privsep_as_user(void);
void		 privsep_as_root(void);
/* The uid the daemon runs as (or will after the drop), and whether it
 * was started as root (an exec of ankusad by itself: whether the first
 * image was, as the root helper it hands down says). */
uid_t		 privsep_uid(void);
int		 privsep_root(void);
/* Started as root: fork the helper that stays root for one act, act(fd)
 * at a drain (the ingest listener's socket filter, which a kernel may
 * refuse an unprivileged process), asked for by privsep_helper_act(fd),
 * which passes it fd (the helper holds no descriptor before): 0, or -1
 * with errno.  Executed again by itself (reexec.h): take back the helper
 * the image before handed down (privsep_reexec_keep), forking none. */
void		 privsep_helper(int (*act)(int));
int		 privsep_helper_act(int fd);
/* Before an exec of ankusad by itself (reexec.h): hand the helper's
 * socketpair end down, for privsep_helper in the new image to take back
 * instead of forking (it runs as the user by then). */
void		 privsep_reexec_keep(void);
/* Become the user for good: groups, gid, uid, each checked (no-op unless
 * started as root); fatal on failure. */
void		 privsep_drop(void);

#endif
