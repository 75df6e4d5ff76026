/* SPDX-License-Identifier: ISC */
/*
 * store_bdb.c: everything in the store that knows Berkeley DB below its
 * documented API, kept here so that one file says what a libdb upgrade,
 * a backup or replication has to answer for:
 *
 *   - the zero-fill ahead of the log's end (docs/DEPARTURES 20);
 *   - the region home on a tmpfs under /dev/shm (docs/DEPARTURES 21).
 *
 * Until 2026-12-02 the hooks' bodies were log records of the
 * application's own type, read back from the log files by hand (docs/
 * DEPARTURES 16, withdrawn); they are in a table now (store_bodies.c),
 * and no code reads a log file.  What stays of them here is
 * bdb_app_dispatch, which answers recovery for such records in logs
 * written before.
 */
#include "config.h"

#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <fcntl.h>

#include <db.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "store.h"
#include "store_bdb.h"
#include "store_int.h"

#define STORE_LOG_AHEAD		(4u * 1024 * 1024)	/* zeroed ahead */
#define STORE_LOG_REFILL	(1u * 1024 * 1024)	/* of the log's end */
#define STORE_ZERO_BUF		(256u * 1024)
/* A body record of the builds before 2026-12-02, written with
 * DB_ENV->log_put outside the batch's transaction: u32 type, u32 txnid 0
 * and a zero prev LSN (the layout recovery reads from every record), then
 * the hook's seq and body (store_bodies.c moves them at the open). */
#define STORE_LOGREC_BODY	(DB_user_BEGIN + 1)

static int	 log_end(struct store *, uint32_t *, uint64_t *);
static int	 log_open(struct store *, uint32_t, int, int *);

/*
 * Where Berkeley DB keeps its region files (the environment's home): on
 * a tmpfs, in a directory of this user's named after the data directory's
 * device and inode, while the tables and the log stay in the data
 * directory (set_data_dir, set_lg_dir).  The regions are mapped shared;
 * in the data directory the kernel wrote the 42 MB that hold the buffer
 * pool back to the disk every 30 s, and after a backlog's fill that held
 * the master 60-90 ms (docs/DEPARTURES 21).  Nothing in them outlives the
 * process: every open recovers from the log and makes them anew.
 */
static const char	*store_region_base = "/dev/shm";

void
store_set_region_base(const char *base)
{
	store_region_base = base;
}

/*
 * A home is in use while a store holds the flock of its REGION_LOCK; one
 * whose lock can be had is a crashed store's, whose region files no open
 * needs (each recovers from the log), and every open removes those of its
 * user (region_sweep): a data directory that is never started again after
 * a crash would otherwise keep its cache's tens of MiB in memory until a
 * reboot.  The open takes its own home's lock first, and keeps the home
 * only if the lock file it holds is still the one in it (a sweep in
 * another process removes the lock file before the home).
 */
#define REGION_LOCK	"lock"
#define REGION_FILES	9	/* __db.001 to __db.009 */

static int
region_lock(const char *home, int create)
{
	struct stat a, b;
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/" REGION_LOCK, home);
	if ((fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW |
	    (create ? O_CREAT : 0), 0600)) == -1)
		return -1;
	if (flock(fd, LOCK_EX | LOCK_NB) == -1 || fstat(fd, &a) == -1 ||
	    lstat(path, &b) == -1 || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino) {
		int e = errno == EWOULDBLOCK ? EWOULDBLOCK : ESTALE;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* The region files of a home (__db.001, ...), and with rmhome its lock
 * and the home itself (the lock held by the caller). */
void
bdb_region_remove(const char *home, int rmhome)
{
	char path[PATH_MAX];
	int i;

	for (i = 1; i <= REGION_FILES; i++) {
		snprintf(path, sizeof(path), "%s/__db.%03d", home, i);
		(void)unlink(path);
	}
	if (rmhome) {
		snprintf(path, sizeof(path), "%s/" REGION_LOCK, home);
		(void)unlink(path);
		(void)rmdir(home);
	}
}

/* Our user's homes other than ours whose lock no one holds. */
static void
region_sweep(const char *ours)
{
	struct dirent *de;
	struct stat sb;
	DIR *d;
	char prefix[64], path[PATH_MAX];
	int fd, n;

	if ((d = opendir(store_region_base)) == NULL)
		return;
	snprintf(prefix, sizeof(prefix), "ankusa-store-%lu-",
	    (unsigned long)geteuid());
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
			continue;
		n = snprintf(path, sizeof(path), "%s/%s", store_region_base,
		    de->d_name);
		if (n < 0 || (size_t)n >= sizeof(path) ||
		    strcmp(path, ours) == 0)
			continue;
		if (lstat(path, &sb) == -1 || !S_ISDIR(sb.st_mode) ||
		    sb.st_uid != geteuid())
			continue;
		if ((fd = region_lock(path, 0)) == -1)
			continue;	/* in use, or not one of ours */
		log_debug("store: removing %s, left by a store that did not "
		    "close", path);
		bdb_region_remove(path, 1);
		close(fd);
	}
	closedir(d);
}

/* The home for the data directory dsb, its lock held in *fdp; NULL (the
 * data directory then) when no safe directory can be had. */
char *
bdb_region_home(const struct stat *dsb, int *fdp)
{
	struct stat sb;
	char path[PATH_MAX], *home;
	int n, tries;

	if (store_region_base == NULL)
		return NULL;
	n = snprintf(path, sizeof(path), "%s/ankusa-store-%lu-%llx-%llx",
	    store_region_base, (unsigned long)geteuid(),
	    (unsigned long long)dsb->st_dev, (unsigned long long)dsb->st_ino);
	if (n < 0 || (size_t)n >= sizeof(path))
		return NULL;
	for (tries = 0; tries < 3; tries++) {
		if (mkdir(path, 0700) == -1 && errno != EEXIST)
			return NULL;
		/* Someone else's, or a link planted in a shared /dev/shm:
		 * no. */
		if (lstat(path, &sb) == -1 || !S_ISDIR(sb.st_mode) ||
		    sb.st_uid != geteuid() || (sb.st_mode & 077) != 0) {
			log_warnx("store: %s is not a private directory of "
			    "ours; the region files stay in the data "
			    "directory", path);
			return NULL;
		}
		if ((*fdp = region_lock(path, 1)) != -1)
			break;
		if (errno == EWOULDBLOCK) {
			log_warnx("store: %s is in use by another process; "
			    "the region files stay in the data directory",
			    path);
			return NULL;
		}
		/* Removed by another's sweep meanwhile: make it anew. */
	}
	if (tries == 3)
		return NULL;
	region_sweep(path);
	if ((home = strdup(path)) == NULL) {
		close(*fdp);
		*fdp = -1;
	}
	return home;
}

/* d over the caller's len bytes at buf: a key (size len) to read into,
 * or with partial, a value of which only the first len bytes are read. */
void
bdb_dbt_user(DBT *d, void *buf, size_t len, int partial)
{
	memset(d, 0, sizeof(*d));
	d->data = buf;
	d->ulen = (uint32_t)len;
	d->flags = DB_DBT_USERMEM;
	if (partial) {
		d->dlen = (uint32_t)len;
		d->flags |= DB_DBT_PARTIAL;
	} else
		d->size = (uint32_t)len;
}

/* Recovery passes records of the application's types here: a body record
 * of an older build's belongs to no transaction and needs nothing redone
 * or undone. */
int
bdb_app_dispatch(DB_ENV *env, DBT *rec, DB_LSN *lsn, db_recops op)
{
	uint32_t type;

	if (rec->size >= sizeof(type)) {
		memcpy(&type, rec->data, sizeof(type));
		if (type == STORE_LOGREC_BODY)
			return 0;
	}
	return EINVAL;
}

/* The log's end: the file the next record goes to and its offset there.
 * -1 if BDB cannot say. */
static int
log_end(struct store *st, uint32_t *file, uint64_t *off)
{
	DB_LOG_STAT *sp;

	if (st->env->log_stat(st->env, &sp, 0) != 0)
		return -1;
	*file = sp->st_cur_file;
	*off = sp->st_cur_offset;
	free(sp);
	return 0;
}

/* Log file n opened with flags: its descriptor, or -1 with errno set, or
 * with *dbrc set when BDB gave no name for it. */
static int
log_open(struct store *st, uint32_t n, int flags, int *dbrc)
{
	char name[PATH_MAX];
	DB_LSN lsn;

	lsn.file = n;
	lsn.offset = 0;
	if ((*dbrc = st->env->log_file(st->env, &lsn, name,
	    sizeof(name))) != 0)
		return -1;
	return open(name, flags | O_CLOEXEC);
}

uint32_t
store_log_current(struct store *st)
{
	uint64_t off;
	uint32_t cur;

	return log_end(st, &cur, &off) == 0 ? cur : 0;
}

/*
 * Keep the current log file zero-filled ahead of the log's end, so that a
 * commit's sync writes the commit's pages and nothing else.  BDB makes a log
 * file sparse at its full size, so a commit's pages land in a hole: its sync
 * must allocate their blocks and write the inode that maps them, on ext4
 * three I/Os a commit instead of two: the pages, the inode, the disk's cache
 * flush (docs/DEPARTURES 20 has the profile).  Zeros past the last record are the end of the log to
 * BDB, as in its own DB_LOG_ZERO files, whose whole 32 MiB it zeroes when it
 * creates one, in the committing thread.  Here the zeros reach
 * STORE_LOG_AHEAD past the end whenever less than STORE_LOG_REFILL are left,
 * and their write-back starts at once (the next commit's sync waits for it:
 * fdatasync waits on the whole file; 3 MiB chunks gave shorter syncs than
 * half-megabyte ones, whose blocks and inode are written eight times as
 * often).  Only past the log's end (after a flush everything before it is
 * written), in the one thread that writes the log.  A failure (the disk
 * full) ends it for that file.
 */
void
bdb_log_zero_ahead(struct store *st)
{
	static const unsigned char zeros[STORE_ZERO_BUF];
	uint64_t end, at, off;
	uint32_t file;
	ssize_t n;
	int rc;

	if (log_end(st, &file, &off) == -1)
		return;
	if (file != st->z.file) {
		if (st->z.fd != -1)
			close(st->z.fd);
		st->z.file = file;
		st->z.end = off;
		if ((st->z.fd = log_open(st, file, O_WRONLY, &rc)) == -1) {
			if (rc != 0)
				errno = rc;
			goto fail;
		}
	}
	if (st->z.end >= off + STORE_LOG_REFILL || st->z.end >= STORE_LOG_FILE)
		return;
	at = st->z.end > off ? st->z.end : off;
	end = off + STORE_LOG_AHEAD;
	if (end > STORE_LOG_FILE)
		end = STORE_LOG_FILE;
	while (at < end) {
		n = pwrite(st->z.fd, zeros, end - at < sizeof(zeros) ?
		    end - at : sizeof(zeros), (off_t)at);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		at += (uint64_t)n;
	}
	/* Not a sync: SYNC_FILE_RANGE_WRITE starts the write-back and
	 * neither waits nor collects its error, which stays for the next
	 * log flush's sync, BDB's (a failed write-back of zeros stops the
	 * daemon too, as it cannot be told from the log's).  A failure here
	 * is the zeros', which nothing reads: only the end of this file's
	 * zeroing. */
	(void)sync_file_range(st->z.fd, (off_t)st->z.end,
	    (off_t)(end - st->z.end), SYNC_FILE_RANGE_WRITE);
	st->z.end = end;
	return;
 fail:
	log_warnx("store %s: log file %" PRIu32 ": zeroing ahead of the "
	    "log's end: %s; its commits' syncs allocate their blocks",
	    st->dir, file, db_strerror(errno));
	if (st->z.fd != -1)
		close(st->z.fd);
	st->z.fd = -1;
	st->z.end = STORE_LOG_FILE;	/* nothing more for this file */
}
