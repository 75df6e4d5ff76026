/* SPDX-License-Identifier: ISC */
/*
 * sandbox_probe.c: a child that breaks its sandbox, for the end-to-end
 * tests (tests/e2e/test_privsep.py).
 *
 *   sandbox_probe KIND CALL
 *   ankusa-edge ...		(a link of that name: edge open)
 *
 * Enters the sandbox of KIND (edge, deliver, gateway) as a child of that
 * kind does (sandbox_enter: rlimits, no_new_privs, Landlock, the seccomp
 * filter), prints "entered" on stderr, then makes CALL: open (a file),
 * connect (to 127.0.0.1 port 9), fork, or none.  A call the sandbox
 * forbids ends the process with SIGSYS; one it allows exits 0 (EACCES from
 * Landlock exits 3).  Run by the master as its edge, it shows that a
 * child killed by its filter is reaped, logged and respawned.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "sandbox.h"

int
main(int argc, char *argv[])
{
	struct sockaddr_in sin;
	const char *base, *kind, *call;
	enum sandbox_kind k;
	int fd;

	base = strrchr(argv[0], '/') != NULL ? strrchr(argv[0], '/') + 1 :
	    argv[0];
	if (strcmp(base, "ankusa-edge") == 0) {
		kind = "edge";
		call = "open";
	} else if (argc == 3) {
		kind = argv[1];
		call = argv[2];
	} else {
		fprintf(stderr, "usage: sandbox_probe edge|deliver|gateway "
		    "open|connect|fork|none\n");
		return 2;
	}
	if (strcmp(kind, "edge") == 0)
		k = SANDBOX_EDGE;
	else if (strcmp(kind, "deliver") == 0)
		k = SANDBOX_DELIVER;
	else if (strcmp(kind, "gateway") == 0)
		k = SANDBOX_GATEWAY;
	else
		return 2;
	log_init("sandbox_probe", 1);
	sandbox_enter(k, NULL);
	fprintf(stderr, "sandbox_probe: %s entered, calling %s\n", kind, call);
	if (strcmp(call, "open") == 0) {
		if ((fd = open("/etc/passwd", O_RDONLY)) == -1)
			return errno == EACCES ? 3 : 4;
		close(fd);
	} else if (strcmp(call, "connect") == 0) {
		if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
			return 4;
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_port = htons(9);
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		(void)connect(fd, (struct sockaddr *)&sin, sizeof(sin));
		close(fd);
	} else if (strcmp(call, "fork") == 0) {
		if (syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0) == 0)
			_exit(0);
	} else if (strcmp(call, "none") != 0)
		return 2;
	return 0;
}
