/* SPDX-License-Identifier: ISC */
/*
 * proc.c: spawning children, their hello, and passing bytes by
 * descriptor; see proc.h.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "log.h"
#include "msg.h"
#include "proc.h"

pid_t
proc_spawn(const char *path, char *const argv[], char *const envp[],
    const int *fds, int nfds)
{
	pid_t pid;

	if (nfds > PROC_MAX_FDS) {
		errno = EINVAL;
		return -1;
	}
	switch ((pid = fork())) {
	case -1:
		return -1;
	case 0:
		break;
	default:
		return pid;
	}
	proc_child_setup(fds, nfds);
	execve(path, argv, envp);
	_exit(PROC_EXEC_FAILED);
}

void
proc_child_setup(const int *fds, int nfds)
{
	int tmp[PROC_MAX_FDS], i, fd;
	sigset_t all;

	if (nfds > PROC_MAX_FDS)
		_exit(127);
	/* Signals back to default, descriptors into place.  SIGTERM
	 * and SIGINT are ignored, across the exec: sent to the whole process
	 * group (a terminal's ^C, kill -TERM -PGID, a stop that signals
	 * every process of the service) they are the master's to act on,
	 * which drains and retires its children; a child killed by them
	 * would drop the requests and attempts in its hands. */
	for (i = 1; i < NSIG; i++)
		signal(i, i == SIGTERM || i == SIGINT ? SIG_IGN : SIG_DFL);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	/* First lift every descriptor above the target range, so a dup2 into
	 * 3..3+nfds never clobbers one still to be moved. */
	for (i = 0; i < nfds; i++) {
		tmp[i] = -1;
		if (fds[i] == -1)
			continue;
		if ((tmp[i] = fcntl(fds[i], F_DUPFD, 3 + PROC_MAX_FDS)) == -1)
			_exit(127);
	}
	for (i = 0; i < nfds; i++) {
		if (tmp[i] == -1)
			continue;
		if (dup2(tmp[i], 3 + i) == -1)	/* dup2 clears CLOEXEC */
			_exit(127);
	}
	/* Every other descriptor goes, those above 1024 too (the master's
	 * channels to a large pool are there: supervisor.c). */
	if (close_range(3 + nfds, ~0U, 0) == -1) {
		long max = sysconf(_SC_OPEN_MAX);

		for (fd = 3 + nfds; fd < max; fd++)
			close(fd);
	}
}

int
proc_memfd(const char *name, const void *data, size_t len)
{
	const char *p = data;
	ssize_t n;
	int fd;

	if ((fd = memfd_create(name, MFD_CLOEXEC)) == -1)
		return -1;
	while (len > 0) {
		if ((n = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			close(fd);
			return -1;
		}
		p += n;
		len -= n;
	}
	return fd;
}

int
proc_add_body(struct msg *m, const char *name, const void *body,
    uint64_t len)
{
	int fd;

	msg_add_u64(m, len);
	if (len <= MSG_INLINE_MAX) {
		msg_add_data(m, body, len);
		return 0;
	}
	if ((fd = proc_memfd(name, body, len)) == -1)
		return -1;
	msg_set_fd(m, fd);
	return 0;
}

char *
proc_read_fd(int fd, size_t len)
{
	char *buf;
	size_t off = 0;
	ssize_t n;

	if ((buf = malloc(len + 1)) == NULL)
		return NULL;
	while (off < len) {
		n = pread(fd, buf + off, len - off, off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			errno = n == 0 ? EPIPE : errno;
			return NULL;
		}
		off += n;
	}
	buf[len] = '\0';
	return buf;
}

char *
proc_read_all(int fd, size_t *lenp)
{
	struct stat st;

	if (fstat(fd, &st) == -1)
		return NULL;
	*lenp = st.st_size;
	return proc_read_fd(fd, st.st_size);
}

int
proc_child_start(int argc, char *argv[], const char *progname,
    const char *kind, uint32_t *gen, uint32_t *idx, int *verbose)
{
	char prefix[64], *end;
	unsigned long v;
	int ch, dflag = 0, gflag = 0, iflag = 0, jflag = 0;

	*verbose = 0;
	while ((ch = getopt(argc, argv, "dg:i:jv")) != -1) {
		switch (ch) {
		case 'd':
			dflag = 1;
			break;
		case 'j':
			jflag = 1;
			break;
		case 'g':
		case 'i':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno != 0 || *optarg == '\0' || *end != '\0' ||
			    v > UINT32_MAX)
				return -1;
			if (ch == 'g') {
				*gen = v;
				gflag = 1;
			} else {
				*idx = v;
				iflag = 1;
			}
			break;
		case 'v':
			*verbose = 1;
			break;
		default:
			return -1;
		}
	}
	if (optind != argc || !gflag || !iflag)
		return -1;
	log_init(progname, dflag);
	if (jflag)
		log_setformat(LOG_FORMAT_JSON);
	snprintf(prefix, sizeof(prefix), "%s %" PRIu32 ".%" PRIu32, kind, *gen,
	    *idx);
	log_setprefix(prefix);
	if (*verbose)
		log_setlevel(LOG_LEVEL_DEBUG);
	return 0;
}

void
proc_child_hello(struct chan *master, const char *kind, uint32_t gen,
    uint32_t sandbox)
{
	struct msg m;

	msg_init(&m, MSG_CHILD_HELLO, 0);
	msg_add_u32(&m, MSG_PROTO_VERSION);
	msg_add_str(&m, kind);
	msg_add_u32(&m, gen);
	msg_add_u32(&m, (uint32_t)getpid());
	msg_add_u32(&m, sandbox);
	if (chan_send(master, &m) == -1)
		fatalx("cannot greet the master");
	msg_free(&m);
}

int
proc_hello_decode(struct msg *m, uint32_t *proto, const char **kind,
    uint32_t *gen, uint32_t *pid, uint32_t *sandbox)
{
	*sandbox = 0;
	if (msg_get_u32(m, proto) == -1)
		return -1;
	if (*proto != MSG_PROTO_VERSION)
		return 0;	/* the caller says the versions differ */
	if (msg_get_str(m, kind) == -1 || msg_get_u32(m, gen) == -1 ||
	    msg_get_u32(m, pid) == -1 || msg_get_u32(m, sandbox) == -1)
		return -1;
	return msg_end(m);
}

void
proc_child_orphaned(int err)
{
	if (err == 0 || err == ECONNRESET || err == EPIPE) {
		log_info("master closed the channel, exiting");
		exit(0);
	}
	errno = err;
	log_warn("master channel");
	exit(1);
}

struct conf *
proc_child_conf(enum conf_role role, int verbose)
{
	struct conf_errors errs = { NULL, 0 };
	enum log_level lvl;
	struct conf *conf;
	char *text;
	size_t len;
	int i;

	/* The part of the master's text this child's role needs
	 * (conf_role.c). */
	if ((text = proc_read_all(PROC_FD_CONF, &len)) == NULL) {
		log_warn("config: cannot read fd %d", PROC_FD_CONF);
		exit(78);
	}
	if ((conf = conf_parse_role(text, len, role, &errs)) == NULL) {
		for (i = 0; i < errs.n; i++)
			log_warnx("%s", errs.msgs[i]);
		if (errs.n == 0)
			log_warnx("config: refused without a reason");
		conf_errors_free(&errs);
		exit(78);
	}
	free(text);
	close(PROC_FD_CONF);
	if (!verbose && conf->log_level != NULL &&
	    log_level_parse(conf->log_level, &lvl) == 0)
		log_setlevel(lvl);
	return conf;
}
