/* SPDX-License-Identifier: ISC */
/*
 * check_store_durable.c: unit tests of the Berkeley DB store: restarts,
 * recovery, the region home, bodies in their table and their move out of
 * the log at the upgrade, upkeep, refusals of damaged stores, and the log
 * checksum (daemon/store/store.c, store_bdb.c, store_bodies.c, store_maint.c,
 * store_trash.c).
 *
 * Each case works in its own mkdtemp directory under TMPDIR and removes it.
 * The recovery case forks a child that commits and then _exit()s without
 * closing anything, as a SIGKILL would leave the environment.  Damage cases
 * edit the files with BDB or plain writes behind the store's back.
 */
#include "config.h"

#include <sys/file.h>
#include <sys/resource.h>
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
#include "store_logsum.h"
#include "store.h"
#include "store_int.h"
#include "store_rec.h"
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
 * A refused commit leaves its log records in Berkeley DB's log buffer (its
 * commit could not write them), and the flush that makes an earlier lazy
 * commit durable must not need them: on a full disk (here the log's writes
 * past RLIMIT_FSIZE fail with EFBIG) the dispatch turn between a batch's
 * commit and its flush (writer.c) can leave such records, and a flush of
 * the whole log then failed and stopped the daemon although the batch
 * before them was written.  The refused batch is a 503, the store goes on,
 * and after a restart the lazy batch is there and the refused one is not.
 */
START_TEST(test_flush_after_refused_commit)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_batch *b;
	struct store_hook h;
	struct rlimit rl, low;
	DB_LOG_STAT *sp;
	struct store *st;
	struct listed l;

	st = open_ok();
	put_one(st, "github", "first", 5, 1);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	hook_fill(&h, "github", "lazy", 4);
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	ck_assert_int_eq(store_batch_commit_lazy(b), 0);

	/* From here no write reaches the log past its end. */
	ck_assert_int_eq(st->env->log_stat(st->env, &sp, 0), 0);
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &rl), 0);
	low = rl;
	low.rlim_cur = sp->st_cur_offset;
	free(sp);
	ck_assert(signal(SIGXFSZ, SIG_IGN) != SIG_ERR);
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &low), 0);

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	hook_fill(&h, "github", "refused", 7);
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	ck_assert_int_eq(store_batch_commit_lazy(b), -1);
	ck_assert_msg(!store_lost(st), "lost: %s", store_strerror(st));

	ck_assert_msg(store_log_flush(st) == 0, "flush: %s",
	    store_strerror(st));
	ck_assert_msg(!store_lost(st), "lost: %s", store_strerror(st));

	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	put_one(st, "github", "after", 5, 1);
	store_close(st);

	st = open_ok();
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_hooks_list(st, NULL, 0, 0, list_cb, &l), 0);
	ck_assert_int_eq(l.n, 3);
	ck_assert_uint_eq(l.info[0].size, 5);
	ck_assert_uint_eq(l.info[1].size, 4);
	ck_assert_uint_eq(l.info[2].size, 5);
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
 * store_maint's schedule, driven by the clock it is given: a keep-clean
 * tick every 250 ms, which writes dirty pages when more than a fifth of
 * the cache's pages are; at the checkpoint's time the dirty pages go in
 * steps 5 ms apart, then, 100 ms after the last step, the checkpoint,
 * which leaves nothing dirty and is reported once; the next one is due
 * an interval after the first.
 */
START_TEST(test_maint_schedule)
{
	struct store *st;
	uint64_t t0 = 1000000, t, d;
	long dirty, last_step = 0;
	int did, calls;

	st = open_ok();
	ck_assert_int_eq(store_checkpoint(st), 0);
	put_4000(st);
	ck_assert_int_gt(dirty = store_clean_step(st, 1000000), 150);
	store_maint_start(st, 1000, t0);
	ck_assert_uint_eq(store_maint(st, t0, &did), 250);
	ck_assert_int_eq(did, 0);
	ck_assert_uint_eq(store_maint(st, t0 + 250, &did), 250);
	ck_assert_int_eq(did, 0);
	ck_assert_int_lt(store_clean_step(st, 1000000), dirty);
	put_4000(st);
	ck_assert_int_gt(store_clean_step(st, 1000000), 150);
	t = t0 + 1000;
	ck_assert_uint_eq(d = store_maint(st, t, &did), 5);
	ck_assert_int_eq(did, 0);
	for (calls = 0; calls < 1000; calls++) {
		t += d;
		d = store_maint(st, t, &did);
		if (did)
			break;
		if (d == 100)
			last_step = (long)(t - t0);
	}
	ck_assert_int_eq(did, STORE_MAINT_CHECKPOINTED);
	ck_assert_int_ge(calls, 1);
	ck_assert_int_gt(last_step, 1000);
	ck_assert_uint_ge(t, t0 + (uint64_t)last_step + 100);
	ck_assert_int_eq(store_clean_step(st, 0), 0);
	ck_assert_uint_le(d, 250);
	ck_assert_uint_le(t + d, t0 + 2000);
	d = store_maint(st, t, &did);
	ck_assert_int_eq(did, 0);
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
	static const unsigned char v[5] = { 1, 0, 0, 0,
	    STORE_SCHEMA_VERSION + 1 };
	struct store *st;
	char err[1024], want[32];

	st = open_ok();
	store_close(st);
	meta_poke("schema", v, sizeof(v));
	st = store_open(tmpdir, err, sizeof(err));
	if (getenv("STORE_SHOW") != NULL)
		fprintf(stderr, "REFUSED: %s\n", err);
	ck_assert_ptr_null(st);
	snprintf(want, sizeof(want), "schema version %d",
	    STORE_SCHEMA_VERSION + 1);
	ck_assert_msg(strstr(err, "meta.db") != NULL &&
	    strstr(err, want) != NULL, "error: %s", err);
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
	ck_assert_ptr_nonnull(val = hook_encode(&h, 1, "", &vlen));
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

/* A record flagged as holding its body's log position or record id in
 * bodies must end in exactly one: anything else is damage, reported with
 * the record. */
START_TEST(test_body_position_damaged)
{
	struct store_hook_rec rec;
	struct store *st;

	if (_i == 0)
		poke_hook1("1234567", 7, 5, 0x04);	/* "in the log" */
	else
		poke_hook1("12345", 5, 5, 0x08);	/* "in bodies" */
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

/* The hook at seq reads back with body, from bodies or from its record as
 * in says. */
static void
expect_body(struct store *st, uint64_t seq, int in, const void *body,
    size_t len)
{
	struct store_hook_rec rec;

	ck_assert_msg(store_hook_get(st, seq, &rec) == 1, "hook %llu: %s",
	    (unsigned long long)seq, store_strerror(st));
	ck_assert_int_eq(rec.at.in, in);
	ck_assert_uint_eq(rec.hook.body_len, len);
	ck_assert_mem_eq(rec.hook.body, body, len);
	ck_assert_uint_eq(rec.rows, 1);
	ck_assert_str_eq(rec.hook.tenant, "acme");
	ck_assert_str_eq(rec.hook.dedupe_key, "delivery-1");
	store_hook_rec_free(&rec);
}

/* The records of bodies, the heap table, counted with a cursor. */
static int64_t
bodies(struct store *st)
{
	return store_debug_count(st, "bodies");
}

/* Bodies of the sizes the store keeps in bodies (256 bytes to 1 MiB), and
 * around them the ones it keeps in the record. */
static const size_t body_sizes[] = {
	255, 256, 32 * 1024 + 1, 1024 * 1024, 1024 * 1024 + 1, 16
};
#define NSIZES	(sizeof(body_sizes) / sizeof(body_sizes[0]))

static int
body_in(size_t len)
{
	return len >= 256 && len <= 1024 * 1024 ? STORE_BODY_HEAP :
	    STORE_BODY_RECORD;
}

static unsigned char *
body_of(size_t len, int salt)
{
	unsigned char *p;
	size_t i;

	ck_assert_ptr_nonnull(p = malloc(len));
	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 7 + salt);
	return p;
}

/* Bodies of 256 bytes to 1 MiB are records of bodies, and their hooks'
 * records point there; smaller and larger ones stay in the record.  All
 * read back the same, after a close and open too; a batch that aborts
 * after putting a body leaves none; a delivered hook's body goes. */
START_TEST(test_body_in_heap)
{
	struct store_hook_rec rec;
	struct store *st;
	unsigned char *b[NSIZES];
	uint64_t seq[NSIZES], s;
	size_t i;

	st = open_ok();
	for (i = 0; i < NSIZES; i++) {
		b[i] = body_of(body_sizes[i], (int)i);
		seq[i] = put_one(st, "github", b[i], body_sizes[i], 1);
		expect_body(st, seq[i], body_in(body_sizes[i]), b[i],
		    body_sizes[i]);
	}
	ck_assert_int_eq(bodies(st), 3);
	s = put_one(st, "github", b[1], body_sizes[1], 0);
	ck_assert_int_eq(store_hook_get(st, s, &rec), 0);
	ck_assert_int_eq(bodies(st), 3);
	store_close(st);

	st = open_ok();
	ck_assert_int_eq(bodies(st), 3);
	for (i = 0; i < NSIZES; i++) {
		expect_body(st, seq[i], body_in(body_sizes[i]), b[i],
		    body_sizes[i]);
		ck_assert_int_eq(deliver(st, seq[i], 0), 1);
		ck_assert_int_eq(store_hook_get(st, seq[i], &rec), 0);
		free(b[i]);
	}
	ck_assert_int_eq(bodies(st), 0);
	store_close(st);
}
END_TEST

/* Bodies committed by a process that is then SIGKILLed are all there
 * after recovery, and the one of a batch left open is not. */
START_TEST(test_body_sigkill)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_hook_rec rec;
	struct store *st;
	unsigned char *b[NSIZES];
	size_t i;
	pid_t pid;

	for (i = 0; i < NSIZES; i++)
		b[i] = body_of(body_sizes[i], (int)i + 3);
	if ((pid = fork()) == 0) {
		struct store_batch *sb;
		struct store_hook h;

		st = open_ok();
		for (i = 0; i < NSIZES; i++)
			if (put_one(st, "github", b[i], body_sizes[i], 1) !=
			    i + 1)
				_exit(3);
		hook_fill(&h, "github", b[1], body_sizes[1]);
		if ((sb = store_batch_begin(st)) == NULL ||
		    store_batch_put_hook(sb, &h, &row, 1) != 0)
			_exit(4);
		kill(getpid(), SIGKILL);
		_exit(5);
	}
	child_killed(pid);

	st = open_ok();
	ck_assert_int_eq(bodies(st), 3);
	for (i = 0; i < NSIZES; i++)
		expect_body(st, i + 1, body_in(body_sizes[i]), b[i],
		    body_sizes[i]);
	ck_assert_int_eq(store_hook_get(st, NSIZES + 1, &rec), 0);
	for (i = 0; i < NSIZES; i++) {
		ck_assert_int_eq(deliver(st, i + 1, 0), 1);
		free(b[i]);
	}
	ck_assert_int_eq(bodies(st), 0);
	store_close(st);
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
	ck_assert_uint_gt(n, 200);	/* two files of 32 MiB */
	ck_assert_int_eq(bodies(st), (int64_t)n);
	for (seq = 1; seq <= n; seq++) {
		body[0] = (unsigned char)(seq - 1);
		expect_body(st, seq, STORE_BODY_HEAP, body, sizeof(body));
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
			    NULL, NULL), 1);
		}
		ck_assert_int_eq(store_batch_commit_lazy(b), 0);
	}
}

/* The checkpoint removes the log files log_archive lists, oldest first,
 * whatever hooks are alive (their bodies are in bodies): renamed aside,
 * emptied a step at a time by the store's thread, then gone; and one a
 * crash left renamed aside goes at the open. */
START_TEST(test_log_prune)
{
	struct store *st;
	unsigned char body[2048];
	char path[512];
	uint64_t keep;
	size_t i;
	FILE *f;

	snprintf(path, sizeof(path), "%s/removed-log.%010u", tmpdir, 7);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fclose(f);
	for (i = 0; i < sizeof(body); i++)
		body[i] = (unsigned char)(i * 13 + 1);
	st = open_ok();
	ck_assert_int_eq(file_exists("removed-log.", 7), 0);
	ck_assert_uint_eq(store_log_current(st), 1);
	keep = put_one(st, "github", body, sizeof(body), 1);
	fill_log(st, 3);
	ck_assert_int_eq(store_checkpoint(st), 0);
	ck_assert_int_eq(log_file_exists(1), 0);
	ck_assert_int_eq(log_file_exists(2), 0);
	ck_assert_int_eq(log_file_exists(3), 1);
	ck_assert_uint_ge(trash_wait(st), 2 * 32);	/* 1 MiB a step */
	ck_assert_int_eq(file_exists("removed-log.", 1), 0);
	ck_assert_int_eq(file_exists("removed-log.", 2), 0);
	expect_body(st, keep, STORE_BODY_HEAP, body, sizeof(body));
	store_close(st);
	st = open_ok();
	expect_body(st, keep, STORE_BODY_HEAP, body, sizeof(body));
	ck_assert_int_eq(deliver(st, keep, 0), 1);
	ck_assert_int_eq(bodies(st), 0);
	store_close(st);
}
END_TEST

/*
 * A store as the builds before 2026-12-02 left it, made with documented
 * calls only: each hook's body a log record of the application's type
 * (DB_ENV->log_put, as bdb_body_log wrote it: u32 type, u32 txnid 0, a
 * zero prev LSN, the seq big-endian, the body), its record flagged with the
 * position (the store's own codec), no bodies record, schema 1, and the
 * log moved on to file 2 with a checkpoint there.  how[i] for hook i + 1:
 * 0 its own record, 1 a position in no log file, 2 the position of hook
 * 1's record, 3 its own record with a byte of the body flipped.
 */
#define OLD_BODY	1024
#define OLDREC_TYPE	(DB_user_BEGIN + 1)

static int
old_dispatch(DB_ENV *env, DBT *rec, DB_LSN *lsn, db_recops op)
{
	return 0;
}

static DB *
old_db(DB_ENV *env, const char *file, DBTYPE type)
{
	DB *db;

	ck_assert_int_eq(db_create(&db, env, 0), 0);
	ck_assert_int_eq(db->open(db, NULL, file, NULL, type, DB_AUTO_COMMIT,
	    0600), 0);
	return db;
}

static void
old_store(const int *how, int n)
{
	static const unsigned char schema1[5] = { 1, 0, 0, 0, 1 };
	struct store_hook_rec rec;
	struct store_body_at at;
	struct store *st;
	unsigned char kb[8], *body, rb[24 + OLD_BODY], *val, *filler;
	DB_LSN lsn[16], end;
	DB_LOG_STAT *ls;
	DB_HEAP_RID rid;
	DB_ENV *env;
	DB *hooks, *heap, *meta;
	DBT k, v, d;
	uint32_t type = OLDREC_TYPE;
	size_t len;
	char path[PATH_MAX];
	int i, fd;

	ck_assert_int_le(n, 16);
	st = open_ok();
	for (i = 0; i < n; i++) {
		body = body_of(OLD_BODY, i);
		ck_assert_uint_eq(put_one(st, "github", body, OLD_BODY, 1),
		    i + 1);
		free(body);
	}
	store_close(st);

	ck_assert_int_eq(db_env_create(&env, 0), 0);
	ck_assert_int_eq(env->set_app_dispatch(env, old_dispatch), 0);
	ck_assert_int_eq(env->set_lg_max(env, 32u * 1024 * 1024), 0);
	ck_assert_int_eq(env->open(env, tmpdir, DB_CREATE | DB_INIT_TXN |
	    DB_INIT_LOG | DB_INIT_MPOOL | DB_RECOVER, 0600), 0);
	hooks = old_db(env, "hooks.db", DB_BTREE);
	heap = old_db(env, "bodies.db", DB_HEAP);
	meta = old_db(env, "meta.db", DB_BTREE);
	for (i = 0; i < n; i++) {
		store_key_hook(kb, i + 1);
		memset(&k, 0, sizeof(k));
		memset(&v, 0, sizeof(v));
		k.data = kb;
		k.size = sizeof(kb);
		v.flags = DB_DBT_MALLOC;
		ck_assert_int_eq(hooks->get(hooks, NULL, &k, &v, 0), 0);
		ck_assert_int_eq(hook_decode("hooks", kb, sizeof(kb),
		    v.data, v.size, &rec, path, sizeof(path)), 0);
		ck_assert_int_eq(rec.at.in, STORE_BODY_HEAP);
		memset(&rid, 0, sizeof(rid));
		rid.pgno = rec.at.page;
		rid.indx = rec.at.indx;
		memset(&k, 0, sizeof(k));
		memset(&d, 0, sizeof(d));
		k.data = &rid;
		k.size = sizeof(rid);
		d.flags = DB_DBT_MALLOC;
		ck_assert_int_eq(heap->get(heap, NULL, &k, &d, 0), 0);
		ck_assert_uint_eq(d.size, 9 + OLD_BODY);
		memcpy(rb, &type, 4);
		memset(rb + 4, 0, 12);
		memcpy(rb + 16, kb, 8);
		memcpy(rb + 24, (unsigned char *)d.data + 9, OLD_BODY);
		free(d.data);
		ck_assert_int_eq(heap->del(heap, NULL, &k, DB_AUTO_COMMIT), 0);
		memset(&d, 0, sizeof(d));
		d.data = rb;
		d.size = sizeof(rb);
		ck_assert_int_eq(env->log_put(env, &lsn[i], &d, 0), 0);

		memset(&at, 0, sizeof(at));
		at.in = STORE_BODY_LOG;
		at.file = lsn[i].file;
		at.off = lsn[i].offset;
		if (how[i] == 1) {
			at.file = 99;
			at.off = 28;
		} else if (how[i] == 2) {
			at.file = lsn[0].file;
			at.off = lsn[0].offset;
		}
		ck_assert_ptr_nonnull(val = hook_encode_at(&rec.hook,
		    rec.rows, rec.claim_ref, &at, &len));
		store_hook_rec_free(&rec);
		free(v.data);
		memset(&k, 0, sizeof(k));
		memset(&v, 0, sizeof(v));
		k.data = kb;
		k.size = sizeof(kb);
		v.data = val;
		v.size = len;
		ck_assert_int_eq(hooks->put(hooks, NULL, &k, &v,
		    DB_AUTO_COMMIT), 0);
		free(val);
	}
	memset(&k, 0, sizeof(k));
	memset(&v, 0, sizeof(v));
	k.data = "schema";
	k.size = 6;
	v.data = (void *)schema1;
	v.size = sizeof(schema1);
	ck_assert_int_eq(meta->put(meta, NULL, &k, &v, DB_AUTO_COMMIT), 0);
	/* On to file 2, with records of the same type, as other hooks'
	 * bodies were, and a checkpoint there: recovery starts after the
	 * bodies. */
	ck_assert_ptr_nonnull(filler = calloc(1, 1024 * 1024));
	memcpy(filler, &type, 4);
	for (;;) {
		ck_assert_int_eq(env->log_stat(env, &ls, 0), 0);
		end.file = ls->st_cur_file;
		free(ls);
		if (end.file >= 2)
			break;
		memset(&d, 0, sizeof(d));
		d.data = filler;
		d.size = 1024 * 1024;
		ck_assert_int_eq(env->log_put(env, &end, &d, 0), 0);
	}
	free(filler);
	ck_assert_int_eq(env->txn_checkpoint(env, 0, 0, DB_FORCE), 0);
	ck_assert_int_eq(env->log_flush(env, NULL), 0);
	ck_assert_int_eq(hooks->close(hooks, 0), 0);
	ck_assert_int_eq(heap->close(heap, 0), 0);
	ck_assert_int_eq(meta->close(meta, 0), 0);
	ck_assert_int_eq(env->close(env, 0), 0);

	for (i = 0; i < n; i++) {
		unsigned char c;

		if (how[i] != 3)
			continue;
		snprintf(path, sizeof(path), "%s/log.%010u", tmpdir,
		    lsn[i].file);
		ck_assert_int_ne(fd = open(path, O_RDWR), -1);
		ck_assert_int_eq(pread(fd, &c, 1, lsn[i].offset + 12 + 24 +
		    100), 1);
		c ^= 0x10;
		ck_assert_int_eq(pwrite(fd, &c, 1, lsn[i].offset + 12 + 24 +
		    100), 1);
		close(fd);
	}
}

/* The open of a store of schema 1 moves every body out of the log into
 * bodies, through libdb's log cursor, and the log file they were in is
 * then one log_archive lists: the checkpoint removes it.  Not again at
 * the next open. */
START_TEST(test_upgrade_bodies)
{
	static const int how[3] = { 0, 0, 0 };
	struct store *st;
	unsigned char *body;
	int i;

	old_store(how, 3);
	st = open_ok();
	ck_assert_int_eq(bodies(st), 3);
	for (i = 0; i < 3; i++) {
		body = body_of(OLD_BODY, i);
		expect_body(st, i + 1, STORE_BODY_HEAP, body, OLD_BODY);
		free(body);
	}
	ck_assert_int_eq(log_file_exists(1), 1);
	ck_assert_int_eq(store_checkpoint(st), 0);
	ck_assert_int_eq(log_file_exists(1), 0);
	store_close(st);
	st = open_ok();
	ck_assert_int_eq(bodies(st), 3);
	ck_assert_int_eq(deliver(st, 2, 0), 1);
	ck_assert_int_eq(bodies(st), 2);
	body = body_of(OLD_BODY, 2);
	expect_body(st, 3, STORE_BODY_HEAP, body, OLD_BODY);
	free(body);
	store_close(st);
}
END_TEST

/* A body the upgrade cannot read fails its hook alone, whatever the
 * cause: its log file gone, the record there another hook's, the record
 * damaged (libdb's log cursor then stops the environment, which the open
 * opens again).  Such a hook's record says so, and every read of it names
 * the hook; the other hooks' bodies move, and the open goes on. */
START_TEST(test_upgrade_unreadable)
{
	static const int how[5] = { 0, 1, 2, 3, 0 };
	struct store_hook_rec rec;
	struct store *st;
	unsigned char *body;
	char want[128];
	int i, pass;

	old_store(how, 5);
	for (pass = 0; pass < 2; pass++) {
		st = open_ok();
		ck_assert_int_eq(bodies(st), 2);
		for (i = 0; i < 5; i++) {
			body = body_of(OLD_BODY, i);
			if (how[i] == 0) {
				expect_body(st, i + 1, STORE_BODY_HEAP, body,
				    OLD_BODY);
				free(body);
				continue;
			}
			free(body);
			ck_assert_int_eq(store_hook_get(st, i + 1, &rec), -1);
			snprintf(want, sizeof(want), "hook seq %d: its body, "
			    "at ", i + 1);
			ck_assert_msg(strstr(store_strerror(st), want) !=
			    NULL && strstr(store_strerror(st), "it is lost") !=
			    NULL, "%s", store_strerror(st));
		}
		store_close(st);
	}
	st = open_ok();
	for (i = 0; i < 5; i++)
		ck_assert_int_eq(deliver(st, i + 1, 0), 1);
	ck_assert_int_eq(bodies(st), 0);
	ck_assert_int_eq(store_debug_count(st, "hooks"), 0);
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

/* daemon/store/store_logsum.c's, which this program exports. */
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
	char path[PATH_MAX];
	size_t off, n, records = 0;
	struct stat sb;
	uint64_t seq;
	int fd, i;

	ck_assert_int_eq(logsum_reached(), 0);
	st = open_ok();
#ifdef HAVE_DYNAMIC_LIST
	/* The open proved that libdb's calls come to logsum. */
	ck_assert_str_eq(store_checksums(st), "log checksums by logsum");
	ck_assert_int_eq(logsum_reached(), 1);
	ck_assert_ptr_eq(dlsym(RTLD_DEFAULT, "__ham_func4"),
	    (void *)__ham_func4);
#endif
	memset(body, 'b', sizeof(body));
	for (i = 0; i < 200; i++) {
		body[i] = (unsigned char)i;
		seq = put_hook_body(st, "acme", "github", 100 + i, body,
		    (size_t)(300 + i * 13), &row, 1);
		if (i % 3 == 0)
			ck_assert_int_eq(deliver(st, seq, 0), 1);
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

/*
 * logsum answers only the libdb it was checked against: under another
 * version the store keeps libdb's own sum and says why.
 */
START_TEST(test_logsum_other_libdb)
{
	struct store *st;
	char err[256];

	ck_assert_int_eq(logsum_install(6, 2, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "libdb 6.2: logsum is checked against 5.3 "
	    "only");
	st = open_ok();
	ck_assert_str_eq(store_checksums(st), "log checksums by libdb's "
	    "own: libdb 6.2: logsum is checked against 5.3 only");
	ck_assert_int_eq(logsum_reached(), 0);
	store_close(st);
}
END_TEST

/* While a backup exists no log file is removed, even one that recovery
 * lets go of: the backup copies the log files from the one
 * its tables need on, and a gap would end the copy's log there. */
START_TEST(test_backup_holds_log_removal)
{
	struct store_backup *b;
	struct store *st;
	char dir[PATH_MAX], err[1024];

	snprintf(dir, sizeof(dir), "%s/backup", tmpdir);
	st = open_ok();
	fill_log(st, 3);
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
 * there, and it holds the hooks with their bodies. */
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
	expect_body(st, s1, STORE_BODY_HEAP, body, sizeof(body));
	expect_body(st, s2, STORE_BODY_RECORD, body, 100);
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
	tcase_add_test(tc, test_flush_after_refused_commit);
	tcase_add_test(tc, test_log_zero_ahead);
	tcase_add_test(tc, test_clean_step);
	tcase_add_test(tc, test_keep_clean);
	tcase_add_test(tc, test_maint_schedule);
	tcase_add_test(tc, test_region_home);
	tcase_add_test(tc, test_region_sweep);
	tcase_add_test(tc, test_log_zero_ahead_files);
	tcase_add_test(tc, test_body_in_heap);
	tcase_add_test(tc, test_body_sigkill);
	tcase_add_test(tc, test_log_prune);
	tcase_add_test(tc, test_upgrade_bodies);
	tcase_add_test(tc, test_upgrade_unreadable);
	tcase_add_test(tc, test_backup_holds_log_removal);
	tcase_add_test(tc, test_backup_after_prune);
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
	tcase_add_loop_test(tc, test_body_position_damaged, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("checksums");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_logsum_matches_bdb);
	tcase_add_test(tc, test_logsum_log_records);
	tcase_add_test(tc, test_logsum_other_libdb);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	return storeutil_run(store_suite());
}
