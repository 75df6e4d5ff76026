/* SPDX-License-Identifier: ISC */
/*
 * sandbox.h: a child's rlimits, no_new_privs, Landlock ruleset and seccomp
 * filter, one set per kind of child; see sandbox.c.
 */
#ifndef ANKUSA_SANDBOX_H
#define ANKUSA_SANDBOX_H

enum sandbox_kind {
	SANDBOX_EDGE,		/* ankusa-edge: no files, no connecting out */
	SANDBOX_DELIVER,	/* ankusa-deliver: connects out, CA files,
				 * the local claim store read and written */
	SANDBOX_GATEWAY,	/* ankusa-gateway: the claim store read */
};

/* Confine the calling child for good: rlimits, the warm-ups, no_new_privs,
 * Landlock (rwdir: the local claim store's root, made when missing, or
 * NULL), the seccomp filter of its kind.  A failure is fatal. */
void	sandbox_enter(enum sandbox_kind, const char *rwdir);
/* Load only the seccomp filter of a kind (no_new_privs must be set, or
 * the caller root): 0, or -1 (ENOSYS when built without libseccomp). */
int	sandbox_filter_load(enum sandbox_kind);

#endif
