/* SPDX-License-Identifier: ISC */
/*
 * admin_backup.h: the master's side of an online backup (ankusactl backup DIR):
 * a copy of the store taken while the master runs and takes hooks
 * (store_backup.c makes it), in a thread of the master's, so that the
 * loop never waits for it.
 *
 * One backup at a time.  It is cancelled, and what it wrote removed, when
 * the daemon stops (drain, SIGTERM) or its caller goes away.
 */
#ifndef ANKUSA_BACKUP_H
#define ANKUSA_BACKUP_H

#include <stddef.h>

struct store_backup_progress;

struct backup_cbs {
	/* Where the copy is (a phase began, a file was copied, or more
	 * bytes): in the loop. */
	void	(*progress)(void *, const struct store_backup_progress *);
	/* The end: err NULL when the copy is complete (p's bytes are then
	 * its size), else why it is not and nothing of it is left.  In the
	 * loop, never before backup_start returns. */
	void	(*done)(void *, const struct store_backup_progress *,
		    const char *err);
};

/* A backup of env->store into dir (absolute; it must not exist or be
 * empty): 0, or -1 with err filled (one runs already, the daemon stops,
 * the thread cannot start). */
int	backup_start(const char *dir, const struct backup_cbs *, void *arg,
	    char *err, size_t errlen);
/* The caller with arg is gone: its backup is cancelled and done is not
 * called. */
void	backup_detach(void *arg);
/* The daemon stops: a backup running is cancelled (done is called with
 * the reason), new ones are refused. */
void	backup_stop(void);
/* A backup's thread runs (the store must stay open until it is joined). */
int	backup_busy(void);
/* At the exit, after the loop: wait for a backup's thread. */
void	backup_join(void);

#endif
