/* SPDX-License-Identifier: ISC */
/*
 * store_sync.c: the store's hook for every sync Berkeley DB makes, and
 * what it keeps of a failure (no libdb call: store_open installs the hook
 * with db_env_set_func_fsync).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "store.h"
#include "store_int.h"

/* store_sync's: the call, the failures in the process (__atomic: a
 * backup's thread flushes the log too), the first one's (under sync_mu). */
static int	(*sync_func)(int) = fdatasync;
static unsigned long	 sync_failures;
static int		 sync_errno;
static char		 sync_path[PATH_MAX];
static pthread_mutex_t	 sync_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread int	 sync_aside;	/* this thread's syncs are not the
					 * store's: store_sync_aside */

/*
 * Every sync Berkeley DB makes comes here (db_env_set_func_fsync, set at
 * each open): the group commit's log flush, and those outside it -- the
 * checkpoint's syncs of the tables and of its own record, the log flush
 * that a page write must wait for (memp_trickle's cleaning, an eviction in
 * a put), the syncs of a close.  A failure of any is fatal to the store
 * (store_sync_check): Linux may drop the pages whose write-back failed and
 * reports that once, so the next sync of the file "succeeds" (BDB's own
 * call tries again at once on EIO, though it still returns the first
 * error), and a checkpoint after it would let go of the log that held the
 * only good copy (docs/DEPARTURES 12).  Not retried but on EINTR.  It
 * returns -1 as fsync does (the hook's documented interface), which BDB
 * passes up as its error and logs as "Unknown error -1"; the line before
 * names the file and the errno.  The hook is the process's, not a
 * store's: a failure counts against every store open in the process (the
 * master has one).  The store's own descriptors never sync
 * (store_writeback, bdb_log_zero_ahead), and the removal of log files needs
 * none (store_log_prune).
 */
void
store_set_sync_func(int (*fn)(int))
{
	sync_func = fn != NULL ? fn : fdatasync;
}

/* With on, the calling thread's syncs through the hook are not the store's
 * (a backup's recovery of its copy, store_backup.c): a failure fails that
 * work, which sees it, and not the store. */
void
store_sync_aside(int on)
{
	sync_aside = on;
}

int
store_sync(int fd)
{
	char link[64], path[PATH_MAX];
	ssize_t n;
	int rc, e;

	while ((rc = sync_func(fd)) == -1 && errno == EINTR)
		;
	if (rc == 0)
		return 0;
	e = errno;
	if (sync_aside)
		return -1;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	if ((n = readlink(link, path, sizeof(path) - 1)) == -1)
		snprintf(path, sizeof(path), "fd %d", fd);
	else
		path[n] = '\0';
	log_warnx("store: fdatasync of %s failed: %s", path, strerror(e));
	pthread_mutex_lock(&sync_mu);
	if (__atomic_load_n(&sync_failures, __ATOMIC_SEQ_CST) == 0) {
		sync_errno = e;
		snprintf(sync_path, sizeof(sync_path), "%s", path);
	}
	__atomic_add_fetch(&sync_failures, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&sync_mu);
	errno = e;
	return -1;
}

unsigned long
store_sync_count(void)
{
	return __atomic_load_n(&sync_failures, __ATOMIC_SEQ_CST);
}

int
store_sync_errno(void)
{
	int e;

	pthread_mutex_lock(&sync_mu);
	e = sync_errno;
	pthread_mutex_unlock(&sync_mu);
	return e;
}

/* After a failed sync the store is lost: what: in what the failure was
 * found, for the error. */
void
store_sync_check(struct store *st, const char *what)
{
	if (st->lost || store_sync_count() == st->sync_seen)
		return;
	store_seterr(st, 0, "store %s: %s: fdatasync of %s failed: %s; the "
	    "kernel may have dropped the pages it could not write: restart "
	    "to run recovery", st->dir, what, sync_path, strerror(sync_errno));
	store_set_lost(st);
}
