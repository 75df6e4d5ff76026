/* SPDX-License-Identifier: ISC */
/*
 * unit_filter.c: run a program under a systemd unit's system call filter,
 * for the end-to-end tests (tests/e2e/test_boundary.py), where systemd is
 * not the service manager.
 *
 *   unit_filter LIST PROGRAM [ARG...]
 *
 * LIST holds system call names, one a line: what the unit's
 * SystemCallFilter= lines allow, its groups expanded (the test expands
 * them with systemd-analyze syscall-filter).  As systemd does with
 * SystemCallErrorNumber=EPERM and NoNewPrivileges=yes, it sets
 * no_new_privs and loads a filter that allows those calls and answers
 * every other EPERM (a name this libseccomp or architecture does not know
 * is skipped, as systemd skips it).  Then it says on stderr how
 * landlock_create_ruleset's version query went under the filter
 * ("unit_filter: landlock: ABI N" or "unit_filter: landlock: <strerror>")
 * and executes PROGRAM.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/syscall.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_SECCOMP
#include <seccomp.h>
#endif

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset	444
#endif

int
main(int argc, char *argv[])
{
#ifdef HAVE_SECCOMP
	scmp_filter_ctx ctx;
	char line[128];
	FILE *fp;
	long abi;
	size_t n;
	int nr, allowed = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: unit_filter LIST PROGRAM [ARG...]\n");
		return 2;
	}
	if ((fp = fopen(argv[1], "r")) == NULL) {
		perror(argv[1]);
		return 1;
	}
	if ((ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM))) == NULL)
		return 1;
	while (fgets(line, sizeof(line), fp) != NULL) {
		n = strcspn(line, " \t\r\n");
		line[n] = '\0';
		if (n == 0)
			continue;
		if ((nr = seccomp_syscall_resolve_name(line)) == __NR_SCMP_ERROR)
			continue;
		if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0) == 0)
			allowed++;
	}
	fclose(fp);
	if (allowed == 0) {
		fprintf(stderr, "unit_filter: %s allows nothing\n", argv[1]);
		return 1;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
	    seccomp_load(ctx) != 0) {
		perror("unit_filter: seccomp");
		return 1;
	}
	seccomp_release(ctx);
	abi = syscall(SYS_landlock_create_ruleset, NULL, 0, 1);
	if (abi >= 0)
		fprintf(stderr, "unit_filter: landlock: ABI %ld\n", abi);
	else
		fprintf(stderr, "unit_filter: landlock: %s\n", strerror(errno));
	execv(argv[2], argv + 2);
	perror(argv[2]);
	return 127;
#else
	fprintf(stderr, "unit_filter: built without libseccomp\n");
	return 1;
#endif
}
