/* SPDX-License-Identifier: ISC */
/*
 * privsep_child.c: the children's user (node.child_user; SECURITY in
 * ankusad(8)).
 *
 * The master runs as node.user and owns what a compromised child must not
 * reach: the control socket (node.user's, mode control.mode), the store in
 * node.data_dir (0700), the config file (root:node.user 0640 as
 * installed), and the master's own process.  Its children run as another
 * user, node.child_user (ankusa-child when unset), with that user's group
 * and no other: kill(2), prlimit(2) and ptrace(2) refuse a process of
 * another user, and the files above are not theirs.  What the children
 * need of the file system is their programs (ANKUSA_LIBEXECDIR, which
 * every user may execute as installed) and the local claim store, which
 * deliver processes write and gateways read and the master never opens.
 * The children's group is shared: the master has it too (a supplementary
 * group at the drop), so that it can make the claim store's root, at
 * start and at a reload that moves it, as node.user, group the children's,
 * mode 2770 (privsep_child_dirs); a root under node.data_dir makes
 * node.data_dir traversable by that group (0710, no listing).  Everything
 * else a child gets it gets by descriptor from the master.
 *
 * The master, no longer root, can neither become that user nor signal its
 * processes: the helper that stays root (privsep.c; in a start with the
 * capabilities, keeps CAP_SETUID, CAP_SETGID and CAP_KILL) does both on
 * request.  It spawns each child with clone(CLONE_PARENT), so that the
 * child is the master's (its SIGCHLD, its waitpid), takes the children's
 * ids in the new process (groups, gid, uid, each checked) and executes
 * the program the master named; it signals only a process it spawned, through the pidfd
 * it keeps of each (no pid reused after a reap can be hit).  A master that
 * is compromised can ask it for nothing the master could not do itself
 * but run a program as the children's user.
 *
 * Not separated, said so at start as a warning: a start as another user
 * than root without CAP_SETUID, CAP_SETGID and CAP_KILL (no helper: the
 * children are the master's user), and a node.child_user equal to
 * node.user; a node.user that is root is privsep_init's warning.  Fatal (exit
 * 78): a node.child_user that does not exist, is root, or has node.user's
 * group.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "privsep.h"
#include "privsep_int.h"
#include "proc.h"

#ifndef CLONE_PIDFD
#define CLONE_PIDFD	0x00001000
#endif

#define PRIVSEP_REQ_SPAWN	'S'
#define PRIVSEP_REQ_KILL	'K'
#define PRIVSEP_ARGV_MAX	32
#define PRIVSEP_ENV_MAX		1024

/* The helper's record of a child it spawned. */
struct kid {
	pid_t	 pid;
	int	 pidfd;		/* -1: the kernel gave none */
};

static struct {
	int	 resolved;	/* uid, gid, name are the children's user's */
	int	 sep;		/* the children run as it, by the helper */
	int	 root;		/* this start drops from root */
	uid_t	 uid;
	gid_t	 gid;
	char	 name[256];
	uid_t	 muid;		/* node.user's */
	gid_t	 mgid;
	char	 mname[256];
	struct kid *kids;	/* the helper's */
	size_t	 nkids, capkids;
} pc;

void
privsep_child_init(const char *child_user, int root, uid_t uid, gid_t gid,
    const char *name)
{
	struct passwd *pw;
	const char *user = child_user != NULL ? child_user :
	    PRIVSEP_DEFAULT_CHILD_USER;

	pc.root = root;
	pc.muid = uid;
	pc.mgid = gid;
	snprintf(pc.mname, sizeof(pc.mname), "%s", name);
	/* Without root there is nobody to become: said later. */
	if (!root && (pw = getpwnam(user)) == NULL)
		return;
	if (root)
		pw = privsep_getpw("node.child_user", user);
	if (root && pw->pw_uid == 0)
		privsep_refuse("node.child_user %s is root: the "
		    "children would have every right the master gave up",
		    user);
	if (root && pw->pw_uid != uid && pw->pw_gid == gid)
		privsep_refuse("node.child_user %s has node.user %s's "
		    "group (gid %u): the children could read what that group "
		    "can (the config); give it a group of its own", user,
		    name, (unsigned int)gid);
	pc.resolved = 1;
	pc.uid = pw->pw_uid;
	pc.gid = pw->pw_gid;
	snprintf(pc.name, sizeof(pc.name), "%s", pw->pw_name);
}

void
privsep_child_helper(int have)
{
	pc.sep = have && pc.resolved && pc.uid != pc.muid;
	if (pc.sep) {
		log_info("privsep: the children run as %s (uid %u, gid %u)",
		    pc.name, (unsigned int)pc.uid, (unsigned int)pc.gid);
		return;
	}
	if (pc.muid == 0)
		return;		/* node.user root: privsep_init said so */
	if (pc.resolved && pc.uid == pc.muid)
		log_warnx("privsep: node.child_user is node.user %s: the "
		    "children can signal the master and read its files (the "
		    "config, the store)", pc.mname);
	else if (pc.root)
		log_warnx("privsep: no helper: the children run as %s, the "
		    "master's user, and can signal it and read its files (the "
		    "config, the store)", pc.mname);
	else
		log_warnx("privsep: started as %s, not as root: the children "
		    "run as %s too (node.child_user needs a start as root, or "
		    "with CAP_SETUID, CAP_SETGID and CAP_KILL), and can signal "
		    "the master and read its files (the config, the store)",
		    pc.mname, pc.mname);
}

const char *
privsep_child_user(void)
{
	return pc.sep ? pc.name : pc.mname;
}

int
privsep_child_separate(void)
{
	return pc.sep;
}

int
privsep_child_group(gid_t *gid)
{
	if (!pc.sep)
		return 0;
	*gid = pc.gid;
	return 1;
}

/* nftw's callback: an entry of an older claim store to the children. */
static int
privsep_child_chown1(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	if (st->st_uid == pc.muid && lchown(path, pc.uid, pc.gid) == -1)
		log_warn("privsep: chown %s to %s", path, pc.name);
	return 0;
}

/* dir's group the children's, with mode's group bits (and the setgid bit
 * on a directory: what is made in it is the group's too). */
static void
privsep_child_chgrp(const char *dir, const struct stat *st, mode_t gbits,
    const char *what)
{
	if (st->st_gid == pc.gid && (st->st_mode & 02070) == gbits)
		return;
	if (chown(dir, (uid_t)-1, pc.gid) == -1 ||
	    chmod(dir, (st->st_mode & 0700) | gbits) == -1)
		log_warn("privsep: %s %s: group %s, mode %04o", what, dir,
		    pc.name, (unsigned int)((st->st_mode & 0700) | gbits));
}

void
privsep_child_dirs(const char *data_dir, const char *claims)
{
	struct stat st;
	size_t dlen;
	char buf[4096], *p;

	if (!pc.sep || claims == NULL || claims[0] != '/')
		return;
	dlen = strlen(data_dir);
	while (dlen > 1 && data_dir[dlen - 1] == '/')
		dlen--;
	/* Under node.data_dir: the children may pass through it, and list
	 * or read nothing there but their own directory. */
	if (strncmp(claims, data_dir, dlen) == 0 && claims[dlen] == '/' &&
	    stat(data_dir, &st) == 0)
		privsep_child_chgrp(data_dir, &st, 0010, "node.data_dir");
	if (snprintf(buf, sizeof(buf), "%s", claims) >= (int)sizeof(buf))
		return;
	/* The directories above, made as every user may pass. */
	for (p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		(void)mkdir(buf, 0755);
		*p = '/';
	}
	if (mkdir(buf, 0700) == -1 && errno != EEXIST) {
		log_warn("privsep: claim_check.store.root %s", buf);
		return;
	}
	if (stat(buf, &st) == -1) {
		log_warn("privsep: claim_check.store.root %s", buf);
		return;
	}
	privsep_child_chgrp(buf, &st, 02070, "claim_check.store.root");
	/* What an older ankusad wrote as node.user, 0600: the children's
	 * now (a start as root can give it; a reload cannot, and says so
	 * when a child fails to read it). */
	if (geteuid() == 0 && st.st_uid == pc.muid) {
		log_info("privsep: claim_check.store.root %s: its files are "
		    "given to %s", buf, pc.name);
		(void)nftw(buf, privsep_child_chown1, 64, FTW_PHYS);
	}
}

/* ------------------------------------------------------------ the master */

/* The strings of a spawn request, each with its NUL, then an empty one. */
static int
privsep_put_strs(unsigned char *buf, size_t *off, size_t cap,
    char *const v[])
{
	size_t n;
	int i;

	for (i = 0; v != NULL && v[i] != NULL; i++) {
		n = strlen(v[i]) + 1;
		if (n == 1 || *off + n >= cap)
			return -1;
		memcpy(buf + *off, v[i], n);
		*off += n;
	}
	if (*off + 1 > cap)
		return -1;
	buf[(*off)++] = '\0';
	return 0;
}

pid_t
privsep_spawn(const char *path, char *const argv[], char *const envp[],
    const int *fds, int nfds)
{
	static unsigned char req[PRIVSEP_REQ_MAX];
	char *const pathv[] = { (char *)path, NULL };
	unsigned char rep[PRIVSEP_REP_MAX];
	int32_t v;
	int pass[PROC_MAX_FDS], npass = 0, i;
	size_t off = 2;

	if (!pc.sep)
		return proc_spawn(path, argv, envp, fds, nfds);
	if (nfds >= PROC_MAX_FDS) {	/* one slot for the exec's pipe */
		errno = EINVAL;
		return -1;
	}
	req[0] = PRIVSEP_REQ_SPAWN;
	req[1] = 0;
	for (i = 0; i < nfds; i++)
		if (fds[i] != -1) {
			req[1] |= 1U << i;
			pass[npass++] = fds[i];
		}
	if (privsep_put_strs(req, &off, sizeof(req), pathv) == -1 ||
	    privsep_put_strs(req, &off, sizeof(req), argv) == -1 ||
	    privsep_put_strs(req, &off, sizeof(req), envp) == -1) {
		errno = E2BIG;
		return -1;
	}
	if (privsep_helper_call(req, off, pass, npass, rep, sizeof(rep)) !=
	    (ssize_t)sizeof(v)) {
		/* Without its helper the master can spawn no child: it ends,
		 * and its service manager starts it again. */
		if (errno == EPERM)
			fatalx("privsep: the helper is gone: no child can be "
			    "spawned as %s", pc.name);
		return -1;
	}
	memcpy(&v, rep, sizeof(v));
	if (v <= 0) {
		errno = v < 0 ? -v : EIO;
		return -1;
	}
	return (pid_t)v;
}

int
privsep_kill(pid_t pid, int sig)
{
	unsigned char req[1 + 2 * sizeof(int32_t)], rep[PRIVSEP_REP_MAX];
	int32_t p = pid, s = sig, v;

	if (!pc.sep)
		return kill(pid, sig);
	req[0] = PRIVSEP_REQ_KILL;
	memcpy(req + 1, &p, sizeof(p));
	memcpy(req + 1 + sizeof(p), &s, sizeof(s));
	if (privsep_helper_call(req, sizeof(req), NULL, 0, rep, sizeof(rep)) !=
	    (ssize_t)sizeof(v))
		return -1;
	memcpy(&v, rep, sizeof(v));
	if (v != 0) {
		errno = -v;
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ the helper */

/* The kids that are gone go from the record (their pidfd is readable
 * once they exit; one without a pidfd when its pid is free). */
static void
privsep_kids_gc(void)
{
	struct pollfd pfd;
	size_t i, j;

	for (i = j = 0; i < pc.nkids; i++) {
		pfd.fd = pc.kids[i].pidfd;
		pfd.events = POLLIN;
		if ((pfd.fd != -1 && poll(&pfd, 1, 0) == 1) ||
		    (pfd.fd == -1 && kill(pc.kids[i].pid, 0) == -1 &&
		    errno == ESRCH)) {
			if (pfd.fd != -1)
				close(pfd.fd);
			continue;
		}
		pc.kids[j++] = pc.kids[i];
	}
	pc.nkids = j;
}

static int
privsep_kids_add(pid_t pid, int pidfd)
{
	struct kid *nk;
	size_t n;

	if (pc.nkids == pc.capkids)
		privsep_kids_gc();
	if (pc.nkids == pc.capkids) {
		n = pc.capkids > 0 ? pc.capkids * 2 : 64;
		if ((nk = reallocarray(pc.kids, n, sizeof(*nk))) == NULL)
			return -1;
		pc.kids = nk;
		pc.capkids = n;
	}
	pc.kids[pc.nkids].pid = pid;
	pc.kids[pc.nkids].pidfd = pidfd;
	pc.nkids++;
	return 0;
}

/* The strings at *off up to an empty one, into v (at most max, then
 * NULL): their count, or -1 when the request does not hold them. */
static int
privsep_get_strs(const unsigned char *req, size_t len, size_t *off,
    char **v, int max)
{
	int n = 0;
	size_t l;

	for (;;) {
		if (*off >= len)
			return -1;
		l = strnlen((const char *)req + *off, len - *off);
		if (*off + l >= len)
			return -1;	/* no NUL before the end */
		if (l == 0) {
			(*off)++;
			break;
		}
		if (n == max)
			return -1;
		v[n++] = (char *)req + *off;
		*off += l + 1;
	}
	v[n] = NULL;
	return n;
}

/* Why the new process failed, to the helper (nobody to tell when the
 * write fails: the helper then records a child that exits at once). */
static void
privsep_kid_tell(int fd, int err)
{
	if (write(fd, &err, sizeof(err)) != (ssize_t)sizeof(err))
		return;
}

/* In the new process, as root still (or the user with PRIVSEP_CAPS):
 * become the children's user with no capability, then execute.  A
 * failure is told on errfd (descriptor nfds + 3 once the descriptors are
 * in place, close-on-exec: EOF says the exec went) and ends the process.
 */
static void
privsep_kid_exec(const char *path, char *const argv[], char *const envp[],
    int *fds, int nfds)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg, g = pc.gid;
	int err, errfd = 3 + nfds;

	proc_child_setup(fds, nfds + 1);
	if (fcntl(errfd, F_SETFD, FD_CLOEXEC) == -1)
		_exit(1);
	if (setgroups(1, &g) == -1 || setresgid(g, g, g) == -1 ||
	    setresuid(pc.uid, pc.uid, pc.uid) == -1 ||
	    getresuid(&ru, &eu, &su) == -1 || getresgid(&rg, &eg, &sg) == -1 ||
	    ru != pc.uid || eu != pc.uid || su != pc.uid || rg != g ||
	    eg != g || sg != g || privsep_caps_drop() == -1 ||
	    setuid(0) != -1) {
		err = errno != 0 ? errno : EPERM;
		privsep_kid_tell(errfd, err);
		_exit(1);
	}
	execve(path, argv, envp);
	privsep_kid_tell(errfd, errno);
	_exit(PROC_EXEC_FAILED);
}

static int32_t
privsep_serve_spawn(const unsigned char *req, size_t len, const int *fds,
    int nfds)
{
	char *pathv[2], *argv[PRIVSEP_ARGV_MAX + 1];
	static char *envp[PRIVSEP_ENV_MAX + 1];
	int all[PROC_MAX_FDS + 1], nall = 0, k = 0, i, pidfd = -1, ep[2];
	int err = 0;
	size_t off = 2;
	ssize_t n;
	long pid;

	if (len < 2 || privsep_get_strs(req, len, &off, pathv, 1) != 1 ||
	    privsep_get_strs(req, len, &off, argv, PRIVSEP_ARGV_MAX) < 1 ||
	    privsep_get_strs(req, len, &off, envp, PRIVSEP_ENV_MAX) < 0)
		return -EINVAL;
	for (i = 0; i < PROC_MAX_FDS - 1; i++) {
		all[i] = -1;
		if (req[1] & (1U << i)) {
			if (k == nfds)
				return -EINVAL;
			all[i] = fds[k++];
			nall = i + 1;
		}
	}
	if (k != nfds)
		return -EINVAL;
	/* Why an exec failed comes back on a pipe (privsep_kid_exec). */
	if (pipe2(ep, O_CLOEXEC) == -1)
		return -errno;
	all[nall] = ep[1];
	/* The master's child, not ours; its pidfd ours.  A kernel without
	 * CLONE_PIDFD (before 5.2) refuses the flag. */
	pid = syscall(SYS_clone, CLONE_PARENT | CLONE_PIDFD, NULL, &pidfd,
	    NULL, 0);
	if (pid == -1 && errno == EINVAL) {
		pidfd = -1;
		pid = syscall(SYS_clone, CLONE_PARENT, NULL, NULL, NULL, 0);
	}
	if (pid == 0)
		privsep_kid_exec(pathv[0], argv, envp, all, nall);
	if (pid == -1)
		err = errno;
	close(ep[1]);
	if (pid != -1) {
		while ((n = read(ep[0], &err, sizeof(err))) == -1 &&
		    errno == EINTR)
			;
		if (n != (ssize_t)sizeof(err))
			err = 0;
	}
	close(ep[0]);
	if (err != 0) {
		/* It is exiting: the master reaps a pid it does not know. */
		if (pidfd != -1)
			close(pidfd);
		return -err;
	}
	/* A pidfd of CLONE_PIDFD is close-on-exec already. */
	if (privsep_kids_add((pid_t)pid, pidfd) == -1) {
		/* Unrecorded, it could never be signalled: gone at once. */
		if (pidfd != -1) {
			syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
			close(pidfd);
		} else
			kill((pid_t)pid, SIGKILL);
		return -ENOMEM;
	}
	return (int32_t)pid;
}

static int32_t
privsep_serve_kill(const unsigned char *req, size_t len)
{
	int32_t pid, sig;
	size_t i;

	if (len != 1 + 2 * sizeof(int32_t))
		return -EINVAL;
	memcpy(&pid, req + 1, sizeof(pid));
	memcpy(&sig, req + 1 + sizeof(pid), sizeof(sig));
	if (sig != SIGKILL && sig != SIGTERM && sig != 0)
		return -EINVAL;
	for (i = 0; i < pc.nkids; i++) {
		if (pc.kids[i].pid != pid)
			continue;
		if (pc.kids[i].pidfd != -1) {
			if (syscall(SYS_pidfd_send_signal, pc.kids[i].pidfd,
			    sig, NULL, 0) == -1)
				return -errno;
		} else if (kill(pid, sig) == -1)
			return -errno;
		return 0;
	}
	return -ESRCH;
}

size_t
privsep_child_serve(const unsigned char *req, size_t len, const int *fds,
    int nfds, unsigned char *rep, size_t replen)
{
	int32_t v = -EINVAL;

	if (replen < sizeof(v))
		return 0;
	if (len >= 1 && req[0] == PRIVSEP_REQ_SPAWN && pc.resolved)
		v = privsep_serve_spawn(req, len, fds, nfds);
	else if (len >= 1 && req[0] == PRIVSEP_REQ_KILL)
		v = privsep_serve_kill(req, len);
	memcpy(rep, &v, sizeof(v));
	return sizeof(v);
}
