/* SPDX-License-Identifier: ISC */
/*
 * store_backup.c: the online backup (ankusactl backup): a copy of the store
 * taken while the master runs and commits, which a plain start of ankusad
 * on a copy of it recovers (see store.h).
 *
 * Berkeley DB's hot backup, as libdb 5.3's db_hotbackup does it
 * (util/db_hotbackup.c): DB_ENV->backup copies every database of the
 * environment, reading each file's pages in ranges that the buffer pool's
 * writers keep out of while they are read (the mutexes DB_NOLOCKING turned
 * off: docs/DEPARTURES 19), then every log file; catastrophic recovery of
 * the copy (DB_RECOVER_FATAL) then replays the copied log over the copied
 * tables, so that the copy is the store as of the end of that log.  Where
 * this departs from db_hotbackup, and why:
 *
 *   - No checkpoint before, and no removal of log files, from the store
 *     (db_hotbackup -c) or from the copy (its log_archive(DB_ARCH_REMOVE)
 *     after the recovery): a checkpoint would hold the loop, and the
 *     copy's own ankusad removes its log files when it no longer needs
 *     them (its store_open also moves into bodies.db any body an older
 *     build left in the log: docs/DEPARTURES 16).
 *   - The files are written by the callbacks here (set_backup_callbacks):
 *     each is created exclusively, its bytes counted, a cancel honoured at
 *     its next write, and it is synced at its close.  libdb's copy of a log
 *     file drops a failure of the close callback when its copy succeeded
 *     (db_backup.c, backup_data_copy), so the first failure is kept here
 *     and fails the backup whatever libdb returns.
 *   - DB_BACKUP_SINGLE_DIR: the store gives BDB its data and log directory
 *     by its absolute name (store_open), which BDB refuses to recreate
 *     under the target; the copy is one directory, like node.data_dir.
 *   - Not DB_BACKUP_FILES: only the databases and the log files are
 *     copied, not ankusad.lock, nor the pruned log files the trash thread
 *     empties (removed-log.N), nor anything else in the data directory
 *     (a local claim store, node.data_dir/claims, is a directory, which
 *     BDB's scan passes over).
 *
 * The copy runs in a thread of the master (daemon/admin/admin_backup.c) through
 * a DB_ENV handle of its own, joined to the store's running environment (its
 * region home: bdb_region_home), and it makes no call on the store's
 * handles: it reads only the store's directory and home, which do not
 * change while the store is open.  While a backup exists store_log_prune
 * removes no log file: BDB copies the log files that are there when it
 * gets to them, from the newest back to the first missing one
 * (log_archive(DB_ARCH_LOG)), and the copy needs all of them from the one
 * the last checkpoint before its tables were read points into.  While BDB
 * reads the tables' pages, the store's upkeep writes none through a sync
 * of the buffer pool (store_backup_pages_take: such a sync sleeps a
 * second when it meets a page being read).
 *
 * STORE_BACKUP_MARKER is the first file written and the last removed,
 * after every file and the directory are synced; store_open refuses a
 * directory that holds it.  A failure or a cancel removes what the backup
 * wrote (and the directory, if it made it); a directory it was given that
 * is not empty it leaves alone.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <fcntl.h>

#include <db.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store.h"
#include "store_bdb.h"
#include "store_int.h"

#define BACKUP_NOTIFY_BYTES	(16u * 1024 * 1024)	/* progress is told
							 * this often, and at
							 * each file */
#define BACKUP_RECOVERY_CACHE	(8u * 1024 * 1024)	/* the buffer pool of
							 * the copy's
							 * recovery */

struct store_backup {
	struct store	*st;		/* whose log removal it holds */
	char		*dir;		/* the target, absolute */
	char		*data;		/* the store's data directory, absolute */
	char		*home;		/* its region home, or NULL (data) */
	void		(*notify)(void *);
	void		*arg;
	pthread_mutex_t	 pages;		/* held by the run while BDB reads the
					 * tables' pages: the store's thread
					 * writes none through a sync then
					 * (store_backup_pages_take) */
	int		 pages_held;	/* the run holds it */
	int		 dfd;		/* dir, open, or -1 */
	int		 made;		/* the run made dir */
	int		 owned;		/* what is in dir is the run's */
	int		 cancel;	/* __atomic */
	int		 phase;		/* __atomic */
	uint64_t	 bytes;		/* __atomic */
	uint64_t	 files;		/* __atomic */
	uint64_t	 told;		/* bytes at the last notify */
	unsigned	 pace_ms;	/* a pause after each write */
	int		 failed;	/* err holds the first failure */
	char		 err[1536];
	char		 dberr[512];	/* BDB's first message since the last
					 * failure */
};

/* A file of the copy, as the callbacks hand it round. */
struct backup_file {
	int		 fd;
	char		 name[NAME_MAX + 1];
};

static void	 backup_fail(struct store_backup *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
static void	 backup_dbfail(struct store_backup *, int, const char *);
static void	 backup_dbmsg(const DB_ENV *, const char *, const char *);
static int	 backup_cancelled(struct store_backup *);
static void	 backup_pages_done(struct store_backup *);
static void	 backup_tell(struct store_backup *, enum store_backup_phase);
static int	 backup_target(struct store_backup *);
static int	 backup_copy(struct store_backup *);
static int	 backup_recover(struct store_backup *);
static int	 backup_sync(struct store_backup *);
static void	 backup_remove(struct store_backup *);
static DIR	*backup_opendir(struct store_backup *);
static int	 file_open(DB_ENV *, const char *, const char *, void **);
static int	 file_write(DB_ENV *, u_int32_t, u_int32_t, u_int32_t,
		    u_int8_t *, void *);
static int	 file_close(DB_ENV *, const char *, void *);

struct store_backup *
store_backup_new(struct store *st, const char *dir, void (*notify)(void *),
    void *arg, char *err, size_t errlen)
{
	struct store_backup *b;
	char abs[PATH_MAX];

	if (dir[0] != '/') {
		snprintf(err, errlen, "backup %s: the directory must be an "
		    "absolute path", dir);
		return NULL;
	}
	if (st->backup != NULL) {
		snprintf(err, errlen, "backup %s: a backup is running already, "
		    "into %s; one at a time", dir, st->backup->dir);
		return NULL;
	}
	if (store_lost(st)) {
		snprintf(err, errlen, "backup %s: the store must be recovered "
		    "first: %s", dir, st->lost_why);
		return NULL;
	}
	if (realpath(st->dir, abs) == NULL) {
		snprintf(err, errlen, "backup %s: store %s: %s", dir, st->dir,
		    strerror(errno));
		return NULL;
	}
	if ((b = calloc(1, sizeof(*b))) == NULL ||
	    (b->dir = strdup(dir)) == NULL ||
	    (b->data = strdup(abs)) == NULL ||
	    (st->home != NULL && (b->home = strdup(st->home)) == NULL)) {
		if (b != NULL) {
			free(b->dir);
			free(b->data);
		}
		free(b);
		snprintf(err, errlen, "backup %s: out of memory", dir);
		return NULL;
	}
	pthread_mutex_init(&b->pages, NULL);
	b->st = st;
	b->notify = notify;
	b->arg = arg;
	b->dfd = -1;
	st->backup = b;
	return b;
}

void
store_backup_free(struct store_backup *b)
{
	if (b == NULL)
		return;
	if (b->st->backup == b)
		b->st->backup = NULL;
	if (b->dfd != -1)
		close(b->dfd);
	pthread_mutex_destroy(&b->pages);
	free(b->dir);
	free(b->data);
	free(b->home);
	free(b);
}

void
store_backup_set_pace(struct store_backup *b, unsigned ms)
{
	b->pace_ms = ms;
}

void
store_backup_cancel(struct store_backup *b)
{
	__atomic_store_n(&b->cancel, 1, __ATOMIC_SEQ_CST);
}

void
store_backup_progress(struct store_backup *b, struct store_backup_progress *p)
{
	p->phase = __atomic_load_n(&b->phase, __ATOMIC_SEQ_CST);
	p->bytes = __atomic_load_n(&b->bytes, __ATOMIC_SEQ_CST);
	p->files = __atomic_load_n(&b->files, __ATOMIC_SEQ_CST);
}

/*
 * A sync of the buffer pool (memp_trickle, a checkpoint's) that meets a
 * page in the range a backup is reading gets EAGAIN for it and comes back
 * to it after a sleep of a whole second (mp_sync.c, __memp_sync_int, in
 * libdb 5.3): in the store's thread, a stall of the master's loop.  So
 * while the run reads the tables' pages, the store's upkeep writes none
 * that way (store_maint.c): take answers 0, and the upkeep waits for its
 * next turn.  The run takes the mutex before DB_ENV->backup, so that a
 * sync under way ends before the first page range is held, and gives it
 * back when BDB turns to the log files.  The store's thread only ever
 * tries it, and never waits.
 */
int
store_backup_pages_take(struct store *st)
{
	return st->backup == NULL ||
	    pthread_mutex_trylock(&st->backup->pages) == 0;
}

void
store_backup_pages_give(struct store *st)
{
	if (st->backup != NULL)
		pthread_mutex_unlock(&st->backup->pages);
}

/* The run's: the tables are copied (or the copy ended). */
static void
backup_pages_done(struct store_backup *b)
{
	if (!b->pages_held)
		return;
	b->pages_held = 0;
	pthread_mutex_unlock(&b->pages);
}

/* Read only once the run has returned. */
const char *
store_backup_error(struct store_backup *b)
{
	return b->failed ? b->err : "no error";
}

const char *
store_backup_dir(const struct store_backup *b)
{
	return b->dir;
}

int
store_backup_run(struct store_backup *b)
{
	if (backup_target(b) == -1)
		goto fail;
	backup_tell(b, STORE_BACKUP_TABLES);
	if (backup_copy(b) == -1 || backup_cancelled(b))
		goto fail;
	backup_tell(b, STORE_BACKUP_RECOVERY);
	if (backup_recover(b) == -1 || backup_cancelled(b))
		goto fail;
	backup_tell(b, STORE_BACKUP_SYNC);
	if (backup_sync(b) == -1)
		goto fail;
	backup_tell(b, STORE_BACKUP_DONE);
	return 0;

 fail:
	backup_remove(b);
	backup_tell(b, STORE_BACKUP_DONE);
	return -1;
}

/*
 * Errors: the first failure is the backup's; what follows it is its
 * cascade (BDB's "Backup Failed" after a cancel).
 */

static void
backup_fail(struct store_backup *b, const char *fmt, ...)
{
	va_list ap;

	if (b->failed)
		return;
	b->failed = 1;
	va_start(ap, fmt);
	vsnprintf(b->err, sizeof(b->err), fmt, ap);
	va_end(ap);
}

/* "backup DIR: what: db_strerror(ret) (BDB's own message)". */
static void
backup_dbfail(struct store_backup *b, int ret, const char *what)
{
	backup_fail(b, "backup %s: %s: %s%s%s%s", b->dir, what,
	    db_strerror(ret), b->dberr[0] != '\0' ? " (" : "", b->dberr,
	    b->dberr[0] != '\0' ? ")" : "");
}

static void
backup_dbmsg(const DB_ENV *e, const char *pfx, const char *msg)
{
	struct store_backup *b = e->app_private;

	if (b->dberr[0] == '\0')
		snprintf(b->dberr, sizeof(b->dberr), "%s", msg);
}

static int
backup_cancelled(struct store_backup *b)
{
	if (!__atomic_load_n(&b->cancel, __ATOMIC_SEQ_CST))
		return 0;
	backup_fail(b, "backup %s: cancelled", b->dir);
	return 1;
}

static void
backup_tell(struct store_backup *b, enum store_backup_phase phase)
{
	__atomic_store_n(&b->phase, phase, __ATOMIC_SEQ_CST);
	b->told = __atomic_load_n(&b->bytes, __ATOMIC_SEQ_CST);
	if (b->notify != NULL)
		b->notify(b->arg);
}

/* The target directory, read from its start (a dup of dfd shares its
 * offset); NULL with the failure kept. */
static DIR *
backup_opendir(struct store_backup *b)
{
	DIR *d;
	int fd;

	if ((fd = dup(b->dfd)) == -1 || (d = fdopendir(fd)) == NULL) {
		backup_fail(b, "backup %s: %s", b->dir, strerror(errno));
		if (fd != -1)
			close(fd);
		return NULL;
	}
	rewinddir(d);
	return d;
}

/*
 * The target: made, or an empty directory; then the marker, synced with
 * the directory, before anything else is written.
 */
static int
backup_target(struct store_backup *b)
{
	struct dirent *de;
	char line[PATH_MAX + 128];
	DIR *d;
	int fd, n, empty = 1;

	if (mkdir(b->dir, 0700) == 0)
		b->made = 1;
	else if (errno != EEXIST) {
		backup_fail(b, "backup %s: cannot make the directory: %s",
		    b->dir, strerror(errno));
		return -1;
	}
	if ((b->dfd = open(b->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) ==
	    -1) {
		backup_fail(b, "backup %s: %s", b->dir, strerror(errno));
		if (b->made)
			(void)rmdir(b->dir);
		return -1;
	}
	if (!b->made) {
		if ((d = backup_opendir(b)) == NULL)
			return -1;
		while (empty && (de = readdir(d)) != NULL)
			if (strcmp(de->d_name, ".") != 0 &&
			    strcmp(de->d_name, "..") != 0)
				empty = 0;
		closedir(d);
		if (!empty) {
			backup_fail(b, "backup %s: the directory is not empty; "
			    "a backup goes into a new or an empty directory",
			    b->dir);
			return -1;
		}
	}
	b->owned = 1;
	n = snprintf(line, sizeof(line), "An online backup of %s (ankusactl "
	    "backup) began at %lld and has not finished: this directory is "
	    "not a store.\n", b->data, (long long)time(NULL));
	if ((fd = openat(b->dfd, STORE_BACKUP_MARKER, O_WRONLY | O_CREAT |
	    O_EXCL | O_CLOEXEC, 0600)) == -1 ||
	    write(fd, line, (size_t)n) != n || fsync(fd) == -1 ||
	    fsync(b->dfd) == -1) {
		backup_fail(b, "backup %s: %s: %s", b->dir,
		    STORE_BACKUP_MARKER, strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * DB_ENV->backup through a handle joined to the running environment: no
 * DB_CREATE and no subsystem flags, so that it takes the subsystems the
 * store opened and fails rather than make an environment of its own (the
 * fallback db_hotbackup takes, a private environment, would read the
 * tables with no coordination with the store's writers).
 */
static int
backup_copy(struct store_backup *b)
{
	DB_ENV *e;
	int ret, t_ret;

	if ((ret = db_env_create(&e, 0)) != 0) {
		backup_dbfail(b, ret, "db_env_create");
		return -1;
	}
	e->app_private = b;
	e->set_errcall(e, backup_dbmsg);
	if ((b->home != NULL && ((ret = e->set_data_dir(e, b->data)) != 0 ||
	    (ret = e->set_lg_dir(e, b->data)) != 0)) ||
	    (ret = e->set_backup_callbacks(e, file_open, file_write,
	    file_close)) != 0) {
		backup_dbfail(b, ret, "configure the environment handle");
		goto out;
	}
	if ((ret = e->open(e, b->home != NULL ? b->home : b->data, 0,
	    0)) != 0) {
		backup_dbfail(b, ret, "cannot join the store's environment");
		goto out;
	}
	pthread_mutex_lock(&b->pages);
	b->pages_held = 1;
	if ((ret = e->backup(e, b->dir, DB_BACKUP_SINGLE_DIR)) != 0)
		backup_dbfail(b, ret, "copying the store");
	backup_pages_done(b);
 out:
	if ((t_ret = e->close(e, 0)) != 0 && !b->failed)
		backup_dbfail(b, t_ret, "closing the environment handle");
	return b->failed ? -1 : 0;
}

/*
 * Catastrophic recovery of the copy, in a private environment of its own
 * (as db_hotbackup's last step): it replays every copied log file over the
 * copied tables, from the first, and ends with a checkpoint.  The body
 * records builds before 2026-12-02 logged (docs/DEPARTURES 16) need the
 * store's dispatch.  Its
 * syncs go through the store's hook; a failure of theirs is the backup's,
 * not the store's (store_sync_aside).
 */
static int
backup_recover(struct store_backup *b)
{
	DB_ENV *e;
	int ret, t_ret;

	b->dberr[0] = '\0';
	if ((ret = db_env_create(&e, 0)) != 0) {
		backup_dbfail(b, ret, "db_env_create");
		return -1;
	}
	e->app_private = b;
	e->set_errcall(e, backup_dbmsg);
	store_sync_aside(1);
	if ((ret = e->set_app_dispatch(e, bdb_app_dispatch)) != 0 ||
	    (ret = e->set_lg_max(e, STORE_LOG_FILE)) != 0 ||
	    (ret = e->set_cachesize(e, 0, BACKUP_RECOVERY_CACHE, 1)) != 0) {
		backup_dbfail(b, ret, "configure the copy's recovery");
		goto out;
	}
	if ((ret = e->open(e, b->dir, DB_CREATE | DB_INIT_LOG |
	    DB_INIT_MPOOL | DB_INIT_TXN | DB_PRIVATE | DB_RECOVER_FATAL,
	    0600)) != 0)
		backup_dbfail(b, ret, "recovery of the copy");
 out:
	if ((t_ret = e->close(e, 0)) != 0 && !b->failed)
		backup_dbfail(b, t_ret, "closing the copy after its recovery");
	store_sync_aside(0);
	return b->failed ? -1 : 0;
}

/*
 * Every file synced, then the directory; then the marker goes, and the
 * directory is synced again (and its parent, if the run made it): the
 * backup is complete only once its removal is on the disk.
 */
static int
backup_sync(struct store_backup *b)
{
	struct dirent *de;
	struct stat sb;
	uint64_t size = 0;
	char parent[PATH_MAX], *slash;
	DIR *d;
	int fd, dfd;

	if ((d = backup_opendir(b)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if ((fd = openat(b->dfd, de->d_name, O_RDONLY | O_CLOEXEC |
		    O_NOFOLLOW)) == -1 || fstat(fd, &sb) == -1 ||
		    fsync(fd) == -1) {
			backup_fail(b, "backup %s: sync of %s: %s", b->dir,
			    de->d_name, strerror(errno));
			if (fd != -1)
				close(fd);
			closedir(d);
			return -1;
		}
		close(fd);
		size += (uint64_t)sb.st_size;
	}
	closedir(d);
	if (fsync(b->dfd) == -1 || unlinkat(b->dfd, STORE_BACKUP_MARKER,
	    0) == -1 || fsync(b->dfd) == -1) {
		backup_fail(b, "backup %s: sync of the directory: %s", b->dir,
		    strerror(errno));
		return -1;
	}
	if (b->made) {
		snprintf(parent, sizeof(parent), "%s", b->dir);
		if ((slash = strrchr(parent, '/')) != NULL)
			slash[slash == parent ? 1 : 0] = '\0';
		if ((dfd = open(parent, O_RDONLY | O_DIRECTORY |
		    O_CLOEXEC)) == -1 || fsync(dfd) == -1) {
			/* The copy is complete; only its name may not be on
			 * the disk yet.  Said, not undone. */
			backup_fail(b, "backup %s: sync of %s: %s", b->dir,
			    parent, strerror(errno));
			if (dfd != -1)
				close(dfd);
			b->owned = 0;
			return -1;
		}
		close(dfd);
	}
	__atomic_store_n(&b->bytes, size, __ATOMIC_SEQ_CST);
	return 0;
}

/* What the run wrote, after a failure or a cancel: the files in the
 * directory (which held nothing before), and the directory if it made
 * it. */
static void
backup_remove(struct store_backup *b)
{
	struct dirent *de;
	DIR *d;

	if (!b->owned)
		return;
	if ((d = backup_opendir(b)) != NULL) {
		while ((de = readdir(d)) != NULL)
			if (strcmp(de->d_name, ".") != 0 &&
			    strcmp(de->d_name, "..") != 0 &&
			    strcmp(de->d_name, STORE_BACKUP_MARKER) != 0)
				(void)unlinkat(b->dfd, de->d_name, 0);
		closedir(d);
	}
	/* The marker last: until then what is left is recognisable. */
	(void)unlinkat(b->dfd, STORE_BACKUP_MARKER, 0);
	if (b->made)
		(void)rmdir(b->dir);
}

/*
 * The callbacks of DB_ENV->backup (set_backup_callbacks): one file of the
 * copy each, named as in the store (SINGLE_DIR: no directories).
 */

static int
file_open(DB_ENV *e, const char *name, const char *target, void **handle)
{
	struct store_backup *b = e->app_private;
	struct backup_file *f;

	*handle = NULL;
	if (backup_cancelled(b))
		return ECANCELED;
	if (strchr(name, '/') != NULL || strlen(name) > NAME_MAX ||
	    strcmp(name, STORE_BACKUP_MARKER) == 0) {
		backup_fail(b, "backup %s: BDB named a file %s", b->dir, name);
		return EINVAL;
	}
	/* BDB copies the tables first, then the log files. */
	if (strncmp(name, "log.", 4) == 0) {
		backup_pages_done(b);
		__atomic_store_n(&b->phase, STORE_BACKUP_LOGS,
		    __ATOMIC_SEQ_CST);
	} else
		__atomic_store_n(&b->phase, STORE_BACKUP_TABLES,
		    __ATOMIC_SEQ_CST);
	if ((f = calloc(1, sizeof(*f))) == NULL) {
		backup_fail(b, "backup %s: out of memory", b->dir);
		return ENOMEM;
	}
	snprintf(f->name, sizeof(f->name), "%s", name);
	if ((f->fd = openat(b->dfd, name, O_WRONLY | O_CREAT | O_EXCL |
	    O_CLOEXEC, 0600)) == -1) {
		int en = errno;

		backup_fail(b, "backup %s: %s: %s", b->dir, name,
		    strerror(en));
		free(f);
		return en;
	}
	*handle = f;
	return 0;
}

static int
file_write(DB_ENV *e, u_int32_t gbytes, u_int32_t bytes, u_int32_t size,
    u_int8_t *buf, void *handle)
{
	struct store_backup *b = e->app_private;
	struct backup_file *f = handle;
	off_t at = (off_t)gbytes * 1024 * 1024 * 1024 + bytes;
	uint64_t done;
	size_t left = size;
	ssize_t n;

	if (backup_cancelled(b))
		return ECANCELED;
	while (left > 0) {
		if ((n = pwrite(f->fd, buf, left, at)) == -1) {
			int en = errno;

			if (en == EINTR)
				continue;
			backup_fail(b, "backup %s: writing %s: %s", b->dir,
			    f->name, strerror(en));
			return en;
		}
		buf += n;
		at += n;
		left -= (size_t)n;
	}
	if (b->pace_ms > 0) {
		struct timespec ts = { b->pace_ms / 1000,
		    (long)(b->pace_ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}
	done = __atomic_add_fetch(&b->bytes, size, __ATOMIC_SEQ_CST);
	if (done - b->told >= BACKUP_NOTIFY_BYTES) {
		b->told = done;
		if (b->notify != NULL)
			b->notify(b->arg);
	}
	return 0;
}

/* The file synced and closed; called with no handle when libdb found no
 * source to copy (a log file gone: an error of its own). */
static int
file_close(DB_ENV *e, const char *name, void *handle)
{
	struct store_backup *b = e->app_private;
	struct backup_file *f = handle;
	int rc = 0;

	if (f == NULL)
		return 0;
	if (!b->failed && fsync(f->fd) == -1) {
		rc = errno;
		backup_fail(b, "backup %s: sync of %s: %s", b->dir, f->name,
		    strerror(rc));
	}
	if (close(f->fd) == -1 && rc == 0) {
		rc = errno;
		backup_fail(b, "backup %s: closing %s: %s", b->dir, f->name,
		    strerror(rc));
	}
	free(f);
	if (rc == 0 && !b->failed) {
		__atomic_add_fetch(&b->files, 1, __ATOMIC_SEQ_CST);
		backup_tell(b, __atomic_load_n(&b->phase, __ATOMIC_SEQ_CST));
	}
	return rc;
}
