/*
 * check_store.c: unit tests of the Berkeley DB store (daemon/store.c).
 *
 * Each case works in its own mkdtemp directory under TMPDIR and removes it.
 * The recovery case forks a child that commits and then _exit()s without
 * closing anything, as a SIGKILL would leave the environment.  Damage cases
 * edit the files with BDB or plain writes behind the store's back.
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
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ids.h"
#include "log.h"
#include "logsum.h"
#include "store.h"

#define BIG_BODY	(1024 * 1024)

struct listed {
	struct store_hook_info	info[16];
	int			n;
	int			stop_after;	/* 0: never */
};

struct qlisted {
	struct store_quarantine_info	info[16];
	int				n;
	int				stop_after;	/* 0: never */
};

struct tenants_seen {
	char		tenant[8][STORE_NAME_MAX + 1];
	uint64_t	due[8];
	int		n;
	int		stop_after;	/* 0: never */
};

/* Rows handed to a due scan or a pending walk. */
struct scanned {
	uint64_t		seq[16];
	uint32_t		sink[16];
	int			null[16];	/* handed with no row */
	struct store_row	row[16];
	uint64_t		due[16];	/* store_due_scan_keys */
	unsigned char		key[16][128];
	size_t			klen[16];
	int			n;
	int			stop_after;	/* 0: never */
};

struct dead_seen {
	struct store_dead_info	info[8];
	int			n;
	int			stop_after;	/* 0: never */
};

struct tables_case {
	const char	*table;
	const char	*want;		/* expected start of the error */
};

static char	 tmpdir[256];

static void	 setup(void);
static void	 teardown(void);
static int	 rm_cb(const char *, const struct stat *, int, struct FTW *);
static void	 hook_fill(struct store_hook *, const char *, const void *,
		    size_t);
static uint64_t	 put_one(struct store *, const char *, const void *, size_t,
		    int);
static int	 list_cb(const struct store_hook_info *, void *);
static int	 qlist_cb(const struct store_quarantine_info *, void *);
static void	 put_dedupe(struct store *, const char *, const char *,
		    const char *, uint64_t, unsigned char *);
static uint64_t	 put_quarantined(struct store *, const char *, const void *,
		    size_t, const char *, int);
static void	 meta_delete(const char *);
static int	 sweep(struct store *, uint64_t, unsigned, int);
static struct store *open_ok(void);
static void	 meta_poke(const char *, const void *, size_t);
static void	 table_poke(const char *, const void *, size_t, const void *,
		    size_t);
static void	 file_scribble(const char *, off_t, size_t);
static void	 table_del(const char *, const void *, size_t);
static uint64_t	 put_hook_body(struct store *, const char *, const char *,
		    uint64_t, const void *, size_t,
		    const struct store_row_spec *, int);
static uint64_t	 put_rows(struct store *, const char *, const char *,
		    uint64_t, const struct store_row_spec *, int);
static void	 commit_ok(struct store *, struct store_batch *);
static int	 deliver(struct store *, uint64_t, uint32_t);
static int	 kill_row(struct store *, uint64_t, uint32_t, uint64_t,
		    const char *, const char *, uint32_t);
static void	 kill_scanned(struct store *, const struct scanned *);
static int	 lane_sweep(struct store *, const char *, unsigned);
static void	 head_alone(struct store *, uint64_t);
static struct store *orphan(struct store *, uint64_t, uint64_t);
static int	 tenants_cb(const char *, uint64_t, void *);
static int	 scan_cb(const unsigned char *, const struct store_row *,
		    void *);
static int	 scan_keys_cb(const unsigned char *, size_t, uint64_t,
		    const unsigned char *, const struct store_row *, void *);
static int	 pending_cb(const unsigned char *, const struct store_row *,
		    void *);
static int	 dead_cb(const struct store_dead_info *, void *);
static int	 marked_cb(const char *, void *);
static Suite	*store_suite(void);

static const struct store_header test_headers[] = {
	{ "x-github-event", "push" },
	{ "x-empty", "" },
	{ "user-agent", "GitHub-Hookshot/abc" },
};

static void
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
 * region_home). */
static void
home_of(char *buf, size_t len, const char *base, const char *dir)
{
	struct stat sb;

	ck_assert_int_eq(stat(dir, &sb), 0);
	snprintf(buf, len, "%s/ankusa-store-%lu-%llx-%llx", base,
	    (unsigned long)geteuid(), (unsigned long long)sb.st_dev,
	    (unsigned long long)sb.st_ino);
}

/* The temp dir, and the region files a killed child's store left. */
static void
teardown(void)
{
	char home[PATH_MAX];

	home_of(home, sizeof(home), "/dev/shm", tmpdir);
	nftw(home, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	nftw(tmpdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static struct store *
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
static void
child_killed(pid_t pid)
{
	int status;

	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	    "child status %d", status);
}

/* The forked child pid exited with 0. */
static void
child_ok(pid_t pid)
{
	int status;

	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
}

static void
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
static uint64_t
put_one(struct store *st, const char *source, const void *body, size_t len,
    int commit)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_batch *b;
	struct store_hook h;

	hook_fill(&h, source, body, len);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	if (commit)
		ck_assert_msg(store_batch_commit(b) == 0, "commit: %s",
		    store_strerror(st));
	else
		store_batch_abort(b);
	return h.seq;
}

static int
list_cb(const struct store_hook_info *info, void *arg)
{
	struct listed *l = arg;

	ck_assert_int_lt(l->n, 16);
	l->info[l->n++] = *info;
	return l->stop_after != 0 && l->n >= l->stop_after;
}

static int
qlist_cb(const struct store_quarantine_info *info, void *arg)
{
	struct qlisted *l = arg;

	ck_assert_int_lt(l->n, 16);
	l->info[l->n++] = *info;
	return l->stop_after != 0 && l->n >= l->stop_after;
}

/* One hook of tenant/source with a dedupe key expiring at expires, in its
 * own committed batch; its id to id_out unless NULL. */
static void
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
static uint64_t
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
static int
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
static void
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
static void
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

static void
meta_poke(const char *name, const void *val, size_t len)
{
	table_poke("meta.db", name, strlen(name), val, len);
}

/* Overwrite len bytes at off of a table file with a pattern. */
static void
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
static void
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

/* One hook of tenant/source received at with body and rows, in its own
 * committed batch; its seq. */
static uint64_t
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

static uint64_t
put_rows(struct store *st, const char *tenant, const char *source,
    uint64_t at, const struct store_row_spec *rows, int nrows)
{
	return put_hook_body(st, tenant, source, at, "x", 1, rows, nrows);
}

static void
commit_ok(struct store *st, struct store_batch *b)
{
	ck_assert_msg(store_batch_commit(b) == 0, "commit: %s",
	    store_strerror(st));
}

/* Settles in their own committed batch; what the settle returned.  known:
 * the row as claimed, or NULL. */
static int
deliver_known(struct store *st, const unsigned char *rk,
    const struct store_row *known)
{
	struct store_batch *b;
	int ret;

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ret = store_batch_row_delivered(b, rk, known);
	ck_assert_msg(ret >= 0, "delivered: %s", store_strerror(st));
	commit_ok(st, b);
	return ret;
}

static int
deliver(struct store *st, uint64_t seq, uint32_t sink)
{
	unsigned char rk[STORE_ROWKEY_LEN];

	store_key_row(rk, seq, sink);
	return deliver_known(st, rk, NULL);
}

static int
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
static void
kill_scanned(struct store *st, const struct scanned *sc)
{
	struct store_batch *b;
	unsigned char rk[STORE_ROWKEY_LEN];
	int i;

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	for (i = 0; i < sc->n; i++) {
		store_key_row(rk, sc->seq[i], sc->sink[i]);
		ck_assert_int_eq(store_batch_row_dead(b, rk, 1000,
		    "source_gone:github", "", 0), 0);
	}
	commit_ok(st, b);
}

/* Hooks a and b deleted behind the store's back, their rows left: the
 * store reopened. */
static struct store *
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
static void
head_alone(struct store *st, uint64_t seq)
{
	struct store_row r;
	unsigned char rk[STORE_ROWKEY_LEN];

	store_key_row(rk, seq, 0);
	ck_assert_int_eq(store_row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_uint_eq(store_lane_members(st), 0);
	ck_assert_int_eq(store_debug_count(st, "members"), 0);
	ck_assert_int_eq(store_debug_count(st, "marks"), 0);
}

static int
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

static int
tenants_cb(const char *tenant, uint64_t due, void *arg)
{
	struct tenants_seen *ts = arg;

	ck_assert_int_lt(ts->n, 8);
	snprintf(ts->tenant[ts->n], sizeof(ts->tenant[0]), "%s", tenant);
	ts->due[ts->n++] = due;
	return ts->stop_after != 0 && ts->n >= ts->stop_after;
}

static int
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

static int
scan_cb(const unsigned char *rk, const struct store_row *r, void *arg)
{
	return scan_keys_cb(NULL, 0, 0, rk, r, arg);
}

static int
pending_cb(const unsigned char *rk, const struct store_row *r, void *arg)
{
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_ne(r->state, STORE_ROW_DEAD);
	return scan_keys_cb(NULL, 0, 0, rk, r, arg);
}

static int
marked_cb(const char *tenant, void *arg)
{
	return tenants_cb(tenant, 0, arg);
}

static int
dead_cb(const struct store_dead_info *info, void *arg)
{
	struct dead_seen *ds = arg;

	ck_assert_int_lt(ds->n, 8);
	ds->info[ds->n++] = *info;
	return ds->stop_after != 0 && ds->n >= ds->stop_after;
}

START_TEST(test_round_trip)
{
	static const unsigned char bin[] = { 0, 1, 2, 0xff, 0, '\r', '\n' };
	struct store_row_spec rows[2] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_SQS, 0, 0 },
	};
	struct store_hook h[3];
	struct store_hook_rec rec;
	struct store_counts c;
	struct store_batch *b;
	struct store *st;
	struct listed l;
	struct store_header bighdr;
	unsigned char *big;
	char idbuf[UUID_STRLEN + 1], *longval;
	int i, j;

	ck_assert_ptr_nonnull(big = malloc(BIG_BODY));
	for (i = 0; i < BIG_BODY; i++)
		big[i] = (unsigned char)(i * 7 + (i >> 9));
	st = open_ok();
	hook_fill(&h[0], "github", bin, sizeof(bin));
	hook_fill(&h[1], "stripe", big, BIG_BODY);
	h[1].flagged = 1;
	h[1].dedupe_key = NULL;
	h[1].content_type = "";
	hook_fill(&h[2], "github", "", 0);
	/* A head larger than the listing's first read. */
	ck_assert_ptr_nonnull(longval = malloc(6001));
	memset(longval, 'v', 6000);
	longval[6000] = '\0';
	bighdr.name = "x-long";
	bighdr.value = longval;
	h[2].nheaders = 1;
	h[2].headers = &bighdr;

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_ptr_null(store_batch_begin(st));	/* one at a time */
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(store_batch_put_hook(b, &h[i], rows, 2), 0);
	ck_assert_msg(store_batch_commit(b) == 0, "%s", store_strerror(st));
	ck_assert_uint_eq(h[0].seq, 1);
	ck_assert_uint_eq(h[1].seq, 2);
	ck_assert_uint_eq(h[2].seq, 3);

	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.hooks, 3);
	ck_assert_uint_eq(c.rows, 6);
	ck_assert_uint_eq(c.dead, 0);
	ck_assert_int_eq(store_debug_count(st, "rows"), 6);
	ck_assert_int_eq(store_debug_count(st, "due"), 6);
	ck_assert_int_eq(store_debug_count(st, "members"), 0);
	ck_assert_int_eq(store_debug_count(st, "nonesuch"), -1);

	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_hooks_list(st, NULL, 0, 0, list_cb, &l), 0);
	ck_assert_int_eq(l.n, 3);
	for (i = 0; i < 3; i++) {
		uuid_format(h[i].id, idbuf);
		ck_assert_uint_eq(l.info[i].seq, h[i].seq);
		ck_assert_str_eq(l.info[i].id, idbuf);
		ck_assert_str_eq(l.info[i].tenant, "acme");
		ck_assert_str_eq(l.info[i].source, h[i].source);
		ck_assert_uint_eq(l.info[i].received_at, h[i].received_at);
		ck_assert_uint_eq(l.info[i].size, h[i].body_len);
		ck_assert_uint_eq(l.info[i].rows, 2);
		ck_assert_int_eq(l.info[i].flagged, h[i].flagged);
	}

	/* Filter, after_seq and limit. */
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_hooks_list(st, "github", 0, 0, list_cb, &l), 0);
	ck_assert_int_eq(l.n, 2);
	ck_assert_uint_eq(l.info[1].seq, 3);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_hooks_list(st, NULL, 1, 1, list_cb, &l), 0);
	ck_assert_int_eq(l.n, 1);
	ck_assert_uint_eq(l.info[0].seq, 2);
	memset(&l, 0, sizeof(l));
	l.stop_after = 2;
	ck_assert_int_eq(store_hooks_list(st, NULL, 0, 0, list_cb, &l), 0);
	ck_assert_int_eq(l.n, 2);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_hooks_list(st, NULL, 3, 0, list_cb, &l), 0);
	ck_assert_int_eq(l.n, 0);

	/* Every field back, byte for byte. */
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(store_hook_get(st, h[i].seq, &rec), 0);
		ck_assert_mem_eq(rec.hook.id, h[i].id, UUID_LEN);
		ck_assert_str_eq(rec.hook.tenant, h[i].tenant);
		ck_assert_str_eq(rec.hook.source, h[i].source);
		ck_assert_str_eq(rec.hook.method, h[i].method);
		ck_assert_str_eq(rec.hook.path, h[i].path);
		ck_assert_str_eq(rec.hook.content_type, h[i].content_type);
		ck_assert_uint_eq(rec.hook.received_at, h[i].received_at);
		ck_assert_int_eq(rec.hook.flagged, h[i].flagged);
		ck_assert_mem_eq(rec.hook.sha256, h[i].sha256, 32);
		if (h[i].dedupe_key == NULL)
			ck_assert_ptr_null(rec.hook.dedupe_key);
		else
			ck_assert_str_eq(rec.hook.dedupe_key, h[i].dedupe_key);
		ck_assert_int_eq(rec.hook.nheaders, h[i].nheaders);
		for (j = 0; j < h[i].nheaders; j++) {
			ck_assert_str_eq(rec.hook.headers[j].name,
			    h[i].headers[j].name);
			ck_assert_str_eq(rec.hook.headers[j].value,
			    h[i].headers[j].value);
		}
		ck_assert_uint_eq(rec.hook.body_len, h[i].body_len);
		ck_assert_uint_eq(rec.body_size, h[i].body_len);
		ck_assert_int_eq(memcmp(rec.hook.body, h[i].body,
		    h[i].body_len), 0);
		ck_assert_uint_eq(rec.rows, 2);
		ck_assert_str_eq(rec.claim_ref, "");
		store_hook_rec_free(&rec);
	}
	ck_assert_int_eq(store_hook_get(st, 99, &rec), 1);
	store_close(st);
	free(big);
	free(longval);
}
END_TEST

START_TEST(test_seq_never_reused)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_counts c;
	struct store_hook h;
	struct store_batch *b;
	struct store *st;
	struct listed l;
	unsigned char rk[STORE_ROWKEY_LEN];
	uint64_t s1, s2, s3, next;

	st = open_ok();
	/* store_next_seq names the seq the next put takes (the writer's
	 * claim horizon, pipeline_step, relies on it). */
	next = store_next_seq(st);
	s1 = put_one(st, "github", "a", 1, 1);
	ck_assert_uint_eq(s1, next);
	s2 = put_one(st, "github", "b", 1, 0);		/* aborted */
	ck_assert_uint_eq(store_next_seq(st), s2 + 1);
	s3 = put_one(st, "github", "c", 1, 1);
	ck_assert_uint_gt(s2, s1);
	ck_assert_uint_gt(s3, s2);
	store_key_row(rk, s3, 7);
	ck_assert_uint_eq(store_rowkey_seq(rk), s3);

	/* A put refused (a tenant too long) fails its batch, which commit
	 * aborts; the put took no seq, so the next put gets s3 + 1. */
	hook_fill(&h, "github", "d", 1);
	h.tenant = "a-tenant-id-that-is-much-too-long-to-be-stored-as-one-"
	    "because-it-is-over-64";
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), -1);
	ck_assert_int_eq(store_batch_commit(b), -1);
	ck_assert_ptr_nonnull(strstr(store_strerror(st), "tenant"));
	next = store_next_seq(st);
	ck_assert_uint_eq(next, s3 + 1);	/* refused before taking one */
	ck_assert_uint_eq(put_one(st, "github", "e", 1, 1), next);

	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.hooks, 3);
	ck_assert_uint_eq(c.rows, 3);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_hooks_list(st, NULL, 0, 0, list_cb, &l), 0);
	ck_assert_int_eq(l.n, 3);
	ck_assert_uint_eq(l.info[0].seq, s1);
	ck_assert_uint_eq(l.info[1].seq, s3);
	ck_assert_int_eq(store_debug_count(st, "due"), 3);
	store_close(st);
}
END_TEST

/* A read while a batch is open must not wait on the batch's locks. */
START_TEST(test_read_during_batch)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_hook_rec rec;
	struct store_batch *b;
	struct store_hook h;
	struct store *st;
	struct listed l;

	st = open_ok();
	put_one(st, "github", "first", 5, 1);
	hook_fill(&h, "github", "second", 6);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_hooks_list(st, NULL, 0, 0, list_cb, &l), 0);
	ck_assert_int_eq(l.n, 2);
	ck_assert_int_eq(store_hook_get(st, 1, &rec), 0);
	store_hook_rec_free(&rec);
	ck_assert_int_eq(store_debug_count(st, "due"), 2);
	ck_assert_int_eq(store_batch_commit(b), 0);
	ck_assert_int_eq(store_debug_count(st, "due"), 2);
	store_close(st);
}
END_TEST

START_TEST(test_restart)
{
	struct store_counts c;
	struct store *st;
	struct listed l;
	uint64_t s1, s2, s3;
	char err[1024];

	st = open_ok();
	s1 = put_one(st, "github", "one", 3, 1);
	s2 = put_one(st, "github", "two", 3, 1);
	store_close(st);

	st = open_ok();
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.hooks, 2);
	ck_assert_uint_eq(c.rows, 2);
	s3 = put_one(st, "stripe", "three", 5, 1);
	ck_assert_uint_eq(s3, s2 + 1);
	store_close(st);

	ck_assert_ptr_nonnull(st = store_open(tmpdir, err, sizeof(err)));
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_hooks_list(st, NULL, 0, 0, list_cb, &l), 0);
	ck_assert_int_eq(l.n, 3);
	ck_assert_uint_eq(l.info[0].seq, s1);
	ck_assert_uint_eq(l.info[2].seq, s3);
	ck_assert_uint_eq(l.info[2].size, 5);
	ck_assert_int_eq(store_checkpoint(st), 0);
	store_close(st);
}
END_TEST

START_TEST(test_recovery)
{
	struct store_counts c;
	struct store *st;
	struct listed l;
	pid_t pid;
	int i;

	if ((pid = fork()) == 0) {
		struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
		struct store_batch *b;
		struct store_hook h;
		char err[1024];

		if ((st = store_open(tmpdir, err, sizeof(err))) == NULL)
			_exit(2);
		for (i = 0; i < 5; i++) {
			hook_fill(&h, "github", "committed", 9);
			if ((b = store_batch_begin(st)) == NULL ||
			    store_batch_put_hook(b, &h, &row, 1) != 0 ||
			    store_batch_commit(b) != 0)
				_exit(3);
		}
		/* Left open, never committed: must not survive. */
		hook_fill(&h, "github", "lost", 4);
		if ((b = store_batch_begin(st)) == NULL ||
		    store_batch_put_hook(b, &h, &row, 1) != 0)
			_exit(4);
		_exit(0);	/* no close, no checkpoint: as SIGKILL */
	}
	child_ok(pid);

	st = open_ok();
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_hooks_list(st, NULL, 0, 0, list_cb, &l), 0);
	ck_assert_int_eq(l.n, 5);
	for (i = 0; i < 5; i++) {
		ck_assert_uint_eq(l.info[i].seq, i + 1);
		ck_assert_uint_eq(l.info[i].size, 9);
	}
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.hooks, 5);
	ck_assert_uint_eq(c.rows, 5);
	ck_assert_int_eq(store_debug_count(st, "rows"), 5);
	ck_assert_int_eq(store_debug_count(st, "due"), 5);
	ck_assert_uint_eq(put_one(st, "github", "next", 4, 1), 6);
	store_close(st);
}
END_TEST

/*
 * The log file is zero-filled ahead of the log's end after a commit, so
 * that a commit's sync does not allocate blocks (BDB's file is sparse);
 * after a crash, recovery takes the zeros for the end of the log, and
 * commits go on into them.
 */
START_TEST(test_log_zero_ahead)
{
	unsigned char *buf;
	uint32_t len;
	char path[PATH_MAX];
	off_t end = 0, hole;
	struct store *st;
	pid_t pid;
	size_t i;
	int fd, n;

	if ((pid = fork()) == 0) {
		st = open_ok();
		for (n = 0; n < 20; n++)
			if (put_one(st, "github", "z", 1, 1) == 0)
				_exit(3);
		kill(getpid(), SIGKILL);
		_exit(4);
	}
	child_killed(pid);

	/* The records end at a zero header; 1 MiB past it is written
	 * (STORE_LOG_REFILL). */
	snprintf(path, sizeof(path), "%s/log.0000000001", tmpdir);
	ck_assert_int_ne(fd = open(path, O_RDONLY), -1);
	for (;;) {
		ck_assert_int_eq(pread(fd, &len, 4, end + 4), 4);
		if (len == 0)
			break;
		end += len;
	}
	ck_assert_int_gt(end, 0);
	hole = lseek(fd, end, SEEK_HOLE);
	ck_assert_msg(hole >= end + (1 << 20), "log end %lld, hole at %lld",
	    (long long)end, (long long)hole);
	ck_assert_ptr_nonnull(buf = malloc(1 << 20));
	ck_assert_int_eq(pread(fd, buf, 1 << 20, end), 1 << 20);
	for (i = 0; i < (1 << 20); i++)
		ck_assert_uint_eq(buf[i], 0);
	free(buf);
	close(fd);

	st = open_ok();
	ck_assert_int_eq(store_debug_count(st, "hooks"), 20);
	ck_assert_uint_eq(put_one(st, "github", "next", 4, 1), 21);
	store_close(st);
	st = open_ok();
	ck_assert_int_eq(store_debug_count(st, "hooks"), 21);
	store_close(st);
}
END_TEST

/* 4,000 hooks of 200 bytes in batches of 100: a megabyte of hook pages,
 * 8 KiB each, and the rows' and due keys' pages, all dirty in the cache. */
static void
put_4000(struct store *st)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_batch *b;
	struct store_hook h;
	char body[200];
	int i, j;

	memset(body, 'x', sizeof(body));
	for (i = 0; i < 40; i++) {
		ck_assert_ptr_nonnull(b = store_batch_begin(st));
		for (j = 0; j < 100; j++) {
			hook_fill(&h, "github", body, sizeof(body));
			ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1),
			    0);
		}
		ck_assert_int_eq(store_batch_commit(b), 0);
	}
}

/*
 * The checkpoint's page writes, a step at a time: each step writes about
 * the pages asked for (and more than none), the pages reach the table's
 * file before any checkpoint, and after the checkpoint none are dirty.
 */
START_TEST(test_clean_step)
{
	struct store *st;
	struct stat sb0, sb1;
	char path[PATH_MAX];
	long before, left, prev;
	int steps;

	st = open_ok();
	snprintf(path, sizeof(path), "%s/hooks.db", tmpdir);
	ck_assert_int_eq(store_checkpoint(st), 0);
	ck_assert_int_eq(stat(path, &sb0), 0);
	put_4000(st);
	before = store_clean_step(st, 1000000);
	ck_assert_int_gt(before, 150);
	left = store_clean_step(st, 16);
	ck_assert_int_ge(before - left, 16);
	ck_assert_int_gt(left, 16);
	for (steps = 1, prev = left; left > 16; steps++, prev = left) {
		left = store_clean_step(st, 16);
		ck_assert_int_ge(left, 0);
		ck_assert_int_lt(left, prev);
	}
	ck_assert_int_gt(steps, 3);
	ck_assert_int_eq(stat(path, &sb1), 0);
	ck_assert_int_ge(sb1.st_size - sb0.st_size, 100 * 8192);
	ck_assert_int_eq(store_checkpoint(st), 0);
	ck_assert_int_eq(store_clean_step(st, 0), 0);
	ck_assert_int_eq(store_debug_count(st, "hooks"), 4000);
	store_close(st);
}
END_TEST

/*
 * The cache kept at least low per cent clean: below it, dirty pages are
 * written until high per cent is clean; at or above it nothing is
 * written, whatever high.
 */
START_TEST(test_keep_clean)
{
	struct store *st;
	long before, after;
	int wrote, more;

	st = open_ok();
	put_4000(st);
	before = store_clean_step(st, 1000000);	/* counts, writes none */
	ck_assert_int_gt(before, 150);
	ck_assert_int_gt(wrote = store_keep_clean(st, 50, 50), 0);
	after = store_clean_step(st, 1000000);
	ck_assert_int_eq(after, before - wrote);
	/* Half is clean now: nothing to do until less is, whatever high. */
	ck_assert_int_eq(store_keep_clean(st, 50, 50), 0);
	ck_assert_int_eq(store_keep_clean(st, 50, 100), 0);
	ck_assert_int_eq(store_clean_step(st, 1000000), after);
	/* Less than low is clean: written up to high, here all. */
	ck_assert_int_gt(more = store_keep_clean(st, 100, 100), 0);
	ck_assert_int_eq(more, after);
	ck_assert_int_eq(store_clean_step(st, 1000000), 0);
	ck_assert_int_eq(store_keep_clean(st, 100, 100), 0);
	ck_assert_int_eq(store_debug_count(st, "hooks"), 4000);
	store_close(st);
}
END_TEST

/*
 * The region files live in a private directory under /dev/shm named after
 * the data directory, removed at close; an older build's in the data
 * directory go.  No such base, or a directory there that is not private:
 * the data directory, as before.
 */

static int
exists(const char *dir, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

START_TEST(test_region_home)
{
	struct store *st;
	struct stat sb;
	char home[PATH_MAX], old[PATH_MAX];
	int fd;

	home_of(home, sizeof(home), "/dev/shm", tmpdir);
	snprintf(old, sizeof(old), "%s/__db.001", tmpdir);
	ck_assert_int_ne(fd = open(old, O_CREAT | O_WRONLY, 0600), -1);
	close(fd);
	st = open_ok();
	ck_assert(!exists(tmpdir, "__db.001"));
	ck_assert(exists(home, "__db.001"));
	ck_assert_int_eq(stat(home, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0777, 0700);
	ck_assert_uint_eq(put_one(st, "github", "one", 3, 1), 1);
	store_close(st);
	ck_assert_int_eq(access(home, F_OK), -1);

	/* Recovery from the data directory alone. */
	st = open_ok();
	ck_assert_int_eq(store_debug_count(st, "hooks"), 1);
	store_close(st);

	store_set_region_base("/nonexistent-ankusa-base");
	st = open_ok();
	ck_assert(exists(tmpdir, "__db.001"));
	ck_assert_int_eq(store_debug_count(st, "hooks"), 1);
	store_close(st);
	store_set_region_base("/dev/shm");

	ck_assert_int_eq(mkdir(home, 0755), 0);
	ck_assert_int_eq(chmod(home, 0755), 0);
	st = open_ok();
	ck_assert(exists(tmpdir, "__db.001"));
	ck_assert(!exists(home, "__db.001"));
	store_close(st);
	ck_assert_int_eq(rmdir(home), 0);
}
END_TEST

/* A home under base for a made-up data directory, with its region files
 * and, if lock, its lock file; its path in buf. */
static void
fake_home(char *buf, size_t len, const char *base, unsigned long uid,
    int ino, int lock)
{
	char path[PATH_MAX];
	int fd;

	snprintf(buf, len, "%s/ankusa-store-%lu-1-%x", base, uid, ino);
	ck_assert_int_eq(mkdir(buf, 0700), 0);
	snprintf(path, sizeof(path), "%s/__db.001", buf);
	ck_assert_int_ne(fd = open(path, O_CREAT | O_WRONLY, 0600), -1);
	close(fd);
	snprintf(path, sizeof(path), "%s/lock", buf);
	if (lock) {
		ck_assert_int_ne(fd = open(path, O_CREAT | O_WRONLY, 0600),
		    -1);
		close(fd);
	}
}

/* An open removes the homes of its user whose lock no one holds (a
 * crashed store's); a held one, one without a lock file and another
 * user's stay. */
START_TEST(test_region_sweep)
{
	static char base[PATH_MAX];
	char stale[PATH_MAX], held[PATH_MAX], nolock[PATH_MAX];
	char other[PATH_MAX], two[PATH_MAX], three[PATH_MAX];
	char home[PATH_MAX], home2[PATH_MAX], home3[PATH_MAX];
	char path[PATH_MAX], err[256];
	struct store *st, *st2;
	unsigned long uid = (unsigned long)geteuid();
	pid_t pid;
	int hfd;

	snprintf(base, sizeof(base), "%s/shm", tmpdir);
	ck_assert_int_eq(mkdir(base, 0700), 0);
	store_set_region_base(base);
	fake_home(stale, sizeof(stale), base, uid, 1, 1);
	fake_home(held, sizeof(held), base, uid, 2, 1);
	fake_home(nolock, sizeof(nolock), base, uid, 3, 0);
	fake_home(other, sizeof(other), base, uid + 1, 4, 1);
	snprintf(path, sizeof(path), "%s/lock", held);
	ck_assert_int_ne(hfd = open(path, O_RDWR), -1);
	ck_assert_int_eq(flock(hfd, LOCK_EX | LOCK_NB), 0);

	st = open_ok();
	home_of(home, sizeof(home), base, tmpdir);
	ck_assert(exists(home, "__db.001"));
	ck_assert(exists(home, "lock"));
	ck_assert_int_eq(access(stale, F_OK), -1);
	ck_assert(exists(held, "__db.001"));
	ck_assert(exists(nolock, "__db.001"));
	ck_assert(exists(other, "__db.001"));

	/* An open store's home is held: another store's open keeps it. */
	snprintf(two, sizeof(two), "%s/two", tmpdir);
	st2 = store_open(two, err, sizeof(err));
	ck_assert_msg(st2 != NULL, "store_open: %s", err);
	home_of(home2, sizeof(home2), base, two);
	ck_assert(exists(home2, "__db.001"));
	ck_assert(exists(home, "__db.001"));
	store_close(st2);
	ck_assert_int_eq(access(home2, F_OK), -1);

	/* A store killed with its home: the next open elsewhere sweeps it,
	 * and its own next open recovers without it. */
	snprintf(three, sizeof(three), "%s/three", tmpdir);
	if ((pid = fork()) == 0) {
		st2 = store_open(three, err, sizeof(err));
		if (st2 == NULL || put_one(st2, "github", "k", 1, 1) == 0)
			_exit(3);
		kill(getpid(), SIGKILL);
		_exit(4);
	}
	child_killed(pid);
	home_of(home3, sizeof(home3), base, three);
	ck_assert(exists(home3, "__db.001"));
	st2 = store_open(two, err, sizeof(err));
	ck_assert_msg(st2 != NULL, "store_open: %s", err);
	ck_assert_int_eq(access(home3, F_OK), -1);
	ck_assert(exists(home, "__db.001"));
	ck_assert(exists(held, "__db.001"));
	store_close(st2);
	st2 = store_open(three, err, sizeof(err));
	ck_assert_msg(st2 != NULL, "store_open: %s", err);
	ck_assert_int_eq(store_debug_count(st2, "hooks"), 1);
	store_close(st2);

	store_close(st);
	ck_assert_int_eq(access(home, F_OK), -1);
	close(hfd);
	store_set_region_base("/dev/shm");
}
END_TEST

START_TEST(test_ordered_rows)
{
	struct store_row_spec rows[3] = {
		{ 0, MODULE_HTTP, 0, 0 },		/* unordered */
		{ 1, MODULE_HTTP, 1, 0x1234 },		/* lane A */
		{ 2, MODULE_SQS, 1, 0x1234 },		/* lane B: other sink */
	};
	struct store_batch *b;
	struct store_hook h;
	struct store *st;
	int i;

	st = open_ok();
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	for (i = 0; i < 2; i++) {
		hook_fill(&h, "github", "x", 1);
		ck_assert_int_eq(store_batch_put_hook(b, &h, rows, 3), 0);
	}
	hook_fill(&h, "github", "x", 1);
	ck_assert_int_eq(store_batch_put_hook(b, &h, rows + 1, 1), 0);
	ck_assert_int_eq(store_batch_commit(b), 0);

	ck_assert_int_eq(store_debug_count(st, "rows"), 7);
	ck_assert_int_eq(store_debug_count(st, "due"), 2);
	ck_assert_int_eq(store_debug_count(st, "members"), 5);
	ck_assert_int_eq(store_debug_count(st, "marks"), 2);
	ck_assert_int_eq(store_debug_count(st, "lanes"), 0);
	store_close(st);
}
END_TEST

START_TEST(test_dedupe_round_trip)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_batch *b;
	struct store_hook h;
	struct store *st;
	unsigned char id1[UUID_LEN], id2[UUID_LEN], id3[UUID_LEN];
	unsigned char got[UUID_LEN];

	st = open_ok();
	put_dedupe(st, "acme", "github", "delivery-1", 5000, id1);
	memset(got, 0, sizeof(got));
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "delivery-1",
	    4999, got), 1);
	ck_assert_mem_eq(got, id1, UUID_LEN);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "delivery-1",
	    0, got), 1);
	/* Live only while expires > now. */
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "delivery-1",
	    5000, got), 0);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "delivery-1",
	    6000, got), 0);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "delivery-2",
	    0, got), 0);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "", 0, got),
	    0);

	/* Scope (tenant, source, key): the same key elsewhere is apart. */
	ck_assert_int_eq(store_dedupe_get(st, "beta", "github", "delivery-1",
	    0, got), 0);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "stripe", "delivery-1",
	    0, got), 0);
	put_dedupe(st, "beta", "github", "delivery-1", 9000, id2);
	put_dedupe(st, "acme", "stripe", "delivery-1", 9000, id3);
	ck_assert_int_eq(store_dedupe_get(st, "beta", "github", "delivery-1",
	    6000, got), 1);
	ck_assert_mem_eq(got, id2, UUID_LEN);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "stripe", "delivery-1",
	    6000, got), 1);
	ck_assert_mem_eq(got, id3, UUID_LEN);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "delivery-1",
	    4000, got), 1);
	ck_assert_mem_eq(got, id1, UUID_LEN);
	/* "acme"+"github" must not meet "acmeg"+"ithub". */
	ck_assert_int_eq(store_dedupe_get(st, "acmeg", "ithub", "delivery-1",
	    0, got), 0);

	/* Flagged hooks and hooks without a key write no entry. */
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	hook_fill(&h, "github", "f", 1);
	h.dedupe_key = "flagged-1";
	h.dedupe_expires = 9000;
	h.flagged = 1;
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	hook_fill(&h, "github", "n", 1);
	h.dedupe_key = NULL;
	h.dedupe_expires = 9000;
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	hook_fill(&h, "github", "e", 1);
	h.dedupe_key = "";
	h.dedupe_expires = 9000;
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	ck_assert_int_eq(store_batch_commit(b), 0);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "flagged-1",
	    0, got), 0);
	ck_assert_int_eq(store_debug_count(st, "dedupe"), 3);
	ck_assert_int_eq(store_debug_count(st, "dedupe_exp"), 3);

	/* Stored again (the old one expired): the new id wins; the old
	 * index entry stays for the sweep. */
	put_dedupe(st, "acme", "github", "delivery-1", 20000, id3);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "delivery-1",
	    10000, got), 1);
	ck_assert_mem_eq(got, id3, UUID_LEN);
	ck_assert_int_eq(store_debug_count(st, "dedupe"), 3);
	ck_assert_int_eq(store_debug_count(st, "dedupe_exp"), 4);

	/* Durable. */
	store_close(st);
	st = open_ok();
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "delivery-1",
	    10000, got), 1);
	ck_assert_mem_eq(got, id3, UUID_LEN);
	ck_assert_int_eq(store_dedupe_get(st, "beta", "github", "delivery-1",
	    8999, got), 1);
	ck_assert_mem_eq(got, id2, UUID_LEN);
	store_close(st);
}
END_TEST

/* Two hooks of one batch with one key: the second sees the first. */
/*
 * store_hook_fits says yes exactly when the put succeeds: dedupe keys
 * around the length where the lookup key still fits and the expiry
 * index's (8 bytes longer) no longer does, and reasons around 63 bytes.
 */
START_TEST(test_hook_fits)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_batch *b;
	struct store_hook h;
	struct store *st;
	char key[STORE_KEY_MAX + 1], reason[80], why[128];
	size_t n;
	int fits, put;

	st = open_ok();
	for (n = 990; n <= 1024; n++) {
		memset(key, 'k', n);
		key[n] = '\0';
		hook_fill(&h, "github", "d", 1);
		h.dedupe_key = key;
		fits = store_hook_fits(&h, NULL, why, sizeof(why));
		ck_assert_ptr_nonnull(b = store_batch_begin(st));
		put = store_batch_put_hook(b, &h, &row, 1);
		store_batch_abort(b);
		ck_assert_msg(fits == put, "dedupe key of %zu bytes: fits %d, "
		    "put %d", n, fits, put);
		if (fits == -1)
			ck_assert_ptr_nonnull(strstr(why, "dedupe key"));
	}
	/* 1,013 bytes ("acme", "github"): the lookup key fits, the index
	 * key does not -- the batch-wide failure of issue 22. */
	memset(key, 'k', 1013);
	key[1013] = '\0';
	h.dedupe_key = key;
	ck_assert_int_eq(store_hook_fits(&h, NULL, why, sizeof(why)), -1);
	for (n = 60; n <= 66; n++) {
		memset(reason, 'r', n);
		reason[n] = '\0';
		hook_fill(&h, "github", "d", 1);
		h.dedupe_key = NULL;
		fits = store_hook_fits(&h, reason, why, sizeof(why));
		ck_assert_ptr_nonnull(b = store_batch_begin(st));
		put = store_batch_put_quarantine(b, &h, reason);
		store_batch_abort(b);
		ck_assert_msg(fits == put, "reason of %zu bytes: fits %d, put "
		    "%d", n, fits, put);
		ck_assert_int_eq(fits, n <= STORE_QREASON_MAX ? 0 : -1);
	}
	store_close(st);
}
END_TEST

START_TEST(test_dedupe_in_batch)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_batch *b;
	struct store_hook h;
	struct store *st;
	unsigned char id1[UUID_LEN], got[UUID_LEN];

	st = open_ok();
	put_dedupe(st, "acme", "github", "old", 5000, id1);

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	/* Committed entries, read inside the open batch (no lock wait). */
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "old", 1000,
	    got), 1);
	ck_assert_mem_eq(got, id1, UUID_LEN);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "new", 1000,
	    got), 0);
	hook_fill(&h, "github", "x", 1);
	h.dedupe_key = "new";
	h.dedupe_expires = 5000;
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	/* The batch's own, uncommitted. */
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "new", 1000,
	    got), 1);
	ck_assert_mem_eq(got, h.id, UUID_LEN);
	store_batch_abort(b);
	/* Gone with the batch. */
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "new", 1000,
	    got), 0);
	ck_assert_int_eq(store_debug_count(st, "dedupe"), 1);
	ck_assert_int_eq(store_debug_count(st, "dedupe_exp"), 1);

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "new", 1000,
	    got), 1);
	ck_assert_mem_eq(got, h.id, UUID_LEN);
	ck_assert_int_eq(store_batch_commit(b), 0);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "new", 1000,
	    got), 1);
	ck_assert_mem_eq(got, h.id, UUID_LEN);
	store_close(st);
}
END_TEST

START_TEST(test_dedupe_sweep)
{
	struct store *st;
	unsigned char idb[UUID_LEN], idd[UUID_LEN], got[UUID_LEN];

	st = open_ok();
	ck_assert_int_eq(sweep(st, UINT64_MAX, 100, 1), 0);	/* empty */

	put_dedupe(st, "acme", "github", "a", 1000, NULL);
	put_dedupe(st, "acme", "github", "b", 2000, NULL);
	put_dedupe(st, "acme", "github", "c", 3000, NULL);
	put_dedupe(st, "acme", "github", "d", 10000, idd);
	put_dedupe(st, "acme", "github", "b", 8000, idb);	/* again */
	ck_assert_int_eq(store_debug_count(st, "dedupe"), 4);
	ck_assert_int_eq(store_debug_count(st, "dedupe_exp"), 5);

	ck_assert_int_eq(sweep(st, 500, 10, 1), 0);	/* none expired */
	ck_assert_int_eq(sweep(st, 3000, 0, 1), 0);	/* max 0 */
	/* max respected: a (1000) and b's old entry (2000) only. */
	ck_assert_int_eq(sweep(st, 3000, 2, 1), 2);
	ck_assert_int_eq(store_debug_count(st, "dedupe_exp"), 3);
	ck_assert_int_eq(store_debug_count(st, "dedupe"), 3);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "a", 0, got),
	    0);
	/* b stored again with a later expiry survives its old entry's sweep. */
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "b", 3000,
	    got), 1);
	ck_assert_mem_eq(got, idb, UUID_LEN);
	/* c: expiry == now is expired, swept. */
	ck_assert_int_eq(sweep(st, 3000, 10, 1), 1);
	ck_assert_int_eq(sweep(st, 3000, 10, 1), 0);
	ck_assert_int_eq(store_debug_count(st, "dedupe"), 2);
	ck_assert_int_eq(store_debug_count(st, "dedupe_exp"), 2);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "d", 9999,
	    got), 1);
	ck_assert_mem_eq(got, idd, UUID_LEN);

	/* An aborted sweep removes nothing. */
	ck_assert_int_eq(sweep(st, 20000, 10, 0), 2);
	ck_assert_int_eq(store_debug_count(st, "dedupe"), 2);
	ck_assert_int_eq(store_debug_count(st, "dedupe_exp"), 2);
	ck_assert_int_eq(sweep(st, 20000, 10, 1), 2);
	ck_assert_int_eq(store_debug_count(st, "dedupe"), 0);
	ck_assert_int_eq(store_debug_count(st, "dedupe_exp"), 0);
	ck_assert_int_eq(sweep(st, UINT64_MAX, 10, 1), 0);
	store_close(st);
}
END_TEST

START_TEST(test_quarantine)
{
	static const struct store_header sig_headers[] = {
		{ "x-hub-signature-256", "sha256=00ff" },
		{ "content-type", "application/json" },
		{ "authorization", "Bearer x" },
		{ "x-empty", "" },
	};
	struct store_hook_rec rec;
	struct store_counts c;
	struct store_batch *b;
	struct store_hook h[3], bad;
	struct store_header bighdr;
	struct store *st;
	struct qlisted l;
	unsigned char *big, *val, got[UUID_LEN];
	char reason[64], small[4], idbuf[UUID_STRLEN + 1], *longval;
	char longreason[STORE_QREASON_MAX + 2];
	const char *reasons[3] = { "no_match", "timestamp_out_of_tolerance",
	    "" };
	uint64_t bytes, hooks, s1, s5;
	size_t vlen;
	int i, j;

	ck_assert_ptr_nonnull(big = malloc(100000));
	for (i = 0; i < 100000; i++)
		big[i] = (unsigned char)(i * 13);
	ck_assert_ptr_nonnull(longval = malloc(6001));
	memset(longval, 'v', 6000);
	longval[6000] = '\0';
	bighdr.name = "x-long";
	bighdr.value = longval;

	st = open_ok();
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 0);
	ck_assert_uint_eq(hooks, 0);
	s1 = put_one(st, "github", "hook", 4, 1);

	hook_fill(&h[0], "github", "a\0c", 3);
	h[0].headers = sig_headers;
	h[0].nheaders = 4;
	hook_fill(&h[1], "stripe", big, 100000);
	h[1].tenant = "beta";
	h[1].content_type = "";
	hook_fill(&h[2], "github", "", 0);	/* head over the peek */
	h[2].headers = &bighdr;
	h[2].nheaders = 1;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	for (i = 0; i < 3; i++) {
		h[i].dedupe_key = i == 1 ? "q-key" : NULL;
		h[i].dedupe_expires = 9000;
		ck_assert_int_eq(store_batch_put_quarantine(b, &h[i],
		    reasons[i]), 0);
	}
	/* Usage counts the open batch. */
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 100003);
	ck_assert_uint_eq(hooks, 3);
	ck_assert_int_eq(store_batch_commit(b), 0);
	/* Seqs from the hooks' counter. */
	ck_assert_uint_eq(h[0].seq, s1 + 1);
	ck_assert_uint_eq(h[1].seq, s1 + 2);
	ck_assert_uint_eq(h[2].seq, s1 + 3);
	s5 = put_one(st, "github", "hook", 4, 1);
	ck_assert_uint_eq(s5, s1 + 4);

	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 100003);
	ck_assert_uint_eq(hooks, 3);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.qbytes, 100003);
	ck_assert_uint_eq(c.qhooks, 3);
	ck_assert_uint_eq(c.hooks, 2);		/* held hooks are not hooks */
	ck_assert_uint_eq(c.rows, 2);
	ck_assert_int_eq(store_debug_count(st, "quarantine"), 3);
	ck_assert_int_eq(store_debug_count(st, "hooks"), 2);
	/* The two hooks' one key; held hooks write no entry. */
	ck_assert_int_eq(store_debug_count(st, "dedupe"), 1);
	ck_assert_int_eq(store_dedupe_get(st, "beta", "stripe", "q-key", 0,
	    got), 0);

	/* List: no bodies, every field. */
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_quarantine_list(st, NULL, 0, 0, qlist_cb, &l),
	    0);
	ck_assert_int_eq(l.n, 3);
	for (i = 0; i < 3; i++) {
		uuid_format(h[i].id, idbuf);
		ck_assert_uint_eq(l.info[i].seq, h[i].seq);
		ck_assert_str_eq(l.info[i].id, idbuf);
		ck_assert_str_eq(l.info[i].tenant, h[i].tenant);
		ck_assert_str_eq(l.info[i].source, h[i].source);
		ck_assert_uint_eq(l.info[i].received_at, h[i].received_at);
		ck_assert_uint_eq(l.info[i].size, h[i].body_len);
		ck_assert_str_eq(l.info[i].reason, reasons[i]);
	}
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_quarantine_list(st, "github", 0, 0, qlist_cb,
	    &l), 0);
	ck_assert_int_eq(l.n, 2);
	ck_assert_uint_eq(l.info[1].seq, h[2].seq);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_quarantine_list(st, NULL, h[0].seq, 1,
	    qlist_cb, &l), 0);
	ck_assert_int_eq(l.n, 1);
	ck_assert_uint_eq(l.info[0].seq, h[1].seq);
	memset(&l, 0, sizeof(l));
	l.stop_after = 1;
	ck_assert_int_eq(store_quarantine_list(st, NULL, 0, 0, qlist_cb, &l),
	    0);
	ck_assert_int_eq(l.n, 1);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_quarantine_list(st, "nonesuch", 0, 0,
	    qlist_cb, &l), 0);
	ck_assert_int_eq(l.n, 0);

	/* Get: every field byte for byte, all the headers, the reason. */
	for (i = 0; i < 3; i++) {
		memset(reason, 'x', sizeof(reason));
		ck_assert_int_eq(store_quarantine_get(st, h[i].seq, &rec,
		    reason, sizeof(reason)), 1);
		ck_assert_str_eq(reason, reasons[i]);
		ck_assert_str_eq(rec.reason, reasons[i]);
		ck_assert_mem_eq(rec.hook.id, h[i].id, UUID_LEN);
		ck_assert_str_eq(rec.hook.tenant, h[i].tenant);
		ck_assert_str_eq(rec.hook.source, h[i].source);
		ck_assert_str_eq(rec.hook.method, h[i].method);
		ck_assert_str_eq(rec.hook.path, h[i].path);
		ck_assert_str_eq(rec.hook.content_type, h[i].content_type);
		ck_assert_uint_eq(rec.hook.received_at, h[i].received_at);
		ck_assert_mem_eq(rec.hook.sha256, h[i].sha256, 32);
		if (h[i].dedupe_key == NULL)
			ck_assert_ptr_null(rec.hook.dedupe_key);
		else
			ck_assert_str_eq(rec.hook.dedupe_key, h[i].dedupe_key);
		ck_assert_int_eq(rec.hook.nheaders, h[i].nheaders);
		for (j = 0; j < h[i].nheaders; j++) {
			ck_assert_str_eq(rec.hook.headers[j].name,
			    h[i].headers[j].name);
			ck_assert_str_eq(rec.hook.headers[j].value,
			    h[i].headers[j].value);
		}
		ck_assert_uint_eq(rec.hook.body_len, h[i].body_len);
		ck_assert_uint_eq(rec.body_size, h[i].body_len);
		ck_assert_int_eq(memcmp(rec.hook.body, h[i].body,
		    h[i].body_len), 0);
		ck_assert_str_eq(rec.claim_ref, "");
		store_hook_rec_free(&rec);
	}
	/* A short reason buffer truncates; NULL is fine. */
	ck_assert_int_eq(store_quarantine_get(st, h[1].seq, &rec, small,
	    sizeof(small)), 1);
	ck_assert_str_eq(small, "tim");
	store_hook_rec_free(&rec);
	ck_assert_int_eq(store_quarantine_get(st, h[0].seq, &rec, NULL, 0), 1);
	store_hook_rec_free(&rec);
	ck_assert_int_eq(store_quarantine_get(st, s1, &rec, reason,
	    sizeof(reason)), 0);		/* a hook, not held */
	ck_assert_int_eq(store_quarantine_get(st, 99, &rec, reason,
	    sizeof(reason)), 0);
	ck_assert_int_eq(store_hook_get(st, h[0].seq, &rec), 1);

	/* Delete: 1, then 0; usage follows, in the batch and committed. */
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_del_quarantine(b, h[2].seq), 1);
	ck_assert_int_eq(store_batch_del_quarantine(b, h[2].seq), 0);
	ck_assert_int_eq(store_batch_del_quarantine(b, 99), 0);
	ck_assert_int_eq(store_batch_del_quarantine(b, s1), 0);
	ck_assert_int_eq(store_batch_del_quarantine(b, h[1].seq), 1);
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 3);
	ck_assert_uint_eq(hooks, 1);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.qhooks, 3);		/* as committed */
	ck_assert_int_eq(store_batch_commit(b), 0);
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 3);
	ck_assert_uint_eq(hooks, 1);
	ck_assert_int_eq(store_debug_count(st, "quarantine"), 1);
	ck_assert_int_eq(store_quarantine_get(st, h[2].seq, &rec, NULL, 0), 0);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_quarantine_list(st, NULL, 0, 0, qlist_cb, &l),
	    0);
	ck_assert_int_eq(l.n, 1);
	ck_assert_uint_eq(l.info[0].seq, h[0].seq);

	/* A reason over STORE_QREASON_MAX is refused, the batch fails. */
	hook_fill(&bad, "github", "b", 1);
	memset(longreason, 'r', sizeof(longreason));
	longreason[STORE_QREASON_MAX + 1] = '\0';
	ck_assert_ptr_null(store_rec_quarantine_encode(&bad, longreason,
	    &vlen));
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_quarantine(b, &bad, longreason), -1);
	ck_assert_int_eq(store_batch_commit(b), -1);
	longreason[STORE_QREASON_MAX] = '\0';
	ck_assert_ptr_nonnull(val = store_rec_quarantine_encode(&bad,
	    longreason, &vlen));
	free(val);
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 3);
	ck_assert_uint_eq(hooks, 1);
	store_close(st);
	free(big);
	free(longval);
}
END_TEST

/* Release: the held hook committed as a hook with its own id, and out of
 * the pen, in one batch. */
START_TEST(test_quarantine_release)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_hook_rec rec, hrec;
	struct store_counts c;
	struct store_batch *b;
	struct store_hook h;
	struct store *st;
	struct listed l;
	struct qlisted ql;
	unsigned char id[UUID_LEN], got[UUID_LEN];
	char reason[64];
	uint64_t qseq, bytes, hooks;
	int j;

	st = open_ok();
	qseq = put_quarantined(st, "github", "held body", 9, "no_match", 1);
	put_quarantined(st, "github", "other", 5, "no_match", 1);

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_quarantine_get(st, qseq, &rec, reason,
	    sizeof(reason)), 1);
	ck_assert_str_eq(reason, "no_match");
	memcpy(id, rec.hook.id, UUID_LEN);
	h = rec.hook;
	h.dedupe_key = "rel-1";
	h.dedupe_expires = 5000;
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	ck_assert_int_eq(store_batch_del_quarantine(b, qseq), 1);
	ck_assert_msg(store_batch_commit(b) == 0, "%s", store_strerror(st));
	ck_assert_uint_gt(h.seq, qseq);		/* a new seq */

	ck_assert_int_eq(store_hook_get(st, h.seq, &hrec), 0);
	ck_assert_mem_eq(hrec.hook.id, id, UUID_LEN);
	ck_assert_uint_eq(hrec.hook.body_len, 9);
	ck_assert_mem_eq(hrec.hook.body, "held body", 9);
	ck_assert_uint_eq(hrec.hook.received_at, rec.hook.received_at);
	ck_assert_int_eq(hrec.hook.nheaders, rec.hook.nheaders);
	for (j = 0; j < rec.hook.nheaders; j++)
		ck_assert_str_eq(hrec.hook.headers[j].value,
		    rec.hook.headers[j].value);
	ck_assert_ptr_null(hrec.reason);
	ck_assert_uint_eq(hrec.rows, 1);
	store_hook_rec_free(&hrec);
	store_hook_rec_free(&rec);

	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "rel-1", 0,
	    got), 1);
	ck_assert_mem_eq(got, id, UUID_LEN);
	ck_assert_int_eq(store_quarantine_get(st, qseq, &rec, NULL, 0), 0);
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 5);
	ck_assert_uint_eq(hooks, 1);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.hooks, 1);
	ck_assert_uint_eq(c.rows, 1);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_hooks_list(st, NULL, 0, 0, list_cb, &l), 0);
	ck_assert_int_eq(l.n, 1);
	memset(&ql, 0, sizeof(ql));
	ck_assert_int_eq(store_quarantine_list(st, NULL, 0, 0, qlist_cb, &ql),
	    0);
	ck_assert_int_eq(ql.n, 1);
	ck_assert_uint_ne(ql.info[0].seq, qseq);
	store_close(st);
}
END_TEST

START_TEST(test_quarantine_counters)
{
	struct store_counts c;
	struct store_batch *b;
	struct store_hook h;
	struct store *st;
	uint64_t s1, s2, bytes, hooks;

	/* A store from before the pen's counters reads them as 0. */
	st = open_ok();
	store_close(st);
	meta_delete("qhooks");
	meta_delete("qbytes");
	st = open_ok();
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 0);
	ck_assert_uint_eq(hooks, 0);
	put_one(st, "github", "hook", 4, 1);	/* leaves them absent */
	store_close(st);
	st = open_ok();

	s1 = put_quarantined(st, "github", "12345", 5, "no_match", 1);
	s2 = put_quarantined(st, "stripe", "1234567", 7, "no_match", 1);
	put_quarantined(st, "stripe", "lost", 4, "no_match", 0);
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 12);
	ck_assert_uint_eq(hooks, 2);

	/* An aborted batch changes nothing. */
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_del_quarantine(b, s1), 1);
	hook_fill(&h, "github", "abc", 3);
	ck_assert_int_eq(store_batch_put_quarantine(b, &h, "no_match"), 0);
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 10);
	ck_assert_uint_eq(hooks, 2);
	store_batch_abort(b);
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 12);
	ck_assert_uint_eq(hooks, 2);
	ck_assert_int_eq(store_debug_count(st, "quarantine"), 2);

	/* Across a restart. */
	store_close(st);
	st = open_ok();
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 12);
	ck_assert_uint_eq(hooks, 2);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.qbytes, 12);
	ck_assert_uint_eq(c.qhooks, 2);
	ck_assert_uint_eq(c.hooks, 1);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_del_quarantine(b, s2), 1);
	ck_assert_int_eq(store_batch_commit(b), 0);
	store_close(st);
	st = open_ok();
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 5);
	ck_assert_uint_eq(hooks, 1);
	/* The seq counter covers the pen too. */
	ck_assert_uint_gt(put_one(st, "github", "x", 1, 1), s2);
	store_close(st);
}
END_TEST

START_TEST(test_damaged_file)
{
	struct store *st;
	struct stat sb;
	char err[1024], path[512];
	int i;

	st = open_ok();
	for (i = 0; i < 20; i++)
		put_one(st, "github", "body", 4, 1);
	store_close(st);

	/* Page 1 of hooks.db is the root leaf: scribble in its middle. */
	snprintf(path, sizeof(path), "%s/hooks.db", tmpdir);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_ge(sb.st_size, 8192);
	file_scribble("hooks.db", sb.st_size / 2 + 100, 512);
	st = store_open(tmpdir, err, sizeof(err));
	if (getenv("STORE_SHOW") != NULL)
		fprintf(stderr, "REFUSED: %s\n", err);
	ck_assert_ptr_null(st);
	ck_assert_msg(strstr(err, "hooks.db") != NULL, "error: %s", err);
}
END_TEST

START_TEST(test_garbage_file)
{
	struct store *st;
	struct stat sb;
	char err[1024], path[512];

	st = open_ok();
	put_one(st, "github", "body", 4, 1);
	store_close(st);

	/* The whole of rows.db, its meta page too. */
	snprintf(path, sizeof(path), "%s/rows.db", tmpdir);
	ck_assert_int_eq(stat(path, &sb), 0);
	file_scribble("rows.db", 0, 4096);
	st = store_open(tmpdir, err, sizeof(err));
	if (getenv("STORE_SHOW") != NULL)
		fprintf(stderr, "REFUSED: %s\n", err);
	ck_assert_ptr_null(st);
	ck_assert_msg(strstr(err, "rows.db") != NULL, "error: %s", err);
}
END_TEST

START_TEST(test_newer_schema)
{
	static const unsigned char v[5] = { 1, 0, 0, 0, 2 };
	struct store *st;
	char err[1024];

	st = open_ok();
	store_close(st);
	meta_poke("schema", v, sizeof(v));
	st = store_open(tmpdir, err, sizeof(err));
	if (getenv("STORE_SHOW") != NULL)
		fprintf(stderr, "REFUSED: %s\n", err);
	ck_assert_ptr_null(st);
	ck_assert_msg(strstr(err, "meta.db") != NULL &&
	    strstr(err, "schema version 2") != NULL, "error: %s", err);
}
END_TEST

START_TEST(test_meta_unknown_version)
{
	static const unsigned char v[9] = { 7, 0, 0, 0, 0, 0, 0, 0, 9 };
	struct store *st;
	char err[1024];

	st = open_ok();
	store_close(st);
	meta_poke("next_seq", v, sizeof(v));
	st = store_open(tmpdir, err, sizeof(err));
	if (getenv("STORE_SHOW") != NULL)
		fprintf(stderr, "REFUSED: %s\n", err);
	ck_assert_ptr_null(st);
	ck_assert_msg(strstr(err, "meta record \"next_seq\" has format "
	    "version 7, this build reads 1") != NULL, "error: %s", err);
}
END_TEST

/* A store whose one hook (seq 1) is replaced by a record of body, with
 * byte at of the record ORed with bits. */
static void
poke_hook1(const char *body, size_t len, size_t at, unsigned char bits)
{
	struct store_hook h;
	struct store *st;
	unsigned char key[8], *val;
	size_t vlen;

	st = open_ok();
	put_one(st, "github", "body", 4, 1);
	store_close(st);
	hook_fill(&h, "github", body, len);
	ck_assert_ptr_nonnull(val = store_rec_hook_encode(&h, 1, "", &vlen));
	ck_assert_uint_lt(at, vlen);
	val[at] |= bits;
	store_key_hook(key, 1);
	table_poke("hooks.db", key, sizeof(key), val, vlen);
	free(val);
}

/* A hook record of an unknown version fails the listing, naming it. */
START_TEST(test_hook_unknown_version)
{
	struct store_hook_rec rec;
	struct store *st;
	struct listed l;

	poke_hook1("body", 4, 0, 0x06);	/* version 1 -> 7 */
	st = open_ok();
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_hooks_list(st, NULL, 0, 0, list_cb, &l), -1);
	ck_assert_int_eq(l.n, 0);
	ck_assert_str_eq(store_strerror(st), "hooks record seq 1 has format "
	    "version 7, this build reads 1");
	ck_assert_int_eq(store_hook_get(st, 1, &rec), -1);
	store_close(st);
}
END_TEST

/* A record flagged as holding its body's log position must end in
 * exactly one: anything else is damage, reported with the record. */
START_TEST(test_body_position_damaged)
{
	struct store_hook_rec rec;
	struct store *st;

	poke_hook1("1234567", 7, 5, 0x04);	/* flags: "in the log" */
	st = open_ok();
	ck_assert_int_eq(store_hook_get(st, 1, &rec), -1);
	ck_assert_str_eq(store_strerror(st), "hooks record seq 1 is damaged: "
	    "bad body position");
	store_close(st);
}
END_TEST

START_TEST(test_missing_meta)
{
	static const unsigned char v[5] = { 1, 0, 0, 0, 1 };
	struct store *st;
	char err[1024];

	/* A meta with a schema but no next_seq is damage, not a new store. */
	st = open_ok();
	store_close(st);
	teardown();
	ck_assert_int_eq(mkdir(tmpdir, 0700), 0);
	meta_poke("schema", v, sizeof(v));
	st = store_open(tmpdir, err, sizeof(err));
	if (getenv("STORE_SHOW") != NULL)
		fprintf(stderr, "REFUSED: %s\n", err);
	ck_assert_ptr_null(st);
	ck_assert_msg(strstr(err, "no \"next_seq\"") != NULL, "error: %s",
	    err);
}
END_TEST

/* Every codec: a round trip, then the same record with version 7. */
static const struct tables_case codec_cases[] = {
	{ "hooks", "hooks record seq 42 has format version 7, this build "
	    "reads 1" },
	{ "quarantine", "quarantine record seq 42 has format version 7" },
	{ "rows", "rows record seq 42 sink 3 has format version 7, this "
	    "build reads 1" },
	{ "dead", "dead record at 1000 seq 42 sink 3 has format version 7" },
	{ "dedupe", "dedupe record acme/github key \"k-1\" has format "
	    "version 7" },
	{ "replays", "replays record job " },
	{ "lanes", "lanes record lane acme/github#3 key 00000000000000ff "
	    "has format version 7" },
	{ "members", "members record lane acme/github#3 key "
	    "00000000000000ff seq 42 has format version 7" },
	{ "marks", "marks record lane acme/github#3 key 00000000000000ff "
	    "has format version 7" },
	{ "due", "due record tenant acme due 1000 seq 42 sink 3 has format "
	    "version 7" },
	{ "dedupe_exp", "dedupe_exp record expiry 5000 has format version 7" },
};

START_TEST(test_codec_versions)
{
	const struct tables_case *tc = &codec_cases[_i];
	struct store_hook_rec hrec;
	struct store_hook h;
	struct store_row r, r2;
	struct store_dead dl, dl2;
	struct store_dedupe dd, dd2;
	struct store_replay rp, rp2;
	unsigned char key[STORE_KEY_MAX], lane[STORE_KEY_MAX];
	unsigned char rk[STORE_ROWKEY_LEN], rk2[STORE_ROWKEY_LEN];
	unsigned char buf[STORE_REC_MAX], *val = buf;
	char err[512];
	size_t klen = 0, vlen = 0, lanelen;
	int ret = -1;

	store_key_row(rk, 42, 3);
	lanelen = store_key_lane(lane, sizeof(lane), "acme", "github", 3, 0xff);
	ck_assert_uint_gt(lanelen, 0);
	err[0] = '\0';

	if (strcmp(tc->table, "hooks") == 0 ||
	    strcmp(tc->table, "quarantine") == 0) {
		hook_fill(&h, "github", "\0body\0", 6);
		store_key_hook(key, 42);
		klen = 8;
		if (strcmp(tc->table, "hooks") == 0) {
			ck_assert_ptr_nonnull(val = store_rec_hook_encode(&h,
			    2, "urn:ankusa:claim:v1:acme:01H", &vlen));
			ck_assert_int_eq(store_rec_hook_decode(tc->table, key,
			    klen, val, vlen, &hrec, err, sizeof(err)), 0);
			ck_assert_str_eq(hrec.claim_ref,
			    "urn:ankusa:claim:v1:acme:01H");
			/* A reference with the body: both kept. */
			ck_assert_ptr_nonnull(hrec.hook.body);
			ck_assert_uint_eq(hrec.hook.body_len, 6);
			ck_assert_int_eq(memcmp(hrec.hook.body, "\0body\0", 6),
			    0);
			ck_assert_ptr_null(hrec.reason);
			store_hook_rec_free(&hrec);
			free(val);
			/* A reference without a body: checked in, dropped
			 * (its size kept). */
			h.body = NULL;
			ck_assert_ptr_nonnull(val = store_rec_hook_encode(&h,
			    2, "urn:ankusa:claim:v1:acme:01H", &vlen));
			ck_assert_int_eq(store_rec_hook_decode(tc->table, key,
			    klen, val, vlen, &hrec, err, sizeof(err)), 0);
			ck_assert_ptr_null(hrec.hook.body);
		} else {
			ck_assert_ptr_nonnull(val =
			    store_rec_quarantine_encode(&h, "no_match",
			    &vlen));
			ck_assert_int_eq(store_rec_hook_decode(tc->table, key,
			    klen, val, vlen, &hrec, err, sizeof(err)), 0);
			ck_assert_str_eq(hrec.claim_ref, "");
			ck_assert_str_eq(hrec.reason, "no_match");
			ck_assert_uint_eq(hrec.hook.body_len, 6);
			ck_assert_mem_eq(hrec.hook.body, "\0body\0", 6);
		}
		ck_assert_uint_eq(hrec.body_size, 6);
		ck_assert_int_eq(hrec.hook.nheaders, 3);
		store_hook_rec_free(&hrec);
		/* A truncated one is damage, not a shorter hook. */
		ck_assert_int_eq(store_rec_hook_decode(tc->table, key, klen,
		    val, vlen - 1, &hrec, err, sizeof(err)), -1);
		val[0] = 7;
		ret = store_rec_hook_decode(tc->table, key, klen, val, vlen,
		    &hrec, err, sizeof(err));
		free(val);
	} else if (strcmp(tc->table, "rows") == 0) {
		memset(&r, 0, sizeof(r));
		strcpy(r.tenant, "acme");
		strcpy(r.source, "github");
		r.sink_index = 3;
		r.module = MODULE_PUBSUB;
		r.attempts = 7;
		r.first_attempt = 11;
		r.due = 12;
		strcpy(r.last_error, "http 503");
		r.lane_hash = 0xdeadbeefcafeULL;
		r.state = STORE_ROW_PARKED;
		memset(r.replay_id, 0x42, UUID_LEN);
		r.body_size = 1 << 20;
		memcpy(key, rk, sizeof(rk));
		klen = sizeof(rk);
		ck_assert_uint_gt(vlen = store_rec_row_encode(&r, buf,
		    sizeof(buf)), 0);
		ck_assert_int_eq(store_rec_row_decode(key, klen, buf, vlen,
		    &r2, err, sizeof(err)), 0);
		ck_assert_mem_eq(&r, &r2, sizeof(r));
		buf[0] = 7;
		ret = store_rec_row_decode(key, klen, buf, vlen, &r2, err,
		    sizeof(err));
	} else if (strcmp(tc->table, "dead") == 0) {
		memset(&dl, 0, sizeof(dl));
		strcpy(dl.reason, "retries_exhausted");
		strcpy(dl.last_error, "timeout");
		dl.attempts = 84;
		store_key_dead(key, 1000, rk);
		klen = STORE_DEADKEY_LEN;
		ck_assert_uint_gt(vlen = store_rec_dead_encode(&dl, buf,
		    sizeof(buf)), 0);
		ck_assert_int_eq(store_rec_dead_decode(key, klen, buf, vlen,
		    &dl2, err, sizeof(err)), 0);
		ck_assert_mem_eq(&dl, &dl2, sizeof(dl));
		buf[0] = 7;
		ret = store_rec_dead_decode(key, klen, buf, vlen, &dl2, err,
		    sizeof(err));
	} else if (strcmp(tc->table, "dedupe") == 0) {
		memset(&dd, 0, sizeof(dd));
		memset(dd.hook_id, 9, UUID_LEN);
		dd.expires = 5000;
		ck_assert_uint_gt(klen = store_key_dedupe(key, sizeof(key),
		    "acme", "github", "k-1"), 0);
		ck_assert_uint_gt(vlen = store_rec_dedupe_encode(&dd, buf,
		    sizeof(buf)), 0);
		ck_assert_int_eq(store_rec_dedupe_decode(key, klen, buf, vlen,
		    &dd2, err, sizeof(err)), 0);
		ck_assert_mem_eq(&dd, &dd2, sizeof(dd));
		buf[0] = 7;
		ret = store_rec_dedupe_decode(key, klen, buf, vlen, &dd2, err,
		    sizeof(err));
	} else if (strcmp(tc->table, "replays") == 0) {
		memset(&rp, 0, sizeof(rp));
		rp.state = STORE_REPLAY_PAUSED;
		rp.kind = STORE_REPLAY_DLQ;
		strcpy(rp.source, "github");
		rp.since = 1;
		rp.until = 2;
		rp.rate = 1000;
		rp.max_lag_ms = 2000;
		rp.created_at = 3;
		rp.moved = 4;
		store_key_dead(rp.cursor, 1000, rk);
		uuidv7_new(key);
		klen = UUID_LEN;
		ck_assert_uint_gt(vlen = store_rec_replay_encode(&rp, buf,
		    sizeof(buf)), 0);
		ck_assert_int_eq(store_rec_replay_decode(key, klen, buf, vlen,
		    &rp2, err, sizeof(err)), 0);
		ck_assert_mem_eq(&rp, &rp2, sizeof(rp));
		buf[0] = 7;
		ret = store_rec_replay_decode(key, klen, buf, vlen, &rp2, err,
		    sizeof(err));
	} else if (strcmp(tc->table, "lanes") == 0 ||
	    strcmp(tc->table, "members") == 0) {
		memcpy(key, lane, lanelen);
		klen = lanelen;
		if (strcmp(tc->table, "members") == 0)
			ck_assert_uint_gt(klen = store_key_member(key,
			    sizeof(key), lane, lanelen, 42), 0);
		ck_assert_uint_gt(vlen = store_rec_rowkey_encode(rk, buf,
		    sizeof(buf)), 0);
		ck_assert_int_eq(store_rec_rowkey_decode(tc->table, key, klen,
		    buf, vlen, rk2, err, sizeof(err)), 0);
		ck_assert_mem_eq(rk, rk2, sizeof(rk));
		buf[0] = 7;
		ret = store_rec_rowkey_decode(tc->table, key, klen, buf, vlen,
		    rk2, err, sizeof(err));
	} else {
		if (strcmp(tc->table, "marks") == 0) {
			memcpy(key, lane, lanelen);
			klen = lanelen;
		} else if (strcmp(tc->table, "due") == 0)
			klen = store_key_due(key, sizeof(key), "acme", 1000,
			    rk);
		else {
			unsigned char dk[STORE_KEY_MAX];
			size_t dklen;

			dklen = store_key_dedupe(dk, sizeof(dk), "acme",
			    "github", "k-1");
			klen = store_key_dedupe_exp(key, sizeof(key), 5000,
			    dk, dklen);
		}
		ck_assert_uint_gt(klen, 0);
		ck_assert_uint_eq(vlen = store_rec_empty_encode(buf,
		    sizeof(buf)), 1);
		ck_assert_int_eq(store_rec_empty_decode(tc->table, key, klen,
		    buf, vlen, err, sizeof(err)), 0);
		buf[0] = 7;
		ret = store_rec_empty_decode(tc->table, key, klen, buf, vlen,
		    err, sizeof(err));
	}
	ck_assert_int_eq(ret, -1);
	ck_assert_msg(strncmp(err, tc->want, strlen(tc->want)) == 0,
	    "error: %s", err);
	ck_assert_ptr_nonnull(strstr(err, "format version 7, this build "
	    "reads 1"));
}
END_TEST

START_TEST(test_key_order)
{
	unsigned char a[STORE_KEY_MAX], b[STORE_KEY_MAX];
	unsigned char rk1[STORE_ROWKEY_LEN], rk2[STORE_ROWKEY_LEN];
	size_t la, lb;

	/* Big-endian: 255 sorts before 256, as numbers. */
	store_key_row(rk1, 255, 9);
	store_key_row(rk2, 256, 0);
	ck_assert_int_lt(memcmp(rk1, rk2, sizeof(rk1)), 0);
	la = store_key_due(a, sizeof(a), "acme", 0x00ff, rk2);
	lb = store_key_due(b, sizeof(b), "acme", 0x0100, rk1);
	ck_assert_uint_eq(la, lb);
	ck_assert_int_lt(memcmp(a, b, la), 0);
	/* A key that does not fit is refused, not cut. */
	ck_assert_uint_eq(store_key_due(a, 10, "acme", 1, rk1), 0);
}
END_TEST

/*
 * Dispatch side: due tenants and scans, settling, lanes, dead letters.
 */

START_TEST(test_due_tenants)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_row_spec ordered = { 0, MODULE_HTTP, 1, 0x42 };
	struct tenants_seen ts;
	struct store *st;
	uint64_t due;

	st = open_ok();
	ck_assert_int_eq(store_oldest_due(st, &due), 0);
	memset(&ts, 0, sizeof(ts));
	ck_assert_int_eq(store_due_tenants(st, tenants_cb, &ts), 0);
	ck_assert_int_eq(ts.n, 0);

	put_rows(st, "acme", "github", 1000, &row, 1);
	put_rows(st, "acme", "github", 500, &row, 1);
	put_rows(st, "acme", "stripe", 700, &row, 1);
	put_rows(st, "ac", "github", 2000, &row, 1);	/* a prefix of acme */
	put_rows(st, "beta", "github", 3000, &row, 1);
	put_rows(st, "zeta", "github", 9999, &row, 1);	/* only future */
	put_rows(st, "omega", "github", 10, &ordered, 1); /* members only */

	memset(&ts, 0, sizeof(ts));
	ck_assert_int_eq(store_due_tenants(st, tenants_cb, &ts), 0);
	ck_assert_int_eq(ts.n, 4);
	ck_assert_str_eq(ts.tenant[0], "ac");
	ck_assert_uint_eq(ts.due[0], 2000);
	ck_assert_str_eq(ts.tenant[1], "acme");
	ck_assert_uint_eq(ts.due[1], 500);
	ck_assert_str_eq(ts.tenant[2], "beta");
	ck_assert_uint_eq(ts.due[2], 3000);
	ck_assert_str_eq(ts.tenant[3], "zeta");
	ck_assert_uint_eq(ts.due[3], 9999);

	memset(&ts, 0, sizeof(ts));
	ts.stop_after = 2;
	ck_assert_int_eq(store_due_tenants(st, tenants_cb, &ts), 0);
	ck_assert_int_eq(ts.n, 2);

	ck_assert_int_eq(store_oldest_due(st, &due), 1);
	ck_assert_uint_eq(due, 500);

	/* A tenant's next due time after t. */
	ck_assert_int_eq(store_due_next(st, "acme", 0, &due), 1);
	ck_assert_uint_eq(due, 500);
	ck_assert_int_eq(store_due_next(st, "acme", 500, &due), 1);
	ck_assert_uint_eq(due, 700);
	ck_assert_int_eq(store_due_next(st, "acme", 999, &due), 1);
	ck_assert_uint_eq(due, 1000);
	ck_assert_int_eq(store_due_next(st, "acme", 1000, &due), 0);
	ck_assert_int_eq(store_due_next(st, "acme", UINT64_MAX, &due), 0);
	ck_assert_int_eq(store_due_next(st, "ac", 0, &due), 1);
	ck_assert_uint_eq(due, 2000);
	ck_assert_int_eq(store_due_next(st, "nobody", 0, &due), 0);
	ck_assert_int_eq(store_due_next(st, "omega", 0, &due), 0);

	/* The omega member, once promoted, is the oldest. */
	ck_assert_int_eq(lane_sweep(st, "omega", 16), 1);
	ck_assert_int_eq(store_oldest_due(st, &due), 1);
	ck_assert_uint_eq(due, 10);
	store_close(st);
}
END_TEST

START_TEST(test_due_scan)
{
	struct store_row_spec rows[2] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_SQS, 0, 0 },
	};
	struct store_batch *b;
	struct store_hook h;
	struct scanned sc;
	struct store *st;
	uint64_t s1, s2, s3;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 300, rows, 2);
	s2 = put_rows(st, "acme", "stripe", 100, rows, 1);
	s3 = put_rows(st, "acme", "github", 200, rows, 1);
	put_rows(st, "acme", "github", 5000, rows, 1);
	put_rows(st, "acme-x", "github", 10, rows, 1);
	put_rows(st, "acm", "github", 10, rows, 1);

	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_due_scan(st, "acme", 300, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 4);
	ck_assert_uint_eq(sc.seq[0], s2);
	ck_assert_uint_eq(sc.seq[1], s3);
	ck_assert_uint_eq(sc.seq[2], s1);
	ck_assert_uint_eq(sc.sink[2], 0);
	ck_assert_uint_eq(sc.seq[3], s1);
	ck_assert_uint_eq(sc.sink[3], 1);
	/* Decoded rows. */
	ck_assert_str_eq(sc.row[0].tenant, "acme");
	ck_assert_str_eq(sc.row[0].source, "stripe");
	ck_assert_uint_eq(sc.row[0].due, 100);
	ck_assert_uint_eq(sc.row[0].state, STORE_ROW_DUE);
	ck_assert_uint_eq(sc.row[0].body_size, 1);
	ck_assert_uint_eq(sc.row[3].sink_index, 1);
	ck_assert_uint_eq(sc.row[3].module, MODULE_SQS);
	ck_assert_uint_eq(sc.row[3].attempts, 0);
	ck_assert_str_eq(sc.row[3].last_error, "");

	/* The now cutoff is inclusive. */
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_due_scan(st, "acme", 299, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 2);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_due_scan(st, "acme", 99, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 0);
	memset(&sc, 0, sizeof(sc));
	sc.stop_after = 1;
	ck_assert_int_eq(store_due_scan(st, "acme", 10000, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 1);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_due_scan(st, "nobody", 10000, scan_cb, &sc),
	    0);
	ck_assert_int_eq(sc.n, 0);

	/* Inside a batch: its own rows too. */
	hook_fill(&h, "github", "x", 1);
	h.received_at = 150;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_hook(b, &h, rows, 1), 0);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_due_scan(st, "acme", 300, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 5);
	ck_assert_uint_eq(sc.seq[1], h.seq);
	store_batch_abort(b);
	store_close(st);
}
END_TEST

START_TEST(test_delivered)
{
	struct store_row_spec rows[3] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_SQS, 0, 0 },
		{ 2, MODULE_LOG, 0, 0 },
	};
	struct store_hook_rec rec;
	struct store_counts c;
	struct store_row r;
	struct store *st;
	struct listed l;
	unsigned char rk[STORE_ROWKEY_LEN], *big;
	uint64_t s1, s2;
	int i;

	ck_assert_ptr_nonnull(big = malloc(BIG_BODY));
	for (i = 0; i < BIG_BODY; i++)
		big[i] = (unsigned char)(i * 13 + (i >> 7));
	st = open_ok();
	s1 = put_hook_body(st, "acme", "github", 100, big, BIG_BODY, rows, 3);
	s2 = put_rows(st, "acme", "github", 200, rows, 1);

	ck_assert_int_eq(deliver(st, s1, 1), 0);
	store_key_row(rk, s1, 1);
	ck_assert_int_eq(store_row_get(st, rk, &r), 0);
	ck_assert_int_eq(store_debug_count(st, "due"), 3);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.hooks, 2);
	ck_assert_uint_eq(c.rows, 3);
	/* The hook stays, whole, with one row fewer. */
	ck_assert_int_eq(store_hook_get(st, s1, &rec), 0);
	ck_assert_uint_eq(rec.rows, 2);
	ck_assert_uint_eq(rec.hook.body_len, BIG_BODY);
	ck_assert_int_eq(memcmp(rec.hook.body, big, BIG_BODY), 0);
	ck_assert_str_eq(rec.hook.source, "github");
	ck_assert_int_eq(rec.hook.nheaders, 3);
	store_hook_rec_free(&rec);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_hooks_list(st, NULL, 0, 0, list_cb, &l), 0);
	ck_assert_int_eq(l.n, 2);
	ck_assert_uint_eq(l.info[0].rows, 2);

	/* Twice: nothing to do. */
	ck_assert_int_eq(deliver(st, s1, 1), 1);
	ck_assert_int_eq(deliver(st, s1, 0), 0);
	ck_assert_int_eq(store_hook_get(st, s1, &rec), 0);
	ck_assert_uint_eq(rec.rows, 1);
	store_hook_rec_free(&rec);
	/* The last row takes the hook with it. */
	ck_assert_int_eq(deliver(st, s1, 2), 0);
	ck_assert_int_eq(store_hook_get(st, s1, &rec), 1);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.hooks, 1);
	ck_assert_uint_eq(c.rows, 1);
	ck_assert_int_eq(store_debug_count(st, "due"), 1);
	ck_assert_int_eq(store_debug_count(st, "hooks"), 1);
	store_close(st);

	/* Counters as committed. */
	st = open_ok();
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.hooks, 1);
	ck_assert_uint_eq(c.rows, 1);
	ck_assert_int_eq(deliver(st, s2, 0), 0);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.hooks, 0);
	ck_assert_uint_eq(c.rows, 0);
	ck_assert_int_eq(store_debug_count(st, "rows"), 0);
	store_close(st);
	free(big);
}
END_TEST

/* A hook's live rows (-1: no such hook). */
static int
hook_rows(struct store *st, uint64_t seq)
{
	struct store_hook_rec rec;
	int n;

	if (store_hook_get(st, seq, &rec) != 0)
		return -1;
	n = (int)rec.rows;
	store_hook_rec_free(&rec);
	return n;
}

/* Delivered with the row as its claim read it: no second read while its
 * due key proves it unchanged; a row rewritten since (its due key moved)
 * is read after all; a row gone is left alone, its hook untouched. */
START_TEST(test_delivered_known)
{
	struct store_row_spec rows[3] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_SQS, 0, 0 },
		{ 2, MODULE_LOG, 0, 0 },
	};
	struct store_batch *b;
	struct store_row r0, r1, nr;
	struct store *st;
	unsigned char rk0[STORE_ROWKEY_LEN], rk1[STORE_ROWKEY_LEN];
	unsigned char rk2[STORE_ROWKEY_LEN];
	uint64_t s1;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, rows, 3);
	store_key_row(rk0, s1, 0);
	store_key_row(rk1, s1, 1);
	store_key_row(rk2, s1, 2);
	ck_assert_int_eq(store_row_get(st, rk0, &r0), 1);
	ck_assert_int_eq(store_row_get(st, rk1, &r1), 1);
	ck_assert_int_eq(store_debug_count(st, "due"), 3);

	/* As claimed: the row and its due key go, the hook keeps 2. */
	ck_assert_int_eq(deliver_known(st, rk0, &r0), 0);
	ck_assert_int_eq(store_row_get(st, rk0, &nr), 0);
	ck_assert_int_eq(store_debug_count(st, "due"), 2);
	ck_assert_int_eq(hook_rows(st, s1), 2);

	/* Gone already: nothing happens, the hook keeps its count. */
	ck_assert_int_eq(deliver_known(st, rk0, &r0), 1);
	ck_assert_int_eq(hook_rows(st, s1), 2);

	/* Rewritten since (due 100 -> 700): read after all, and its real
	 * due key goes, not a stale one left behind. */
	nr = r1;
	nr.due = 700;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_reschedule(b, rk1, &nr), 0);
	commit_ok(st, b);
	ck_assert_int_eq(deliver_known(st, rk1, &r1), 0);
	ck_assert_int_eq(store_row_get(st, rk1, &nr), 0);
	ck_assert_int_eq(store_debug_count(st, "due"), 1);
	ck_assert_int_eq(hook_rows(st, s1), 1);

	/* The last row takes the hook with it. */
	ck_assert_int_eq(store_row_get(st, rk2, &nr), 1);
	ck_assert_int_eq(deliver_known(st, rk2, &nr), 0);
	ck_assert_int_eq(hook_rows(st, s1), -1);
	ck_assert_int_eq(store_debug_count(st, "due"), 0);
	ck_assert_int_eq(store_debug_count(st, "rows"), 0);
	store_close(st);
}
END_TEST

START_TEST(test_reschedule)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_batch *b;
	struct store_row r, nr;
	struct tenants_seen ts;
	struct scanned sc;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN];
	uint64_t s1;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, &row, 1);
	store_key_row(rk, s1, 0);
	ck_assert_int_eq(store_row_get(st, rk, &r), 1);
	nr = r;
	nr.due = 5000;
	nr.attempts = 2;
	nr.first_attempt = 120;
	snprintf(nr.last_error, sizeof(nr.last_error), "http 503");
	snprintf(nr.tenant, sizeof(nr.tenant), "elsewhere");	/* ignored */
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &nr), 0);
	commit_ok(st, b);

	ck_assert_int_eq(store_debug_count(st, "due"), 1);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_due_scan(st, "acme", 4999, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 0);
	ck_assert_int_eq(store_due_scan(st, "acme", 5000, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 1);
	ck_assert_int_eq(sc.null[0], 0);
	ck_assert_uint_eq(sc.row[0].due, 5000);
	ck_assert_uint_eq(sc.row[0].attempts, 2);
	ck_assert_uint_eq(sc.row[0].first_attempt, 120);
	ck_assert_str_eq(sc.row[0].last_error, "http 503");
	ck_assert_str_eq(sc.row[0].tenant, "acme");
	ck_assert_uint_eq(sc.row[0].state, STORE_ROW_DUE);
	memset(&ts, 0, sizeof(ts));
	ck_assert_int_eq(store_due_tenants(st, tenants_cb, &ts), 0);
	ck_assert_int_eq(ts.n, 1);
	ck_assert_uint_eq(ts.due[0], 5000);

	/* A breaker park. */
	nr.due = 7000;
	nr.state = STORE_ROW_PARKED;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &nr), 0);
	commit_ok(st, b);
	ck_assert_int_eq(store_row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_PARKED);
	ck_assert_uint_eq(r.due, 7000);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_due_scan(st, "acme", 7000, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 1);
	ck_assert_uint_eq(sc.row[0].state, STORE_ROW_PARKED);
	ck_assert_int_eq(store_debug_count(st, "due"), 1);

	/* Not a pending state: the batch fails. */
	nr.state = STORE_ROW_MEMBER;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &nr), -1);
	ck_assert_int_eq(store_batch_commit(b), -1);
	/* No such row. */
	nr.state = STORE_ROW_DUE;
	store_key_row(rk, 99, 0);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &nr), 1);
	commit_ok(st, b);
	ck_assert_int_eq(store_row_get(st, rk, &r), 0);
	store_close(st);
}
END_TEST

START_TEST(test_dead)
{
	struct store_row_spec rows[2] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_SQS, 0, 0 },
	};
	struct store_hook_rec rec;
	struct store_counts c;
	struct store_batch *b;
	struct store_row r;
	struct scanned sc;
	struct dead_seen ds;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN];
	char longer[STORE_ERROR_MAX + 100];
	uint64_t s1;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, rows, 2);
	ck_assert_int_eq(kill_row(st, s1, 0, 777, "retries_exhausted",
	    "http 500", 84), 0);
	store_key_row(rk, s1, 0);
	ck_assert_int_eq(store_row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_DEAD);
	ck_assert_uint_eq(r.attempts, 84);
	ck_assert_str_eq(r.last_error, "http 500");
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.dead, 1);
	ck_assert_uint_eq(c.rows, 2);
	ck_assert_uint_eq(c.hooks, 1);
	ck_assert_int_eq(store_debug_count(st, "dead"), 1);
	ck_assert_int_eq(store_debug_count(st, "due"), 1);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_due_scan(st, "acme", 10000, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 1);
	ck_assert_uint_eq(sc.sink[0], 1);
	/* The hook stays, the dead row counted live. */
	ck_assert_int_eq(store_hook_get(st, s1, &rec), 0);
	ck_assert_uint_eq(rec.rows, 2);
	store_hook_rec_free(&rec);

	/* Dead is final: again, or delivered, or rescheduled, nothing. */
	ck_assert_int_eq(kill_row(st, s1, 0, 778, "x", "y", 1), 1);
	ck_assert_int_eq(deliver(st, s1, 0), 1);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	r.state = STORE_ROW_DUE;
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &r), 1);
	commit_ok(st, b);
	ck_assert_int_eq(store_debug_count(st, "due"), 1);

	memset(&ds, 0, sizeof(ds));
	ck_assert_int_eq(store_dead_list(st, NULL, 0, dead_cb, &ds), 0);
	ck_assert_int_eq(ds.n, 1);
	ck_assert_str_eq(ds.info[0].reason, "retries_exhausted");
	ck_assert_str_eq(ds.info[0].last_error, "http 500");
	ck_assert_uint_eq(ds.info[0].attempts, 84);
	ck_assert_uint_eq(ds.info[0].dead_at, 777);

	/* The other row as well, with reasons too long: cut. */
	memset(longer, 'r', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	ck_assert_int_eq(kill_row(st, s1, 1, 800, longer, longer, 3), 0);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.dead, 2);
	ck_assert_int_eq(store_debug_count(st, "due"), 0);
	memset(&ds, 0, sizeof(ds));
	ck_assert_int_eq(store_dead_list(st, NULL, 0, dead_cb, &ds), 0);
	ck_assert_int_eq(ds.n, 2);
	ck_assert_uint_eq(strlen(ds.info[1].reason), STORE_ERROR_MAX);
	ck_assert_uint_eq(strlen(ds.info[1].last_error), STORE_ERROR_MAX);
	ck_assert_int_eq(store_hook_get(st, s1, &rec), 0);
	store_hook_rec_free(&rec);
	store_close(st);

	st = open_ok();
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.dead, 2);
	ck_assert_uint_eq(c.rows, 2);
	store_close(st);
}
END_TEST

START_TEST(test_lanes)
{
	struct store_row_spec ord = { 0, MODULE_HTTP, 1, 0x77 };
	struct store_batch *b;
	struct store_row r;
	struct scanned sc;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN];
	uint64_t s[4];
	int i;

	st = open_ok();
	ck_assert_uint_eq(store_lane_members(st), 0);
	for (i = 0; i < 3; i++)
		s[i] = put_rows(st, "acme", "github", 100 * (i + 1), &ord, 1);
	ck_assert_uint_eq(store_lane_members(st), 3);
	ck_assert_int_eq(store_debug_count(st, "members"), 3);
	ck_assert_int_eq(store_debug_count(st, "marks"), 1);
	ck_assert_int_eq(store_debug_count(st, "due"), 0);
	ck_assert_int_eq(store_debug_count(st, "lanes"), 0);

	/* The sweep promotes the first: a head and its due key. */
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_lane_sweep(b, "acme", 0, 16), 1);
	ck_assert_uint_eq(store_lane_members(st), 2);
	commit_ok(st, b);
	ck_assert_uint_eq(store_lane_members(st), 2);
	ck_assert_int_eq(store_debug_count(st, "lanes"), 1);
	ck_assert_int_eq(store_debug_count(st, "members"), 2);
	ck_assert_int_eq(store_debug_count(st, "marks"), 1);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_due_scan(st, "acme", 1000, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 1);
	ck_assert_uint_eq(sc.seq[0], s[0]);
	ck_assert_uint_eq(sc.row[0].state, STORE_ROW_HEAD);
	ck_assert_uint_eq(sc.row[0].due, 100);
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 0);

	/* Delivering the head promotes the next in the same batch. */
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	store_key_row(rk, s[0], 0);
	ck_assert_int_eq(store_batch_row_delivered(b, rk, NULL), 0);
	store_key_row(rk, s[1], 0);
	ck_assert_int_eq(store_row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_uint_eq(store_lane_members(st), 1);
	commit_ok(st, b);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_due_scan(st, "acme", 1000, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 1);
	ck_assert_uint_eq(sc.seq[0], s[1]);
	ck_assert_int_eq(store_debug_count(st, "marks"), 1);

	/* Dead-lettering the head promotes the last; its mark goes. */
	ck_assert_int_eq(kill_row(st, s[1], 0, 900, "permanent:410", "gone",
	    1), 0);
	store_key_row(rk, s[2], 0);
	ck_assert_int_eq(store_row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_uint_eq(store_lane_members(st), 0);
	ck_assert_int_eq(store_debug_count(st, "members"), 0);
	ck_assert_int_eq(store_debug_count(st, "marks"), 0);
	ck_assert_int_eq(store_debug_count(st, "lanes"), 1);
	ck_assert_int_eq(store_debug_count(st, "due"), 1);

	/* The last head ends: an idle lane, no state left. */
	ck_assert_int_eq(deliver(st, s[2], 0), 0);
	ck_assert_int_eq(store_debug_count(st, "lanes"), 0);
	ck_assert_int_eq(store_debug_count(st, "due"), 0);
	ck_assert_int_eq(store_debug_count(st, "marks"), 0);
	ck_assert_int_eq(store_debug_count(st, "hooks"), 1);	/* the dead */

	/* A member into the idle lane: the sweep makes it the head. */
	s[3] = put_rows(st, "acme", "github", 400, &ord, 1);
	ck_assert_int_eq(store_debug_count(st, "marks"), 1);
	ck_assert_int_eq(lane_sweep(st, "other", 16), 0);
	ck_assert_int_eq(lane_sweep(st, "acme", 0), 0);		/* max 0 */
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 1);
	store_key_row(rk, s[3], 0);
	ck_assert_int_eq(store_row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_int_eq(store_debug_count(st, "marks"), 0);
	ck_assert_uint_eq(store_lane_members(st), 0);
	store_close(st);
}
END_TEST

/* A retried or parked head stays its lane's head. */
START_TEST(test_lane_head_parked)
{
	struct store_row_spec ord = { 2, MODULE_SQS, 1, 0x99 };
	struct store_batch *b;
	struct store_row r, nr;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN];
	uint64_t s1, s2, s3;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, &ord, 1);
	s2 = put_rows(st, "acme", "github", 200, &ord, 1);
	s3 = put_rows(st, "acme", "github", 300, &ord, 1);
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 1);

	/* A retry written as DUE stays HEAD. */
	store_key_row(rk, s1, 2);
	ck_assert_int_eq(store_row_get(st, rk, &r), 1);
	nr = r;
	nr.state = STORE_ROW_DUE;
	nr.due = 1000;
	nr.attempts = 1;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &nr), 0);
	commit_ok(st, b);
	ck_assert_int_eq(store_row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_uint_eq(r.due, 1000);
	/* Parked: PARKED, still the head. */
	nr.state = STORE_ROW_PARKED;
	nr.due = 2000;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &nr), 0);
	commit_ok(st, b);
	ck_assert_int_eq(store_row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_PARKED);
	ck_assert_int_eq(store_debug_count(st, "due"), 1);
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 0);
	/* Unparked as DUE: HEAD again. */
	nr.state = STORE_ROW_DUE;
	nr.due = 2500;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &nr), 0);
	commit_ok(st, b);
	ck_assert_int_eq(store_row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	/* Parked again and delivered: the lane is released. */
	nr.state = STORE_ROW_PARKED;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &nr), 0);
	commit_ok(st, b);
	ck_assert_int_eq(deliver(st, s1, 2), 0);
	store_key_row(rk, s2, 2);
	ck_assert_int_eq(store_row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_uint_eq(r.due, 200);
	ck_assert_uint_eq(store_lane_members(st), 1);
	/* A parked head dead-lettered: released as well. */
	nr = r;
	nr.state = STORE_ROW_PARKED;
	nr.due = 9000;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &nr), 0);
	commit_ok(st, b);
	ck_assert_int_eq(kill_row(st, s2, 2, 950, "retry_horizon:sqs", "",
	    5), 0);
	store_key_row(rk, s3, 2);
	ck_assert_int_eq(store_row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_uint_eq(store_lane_members(st), 0);
	ck_assert_int_eq(store_debug_count(st, "due"), 1);
	store_close(st);
}
END_TEST

/* A head whose row is gone or DEAD is healed by the sweep; its stale due
 * key is reported with no row and dropped. */
START_TEST(test_lane_heal)
{
	struct store_row_spec ord = { 0, MODULE_HTTP, 1, 0x55 };
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_batch *b;
	struct store_row r;
	struct scanned sc;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN], val[STORE_REC_MAX];
	uint64_t s1, s2, s3, s4;
	size_t vlen;
	int i;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, &ord, 1);
	s2 = put_rows(st, "acme", "github", 200, &ord, 1);
	s3 = put_rows(st, "acme", "github", 300, &ord, 1);
	s4 = put_rows(st, "acme", "github", 400, &row, 1);
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 1);
	store_close(st);
	store_key_row(rk, s1, 0);
	table_del("rows.db", rk, sizeof(rk));

	st = open_ok();
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_due_scan_keys(st, "acme", 1000, scan_keys_cb,
	    &sc), 0);
	ck_assert_int_eq(sc.n, 2);
	ck_assert_int_eq(sc.null[0], 1);
	ck_assert_uint_eq(sc.seq[0], s1);
	ck_assert_uint_eq(sc.due[0], 100);
	ck_assert_int_eq(sc.null[1], 0);
	ck_assert_uint_eq(sc.seq[1], s4);
	/* The plain scan reports it too, with no row. */
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_due_scan(st, "acme", 1000, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 2);
	ck_assert_int_eq(sc.null[0], 1);
	ck_assert_uint_eq(sc.seq[0], s1);
	ck_assert_int_eq(store_due_scan_keys(st, "acme", 1000, scan_keys_cb,
	    &sc), 0);
	ck_assert_int_eq(sc.n, 4);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	/* A live key is never dropped; the stale one is. */
	ck_assert_int_eq(store_batch_due_drop(b, sc.key[3], sc.klen[3]), 1);
	ck_assert_int_eq(store_batch_due_drop(b, sc.key[2], sc.klen[2]), 0);
	ck_assert_int_eq(store_batch_due_drop(b, sc.key[2], sc.klen[2]), 1);
	/* The sweep heals the lane: the next member is its head. */
	ck_assert_int_eq(store_batch_lane_sweep(b, "acme", 0, 16), 1);
	commit_ok(st, b);
	ck_assert_int_eq(store_debug_count(st, "due"), 2);
	store_key_row(rk, s2, 0);
	ck_assert_int_eq(store_row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_uint_eq(store_lane_members(st), 1);

	/* A head left DEAD without a release: healed the same way. */
	r.state = STORE_ROW_DEAD;
	ck_assert_uint_gt(vlen = store_rec_row_encode(&r, val, sizeof(val)),
	    0);
	store_close(st);
	table_poke("rows.db", rk, sizeof(rk), val, vlen);
	st = open_ok();
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_due_scan(st, "acme", 1000, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 2);
	for (i = 0; i < sc.n; i++)
		ck_assert_int_eq(sc.null[i], sc.seq[i] == s2);
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 1);
	store_key_row(rk, s3, 0);
	ck_assert_int_eq(store_row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_uint_eq(store_lane_members(st), 0);
	ck_assert_int_eq(store_debug_count(st, "marks"), 0);
	store_close(st);
}
END_TEST

/*
 * An orphan (a row whose hook is gone) is a terminal transition of its
 * head: settled as dispatch settles it (dead, permanent), the row is
 * dropped and its lane released in the same batch, the next member its
 * head; an orphaned member leaves its lane the same way.
 */
START_TEST(test_lane_orphan_head)
{
	struct store_row_spec ord = { 0, MODULE_HTTP, 1, 0x77 };
	struct store_counts c;
	struct store_row r;
	struct scanned sc;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN];
	uint64_t s1, s2, s3, s4;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, &ord, 1);
	s2 = put_rows(st, "acme", "github", 200, &ord, 1);
	s3 = put_rows(st, "acme", "github", 300, &ord, 1);
	s4 = put_rows(st, "acme", "github", 400, &ord, 1);
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 1);	/* s1 heads */
	st = orphan(st, s1, s3);

	ck_assert_int_eq(kill_row(st, s1, 0, 500, "permanent:hook 1 is gone",
	    "hook 1 is gone", 1), 2);
	store_key_row(rk, s1, 0);
	ck_assert_int_eq(store_row_get(st, rk, &r), 0);
	store_key_row(rk, s2, 0);
	ck_assert_int_eq(store_row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_uint_eq(store_lane_members(st), 2);
	/* The new head is due, the orphan's key gone. */
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_due_scan(st, "acme", 1000, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 1);
	ck_assert_int_eq(sc.null[0], 0);
	ck_assert_uint_eq(sc.seq[0], s2);

	/* An orphaned member leaves its lane; the lane goes on to s4. */
	ck_assert_int_eq(kill_row(st, s3, 0, 600, "source_gone:github", "",
	    0), 2);
	ck_assert_uint_eq(store_lane_members(st), 1);
	ck_assert_int_eq(deliver(st, s2, 0), 0);
	head_alone(st, s4);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.dead, 0);
	ck_assert_uint_eq(c.rows, 1);
	ck_assert_int_eq(store_debug_count(st, "dead"), 0);
	store_close(st);
}
END_TEST

/* A member whose row is gone is dropped at promotion, not stalling. */
START_TEST(test_lane_member_gone)
{
	struct store_row_spec ord = { 0, MODULE_HTTP, 1, 0x66 };
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN];
	uint64_t s1, s2;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, &ord, 1);
	s2 = put_rows(st, "acme", "github", 200, &ord, 1);
	store_close(st);
	store_key_row(rk, s1, 0);
	table_del("rows.db", rk, sizeof(rk));
	st = open_ok();
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 1);
	head_alone(st, s2);
	store_close(st);
}
END_TEST

START_TEST(test_lane_member_dead)
{
	struct store_row_spec ord = { 1, MODULE_HTTP, 1, 0x11 };
	struct store_row r;
	struct store_counts c;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN];
	uint64_t s1, s2, s3, s4;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, &ord, 1);
	s2 = put_rows(st, "acme", "github", 200, &ord, 1);
	s3 = put_rows(st, "acme", "github", 300, &ord, 1);
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 1);
	ck_assert_uint_eq(store_lane_members(st), 2);

	/* A member dead-lettered leaves its lane. */
	ck_assert_int_eq(kill_row(st, s2, 1, 500, "source_gone:github", "",
	    0), 0);
	store_key_row(rk, s2, 1);
	ck_assert_int_eq(store_row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_DEAD);
	ck_assert_uint_eq(store_lane_members(st), 1);
	ck_assert_int_eq(store_debug_count(st, "members"), 1);
	ck_assert_int_eq(store_debug_count(st, "marks"), 1);
	ck_assert_int_eq(store_debug_count(st, "due"), 1);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.dead, 1);

	/* The head's end skips it: the next is s3. */
	ck_assert_int_eq(deliver(st, s1, 1), 0);
	store_key_row(rk, s3, 1);
	ck_assert_int_eq(store_row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_int_eq(store_debug_count(st, "marks"), 0);

	/* The last member dead-lettered behind a live head: no mark. */
	s4 = put_rows(st, "acme", "github", 400, &ord, 1);
	ck_assert_int_eq(store_debug_count(st, "marks"), 1);
	ck_assert_int_eq(kill_row(st, s4, 1, 600, "source_gone:github", "",
	    0), 0);
	ck_assert_uint_eq(store_lane_members(st), 0);
	ck_assert_int_eq(store_debug_count(st, "members"), 0);
	ck_assert_int_eq(store_debug_count(st, "marks"), 0);
	ck_assert_int_eq(store_debug_count(st, "lanes"), 1);
	store_close(st);
}
END_TEST

START_TEST(test_lane_members_restart)
{
	struct store_row_spec ord[2] = {
		{ 0, MODULE_HTTP, 1, 0x1 }, { 1, MODULE_HTTP, 1, 0x2 },
	};
	struct store_batch *b;
	struct store_hook h;
	struct store *st;

	st = open_ok();
	put_rows(st, "acme", "github", 100, ord, 2);
	put_rows(st, "acme", "github", 200, ord, 1);
	ck_assert_uint_eq(store_lane_members(st), 3);
	/* A batch's own members count while it is open, not after abort. */
	hook_fill(&h, "github", "x", 1);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_hook(b, &h, ord, 2), 0);
	ck_assert_uint_eq(store_lane_members(st), 5);
	store_batch_abort(b);
	ck_assert_uint_eq(store_lane_members(st), 3);
	store_close(st);

	st = open_ok();
	ck_assert_uint_eq(store_lane_members(st), 3);
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 2);
	ck_assert_uint_eq(store_lane_members(st), 1);
	store_close(st);

	st = open_ok();
	ck_assert_uint_eq(store_lane_members(st), 1);
	store_close(st);

	/* A store without the counter counts its members at open. */
	meta_delete("lane_members");
	st = open_ok();
	ck_assert_uint_eq(store_lane_members(st), 1);
	put_rows(st, "acme", "github", 300, ord, 1);
	ck_assert_uint_eq(store_lane_members(st), 2);
	store_close(st);
	st = open_ok();
	ck_assert_uint_eq(store_lane_members(st), 2);
	store_close(st);
}
END_TEST

START_TEST(test_marked_tenants)
{
	struct store_row_spec ord = { 0, MODULE_HTTP, 1, 0x3 };
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct tenants_seen ts;
	struct store *st;

	st = open_ok();
	memset(&ts, 0, sizeof(ts));
	ck_assert_int_eq(store_marked_tenants(st, marked_cb, &ts), 0);
	ck_assert_int_eq(ts.n, 0);
	put_rows(st, "beta", "github", 100, &ord, 1);
	put_rows(st, "acme", "github", 100, &ord, 1);
	put_rows(st, "acme", "github", 100, &ord, 1);
	ord.lane_hash = 0x4;
	put_rows(st, "acme", "github", 100, &ord, 1);
	put_rows(st, "ac", "github", 100, &ord, 1);
	put_rows(st, "zeta", "github", 100, &row, 1);
	memset(&ts, 0, sizeof(ts));
	ck_assert_int_eq(store_marked_tenants(st, marked_cb, &ts), 0);
	ck_assert_int_eq(ts.n, 3);
	ck_assert_str_eq(ts.tenant[0], "ac");
	ck_assert_str_eq(ts.tenant[1], "acme");
	ck_assert_str_eq(ts.tenant[2], "beta");
	memset(&ts, 0, sizeof(ts));
	ts.stop_after = 1;
	ck_assert_int_eq(store_marked_tenants(st, marked_cb, &ts), 0);
	ck_assert_int_eq(ts.n, 1);

	/* Promoted lanes with no member left lose their marks. */
	ck_assert_int_eq(lane_sweep(st, "ac", 16), 1);
	ck_assert_int_eq(lane_sweep(st, "beta", 16), 1);
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 2);
	memset(&ts, 0, sizeof(ts));
	ck_assert_int_eq(store_marked_tenants(st, marked_cb, &ts), 0);
	ck_assert_int_eq(ts.n, 1);
	ck_assert_str_eq(ts.tenant[0], "acme");
	store_close(st);
}
END_TEST

/* The hook at seq reads back with body, from the log or from its record
 * as logged says. */
static void
expect_body(struct store *st, uint64_t seq, int logged, const void *body,
    size_t len)
{
	struct store_hook_rec rec;

	ck_assert_int_eq(store_hook_get(st, seq, &rec), 0);
	ck_assert_int_eq(rec.body_logged, logged);
	ck_assert_uint_eq(rec.hook.body_len, len);
	ck_assert_mem_eq(rec.hook.body, body, len);
	ck_assert_uint_eq(rec.rows, 1);
	ck_assert_str_eq(rec.hook.tenant, "acme");
	ck_assert_str_eq(rec.hook.dedupe_key, "delivery-1");
	store_hook_rec_free(&rec);
}

/* Close st and open the store again: the hook at seq reads back with
 * body, and once delivered, it is gone. */
static void
restart_deliver(struct store *st, uint64_t seq, int logged, const void *body,
    size_t len)
{
	struct store_hook_rec rec;

	store_close(st);
	st = open_ok();
	expect_body(st, seq, logged, body, len);
	ck_assert_int_eq(deliver(st, seq, 0), 0);
	ck_assert_int_eq(store_hook_get(st, seq, &rec), 1);
	store_close(st);
}

/* Bodies of STORE_LOGBODY_MIN bytes and more live in the log, and their
 * records point there; small ones stay in the record.  Both read back the
 * same, after a restart too, and a batch that aborts after logging a body
 * leaves no hook behind. */
START_TEST(test_body_in_log)
{
	struct store_hook_rec rec;
	struct store *st;
	unsigned char big[1024], small[16];
	uint64_t s1, s2, s3;
	size_t i;

	for (i = 0; i < sizeof(big); i++)
		big[i] = (unsigned char)(i * 7);
	memset(small, 's', sizeof(small));
	st = open_ok();
	s1 = put_one(st, "github", big, sizeof(big), 1);
	s2 = put_one(st, "github", small, sizeof(small), 1);
	expect_body(st, s1, 1, big, sizeof(big));
	expect_body(st, s2, 0, small, sizeof(small));
	s3 = put_one(st, "github", big, sizeof(big), 0);
	ck_assert_int_eq(store_hook_get(st, s3, &rec), 1);
	restart_deliver(st, s1, 1, big, sizeof(big));
}
END_TEST

/*
 * Hooks whose bodies fill three log files, committed (so zeroed ahead of
 * the log's end) as they go: after a crash, recovery reads the whole log,
 * from file to file past whatever zeros follow their last records, and
 * every body is there.
 */
START_TEST(test_log_zero_ahead_files)
{
	static unsigned char body[200 * 1024];
	struct store *st;
	uint64_t seq, n;
	pid_t pid;

	memset(body, 'z', sizeof(body));
	if ((pid = fork()) == 0) {
		st = open_ok();
		for (n = 0; store_log_current(st) < 3; n++) {
			body[0] = (unsigned char)n;
			if (put_one(st, "github", body, sizeof(body), 1) !=
			    n + 1)
				_exit(3);
		}
		kill(getpid(), SIGKILL);
		_exit(4);
	}
	child_killed(pid);

	st = open_ok();
	ck_assert_uint_eq(store_log_current(st), 3);
	n = (uint64_t)store_debug_count(st, "hooks");
	ck_assert_uint_gt(n, 300);	/* two files of 32 MiB */
	for (seq = 1; seq <= n; seq++) {
		body[0] = (unsigned char)(seq - 1);
		expect_body(st, seq, 1, body, sizeof(body));
	}
	ck_assert_uint_eq(put_one(st, "github", "next", 4, 1), n + 1);
	store_close(st);
}
END_TEST

/* Log records until the log is in file upto: batches of hooks with 64 KiB
 * bodies, each delivered (so gone) in the batch after it. */
static void
fill_log(struct store *st, uint32_t upto)
{
	static unsigned char body[64 * 1024];
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_batch *b;
	struct store_hook h;
	unsigned char rk[STORE_ROWKEY_LEN];
	uint64_t seqs[8];
	int i;

	memset(body, 'f', sizeof(body));
	while (store_log_current(st) < upto) {
		ck_assert_ptr_nonnull(b = store_batch_begin(st));
		for (i = 0; i < 8; i++) {
			hook_fill(&h, "filler", body, sizeof(body));
			h.dedupe_key = NULL;
			ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1),
			    0);
			seqs[i] = h.seq;
		}
		ck_assert_int_eq(store_batch_commit_lazy(b), 0);
		ck_assert_ptr_nonnull(b = store_batch_begin(st));
		for (i = 0; i < 8; i++) {
			store_key_row(rk, seqs[i], 0);
			ck_assert_int_eq(store_batch_row_delivered(b, rk,
			    NULL), 0);
		}
		ck_assert_int_eq(store_batch_commit_lazy(b), 0);
	}
}

/* Whether log file n is in the store's directory: as the log's (prefix
 * "log."), or removed and waiting to be emptied ("removed-log."). */
static int
file_exists(const char *prefix, uint32_t n)
{
	char path[512];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/%s%010u", tmpdir, prefix, n);
	return stat(path, &sb) == 0;
}

static int
log_file_exists(uint32_t n)
{
	return file_exists("log.", n);
}

/* A live hook's body holds its log file; one that sits more than the
 * retain count of files behind the current one moves into its record, and
 * the checkpoint then removes the file.  Before the first pass nothing is
 * removed. */
START_TEST(test_body_migrate)
{
	struct store_hook_rec rec;
	struct store *st;
	unsigned char body[2048];
	uint64_t keep;
	size_t i;

	for (i = 0; i < sizeof(body); i++)
		body[i] = (unsigned char)(i * 13 + 1);
	st = open_ok();
	store_set_body_retain(st, 1);
	ck_assert_uint_eq(store_log_current(st), 1);
	keep = put_one(st, "github", body, sizeof(body), 1);
	fill_log(st, 2);
	ck_assert_int_eq(store_checkpoint(st), 0);
	ck_assert_int_eq(log_file_exists(1), 1);	/* no pass yet */

	/* One file behind, with retain 1: it stays, and holds file 1. */
	ck_assert_int_eq(store_body_migrate(st, 100), 0);
	ck_assert_uint_eq(store_body_pin(st), 1);
	ck_assert_int_eq(store_checkpoint(st), 0);
	ck_assert_int_eq(log_file_exists(1), 1);
	expect_body(st, keep, 1, body, sizeof(body));
	ck_assert_int_eq(store_hook_get(st, keep, &rec), 0);
	ck_assert_uint_eq(rec.body_file, 1);
	store_hook_rec_free(&rec);

	/* Two behind: it moves (not while max is 0); no body is left in
	 * the log. */
	fill_log(st, 3);
	ck_assert_int_eq(store_body_migrate(st, 0), 0);
	ck_assert_int_eq(store_body_behind(st), 1);
	ck_assert_uint_eq(store_body_pin(st), 1);
	ck_assert_int_eq(store_checkpoint(st), 0);
	ck_assert_int_eq(log_file_exists(1), 1);
	ck_assert_int_eq(log_file_exists(2), 1);
	ck_assert_int_eq(store_body_migrate(st, 100), 1);
	ck_assert_int_eq(store_body_behind(st), 0);
	ck_assert_uint_eq(store_body_pin(st), 3);
	expect_body(st, keep, 0, body, sizeof(body));
	ck_assert_int_eq(store_checkpoint(st), 0);
	ck_assert_int_eq(log_file_exists(1), 0);
	ck_assert_int_eq(log_file_exists(2), 0);
	ck_assert_int_eq(log_file_exists(3), 1);
	/* Removed files are emptied a step at a time by the store's thread,
	 * then go. */
	ck_assert_uint_ge(store_trash_wait(st), 2 * 32);	/* 1 MiB a step */
	ck_assert_int_eq(file_exists("removed-log.", 1), 0);
	ck_assert_int_eq(file_exists("removed-log.", 2), 0);
	ck_assert_int_eq(store_body_migrate(st, 100), 0);
	/* The moved body survives a restart; the row still delivers. */
	restart_deliver(st, keep, 0, body, sizeof(body));
}
END_TEST

/* A pass that finds no body in the log pins the file then current: a body
 * logged after it, in that file, is not removed with it once the log has
 * moved on. */
START_TEST(test_body_pin_current)
{
	struct store *st;
	unsigned char body[1024];
	char path[512];
	uint64_t seq;
	FILE *f;

	memset(body, 'p', sizeof(body));
	/* A removed log file a crash left behind goes at open. */
	snprintf(path, sizeof(path), "%s/removed-log.%010u", tmpdir, 7);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fclose(f);
	ck_assert_int_eq(file_exists("removed-log.", 7), 1);
	st = open_ok();
	ck_assert_int_eq(file_exists("removed-log.", 7), 0);
	store_set_body_retain(st, 1);
	ck_assert_int_eq(store_body_migrate(st, 100), 0);
	ck_assert_uint_eq(store_body_pin(st), 1);
	seq = put_one(st, "github", body, sizeof(body), 1);
	fill_log(st, 2);
	ck_assert_int_eq(store_checkpoint(st), 0);
	ck_assert_int_eq(log_file_exists(1), 1);
	expect_body(st, seq, 1, body, sizeof(body));
	restart_deliver(st, seq, 1, body, sizeof(body));
}
END_TEST

/* A body that cannot be read (its log file removed by hand) stops the
 * migrate pass without moving the pin: nothing after it is removed, and
 * the read reports where the body was. */
START_TEST(test_body_unreadable)
{
	struct store_hook_rec rec;
	struct store *st;
	unsigned char body[1024];
	char path[512];
	uint64_t seq;

	memset(body, 'u', sizeof(body));
	st = open_ok();
	store_set_body_retain(st, 0);
	seq = put_one(st, "github", body, sizeof(body), 1);
	fill_log(st, 2);
	snprintf(path, sizeof(path), "%s/log.%010u", tmpdir, 1);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(store_body_migrate(st, 100), 0);
	ck_assert_uint_eq(store_body_pin(st), 0);
	ck_assert_int_eq(store_body_migrate(st, 100), 0);
	ck_assert_int_eq(store_hook_get(st, seq, &rec), -1);
	ck_assert_ptr_nonnull(strstr(store_strerror(st), "cannot be read"));
	store_close(st);
}
END_TEST

/* Flip a bit of the log file n at off (the store closed). */
static void
poke_log(uint32_t n, off_t off)
{
	char path[512];
	unsigned char c;
	int fd;

	snprintf(path, sizeof(path), "%s/log.%010u", tmpdir, n);
	ck_assert_int_ne(fd = open(path, O_RDWR), -1);
	ck_assert_int_eq(pread(fd, &c, 1, off), 1);
	c ^= 0x10;
	ck_assert_int_eq(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

/* Bodies are read from the log files through a read-ahead, in any order
 * and right after they are written, and a body larger than the read-ahead
 * in one read of its own; a damaged body is refused, with no harm to the
 * store or to the bodies around it. */
START_TEST(test_body_read_ahead)
{
	static unsigned char bodies[6][1024], big[100 * 1024];
	struct store_hook_rec rec;
	struct store *st;
	uint64_t seq[6], sbig, reads, preads;
	uint32_t file, off;
	int i;

	for (i = 0; i < 6; i++)
		memset(bodies[i], 'a' + i, sizeof(bodies[i]));
	memset(big, 'B', sizeof(big));
	st = open_ok();
	for (i = 0; i < 5; i++)
		seq[i] = put_one(st, "github", bodies[i], sizeof(bodies[i]), 1);
	for (i = 0; i < 5; i++)
		expect_body(st, seq[i], 1, bodies[i], sizeof(bodies[i]));
	store_body_reads(st, &reads, &preads);
	ck_assert_uint_eq(reads, 5);
	ck_assert_uint_eq(preads, 1);
	/* Written after the read-ahead's last read, then before it. */
	seq[5] = put_one(st, "github", bodies[5], sizeof(bodies[5]), 1);
	expect_body(st, seq[5], 1, bodies[5], sizeof(bodies[5]));
	expect_body(st, seq[0], 1, bodies[0], sizeof(bodies[0]));
	sbig = put_one(st, "github", big, sizeof(big), 1);
	expect_body(st, sbig, 1, big, sizeof(big));
	store_body_reads(st, &reads, &preads);
	ck_assert_uint_eq(reads, 8);
	ck_assert_uint_eq(preads, 4);

	/* Damage in the last log file is where recovery ends the log; in
	 * an earlier one it is found when the record is read. */
	fill_log(st, 2);
	ck_assert_int_eq(store_hook_get(st, seq[2], &rec), 0);
	file = rec.body_file;
	off = rec.body_off;
	store_hook_rec_free(&rec);
	store_close(st);
	/* A byte of the body, past BDB's header and the record's own. */
	poke_log(file, (off_t)off + 12 + 24 + 100);
	st = open_ok();
	ck_assert_int_eq(store_hook_get(st, seq[2], &rec), -1);
	ck_assert_ptr_nonnull(strstr(store_strerror(st), "is damaged"));
	expect_body(st, seq[3], 1, bodies[3], sizeof(bodies[3]));
	expect_body(st, seq[1], 1, bodies[1], sizeof(bodies[1]));
	expect_body(st, sbig, 1, big, sizeof(big));
	ck_assert_int_eq(store_hook_get(st, seq[2], &rec), -1);
	store_body_reads(st, &reads, &preads);
	/* seq[2] the second time was in the buffer: read again, then
	 * refused. */
	ck_assert_uint_eq(reads, 3);
	ck_assert_uint_eq(preads, 4);

	/* After a restart, before its first flush, a fill is not bounded
	 * by the last body flushed and may take in the end of the log
	 * file, where the next records then go: such a record is read
	 * again, not refused. */
	seq[0] = put_one(st, "github", bodies[0], sizeof(bodies[0]), 1);
	store_close(st);
	st = open_ok();
	expect_body(st, seq[0], 1, bodies[0], sizeof(bodies[0]));
	seq[1] = put_one(st, "github", bodies[1], sizeof(bodies[1]), 1);
	expect_body(st, seq[1], 1, bodies[1], sizeof(bodies[1]));
	store_body_reads(st, &reads, &preads);
	ck_assert_uint_eq(reads, 2);
	ck_assert_uint_eq(preads, 2);
	store_close(st);
}
END_TEST

/* A pass visits a bounded number of hooks: over a long run of hooks whose
 * bodies are in their records it stops short, says so, and the next pass
 * goes on from there to the first body in the log. */
START_TEST(test_body_migrate_visits)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_batch *b;
	struct store_hook h;
	struct store *st;
	unsigned char body[1024];
	uint64_t seq;
	int i;

	memset(body, 'v', sizeof(body));
	st = open_ok();
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	for (i = 0; i < 9000; i++) {
		hook_fill(&h, "github", "{}", 2);
		h.dedupe_key = NULL;
		ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	}
	commit_ok(st, b);
	seq = put_one(st, "github", body, sizeof(body), 1);
	ck_assert_int_eq(store_body_migrate(st, 100), 0);
	ck_assert_int_eq(store_body_behind(st), 1);
	ck_assert_uint_eq(store_body_pin(st), 0);	/* not found yet */
	ck_assert_int_eq(store_body_migrate(st, 100), 0);
	ck_assert_int_eq(store_body_behind(st), 0);
	ck_assert_uint_eq(store_body_pin(st), 1);
	expect_body(st, seq, 1, body, sizeof(body));
	store_close(st);
}
END_TEST

/* A lazy commit (no flush) is visible at once and kept by a clean close. */
START_TEST(test_commit_lazy)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_counts c;
	struct store_row bad;
	struct store_batch *b;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN];
	uint64_t s1;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, &row, 1);
	store_key_row(rk, s1, 0);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_delivered(b, rk, NULL), 0);
	ck_assert_int_eq(store_batch_commit_lazy(b), 0);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.rows, 0);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));	/* closed */
	store_batch_abort(b);
	store_close(st);
	st = open_ok();
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.rows, 0);
	ck_assert_uint_eq(c.hooks, 0);
	ck_assert_int_eq(store_debug_count(st, "due"), 0);
	/* A failed batch is aborted by it, as by store_batch_commit. */
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	memset(&bad, 0, sizeof(bad));
	bad.state = STORE_ROW_MEMBER;
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &bad), -1);
	ck_assert_int_eq(store_batch_commit_lazy(b), -1);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	store_batch_abort(b);
	store_close(st);
}
END_TEST

static int
failing_fsync(int fd)
{
	errno = EIO;
	return -1;
}

/* A log flush that fails loses the store until a restart: no batch after
 * it is committed (it could sit behind log pages the kernel dropped), and
 * the restart's recovery keeps what was synced before. */
START_TEST(test_flush_fails)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_counts c;
	struct store_batch *b;
	struct store_hook h;
	struct store *st;

	st = open_ok();
	(void)put_one(st, "github", "synced", 6, 1);
	ck_assert_int_eq(store_lost(st), 0);
	store_set_sync_func(failing_fsync);
	hook_fill(&h, "github", "lost?", 5);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	ck_assert_int_eq(store_batch_commit(b), -1);
	store_set_sync_func(NULL);
	ck_assert_msg(strstr(store_strerror(st), "log flush") != NULL, "%s",
	    store_strerror(st));
	ck_assert_int_eq(store_lost(st), 1);
	/* Even with the disk well again: refused, naming the first cause. */
	ck_assert_ptr_null(store_batch_begin(st));
	ck_assert_msg(strstr(store_strerror(st), "restart") != NULL &&
	    strstr(store_strerror(st), "log flush") != NULL, "%s",
	    store_strerror(st));
	store_close(st);

	st = open_ok();
	ck_assert_int_eq(store_lost(st), 0);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_ge(c.hooks, 1);
	(void)put_one(st, "github", "after", 5, 1);
	store_close(st);
}
END_TEST

/* Fails the sync of a table file (a name ending in ".db"), as a disk
 * that cannot write it back; the log's syncs succeed. */
static int
failing_table_fsync(int fd)
{
	char link[64], path[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	if ((n = readlink(link, path, sizeof(path) - 1)) > 3) {
		path[n] = '\0';
		if (strcmp(path + n - 3, ".db") == 0) {
			errno = EIO;
			return -1;
		}
	}
	return fdatasync(fd);
}

/* How many of the first 64 log files are in tmpdir. */
static int
log_files(void)
{
	uint32_t i;
	int n = 0;

	for (i = 1; i < 64; i++)
		n += log_file_exists(i);
	return n;
}

/* A checkpoint whose sync of a table fails loses the store as a failed
 * log flush does (docs/DEPARTURES 12): no batch and no checkpoint after it
 * (the next sync would "succeed" on pages the kernel dropped, and that
 * checkpoint let go of the log), its close fails, and the restart's
 * recovery keeps every committed hook. */
START_TEST(test_checkpoint_sync_fails)
{
	struct store_hook_rec rec;
	struct store *st;
	uint64_t s1, s2;
	int logs;

	st = open_ok();
	s1 = put_one(st, "github", "before", 6, 1);
	ck_assert_int_eq(store_checkpoint(st), 0);
	s2 = put_one(st, "github", "after", 5, 1);
	logs = log_files();
	store_set_sync_func(failing_table_fsync);
	ck_assert_int_eq(store_checkpoint(st), -1);
	store_set_sync_func(NULL);
	ck_assert_int_eq(store_lost(st), 1);
	ck_assert_msg(strstr(store_strerror(st), "checkpoint: fdatasync of") !=
	    NULL && strstr(store_strerror(st), ".db failed") != NULL, "%s",
	    store_strerror(st));
	/* The disk well again: still refused. */
	ck_assert_int_eq(store_checkpoint(st), -1);
	ck_assert_msg(strstr(store_strerror(st), "no checkpoint") != NULL,
	    "%s", store_strerror(st));
	ck_assert_ptr_null(store_batch_begin(st));
	ck_assert_int_eq(store_close(st), -1);
	ck_assert_int_eq(log_files(), logs);

	st = open_ok();
	ck_assert_int_eq(store_lost(st), 0);
	ck_assert_int_eq(store_hook_get(st, s1, &rec), 0);
	store_hook_rec_free(&rec);
	ck_assert_int_eq(store_hook_get(st, s2, &rec), 0);
	store_hook_rec_free(&rec);
	ck_assert_int_eq(store_close(st), 0);
}
END_TEST

/* A close whose table sync fails is not a clean one (-1), and loses
 * nothing committed. */
START_TEST(test_close_sync_fails)
{
	struct store_hook_rec rec;
	struct store *st;
	uint64_t s1;

	st = open_ok();
	s1 = put_one(st, "github", "closing", 7, 1);
	store_set_sync_func(failing_table_fsync);
	ck_assert_int_eq(store_close(st), -1);
	store_set_sync_func(NULL);
	st = open_ok();
	ck_assert_int_eq(store_hook_get(st, s1, &rec), 0);
	store_hook_rec_free(&rec);
	ck_assert_int_eq(store_close(st), 0);
}
END_TEST

/* The sweep visits at most max lanes, and the next goes on after them. */
START_TEST(test_lane_sweep_resume)
{
	struct store_row_spec ord = { 0, MODULE_HTTP, 1, 0 };
	struct store *st;
	int i, j;

	st = open_ok();
	for (i = 0; i < 3; i++) {
		ord.lane_hash = i + 1;
		for (j = 0; j < 2; j++)
			put_rows(st, "acme", "github", 100, &ord, 1);
	}
	put_rows(st, "beta", "github", 100, &ord, 1);
	ck_assert_uint_eq(store_lane_members(st), 7);
	ck_assert_int_eq(lane_sweep(st, "acme", 2), 2);
	ck_assert_int_eq(lane_sweep(st, "beta", 2), 1);	/* its own place */
	ck_assert_int_eq(lane_sweep(st, "acme", 2), 1);	/* the third lane */
	ck_assert_int_eq(lane_sweep(st, "acme", 2), 0);
	ck_assert_int_eq(store_debug_count(st, "lanes"), 4);
	ck_assert_int_eq(store_debug_count(st, "marks"), 3);
	ck_assert_uint_eq(store_lane_members(st), 3);
	store_close(st);
}
END_TEST

START_TEST(test_dead_list)
{
	struct store_row_spec rows[2] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_SQS, 0, 0 },
	};
	struct dead_seen ds;
	struct store_hook h;
	struct store_batch *b;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN];
	char idbuf[UUID_STRLEN + 1];
	uint64_t sa, sb, sc;

	st = open_ok();
	hook_fill(&h, "github", "a", 1);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_hook(b, &h, rows, 2), 0);
	commit_ok(st, b);
	sa = h.seq;
	sb = put_rows(st, "acme", "stripe", 100, rows, 1);
	sc = put_rows(st, "acme", "github", 100, rows, 1);
	ck_assert_int_eq(kill_row(st, sa, 0, 300, "permanent:400", "bad", 1),
	    0);
	ck_assert_int_eq(kill_row(st, sb, 0, 100, "retries_exhausted", "e",
	    84), 0);
	ck_assert_int_eq(kill_row(st, sc, 0, 200, "attempt_timeout:30000",
	    "t", 2), 0);
	ck_assert_int_eq(kill_row(st, sa, 1, 400, "sink_gone:1:sqs", "", 0),
	    0);

	/* Oldest first. */
	memset(&ds, 0, sizeof(ds));
	ck_assert_int_eq(store_dead_list(st, NULL, 0, dead_cb, &ds), 0);
	ck_assert_int_eq(ds.n, 4);
	ck_assert_uint_eq(ds.info[0].seq, sb);
	ck_assert_uint_eq(ds.info[1].seq, sc);
	ck_assert_uint_eq(ds.info[2].seq, sa);
	ck_assert_uint_eq(ds.info[3].seq, sa);
	ck_assert_uint_eq(ds.info[3].sink_index, 1);
	/* Every field of one. */
	uuid_format(h.id, idbuf);
	ck_assert_str_eq(ds.info[2].hook_id, idbuf);
	ck_assert_str_eq(ds.info[2].tenant, "acme");
	ck_assert_str_eq(ds.info[2].source, "github");
	ck_assert_uint_eq(ds.info[2].module, MODULE_HTTP);
	ck_assert_uint_eq(ds.info[2].sink_index, 0);
	ck_assert_str_eq(ds.info[2].reason, "permanent:400");
	ck_assert_str_eq(ds.info[2].last_error, "bad");
	ck_assert_uint_eq(ds.info[2].attempts, 1);
	ck_assert_uint_eq(ds.info[2].dead_at, 300);
	store_key_row(rk, sa, 0);
	ck_assert_mem_eq(ds.info[2].rowkey, rk, sizeof(rk));
	ck_assert_uint_eq(ds.info[3].module, MODULE_SQS);

	/* Source filter, limit, since, stop. */
	memset(&ds, 0, sizeof(ds));
	ck_assert_int_eq(store_dead_list(st, "github", 0, dead_cb, &ds), 0);
	ck_assert_int_eq(ds.n, 3);
	ck_assert_uint_eq(ds.info[0].seq, sc);
	memset(&ds, 0, sizeof(ds));
	ck_assert_int_eq(store_dead_list(st, "stripe", 0, dead_cb, &ds), 0);
	ck_assert_int_eq(ds.n, 1);
	ck_assert_str_eq(ds.info[0].reason, "retries_exhausted");
	memset(&ds, 0, sizeof(ds));
	ck_assert_int_eq(store_dead_list(st, "github", 2, dead_cb, &ds), 0);
	ck_assert_int_eq(ds.n, 2);
	memset(&ds, 0, sizeof(ds));
	ck_assert_int_eq(store_dead_list_since(st, NULL, 250, 0, dead_cb,
	    &ds), 0);
	ck_assert_int_eq(ds.n, 2);
	ck_assert_uint_eq(ds.info[0].dead_at, 300);
	memset(&ds, 0, sizeof(ds));
	ds.stop_after = 1;
	ck_assert_int_eq(store_dead_list(st, NULL, 0, dead_cb, &ds), 0);
	ck_assert_int_eq(ds.n, 1);
	memset(&ds, 0, sizeof(ds));
	ck_assert_int_eq(store_dead_list(st, "none", 0, dead_cb, &ds), 0);
	ck_assert_int_eq(ds.n, 0);
	store_close(st);
}
END_TEST

START_TEST(test_pending_rows)
{
	struct store_row_spec two[2] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_SQS, 0, 0 },
	};
	struct store_row_spec mixed[2] = {
		{ 0, MODULE_HTTP, 1, 0x5 }, { 1, MODULE_SQS, 0, 0 },
	};
	struct scanned sc;
	struct store *st;
	uint64_t s1, s3, s4, s5;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, two, 2);
	put_rows(st, "acme", "stripe", 100, two, 2);
	s3 = put_rows(st, "acme", "github", 100, two, 2);
	s4 = put_rows(st, "acme", "github", 100, mixed, 2);
	s5 = put_rows(st, "acme", "github", 100, two, 1);
	ck_assert_int_eq(kill_row(st, s3, 1, 50, "permanent:x", "", 1), 0);

	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_pending_rows_of_source(st, "github", 0, 0,
	    pending_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 6);

	/* Pages of 2: never split a hook. */
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_pending_rows_of_source(st, "github", 0, 2,
	    pending_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 2);
	ck_assert_uint_eq(sc.seq[0], s1);
	ck_assert_uint_eq(sc.seq[1], s1);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_pending_rows_of_source(st, "github", s1, 2,
	    pending_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 3);
	ck_assert_uint_eq(sc.seq[0], s3);
	ck_assert_uint_eq(sc.sink[0], 0);
	ck_assert_uint_eq(sc.seq[1], s4);
	ck_assert_uint_eq(sc.row[1].state, STORE_ROW_MEMBER);
	ck_assert_uint_eq(sc.seq[2], s4);
	ck_assert_uint_eq(sc.row[2].state, STORE_ROW_DUE);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_pending_rows_of_source(st, "github", s4, 2,
	    pending_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 1);
	ck_assert_uint_eq(sc.seq[0], s5);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_pending_rows_of_source(st, "github", s5, 2,
	    pending_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 0);
	memset(&sc, 0, sizeof(sc));
	sc.stop_after = 1;
	ck_assert_int_eq(store_pending_rows_of_source(st, "github", 0, 0,
	    pending_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 1);

	/* dead_letter_source over the pages: nothing pending after. */
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_pending_rows_of_source(st, "github", 0, 0,
	    pending_cb, &sc), 0);
	kill_scanned(st, &sc);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_pending_rows_of_source(st, "github", 0, 0,
	    pending_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 0);
	ck_assert_uint_eq(store_lane_members(st), 0);
	ck_assert_int_eq(store_debug_count(st, "marks"), 0);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_pending_rows_of_source(st, "stripe", 0, 0,
	    pending_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 2);
	store_close(st);
}
END_TEST

/* The one row a dead_letter_source step must leave: claimed. */
static uint64_t claimed_seq;

static int
claimed_cb(const unsigned char *rk, void *arg)
{
	return store_rowkey_seq(rk) == claimed_seq;
}

/* One dead_letter_source step in its own committed batch: its answer. */
static int
dls_step(struct store *st, struct store_dls *s)
{
	struct store_batch *b;
	int ret;

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ret = store_batch_source_dead(b, s);
	ck_assert_msg(ret >= 0, "step: %s", store_strerror(st));
	commit_ok(st, b);
	return ret;
}

/* Run dead_letter_source steps to the end: the steps it took. */
static int
dls_run(struct store *st, struct store_dls *s, uint64_t *moved,
    uint64_t *dropped, int *seen)
{
	int ret, steps = 0;

	*moved = *dropped = 0;
	*seen = 0;
	do {
		ret = dls_step(st, s);
		*moved += s->moved;
		*dropped += s->dropped;
		*seen |= s->seen;
		steps++;
		ck_assert_int_lt(steps, 100);
	} while (ret == 1);
	return steps;
}

/*
 * dead_letter_source's steps: pages that never split a hook, rows of
 * other sources bounding a step too; a row whose hook is gone is dropped,
 * not counted (a lane's head among them: its lane is released); a claimed
 * row is left; the count is the rows moved.
 */
START_TEST(test_source_dead_step)
{
	struct store_row_spec two[2] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_SQS, 0, 0 },
	};
	struct store_row_spec one = { 0, MODULE_HTTP, 0, 0 };
	struct store_row_spec ord = { 0, MODULE_HTTP, 1, 0x7 };
	struct store_dls s;
	struct store_counts c;
	struct store_row r;
	struct scanned sc;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN];
	uint64_t s1, s3, s4, s5, s6, s7, s8, moved, dropped;
	int seen;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, two, 2);
	put_rows(st, "acme", "stripe", 100, &one, 1);
	s3 = put_rows(st, "acme", "github", 100, &ord, 1);
	s4 = put_rows(st, "acme", "github", 100, &ord, 1);
	s5 = put_rows(st, "acme", "github", 100, &ord, 1);
	s6 = put_rows(st, "acme", "github", 100, &one, 1);
	s7 = put_rows(st, "acme", "github", 100, &one, 1);
	s8 = put_rows(st, "acme", "github", 100, &one, 1);
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 1);	/* s3 heads */
	ck_assert_int_eq(kill_row(st, s8, 0, 50, "permanent:x", "", 1), 0);
	st = orphan(st, s5, s6);

	/* A page of 2 rows is s1's hook, whole. */
	memset(&s, 0, sizeof(s));
	s.source = "github";
	s.reason = "source_gone:github";
	s.dead_at = 1000;
	s.limit = 2;
	s.skip = claimed_cb;
	claimed_seq = s7;
	ck_assert_int_eq(dls_step(st, &s), 1);
	ck_assert_uint_eq(s.moved, 2);
	ck_assert_uint_eq(s.dropped, 0);
	ck_assert_uint_eq(s.after_seq, s1);
	ck_assert_int_eq(s.seen, 1);
	store_key_row(rk, s1, 1);
	ck_assert_int_eq(store_row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_DEAD);

	/* The rest: s3 and s4 moved (each release makes the next member
	 * the head), s5 (the head by then) and s6 dropped, s7 left to its
	 * attempt, s8 dead already. */
	ck_assert_int_ge(dls_run(st, &s, &moved, &dropped, &seen), 2);
	ck_assert_uint_eq(moved, 2);
	ck_assert_uint_eq(dropped, 2);
	ck_assert_int_eq(seen, 1);
	store_key_row(rk, s3, 0);
	ck_assert_int_eq(store_row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_DEAD);
	store_key_row(rk, s4, 0);
	ck_assert_int_eq(store_row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_DEAD);
	store_key_row(rk, s5, 0);
	ck_assert_int_eq(store_row_get(st, rk, &r), 0);
	store_key_row(rk, s6, 0);
	ck_assert_int_eq(store_row_get(st, rk, &r), 0);
	ck_assert_int_eq(store_debug_count(st, "lanes"), 0);
	ck_assert_int_eq(store_debug_count(st, "members"), 0);
	ck_assert_int_eq(store_debug_count(st, "marks"), 0);
	ck_assert_uint_eq(store_lane_members(st), 0);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.dead, 5);
	ck_assert_uint_eq(c.rows, 7);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_pending_rows_of_source(st, "github", 0, 0,
	    pending_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 1);
	ck_assert_uint_eq(sc.seq[0], s7);
	/* Due: s7 and stripe's row, nothing stale. */
	ck_assert_int_eq(store_debug_count(st, "due"), 2);

	/* Again: nothing moves, but the source is known (its dead rows). */
	s.after_seq = 0;
	ck_assert_int_eq(dls_run(st, &s, &moved, &dropped, &seen), 1);
	ck_assert_uint_eq(moved + dropped, 0);
	ck_assert_int_eq(seen, 1);

	/* A bound on the rows read: a step a hook, whatever its source (six
	 * hooks have rows left). */
	s.after_seq = 0;
	s.limit = 0;
	s.visits = 1;
	ck_assert_int_eq(dls_run(st, &s, &moved, &dropped, &seen), 6);
	s.source = "nosuch";
	s.after_seq = 0;
	ck_assert_int_eq(dls_run(st, &s, &moved, &dropped, &seen), 6);
	ck_assert_int_eq(seen, 0);
	ck_assert_uint_eq(moved + dropped, 0);
	store_close(st);
}
END_TEST

/*
 * logsum is libdb's __ham_func4 (h = h * 33 + byte) eight bytes a step:
 * the same sum for every length and alignment, over random bytes.
 */
START_TEST(test_logsum_matches_bdb)
{
	uint32_t (*fn)(void *, const void *, uint32_t);
	static unsigned char buf[70000];
	size_t i, off, len;

	ck_assert_ptr_nonnull(fn = logsum_bdb());
	srandom(7);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)random();
	for (off = 0; off < 8; off++)
		for (len = 0; len <= 2100; len++)
			ck_assert_uint_eq(logsum(buf + off, len),
			    fn(NULL, buf + off, (uint32_t)len));
	ck_assert_uint_eq(logsum(buf, 65536), fn(NULL, buf, 65536));
	ck_assert_uint_eq(logsum(buf, 0), 0);
	/* h = h * 33 + byte, by hand: ((1 * 33) + 2) * 33 + 3 */
	ck_assert_uint_eq(logsum("\1\2\3", 3), 1158);
}
END_TEST

/* daemon/logsum.c's, which this program exports. */
uint32_t	 __ham_func4(void *, const void *, uint32_t);

/*
 * The store installs logsum as libdb's __ham_func4 (this program exports
 * it, as ankusad does), and every record it logs then carries the sum
 * that libdb's own function gives: walk the log file record by record
 * and check each with it.  Reopening runs recovery over the same log.
 */
START_TEST(test_logsum_log_records)
{
	uint32_t (*fn)(void *, const void *, uint32_t);
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store *st;
	unsigned char *log, body[3000];
	uint32_t prev, len, sum;
	char path[PATH_MAX], err[256];
	size_t off, n, records = 0;
	struct stat sb;
	uint64_t seq;
	int fd, i;

	st = open_ok();
#ifdef HAVE_DYNAMIC_LIST
	ck_assert_msg(logsum_install(err, sizeof(err)) == 1, "%s", err);
	ck_assert_ptr_eq(dlsym(RTLD_DEFAULT, "__ham_func4"),
	    (void *)__ham_func4);
#else
	(void)err;
#endif
	memset(body, 'b', sizeof(body));
	for (i = 0; i < 200; i++) {
		body[i] = (unsigned char)i;
		seq = put_hook_body(st, "acme", "github", 100 + i, body,
		    (size_t)(300 + i * 13), &row, 1);
		if (i % 3 == 0)
			ck_assert_int_eq(deliver(st, seq, 0), 0);
	}
	store_close(st);

	ck_assert_ptr_nonnull(fn = logsum_bdb());
	snprintf(path, sizeof(path), "%s/log.0000000001", tmpdir);
	ck_assert_int_ne(fd = open(path, O_RDONLY), -1);
	ck_assert_int_eq(fstat(fd, &sb), 0);
	ck_assert_ptr_nonnull(log = malloc((size_t)sb.st_size));
	ck_assert_int_eq(read(fd, log, (size_t)sb.st_size), sb.st_size);
	close(fd);
	n = (size_t)sb.st_size;
	for (off = 0; off + 12 <= n; off += len) {
		memcpy(&prev, log + off, 4);
		memcpy(&len, log + off + 4, 4);
		memcpy(&sum, log + off + 8, 4);
		if (len == 0)
			break;		/* the end of what was written */
		ck_assert_uint_ge(len, 12);
		ck_assert_uint_le(len, n - off);
		ck_assert_msg((fn(NULL, log + off + 12, len - 12) ^ prev ^
		    len) == sum, "record at %zu: checksum", off);
		records++;
	}
	free(log);
	ck_assert_uint_gt(records, 600);

	st = open_ok();
	ck_assert_uint_eq(store_debug_count(st, "hooks"), 133);
	store_close(st);
}
END_TEST

static Suite *
store_suite(void)
{
	Suite *s = suite_create("store");
	TCase *tc;

	tc = tcase_create("batches");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_seq_never_reused);
	tcase_add_test(tc, test_ordered_rows);
	tcase_add_test(tc, test_read_during_batch);
	suite_add_tcase(s, tc);

	tc = tcase_create("dedupe");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_dedupe_round_trip);
	tcase_add_test(tc, test_dedupe_in_batch);
	tcase_add_test(tc, test_hook_fits);
	tcase_add_test(tc, test_dedupe_sweep);
	suite_add_tcase(s, tc);

	tc = tcase_create("quarantine");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_quarantine);
	tcase_add_test(tc, test_quarantine_release);
	tcase_add_test(tc, test_quarantine_counters);
	suite_add_tcase(s, tc);

	tc = tcase_create("dispatch");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_due_tenants);
	tcase_add_test(tc, test_due_scan);
	tcase_add_test(tc, test_delivered);
	tcase_add_test(tc, test_delivered_known);
	tcase_add_test(tc, test_reschedule);
	tcase_add_test(tc, test_dead);
	tcase_add_test(tc, test_dead_list);
	tcase_add_test(tc, test_pending_rows);
	tcase_add_test(tc, test_source_dead_step);
	tcase_add_test(tc, test_commit_lazy);
	tcase_add_test(tc, test_flush_fails);
	tcase_add_test(tc, test_checkpoint_sync_fails);
	tcase_add_test(tc, test_close_sync_fails);
	suite_add_tcase(s, tc);

	tc = tcase_create("lanes");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_lanes);
	tcase_add_test(tc, test_lane_head_parked);
	tcase_add_test(tc, test_lane_heal);
	tcase_add_test(tc, test_lane_orphan_head);
	tcase_add_test(tc, test_lane_member_gone);
	tcase_add_test(tc, test_lane_member_dead);
	tcase_add_test(tc, test_lane_members_restart);
	tcase_add_test(tc, test_lane_sweep_resume);
	tcase_add_test(tc, test_marked_tenants);
	suite_add_tcase(s, tc);

	tc = tcase_create("durability");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_restart);
	tcase_add_test(tc, test_recovery);
	tcase_add_test(tc, test_log_zero_ahead);
	tcase_add_test(tc, test_clean_step);
	tcase_add_test(tc, test_keep_clean);
	tcase_add_test(tc, test_region_home);
	tcase_add_test(tc, test_region_sweep);
	tcase_add_test(tc, test_log_zero_ahead_files);
	tcase_add_test(tc, test_body_in_log);
	tcase_add_test(tc, test_body_migrate);
	tcase_add_test(tc, test_body_pin_current);
	tcase_add_test(tc, test_body_unreadable);
	tcase_add_test(tc, test_body_read_ahead);
	tcase_add_test(tc, test_body_migrate_visits);
	suite_add_tcase(s, tc);

	tc = tcase_create("refusals");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_damaged_file);
	tcase_add_test(tc, test_garbage_file);
	tcase_add_test(tc, test_newer_schema);
	tcase_add_test(tc, test_meta_unknown_version);
	tcase_add_test(tc, test_missing_meta);
	tcase_add_test(tc, test_hook_unknown_version);
	tcase_add_test(tc, test_body_position_damaged);
	suite_add_tcase(s, tc);

	tc = tcase_create("checksums");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_logsum_matches_bdb);
	tcase_add_test(tc, test_logsum_log_records);
	suite_add_tcase(s, tc);

	tc = tcase_create("codecs");
	tcase_set_timeout(tc, 10);
	tcase_add_loop_test(tc, test_codec_versions, 0,
	    sizeof(codec_cases) / sizeof(codec_cases[0]));
	tcase_add_test(tc, test_key_order);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr;
	int failed;

	log_init("check_store", 1);
	log_setlevel(getenv("STORE_SHOW") != NULL ?
	    LOG_LEVEL_WARN : LOG_LEVEL_ERROR);
	sr = srunner_create(store_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
