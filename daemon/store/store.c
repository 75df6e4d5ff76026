/* SPDX-License-Identifier: ISC */
/*
 * store.c: the Berkeley DB store; see store.h.
 *
 * Owns the node's only durable state: one transactional environment whose
 * log and tables are in node.data_dir (its region files, which nothing
 * needs after the process, on a tmpfs: bdb_region_home), opened with
 * DB_RECOVER at every start, and one file per table ("<table>.db"), so
 * that damage is reported with the file that holds it and a hot table
 * (rows, due) never shares pages with hook bodies: B-trees, and bodies, a
 * heap of the hooks' bodies of 256 bytes to 1 MiB (store_bodies.c).  A
 * store of schema 1 (builds before 2026-12-02, whose bodies were log
 * records) has them moved into bodies at its open.  Pages carry checksums
 * (DB_CHKSUM): a damaged page is an error on read, never garbage.  Nothing
 * here is fatal: every failure is a -1 with store_strerror() saying what
 * and where; the caller decides (a failed commit is a 503, a failed open
 * refuses to start).  After BDB panics (DB_RUNRECOVERY) every call fails
 * until the daemon restarts and recovers.
 * So does every batch after a sync of the log or of a table failed,
 * wherever Berkeley DB made it (store_sync): the kernel may have dropped
 * the pages it could not write, and a later commit or checkpoint that did
 * reach the disk would sit behind that hole (docs/DEPARTURES 12);
 * store_lost() tells the daemon to restart.
 *
 * Only the master calls this, from one thread, one transaction at a time.
 *
 * The tables' keys and records, and how a record is upgraded: see
 * store_rec.c.
 *
 * Group commit: store_batch_commit commits with DB_TXN_WRITE_NOSYNC (the
 * commit record reaches the OS, not the disk) and then flushes the log once
 * (env->log_flush): the whole batch becomes durable with one fsync.  If the
 * commit succeeds but the flush fails we still return -1: the batch's hooks
 * may or may not survive a crash, so the caller answers 503 and the sender's
 * retry may store a duplicate, which at-least-once allows.
 *
 * The flush goes up to the last commit's record, not to the log's end
 * (store_log_flush): a commit that could not write its records (the disk
 * full: Berkeley DB then aborts it and keeps the records in its log
 * buffer, to write with the next ones) is no reason for the commits
 * before it to fail, and a flush to the end would first have to write
 * those records.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <fcntl.h>

#include <db.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ids.h"
#include "log.h"
#include "store_logsum.h"
#include "store.h"
#include "store_bdb.h"
#include "store_group.h"
#include "store_int.h"

const char *const store_tables[T_COUNT] = {
	"meta", "hooks", "rows", "due", "lanes", "members", "marks", "dead",
	"dedupe", "dedupe_exp", "replays", "quarantine", "bodies", "hookids",
	"audit", "attempts", "attempts_end", "delivered", "archive",
};

#define STORE_CACHE_BYTES	(32u * 1024 * 1024)
#define STORE_LOG_BUFFER	(4u * 1024 * 1024)
#define STORE_HOOK_PAGESIZE	8192	/* hooks, quarantine: see open */
#define STORE_BODY_PAGESIZE	(32u * 1024)	/* bodies: see open */
#define STORE_MAX_LOCKS		20000	/* a batch's page locks: see open */
#define STORE_OPEN_DEAD_TRIES	5	/* opens again after a rollback */

/* A transaction takes a lock per page it reads or writes: a batch of
 * hooks, a few pages each (store_set_batch). */
static unsigned	 store_max_locks = STORE_MAX_LOCKS;

static void	 store_dbmsg(const DB_ENV *, const char *, const char *);
static int	 store_env_open(struct store *, char *, size_t);
static int	 store_env_close(struct store *, int);
static int	 store_open_tables(struct store *, char *, size_t);
static void	 store_checksums_by(struct store *, const char *,
		    const char *);
static int	 store_checksums_prove(struct store *);
static int	 store_probe(struct store *, int, char *, size_t);
static int	 store_close_handles(struct store *, int);
static int	 batch_commit(struct store_batch *, int);
static void	 commit_mark(struct store *);
static void	 store_terr(struct store *, int, int, const char *,
		    const void *, size_t);
static int	 store_cursor_open(struct store *, DB_TXN *, int, DBC **);
static int	 store_tget_dbt(struct store *, DB_TXN *, int, const void *,
		    size_t, DBT *, size_t *);
static int	 store_cursor_close(struct store *, int, DBC **, int);


/*
 * Errors.
 */

/* On a full disk every commit a client retries fails anew, each with a
 * handful of messages: at most 20 lines a second. */
static struct log_limit	 dbmsg_log = LOG_LIMIT_INIT("store", 20);

static void
store_dbmsg(const DB_ENV *env, const char *pfx, const char *msg)
{
	struct store *st = env->app_private;
	const char *p;

	/* A replication master lists its data directory's tables for a
	 * client it initialises, and reads every file there to tell; of the
	 * lock file it says it is no table (BDB0004 ... unexpected file
	 * type), which is true and not news, and then passes it over. */
	if (strncmp(msg, "BDB0004 ", 8) == 0 &&
	    (p = strstr(msg, "/" STORE_LOCK_FILE ": ")) != NULL &&
	    strstr(p, "unexpected file type") != NULL)
		return;

	if (log_limit_take(&dbmsg_log, LOG_LEVEL_WARN))
		log_warnx("store: %s", msg);
	/* The first message names the cause; the rest is its cascade. */
	if (st != NULL && st->dberr[0] == '\0')
		snprintf(st->dberr, sizeof(st->dberr), "%s", msg);
}

/* err = "context: db_strerror(ret) (BDB's own message)"; ret 0: context. */
void
store_seterr(struct store *st, int ret, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(st->err, sizeof(st->err), fmt, ap);
	va_end(ap);
	st->lastret = ret;
	n = strlen(st->err);
	/* -1 is store_sync's failure, passed up as BDB got it. */
	if (ret != 0 && n < sizeof(st->err))
		snprintf(st->err + n, sizeof(st->err) - n, ": %s",
		    ret == -1 && store_sync_count() > 0 ? strerror(store_sync_errno()) :
		    db_strerror(ret));
	n = strlen(st->err);
	if (st->dberr[0] != '\0' && n < sizeof(st->err))
		snprintf(st->err + n, sizeof(st->err) - n, " (%s)", st->dberr);
	if (ret == DB_RUNRECOVERY && !st->opening) {
		n = strlen(st->err);
		if (n < sizeof(st->err))
			snprintf(st->err + n, sizeof(st->err) - n,
			    "; restart to run recovery");
		store_set_lost(st);
	}
	/* A rollback or an internal initialisation by the replication
	 * manager invalidated every handle (store_group.c). */
	if (ret == DB_REP_HANDLE_DEAD)
		group_handles_dead(st);
	/* While the replication manager synchronises a client's store it
	 * locks the handles out: a read waits (5 s, in Berkeley DB) and then
	 * fails so, or at once with DB_REP_LOCKOUT.  Not damage: the
	 * request is answered 503 with Retry-After and tried again. */
	if ((ret == DB_REP_LOCKOUT || (ret == DB_LOCK_DEADLOCK &&
	    st->client)) && (n = strlen(st->err)) < sizeof(st->err))
		snprintf(st->err + n, sizeof(st->err) - n, "; the replication "
		    "manager is synchronising this site's store: retry");
	st->dberr[0] = '\0';
}

/* Mark the store lost, keeping the first cause (st->err). */
void
store_set_lost(struct store *st)
{
	if (!st->lost)
		snprintf(st->lost_why, sizeof(st->lost_why), "%s", st->err);
	st->lost = 1;
}

int
store_lost(struct store *st)
{
	store_sync_check(st, "a sync outside a commit");
	return st->lost;
}

const char *
store_strerror(struct store *st)
{
	return st->err[0] != '\0' ? st->err : "no error";
}

/*
 * Open and close.
 */

void
store_set_batch(unsigned max_hooks)
{
	store_max_locks = max_hooks > STORE_MAX_LOCKS / 8 ? max_hooks * 8 :
	    STORE_MAX_LOCKS;
}

struct store *
store_open(const char *dir, char *err, size_t errlen)
{
	return store_open_group(dir, NULL, err, errlen);
}

/* g: a site of that replication group (store_group.c), or NULL. */
struct store *
store_open_group(const char *dir, const struct store_group *g, char *err,
    size_t errlen)
{
	struct bodies_upgrade u;
	struct store *st;
	struct stat sb;
	char abs[PATH_MAX];
	int ret, tries;

	if (mkdir(dir, 0700) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "store %s: mkdir: %s", dir,
		    strerror(errno));
		return NULL;
	}
	if (stat(dir, &sb) == -1 || !S_ISDIR(sb.st_mode)) {
		snprintf(err, errlen, "store %s: not a directory", dir);
		return NULL;
	}
	/* An online backup that did not finish (store_backup.c) holds files
	 * that look like a store's: refuse it before recovery runs on it. */
	snprintf(abs, sizeof(abs), "%s/%s", dir, STORE_BACKUP_MARKER);
	if (access(abs, F_OK) == 0) {
		snprintf(err, errlen, "store %s holds %s: it is an online backup "
		    "(ankusactl backup) that did not finish, not a store; take "
		    "the backup again into an empty directory", dir,
		    STORE_BACKUP_MARKER);
		return NULL;
	}
	if (errno != ENOENT) {
		snprintf(err, errlen, "store %s: %s: %s", dir, abs,
		    strerror(errno));
		return NULL;
	}
	if ((st = calloc(1, sizeof(*st))) == NULL ||
	    (st->dir = strdup(dir)) == NULL) {
		free(st);
		snprintf(err, errlen, "store %s: out of memory", dir);
		return NULL;
	}
	if (g != NULL && (st->group = group_copy(g)) == NULL) {
		free(st->dir);
		free(st);
		snprintf(err, errlen, "store %s: out of memory", dir);
		return NULL;
	}
	pthread_mutex_init(&st->trash.mu, NULL);
	pthread_cond_init(&st->trash.cv, NULL);
	st->opening = 1;
	st->z.fd = -1;
	st->home_fd = -1;
	/* The region files on a tmpfs (bdb_region_home), the tables and the
	 * log in the data directory.  Not for a site of a replication group:
	 * the replication manager names a table to the other sites by its
	 * path from the home, which must be the same on all of them
	 * (docs/DEPARTURES 21). */
	if (g == NULL && realpath(dir, abs) != NULL &&
	    (st->home = bdb_region_home(&sb, &st->home_fd)) != NULL)
		bdb_region_remove(dir, 0);	/* an older build's */
	/* A site of a group that opens while the group elects may see its
	 * log rolled back under the tables being opened (a master that was
	 * executed again as a client: "replication recovery unrolled
	 * committed transactions"): every handle is dead, none damaged, and
	 * the open starts again. */
	for (tries = 0;; tries++) {
		if (store_env_open(st, err, errlen) == 0)
			break;
		if (st->group == NULL || st->lastret != DB_REP_HANDLE_DEAD ||
		    tries == STORE_OPEN_DEAD_TRIES)
			goto failed;
		log_warnx("%s; opening the store again", st->err);
		(void)store_env_close(st, 1);
	}
	/* A store of schema 1 may hold bodies in the log: they move into
	 * bodies before anything else reads it.  A damaged log record
	 * stops the environment (bodies_upgrade): it opens again, with
	 * recovery, and the upgrade goes on past it (each time past one
	 * more, which it does not read again). */
	memset(&u, 0, sizeof(u));
	/* A client's tables are the master's, upgraded there. */
	while (!st->client && st->schema < STORE_SCHEMA_BODIES) {
		if ((ret = bodies_upgrade(st, &u)) == 0)
			break;
		if (ret == -1) {
			snprintf(err, errlen, "%s", st->err);
			free(u.bad);
			goto failed;
		}
		(void)store_env_close(st, 1);
		if (store_env_open(st, err, errlen) == -1) {
			free(u.bad);
			goto failed;
		}
	}
	free(u.bad);
	if (!st->client && ((st->schema < STORE_SCHEMA_HOOKIDS &&
	    hookids_upgrade(st) == -1) || (st->schema < STORE_SCHEMA_VERSION &&
	    hookids_schema_idseq(st) == -1))) {
		snprintf(err, errlen, "%s", st->err);
		goto failed;
	}
	trash_clear(st, 1);
	if ((ret = pthread_create(&st->trash.thread, NULL, trash_main,
	    st)) != 0) {
		snprintf(err, errlen, "store %s: cannot start the thread that "
		    "removes pruned log files: %s", dir, strerror(ret));
		goto failed;
	}
	st->trash.on = 1;
	st->opening = 0;
	return st;

 failed:
	(void)store_close_handles(st, 0);
	group_free(st);
	free(st->dir);
	free(st);
	return NULL;
}

/* The environment, its tables and meta, opened (again) with recovery. */
static int
store_env_open(struct store *st, char *err, size_t errlen)
{
	const char *dir = st->dir;
	char abs[PATH_MAX], why[sizeof(st->sumby)];
	int ret, major, minor, summed;

	if ((ret = db_env_create(&st->env, 0)) != 0) {
		st->env = NULL;
		snprintf(err, errlen, "store %s: db_env_create: %s", dir,
		    db_strerror(ret));
		return -1;
	}
	/* libdb's checksums by logsum, if this program exports __ham_func4
	 * and this is the libdb it was checked against (store_logsum.h); which
	 * sum is in use is proved below, once the log has been written. */
	(void)db_version(&major, &minor, NULL);
	if (!(summed = logsum_install(major, minor, why, sizeof(why))))
		store_checksums_by(st, "libdb's own", why);
	/* Every sync through store_sync, which keeps a failure. */
	(void)db_env_set_func_fsync(store_sync);
	st->sync_seen = store_sync_count();
	st->env->app_private = st;
	st->env->set_errcall(st->env, store_dbmsg);
	/* bdb_app_dispatch: logs written before bodies left the log hold
	 * records of the application's type, which recovery may meet. */
	if ((ret = st->env->set_cachesize(st->env, 0, STORE_CACHE_BYTES,
	    1)) != 0 ||
	    (ret = st->env->set_lg_bsize(st->env, STORE_LOG_BUFFER)) != 0 ||
	    (ret = st->env->set_lg_max(st->env, STORE_LOG_FILE)) != 0 ||
	    (ret = st->env->log_set_config(st->env, DB_LOG_AUTO_REMOVE,
	    0)) != 0 ||
	    (ret = st->env->set_app_dispatch(st->env,
	    bdb_app_dispatch)) != 0) {
		store_seterr(st, ret, "store %s: configure environment", dir);
		goto fail;
	}
	/* By the data directory's absolute name: BDB takes a relative one
	 * from the home. */
	if (st->group != NULL && group_configure(st) == -1)
		goto fail;
	if (st->home != NULL) {
		if (realpath(dir, abs) == NULL) {
			store_seterr(st, 0, "store %s: realpath: %s", dir,
			    strerror(errno));
			goto fail;
		}
		if ((ret = st->env->set_data_dir(st->env, abs)) != 0 ||
		    (ret = st->env->set_lg_dir(st->env, abs)) != 0) {
			store_seterr(st, ret, "store %s: configure "
			    "directories", dir);
			goto fail;
		}
	}
	/* DB_RECOVER at every start: after a crash it replays the log; after
	 * a clean stop it only rebuilds the regions.  The lock subsystem and
	 * DB_THREAD: the replication manager requires both (its threads
	 * share the environment, and a replica applies the master's
	 * transactions while the loop reads), and a hot backup's copy reads
	 * pages the loop writes (store_backup.c). */
	if ((ret = st->env->set_lk_detect(st->env, DB_LOCK_DEFAULT)) != 0 ||
	    (ret = st->env->set_lk_max_locks(st->env, store_max_locks)) != 0 ||
	    (ret = st->env->set_lk_max_objects(st->env,
	    store_max_locks)) != 0) {
		store_seterr(st, ret, "store %s: configure locking", dir);
		goto fail;
	}
	if ((ret = st->env->open(st->env, st->home != NULL ? st->home : dir,
	    DB_CREATE | DB_INIT_TXN | DB_INIT_LOG | DB_INIT_MPOOL |
	    DB_INIT_LOCK | DB_THREAD | DB_RECOVER |
	    (st->group != NULL ? DB_INIT_REP : 0), 0600)) != 0) {
		store_seterr(st, ret, "store %s: cannot open or recover the "
		    "environment", dir);
		goto fail;
	}
	/* A site of a group has a role before it opens a table. */
	if (st->group != NULL && group_start(st) == -1)
		goto fail;
	if (store_open_tables(st, err, errlen) == -1 ||
	    store_load_meta(st, err, errlen) == -1)
		return -1;
	if (summed && !st->client && store_checksums_prove(st) == -1)
		goto fail;
	/* A client writes no log record of its own to prove it by. */
	if (summed && st->client)
		store_checksums_by(st, "logsum", "installed, not proven on a "
		    "client");
	return 0;

 fail:
	snprintf(err, errlen, "%s", st->err);
	return -1;
}

static void
store_checksums_by(struct store *st, const char *by, const char *why)
{
	snprintf(st->sumby, sizeof(st->sumby), "log checksums by %s%s%s", by,
	    *why != '\0' ? ": " : "", why);
}

/*
 * logsum installed is not logsum in use: a libdb linked with internal
 * binding calls its own __ham_func4 without the PLT.  A forced
 * checkpoint writes a log record, which libdb sums; if that call did not
 * come to logsum, libdb's own function is the one in use (slower, not
 * wrong: the sums are the same).
 */
static int
store_checksums_prove(struct store *st)
{
	int ret;

	if ((ret = st->env->txn_checkpoint(st->env, 0, 0, DB_FORCE)) != 0) {
		store_seterr(st, ret, "store %s: checkpoint", st->dir);
		return -1;
	}
	if (logsum_reached())
		store_checksums_by(st, "logsum", "");
	else
		store_checksums_by(st, "libdb's own", "installed, but "
		    "libdb's calls do not reach logsum");
	return 0;
}

/* A checkpoint of the environment (txn_checkpoint, no flags). */
int
store_env_checkpoint(struct store *st)
{
	return st->env->txn_checkpoint(st->env, 0, 0, 0);
}

/* The buffer pool's pages and the dirty ones among them (memp_stat). */
int
store_env_cache(struct store *st, unsigned long *pages, unsigned long *dirty)
{
	DB_MPOOL_STAT *sp;
	int ret;

	if ((ret = st->env->memp_stat(st->env, &sp, NULL, 0)) != 0)
		return ret;
	*pages = sp->st_pages;
	*dirty = sp->st_page_dirty;
	free(sp);
	return 0;
}

/* memp_trickle to pct per cent of the pool clean. */
int
store_env_trickle(struct store *st, int pct, int *wrote)
{
	return st->env->memp_trickle(st->env, pct, wrote);
}

/* The log files recovery no longer needs, absolute paths, oldest first
 * (log_archive, DB_ARCH_ABS; *abs_paths NULL or one malloc'd list). */
int
store_env_log_archive(struct store *st, char ***abs_paths)
{
	return st->env->log_archive(st->env, abs_paths, DB_ARCH_ABS);
}

int
store_table_fd(struct store *st, int t, int *fd)
{
	if (st->db[t] == NULL || st->db[t]->fd(st->db[t], fd) != 0)
		return -1;
	return 0;
}

const char *
store_checksums(const struct store *st)
{
	return st->sumby;
}

static int
store_open_tables(struct store *st, char *err, size_t errlen)
{
	char file[64];
	int i, ret;

	for (i = 0; i < T_COUNT; i++) {
		snprintf(file, sizeof(file), "%s.db", store_tables[i]);
		if ((ret = db_create(&st->db[i], st->env, 0)) != 0) {
			store_seterr(st, ret, "store %s/%s: db_create",
			    st->dir, file);
			goto fail;
		}
		/* Hooks: pages large enough that a hook's head with a
		 * provider's usual headers (1-2 KiB) stays on its leaf page
		 * instead of taking an overflow page of its own; its body is
		 * mostly in bodies.  Not larger: deleting the oldest record
		 * of a page moves every record put after it, and a split
		 * logs the page (8 KiB against the 32 KiB of stores made
		 * before bodies went to the log: docs/PERFORMANCE).  Bodies:
		 * 32 KiB, since with 4 KiB heap pages a body of a few KiB
		 * took pages of its own and the master's CPU per hook rose
		 * (docs/PERFORMANCE).  Set at creation only; an existing
		 * file keeps its page size. */
		if ((i == T_HOOKS || i == T_QUARANTINE || i == T_BODIES) &&
		    (ret = st->db[i]->set_pagesize(st->db[i], i == T_BODIES ?
		    STORE_BODY_PAGESIZE : STORE_HOOK_PAGESIZE)) != 0) {
			store_seterr(st, ret, "store %s/%s: set_pagesize",
			    st->dir, file);
			goto fail;
		}
		if ((ret = st->db[i]->set_flags(st->db[i], DB_CHKSUM)) != 0) {
			store_seterr(st, ret, "store %s/%s: set_flags",
			    st->dir, file);
			goto fail;
		}
		if ((ret = st->db[i]->open(st->db[i], NULL, file, NULL,
		    i == T_BODIES ? DB_HEAP : DB_BTREE, st->client ?
		    DB_AUTO_COMMIT | DB_RDONLY : DB_CREATE | DB_AUTO_COMMIT,
		    0600)) != 0) {
			store_seterr(st, ret, "store %s/%s: damaged or "
			    "unreadable database file", st->dir, file);
			st->db[i]->close(st->db[i], 0);
			st->db[i] = NULL;
			goto fail;
		}
		if (store_probe(st, i, err, errlen) == -1)
			return -1;
	}
	return 0;

 fail:
	snprintf(err, errlen, "%s", st->err);
	return -1;
}

/* Read the first and last record of a table: walks the root-to-leaf paths
 * at both ends, so a damaged root or edge page refuses the start instead of
 * showing an empty table.  Not a full verify: a damaged page in the middle
 * is found by the read that meets it. */
static int
store_probe(struct store *st, int t, char *err, size_t errlen)
{
	static const uint32_t how[2] = { DB_FIRST, DB_LAST };
	DBC *c;
	DBT k, v;
	int i, ret;

	if ((ret = st->db[t]->cursor(st->db[t], NULL, &c, 0)) != 0)
		goto fail;
	for (i = 0; i < 2; i++) {
		memset(&k, 0, sizeof(k));
		memset(&v, 0, sizeof(v));
		v.flags = DB_DBT_PARTIAL;
		v.dlen = 0;
		ret = c->get(c, &k, &v, how[i]);
		if (ret == DB_NOTFOUND)
			break;
		if (ret != 0) {
			c->close(c);
			goto fail;
		}
	}
	if ((ret = c->close(c)) != 0)
		goto fail;
	return 0;

 fail:
	store_seterr(st, ret, "store %s/%s.db: damaged database file",
	    st->dir, store_tables[t]);
	snprintf(err, errlen, "%s", st->err);
	return -1;
}


/* excl: fail (DB_KEYEXIST) when key is there already. */
int
store_put(struct store *st, DB_TXN *txn, int t, const void *key, size_t klen,
    const void *val, size_t vlen, int excl)
{
	DBT k, v;
	int ret;

	memset(&k, 0, sizeof(k));
	memset(&v, 0, sizeof(v));
	k.data = (void *)key;
	k.size = klen;
	v.data = (void *)val;
	v.size = vlen;
	if ((ret = st->db[t]->put(st->db[t], txn, &k, &v,
	    excl ? DB_NOOVERWRITE : 0)) != 0) {
		store_terr(st, ret, t, "write", key, klen);
		return -1;
	}
	return 0;
}

/* The tables and the environment closed (with nosync, the tables
 * without their sync: after a failed one, a second would "succeed" on
 * pages the kernel may have dropped).  0, or -1 when one did not close
 * (logged). */
static int
store_env_close(struct store *st, int nosync)
{
	int i, ret, rc = 0;

	for (i = T_COUNT - 1; i >= 0; i--) {
		if (st->db[i] == NULL)
			continue;
		if ((ret = st->db[i]->close(st->db[i], nosync ? DB_NOSYNC :
		    0)) != 0) {
			log_warnx("store %s/%s.db: close: %s", st->dir,
			    store_tables[i], ret == -1 && store_sync_count() > 0 ?
			    strerror(store_sync_errno()) : db_strerror(ret));
			rc = -1;
		}
		st->db[i] = NULL;
	}
	if (st->env != NULL) {
		/* Its thread uses the environment: stopped first. */
		group_lag_stop(st);
		if ((ret = st->env->close(st->env, 0)) != 0) {
			log_warnx("store %s: close environment: %s", st->dir,
			    db_strerror(ret));
			rc = -1;
		}
		st->env = NULL;
	}
	return rc;
}

/* Everything the store holds closed, its region home removed: 0, or -1
 * when a table or the environment did not close (logged). */
static int
store_close_handles(struct store *st, int nosync)
{
	int rc;

	if (st->z.fd != -1)
		close(st->z.fd);
	st->z.fd = -1;
	if (st->trash.on) {
		pthread_mutex_lock(&st->trash.mu);
		st->trash.stop = 1;
		pthread_cond_broadcast(&st->trash.cv);
		pthread_mutex_unlock(&st->trash.mu);
		pthread_join(st->trash.thread, NULL);
		st->trash.on = 0;
	}
	trash_clear(st, 0);
	free(st->trash.files);
	st->trash.files = NULL;
	st->trash.n = st->trash.cap = 0;
	free(st->bbuf);
	st->bbuf = NULL;
	st->bbufcap = 0;
	rc = store_env_close(st, nosync);
	if (st->home != NULL) {
		bdb_region_remove(st->home, 1);
		free(st->home);
		st->home = NULL;
	}
	if (st->home_fd != -1)
		close(st->home_fd);
	st->home_fd = -1;
	return rc;
}

/* A close whose checkpoint or syncs failed is not a clean stop (-1): the
 * next open's recovery replays the log from the last good checkpoint,
 * every log file being kept. */
int
store_close(struct store *st)
{
	struct lane_resume *r;
	int rc = 0;

	if (st == NULL)
		return 0;
	if (st->batch_open)
		store_batch_abort(&st->batch);
	if (store_checkpoint(st) == -1) {
		log_warnx("%s", st->err);
		rc = -1;
	}
	if (store_close_handles(st, st->lost) == -1)
		rc = -1;
	group_free(st);
	keycount_free(st);
	if (store_sync_count() != st->sync_seen && rc == 0) {
		store_sync_check(st, "close");
		log_warnx("%s", st->err);
		rc = -1;
	}
	while ((r = st->resume) != NULL) {
		st->resume = r->next;
		free(r);
	}
	free(st->dir);
	free(st);
	return rc;
}

/*
 * Batches.
 */

struct store_batch *
store_batch_begin(struct store *st)
{
	struct store_batch *b = &st->batch;
	int ret;

	st->dberr[0] = '\0';
	if (st->batch_open) {
		store_seterr(st, 0, "store %s: a batch is already open",
		    st->dir);
		return NULL;
	}
	if (st->client || (st->repl != NULL &&
	    store_role(st) != STORE_ROLE_MASTER)) {
		store_seterr(st, 0, "store %s: this node is not the master "
		    "of its replication group: it writes nothing", st->dir);
		return NULL;
	}
	store_sync_check(st, "a sync outside a commit");
	if (st->lost) {
		store_seterr(st, 0, "nothing more is committed until a restart "
		    "runs recovery, after: %s", st->lost_why);
		return NULL;
	}
	memset(b, 0, sizeof(*b));
	b->st = st;
	b->counts = st->counts;
	keycount_begin(st);
	if ((ret = st->env->txn_begin(st->env, NULL, &b->txn, 0)) != 0) {
		store_seterr(st, ret, "store %s: txn_begin", st->dir);
		return NULL;
	}
	st->batch_open = 1;
	return b;
}

int
store_batch_commit(struct store_batch *b)
{
	return batch_commit(b, 1);
}

int
store_batch_commit_lazy(struct store_batch *b)
{
	return batch_commit(b, 0);
}

/* flush 0: no log flush (the commit record reaches the OS only). */
static int
batch_commit(struct store_batch *b, int flush)
{
	struct store *st = b->st;
	uint64_t seq = st->next_seq;
	int ret;

	if (b->failed) {
		store_batch_abort(b);
		return -1;
	}
	/* The next-seq marker and the counters, once per batch and only
	 * those that changed (a settle moves no seq, most batches leave the
	 * pen and the dead alone): a meta put is a B-tree write and a log
	 * record. */
	if ((st->next_seq != st->seq_saved && store_meta_put_u64(st, b->txn,
	    "next_seq", st->next_seq) == -1) ||
	    (b->counts.hooks != st->counts.hooks &&
	    store_meta_put_u64(st, b->txn, "hooks", b->counts.hooks) == -1) ||
	    (b->counts.rows != st->counts.rows &&
	    store_meta_put_u64(st, b->txn, "rows", b->counts.rows) == -1) ||
	    (b->counts.dead != st->counts.dead &&
	    store_meta_put_u64(st, b->txn, "dead", b->counts.dead) == -1) ||
	    (b->counts.qhooks != st->counts.qhooks &&
	    store_meta_put_u64(st, b->txn, "qhooks", b->counts.qhooks) == -1) ||
	    (b->counts.qbytes != st->counts.qbytes &&
	    store_meta_put_u64(st, b->txn, "qbytes", b->counts.qbytes) == -1) ||
	    ((b->counts.lane_members != st->counts.lane_members ||
	    st->lm_unsaved) && store_meta_put_u64(st, b->txn, "lane_members",
	    b->counts.lane_members) == -1) ||
	    (b->counts.ahooks != st->counts.ahooks &&
	    store_meta_put_u64(st, b->txn, "ahooks", b->counts.ahooks) == -1) ||
	    (b->counts.abytes != st->counts.abytes &&
	    store_meta_put_u64(st, b->txn, "abytes", b->counts.abytes) == -1)) {
		store_batch_abort(b);
		return -1;
	}
	/* On error commit aborts the transaction itself. */
	group_commit_begin(st);
	ret = b->txn->commit(b->txn, DB_TXN_WRITE_NOSYNC);
	b->txn = NULL;
	st->batch_open = 0;
	if (ret != 0) {
		store_seterr(st, ret, "store %s: commit", st->dir);
		return -1;
	}
	st->counts = b->counts;
	keycount_commit(st);
	st->seq_saved = seq;
	st->lm_unsaved = 0;
	commit_mark(st);
	/* Committed here, but without a quorum's acknowledgement: in
	 * doubt (store_in_doubt). */
	if (!group_commit_acked(st)) {
		if (flush)
			(void)store_log_flush(st);
		store_seterr(st, 0, "store %s: the commit was not "
		    "acknowledged by a quorum of the replication group "
		    "within replication.ack_timeout_ms: in doubt", st->dir);
		return -1;
	}
	return flush ? store_log_flush(st) : 0;
}

/*
 * Where the commit just made put its record: the log's last record (only
 * this thread writes to the log, and it wrote the commit last), for
 * store_log_flush.  A commit with DB_TXN_WRITE_NOSYNC returns 0 only
 * when its records are written out of Berkeley DB's buffer (to the OS);
 * when that write fails it aborts the transaction, and the records of
 * that one and of an aborted batch stay in the buffer, after this record.
 * Not in a replication group: a site that loses its mastership may have
 * its log rolled back under a remembered LSN, and log_flush panics on an
 * LSN past the log's end; a group's flush goes to the end (file 0).
 */
static void
commit_mark(struct store *st)
{
	DB_LOGC *lc;
	DB_LSN lsn;
	DBT rec;

	st->commit_file = 0;
	if (st->repl != NULL || st->env->log_cursor(st->env, &lc, 0) != 0)
		return;
	memset(&rec, 0, sizeof(rec));
	if (lc->get(lc, &lsn, &rec, DB_LAST) == 0) {
		st->commit_file = lsn.file;
		st->commit_off = lsn.offset;
	}
	(void)lc->close(lc, 0);
}

/*
 * Every commit so far made durable: the log written and synced up to the
 * last commit's record (commit_mark), or to the log's end when that is
 * not known.  Berkeley DB writes its buffer here only when that record is
 * still in it, so the records a refused commit left behind it are not
 * written: on a full disk that write would fail again, while the commits
 * before them are written already and need only the sync.  What can still
 * fail is the sync (Berkeley DB panics, and store_sync counts it), or the
 * write of a commit record that only partly left the buffer; either way
 * the store is lost and the daemon stops, since the kernel may have
 * dropped the pages it could not write (docs/DEPARTURES 12).
 */
int
store_log_flush(struct store *st)
{
	DB_LSN lsn;
	int ret;

	lsn.file = st->commit_file;
	lsn.offset = st->commit_off;
	if ((ret = st->env->log_flush(st->env, lsn.file != 0 ? &lsn :
	    NULL)) != 0) {
		store_seterr(st, ret, "store %s: log flush after commit (the "
		    "batch may not survive a crash; restart to run recovery)",
		    st->dir);
		store_set_lost(st);
		return -1;
	}
	bdb_log_zero_ahead(st);
	return 0;
}

uint64_t
store_next_seq(const struct store *st)
{
	return st->next_seq;
}

int
store_seq_bound(struct store *st, uint64_t *seq)
{
	char err[256];

	/* A client's tables change under it, as the master's commits are
	 * applied: meta's marker of now, which is ahead of every seq they
	 * hold. */
	if (st->client) {
		if (store_meta_u64(st, "next_seq", seq, 0, err,
		    sizeof(err)) == -1) {
			store_seterr(st, 0, "%s", err);
			return -1;
		}
		return 0;
	}
	*seq = st->next_seq;
	return 0;
}

void
store_batch_abort(struct store_batch *b)
{
	struct store *st = b->st;
	int ret;

	if (b->txn != NULL && (ret = b->txn->abort(b->txn)) != 0) {
		log_warnx("store %s: abort: %s", st->dir, db_strerror(ret));
		store_seterr(st, ret, "store %s: abort", st->dir);
	}
	b->txn = NULL;
	st->batch_open = 0;
}

/*
 * Reads.
 */

/* A read while a batch is open runs inside the batch's transaction: a read
 * of its own would wait for the batch's page locks, and with one thread
 * that wait never ends.  Such a read sees the batch's uncommitted puts. */
DB_TXN *
store_readtxn(struct store *st)
{
	return st->batch_open ? st->batch.txn : NULL;
}

int
store_counts(struct store *st, struct store_counts *c)
{
	struct store_counts n;
	char err[256];

	/* A client's tables change under it, as the master's commits are
	 * applied: its counts are meta's of now. */
	if (st->client) {
		memset(&n, 0, sizeof(n));
		if (store_meta_u64(st, "hooks", &n.hooks, 1, err,
		    sizeof(err)) == -1 ||
		    store_meta_u64(st, "rows", &n.rows, 1, err,
		    sizeof(err)) == -1 ||
		    store_meta_u64(st, "dead", &n.dead, 1, err,
		    sizeof(err)) == -1 ||
		    store_meta_u64(st, "qhooks", &n.qhooks, 1, err,
		    sizeof(err)) == -1 ||
		    store_meta_u64(st, "qbytes", &n.qbytes, 1, err,
		    sizeof(err)) == -1 ||
		    store_meta_u64(st, "lane_members", &n.lane_members, 1,
		    err, sizeof(err)) == -1 ||
		    store_meta_u64(st, "ahooks", &n.ahooks, 1, err,
		    sizeof(err)) == -1 ||
		    store_meta_u64(st, "abytes", &n.abytes, 1, err,
		    sizeof(err)) == -1)
			return -1;
		st->counts = n;
	}
	*c = st->counts;
	return 0;
}

int64_t
store_debug_count(struct store *st, const char *table)
{
	DBC *c;
	DBT k, v;
	int64_t n = 0;
	int t, ret;

	st->dberr[0] = '\0';
	if ((t = store_table_index(table)) == -1) {
		store_seterr(st, 0, "store: no table \"%s\"", table);
		return -1;
	}
	if ((ret = st->db[t]->cursor(st->db[t], store_readtxn(st), &c,
	    0)) != 0) {
		store_seterr(st, ret, "store %s/%s.db: cursor", st->dir,
		    table);
		return -1;
	}
	for (;;) {
		memset(&k, 0, sizeof(k));
		memset(&v, 0, sizeof(v));
		v.flags = DB_DBT_PARTIAL;
		if ((ret = c->get(c, &k, &v, DB_NEXT)) != 0)
			break;
		n++;
	}
	c->close(c);
	if (ret != DB_NOTFOUND) {
		store_seterr(st, ret, "store %s/%s.db: read", st->dir, table);
		return -1;
	}
	return n;
}

int
store_table_index(const char *name)
{
	int i;

	for (i = 0; i < T_COUNT; i++)
		if (strcmp(name, store_tables[i]) == 0)
			return i;
	return -1;
}

/*
 * Walks and small record helpers.
 */

void
store_walk_init(struct walk *w, struct store *st, DB_TXN *txn, int t,
    const void *from, size_t fromlen)
{
	w->st = st;
	w->t = t;
	w->txn = txn;
	w->c = NULL;
	w->vlen = 0;
	store_walk_seek(w, from, fromlen);
}

/* The next step lands on the first key >= key (the table's first with an
 * empty key). */
void
store_walk_seek(struct walk *w, const void *key, size_t klen)
{
	store_walk_pause(w);
	if (klen > STORE_KEY_MAX)
		klen = STORE_KEY_MAX;
	memmove(w->key, key, klen);
	w->klen = klen;
	w->at = 1;
}

void
store_walk_pause(struct walk *w)
{
	if (w->c != NULL) {
		w->c->close(w->c);
		w->c = NULL;
	}
}

/* 1 a record in key/val, 0 the end, -1 on a store error. */
int
store_walk_next(struct walk *w)
{
	struct store *st = w->st;
	uint32_t flag = DB_NEXT;
	DBT k, v;
	int ret;

	if (w->c == NULL) {
		if (store_cursor_open(st, w->txn != NULL ? w->txn :
		    store_readtxn(st), w->t, &w->c) == -1)
			return -1;
		flag = DB_SET_RANGE;
		if (!w->at) {
			/* The least key above the last one: it and a 0. */
			if (w->klen >= sizeof(w->key)) {
				store_seterr(st, 0, "store %s/%s.db: key too "
				    "long", st->dir, store_tables[w->t]);
				return -1;
			}
			w->key[w->klen++] = '\0';
		} else if (w->klen == 0)
			flag = DB_FIRST;
		w->at = 0;
	}
	memset(&k, 0, sizeof(k));
	memset(&v, 0, sizeof(v));
	k.data = w->key;
	k.size = w->klen;
	k.ulen = sizeof(w->key);
	k.flags = DB_DBT_USERMEM;
	v.data = w->val;
	v.ulen = sizeof(w->val);
	v.flags = DB_DBT_USERMEM;
	ret = w->c->get(w->c, &k, &v, flag);
	if (ret == DB_NOTFOUND)
		return 0;
	if (ret == DB_BUFFER_SMALL) {
		store_seterr(st, 0, "store %s/%s.db: damaged: a key or record "
		    "larger than any this build writes", st->dir,
		    store_tables[w->t]);
		return -1;
	}
	if (ret != 0) {
		store_seterr(st, ret, "store %s/%s.db: read", st->dir,
		    store_tables[w->t]);
		return -1;
	}
	w->klen = k.size;
	w->vlen = v.size;
	return 1;
}

/* Delete the record the walk is on (the last step found one and the walk
 * has not paused since): 0, or -1 on a store error.  The next step goes
 * on after it. */
int
store_walk_del(struct walk *w)
{
	int ret;

	if ((ret = w->c->del(w->c, 0)) != 0) {
		store_terr(w->st, ret, w->t, "delete", w->key, w->klen);
		return -1;
	}
	return 0;
}

/* Close the walk; rv is what the caller returns unless closing fails. */
int
store_walk_done(struct walk *w, int rv)
{
	return store_cursor_close(w->st, w->t, &w->c, rv);
}

/* Open *cp on table t in txn: 0, or -1 on a store error (*cp NULL). */
static int
store_cursor_open(struct store *st, DB_TXN *txn, int t, DBC **cp)
{
	int ret;

	if ((ret = st->db[t]->cursor(st->db[t], txn, cp, 0)) != 0) {
		*cp = NULL;
		store_seterr(st, ret, "store %s/%s.db: cursor", st->dir,
		    store_tables[t]);
		return -1;
	}
	return 0;
}

/* Close *cp (table t's) unless it is NULL, and make it NULL: rv, or -1
 * when the close failed and rv was not -1 already. */
static int
store_cursor_close(struct store *st, int t, DBC **cp, int rv)
{
	int ret;

	if (*cp != NULL) {
		ret = (*cp)->close(*cp);
		*cp = NULL;
		if (ret != 0 && rv != -1) {
			store_seterr(st, ret, "store %s/%s.db: cursor close",
			    st->dir, store_tables[t]);
			return -1;
		}
	}
	return rv;
}

/* Table t's record at key into v, which the caller set up: 1 found (*vlen
 * set), 0 none, -1 on a store error (a record larger than a DB_DBT_USERMEM
 * buffer is one). */
static int
store_tget_dbt(struct store *st, DB_TXN *txn, int t, const void *key,
    size_t klen, DBT *v, size_t *vlen)
{
	DBT k;
	int ret;

	memset(&k, 0, sizeof(k));
	k.data = (void *)key;
	k.size = klen;
	ret = st->db[t]->get(st->db[t], txn, &k, v, 0);
	if (ret == DB_NOTFOUND)
		return 0;
	if (ret == DB_BUFFER_SMALL)
		return rec_malformed(t, key, klen, "bad length", st->err,
		    sizeof(st->err));
	if (ret != 0) {
		store_terr(st, ret, t, "read", key, klen);
		return -1;
	}
	*vlen = v->size;
	return 1;
}

/* One record of table t: 1 found (vlen set), 0 none, -1 on a store error
 * (a record larger than valsz is one). */
int
store_tget(struct store *st, DB_TXN *txn, int t, const void *key, size_t klen,
    void *val, size_t valsz, size_t *vlen)
{
	DBT v;

	memset(&v, 0, sizeof(v));
	v.data = val;
	v.ulen = valsz;
	v.flags = DB_DBT_USERMEM;
	return store_tget_dbt(st, txn, t, key, klen, &v, vlen);
}

/* As store_tget, reading only the record's first len bytes (0: none, to
 * learn whether it is there); *vlen gets the bytes read. */
int
store_tget_head(struct store *st, DB_TXN *txn, int t, const void *key,
    size_t klen, void *buf, size_t len, size_t *vlen)
{
	DBT v;

	bdb_dbt_user(&v, buf, len, 1);
	return store_tget_dbt(st, txn, t, key, klen, &v, vlen);
}

/* As store_tget, into a buffer of the record's size that libdb allocates
 * (*val: the caller frees it). */
int
store_tget_alloc(struct store *st, DB_TXN *txn, int t, const void *key,
    size_t klen, void **val, size_t *vlen)
{
	DBT v;
	int ret;

	memset(&v, 0, sizeof(v));
	v.flags = DB_DBT_MALLOC;
	if ((ret = store_tget_dbt(st, txn, t, key, klen, &v, vlen)) == 1)
		*val = v.data;
	return ret;
}

/*
 * A cursor on one record found by its key: the read of its first bytes
 * and then a delete of it or a rewrite of some of them take one descent of
 * the tree, not two.  Every store_cur_get, whatever it returned, ends with
 * store_cur_done.
 */

/* Open the cursor in txn and put it on key, reading the record's first
 * len bytes into buf (*vlen: the bytes read): 1 found, 0 none, -1 on a
 * store error. */
int
store_cur_get(struct cur *c, struct store *st, DB_TXN *txn, int t,
    const void *key, size_t klen, void *buf, size_t len, size_t *vlen)
{
	DBT k, v;
	int ret;

	if (store_cur_open(c, st, txn, t) == -1)
		return -1;
	c->key = key;
	c->klen = klen;
	bdb_dbt_user(&k, (void *)key, klen, 0);
	bdb_dbt_user(&v, buf, len, 1);
	ret = c->c->get(c->c, &k, &v, DB_SET);
	if (ret == DB_NOTFOUND)
		return 0;
	if (ret != 0) {
		store_terr(c->st, ret, c->t, "read", c->key, c->klen);
		return -1;
	}
	*vlen = v.size;
	return 1;
}

/* Open the cursor in txn, on no record yet (store_cur_step puts it on
 * one): 0, or -1 on a store error. */
int
store_cur_open(struct cur *c, struct store *st, DB_TXN *txn, int t)
{
	c->st = st;
	c->t = t;
	c->key = NULL;
	c->klen = 0;
	return store_cursor_open(st, txn, t, &c->c);
}

/* Move the cursor (how: STORE_CUR_RANGE to the first key >= the keysz
 * bytes at key, STORE_CUR_NEXT to the next record, STORE_CUR_AGAIN not
 * at all, to read the record again), reading its key into key (at most
 * keysz bytes, *klen: its size) and its first len bytes into buf (*vlen:
 * the bytes read): 1 found, 0 none (after RANGE or NEXT), -1 on a store
 * error (a key over keysz bytes is one). */
int
store_cur_step(struct cur *c, int how, void *key, size_t keysz,
    size_t *klen, void *buf, size_t len, size_t *vlen)
{
	DBT k, v;
	int ret;

	bdb_dbt_user(&k, key, keysz, 0);
	bdb_dbt_user(&v, buf, len, 1);
	ret = c->c->get(c->c, &k, &v, how == STORE_CUR_RANGE ? DB_SET_RANGE :
	    how == STORE_CUR_NEXT ? DB_NEXT : DB_CURRENT);
	if (ret == DB_NOTFOUND && how != STORE_CUR_AGAIN)
		return 0;
	if (ret != 0) {
		store_seterr(c->st, ret, "store %s/%s.db: read", c->st->dir,
		    store_tables[c->t]);
		return -1;
	}
	c->key = key;
	c->klen = *klen = k.size;
	*vlen = v.size;
	return 1;
}

/* Delete the record the cursor is on: 0, or -1 on a store error. */
int
store_cur_del(struct cur *c)
{
	int ret;

	if ((ret = c->c->del(c->c, 0)) != 0) {
		store_terr(c->st, ret, c->t, "delete", c->key, c->klen);
		return -1;
	}
	return 0;
}

/* Overwrite len bytes at off of the record the cursor is on (a partial
 * put: the rest of the record is not read or written): 0, or -1. */
int
store_cur_patch(struct cur *c, size_t off, const void *val, size_t len)
{
	DBT k, v;
	int ret;

	bdb_dbt_user(&k, (void *)c->key, c->klen, 0);
	memset(&v, 0, sizeof(v));
	v.data = (void *)val;
	v.size = len;
	v.doff = off;
	v.dlen = len;
	v.flags = DB_DBT_PARTIAL;
	if ((ret = c->c->put(c->c, &k, &v, DB_CURRENT)) != 0) {
		store_terr(c->st, ret, c->t, "write", c->key, c->klen);
		return -1;
	}
	return 0;
}

/* Close the cursor; rv is what the caller returns unless closing fails. */
int
store_cur_done(struct cur *c, int rv)
{
	return store_cursor_close(c->st, c->t, &c->c, rv);
}

/* The error of a read, write or delete of key in table t. */
static void
store_terr(struct store *st, int ret, int t, const char *what,
    const void *key, size_t klen)
{
	char desc[256];

	rec_key_describe(t, key, klen, desc, sizeof(desc));
	store_seterr(st, ret, "store %s/%s.db: %s %s", st->dir,
	    store_tables[t], what, desc);
}

/* The error of key not in table t, where what (a read, a delete) needed
 * it. */
void
store_tmissing(struct store *st, int t, const char *what, const void *key,
    size_t klen)
{
	store_terr(st, DB_NOTFOUND, t, what, key, klen);
}

/* 1 deleted, 0 was not there, -1 on a store error. */
int
store_tdel(struct store *st, DB_TXN *txn, int t, const void *key, size_t klen)
{
	DBT k;
	int ret;

	memset(&k, 0, sizeof(k));
	k.data = (void *)key;
	k.size = klen;
	ret = st->db[t]->del(st->db[t], txn, &k, 0);
	if (ret == DB_NOTFOUND)
		return 0;
	if (ret != 0) {
		store_terr(st, ret, t, "delete", key, klen);
		return -1;
	}
	return 1;
}

int
store_batch_ok(struct store_batch *b)
{
	b->st->dberr[0] = '\0';
	if (b->failed) {
		store_seterr(b->st, 0, "store %s: batch already failed",
		    b->st->dir);
		return 0;
	}
	return 1;
}
