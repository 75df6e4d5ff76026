/*
 * check_store_durable.c: unit tests of the Berkeley DB store: restarts,
 * recovery, the region home, bodies in the log, upkeep, refusals of damaged
 * stores, and the log checksum (daemon/store.c, store_bdb.c, store_maint.c,
 * trash.c).
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
#include "storeutil.h"

static Suite	*store_suite(void);


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

/* While a backup exists no log file is removed, even one that recovery
 * and every body let go of: the backup copies the log files from the one
 * its tables need on, and a gap would end the copy's log there. */
START_TEST(test_backup_holds_log_removal)
{
	struct store_backup *b;
	struct store *st;
	char dir[PATH_MAX], err[1024];

	snprintf(dir, sizeof(dir), "%s/backup", tmpdir);
	st = open_ok();
	fill_log(st, 3);
	ck_assert_int_eq(store_body_migrate(st, 100), 0);
	ck_assert_ptr_nonnull(b = store_backup_new(st, dir, NULL, NULL, err,
	    sizeof(err)));
	ck_assert_int_eq(store_checkpoint(st), 0);
	ck_assert_int_eq(store_checkpoint(st), 0);
	ck_assert_int_eq(log_file_exists(1), 1);
	ck_assert_int_eq(log_file_exists(2), 1);
	store_backup_free(b);
	ck_assert_int_eq(store_checkpoint(st), 0);
	ck_assert_int_eq(log_file_exists(1), 0);
	ck_assert_int_eq(log_file_exists(2), 0);
	ck_assert_int_eq(log_file_exists(3), 1);
	store_close(st);
}
END_TEST

/* A backup of a store whose first log files are gone: the copy's log
 * starts at the first one left, its catastrophic recovery replays from
 * there, and it holds the hooks with their bodies in the log. */
START_TEST(test_backup_after_prune)
{
	struct store_backup *b;
	struct store *st;
	unsigned char body[4096];
	char dir[PATH_MAX], err[1024], path[PATH_MAX + 32];
	uint64_t s1, s2;
	size_t i;

	for (i = 0; i < sizeof(body); i++)
		body[i] = (unsigned char)(i * 11 + 3);
	snprintf(dir, sizeof(dir), "%s/backup", tmpdir);
	st = open_ok();
	fill_log(st, 3);
	ck_assert_int_eq(store_body_migrate(st, 100), 0);
	ck_assert_int_eq(store_checkpoint(st), 0);
	ck_assert_int_eq(log_file_exists(1), 0);
	s1 = put_one(st, "github", body, sizeof(body), 1);
	ck_assert_int_eq(store_checkpoint(st), 0);
	s2 = put_one(st, "github", body, 100, 1);
	ck_assert_ptr_nonnull(b = store_backup_new(st, dir, NULL, NULL, err,
	    sizeof(err)));
	ck_assert_msg(store_backup_run(b) == 0, "%s", store_backup_error(b));
	store_backup_free(b);
	store_close(st);

	snprintf(path, sizeof(path), "%s/log.0000000001", dir);
	ck_assert_int_eq(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/log.0000000003", dir);
	ck_assert_int_eq(access(path, F_OK), 0);
	ck_assert_msg((st = store_open(dir, err, sizeof(err))) != NULL,
	    "store_open of the copy: %s", err);
	expect_body(st, s1, 1, body, sizeof(body));
	expect_body(st, s2, 0, body, 100);
	store_close(st);
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
	tcase_add_test(tc, test_backup_holds_log_removal);
	tcase_add_test(tc, test_backup_after_prune);
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

	return s;
}

int
main(void)
{
	return storeutil_run(store_suite());
}
