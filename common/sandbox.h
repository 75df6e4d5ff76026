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
	SANDBOX_JQ,		/* an edge's jq supervisor: no files, no
				 * sockets, forks evaluators */
	SANDBOX_JQ_EVAL,	/* a jq evaluator: memory, its socket, its
				 * timer; stacked on SANDBOX_JQ, loaded by
				 * sandbox_filter_load alone */
};

/* What a child's sandbox is made of, one bit each (its hello carries
 * them: ankusa_sandbox{child,feature} and ankusactl status). */
#define SANDBOX_F_RLIMITS	0x01	/* no core, descriptors bounded */
#define SANDBOX_F_NO_NEW_PRIVS	0x02
#define SANDBOX_F_LANDLOCK	0x04
#define SANDBOX_F_SECCOMP	0x08
#define SANDBOX_F_NOT_DUMPABLE	0x10	/* no core, no ptrace by its user */
#define SANDBOX_F_COUNT		5
#define SANDBOX_F_ALL		((1U << SANDBOX_F_COUNT) - 1)

/* The name of feature bit (1 << i), e.g. "seccomp"; NULL past the last. */
const char *sandbox_feature_name(int i);

/* A listener the process shares with the others of its kind (an edge's
 * ingest listeners): once in the sandbox, setsockopt and shutdown on it
 * are refused (EPERM), so that one process cannot filter or shut it for
 * all.  Called before sandbox_enter; four at most. */
void	sandbox_protect_fd(int fd);

/* Confine the calling child for good: rlimits, the warm-ups, no_new_privs,
 * Landlock (rwdir: the local claim store's root, made when missing, or
 * NULL), the seccomp filter of its kind.  A failure to apply what the
 * process has is fatal; a feature the kernel or a service manager denies
 * it is a warning.  Returns the features in force (SANDBOX_F_*). */
unsigned int	sandbox_enter(enum sandbox_kind, const char *rwdir);
/* Load only the seccomp filter of a kind (no_new_privs must be set, or
 * the caller root): 0, or -1 (ENOSYS when built without libseccomp). */
int	sandbox_filter_load(enum sandbox_kind);

#endif
