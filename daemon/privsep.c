/* SPDX-License-Identifier: ISC */
/*
 * privsep.c: the master's change of user (node.user; SECURITY in
 * ankusad(8)).
 *
 * Started as root, ankusad resolves node.user (ankusa when unset) before it
 * opens anything, opens what needs root (its listeners, the control
 * socket, the data directory, created owned by the user when it is
 * missing), opens the store under the user's effective ids so that every
 * file the store creates belongs to the user, and then drops to the user
 * for good: its groups (initgroups), then setresgid and setresuid, each
 * checked, and a check that root cannot be regained.  Its children run as
 * another user, node.child_user (privsep_child.c), which the master, no
 * longer root, cannot become.  One process stays root, forked just before
 * the drop: the helper (privsep_helper), which serves the master's
 * requests on a socketpair and nothing else: spawning a child as
 * node.child_user, signalling one of those children, and at a drain
 * attaching the ingest listener's socket filter, which a kernel may refuse
 * an unprivileged process.  When ankusad executes itself again (reexec.c), the
 * helper stays, and the new image, already the user, takes its end of the
 * socketpair back (privsep_reexec_keep, privsep_helper).  Started as
 * another user, ankusad stays that user: node.user must then be unset or
 * name it.
 *
 * Fatal: an unknown user, a node.user that a non-root start cannot
 * become, and a data directory owned by another user (exit 78, the config
 * is wrong); a failed change of ids (exit 1).
 *
 * The helper's requests are datagrams of a SOCK_SEQPACKET socketpair: a
 * byte naming the request, its bytes, the descriptors it passes; each is
 * answered before the next is read (privsep_helper_call).
 */
#include "config.h"

#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <linux/capability.h>
#include <poll.h>
#include <signal.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdpass.h"
#include "log.h"
#include "privsep.h"
#include "privsep_int.h"
#include "proc.h"
#include "reexec.h"

#define PRIVSEP_HELPER_MS	10000	/* the helper's answer, at most: a
					 * spawn waits for the exec */
#define PRIVSEP_PARENT_MS	1000	/* the helper looks for its parent */
#define PRIVSEP_REQ_FILTER	'F'	/* act(fd) on the fd passed */

static struct {
	int	 root;		/* started as root: we change user */
	int	 was_root;	/* executed again by an image that was */
	int	 caps;		/* started as the user with PRIVSEP_CAPS */
	int	 helper;	/* our end of the helper's socketpair, or -1 */
	uid_t	 uid;
	gid_t	 gid;
	char	 name[256];
} ps;

static int	privsep_helper_inherited(void);

void
privsep_refuse(const char *fmt, ...)
{
	va_list ap;
	char buf[1024];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_warnx("%s", buf);
	exit(PRIVSEP_EX_CONFIG);
}

/* A user's name for a message: its name, or its number. */
static const char *
privsep_uname(uid_t uid, char *buf, size_t len)
{
	struct passwd *pw;

	if ((pw = getpwuid(uid)) != NULL)
		snprintf(buf, len, "%s", pw->pw_name);
	else
		snprintf(buf, len, "uid %u", (unsigned int)uid);
	return buf;
}

/* One capability set of this process (capget(2), version 3). */
static int
privsep_capget(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h;

	memset(&h, 0, sizeof(h));
	h.version = _LINUX_CAPABILITY_VERSION_3;
	memset(d, 0, 2 * sizeof(*d));
	return syscall(SYS_capget, &h, d) == -1 ? -1 : 0;
}

int
privsep_caps_have(void)
{
	struct __user_cap_data_struct d[2];

	if (privsep_capget(d) == -1)
		return 0;
	return (d[0].effective & PRIVSEP_CAPS) == PRIVSEP_CAPS;
}

int
privsep_caps_drop(void)
{
	struct __user_cap_header_struct h;
	struct __user_cap_data_struct d[2];

	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	memset(&h, 0, sizeof(h));
	h.version = _LINUX_CAPABILITY_VERSION_3;
	memset(d, 0, sizeof(d));
	return syscall(SYS_capset, &h, d) == -1 ? -1 : 0;
}

struct passwd *
privsep_getpw(const char *key, const char *user)
{
	struct passwd *pw;

	errno = 0;
	if ((pw = getpwnam(user)) != NULL)
		return pw;
	if (errno != 0 && errno != ENOENT && errno != ESRCH)
		privsep_refuse("%s %s: cannot look the user up: %s", key, user,
		    strerror(errno));
	privsep_refuse("%s %s: no such user (create it, e.g. useradd "
	    "--system --no-create-home --shell /usr/sbin/nologin %s)", key,
	    user, user);
}

void
privsep_init(const char *user, const char *child_user)
{
	struct passwd *pw;

	ps.root = geteuid() == 0;
	ps.caps = !ps.root && privsep_caps_have();
	ps.helper = -1;
	/* Executed again by itself (already the user): the helper forked by
	 * the first image is still there, and says that image was root. */
	if (!ps.root && reexec_inherited()) {
		ps.helper = privsep_helper_inherited();
		ps.was_root = ps.helper != -1;
	}
	if (!ps.root) {
		ps.uid = geteuid();
		ps.gid = getegid();
		privsep_uname(ps.uid, ps.name, sizeof(ps.name));
		privsep_child_init(child_user, ps.caps, ps.uid, ps.gid,
		    ps.name);
		if (user == NULL || strcmp(user, ps.name) == 0)
			return;
		if ((pw = getpwnam(user)) != NULL && pw->pw_uid == ps.uid)
			return;
		privsep_refuse("node.user %s: ankusad was started as %s, not "
		    "as root, so it cannot become %s; leave node.user unset "
		    "or set it to %s", user, ps.name, user, ps.name);
	}
	if (user == NULL)
		user = PRIVSEP_DEFAULT_USER;
	pw = privsep_getpw("node.user", user);
	ps.uid = pw->pw_uid;
	ps.gid = pw->pw_gid;
	snprintf(ps.name, sizeof(ps.name), "%s", pw->pw_name);
	if (ps.uid == 0)
		log_warnx("node.user %s is root: every process keeps root's "
		    "rights (no privilege separation)", user);
	privsep_child_init(child_user, ps.uid != 0, ps.uid, ps.gid, ps.name);
}

const char *
privsep_user(void)
{
	return ps.name;
}

void
privsep_data_dir(const char *dir)
{
	struct stat st;
	char owner[256];

	if (mkdir(dir, 0700) == 0) {
		/* Created by root: it belongs to the user. */
		if (ps.root && chown(dir, ps.uid, ps.gid) == -1)
			fatal("node.data_dir %s: chown to %s", dir, ps.name);
	} else if (errno != EEXIST)
		fatal("node.data_dir %s: mkdir", dir);
	if (stat(dir, &st) == -1)
		fatal("node.data_dir %s", dir);
	if (!S_ISDIR(st.st_mode))
		privsep_refuse("node.data_dir %s is not a directory", dir);
	if (st.st_uid != ps.uid)
		privsep_refuse("node.data_dir %s is owned by %s, not by "
		    "node.user %s: chown -R %s %s, or set node.user", dir,
		    privsep_uname(st.st_uid, owner, sizeof(owner)), ps.name,
		    ps.name, dir);
}

void
privsep_as_user(void)
{
	if (!ps.root)
		return;
	if (setegid(ps.gid) == -1 || seteuid(ps.uid) == -1)
		fatal("privsep: cannot take the ids of %s", ps.name);
}

void
privsep_as_root(void)
{
	if (!ps.root)
		return;
	if (seteuid(0) == -1 || setegid(0) == -1)
		fatal("privsep: cannot take root's ids back");
}

uid_t
privsep_uid(void)
{
	return ps.uid;
}

int
privsep_root(void)
{
	return ps.root || ps.was_root;
}

/*
 * The one process that stays root: forked before the drop, it keeps the
 * ingest listener and its socketpair to the master and nothing else, waits
 * for one byte, does act(fd), answers with errno (0: done) and exits.  It
 * ignores the signals of a stop sent to the process group, and goes when
 * the master does: at EOF on the socketpair, whose other end only the
 * master holds (close-on-exec in its children), or, should another process
 * hold that end too, within PRIVSEP_PARENT_MS of getppid() naming another
 * process.  No parent-death signal (PR_SET_PDEATHSIG): the kernel sends it
 * as the dying parent, under kill(2)'s permission check, and a master that
 * is node.user may not signal its root helper, so it would never come.
 *
 * An exec of the master by itself (reexec.c) keeps the pid, and the
 * master's end of the socketpair is handed down (privsep_reexec_keep):
 * the helper sees neither EOF nor a new parent, and is the child of the
 * new image, which takes that end back (privsep_helper).
 */
/*
 * The helper is forked, not exec'd: the bytes of the environment the
 * master started with are still in its memory (and in /proc/PID/environ),
 * those notify.c unset included.  It needs none of them: zero them, where
 * proc(5) says they are (env_start and env_end, fields 50 and 51 of
 * /proc/self/stat).
 */
static void
privsep_helper_wipe_env(void)
{
	char buf[4096], *p;
	unsigned long start = 0, end = 0;
	ssize_t n;
	int fd, field;

	if ((fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC)) == -1)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	/* Field 2, the command, may hold spaces: count from its ')'. */
	if ((p = strrchr(buf, ')')) == NULL)
		return;
	for (field = 2; p != NULL && field < 51; field++) {
		p = strchr(p + 1, ' ');
		if (p != NULL && field + 1 == 50)
			start = strtoul(p + 1, NULL, 10);
		else if (p != NULL && field + 1 == 51)
			end = strtoul(p + 1, NULL, 10);
	}
	if (start != 0 && end > start)
		memset((void *)start, 0, end - start);
}

/* The helper's wait for its next request: 1 when one is there, 0 when the
 * master is gone (EOF comes through recv; a new parent here). */
static int
privsep_wait(int sock, pid_t parent)
{
	struct pollfd pfd;
	int rc;

	pfd.fd = sock;
	pfd.events = POLLIN;
	do {
		if (getppid() != parent)
			return 0;
		rc = poll(&pfd, 1, PRIVSEP_PARENT_MS);
	} while (rc == 0 || (rc == -1 && errno == EINTR));
	return rc == 1;
}

/*
 * The helper holds nothing but its end of the socketpair: a descriptor
 * comes with a request and is closed when it is served, so a helper never
 * keeps the ingest port open after the master is gone.
 */
void
privsep_helper(int (*act)(int))
{
	unsigned char req[PRIVSEP_REQ_MAX], rep[PRIVSEP_REP_MAX];
	struct rlimit rl;
	pid_t parent;
	ssize_t n;
	size_t rlen;
	int sv[2], i, err, fds[PROC_MAX_FDS], nfds;

	/* Executed again by itself: the helper was taken back at init. */
	if (!ps.root && reexec_inherited()) {
		privsep_child_helper(ps.helper != -1);
		return;
	}
	if ((!ps.root && !ps.caps) || ps.uid == 0) {
		privsep_child_helper(0);
		return;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1)
		fatal("privsep: socketpair");
	parent = getpid();
	switch (fork()) {
	case -1:
		fatal("privsep: fork");
	case 0:
		break;
	default:
		close(sv[1]);
		ps.helper = sv[0];
		privsep_child_helper(1);
		return;
	}
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	privsep_helper_wipe_env();
	for (i = 3; i < 1024; i++)
		if (i != sv[1])
			close(i);
	/* A descriptor of its own for each child it spawned (its pidfd). */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	while (privsep_wait(sv[1], parent)) {
		if ((n = fdpass_recv(sv[1], req, sizeof(req), fds,
		    &nfds)) == 0)
			break;
		if (n == -1 && errno == EMSGSIZE) {
			/* Refused whole, and said so: the master waits. */
			err = -EMSGSIZE;
			memcpy(rep, &err, sizeof(err));
			if (fdpass_send(sv[1], rep, sizeof(err), NULL, 0) == -1)
				break;
			continue;
		}
		if (n == -1)
			break;
		rlen = 0;
		if (req[0] == PRIVSEP_REQ_FILTER) {
			err = nfds == 1 && act(fds[0]) == 0 ? 0 :
			    (nfds != 1 ? EINVAL : errno);
			rep[0] = err > 0 && err < 256 ? err :
			    (err != 0 ? EIO : 0);
			rlen = 1;
		} else
			rlen = privsep_child_serve(req, (size_t)n, fds, nfds,
			    rep, sizeof(rep));
		for (i = 0; i < nfds; i++)
			close(fds[i]);
		/* A parent gone before the answer has nobody to tell. */
		if (fdpass_send(sv[1], rep, rlen, NULL, 0) == -1)
			break;
	}
	_exit(0);
}

/* The master's end of the socketpair handed down by the image before
 * (privsep_reexec_keep): a stream socket of AF_UNIX, or -1. */
static int
privsep_helper_inherited(void)
{
	socklen_t dlen, tlen;
	int fd, domain, type;

	if ((fd = reexec_take("privsep")) == -1)
		return -1;
	dlen = sizeof(domain);
	tlen = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &dlen) == -1 ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) == -1 ||
	    domain != AF_UNIX || type != SOCK_SEQPACKET) {
		log_warnx("privsep: descriptor %d handed down as the helper's "
		    "is not its socketpair: no helper", fd);
		close(fd);
		return -1;
	}
	log_debug("privsep: the helper of the image before is kept");
	return fd;
}

void
privsep_reexec_keep(void)
{
	reexec_keep("privsep", ps.helper);
}

/*
 * One request to the helper and its answer, in at most PRIVSEP_HELPER_MS:
 * the answer's length, or -1 with errno (EPERM: no helper).  A helper that
 * does not answer in time is given up (its end closed): it is stuck, or
 * gone.
 */
ssize_t
privsep_helper_call(const void *req, size_t len, const int *fds, int nfds,
    void *rep, size_t replen)
{
	struct pollfd pfd;
	ssize_t n;
	int rfds[PROC_MAX_FDS], rn;

	if (ps.helper == -1) {
		errno = EPERM;
		return -1;
	}
	pfd.fd = ps.helper;
	pfd.events = POLLIN;
	errno = 0;
	if (fdpass_send(ps.helper, req, len, fds, nfds) == 0) {
		while ((n = poll(&pfd, 1, PRIVSEP_HELPER_MS)) == -1 &&
		    errno == EINTR)
			;
		if (n == 1 && (n = fdpass_recv(ps.helper, rep, replen, rfds,
		    &rn)) > 0) {
			while (rn > 0)
				close(rfds[--rn]);
			return n;
		}
		if (n == 0 && errno == 0)
			errno = ETIMEDOUT;
	}
	if (errno == 0)
		errno = EPIPE;
	log_warn("privsep: the helper does not answer; it is given up");
	close(ps.helper);
	ps.helper = -1;
	return -1;
}

int
privsep_helper_act(int fd)
{
	unsigned char req = PRIVSEP_REQ_FILTER, b;

	if (privsep_helper_call(&req, 1, &fd, 1, &b, 1) != 1)
		return -1;
	errno = b;
	return b == 0 ? 0 : -1;
}

/* The children's group among ours (privsep_child.c): the claim store's
 * root is made and given to it as node.user. */
static void
privsep_add_group(void)
{
	gid_t g, *gl;
	int n, i;

	if (!privsep_child_group(&g))
		return;
	if ((n = getgroups(0, NULL)) == -1 ||
	    (gl = calloc(n + 1, sizeof(*gl))) == NULL)
		fatal("privsep: getgroups");
	if ((n = getgroups(n, gl)) == -1)
		fatal("privsep: getgroups");
	for (i = 0; i < n && gl[i] != g; i++)
		;
	if (i == n) {
		gl[n++] = g;
		if (setgroups(n, gl) == -1)
			fatal("privsep: setgroups");
	}
	free(gl);
}

void
privsep_nodump(void)
{
#ifndef ANKUSA_SANITIZERS
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		fatal("privsep: PR_SET_DUMPABLE");
#endif
}

void
privsep_drop(void)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;

	if (ps.caps) {
		/* The children's group, then no capability left. */
		privsep_add_group();
		if (privsep_caps_drop() == -1)
			fatal("privsep: cannot drop the capabilities");
		if (privsep_caps_have() || setuid(0) != -1 || seteuid(0) != -1)
			fatalx("privsep: capabilities left after the drop");
		log_info("privsep: running as %s (uid %u, gid %u), its "
		    "capabilities dropped", ps.name, (unsigned int)ps.uid,
		    (unsigned int)ps.gid);
		return;
	}
	if (!ps.root)
		return;
	if (initgroups(ps.name, ps.gid) == -1)
		fatal("privsep: initgroups %s", ps.name);
	privsep_add_group();
	if (setresgid(ps.gid, ps.gid, ps.gid) == -1)
		fatal("privsep: setresgid %u", (unsigned int)ps.gid);
	if (setresuid(ps.uid, ps.uid, ps.uid) == -1)
		fatal("privsep: setresuid %u", (unsigned int)ps.uid);
	if (getresuid(&ru, &eu, &su) == -1 || getresgid(&rg, &eg, &sg) == -1 ||
	    ru != ps.uid || eu != ps.uid || su != ps.uid || rg != ps.gid ||
	    eg != ps.gid || sg != ps.gid)
		fatalx("privsep: the ids did not change to %s", ps.name);
	if (ps.uid != 0 && (setuid(0) != -1 || seteuid(0) != -1))
		fatalx("privsep: root could be regained after the drop");
	log_info("privsep: running as %s (uid %u, gid %u)", ps.name,
	    (unsigned int)ps.uid, (unsigned int)ps.gid);
}
