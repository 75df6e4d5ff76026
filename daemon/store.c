/*
 * store.c: the Berkeley DB store; see store.h.
 *
 * Owns the node's only durable state: one transactional environment whose
 * log and tables are in node.data_dir (its region files, which nothing
 * needs after the process, on a tmpfs: region_home), opened with
 * DB_RECOVER at every start, and one B-tree file per table ("<table>.db"),
 * so that damage is reported with the file that holds it and a hot table
 * (rows, due) never shares pages with hook bodies.  Pages carry checksums
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
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <fcntl.h>

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
#include "logsum.h"
#include "store.h"
#include "store_int.h"

const char *const store_tables[T_COUNT] = {
	"meta", "hooks", "rows", "due", "lanes", "members", "marks", "dead",
	"dedupe", "dedupe_exp", "replays", "quarantine",
};

#define STORE_CACHE_BYTES	(32u * 1024 * 1024)
#define STORE_LOG_BUFFER	(4u * 1024 * 1024)
#define STORE_LIST_PEEK		4096	/* bytes of a hook read to list it */
#define STORE_HOOK_PAGESIZE	8192	/* hooks, quarantine: see open */
#define STORE_BODY_RETAIN_FILES	32	/* log files (1 GiB) a body may sit
					 * behind the current one before it
					 * moves into its record */
#define HOOK_ROWS_OFF		30	/* u32 live rows: after the version,
					 * head length, flags, id and
					 * received_at */

/* The callers of store_due_tenants and store_marked_tenants. */
struct tenants_ctx {
	struct store	*st;
	int		(*due_cb)(const char *, uint64_t, void *);
	int		(*cb)(const char *, void *);
	void		*arg;
};

/* store_due_scan's caller, behind store_due_scan_keys. */
struct due_scan_ctx {
	int	(*cb)(const unsigned char *, const struct store_row *, void *);
	void	*arg;
};

/* A listing's caller, behind store_list_heads. */
struct list_ctx {
	int	(*hook_cb)(const struct store_hook_info *, void *);
	int	(*quarantine_cb)(const struct store_quarantine_info *, void *);
	void	*arg;
};

static void	 store_set_lost(struct store *);
static void	 store_dbmsg(const DB_ENV *, const char *, const char *);
static int	 store_open_tables(struct store *, char *, size_t);
static int	 store_load_meta(struct store *, char *, size_t);
static int	 store_init_meta(struct store *, char *, size_t);
static int	 store_probe(struct store *, int, char *, size_t);
static int	 store_last_seq(struct store *, int, uint64_t *);
static int	 store_meta_get(struct store *, DB_TXN *, const char *,
		    unsigned char *, size_t, size_t *);
static int	 store_meta_put(struct store *, DB_TXN *, const char *,
		    const void *, size_t);
static int	 store_meta_put_u64(struct store *, DB_TXN *, const char *,
		    uint64_t);
static int	 store_meta_u64(struct store *, const char *, uint64_t *, int,
		    char *, size_t);
static int	 store_put(struct store *, DB_TXN *, int, const void *,
		    size_t, const void *, size_t, uint32_t);
static int	 store_close_handles(struct store *, int);
static DB_TXN	*store_readtxn(struct store *);
static int	 store_put_dedupe(struct store *, DB_TXN *,
		    const struct store_hook *);
static int	 store_list_heads(struct store *, int, const char *, uint64_t,
		    uint64_t, int (*)(uint64_t, const struct store_hook_rec *,
		    void *), void *);
static int	 list_hook_fn(uint64_t, const struct store_hook_rec *, void *);
static int	 list_quarantine_fn(uint64_t, const struct store_hook_rec *,
		    void *);
static int	 store_head_get(struct store *, DB_TXN *, int, uint64_t,
		    struct store_hook_rec *);
static int	 store_load_lane_members(struct store *, char *, size_t);
static void	 walk_init(struct walk *, struct store *, DB_TXN *, int,
		    const void *, size_t);
static int	 walk_next(struct walk *);
static void	 walk_pause(struct walk *);
static void	 walk_seek(struct walk *, const void *, size_t);
static int	 walk_done(struct walk *, int);
static int	 tget(struct store *, DB_TXN *, int, const void *, size_t,
		    void *, size_t, size_t *);
static int	 tdel(struct store *, DB_TXN *, int, const void *, size_t);
static int	 row_read(struct store *, DB_TXN *, const unsigned char *,
		    struct store_row *);
static int	 row_write(struct store *, DB_TXN *, const unsigned char *,
		    const struct store_row *);
static int	 row_pending(const struct store_row *);
static int	 due_put(struct store *, DB_TXN *, const char *, uint64_t,
		    const unsigned char *);
static int	 due_del(struct store *, DB_TXN *, const char *, uint64_t,
		    const unsigned char *);
static int	 due_parse(const unsigned char *, size_t, size_t *,
		    uint64_t *, const unsigned char **);
static int	 due_oldest_fn(const char *, uint64_t, void *);
static int	 store_tenants(struct store *, int, int (*)(const char *,
		    const unsigned char *, size_t, void *), void *);
static int	 due_tenants_fn(const char *, const unsigned char *, size_t,
		    void *);
static int	 marked_tenants_fn(const char *, const unsigned char *, size_t,
		    void *);
static int	 batch_commit(struct store_batch *, int);
static int	 due_scan_fn(const unsigned char *, size_t, uint64_t,
		    const unsigned char *, const struct store_row *, void *);
static size_t	 row_lane(const struct store_row *, unsigned char *, size_t);
static int	 lane_head_get(struct store *, DB_TXN *, const unsigned char *,
		    size_t, unsigned char *);
static int	 lane_is_head(struct store_batch *, const unsigned char *,
		    const struct store_row *);
static int	 lane_first_member(struct store *, DB_TXN *,
		    const unsigned char *, size_t, unsigned char *, size_t *,
		    unsigned char *);
static int	 lane_leave(struct store_batch *, const unsigned char *,
		    const struct store_row *);
static int	 lane_promote(struct store_batch *, const unsigned char *,
		    size_t);
static int	 lane_release(struct store_batch *, const unsigned char *,
		    const struct store_row *);
static int	 hook_unref(struct store_batch *, uint64_t);
static int	 row_unindex(struct store_batch *, const unsigned char *,
		    const struct store_row *);
static int	 row_gone(struct store_batch *, const unsigned char *,
		    const struct store_row *, int, int);
static int	 batch_ok(struct store_batch *);
static int	 pending_page(struct store *, const char *, uint64_t *,
		    uint64_t, uint64_t, int *, int (*)(const unsigned char *,
		    const struct store_row *, void *), void *);
static int	 hook_present(struct store *, DB_TXN *, uint64_t);
static struct lane_resume *resume_find(struct store *,
		    const unsigned char *, size_t);
static void	 resume_set(struct store *, const unsigned char *, size_t,
		    const unsigned char *, size_t);

/* store_sync's: the call, the failures in the process, the first one's. */
static int	(*sync_func)(int) = fdatasync;
static unsigned long	 sync_failures;
static int		 sync_errno;
static char		 sync_path[PATH_MAX];

/*
 * Errors.
 */

static void
store_dbmsg(const DB_ENV *env, const char *pfx, const char *msg)
{
	struct store *st = env->app_private;

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
	n = strlen(st->err);
	/* -1 is store_sync's failure, passed up as BDB got it. */
	if (ret != 0 && n < sizeof(st->err))
		snprintf(st->err + n, sizeof(st->err) - n, ": %s",
		    ret == -1 && sync_failures > 0 ? strerror(sync_errno) :
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
	st->dberr[0] = '\0';
}

/* Mark the store lost, keeping the first cause (st->err). */
static void
store_set_lost(struct store *st)
{
	if (!st->lost)
		snprintf(st->lost_why, sizeof(st->lost_why), "%s", st->err);
	st->lost = 1;
}

int
store_lost(struct store *st)
{
	sync_check(st, "a sync outside a commit");
	return st->lost;
}

/*
 * Every sync Berkeley DB makes comes here (db_env_set_func_fsync, set at
 * each open): the group commit's log flush, and those outside it -- the
 * checkpoint's syncs of the tables and of its own record, the log flush
 * that a page write must wait for (memp_trickle's cleaning, an eviction in
 * a put), the syncs of a close.  A failure of any is fatal to the store
 * (sync_check): Linux may drop the pages whose write-back failed and
 * reports that once, so the next sync of the file "succeeds" (BDB's own
 * call tries again at once on EIO, though it still returns the first
 * error), and a checkpoint after it would let go of the log that held the
 * only good copy (docs/DEPARTURES 12).  Not retried but on EINTR.  It
 * returns -1 as fsync does (the hook's documented interface), which BDB
 * passes up as its error and logs as "Unknown error -1"; the line before
 * names the file and the errno.  The hook is the process's, not a
 * store's: a failure counts against every store open in the process (the
 * master has one).  The store's own descriptors never sync
 * (store_writeback, log_zero_ahead), and the removal of log files needs
 * none (store_log_prune).
 */
void
store_set_sync_func(int (*fn)(int))
{
	sync_func = fn != NULL ? fn : fdatasync;
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
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	if ((n = readlink(link, path, sizeof(path) - 1)) == -1)
		snprintf(path, sizeof(path), "fd %d", fd);
	else
		path[n] = '\0';
	log_warnx("store: fdatasync of %s failed: %s", path, strerror(e));
	if (sync_failures++ == 0) {
		sync_errno = e;
		snprintf(sync_path, sizeof(sync_path), "%s", path);
	}
	errno = e;
	return -1;
}

/* After a failed sync the store is lost: what: in what the failure was
 * found, for the error. */
void
sync_check(struct store *st, const char *what)
{
	if (st->lost || sync_failures == st->sync_seen)
		return;
	store_seterr(st, 0, "store %s: %s: fdatasync of %s failed: %s; the "
	    "kernel may have dropped the pages it could not write: restart "
	    "to run recovery", st->dir, what, sync_path, strerror(sync_errno));
	store_set_lost(st);
}

const char *
store_strerror(struct store *st)
{
	return st->err[0] != '\0' ? st->err : "no error";
}

/*
 * Open and close.
 */

struct store *
store_open(const char *dir, char *err, size_t errlen)
{
	struct store *st;
	struct stat sb;
	char abs[PATH_MAX];
	int ret;

	if (mkdir(dir, 0700) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "store %s: mkdir: %s", dir,
		    strerror(errno));
		return NULL;
	}
	if (stat(dir, &sb) == -1 || !S_ISDIR(sb.st_mode)) {
		snprintf(err, errlen, "store %s: not a directory", dir);
		return NULL;
	}
	if ((st = calloc(1, sizeof(*st))) == NULL ||
	    (st->dir = strdup(dir)) == NULL) {
		free(st);
		snprintf(err, errlen, "store %s: out of memory", dir);
		return NULL;
	}
	pthread_mutex_init(&st->trash_mu, NULL);
	pthread_cond_init(&st->trash_cv, NULL);
	if ((ret = db_env_create(&st->env, 0)) != 0) {
		snprintf(err, errlen, "store %s: db_env_create: %s", dir,
		    db_strerror(ret));
		free(st->dir);
		free(st);
		return NULL;
	}
	/* libdb's checksums by logsum, if this program exports __ham_func4
	 * (logsum.h; ankusad says which at its start). */
	(void)logsum_install(st->err, sizeof(st->err));
	st->err[0] = '\0';
	/* Every sync through store_sync, which keeps a failure. */
	(void)db_env_set_func_fsync(store_sync);
	st->sync_seen = sync_failures;
	st->opening = 1;
	st->ra_fd = -1;
	st->z_fd = -1;
	st->home_fd = -1;
	st->body_retain = STORE_BODY_RETAIN_FILES;
	st->env->app_private = st;
	st->env->set_errcall(st->env, store_dbmsg);
	if ((ret = st->env->set_cachesize(st->env, 0, STORE_CACHE_BYTES,
	    1)) != 0 ||
	    (ret = st->env->set_lg_bsize(st->env, STORE_LOG_BUFFER)) != 0 ||
	    (ret = st->env->set_lg_max(st->env, STORE_LOG_FILE)) != 0 ||
	    (ret = st->env->log_set_config(st->env, DB_LOG_AUTO_REMOVE,
	    0)) != 0 ||
	    (ret = st->env->set_app_dispatch(st->env,
	    store_app_dispatch)) != 0) {
		store_seterr(st, ret, "store %s: configure environment", dir);
		goto fail;
	}
	/* The region files on a tmpfs (region_home), the tables and the
	 * log in the data directory, by its absolute name: BDB takes a
	 * relative one from the home. */
	if (realpath(dir, abs) != NULL &&
	    (st->home = region_home(&sb, &st->home_fd)) != NULL) {
		if ((ret = st->env->set_data_dir(st->env, abs)) != 0 ||
		    (ret = st->env->set_lg_dir(st->env, abs)) != 0) {
			store_seterr(st, ret, "store %s: configure "
			    "directories", dir);
			goto fail;
		}
		region_remove(dir, 0);	/* an older build's */
	}
	/* DB_RECOVER at every start: after a crash it replays the log; after
	 * a clean stop it only rebuilds the regions.  No DB_INIT_LOCK: the
	 * master's one thread runs one transaction at a time, so there is
	 * no one for a page lock to keep out, and taking them cost a tenth
	 * of the master's CPU per delivered hook (docs/DEPARTURES 15). */
	if ((ret = st->env->open(st->env, st->home != NULL ? st->home : dir,
	    DB_CREATE | DB_INIT_TXN | DB_INIT_LOG | DB_INIT_MPOOL | DB_RECOVER,
	    0600)) != 0) {
		store_seterr(st, ret, "store %s: cannot open or recover the "
		    "environment", dir);
		goto fail;
	}
	/* No mutexes either (DB_NOLOCKING), for the same reason: taking
	 * them was 9 % of the master's CPU.  Set after the open, so that
	 * BDB's own check of its mutexes at the open still runs
	 * (docs/DEPARTURES 19). */
	if ((ret = st->env->set_flags(st->env, DB_NOLOCKING, 1)) != 0) {
		store_seterr(st, ret, "store %s: set_flags", dir);
		goto fail;
	}
	if (store_open_tables(st, err, errlen) == -1 ||
	    store_load_meta(st, err, errlen) == -1)
		goto failed;
	trash_clear(st, 1);
	if ((ret = pthread_create(&st->trasher, NULL, trash_main, st)) != 0) {
		snprintf(err, errlen, "store %s: cannot start the thread that "
		    "removes pruned log files: %s", dir, strerror(ret));
		goto failed;
	}
	st->trasher_on = 1;
	st->opening = 0;
	return st;

 fail:
	snprintf(err, errlen, "%s", st->err);
 failed:
	(void)store_close_handles(st, 0);
	free(st->dir);
	free(st);
	return NULL;
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
		 * mostly in the log.  Not larger: deleting the oldest record
		 * of a page moves every record put after it, and a split
		 * logs the page (8 KiB against the 32 KiB of stores made
		 * before bodies went to the log: docs/PERFORMANCE).  Set at
		 * creation only; an existing file keeps its page size. */
		if ((i == T_HOOKS || i == T_QUARANTINE) &&
		    (ret = st->db[i]->set_pagesize(st->db[i],
		    STORE_HOOK_PAGESIZE)) != 0) {
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
		    DB_BTREE, DB_CREATE | DB_AUTO_COMMIT, 0600)) != 0) {
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

static int
store_load_meta(struct store *st, char *err, size_t errlen)
{
	unsigned char buf[64];
	uint64_t last;
	uint32_t schema;
	size_t len;
	int ret;

	ret = store_meta_get(st, NULL, "schema", buf, sizeof(buf), &len);
	if (ret == DB_NOTFOUND) {
		DBC *c;
		DBT k, v;

		/* No schema: a new store, but only if meta is empty. */
		if ((ret = st->db[T_META]->cursor(st->db[T_META], NULL, &c,
		    0)) != 0) {
			store_seterr(st, ret, "store %s/meta.db: cursor",
			    st->dir);
			goto fail;
		}
		memset(&k, 0, sizeof(k));
		memset(&v, 0, sizeof(v));
		ret = c->get(c, &k, &v, DB_FIRST);
		c->close(c);
		if (ret == 0) {
			store_seterr(st, 0, "store %s/meta.db: damaged: no "
			    "schema record", st->dir);
			goto fail;
		}
		if (ret != DB_NOTFOUND) {
			store_seterr(st, ret, "store %s/meta.db: damaged "
			    "database file", st->dir);
			goto fail;
		}
		return store_init_meta(st, err, errlen);
	}
	if (ret != 0)
		goto fail;
	if (len != 5) {
		store_seterr(st, 0, "store %s/meta.db: damaged: meta record "
		    "\"schema\" has %zu bytes", st->dir, len);
		goto fail;
	}
	schema = get_u32(buf + 1);
	if (schema > STORE_SCHEMA_VERSION) {
		store_seterr(st, 0, "store %s/meta.db: schema version %u is "
		    "newer than this build (%u); run a newer ankusad", st->dir,
		    schema, STORE_SCHEMA_VERSION);
		goto fail;
	}
	if (schema < 1) {
		store_seterr(st, 0, "store %s/meta.db: damaged: schema "
		    "version %u", st->dir, schema);
		goto fail;
	}
	/* Schema migrations from older versions would run here. */

	if (store_meta_u64(st, "next_seq", &st->next_seq, 0, err,
	    errlen) == -1 ||
	    store_meta_u64(st, "hooks", &st->counts.hooks, 0, err, errlen) ==
	    -1 ||
	    store_meta_u64(st, "rows", &st->counts.rows, 0, err, errlen) == -1 ||
	    store_meta_u64(st, "dead", &st->counts.dead, 0, err, errlen) == -1 ||
	    store_meta_u64(st, "qhooks", &st->counts.qhooks, 1, err,
	    errlen) == -1 ||
	    store_meta_u64(st, "qbytes", &st->counts.qbytes, 1, err,
	    errlen) == -1 ||
	    store_load_lane_members(st, err, errlen) == -1)
		return -1;
	st->seq_saved = st->next_seq;
	ret = store_meta_get(st, NULL, "store_id", buf, sizeof(buf), &len);
	if (ret == 0 && len != 17) {
		store_seterr(st, 0, "store %s/meta.db: damaged: meta record "
		    "\"store_id\" has %zu bytes", st->dir, len);
		goto fail;
	}
	if (ret == DB_NOTFOUND)
		store_seterr(st, 0, "store %s/meta.db: damaged: no store_id "
		    "record", st->dir);
	if (ret != 0)
		goto fail;
	memcpy(st->id, buf + 1, sizeof(st->id));

	/* A seq in a table at or past next_seq would be reused: refuse. */
	if (store_last_seq(st, T_HOOKS, &last) == -1)
		goto fail;
	if (last != 0 && last >= st->next_seq) {
		store_seterr(st, 0, "store %s/meta.db: damaged: next_seq "
		    "%" PRIu64 " but hooks.db holds seq %" PRIu64, st->dir,
		    st->next_seq, last);
		goto fail;
	}
	if (store_last_seq(st, T_QUARANTINE, &last) == -1)
		goto fail;
	if (last != 0 && last >= st->next_seq) {
		store_seterr(st, 0, "store %s/meta.db: damaged: next_seq "
		    "%" PRIu64 " but quarantine.db holds seq %" PRIu64,
		    st->dir, st->next_seq, last);
		goto fail;
	}
	return 0;

 fail:
	snprintf(err, errlen, "%s", st->err);
	return -1;
}

static int
store_init_meta(struct store *st, char *err, size_t errlen)
{
	unsigned char v[17];
	uint64_t last;
	DB_TXN *txn;
	int ret;

	if (store_last_seq(st, T_HOOKS, &last) == -1)
		goto fail;
	if (last != 0) {
		store_seterr(st, 0, "store %s/meta.db: damaged: empty, but "
		    "hooks.db holds hooks", st->dir);
		goto fail;
	}
	ids_random(st->id, sizeof(st->id));
	st->next_seq = st->seq_saved = 1;
	memset(&st->counts, 0, sizeof(st->counts));
	if ((ret = st->env->txn_begin(st->env, NULL, &txn, 0)) != 0) {
		store_seterr(st, ret, "store %s: txn_begin", st->dir);
		goto fail;
	}
	v[0] = STORE_REC_VERSION;
	put_u32(v + 1, STORE_SCHEMA_VERSION);
	if (store_meta_put(st, txn, "schema", v, 5) == -1)
		goto abort;
	v[0] = STORE_REC_VERSION;
	memcpy(v + 1, st->id, sizeof(st->id));
	if (store_meta_put(st, txn, "store_id", v, 17) == -1 ||
	    store_meta_put_u64(st, txn, "next_seq", 1) == -1 ||
	    store_meta_put_u64(st, txn, "hooks", 0) == -1 ||
	    store_meta_put_u64(st, txn, "rows", 0) == -1 ||
	    store_meta_put_u64(st, txn, "dead", 0) == -1 ||
	    store_meta_put_u64(st, txn, "qhooks", 0) == -1 ||
	    store_meta_put_u64(st, txn, "qbytes", 0) == -1 ||
	    store_meta_put_u64(st, txn, "lane_members", 0) == -1)
		goto abort;
	if ((ret = txn->commit(txn, 0)) != 0) {
		store_seterr(st, ret, "store %s/meta.db: create", st->dir);
		goto fail;
	}
	log_info("store %s: created", st->dir);
	return 0;

 abort:
	txn->abort(txn);
 fail:
	snprintf(err, errlen, "%s", st->err);
	return -1;
}

/* The highest seq key of hooks or quarantine, 0 when empty. */
static int
store_last_seq(struct store *st, int t, uint64_t *seq)
{
	unsigned char kb[8];
	DBC *c;
	DBT k, v;
	int ret;

	*seq = 0;
	if ((ret = st->db[t]->cursor(st->db[t], NULL, &c, 0)) != 0)
		goto fail;
	memset(&k, 0, sizeof(k));
	memset(&v, 0, sizeof(v));
	k.data = kb;
	k.ulen = sizeof(kb);
	k.flags = DB_DBT_USERMEM;
	v.flags = DB_DBT_PARTIAL;
	ret = c->get(c, &k, &v, DB_LAST);
	c->close(c);
	if (ret == DB_NOTFOUND)
		return 0;
	if (ret != 0)
		goto fail;
	if (k.size != 8) {
		store_seterr(st, 0, "store %s/%s.db: damaged: key of %u bytes",
		    st->dir, store_tables[t], k.size);
		return -1;
	}
	*seq = get_u64(kb);
	return 0;

 fail:
	store_seterr(st, ret, "store %s/%s.db: damaged database file",
	    st->dir, store_tables[t]);
	return -1;
}

static int
store_meta_get(struct store *st, DB_TXN *txn, const char *name,
    unsigned char *buf, size_t bufsz, size_t *lenp)
{
	DBT k, v;
	int ret;

	memset(&k, 0, sizeof(k));
	memset(&v, 0, sizeof(v));
	k.data = (void *)name;
	k.size = strlen(name);
	v.data = buf;
	v.ulen = bufsz;
	v.flags = DB_DBT_USERMEM;
	ret = st->db[T_META]->get(st->db[T_META], txn, &k, &v, 0);
	if (ret == DB_NOTFOUND)
		return ret;
	if (ret == DB_BUFFER_SMALL) {
		store_seterr(st, 0, "store %s/meta.db: damaged: meta record "
		    "\"%s\" has %u bytes", st->dir, name, v.size);
		return -1;
	}
	if (ret != 0) {
		store_seterr(st, ret, "store %s/meta.db: read \"%s\"",
		    st->dir, name);
		return -1;
	}
	if (v.size < 1 || buf[0] != STORE_REC_VERSION) {
		store_seterr(st, 0, "store %s/meta.db: meta record \"%s\" has "
		    "format version %u, this build reads %u", st->dir, name,
		    v.size < 1 ? 0 : buf[0], STORE_REC_VERSION);
		return -1;
	}
	*lenp = v.size;
	return 0;
}

/*
 * A u64 meta record.  0 with *val; 1 when it is missing and missing_ok (a
 * counter added after schema 1 shipped: a store from before it has no
 * record; a missing "hooks" is damage, missing_ok 0); -1 on damage.
 */
static int
store_meta_u64(struct store *st, const char *name, uint64_t *val,
    int missing_ok, char *err, size_t errlen)
{
	unsigned char buf[16];
	size_t len;
	int ret;

	ret = store_meta_get(st, NULL, name, buf, sizeof(buf), &len);
	if (ret == 0 && len == 9) {
		*val = get_u64(buf + 1);
		return 0;
	}
	if (ret == DB_NOTFOUND && missing_ok) {
		*val = 0;
		return 1;
	}
	if (ret == DB_NOTFOUND)
		store_seterr(st, 0, "store %s/meta.db: damaged: no \"%s\" "
		    "record", st->dir, name);
	else if (ret == 0)
		store_seterr(st, 0, "store %s/meta.db: damaged: meta record "
		    "\"%s\" has %zu bytes", st->dir, name, len);
	snprintf(err, errlen, "%s", st->err);
	return -1;
}

/* meta "lane_members"; a store from before it has none: count members
 * once (a walk at open) and write it with the next commit. */
static int
store_load_lane_members(struct store *st, char *err, size_t errlen)
{
	int64_t n;
	int ret;

	ret = store_meta_u64(st, "lane_members", &st->counts.lane_members, 1,
	    err, errlen);
	if (ret != 1)
		return ret;
	if ((n = store_debug_count(st, "members")) < 0) {
		snprintf(err, errlen, "%s", st->err);
		return -1;
	}
	st->counts.lane_members = n;
	st->lm_unsaved = 1;
	return 0;
}

static int
store_meta_put(struct store *st, DB_TXN *txn, const char *name,
    const void *val, size_t len)
{
	return store_put(st, txn, T_META, name, strlen(name), val, len, 0);
}

static int
store_meta_put_u64(struct store *st, DB_TXN *txn, const char *name,
    uint64_t n)
{
	unsigned char v[9];

	v[0] = STORE_REC_VERSION;
	put_u64(v + 1, n);
	return store_meta_put(st, txn, name, v, sizeof(v));
}

static int
store_put(struct store *st, DB_TXN *txn, int t, const void *key, size_t klen,
    const void *val, size_t vlen, uint32_t flags)
{
	char desc[256];
	DBT k, v;
	int ret;

	memset(&k, 0, sizeof(k));
	memset(&v, 0, sizeof(v));
	k.data = (void *)key;
	k.size = klen;
	v.data = (void *)val;
	v.size = vlen;
	if ((ret = st->db[t]->put(st->db[t], txn, &k, &v, flags)) != 0) {
		key_describe(t, key, klen, desc, sizeof(desc));
		store_seterr(st, ret, "store %s/%s.db: write %s", st->dir,
		    store_tables[t], desc);
		return -1;
	}
	return 0;
}

/* 0, or -1 when a table or the environment did not close (logged).  With
 * nosync the tables are closed without their sync: after a failed one, a
 * second would "succeed" on pages the kernel may have dropped. */
static int
store_close_handles(struct store *st, int nosync)
{
	int i, ret, rc = 0;

	ra_close(st);
	free(st->ra_buf);
	st->ra_buf = NULL;
	if (st->z_fd != -1)
		close(st->z_fd);
	st->z_fd = -1;
	if (st->trasher_on) {
		pthread_mutex_lock(&st->trash_mu);
		st->trash_stop = 1;
		pthread_cond_broadcast(&st->trash_cv);
		pthread_mutex_unlock(&st->trash_mu);
		pthread_join(st->trasher, NULL);
		st->trasher_on = 0;
	}
	trash_clear(st, 0);
	free(st->trash);
	st->trash = NULL;
	st->ntrash = st->captrash = 0;
	free(st->lbuf);
	st->lbuf = NULL;
	st->lbufcap = 0;
	for (i = T_COUNT - 1; i >= 0; i--) {
		if (st->db[i] == NULL)
			continue;
		if ((ret = st->db[i]->close(st->db[i], nosync ? DB_NOSYNC :
		    0)) != 0) {
			log_warnx("store %s/%s.db: close: %s", st->dir,
			    store_tables[i], ret == -1 && sync_failures > 0 ?
			    strerror(sync_errno) : db_strerror(ret));
			rc = -1;
		}
		st->db[i] = NULL;
	}
	if (st->env != NULL) {
		if ((ret = st->env->close(st->env, 0)) != 0) {
			log_warnx("store %s: close environment: %s", st->dir,
			    db_strerror(ret));
			rc = -1;
		}
		st->env = NULL;
	}
	if (st->home != NULL) {
		region_remove(st->home, 1);
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
	if (sync_failures != st->sync_seen && rc == 0) {
		sync_check(st, "close");
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
	sync_check(st, "a sync outside a commit");
	if (st->lost) {
		store_seterr(st, 0, "nothing more is committed until a restart "
		    "runs recovery, after: %s", st->lost_why);
		return NULL;
	}
	memset(b, 0, sizeof(*b));
	b->st = st;
	b->counts = st->counts;
	if ((ret = st->env->txn_begin(st->env, NULL, &b->txn, 0)) != 0) {
		store_seterr(st, ret, "store %s: txn_begin", st->dir);
		return NULL;
	}
	st->batch_open = 1;
	return b;
}

int
store_batch_put_hook(struct store_batch *b, struct store_hook *h,
    const struct store_row_spec *rows, int nrows)
{
	struct store *st = b->st;
	struct store_row r;
	unsigned char hk[8], rk[STORE_ROWKEY_LEN], key[STORE_KEY_MAX];
	unsigned char lane[STORE_KEY_MAX], val[STORE_REC_MAX];
	unsigned char *rec;
	size_t klen, lanelen, vlen, reclen;
	DB_LSN at;
	int i, logged;

	if (b->failed) {
		store_seterr(st, 0, "store %s: batch already failed", st->dir);
		return -1;
	}
	if (h->tenant == NULL || h->source == NULL ||
	    strlen(h->tenant) > STORE_NAME_MAX ||
	    strlen(h->source) > STORE_NAME_MAX || nrows < 0) {
		store_seterr(st, 0, "store %s: hook with a bad tenant, source "
		    "or row count", st->dir);
		goto fail;
	}

	/* Taken before any write: an aborted batch burns its seqs (and the
	 * body records it logged, which no hook then points to). */
	h->seq = st->next_seq++;
	store_key_hook(hk, h->seq);
	logged = h->body != NULL && h->body_len >= STORE_LOGBODY_MIN &&
	    h->body_len <= STORE_LOGBODY_MAX;
	if (logged && body_log(st, h, &at) == -1)
		goto fail;
	if ((rec = hook_encode(h, nrows, "", NULL, logged ? &at : NULL,
	    &reclen)) == NULL) {
		store_seterr(st, 0, "store %s: hook seq %" PRIu64 ": cannot "
		    "encode (out of memory or a field too long)", st->dir,
		    h->seq);
		goto fail;
	}
	if (store_put(st, b->txn, T_HOOKS, hk, sizeof(hk), rec, reclen,
	    DB_NOOVERWRITE) == -1) {
		free(rec);
		goto fail;
	}
	free(rec);
	if (h->dedupe_key != NULL && h->dedupe_key[0] != '\0' &&
	    !h->flagged && store_put_dedupe(st, b->txn, h) == -1)
		goto fail;

	for (i = 0; i < nrows; i++) {
		memset(&r, 0, sizeof(r));
		snprintf(r.tenant, sizeof(r.tenant), "%s", h->tenant);
		snprintf(r.source, sizeof(r.source), "%s", h->source);
		r.sink_index = rows[i].sink_index;
		r.module = rows[i].module;
		r.due = h->received_at;
		r.lane_hash = rows[i].ordered ? rows[i].lane_hash : 0;
		r.state = rows[i].ordered ? STORE_ROW_MEMBER : STORE_ROW_DUE;
		r.body_size = h->body_len;
		store_key_row(rk, h->seq, r.sink_index);
		if ((vlen = store_rec_row_encode(&r, val, sizeof(val))) == 0) {
			store_seterr(st, 0, "store %s: row seq %" PRIu64
			    " sink %u: cannot encode", st->dir, h->seq,
			    r.sink_index);
			goto fail;
		}
		if (store_put(st, b->txn, T_ROWS, rk, sizeof(rk), val, vlen,
		    DB_NOOVERWRITE) == -1)
			goto fail;
		if (!rows[i].ordered) {
			klen = store_key_due(key, sizeof(key), h->tenant,
			    h->received_at, rk);
			if (klen == 0)
				goto fail_key;
			vlen = store_rec_empty_encode(val, sizeof(val));
			if (store_put(st, b->txn, T_DUE, key, klen, val, vlen,
			    0) == -1)
				goto fail;
			continue;
		}
		/* Ordered: blind puts of the member and the lane's mark;
		 * only dispatch reads or moves lane state. */
		lanelen = store_key_lane(lane, sizeof(lane), h->tenant,
		    h->source, r.sink_index, r.lane_hash);
		klen = store_key_member(key, sizeof(key), lane, lanelen,
		    h->seq);
		if (lanelen == 0 || klen == 0)
			goto fail_key;
		vlen = store_rec_rowkey_encode(rk, val, sizeof(val));
		if (store_put(st, b->txn, T_MEMBERS, key, klen, val, vlen,
		    0) == -1)
			goto fail;
		vlen = store_rec_empty_encode(val, sizeof(val));
		if (store_put(st, b->txn, T_MARKS, lane, lanelen, val, vlen,
		    0) == -1)
			goto fail;
		b->counts.lane_members++;
	}
	b->counts.hooks++;
	b->counts.rows += nrows;
	return 0;

 fail_key:
	store_seterr(st, 0, "store %s: hook seq %" PRIu64 ": key too long",
	    st->dir, h->seq);
 fail:
	b->failed = 1;
	return -1;
}

int
store_hook_fits(const struct store_hook *h, const char *reason, char *why,
    size_t whylen)
{
	unsigned char dk[STORE_KEY_MAX], xk[STORE_KEY_MAX];
	size_t dklen;

	if (h->tenant == NULL || h->source == NULL ||
	    strlen(h->tenant) > STORE_NAME_MAX ||
	    strlen(h->source) > STORE_NAME_MAX) {
		snprintf(why, whylen, "a tenant or source id over %d bytes",
		    STORE_NAME_MAX);
		return -1;
	}
	if (reason != NULL && strlen(reason) > STORE_QREASON_MAX) {
		snprintf(why, whylen, "a reason of %zu bytes (at most %d)",
		    strlen(reason), STORE_QREASON_MAX);
		return -1;
	}
	/* The same keys store_put_dedupe makes, so the two cannot differ. */
	if (reason == NULL && h->dedupe_key != NULL &&
	    h->dedupe_key[0] != '\0' && !h->flagged &&
	    ((dklen = store_key_dedupe(dk, sizeof(dk), h->tenant, h->source,
	    h->dedupe_key)) == 0 || store_key_dedupe_exp(xk, sizeof(xk),
	    h->dedupe_expires, dk, dklen) == 0)) {
		snprintf(why, whylen, "a dedupe key of %zu bytes, too long to "
		    "store", strlen(h->dedupe_key));
		return -1;
	}
	return 0;
}

/* The dedupe entry of h and its expiry index entry, in txn. */
static int
store_put_dedupe(struct store *st, DB_TXN *txn, const struct store_hook *h)
{
	struct store_dedupe dd;
	unsigned char dk[STORE_KEY_MAX], xk[STORE_KEY_MAX], val[64];
	size_t dklen, xklen, vlen;

	dklen = store_key_dedupe(dk, sizeof(dk), h->tenant, h->source,
	    h->dedupe_key);
	xklen = dklen == 0 ? 0 : store_key_dedupe_exp(xk, sizeof(xk),
	    h->dedupe_expires, dk, dklen);
	if (xklen == 0) {
		store_seterr(st, 0, "store %s: hook seq %" PRIu64 ": dedupe "
		    "key too long", st->dir, h->seq);
		return -1;
	}
	memset(&dd, 0, sizeof(dd));
	memcpy(dd.hook_id, h->id, UUID_LEN);
	dd.expires = h->dedupe_expires;
	vlen = store_rec_dedupe_encode(&dd, val, sizeof(val));
	if (store_put(st, txn, T_DEDUPE, dk, dklen, val, vlen, 0) == -1)
		return -1;
	vlen = store_rec_empty_encode(val, sizeof(val));
	return store_put(st, txn, T_DEDUPE_EXP, xk, xklen, val, vlen, 0);
}

int
store_batch_sweep_dedupe(struct store_batch *b, uint64_t now_ms,
    unsigned max)
{
	struct store *st = b->st;
	struct store_dedupe dd;
	unsigned char xk[STORE_KEY_MAX], xv[16], dv[64];
	uint64_t exp;
	unsigned n = 0;
	DBC *c;
	DBT k, v, dk, dvt;
	int ret;

	st->dberr[0] = '\0';
	if (b->failed) {
		store_seterr(st, 0, "store %s: batch already failed", st->dir);
		return -1;
	}
	if (max == 0)
		return 0;
	if ((ret = st->db[T_DEDUPE_EXP]->cursor(st->db[T_DEDUPE_EXP], b->txn,
	    &c, 0)) != 0) {
		store_seterr(st, ret, "store %s/dedupe_exp.db: cursor",
		    st->dir);
		b->failed = 1;
		return -1;
	}
	while (n < max) {
		memset(&k, 0, sizeof(k));
		memset(&v, 0, sizeof(v));
		k.data = xk;
		k.ulen = sizeof(xk);
		k.flags = DB_DBT_USERMEM;
		v.data = xv;
		v.ulen = sizeof(xv);
		v.flags = DB_DBT_USERMEM;
		/* The index is only ever cut at its start: the first entry
		 * left is the oldest. */
		ret = c->get(c, &k, &v, DB_NEXT);
		if (ret == DB_NOTFOUND)
			break;
		if (ret != 0) {
			store_seterr(st, ret, "store %s/dedupe_exp.db: read",
			    st->dir);
			goto fail;
		}
		if (k.size < 8) {
			rec_malformed(T_DEDUPE_EXP, xk, k.size, "short key",
			    st->err, sizeof(st->err));
			goto fail;
		}
		if (store_rec_empty_decode("dedupe_exp", xk, k.size, xv,
		    v.size, st->err, sizeof(st->err)) == -1)
			goto fail;
		if ((exp = get_u64(xk)) > now_ms)
			break;

		/* The entry it names, unless stored again since. */
		memset(&dk, 0, sizeof(dk));
		memset(&dvt, 0, sizeof(dvt));
		dk.data = xk + 8;
		dk.size = k.size - 8;
		dvt.data = dv;
		dvt.ulen = sizeof(dv);
		dvt.flags = DB_DBT_USERMEM;
		ret = st->db[T_DEDUPE]->get(st->db[T_DEDUPE], b->txn, &dk,
		    &dvt, 0);
		if (ret == DB_BUFFER_SMALL) {
			rec_malformed(T_DEDUPE, xk + 8, k.size - 8,
			    "bad length", st->err, sizeof(st->err));
			goto fail;
		}
		if (ret != 0 && ret != DB_NOTFOUND) {
			store_seterr(st, ret, "store %s/dedupe.db: read",
			    st->dir);
			goto fail;
		}
		if (ret == 0) {
			if (store_rec_dedupe_decode(xk + 8, k.size - 8, dv,
			    dvt.size, &dd, st->err, sizeof(st->err)) == -1)
				goto fail;
			if (dd.expires == exp && (ret =
			    st->db[T_DEDUPE]->del(st->db[T_DEDUPE], b->txn,
			    &dk, 0)) != 0) {
				store_seterr(st, ret, "store %s/dedupe.db: "
				    "delete", st->dir);
				goto fail;
			}
		}
		if ((ret = c->del(c, 0)) != 0) {
			store_seterr(st, ret, "store %s/dedupe_exp.db: delete "
			    "expiry %" PRIu64, st->dir, exp);
			goto fail;
		}
		n++;
	}
	if ((ret = c->close(c)) != 0) {
		store_seterr(st, ret, "store %s/dedupe_exp.db: cursor close",
		    st->dir);
		b->failed = 1;
		return -1;
	}
	return n;

 fail:
	c->close(c);
	b->failed = 1;
	return -1;
}

int
store_batch_put_quarantine(struct store_batch *b, struct store_hook *h,
    const char *reason)
{
	struct store *st = b->st;
	unsigned char hk[8];
	unsigned char *rec;
	size_t reclen;

	if (b->failed) {
		store_seterr(st, 0, "store %s: batch already failed", st->dir);
		return -1;
	}
	if (reason == NULL)
		reason = "";
	if (h->tenant == NULL || h->source == NULL ||
	    strlen(h->tenant) > STORE_NAME_MAX ||
	    strlen(h->source) > STORE_NAME_MAX ||
	    strlen(reason) > STORE_QREASON_MAX) {
		store_seterr(st, 0, "store %s: quarantined hook with a bad "
		    "tenant, source or reason", st->dir);
		goto fail;
	}

	/* The hooks' counter: a released hook gets a new seq from it, and
	 * store_open checks both tables against it. */
	h->seq = st->next_seq++;
	store_key_hook(hk, h->seq);
	if ((rec = hook_encode(h, 0, "", reason, NULL, &reclen)) == NULL) {
		store_seterr(st, 0, "store %s: quarantine seq %" PRIu64 ": "
		    "cannot encode (out of memory or a field too long)",
		    st->dir, h->seq);
		goto fail;
	}
	if (store_put(st, b->txn, T_QUARANTINE, hk, sizeof(hk), rec, reclen,
	    DB_NOOVERWRITE) == -1) {
		free(rec);
		goto fail;
	}
	free(rec);
	b->counts.qhooks++;
	b->counts.qbytes += h->body_len;
	return 0;

 fail:
	b->failed = 1;
	return -1;
}

int
store_batch_del_quarantine(struct store_batch *b, uint64_t seq)
{
	struct store *st = b->st;
	struct store_hook_rec rec;
	unsigned char hk[8];
	DBT k;
	int ret;

	st->dberr[0] = '\0';
	if (b->failed) {
		store_seterr(st, 0, "store %s: batch already failed", st->dir);
		return -1;
	}
	/* The head only, for the body size the counter drops by. */
	if ((ret = store_head_get(st, b->txn, T_QUARANTINE, seq, &rec)) != 1) {
		if (ret == -1)
			b->failed = 1;
		return ret;
	}
	store_key_hook(hk, seq);
	memset(&k, 0, sizeof(k));
	k.data = hk;
	k.size = sizeof(hk);
	if ((ret = st->db[T_QUARANTINE]->del(st->db[T_QUARANTINE], b->txn, &k,
	    0)) != 0) {
		store_seterr(st, ret, "store %s/quarantine.db: delete seq %"
		    PRIu64, st->dir, seq);
		store_hook_rec_free(&rec);
		b->failed = 1;
		return -1;
	}
	/* Never below 0, even if a counter was lost. */
	if (b->counts.qhooks > 0)
		b->counts.qhooks--;
	b->counts.qbytes -= b->counts.qbytes < rec.body_size ?
	    b->counts.qbytes : rec.body_size;
	store_hook_rec_free(&rec);
	return 1;
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
	    b->counts.lane_members) == -1)) {
		store_batch_abort(b);
		return -1;
	}
	/* On error commit aborts the transaction itself. */
	ret = b->txn->commit(b->txn, DB_TXN_WRITE_NOSYNC);
	b->txn = NULL;
	st->batch_open = 0;
	if (ret != 0) {
		store_seterr(st, ret, "store %s: commit", st->dir);
		return -1;
	}
	st->counts = b->counts;
	st->seq_saved = seq;
	st->lm_unsaved = 0;
	return flush ? store_log_flush(st) : 0;
}

int
store_log_flush(struct store *st)
{
	int ret;

	if ((ret = st->env->log_flush(st->env, NULL)) != 0) {
		store_seterr(st, ret, "store %s: log flush after commit (the "
		    "batch may not survive a crash; restart to run recovery)",
		    st->dir);
		store_set_lost(st);
		return -1;
	}
	st->flushed_end = st->logged_end;
	log_zero_ahead(st);
	return 0;
}

uint64_t
store_next_seq(const struct store *st)
{
	return st->next_seq;
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
static DB_TXN *
store_readtxn(struct store *st)
{
	return st->batch_open ? st->batch.txn : NULL;
}

int
store_hooks_list(struct store *st, const char *source, uint64_t after_seq,
    uint64_t limit, int (*cb)(const struct store_hook_info *, void *),
    void *arg)
{
	struct list_ctx ctx;

	memset(&ctx, 0, sizeof(ctx));
	ctx.hook_cb = cb;
	ctx.arg = arg;
	return store_list_heads(st, T_HOOKS, source, after_seq, limit,
	    list_hook_fn, &ctx);
}

int
store_quarantine_list(struct store *st, const char *source,
    uint64_t after_seq, uint64_t limit,
    int (*cb)(const struct store_quarantine_info *, void *), void *arg)
{
	struct list_ctx ctx;

	memset(&ctx, 0, sizeof(ctx));
	ctx.quarantine_cb = cb;
	ctx.arg = arg;
	return store_list_heads(st, T_QUARANTINE, source, after_seq, limit,
	    list_quarantine_fn, &ctx);
}

static int
list_hook_fn(uint64_t seq, const struct store_hook_rec *rec, void *arg)
{
	struct list_ctx *ctx = arg;
	struct store_hook_info info;

	memset(&info, 0, sizeof(info));
	info.seq = seq;
	uuid_format(rec->hook.id, info.id);
	snprintf(info.tenant, sizeof(info.tenant), "%s", rec->hook.tenant);
	snprintf(info.source, sizeof(info.source), "%s", rec->hook.source);
	info.received_at = rec->hook.received_at;
	info.size = rec->body_size;
	info.rows = rec->rows;
	info.flagged = rec->hook.flagged;
	return ctx->hook_cb(&info, ctx->arg);
}

static int
list_quarantine_fn(uint64_t seq, const struct store_hook_rec *rec, void *arg)
{
	struct list_ctx *ctx = arg;
	struct store_quarantine_info info;

	memset(&info, 0, sizeof(info));
	info.seq = seq;
	uuid_format(rec->hook.id, info.id);
	snprintf(info.tenant, sizeof(info.tenant), "%s", rec->hook.tenant);
	snprintf(info.source, sizeof(info.source), "%s", rec->hook.source);
	info.received_at = rec->hook.received_at;
	info.size = rec->body_size;
	snprintf(info.reason, sizeof(info.reason), "%s",
	    rec->reason != NULL ? rec->reason : "");
	return ctx->quarantine_cb(&info, ctx->arg);
}

/* Hook records of table t (hooks or quarantine) in seq order after
 * after_seq, of one source (NULL: all), at most limit (0: all), each
 * handed to fn with only its head decoded (no body: the read is partial,
 * STORE_LIST_PEEK bytes, or exactly the head when it is longer); fn
 * returning non-zero stops.  0, or -1 on a store error. */
static int
store_list_heads(struct store *st, int t, const char *source,
    uint64_t after_seq, uint64_t limit,
    int (*fn)(uint64_t, const struct store_hook_rec *, void *), void *arg)
{
	struct store_hook_rec rec;
	unsigned char kb[8], peek[STORE_LIST_PEEK], *full = NULL;
	const unsigned char *data;
	uint64_t n = 0;
	uint32_t want;
	uint32_t flag = DB_SET_RANGE;
	size_t dlen;
	DBC *c;
	DBT k, v;
	int ret, rv = 0, stop;

	st->dberr[0] = '\0';
	if (after_seq == UINT64_MAX)
		return 0;
	if ((ret = st->db[t]->cursor(st->db[t], store_readtxn(st), &c,
	    0)) != 0) {
		store_seterr(st, ret, "store %s/%s.db: cursor", st->dir,
		    store_tables[t]);
		return -1;
	}
	store_key_hook(kb, after_seq + 1);
	for (;;) {
		dbt_user(&k, kb, sizeof(kb), 0);
		dbt_user(&v, peek, sizeof(peek), 1);
		ret = c->get(c, &k, &v, flag);
		flag = DB_NEXT;
		if (ret == DB_NOTFOUND)
			break;
		if (ret != 0) {
			store_seterr(st, ret, "store %s/%s.db: read", st->dir,
			    store_tables[t]);
			rv = -1;
			break;
		}
		data = peek;
		dlen = v.size;
		/* The head did not fit the peek: read exactly the head. */
		if (dlen >= 5 && peek[0] == STORE_REC_VERSION &&
		    (want = get_u32(peek + 1)) > dlen - 5 &&
		    dlen == sizeof(peek)) {
			free(full);
			if ((full = malloc(want + 5)) == NULL) {
				store_seterr(st, 0, "store %s: out of memory",
				    st->dir);
				rv = -1;
				break;
			}
			dbt_user(&v, full, want + 5, 1);
			if ((ret = c->get(c, &k, &v, DB_CURRENT)) != 0) {
				store_seterr(st, ret, "store %s/%s.db: read",
				    st->dir, store_tables[t]);
				rv = -1;
				break;
			}
			data = full;
			dlen = v.size;
		}
		if (hook_decode(t, kb, k.size, data, dlen, 1, &rec,
		    st->err, sizeof(st->err)) == -1) {
			rv = -1;
			break;
		}
		if (source != NULL && strcmp(source, rec.hook.source) != 0) {
			store_hook_rec_free(&rec);
			continue;
		}
		n++;
		stop = fn(get_u64(kb), &rec, arg);
		store_hook_rec_free(&rec);
		if (stop != 0 || (limit != 0 && n >= limit))
			break;
	}
	free(full);
	if ((ret = c->close(c)) != 0 && rv == 0) {
		store_seterr(st, ret, "store %s/%s.db: cursor close", st->dir,
		    store_tables[t]);
		rv = -1;
	}
	return rv;
}

int
store_hook_get(struct store *st, uint64_t seq, struct store_hook_rec *out)
{
	return store_rec_get(st, T_HOOKS, seq, out);
}

int
store_quarantine_get(struct store *st, uint64_t seq,
    struct store_hook_rec *out, char *reason, size_t reasonlen)
{
	int ret;

	if ((ret = store_rec_get(st, T_QUARANTINE, seq, out)) != 0)
		return ret == 1 ? 0 : -1;
	if (reason != NULL && reasonlen > 0)
		snprintf(reason, reasonlen, "%s", out->reason);
	return 1;
}

int
store_quarantine_usage(struct store *st, uint64_t *bytes, uint64_t *hooks)
{
	const struct store_counts *c;

	c = st->batch_open ? &st->batch.counts : &st->counts;
	if (bytes != NULL)
		*bytes = c->qbytes;
	if (hooks != NULL)
		*hooks = c->qhooks;
	return 0;
}

int
store_dedupe_get(struct store *st, const char *tenant, const char *source,
    const char *key, uint64_t now_ms, unsigned char id_out[UUID_LEN])
{
	struct store_dedupe dd;
	unsigned char kb[STORE_KEY_MAX], vb[64];
	size_t klen;
	DBT k, v;
	int ret;

	st->dberr[0] = '\0';
	if (key == NULL || key[0] == '\0')
		return 0;
	if (tenant == NULL || source == NULL ||
	    (klen = store_key_dedupe(kb, sizeof(kb), tenant, source,
	    key)) == 0) {
		store_seterr(st, 0, "store %s: dedupe lookup with no tenant or "
		    "source, or a key too long", st->dir);
		return -1;
	}
	memset(&k, 0, sizeof(k));
	memset(&v, 0, sizeof(v));
	k.data = kb;
	k.size = klen;
	v.data = vb;
	v.ulen = sizeof(vb);
	v.flags = DB_DBT_USERMEM;
	ret = st->db[T_DEDUPE]->get(st->db[T_DEDUPE], store_readtxn(st), &k,
	    &v, 0);
	if (ret == DB_NOTFOUND)
		return 0;
	if (ret == DB_BUFFER_SMALL)
		return rec_malformed(T_DEDUPE, kb, klen, "bad length", st->err,
		    sizeof(st->err));
	if (ret != 0) {
		store_seterr(st, ret, "store %s/dedupe.db: read", st->dir);
		return -1;
	}
	if (store_rec_dedupe_decode(kb, klen, vb, v.size, &dd, st->err,
	    sizeof(st->err)) == -1)
		return -1;
	/* Expired but not swept yet: as good as gone. */
	if (dd.expires <= now_ms)
		return 0;
	memcpy(id_out, dd.hook_id, UUID_LEN);
	return 1;
}

/* A whole hook record of table t (hooks, quarantine): 0 found, 1 not
 * found, -1 on a store error. */
int
store_rec_get(struct store *st, int t, uint64_t seq,
    struct store_hook_rec *out)
{
	unsigned char kb[8];
	DBT k, v;
	int ret;

	st->dberr[0] = '\0';
	memset(out, 0, sizeof(*out));
	store_key_hook(kb, seq);
	memset(&k, 0, sizeof(k));
	memset(&v, 0, sizeof(v));
	k.data = kb;
	k.size = sizeof(kb);
	v.flags = DB_DBT_MALLOC;
	ret = st->db[t]->get(st->db[t], store_readtxn(st), &k, &v, 0);
	if (ret == DB_NOTFOUND)
		return 1;
	if (ret != 0) {
		store_seterr(st, ret, "store %s/%s.db: read seq %" PRIu64,
		    st->dir, store_tables[t], seq);
		return -1;
	}
	if (hook_decode(t, kb, sizeof(kb), v.data, v.size, 0, out,
	    st->err, sizeof(st->err)) == -1) {
		free(v.data);
		return -1;
	}
	out->mem = v.data;
	if (out->body_logged && body_fetch(st, seq, out) == -1) {
		store_hook_rec_free(out);
		return -1;
	}
	return 0;
}

/* The head of the hook record at seq of table t (hooks, quarantine),
 * without its body (a partial read).  1 found (out->mem owns the bytes:
 * store_hook_rec_free), 0 not found, -1 on a store error. */
static int
store_head_get(struct store *st, DB_TXN *txn, int t, uint64_t seq,
    struct store_hook_rec *out)
{
	unsigned char kb[8], *buf;
	uint32_t want = STORE_LIST_PEEK, head;
	DBT k, v;
	int ret, pass;

	memset(out, 0, sizeof(*out));
	store_key_hook(kb, seq);
	for (pass = 0;; pass++) {
		if ((buf = malloc(want)) == NULL) {
			store_seterr(st, 0, "store %s: out of memory",
			    st->dir);
			return -1;
		}
		dbt_user(&k, kb, sizeof(kb), 0);
		dbt_user(&v, buf, want, 1);
		ret = st->db[t]->get(st->db[t], txn, &k, &v, 0);
		if (ret != 0) {
			free(buf);
			if (ret == DB_NOTFOUND)
				return 0;
			store_seterr(st, ret, "store %s/%s.db: read seq %"
			    PRIu64, st->dir, store_tables[t], seq);
			return -1;
		}
		/* The head did not fit: once more, exactly the head. */
		if (pass == 0 && v.size == want && want >= 5 &&
		    buf[0] == STORE_REC_VERSION &&
		    (head = get_u32(buf + 1)) > want - 5 &&
		    head <= UINT32_MAX - 5) {
			free(buf);
			want = head + 5;
			continue;
		}
		break;
	}
	if (hook_decode(t, kb, sizeof(kb), buf, v.size, 1, out, st->err,
	    sizeof(st->err)) == -1) {
		free(buf);
		return -1;
	}
	out->mem = buf;
	return 1;
}

void
store_hook_rec_free(struct store_hook_rec *rec)
{
	free(rec->hdrs);
	free(rec->mem);
	free(rec->body_mem);
	rec->hdrs = NULL;
	rec->mem = NULL;
	rec->body_mem = NULL;
}

int
store_counts(struct store *st, struct store_counts *c)
{
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

static void
walk_init(struct walk *w, struct store *st, DB_TXN *txn, int t,
    const void *from, size_t fromlen)
{
	w->st = st;
	w->t = t;
	w->txn = txn;
	w->c = NULL;
	w->vlen = 0;
	walk_seek(w, from, fromlen);
}

/* The next step lands on the first key >= key (the table's first with an
 * empty key). */
static void
walk_seek(struct walk *w, const void *key, size_t klen)
{
	walk_pause(w);
	if (klen > STORE_KEY_MAX)
		klen = STORE_KEY_MAX;
	memmove(w->key, key, klen);
	w->klen = klen;
	w->at = 1;
}

static void
walk_pause(struct walk *w)
{
	if (w->c != NULL) {
		w->c->close(w->c);
		w->c = NULL;
	}
}

/* 1 a record in key/val, 0 the end, -1 on a store error. */
static int
walk_next(struct walk *w)
{
	struct store *st = w->st;
	uint32_t flag = DB_NEXT;
	DBT k, v;
	int ret;

	if (w->c == NULL) {
		if ((ret = st->db[w->t]->cursor(st->db[w->t], w->txn != NULL ?
		    w->txn : store_readtxn(st), &w->c, 0)) != 0) {
			w->c = NULL;
			store_seterr(st, ret, "store %s/%s.db: cursor", st->dir,
			    store_tables[w->t]);
			return -1;
		}
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

/* Close the walk; rv is what the caller returns unless closing fails. */
static int
walk_done(struct walk *w, int rv)
{
	int ret;

	if (w->c != NULL) {
		ret = w->c->close(w->c);
		w->c = NULL;
		if (ret != 0 && rv != -1) {
			store_seterr(w->st, ret, "store %s/%s.db: cursor close",
			    w->st->dir, store_tables[w->t]);
			return -1;
		}
	}
	return rv;
}

/* One record of table t: 1 found (vlen set), 0 none, -1 on a store error
 * (a record larger than valsz is one). */
static int
tget(struct store *st, DB_TXN *txn, int t, const void *key, size_t klen,
    void *val, size_t valsz, size_t *vlen)
{
	char desc[256];
	DBT k, v;
	int ret;

	memset(&k, 0, sizeof(k));
	memset(&v, 0, sizeof(v));
	k.data = (void *)key;
	k.size = klen;
	v.data = val;
	v.ulen = valsz;
	v.flags = DB_DBT_USERMEM;
	ret = st->db[t]->get(st->db[t], txn, &k, &v, 0);
	if (ret == DB_NOTFOUND)
		return 0;
	if (ret == DB_BUFFER_SMALL)
		return rec_malformed(t, key, klen, "bad length", st->err,
		    sizeof(st->err));
	if (ret != 0) {
		key_describe(t, key, klen, desc, sizeof(desc));
		store_seterr(st, ret, "store %s/%s.db: read %s", st->dir,
		    store_tables[t], desc);
		return -1;
	}
	*vlen = v.size;
	return 1;
}

/* 1 deleted, 0 was not there, -1 on a store error. */
static int
tdel(struct store *st, DB_TXN *txn, int t, const void *key, size_t klen)
{
	char desc[256];
	DBT k;
	int ret;

	memset(&k, 0, sizeof(k));
	k.data = (void *)key;
	k.size = klen;
	ret = st->db[t]->del(st->db[t], txn, &k, 0);
	if (ret == DB_NOTFOUND)
		return 0;
	if (ret != 0) {
		key_describe(t, key, klen, desc, sizeof(desc));
		store_seterr(st, ret, "store %s/%s.db: delete %s", st->dir,
		    store_tables[t], desc);
		return -1;
	}
	return 1;
}

/* 1 found, 0 none, -1 on a store error, -2 a record that does not decode
 * (st->err says which). */
static int
row_read(struct store *st, DB_TXN *txn, const unsigned char *rk,
    struct store_row *r)
{
	unsigned char val[STORE_REC_MAX];
	size_t vlen;
	int ret;

	if ((ret = tget(st, txn, T_ROWS, rk, STORE_ROWKEY_LEN, val,
	    sizeof(val), &vlen)) != 1)
		return ret;
	if (store_rec_row_decode(rk, STORE_ROWKEY_LEN, val, vlen, r, st->err,
	    sizeof(st->err)) == -1)
		return -2;
	return 1;
}

static int
row_write(struct store *st, DB_TXN *txn, const unsigned char *rk,
    const struct store_row *r)
{
	unsigned char val[STORE_REC_MAX];
	size_t vlen;

	if ((vlen = store_rec_row_encode(r, val, sizeof(val))) == 0) {
		store_seterr(st, 0, "store %s: row seq %" PRIu64 " sink %u: "
		    "cannot encode", st->dir, get_u64(rk), get_u32(rk + 8));
		return -1;
	}
	return store_put(st, txn, T_ROWS, rk, STORE_ROWKEY_LEN, val, vlen, 0);
}

/* A row with a due key: DUE, HEAD, PARKED. */
static int
row_pending(const struct store_row *r)
{
	return r->state == STORE_ROW_DUE || r->state == STORE_ROW_HEAD ||
	    r->state == STORE_ROW_PARKED;
}

static int
due_put(struct store *st, DB_TXN *txn, const char *tenant, uint64_t due,
    const unsigned char *rk)
{
	unsigned char key[STORE_KEY_MAX], val[1];
	size_t klen;

	if ((klen = store_key_due(key, sizeof(key), tenant, due, rk)) == 0) {
		store_seterr(st, 0, "store %s: due key of tenant %s too long",
		    st->dir, tenant);
		return -1;
	}
	return store_put(st, txn, T_DUE, key, klen, val,
	    store_rec_empty_encode(val, sizeof(val)), 0);
}

/* 1 deleted, 0 was not there, -1 on a store error. */
static int
due_del(struct store *st, DB_TXN *txn, const char *tenant, uint64_t due,
    const unsigned char *rk)
{
	unsigned char key[STORE_KEY_MAX];
	size_t klen;

	if ((klen = store_key_due(key, sizeof(key), tenant, due, rk)) == 0) {
		store_seterr(st, 0, "store %s: due key of tenant %s too long",
		    st->dir, tenant);
		return -1;
	}
	return tdel(st, txn, T_DUE, key, klen);
}

/* Split a due key: tenant length (its NUL at key[*tlen]), due, row key.
 * -1 if it is not one. */
static int
due_parse(const unsigned char *key, size_t klen, size_t *tlen,
    uint64_t *due, const unsigned char **rk)
{
	const unsigned char *nul;

	if ((nul = memchr(key, '\0', klen)) == NULL ||
	    (size_t)(nul - key) > STORE_NAME_MAX ||
	    klen != (size_t)(nul - key) + 1 + 8 + STORE_ROWKEY_LEN)
		return -1;
	*tlen = nul - key;
	*due = get_u64(nul + 1);
	*rk = nul + 9;
	return 0;
}

static int
batch_ok(struct store_batch *b)
{
	b->st->dberr[0] = '\0';
	if (b->failed) {
		store_seterr(b->st, 0, "store %s: batch already failed",
		    b->st->dir);
		return 0;
	}
	return 1;
}

/*
 * Dispatch reads.
 */

/* The tenants that have a key in table t (due or marks, both keyed by str
 * tenant first), each with its first key: one seek per tenant.  fn returns
 * 0 for the next tenant, > 0 to stop, < 0 to go on with the key after this
 * one (it is damaged). */
static int
store_tenants(struct store *st, int t,
    int (*fn)(const char *, const unsigned char *, size_t, void *), void *arg)
{
	char tenant[STORE_NAME_MAX + 1];
	const unsigned char *nul;
	size_t tlen;
	struct walk w;
	int ret, rv;

	st->dberr[0] = '\0';
	walk_init(&w, st, NULL, t, "", 0);
	while ((ret = walk_next(&w)) == 1) {
		if ((nul = memchr(w.key, '\0', w.klen)) == NULL ||
		    (tlen = nul - w.key) > STORE_NAME_MAX) {
			/* Not ours to judge here: step over it. */
			log_warnx("store %s/%s.db: damaged key of %zu bytes "
			    "skipped", st->dir, store_tables[t], w.klen);
			continue;
		}
		memcpy(tenant, w.key, tlen);
		tenant[tlen] = '\0';
		walk_pause(&w);
		if ((rv = fn(tenant, w.key, w.klen, arg)) > 0)
			break;
		if (rv < 0)
			continue;
		/* Past every key of this tenant: its id and a 1 sorts after
		 * its id and a 0 and before any longer id it prefixes. */
		w.key[tlen] = 0x01;
		walk_seek(&w, w.key, tlen + 1);
	}
	return walk_done(&w, ret == -1 ? -1 : 0);
}

static int
due_tenants_fn(const char *tenant, const unsigned char *key, size_t klen,
    void *arg)
{
	struct tenants_ctx *ctx = arg;
	const unsigned char *rk;
	uint64_t due;
	size_t tlen;

	if (due_parse(key, klen, &tlen, &due, &rk) == -1) {
		log_warnx("store %s/due.db: damaged key of tenant %s skipped",
		    ctx->st->dir, tenant);
		return -1;
	}
	return ctx->due_cb(tenant, due, ctx->arg) != 0;
}

static int
marked_tenants_fn(const char *tenant, const unsigned char *key, size_t klen,
    void *arg)
{
	struct tenants_ctx *ctx = arg;

	return ctx->cb(tenant, ctx->arg) != 0;
}

int
store_due_tenants(struct store *st,
    int (*cb)(const char *, uint64_t, void *), void *arg)
{
	struct tenants_ctx ctx;

	memset(&ctx, 0, sizeof(ctx));
	ctx.st = st;
	ctx.due_cb = cb;
	ctx.arg = arg;
	return store_tenants(st, T_DUE, due_tenants_fn, &ctx);
}

int
store_marked_tenants(struct store *st, int (*cb)(const char *, void *),
    void *arg)
{
	struct tenants_ctx ctx;

	memset(&ctx, 0, sizeof(ctx));
	ctx.st = st;
	ctx.cb = cb;
	ctx.arg = arg;
	return store_tenants(st, T_MARKS, marked_tenants_fn, &ctx);
}

int
store_due_next(struct store *st, const char *tenant, uint64_t after,
    uint64_t *due)
{
	unsigned char key[STORE_NAME_MAX + 1 + 8];
	const unsigned char *rk;
	size_t plen, tlen;
	struct walk w;
	int ret;

	st->dberr[0] = '\0';
	if (tenant == NULL || (plen = strlen(tenant)) > STORE_NAME_MAX) {
		store_seterr(st, 0, "store %s: due lookup of a bad tenant",
		    st->dir);
		return -1;
	}
	if (after == UINT64_MAX)
		return 0;
	memcpy(key, tenant, plen + 1);
	put_u64(key + plen + 1, after + 1);
	walk_init(&w, st, NULL, T_DUE, key, plen + 9);
	while ((ret = walk_next(&w)) == 1) {
		if (w.klen <= plen || memcmp(w.key, tenant, plen + 1) != 0) {
			ret = 0;
			break;
		}
		if (due_parse(w.key, w.klen, &tlen, due, &rk) == 0)
			break;
		log_warnx("store %s/due.db: damaged key of tenant %s skipped",
		    st->dir, tenant);
	}
	return walk_done(&w, ret);
}

int
store_due_scan_keys(struct store *st, const char *tenant, uint64_t now_ms,
    int (*cb)(const unsigned char *, size_t, uint64_t, const unsigned char *,
    const struct store_row *, void *), void *arg)
{
	return store_due_scan_from(st, tenant, now_ms, 0, NULL, NULL, cb, arg);
}

int
store_due_scan_from(struct store *st, const char *tenant, uint64_t now_ms,
    uint64_t after_due, const unsigned char *after_rk,
    int (*want)(const unsigned char *, void *),
    int (*cb)(const unsigned char *, size_t, uint64_t, const unsigned char *,
    const struct store_row *, void *), void *arg)
{
	struct store_row r;
	unsigned char key[STORE_KEY_MAX], rk[STORE_ROWKEY_LEN];
	unsigned char start[STORE_KEY_MAX];
	const unsigned char *krk;
	const struct store_row *rp;
	uint64_t due;
	size_t plen, tlen, klen, slen = 0;
	struct walk w;
	int ret, rr;

	st->dberr[0] = '\0';
	if (tenant == NULL || (plen = strlen(tenant)) > STORE_NAME_MAX) {
		store_seterr(st, 0, "store %s: due scan of a bad tenant",
		    st->dir);
		return -1;
	}
	/* From the tenant's first due key, or just after the given one. */
	if (after_rk != NULL && (slen = store_key_due(start, sizeof(start),
	    tenant, after_due, after_rk)) > 0)
		walk_init(&w, st, NULL, T_DUE, start, slen);
	else {
		slen = 0;
		walk_init(&w, st, NULL, T_DUE, tenant, plen + 1);
	}
	while ((ret = walk_next(&w)) == 1) {
		if (w.klen <= plen || memcmp(w.key, tenant, plen + 1) != 0)
			break;
		if (slen > 0 && w.klen == slen &&
		    memcmp(w.key, start, slen) == 0)
			continue;
		if (due_parse(w.key, w.klen, &tlen, &due, &krk) == -1) {
			log_warnx("store %s/due.db: damaged key of tenant %s "
			    "skipped", st->dir, tenant);
			continue;
		}
		if (due > now_ms)
			break;
		/* The caller may pass a key by its row key alone (a row it
		 * has claimed): no row read, no pause of the walk. */
		if (want != NULL && !want(krk, arg))
			continue;
		klen = w.klen;
		memcpy(key, w.key, klen);
		memcpy(rk, krk, STORE_ROWKEY_LEN);
		walk_pause(&w);

		rr = row_read(st, store_readtxn(st), rk, &r);
		if (rr == -1) {
			ret = -1;
			break;
		}
		rp = &r;
		if (rr == 0) {
			log_warnx("store %s: due key tenant %s due %" PRIu64
			    " names seq %" PRIu64 " sink %u, which is gone",
			    st->dir, tenant, due, get_u64(rk),
			    get_u32(rk + 8));
			rp = NULL;
		} else if (rr == -2) {
			log_warnx("store %s: %s", st->dir, st->err);
			rp = NULL;
		} else if (!row_pending(&r) || r.due != due ||
		    strcmp(r.tenant, tenant) != 0) {
			log_warnx("store %s: due key tenant %s due %" PRIu64
			    " of seq %" PRIu64 " sink %u is stale (row state "
			    "%u due %" PRIu64 ")", st->dir, tenant, due,
			    get_u64(rk), get_u32(rk + 8), r.state, r.due);
			rp = NULL;
		}
		if (cb(key, klen, due, rk, rp, arg) != 0)
			break;
	}
	return walk_done(&w, ret == -1 ? -1 : 0);
}

static int
due_scan_fn(const unsigned char *key, size_t klen, uint64_t due,
    const unsigned char *rk, const struct store_row *r, void *arg)
{
	struct due_scan_ctx *ctx = arg;

	return ctx->cb(rk, r, ctx->arg);
}

int
store_due_scan(struct store *st, const char *tenant, uint64_t now_ms,
    int (*cb)(const unsigned char *, const struct store_row *, void *),
    void *arg)
{
	struct due_scan_ctx ctx;

	ctx.cb = cb;
	ctx.arg = arg;
	return store_due_scan_keys(st, tenant, now_ms, due_scan_fn, &ctx);
}

/* arg: uint64_t[2], the smallest due so far and whether there is one. */
static int
due_oldest_fn(const char *tenant, uint64_t due, void *arg)
{
	uint64_t *min = arg;

	if (!min[1] || due < min[0])
		min[0] = due;
	min[1] = 1;
	return 0;
}

int
store_oldest_due(struct store *st, uint64_t *due)
{
	uint64_t min[2] = { 0, 0 };

	if (store_due_tenants(st, due_oldest_fn, min) == -1)
		return -1;
	if (!min[1])
		return 0;
	*due = min[0];
	return 1;
}

int
store_row_get(struct store *st, const unsigned char rk[STORE_ROWKEY_LEN],
    struct store_row *r)
{
	int ret;

	st->dberr[0] = '\0';
	ret = row_read(st, store_readtxn(st), rk, r);
	return ret == -2 ? -1 : ret;
}

uint64_t
store_lane_members(struct store *st)
{
	return st->batch_open ? st->batch.counts.lane_members :
	    st->counts.lane_members;
}

/*
 * Settling.
 */

/* One live row of hook seq is gone: its count drops (a partial write of
 * the four bytes, not the body), and the hook goes with its last row.  0,
 * or -1 on a store error. */
static int
hook_unref(struct store_batch *b, uint64_t seq)
{
	struct store *st = b->st;
	unsigned char hk[8], head[HOOK_ROWS_OFF + 4], cnt[4];
	uint32_t rows;
	DBC *c;
	DBT k, v;
	int ret, rc = -1;

	/* One cursor for the read and the delete or rewrite: one descent of
	 * the tree, not two. */
	store_key_hook(hk, seq);
	if ((ret = st->db[T_HOOKS]->cursor(st->db[T_HOOKS], b->txn, &c,
	    0)) != 0) {
		store_seterr(st, ret, "store %s/hooks.db: cursor", st->dir);
		return -1;
	}
	dbt_user(&k, hk, sizeof(hk), 0);
	dbt_user(&v, head, sizeof(head), 1);
	ret = c->get(c, &k, &v, DB_SET);
	if (ret == DB_NOTFOUND) {
		log_warnx("store %s: hook seq %" PRIu64 " of a settled row is "
		    "gone", st->dir, seq);
		rc = 0;
		goto done;
	}
	if (ret != 0) {
		store_seterr(st, ret, "store %s/hooks.db: read seq %" PRIu64,
		    st->dir, seq);
		goto done;
	}
	if (rec_version(T_HOOKS, hk, sizeof(hk), head, v.size, st->err,
	    sizeof(st->err)) == -1)
		goto done;
	if (v.size != sizeof(head)) {
		(void)rec_malformed(T_HOOKS, hk, sizeof(hk), "truncated head",
		    st->err, sizeof(st->err));
		goto done;
	}
	if ((rows = get_u32(head + HOOK_ROWS_OFF)) <= 1) {
		if ((ret = c->del(c, 0)) != 0) {
			store_seterr(st, ret, "store %s/hooks.db: delete seq %"
			    PRIu64, st->dir, seq);
			goto done;
		}
		if (b->counts.hooks > 0)
			b->counts.hooks--;
		rc = 0;
		goto done;
	}
	put_u32(cnt, rows - 1);
	memset(&v, 0, sizeof(v));
	v.data = cnt;
	v.size = sizeof(cnt);
	v.doff = HOOK_ROWS_OFF;
	v.dlen = sizeof(cnt);
	v.flags = DB_DBT_PARTIAL;
	if ((ret = c->put(c, &k, &v, DB_CURRENT)) != 0) {
		store_seterr(st, ret, "store %s/hooks.db: write seq %" PRIu64,
		    st->dir, seq);
		goto done;
	}
	rc = 0;
 done:
	if ((ret = c->close(c)) != 0 && rc == 0) {
		store_seterr(st, ret, "store %s/hooks.db: cursor close",
		    st->dir);
		rc = -1;
	}
	return rc;
}

int
store_batch_row_delivered(struct store_batch *b,
    const unsigned char rk[STORE_ROWKEY_LEN], const struct store_row *known)
{
	struct store *st = b->st;
	struct store_row r;
	int ret, head = 0;

	if (!batch_ok(b))
		return -1;
	/* The row as its claim read it: its due key is the proof that the
	 * store still holds it so (only the dispatch moves a claimed row);
	 * without that key the row is read after all. */
	if (known != NULL && row_pending(known)) {
		r = *known;
		if ((ret = due_del(st, b->txn, r.tenant, r.due, rk)) == -1)
			goto fail;
		if (ret == 1) {
			if ((head = lane_is_head(b, rk, &r)) == -1)
				goto fail;
			goto gone;
		}
	}
	switch (row_read(st, b->txn, rk, &r)) {
	case -1:
		goto fail;
	case 0:
		return 1;
	case -2:
		/* Delivered all the same: the row goes; its due key, if any,
		 * is reported stale by the next scan. */
		log_warnx("store %s: %s; deleting it, delivered", st->dir,
		    st->err);
		r.state = 0;
		break;
	default:
		if (r.state == STORE_ROW_DEAD) {
			log_warnx("store %s: delivered row seq %" PRIu64
			    " sink %u is dead-lettered: left alone", st->dir,
			    get_u64(rk), get_u32(rk + 8));
			return 1;
		}
		if ((head = row_unindex(b, rk, &r)) == -1)
			goto fail;
	}
 gone:
	if ((ret = row_gone(b, rk, &r, head, 1)) == -1)
		goto fail;
	return ret;

 fail:
	b->failed = 1;
	return -1;
}

/* Take the pending row r at rk out of the due keys, or out of its lane's
 * members: 1 when it is its lane's head (row_gone releases the lane), 0,
 * or -1 on a store error. */
static int
row_unindex(struct store_batch *b, const unsigned char *rk,
    const struct store_row *r)
{
	int ret, head;

	if ((head = lane_is_head(b, rk, r)) == -1)
		return -1;
	if (r->state == STORE_ROW_MEMBER)
		ret = lane_leave(b, rk, r);
	else
		ret = due_del(b->st, b->txn, r->tenant, r->due, rk);
	return ret == -1 ? -1 : head;
}

/* Delete the row at rk, unindexed already, with its count and (unref) its
 * hook's, and release its lane if it was the head.  0, 1 when the row was
 * not there, or -1 on a store error. */
static int
row_gone(struct store_batch *b, const unsigned char *rk,
    const struct store_row *r, int head, int unref)
{
	int ret;

	if ((ret = tdel(b->st, b->txn, T_ROWS, rk, STORE_ROWKEY_LEN)) == -1)
		return -1;
	if (ret == 0)
		return 1;	/* a due key without its row */
	if (unref && hook_unref(b, get_u64(rk)) == -1)
		return -1;
	if (b->counts.rows > 0)
		b->counts.rows--;
	if (head && lane_release(b, rk, r) == -1)
		return -1;
	return 0;
}

int
store_batch_row_reschedule(struct store_batch *b,
    const unsigned char rk[STORE_ROWKEY_LEN], const struct store_row *nr)
{
	struct store *st = b->st;
	struct store_row r;
	int head;

	if (!batch_ok(b))
		return -1;
	if (!row_pending(nr)) {
		store_seterr(st, 0, "store %s: row seq %" PRIu64 " sink %u "
		    "rescheduled in state %u", st->dir, get_u64(rk),
		    get_u32(rk + 8), nr->state);
		goto fail;
	}
	switch (row_read(st, b->txn, rk, &r)) {
	case -1:
		goto fail;
	case 0:
		return 1;
	case -2:
		/* Rewritten whole from nr; the old due key, unknown, is
		 * reported stale by the next scan. */
		log_warnx("store %s: %s; rewritten", st->dir, st->err);
		r = *nr;
		break;
	default:
		if (!row_pending(&r)) {
			log_warnx("store %s: rescheduled row seq %" PRIu64
			    " sink %u is in state %u: left alone", st->dir,
			    get_u64(rk), get_u32(rk + 8), r.state);
			return 1;
		}
		if ((head = lane_is_head(b, rk, &r)) == -1 ||
		    due_del(st, b->txn, r.tenant, r.due, rk) == -1)
			goto fail;
		r.due = nr->due;
		r.attempts = nr->attempts;
		r.first_attempt = nr->first_attempt;
		snprintf(r.last_error, sizeof(r.last_error), "%s",
		    nr->last_error);
		/* A head stays the head of its lane until it ends. */
		r.state = head && nr->state == STORE_ROW_DUE ? STORE_ROW_HEAD :
		    nr->state;
	}
	if (row_write(st, b->txn, rk, &r) == -1 ||
	    due_put(st, b->txn, r.tenant, r.due, rk) == -1)
		goto fail;
	return 0;

 fail:
	b->failed = 1;
	return -1;
}

int
store_batch_row_dead(struct store_batch *b,
    const unsigned char rk[STORE_ROWKEY_LEN], uint64_t dead_at,
    const char *reason, const char *last_error, uint32_t attempts)
{
	struct store *st = b->st;
	struct store_row r;
	struct store_dead dl;
	unsigned char dk[STORE_DEADKEY_LEN], val[STORE_REC_MAX];
	size_t vlen;
	int ret, head;

	if (!batch_ok(b))
		return -1;
	switch (row_read(st, b->txn, rk, &r)) {
	case -1:
		goto fail;
	case 0:
		return 1;
	case -2:
		log_warnx("store %s: %s; cannot dead-letter it", st->dir,
		    st->err);
		return 1;
	}
	if (r.state == STORE_ROW_DEAD)
		return 1;
	if ((ret = hook_present(st, b->txn, get_u64(rk))) == -1 ||
	    (head = row_unindex(b, rk, &r)) == -1)
		goto fail;
	if (ret == 0) {
		/* An orphan: a dead letter could never be replayed. */
		if ((ret = row_gone(b, rk, &r, head, 0)) == -1)
			goto fail;
		return ret == 0 ? 2 : 1;
	}

	memset(&dl, 0, sizeof(dl));
	snprintf(dl.reason, sizeof(dl.reason), "%s",
	    reason != NULL ? reason : "");
	snprintf(dl.last_error, sizeof(dl.last_error), "%s",
	    last_error != NULL ? last_error : "");
	dl.attempts = attempts;
	r.state = STORE_ROW_DEAD;
	r.attempts = attempts;
	memcpy(r.last_error, dl.last_error, sizeof(r.last_error));
	store_key_dead(dk, dead_at, rk);
	if ((vlen = store_rec_dead_encode(&dl, val, sizeof(val))) == 0) {
		store_seterr(st, 0, "store %s: dead letter of seq %" PRIu64
		    " sink %u: cannot encode", st->dir, get_u64(rk),
		    get_u32(rk + 8));
		goto fail;
	}
	if (row_write(st, b->txn, rk, &r) == -1 ||
	    store_put(st, b->txn, T_DEAD, dk, sizeof(dk), val, vlen, 0) == -1)
		goto fail;
	b->counts.dead++;
	if (head && lane_release(b, rk, &r) == -1)
		goto fail;
	return 0;

 fail:
	b->failed = 1;
	return -1;
}

int
store_batch_due_drop(struct store_batch *b, const unsigned char *key,
    size_t klen)
{
	struct store *st = b->st;
	struct store_row r;
	const unsigned char *rk;
	uint64_t due;
	size_t tlen;
	int ret;

	if (!batch_ok(b))
		return -1;
	if (due_parse(key, klen, &tlen, &due, &rk) == 0) {
		/* Only a stale key: dropping a live one would lose its row
		 * for good. */
		if ((ret = row_read(st, b->txn, rk, &r)) == -1)
			goto fail;
		if (ret == 1 && row_pending(&r) && r.due == due &&
		    strlen(r.tenant) == tlen &&
		    memcmp(r.tenant, key, tlen) == 0) {
			log_warnx("store %s: due key of seq %" PRIu64 " sink "
			    "%u is live: not dropped", st->dir, get_u64(rk),
			    get_u32(rk + 8));
			return 1;
		}
	}
	if ((ret = tdel(st, b->txn, T_DUE, key, klen)) == -1)
		goto fail;
	return ret == 1 ? 0 : 1;

 fail:
	b->failed = 1;
	return -1;
}

/*
 * Lanes.
 */

static size_t
row_lane(const struct store_row *r, unsigned char *lane, size_t lanesz)
{
	return store_key_lane(lane, lanesz, r->tenant, r->source,
	    r->sink_index, r->lane_hash);
}

/* The head row key in lane's lanes entry: 1, 0 none, -1 on a store error,
 * -2 a damaged entry (logged). */
static int
lane_head_get(struct store *st, DB_TXN *txn, const unsigned char *lane,
    size_t lanelen, unsigned char *rk)
{
	unsigned char val[64];
	size_t vlen;
	int ret;

	if ((ret = tget(st, txn, T_LANES, lane, lanelen, val, sizeof(val),
	    &vlen)) != 1)
		return ret;
	if (store_rec_rowkey_decode("lanes", lane, lanelen, val, vlen, rk,
	    st->err, sizeof(st->err)) == -1) {
		log_warnx("store %s: %s", st->dir, st->err);
		return -2;
	}
	return 1;
}

/* Whether the row at rk is its lane's head: HEAD, or PARKED and named by
 * its lanes entry (a parked head).  1, 0, or -1 on a store error. */
static int
lane_is_head(struct store_batch *b, const unsigned char *rk,
    const struct store_row *r)
{
	unsigned char lane[STORE_KEY_MAX], hk[STORE_ROWKEY_LEN];
	size_t lanelen;
	int ret;

	if (r->state == STORE_ROW_HEAD)
		return 1;
	if (r->state != STORE_ROW_PARKED ||
	    (lanelen = row_lane(r, lane, sizeof(lane))) == 0)
		return 0;
	if ((ret = lane_head_get(b->st, b->txn, lane, lanelen, hk)) == -1)
		return -1;
	return ret == 1 && memcmp(hk, rk, STORE_ROWKEY_LEN) == 0;
}

/* The lane's first member (lowest seq): 1 with its members key and row
 * key, 0 none, -1 on a store error. */
static int
lane_first_member(struct store *st, DB_TXN *txn, const unsigned char *lane,
    size_t lanelen, unsigned char *mkey, size_t *mklen, unsigned char *rk)
{
	struct walk w;
	int ret;

	walk_init(&w, st, txn, T_MEMBERS, lane, lanelen);
	if ((ret = walk_next(&w)) == 1) {
		/* Lane keys have one layout: lane + seq is a member of lane
		 * only. */
		if (w.klen != lanelen + 8 || memcmp(w.key, lane, lanelen) != 0)
			ret = 0;
		else if (store_rec_rowkey_decode("members", w.key, w.klen,
		    w.val, w.vlen, rk, st->err, sizeof(st->err)) == -1) {
			/* The key still names the member's seq, not its
			 * sink: drop the entry as one gone. */
			log_warnx("store %s: %s", st->dir, st->err);
			memset(rk, 0, STORE_ROWKEY_LEN);
		}
		if (ret == 1) {
			memcpy(mkey, w.key, w.klen);
			*mklen = w.klen;
		}
	}
	return walk_done(&w, ret);
}

/* A MEMBER row is settled: its members entry goes, and the lane's mark with
 * its last member.  0, or -1 on a store error. */
static int
lane_leave(struct store_batch *b, const unsigned char *rk,
    const struct store_row *r)
{
	struct store *st = b->st;
	unsigned char lane[STORE_KEY_MAX], mk[STORE_KEY_MAX + 8];
	unsigned char frk[STORE_ROWKEY_LEN];
	size_t lanelen, mklen;
	int ret;

	if ((lanelen = row_lane(r, lane, sizeof(lane))) == 0 ||
	    (mklen = store_key_member(mk, sizeof(mk), lane, lanelen,
	    get_u64(rk))) == 0) {
		store_seterr(st, 0, "store %s: lane key of seq %" PRIu64
		    " too long", st->dir, get_u64(rk));
		return -1;
	}
	if ((ret = tdel(st, b->txn, T_MEMBERS, mk, mklen)) == -1)
		return -1;
	if (ret == 1 && b->counts.lane_members > 0)
		b->counts.lane_members--;
	if ((ret = lane_first_member(st, b->txn, lane, lanelen, mk, &mklen,
	    frk)) == -1)
		return -1;
	if (ret == 0 && tdel(st, b->txn, T_MARKS, lane, lanelen) == -1)
		return -1;
	return 0;
}

/* Promote the lane's first live member to its head (the lane has none):
 * members whose row is gone, damaged or not a MEMBER are dropped on the
 * way.  The mark goes once no member is left.  1 promoted, 0 no member
 * left, -1 on a store error. */
static int
lane_promote(struct store_batch *b, const unsigned char *lane,
    size_t lanelen)
{
	struct store *st = b->st;
	struct store_row r;
	unsigned char mk[STORE_KEY_MAX + 1], rk[STORE_ROWKEY_LEN];
	unsigned char val[1 + STORE_ROWKEY_LEN];
	char desc[256];
	size_t mklen;
	int ret, promoted = 0;

	for (;;) {
		if ((ret = lane_first_member(st, b->txn, lane, lanelen, mk,
		    &mklen, rk)) == -1)
			return -1;
		if (ret == 0)
			break;
		if (promoted)
			return 1;	/* and members left: the mark stays */
		if (tdel(st, b->txn, T_MEMBERS, mk, mklen) == -1)
			return -1;
		if (b->counts.lane_members > 0)
			b->counts.lane_members--;
		if ((ret = row_read(st, b->txn, rk, &r)) == -1)
			return -1;
		if (ret != 1 || r.state != STORE_ROW_MEMBER) {
			key_describe(T_MEMBERS, mk, mklen, desc, sizeof(desc));
			log_warnx("store %s: member %s dropped: its row is %s",
			    st->dir, desc, ret == 0 ? "gone" : ret == -2 ?
			    "damaged" : "not a member");
			continue;
		}
		r.state = STORE_ROW_HEAD;
		if (row_write(st, b->txn, rk, &r) == -1 ||
		    store_put(st, b->txn, T_LANES, lane, lanelen, val,
		    store_rec_rowkey_encode(rk, val, sizeof(val)), 0) == -1 ||
		    due_put(st, b->txn, r.tenant, r.due, rk) == -1)
			return -1;
		promoted = 1;
	}
	if (tdel(st, b->txn, T_MARKS, lane, lanelen) == -1)
		return -1;
	return promoted;
}

/* The head at rk (its row r) ended: its lane goes to the next member.  A
 * lanes entry naming another row is left alone (that row is the head).
 * 0, or -1 on a store error. */
static int
lane_release(struct store_batch *b, const unsigned char *rk,
    const struct store_row *r)
{
	struct store *st = b->st;
	unsigned char lane[STORE_KEY_MAX], hk[STORE_ROWKEY_LEN];
	size_t lanelen;
	int ret;

	if ((lanelen = row_lane(r, lane, sizeof(lane))) == 0) {
		store_seterr(st, 0, "store %s: lane key of seq %" PRIu64
		    " too long", st->dir, get_u64(rk));
		return -1;
	}
	if ((ret = lane_head_get(st, b->txn, lane, lanelen, hk)) == -1)
		return -1;
	if (ret == 1 && memcmp(hk, rk, STORE_ROWKEY_LEN) != 0)
		return 0;
	if (tdel(st, b->txn, T_LANES, lane, lanelen) == -1 ||
	    lane_promote(b, lane, lanelen) == -1)
		return -1;
	return 0;
}

int
store_batch_lane_sweep(struct store_batch *b, const char *tenant,
    uint64_t now_ms, unsigned max)
{
	struct store *st = b->st;
	struct store_row r;
	struct lane_resume *res;
	unsigned char lane[STORE_KEY_MAX], hk[STORE_ROWKEY_LEN];
	unsigned char mk[STORE_KEY_MAX + 1], frk[STORE_ROWKEY_LEN];
	size_t plen, lanelen = 0, mklen;
	unsigned visited = 0;
	struct walk w;
	int ret, promoted = 0, alive;

	(void)now_ms;
	if (!batch_ok(b))
		return -1;
	if (tenant == NULL || (plen = strlen(tenant)) > STORE_NAME_MAX) {
		store_seterr(st, 0, "store %s: lane sweep of a bad tenant",
		    st->dir);
		goto fail;
	}
	if (max == 0)
		return 0;
	walk_init(&w, st, b->txn, T_MARKS, tenant, plen + 1);
	if ((res = resume_find(st, (const unsigned char *)tenant,
	    plen + 1)) != NULL) {
		walk_seek(&w, res->key, res->len);
		w.at = 0;	/* after the last lane visited */
	}
	while (visited < max) {
		if ((ret = walk_next(&w)) == -1)
			goto fail_walk;
		if (ret == 0 || w.klen <= plen ||
		    memcmp(w.key, tenant, plen + 1) != 0) {
			lanelen = 0;	/* the tenant's end: start over next */
			break;
		}
		lanelen = w.klen;
		memcpy(lane, w.key, lanelen);
		walk_pause(&w);
		visited++;

		if ((ret = lane_head_get(st, b->txn, lane, lanelen,
		    hk)) == -1)
			goto fail_walk;
		alive = 0;
		if (ret == 1) {
			if ((ret = row_read(st, b->txn, hk, &r)) == -1)
				goto fail_walk;
			alive = ret == 1 && row_pending(&r);
			if (!alive)
				log_warnx("store %s: lane head seq %" PRIu64
				    " sink %u is %s: releasing its lane",
				    st->dir, get_u64(hk), get_u32(hk + 8),
				    ret == 0 ? "gone" : ret == -2 ?
				    "damaged" : "no longer pending");
		} else if (ret == -2)
			log_warnx("store %s: damaged lanes entry: releasing "
			    "its lane", st->dir);
		if (alive) {
			/* A live head: nothing to do unless no member is
			 * left behind it. */
			if ((ret = lane_first_member(st, b->txn, lane,
			    lanelen, mk, &mklen, frk)) == -1)
				goto fail_walk;
			if (ret == 0 && tdel(st, b->txn, T_MARKS, lane,
			    lanelen) == -1)
				goto fail_walk;
			continue;
		}
		if (tdel(st, b->txn, T_LANES, lane, lanelen) == -1 ||
		    (ret = lane_promote(b, lane, lanelen)) == -1)
			goto fail_walk;
		promoted += ret;
	}
	if (walk_done(&w, 0) == -1)
		goto fail;
	resume_set(st, (const unsigned char *)tenant, plen + 1, lane,
	    visited == max ? lanelen : 0);
	return promoted;

 fail_walk:
	walk_done(&w, -1);
 fail:
	b->failed = 1;
	return -1;
}

/* The resume point of the tenant whose marks keys start with prefix. */
static struct lane_resume *
resume_find(struct store *st, const unsigned char *prefix, size_t plen)
{
	struct lane_resume *r;

	for (r = st->resume; r != NULL; r = r->next)
		if (r->len > plen && memcmp(r->key, prefix, plen) == 0)
			return r;
	return NULL;
}

/* Remember lane (len 0: forget) as where the tenant's sweep goes on.  Out
 * of memory only costs fairness: the next sweep starts over. */
static void
resume_set(struct store *st, const unsigned char *prefix, size_t plen,
    const unsigned char *lane, size_t len)
{
	struct lane_resume *r, **rp;

	for (rp = &st->resume; (r = *rp) != NULL; rp = &r->next)
		if (r->len > plen && memcmp(r->key, prefix, plen) == 0)
			break;
	if (len == 0 || len > sizeof(r->key)) {
		if (r != NULL) {
			*rp = r->next;
			free(r);
		}
		return;
	}
	if (r == NULL) {
		if ((r = calloc(1, sizeof(*r))) == NULL)
			return;
		r->next = st->resume;
		st->resume = r;
	}
	memcpy(r->key, lane, len);
	r->len = len;
}

/*
 * Dead letters and admin walks.
 */

int
store_dead_list(struct store *st, const char *source, uint64_t limit,
    int (*cb)(const struct store_dead_info *, void *), void *arg)
{
	return store_dead_list_since(st, source, 0, limit, cb, arg);
}

int
store_dead_list_since(struct store *st, const char *source,
    uint64_t since_ms, uint64_t limit,
    int (*cb)(const struct store_dead_info *, void *), void *arg)
{
	struct store_dead_info *info;
	struct store_hook_rec rec;
	struct store_dead dl;
	struct store_row r;
	unsigned char start[8];
	uint64_t n = 0;
	struct walk w;
	int ret, rr;

	st->dberr[0] = '\0';
	if ((info = malloc(sizeof(*info))) == NULL) {
		store_seterr(st, 0, "store %s: out of memory", st->dir);
		return -1;
	}
	put_u64(start, since_ms);
	walk_init(&w, st, NULL, T_DEAD, start, sizeof(start));
	while ((ret = walk_next(&w)) == 1) {
		if (w.klen != STORE_DEADKEY_LEN) {
			log_warnx("store %s/dead.db: damaged key of %zu bytes "
			    "skipped", st->dir, w.klen);
			continue;
		}
		if (store_rec_dead_decode(w.key, w.klen, w.val, w.vlen, &dl,
		    st->err, sizeof(st->err)) == -1) {
			log_warnx("store %s: %s: skipped", st->dir, st->err);
			continue;
		}
		walk_pause(&w);
		memset(info, 0, sizeof(*info));
		memcpy(info->rowkey, w.key + 8, STORE_ROWKEY_LEN);
		info->seq = get_u64(info->rowkey);
		info->sink_index = get_u32(info->rowkey + 8);
		info->dead_at = get_u64(w.key);
		info->attempts = dl.attempts;
		memcpy(info->reason, dl.reason, sizeof(info->reason));
		memcpy(info->last_error, dl.last_error,
		    sizeof(info->last_error));
		if ((rr = row_read(st, store_readtxn(st), info->rowkey,
		    &r)) == -1) {
			ret = -1;
			break;
		}
		if (rr == 1) {
			memcpy(info->tenant, r.tenant, sizeof(info->tenant));
			memcpy(info->source, r.source, sizeof(info->source));
			info->module = r.module;
		}
		if (source != NULL && strcmp(source, info->source) != 0)
			continue;
		if ((rr = store_head_get(st, store_readtxn(st), T_HOOKS,
		    info->seq, &rec)) == -1) {
			ret = -1;
			break;
		}
		if (rr == 1) {
			uuid_format(rec.hook.id, info->hook_id);
			store_hook_rec_free(&rec);
		}
		n++;
		if (cb(info, arg) != 0 || (limit != 0 && n >= limit))
			break;
	}
	free(info);
	return walk_done(&w, ret == -1 ? -1 : 0);
}

int
store_pending_rows_of_source(struct store *st, const char *source,
    uint64_t after_seq, uint64_t limit,
    int (*cb)(const unsigned char *, const struct store_row *, void *),
    void *arg)
{
	int seen;

	return pending_page(st, source, &after_seq, limit, 0, &seen, cb,
	    arg) == -1 ? -1 : 0;
}

/*
 * The walk of store_pending_rows_of_source from *after_seq: once limit rows
 * went to cb or visits rows were read (0: no bound), it ends with the hook
 * it is in, and *after_seq is then that hook's seq.  *seen is set once a
 * row of source is read, DEAD or not.  1 the page ended (or cb stopped
 * it), 0 the table did, -1 on a store error.
 */
static int
pending_page(struct store *st, const char *source, uint64_t *after_seq,
    uint64_t limit, uint64_t visits, int *seen,
    int (*cb)(const unsigned char *, const struct store_row *, void *),
    void *arg)
{
	struct store_row r;
	unsigned char start[STORE_ROWKEY_LEN], rk[STORE_ROWKEY_LEN];
	uint64_t n = 0, read = 0, last = *after_seq;
	struct walk w;
	int ret, full = 0;

	st->dberr[0] = '\0';
	*seen = 0;
	if (source == NULL || *after_seq == UINT64_MAX)
		return 0;
	store_key_row(start, *after_seq + 1, 0);
	walk_init(&w, st, NULL, T_ROWS, start, sizeof(start));
	while ((ret = walk_next(&w)) == 1) {
		if (w.klen != STORE_ROWKEY_LEN) {
			log_warnx("store %s/rows.db: damaged key of %zu bytes "
			    "skipped", st->dir, w.klen);
			continue;
		}
		/* A full page ends with the hook it is in. */
		if (full && get_u64(w.key) != last)
			break;
		last = get_u64(w.key);
		if (visits != 0 && ++read >= visits)
			full = 1;
		if (store_rec_row_decode(w.key, w.klen, w.val, w.vlen, &r,
		    st->err, sizeof(st->err)) == -1) {
			log_warnx("store %s: %s: skipped", st->dir, st->err);
			continue;
		}
		if (strcmp(r.source, source) != 0)
			continue;
		*seen = 1;
		if (r.state == STORE_ROW_DEAD)
			continue;
		memcpy(rk, w.key, sizeof(rk));
		walk_pause(&w);
		if (cb(rk, &r, arg) != 0)
			break;
		if (limit != 0 && ++n >= limit)
			full = 1;
	}
	*after_seq = last;
	return walk_done(&w, ret);
}

/* Whether hook seq is stored: 1, 0, or -1 on a store error.  Reads no
 * byte of the record. */
static int
hook_present(struct store *st, DB_TXN *txn, uint64_t seq)
{
	unsigned char hk[8];
	DBT k, v;
	int ret;

	store_key_hook(hk, seq);
	dbt_user(&k, hk, sizeof(hk), 0);
	dbt_user(&v, hk, 0, 1);
	ret = st->db[T_HOOKS]->get(st->db[T_HOOKS], txn, &k, &v, 0);
	if (ret == DB_NOTFOUND)
		return 0;
	if (ret != 0) {
		store_seterr(st, ret, "store %s/hooks.db: read seq %" PRIu64,
		    st->dir, seq);
		return -1;
	}
	return 1;
}

struct dls_walk {
	struct store_batch	*b;
	struct store_dls	*s;
	int			 failed;
};

static int
dls_row(const unsigned char *rk, const struct store_row *r, void *arg)
{
	struct dls_walk *w = arg;
	struct store_dls *s = w->s;
	int ret;

	if (s->skip != NULL && s->skip(rk, s->arg))
		return 0;
	if ((ret = store_batch_row_dead(w->b, rk, s->dead_at, s->reason,
	    r->last_error, r->attempts)) == -1) {
		w->failed = 1;
		return 1;
	}
	if (ret == 0)
		s->moved++;
	else if (ret == 2)
		s->dropped++;
	return 0;
}

int
store_batch_source_dead(struct store_batch *b, struct store_dls *s)
{
	struct dls_walk w;
	int ret;

	if (!batch_ok(b))
		return -1;
	memset(&w, 0, sizeof(w));
	w.b = b;
	w.s = s;
	s->moved = s->dropped = 0;
	ret = pending_page(b->st, s->source, &s->after_seq, s->limit,
	    s->visits, &s->seen, dls_row, &w);
	if (ret == -1 || w.failed) {
		b->failed = 1;
		return -1;
	}
	return ret;
}

int
store_hook_claim(struct store *st, uint64_t seq, char *ref, size_t reflen)
{
	struct store_hook_rec rec;
	int ret;

	if ((ret = store_head_get(st, store_readtxn(st), T_HOOKS, seq,
	    &rec)) != 1)
		return ret;
	ret = rec.claim_ref != NULL && rec.claim_ref[0] != '\0' ? 1 : 2;
	if (ret == 1 && ref != NULL)
		snprintf(ref, reflen, "%s", rec.claim_ref);
	store_hook_rec_free(&rec);
	return ret;
}

int
store_batch_hook_set_claim(struct store_batch *b, uint64_t seq,
    const char *ref)
{
	struct store *st = b->st;
	struct store_hook_rec rec;
	unsigned char hk[8];
	void *val;
	size_t len;
	int ret;

	if ((ret = store_rec_get(st, T_HOOKS, seq, &rec)) != 0)
		return ret == 1 ? 0 : -1;
	if ((val = hook_encode(&rec.hook, rec.rows, ref, NULL, NULL,
	    &len)) == NULL) {
		store_hook_rec_free(&rec);
		store_seterr(st, 0, "store %s: out of memory", st->dir);
		return -1;
	}
	store_hook_rec_free(&rec);
	store_key_hook(hk, seq);
	ret = store_put(st, b->txn, T_HOOKS, hk, sizeof(hk), val, len, 0);
	free(val);
	return ret == 0 ? 1 : -1;
}
