/* SPDX-License-Identifier: ISC */
/*
 * reexec.h: ankusad executes itself again in place, keeping its listening
 * sockets (reexec.c).  A site of a replication group does so when its role
 * changes (repl.c): everything the master holds in memory comes from the
 * store as it was when it took its role.
 */
#ifndef ANKUSA_REEXEC_H
#define ANKUSA_REEXEC_H

/* At the start, before anything is opened: keep argv for the exec, and
 * note whether this process is such an exec (reexec_inherited). */
void	reexec_init(int argc, char **argv);
/* This process was executed by reexec_now: no fork into the background,
 * and listeners come from reexec_take. */
int	reexec_inherited(void);
/* The descriptor handed down under name, or -1; each is taken once.
 * The names:
 *	"http", "claim_check", "admin"	the listeners (ankusad.c)
 *	"control"			the control socket (admin_control.c)
 *	"notify"			the socket to NOTIFY_SOCKET (notify.c)
 *	"privsep"			the root helper's socketpair end: the
 *					helper outlives the exec (privsep.c)
 *	"tokens"			the digests of the token lists' files
 *					(common/conf_tokens.c)
 */
int	reexec_take(const char *name);
/* Hand fd down under name at the exec (at most 8). */
void	reexec_keep(const char *name, int fd);
/* Execute ankusad again with the same arguments; returns only if the
 * exec failed (logged). */
void	reexec_now(const char *why);

#endif
