/* SPDX-License-Identifier: ISC */
/*
 * storeutil.c: the store's unit tests' shared fixtures and helpers; see
 * storeutil.h.
 */
#include "config.h"

#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <check.h>
#include <db.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ids.h"
#include "log.h"
#include "store_logsum.h"
#include "store.h"
#include "store_int.h"
#include "store_rec.h"
#include "storeutil.h"

char		 tmpdir[256];

static int	 rm_cb(const char *, const struct stat *, int, struct FTW *);

static const struct store_header test_headers[] = {
	{ "x-github-event", "push" },
	{ "x-empty", "" },
	{ "user-agent", "GitHub-Hookshot/abc" },
};

void
setup(void)
{
	const char *t = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/check_store.XXXXXX",
	    t != NULL ? t : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static int
rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(path);
}

/* The region files' directory under base of the store in dir (store.c,
 * bdb_region_home). */
void
home_of(char *buf, size_t len, const char *base, const char *dir)
{
	struct stat sb;

	ck_assert_int_eq(stat(dir, &sb), 0);
	snprintf(buf, len, "%s/ankusa-store-%lu-%llx-%llx", base,
	    (unsigned long)geteuid(), (unsigned long long)sb.st_dev,
	    (unsigned long long)sb.st_ino);
}

/* The temp dir, and the region files a killed child's store left. */
void
teardown(void)
{
	char home[PATH_MAX];

	home_of(home, sizeof(home), "/dev/shm", tmpdir);
	nftw(home, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	nftw(tmpdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

struct store *
open_ok(void)
{
	struct store *st;
	char err[1024];

	st = store_open(tmpdir, err, sizeof(err));
	ck_assert_msg(st != NULL, "store_open: %s", err);
	return st;
}

/* The forked child pid killed itself (SIGKILL: no close, no checkpoint,
 * and under valgrind no leak check of the store it dropped). */
void
child_killed(pid_t pid)
{
	int status;

	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	    "child status %d", status);
}

/* The forked child pid exited with 0. */
void
child_ok(pid_t pid)
{
	int status;

	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
}

void
hook_fill(struct store_hook *h, const char *source, const void *body,
    size_t len)
{
	memset(h, 0, sizeof(*h));
	uuidv7_new(h->id);
	h->tenant = "acme";
	h->source = source;
	h->received_at = 1700000000000ULL;
	h->method = "POST";
	h->path = "/webhooks/github";
	h->content_type = "application/json";
	h->headers = test_headers;
	h->nheaders = 3;
	h->body = body;
	h->body_len = len;
	memset(h->sha256, 0xab, sizeof(h->sha256));
	h->dedupe_key = "delivery-1";
}

/* One hook with one unordered row in its own batch; returns its seq. */
uint64_t
put_one(struct store *st, const char *source, const void *body, size_t len,
    int commit)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_batch *b;
	struct store_hook h;

	hook_fill(&h, source, body, len);
	ck_assert_msg((b = store_batch_begin(st)) != NULL, "begin: %s",
	    store_strerror(st));
	ck_assert_msg(store_batch_put_hook(b, &h, &row, 1) == 0, "put: %s",
	    store_strerror(st));
	if (commit)
		ck_assert_msg(store_batch_commit(b) == 0, "commit: %s",
		    store_strerror(st));
	else
		store_batch_abort(b);
	return h.seq;
}

int
list_cb(const struct store_hook_info *info, void *arg)
{
	struct listed *l = arg;

	ck_assert_int_lt(l->n, 16);
	l->info[l->n++] = *info;
	return l->stop_after != 0 && l->n >= l->stop_after;
}

int
qlist_cb(const struct store_quarantine_info *info, void *arg)
{
	struct qlisted *l = arg;

	ck_assert_int_lt(l->n, 16);
	l->info[l->n++] = *info;
	return l->stop_after != 0 && l->n >= l->stop_after;
}

/* One hook of tenant/source with a dedupe key expiring at expires, in its
 * own committed batch; its id to id_out unless NULL. */
void
put_dedupe(struct store *st, const char *tenant, const char *source,
    const char *key, uint64_t expires, unsigned char *id_out)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_batch *b;
	struct store_hook h;

	hook_fill(&h, source, "d", 1);
	h.tenant = tenant;
	h.dedupe_key = key;
	h.dedupe_expires = expires;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	ck_assert_msg(store_batch_commit(b) == 0, "commit: %s",
	    store_strerror(st));
	if (id_out != NULL)
		memcpy(id_out, h.id, UUID_LEN);
}

/* One held hook in its own batch (committed or aborted); its seq. */
uint64_t
put_quarantined(struct store *st, const char *source, const void *body,
    size_t len, const char *reason, int commit)
{
	struct store_batch *b;
	struct store_hook h;

	hook_fill(&h, source, body, len);
	h.dedupe_key = NULL;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_quarantine(b, &h, reason), 0);
	if (commit)
		ck_assert_msg(store_batch_commit(b) == 0, "commit: %s",
		    store_strerror(st));
	else
		store_batch_abort(b);
	return h.seq;
}

/* One sweep in its own batch, committed or aborted; what it returned. */
int
sweep(struct store *st, uint64_t now, unsigned max, int commit)
{
	struct store_batch *b;
	int n;

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	n = store_batch_sweep_dedupe(b, now, max);
	ck_assert_msg(n >= 0, "sweep: %s", store_strerror(st));
	if (commit)
		ck_assert_msg(store_batch_commit(b) == 0, "commit: %s",
		    store_strerror(st));
	else
		store_batch_abort(b);
	return n;
}

/* Remove a meta record behind the store's back (the store is closed). */
void
meta_delete(const char *name)
{
	DB_ENV *env;
	DB *db;
	DBT k;

	ck_assert_int_eq(db_env_create(&env, 0), 0);
	ck_assert_int_eq(env->open(env, tmpdir, DB_CREATE | DB_INIT_TXN |
	    DB_INIT_LOCK | DB_INIT_LOG | DB_INIT_MPOOL | DB_RECOVER, 0600), 0);
	ck_assert_int_eq(db_create(&db, env, 0), 0);
	ck_assert_int_eq(db->open(db, NULL, "meta.db", NULL, DB_BTREE,
	    DB_AUTO_COMMIT, 0600), 0);
	memset(&k, 0, sizeof(k));
	k.data = (void *)name;
	k.size = strlen(name);
	ck_assert_int_eq(db->del(db, NULL, &k, DB_AUTO_COMMIT), 0);
	ck_assert_int_eq(db->close(db, 0), 0);
	ck_assert_int_eq(env->txn_checkpoint(env, 0, 0, DB_FORCE), 0);
	ck_assert_int_eq(env->close(env, 0), 0);
}

/* Write a record behind the store's back (the store is closed). */
void
table_poke(const char *file, const void *key, size_t klen, const void *val,
    size_t len)
{
	DB_ENV *env;
	DB *db;
	DBT k, v;

	ck_assert_int_eq(db_env_create(&env, 0), 0);
	ck_assert_int_eq(env->open(env, tmpdir, DB_CREATE | DB_INIT_TXN |
	    DB_INIT_LOCK | DB_INIT_LOG | DB_INIT_MPOOL | DB_RECOVER, 0600), 0);
	ck_assert_int_eq(db_create(&db, env, 0), 0);
	ck_assert_int_eq(db->open(db, NULL, file, NULL, DB_BTREE,
	    DB_CREATE | DB_AUTO_COMMIT, 0600), 0);
	memset(&k, 0, sizeof(k));
	memset(&v, 0, sizeof(v));
	k.data = (void *)key;
	k.size = klen;
	v.data = (void *)val;
	v.size = len;
	ck_assert_int_eq(db->put(db, NULL, &k, &v, DB_AUTO_COMMIT), 0);
	ck_assert_int_eq(db->close(db, 0), 0);
	ck_assert_int_eq(env->txn_checkpoint(env, 0, 0, DB_FORCE), 0);
	ck_assert_int_eq(env->close(env, 0), 0);
}

void
meta_poke(const char *name, const void *val, size_t len)
{
	table_poke("meta.db", name, strlen(name), val, len);
}

/* Overwrite len bytes at off of a table file with a pattern. */
void
file_scribble(const char *file, off_t off, size_t len)
{
	char path[512];
	unsigned char junk[4096];
	int fd;

	ck_assert_uint_le(len, sizeof(junk));
	memset(junk, 0x5a, sizeof(junk));
	snprintf(path, sizeof(path), "%s/%s", tmpdir, file);
	ck_assert_int_ge(fd = open(path, O_WRONLY), 0);
	ck_assert_int_eq(pwrite(fd, junk, len, off), (ssize_t)len);
	close(fd);
}

/* Delete a record behind the store's back (the store is closed). */
void
table_del(const char *file, const void *key, size_t klen)
{
	DB_ENV *env;
	DB *db;
	DBT k;

	ck_assert_int_eq(db_env_create(&env, 0), 0);
	ck_assert_int_eq(env->open(env, tmpdir, DB_CREATE | DB_INIT_TXN |
	    DB_INIT_LOCK | DB_INIT_LOG | DB_INIT_MPOOL | DB_RECOVER, 0600), 0);
	ck_assert_int_eq(db_create(&db, env, 0), 0);
	ck_assert_int_eq(db->open(db, NULL, file, NULL, DB_BTREE,
	    DB_AUTO_COMMIT, 0600), 0);
	memset(&k, 0, sizeof(k));
	k.data = (void *)key;
	k.size = klen;
	ck_assert_int_eq(db->del(db, NULL, &k, DB_AUTO_COMMIT), 0);
	ck_assert_int_eq(db->close(db, 0), 0);
	ck_assert_int_eq(env->txn_checkpoint(env, 0, 0, DB_FORCE), 0);
	ck_assert_int_eq(env->close(env, 0), 0);
}

/* Every record of file's table goes, as a build that never wrote it left
 * it (the daemon stopped). */
void
table_truncate(const char *file)
{
	DB_ENV *env;
	DB *db;
	u_int32_t n;

	ck_assert_int_eq(db_env_create(&env, 0), 0);
	ck_assert_int_eq(env->open(env, tmpdir, DB_CREATE | DB_INIT_TXN |
	    DB_INIT_LOCK | DB_INIT_LOG | DB_INIT_MPOOL | DB_RECOVER, 0600), 0);
	ck_assert_int_eq(db_create(&db, env, 0), 0);
	ck_assert_int_eq(db->open(db, NULL, file, NULL, DB_BTREE,
	    DB_AUTO_COMMIT, 0600), 0);
	ck_assert_int_eq(db->truncate(db, NULL, &n, DB_AUTO_COMMIT), 0);
	ck_assert_int_eq(db->close(db, 0), 0);
	ck_assert_int_eq(env->txn_checkpoint(env, 0, 0, DB_FORCE), 0);
	ck_assert_int_eq(env->close(env, 0), 0);
}

/* One hook of tenant/source received at with body and rows, in its own
 * committed batch; its seq. */
uint64_t
put_hook_body(struct store *st, const char *tenant, const char *source,
    uint64_t at, const void *body, size_t len,
    const struct store_row_spec *rows, int nrows)
{
	struct store_batch *b;
	struct store_hook h;

	hook_fill(&h, source, body, len);
	h.tenant = tenant;
	h.received_at = at;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_hook(b, &h, rows, nrows), 0);
	commit_ok(st, b);
	return h.seq;
}

uint64_t
put_rows(struct store *st, const char *tenant, const char *source,
    uint64_t at, const struct store_row_spec *rows, int nrows)
{
	return put_hook_body(st, tenant, source, at, "x", 1, rows, nrows);
}

void
commit_ok(struct store *st, struct store_batch *b)
{
	ck_assert_msg(store_batch_commit(b) == 0, "commit: %s",
	    store_strerror(st));
}

/* Settles in their own committed batch; what the settle returned.  known:
 * the row as claimed, or NULL. */
int
deliver_known(struct store *st, const unsigned char *rk,
    const struct store_row *known)
{
	struct store_batch *b;
	int ret;

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ret = store_batch_row_delivered(b, rk, known, NULL);
	ck_assert_msg(ret >= 0, "delivered: %s", store_strerror(st));
	commit_ok(st, b);
	return ret;
}

int
deliver(struct store *st, uint64_t seq, uint32_t sink)
{
	unsigned char rk[STORE_ROWKEY_LEN];

	store_key_row(rk, seq, sink);
	return deliver_known(st, rk, NULL);
}

int
kill_row(struct store *st, uint64_t seq, uint32_t sink, uint64_t at,
    const char *reason, const char *last_error, uint32_t attempts)
{
	struct store_batch *b;
	unsigned char rk[STORE_ROWKEY_LEN];
	int ret;

	store_key_row(rk, seq, sink);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ret = store_batch_row_dead(b, rk, at, reason, last_error, attempts);
	ck_assert_msg(ret >= 0, "dead: %s", store_strerror(st));
	commit_ok(st, b);
	return ret;
}

/* Dead-letter every row of sc in one batch, as dead_letter_source. */
void
kill_scanned(struct store *st, const struct scanned *sc)
{
	struct store_batch *b;
	unsigned char rk[STORE_ROWKEY_LEN];
	int i;

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	for (i = 0; i < sc->n; i++) {
		store_key_row(rk, sc->seq[i], sc->sink[i]);
		ck_assert_int_eq(store_batch_row_dead(b, rk, 1000,
		    "source_gone:github", "", 0), 1);
	}
	commit_ok(st, b);
}

/* Hooks a and b deleted behind the store's back, their rows left: the
 * store reopened. */
struct store *
orphan(struct store *st, uint64_t a, uint64_t b)
{
	unsigned char hk[8];

	store_close(st);
	store_key_hook(hk, a);
	table_del("hooks.db", hk, sizeof(hk));
	store_key_hook(hk, b);
	table_del("hooks.db", hk, sizeof(hk));
	return open_ok();
}

/* Sink 0 of seq heads its lane, and no member is left behind it. */
void
head_alone(struct store *st, uint64_t seq)
{
	struct store_row r;
	unsigned char rk[STORE_ROWKEY_LEN];

	store_key_row(rk, seq, 0);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_uint_eq(store_lane_members(st), 0);
	ck_assert_int_eq(store_debug_count(st, "members"), 0);
	ck_assert_int_eq(store_debug_count(st, "marks"), 0);
}

int
lane_sweep(struct store *st, const char *tenant, unsigned max)
{
	struct store_batch *b;
	int n;

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	n = store_batch_lane_sweep(b, tenant, 0, max);
	ck_assert_msg(n >= 0, "sweep: %s", store_strerror(st));
	commit_ok(st, b);
	return n;
}

int
tenants_cb(const char *tenant, uint64_t due, void *arg)
{
	struct tenants_seen *ts = arg;

	ck_assert_int_lt(ts->n, 8);
	snprintf(ts->tenant[ts->n], sizeof(ts->tenant[0]), "%s", tenant);
	ts->due[ts->n++] = due;
	return ts->stop_after != 0 && ts->n >= ts->stop_after;
}

int
scan_keys_cb(const unsigned char *key, size_t klen, uint64_t due,
    const unsigned char *rk, const struct store_row *r, void *arg)
{
	struct scanned *sc = arg;
	int i = sc->n;

	ck_assert_int_lt(i, 16);
	sc->seq[i] = ((uint64_t)rk[0] << 56 | (uint64_t)rk[1] << 48 |
	    (uint64_t)rk[2] << 40 | (uint64_t)rk[3] << 32 |
	    (uint64_t)rk[4] << 24 | (uint64_t)rk[5] << 16 |
	    (uint64_t)rk[6] << 8 | rk[7]);
	sc->sink[i] = (uint32_t)rk[8] << 24 | (uint32_t)rk[9] << 16 |
	    (uint32_t)rk[10] << 8 | rk[11];
	sc->null[i] = r == NULL;
	if (r != NULL)
		sc->row[i] = *r;
	sc->due[i] = due;
	if (key != NULL) {
		ck_assert_uint_le(klen, sizeof(sc->key[0]));
		memcpy(sc->key[i], key, klen);
		sc->klen[i] = klen;
	}
	sc->n++;
	return sc->stop_after != 0 && sc->n >= sc->stop_after;
}

int
scan_cb(const unsigned char *rk, const struct store_row *r, void *arg)
{
	return scan_keys_cb(NULL, 0, 0, rk, r, arg);
}

int
pending_cb(const unsigned char *rk, const struct store_row *r, void *arg)
{
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_ne(r->state, STORE_ROW_DEAD);
	return scan_keys_cb(NULL, 0, 0, rk, r, arg);
}

int
marked_cb(const char *tenant, void *arg)
{
	return tenants_cb(tenant, 0, arg);
}

int
dead_cb(const struct store_dead_info *info, void *arg)
{
	struct dead_seen *ds = arg;

	ck_assert_int_lt(ds->n, 8);
	ds->info[ds->n++] = *info;
	return ds->stop_after != 0 && ds->n >= ds->stop_after;
}

/* Whether log file n is in the store's directory: as the log's (prefix
 * "log."), or removed and waiting to be emptied ("removed-log."). */
int
file_exists(const char *prefix, uint32_t n)
{
	char path[512];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/%s%010u", tmpdir, prefix, n);
	return stat(path, &sb) == 0;
}

int
log_file_exists(uint32_t n)
{
	return file_exists("log.", n);
}

/* A check_store_* program's main: its suite, the store's warnings shown
 * with STORE_SHOW set. */
/*
 * The store's verbs that only the tests call, over what store_int.h and
 * store.h share.
 */

/* The tenant's due keys with due <= now_ms, each with its row (NULL: a
 * key without a pending row), as store_due_scan_from walks them. */
int
due_scan_keys(struct store *st, const char *tenant, uint64_t now_ms,
    int (*cb)(const unsigned char *, size_t, uint64_t, const unsigned char *,
    const struct store_row *, void *), void *arg)
{
	return store_due_scan_from(st, tenant, now_ms, 0, NULL, NULL, cb, arg);
}

struct due_scan_ctx {
	int	(*cb)(const unsigned char *, const struct store_row *, void *);
	void	*arg;
};

static int
due_scan_fn(const unsigned char *key, size_t klen, uint64_t due,
    const unsigned char *rk, const struct store_row *r, void *arg)
{
	struct due_scan_ctx *ctx = arg;

	return ctx->cb(rk, r, ctx->arg);
}

int
due_scan(struct store *st, const char *tenant, uint64_t now_ms,
    int (*cb)(const unsigned char *, const struct store_row *, void *),
    void *arg)
{
	struct due_scan_ctx ctx;

	ctx.cb = cb;
	ctx.arg = arg;
	return due_scan_keys(st, tenant, now_ms, due_scan_fn, &ctx);
}

int
row_get(struct store *st, const unsigned char rk[STORE_ROWKEY_LEN],
    struct store_row *r)
{
	int ret;

	st->dberr[0] = '\0';
	ret = rows_read(st, store_readtxn(st), rk, r);
	return ret == -2 ? -1 : ret;
}

uint64_t
trash_wait(struct store *st)
{
	uint64_t steps;

	pthread_mutex_lock(&st->trash.mu);
	while (st->trash.n > 0 && st->trash.on && !st->trash.stop)
		pthread_cond_wait(&st->trash.cv, &st->trash.mu);
	steps = st->trash.steps;
	pthread_mutex_unlock(&st->trash.mu);
	return steps;
}

void *
hook_encode(const struct store_hook *h, uint32_t rows, const char *claim_ref,
    size_t *lenp)
{
	return rec_hook_encode(h, rows, claim_ref, NULL, NULL, lenp);
}

void *
hook_encode_at(const struct store_hook *h, uint32_t rows,
    const char *claim_ref, const struct store_body_at *at, size_t *lenp)
{
	return rec_hook_encode(h, rows, claim_ref, NULL, at, lenp);
}

void *
quarantine_encode(const struct store_hook *h, const char *reason,
    size_t *lenp)
{
	return rec_hook_encode(h, 0, "", reason != NULL ? reason : "", NULL,
	    lenp);
}

int
hook_decode(const char *table, const void *key, size_t klen,
    const void *val, size_t vlen, struct store_hook_rec *out, char *err,
    size_t errlen)
{
	int t = store_table_index(table);

	if (t != T_HOOKS && t != T_QUARANTINE) {
		snprintf(err, errlen, "store: %s holds no hooks", table);
		return -1;
	}
	memset(out, 0, sizeof(*out));
	return rec_hook_decode(t, key, klen, val, vlen, 0, out, err, errlen);
}

int
storeutil_run(Suite *s)
{
	SRunner *sr;
	int failed;

	log_init("check_store", 1);
	log_setlevel(getenv("STORE_SHOW") != NULL ?
	    LOG_LEVEL_WARN : LOG_LEVEL_ERROR);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
