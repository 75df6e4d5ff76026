/* SPDX-License-Identifier: ISC */
/*
 * signals.h: the master's SIGHUP, SIGTERM and SIGINT, caught from the
 * start of the process (signals.c).
 *
 * Blocked until the loop runs, then recorded by a handler (a flag, and a
 * byte on a pipe the loop watches), so that none is lost or kills the
 * process while the loop is not running yet (the store's open, a site of
 * a replication group waiting to join it) or is busy executing ankusad
 * again (reexec.h): signals_hold() keeps those that arrive from then on
 * pending across the exec, for the new process to take.
 */
#ifndef ANKUSA_SIGNALS_H
#define ANKUSA_SIGNALS_H

struct event_base;

/* The three blocked in this thread, and so in every thread made from
 * here on, and their handlers in place.  Fatal on failure. */
void		 signals_init(void);
/* "SIGTERM" or "SIGINT" once either has arrived (a stop is asked), taken
 * or still pending, else NULL.  From the thread of signals_init. */
const char	*signals_stop(void);
/* Unblocked in this thread: from now on each one is handed to cb in the
 * loop (cb(SIGHUP), ...), those pending first.  After the store is open,
 * whose threads keep them blocked.  Fatal on failure. */
void		 signals_start(struct event_base *, void (*cb)(int));
/* Before an exec: the three blocked, so that one that arrives from now
 * on stays pending across it.  For that, no other thread may take them:
 * one the master makes after signals_start blocks them (as admin_backup.c's
 * does), those the store makes while it opens inherit the block. */
void		 signals_hold(void);
/* At the end: the loop's watch of them freed (before its base is). */
void		 signals_close(void);

#endif /* ANKUSA_SIGNALS_H */
