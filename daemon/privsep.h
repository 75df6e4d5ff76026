/* SPDX-License-Identifier: ISC */
/*
 * privsep.h: the master's change of user (node.user); see privsep.c.
 */
#ifndef ANKUSA_PRIVSEP_H
#define ANKUSA_PRIVSEP_H

#include <sys/types.h>

/* node.user when the key is unset and ankusad starts as root. */
#define PRIVSEP_DEFAULT_USER	"ankusa"
/* node.child_user when the key is unset (privsep_child.c). */
#define PRIVSEP_DEFAULT_CHILD_USER	"ankusa-child"

/* Resolve node.user and node.child_user (NULL: unset) before anything is
 * opened; a user that does not exist, or one a non-root start cannot
 * become, is logged and the daemon exits 78. */
void		 privsep_init(const char *user, const char *child_user);
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
/* Started as root: fork the helper that stays root, which spawns and
 * signals the children (privsep_spawn, privsep_kill) and does one act, act(fd)
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
/* The user the children run as (node.child_user, or the master's when
 * they are not separated), and whether they are separated (1) or not. */
const char	*privsep_child_user(void);
int		 privsep_child_separate(void);
/* As root, before the drop: the local claim store's root (NULL: none) is
 * made the children's user's, and node.data_dir traversable by its group
 * when the root is under it (no-op unless the children are separated). */
void		 privsep_child_dirs(const char *data_dir, const char *claims);
/* Spawn a child as proc_spawn(3) does, as the children's user (through the
 * helper when they are separated): the pid, or -1 with errno. */
pid_t		 privsep_spawn(const char *path, char *const argv[],
		    char *const envp[], const int *fds, int nfds);
/* Signal a child privsep_spawn spawned (through the helper when they are
 * separated): 0, or -1 with errno. */
int		 privsep_kill(pid_t pid, int sig);
/* Not dumpable: no core file, and neither ptrace nor /proc/PID/mem or
 * environ for the user's other processes (PR_SET_DUMPABLE 0; a change of
 * ids or an exec resets it: called at the start and after the drop).  A
 * sanitizer build stays dumpable (LeakSanitizer traces the process). */
void		 privsep_nodump(void);
/* Become the user for good: groups, gid, uid, each checked (no-op unless
 * started as root); fatal on failure. */
void		 privsep_drop(void);

#endif
