/* SPDX-License-Identifier: ISC */
/*
 * boundary_probe.c: a child that tries to drive its master, for the
 * end-to-end tests (tests/e2e/test_boundary.py).
 *
 *   boundary_probe none|edge|deliver|gateway SOCKET CONFIG [child args]
 *
 * Run by the master in a child's place (a script in ANKUSA_LIBEXECDIR
 * executes it with these arguments), so that it has what a child has: the
 * children's user, its group, its descriptors and environment.  With a
 * KIND other than none it first enters that kind's sandbox as a child does
 * (sandbox_enter).  Then it tries, and says on stderr how each went, one
 * line each ("boundary_probe: CHECK: ok" or "boundary_probe: CHECK:
 * <strerror>"):
 *
 *   uid		its real and effective uids (the filters allow no
 *		getresuid: the test reads the saved one in /proc)
 *   connect		a connection to the control socket SOCKET
 *   read		a read of the config file CONFIG
 *   kill		kill(master, 0): may it signal the master?
 *   prlimit		prlimit(master, RLIMIT_NOFILE) read
 *   kill-self	kill(self, 0), which must stay allowed
 *
 * and exits 0.  The master is its parent (the children are the master's
 * even when its root helper spawns them).  Signal 0 and a read-only
 * prlimit change nothing when they are allowed.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "sandbox.h"

static void
say(const char *check, int rc)
{
	fprintf(stderr, "boundary_probe: %s: %s\n", check,
	    rc == 0 ? "ok" : strerror(errno));
}

static int
try_connect(const char *path)
{
	struct sockaddr_un sun;
	int fd, rc;

	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1)
		return -1;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	rc = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
	close(fd);
	return rc;
}

static int
try_read(const char *path)
{
	char buf[64];
	int fd;
	ssize_t n;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	return n < 0 ? -1 : 0;
}

int
main(int argc, char *argv[])
{
	struct rlimit rl;
	pid_t master = getppid();

	if (argc < 4) {
		fprintf(stderr, "usage: boundary_probe none|edge|deliver|"
		    "gateway SOCKET CONFIG\n");
		return 2;
	}
	log_init("boundary_probe", 1);
	if (strcmp(argv[1], "edge") == 0)
		sandbox_enter(SANDBOX_EDGE, NULL);
	else if (strcmp(argv[1], "deliver") == 0)
		sandbox_enter(SANDBOX_DELIVER, NULL);
	else if (strcmp(argv[1], "gateway") == 0)
		sandbox_enter(SANDBOX_GATEWAY, NULL);
	else if (strcmp(argv[1], "none") != 0)
		return 2;
	fprintf(stderr, "boundary_probe: %s: uid %u %u, master %d\n",
	    argv[1], (unsigned int)getuid(), (unsigned int)geteuid(),
	    (int)master);
	say("connect", try_connect(argv[2]));
	say("read", try_read(argv[3]));
	say("kill", kill(master, 0));
	say("prlimit", prlimit(master, RLIMIT_NOFILE, NULL, &rl));
	say("kill-self", kill(getpid(), 0));
	fprintf(stderr, "boundary_probe: done\n");
	return 0;
}
