/* SPDX-License-Identifier: ISC */
/*
 * reexec.c: see reexec.h.
 *
 * The descriptors go down in ANKUSA_INHERIT_FDS ("http=3,admin=5,...").
 * The exec'd process is the same pid, already node.user (privsep.c: a
 * start as a non-root user runs as that user), in the foreground.  Its
 * children before are gone (killed by the caller) but one: the root
 * helper (privsep.c), which outlives the exec and is taken back.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "reexec.h"

#define REEXEC_ENV	"ANKUSA_INHERIT_FDS"
#define REEXEC_MAX	8

static char	**saved_argv;
static int	 inherited;
static struct {
	char	name[16];
	int	fd;
} fds[REEXEC_MAX];
static int	 nfds;

void
reexec_init(int argc, char **argv)
{
	const char *v;
	char buf[256], *tok, *save, *eq;
	long fd;

	(void)argc;
	saved_argv = argv;
	if ((v = getenv(REEXEC_ENV)) == NULL)
		return;
	inherited = 1;
	snprintf(buf, sizeof(buf), "%s", v);
	unsetenv(REEXEC_ENV);
	for (tok = strtok_r(buf, ",", &save); tok != NULL && nfds < REEXEC_MAX;
	    tok = strtok_r(NULL, ",", &save)) {
		if ((eq = strchr(tok, '=')) == NULL)
			continue;
		*eq = '\0';
		errno = 0;
		fd = strtol(eq + 1, NULL, 10);
		if (errno != 0 || fd < 3 || fd > 65535 ||
		    fcntl((int)fd, F_GETFD) == -1)
			continue;
		(void)fcntl((int)fd, F_SETFD, FD_CLOEXEC);
		snprintf(fds[nfds].name, sizeof(fds[nfds].name), "%s", tok);
		fds[nfds++].fd = (int)fd;
	}
}

int
reexec_inherited(void)
{
	return inherited;
}

int
reexec_take(const char *name)
{
	int i, fd;

	for (i = 0; i < nfds; i++) {
		if (fds[i].fd != -1 && strcmp(fds[i].name, name) == 0) {
			fd = fds[i].fd;
			fds[i].fd = -1;
			return fd;
		}
	}
	return -1;
}

void
reexec_keep(const char *name, int fd)
{
	int i;

	if (fd < 0)
		return;
	for (i = 0; i < nfds; i++)
		if (strcmp(fds[i].name, name) == 0)
			break;
	if (i == nfds) {
		if (nfds == REEXEC_MAX)
			return;
		nfds++;
	}
	snprintf(fds[i].name, sizeof(fds[i].name), "%s", name);
	fds[i].fd = fd;
}

void
reexec_now(const char *why)
{
	char buf[256];
	size_t off = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < nfds; i++) {
		if (fds[i].fd == -1)
			continue;
		/* Kept open across the exec. */
		(void)fcntl(fds[i].fd, F_SETFD, 0);
		off += snprintf(buf + off, sizeof(buf) - off, "%s%s=%d",
		    off > 0 ? "," : "", fds[i].name, fds[i].fd);
		if (off >= sizeof(buf))
			break;
	}
	setenv(REEXEC_ENV, buf, 1);
	log_info("executing ankusad again: %s", why);
	execv("/proc/self/exe", saved_argv);
	log_warn("exec /proc/self/exe");
	unsetenv(REEXEC_ENV);
}
