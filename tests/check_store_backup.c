/* SPDX-License-Identifier: ISC */
/*
 * check_store_backup.c: unit tests of the store's online backup
 * (daemon/store/store_backup.c): a copy taken while another thread commits and
 * checkpoints, reopened as a store and compared hook by hook; the refusals
 * (a directory not empty, a relative one, a second backup, a directory
 * holding the marker of an unfinished one at store_open); a cancel that
 * removes what it wrote; a failed sync in the copy's recovery that fails
 * the backup and not the store; the store's upkeep writing no page while
 * the backup reads the tables'.
 *
 * Each case's store is in its own mkdtemp directory (storeutil.c), its
 * copy beside it (tmpdir.copy); both are removed after the case.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"
#include "store_int.h"
#include "storeutil.h"

#define MAX_HOOKS	6000

static char	 copydir[PATH_MAX];

/* A backup run in a thread of its own, and what it told. */
struct runner {
	struct store_backup	*b;
	int			 rc;
	int			 done;		/* __atomic */
	int			 notified;	/* __atomic */
	int			 cancel_at;	/* cancel at that notify; 0:
						 * never */
};

static int
rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void
setup_copy(void)
{
	setup();
	snprintf(copydir, sizeof(copydir), "%s.copy", tmpdir);
}

static void
teardown_copy(void)
{
	char home[PATH_MAX];
	struct stat sb;

	if (stat(copydir, &sb) == 0) {
		home_of(home, sizeof(home), "/dev/shm", copydir);
		nftw(home, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
		nftw(copydir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	}
	teardown();
}

static void
notify_cb(void *arg)
{
	struct runner *r = arg;
	int n = __atomic_add_fetch(&r->notified, 1, __ATOMIC_SEQ_CST);

	if (r->cancel_at != 0 && n == r->cancel_at)
		store_backup_cancel(r->b);
}

static void *
run_main(void *arg)
{
	struct runner *r = arg;

	r->rc = store_backup_run(r->b);
	__atomic_store_n(&r->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static struct store_backup *
backup_ok(struct store *st, const char *dir, struct runner *r)
{
	char err[1024];

	r->b = store_backup_new(st, dir, notify_cb, r, err, sizeof(err));
	ck_assert_msg(r->b != NULL, "store_backup_new: %s", err);
	return r->b;
}

/* Hook i's body: its size cycles through one kept in its record, one in
 * the log and, now and then, a large one. */
static size_t
body_of(int i, unsigned char *buf)
{
	size_t len, j;

	len = i % 50 == 7 ? 300 * 1024 : i % 2 == 0 ? 100 : 2000;
	for (j = 0; j < len; j++)
		buf[j] = (unsigned char)(i * 31 + j * 7);
	return len;
}

static int
entries(const char *dir)
{
	struct dirent *de;
	DIR *d;
	int n = 0;

	ck_assert_ptr_nonnull(d = opendir(dir));
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

/*
 * A backup taken while this thread commits hooks (bodies in their records
 * and in the log) and checkpoints: the copy opens as a store, holds every
 * hook committed before the backup began with its body, and any later one
 * it holds is whole; its counts agree with its tables.
 */
START_TEST(test_backup_under_load)
{
	static unsigned char buf[300 * 1024];
	static uint64_t seqs[MAX_HOOKS];
	struct store_backup_progress p;
	struct store_hook_rec rec;
	struct store_counts c;
	struct runner r;
	struct store *st, *cp;
	pthread_t t;
	char err[1024];
	size_t len;
	int i, before, n, found;

	memset(&r, 0, sizeof(r));
	st = open_ok();
	for (i = 0; i < 300; i++) {
		len = body_of(i, buf);
		seqs[i] = put_one(st, "github", buf, len, 1);
		if (i % 100 == 99)
			ck_assert_int_eq(store_checkpoint(st), 0);
	}
	before = i;
	backup_ok(st, copydir, &r);
	ck_assert_int_eq(pthread_create(&t, NULL, run_main, &r), 0);
	while (!__atomic_load_n(&r.done, __ATOMIC_SEQ_CST) && i < MAX_HOOKS) {
		len = body_of(i, buf);
		seqs[i] = put_one(st, "github", buf, len, 1);
		if (++i % 100 == 0)
			ck_assert_int_eq(store_checkpoint(st), 0);
	}
	n = i;
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_msg(r.rc == 0, "store_backup_run: %s",
	    store_backup_error(r.b));
	store_backup_progress(r.b, &p);
	ck_assert_int_eq(p.phase, STORE_BACKUP_DONE);
	ck_assert_uint_gt(p.files, 12);		/* the tables and a log */
	ck_assert_uint_gt(p.bytes, 0);
	ck_assert_int_gt(__atomic_load_n(&r.notified, __ATOMIC_SEQ_CST), 0);
	store_backup_free(r.b);
	ck_assert_int_eq(store_checkpoint(st), 0);
	store_close(st);

	ck_assert_int_eq(access(copydir, F_OK), 0);
	{
		char marker[PATH_MAX];

		snprintf(marker, sizeof(marker), "%s/%s", copydir,
		    STORE_BACKUP_MARKER);
		ck_assert_int_eq(access(marker, F_OK), -1);
	}
	cp = store_open(copydir, err, sizeof(err));
	ck_assert_msg(cp != NULL, "store_open of the copy: %s", err);
	for (found = 0, i = 0; i < n; i++) {
		int rc = store_hook_get(cp, seqs[i], &rec);

		ck_assert_int_ne(rc, -1);
		if (i < before)
			ck_assert_msg(rc == 1, "hook %d (seq %llu) committed "
			    "before the backup is not in the copy", i,
			    (unsigned long long)seqs[i]);
		if (rc != 1)
			continue;
		found++;
		len = body_of(i, buf);
		ck_assert_uint_eq(rec.hook.body_len, len);
		ck_assert_mem_eq(rec.hook.body, buf, len);
		ck_assert_uint_eq(rec.rows, 1);
		store_hook_rec_free(&rec);
	}
	ck_assert_int_eq(store_counts(cp, &c), 0);
	ck_assert_uint_eq(c.hooks, (uint64_t)found);
	ck_assert_int_eq(store_debug_count(cp, "hooks"), found);
	ck_assert_int_eq(store_debug_count(cp, "rows"), found);
	/* The copy is a store that takes hooks. */
	len = body_of(1, buf);
	ck_assert_uint_gt(put_one(cp, "github", buf, len, 1), seqs[found - 1]);
	store_close(cp);
}
END_TEST

/* A directory that is not empty is refused, and nothing is written to
 * it. */
START_TEST(test_backup_not_empty)
{
	struct runner r;
	struct store *st;
	char path[PATH_MAX];
	int fd;

	memset(&r, 0, sizeof(r));
	st = open_ok();
	(void)put_one(st, "github", "one", 3, 1);
	ck_assert_int_eq(mkdir(copydir, 0700), 0);
	snprintf(path, sizeof(path), "%s/keep", copydir);
	ck_assert_int_ne(fd = open(path, O_WRONLY | O_CREAT, 0600), -1);
	close(fd);
	backup_ok(st, copydir, &r);
	ck_assert_int_eq(store_backup_run(r.b), -1);
	ck_assert_msg(strstr(store_backup_error(r.b), "not empty") != NULL,
	    "error: %s", store_backup_error(r.b));
	ck_assert_ptr_nonnull(strstr(store_backup_error(r.b), copydir));
	ck_assert_int_eq(entries(copydir), 1);
	ck_assert_int_eq(access(path, F_OK), 0);
	store_backup_free(r.b);
	store_close(st);
}
END_TEST

/* A relative directory, and a second backup while one exists, are
 * refused; once the first is freed another may begin. */
START_TEST(test_backup_refusals)
{
	struct store_backup *b, *b2;
	struct store *st;
	char err[1024];

	st = open_ok();
	ck_assert_ptr_null(store_backup_new(st, "relative/dir", NULL, NULL,
	    err, sizeof(err)));
	ck_assert_msg(strstr(err, "absolute") != NULL, "error: %s", err);
	ck_assert_ptr_nonnull(b = store_backup_new(st, copydir, NULL, NULL,
	    err, sizeof(err)));
	ck_assert_ptr_null(store_backup_new(st, copydir, NULL, NULL, err,
	    sizeof(err)));
	ck_assert_msg(strstr(err, "already") != NULL, "error: %s", err);
	store_backup_free(b);
	ck_assert_ptr_nonnull(b2 = store_backup_new(st, copydir, NULL, NULL,
	    err, sizeof(err)));
	store_backup_free(b2);
	store_close(st);
}
END_TEST

/* A cancelled backup removes what it wrote: the directory it made, or the
 * files in the empty one it was given. */
START_TEST(test_backup_cancel)
{
	struct runner r;
	struct store *st;
	int i;

	st = open_ok();
	for (i = 0; i < 20; i++)
		(void)put_one(st, "github", "some body", 9, 1);
	memset(&r, 0, sizeof(r));
	r.cancel_at = 3;
	backup_ok(st, copydir, &r);
	ck_assert_int_eq(store_backup_run(r.b), -1);
	ck_assert_msg(strstr(store_backup_error(r.b), "cancel") != NULL,
	    "error: %s", store_backup_error(r.b));
	ck_assert_int_eq(access(copydir, F_OK), -1);
	store_backup_free(r.b);

	ck_assert_int_eq(mkdir(copydir, 0700), 0);
	memset(&r, 0, sizeof(r));
	r.cancel_at = 5;
	backup_ok(st, copydir, &r);
	ck_assert_int_eq(store_backup_run(r.b), -1);
	ck_assert_int_eq(access(copydir, F_OK), 0);
	ck_assert_int_eq(entries(copydir), 0);
	store_backup_free(r.b);
	store_close(st);
}
END_TEST

static enum store_backup_phase
phase_wait(struct runner *r, enum store_backup_phase at, uint64_t files)
{
	struct store_backup_progress p;

	for (;;) {
		store_backup_progress(r->b, &p);
		if (p.phase > at || (p.phase == at && p.files >= files))
			return p.phase;
		usleep(5000);
	}
}

/*
 * While the backup reads the tables' pages, the store's upkeep writes none
 * (a sync of the buffer pool that meets a page being read sleeps a second
 * in the store's thread): neither store_keep_clean nor the checkpoint
 * writes a page; once the backup is at the log files they do again.  The
 * backup is paced so that each phase lasts, and cancelled at the end.
 */
START_TEST(test_backup_holds_page_writes)
{
	static unsigned char buf[300 * 1024];
	struct store_backup_progress p;
	struct runner r;
	struct store *st;
	pthread_t t;
	int i, n;

	st = open_ok();
	for (i = 0; i < 3000; i++)
		(void)put_one(st, "github", buf, body_of(i, buf), 1);
	memset(&r, 0, sizeof(r));
	backup_ok(st, copydir, &r);
	store_backup_set_pace(r.b, 300);
	ck_assert_int_eq(pthread_create(&t, NULL, run_main, &r), 0);
	if (phase_wait(&r, STORE_BACKUP_TABLES, 1) == STORE_BACKUP_TABLES) {
		n = store_keep_clean(st, 99, 100);
		ck_assert_int_eq(store_checkpoint(st), 0);
		store_backup_progress(r.b, &p);
		if (p.phase == STORE_BACKUP_TABLES)
			ck_assert_int_eq(n, 0);
	}
	ck_assert_int_eq(phase_wait(&r, STORE_BACKUP_LOGS, 0),
	    STORE_BACKUP_LOGS);
	ck_assert_int_gt(store_keep_clean(st, 99, 100), 0);
	store_backup_cancel(r.b);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(r.rc, -1);
	store_backup_free(r.b);
	ck_assert_int_eq(store_checkpoint(st), 0);
	store_close(st);
}
END_TEST

/* The backup whose recovery's syncs fail_sync fails, and the thread that
 * runs the test. */
static struct store_backup	*failing_b;
static pthread_t		 main_thread;

static int
fail_recovery_sync(int fd)
{
	struct store_backup_progress p;

	if (failing_b != NULL && !pthread_equal(pthread_self(), main_thread)) {
		store_backup_progress(failing_b, &p);
		if (p.phase == STORE_BACKUP_RECOVERY) {
			errno = EIO;
			return -1;
		}
	}
	return fdatasync(fd);
}

/* A sync that fails in the recovery of the copy fails the backup, which
 * removes what it wrote, and not the store, which goes on committing. */
START_TEST(test_backup_recovery_sync_fails)
{
	struct runner r;
	struct store *st;
	pthread_t t;
	int i;

	st = open_ok();
	for (i = 0; i < 20; i++)
		(void)put_one(st, "github", "some body", 9, 1);
	memset(&r, 0, sizeof(r));
	failing_b = backup_ok(st, copydir, &r);
	main_thread = pthread_self();
	store_set_sync_func(fail_recovery_sync);
	ck_assert_int_eq(pthread_create(&t, NULL, run_main, &r), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	store_set_sync_func(NULL);
	ck_assert_int_eq(r.rc, -1);
	ck_assert_msg(strstr(store_backup_error(r.b), "recovery") != NULL,
	    "error: %s", store_backup_error(r.b));
	ck_assert_int_eq(access(copydir, F_OK), -1);
	store_backup_free(r.b);
	failing_b = NULL;
	ck_assert_int_eq(store_lost(st), 0);
	(void)put_one(st, "github", "after", 5, 1);
	ck_assert_int_eq(store_checkpoint(st), 0);
	store_close(st);
}
END_TEST

/* A store whose region files are in its data directory (no tmpfs to put
 * them on): the backup joins it there, copies no region file, and its copy
 * opens with the hooks. */
START_TEST(test_backup_regions_in_data_dir)
{
	struct store_hook_rec rec;
	struct runner r;
	struct store *st;
	char path[PATH_MAX], err[1024];
	uint64_t seq;

	store_set_region_base("/nonexistent-ankusa-base");
	st = open_ok();
	snprintf(path, sizeof(path), "%s/__db.001", tmpdir);
	ck_assert_int_eq(access(path, F_OK), 0);
	seq = put_one(st, "github", "in the data dir", 15, 1);
	memset(&r, 0, sizeof(r));
	backup_ok(st, copydir, &r);
	ck_assert_msg(store_backup_run(r.b) == 0, "%s",
	    store_backup_error(r.b));
	store_backup_free(r.b);
	store_close(st);
	snprintf(path, sizeof(path), "%s/__db.001", copydir);
	ck_assert_int_eq(access(path, F_OK), -1);
	store_set_region_base("/dev/shm");
	ck_assert_msg((st = store_open(copydir, err, sizeof(err))) != NULL,
	    "store_open of the copy: %s", err);
	ck_assert_int_eq(store_hook_get(st, seq, &rec), 1);
	ck_assert_uint_eq(rec.hook.body_len, 15);
	ck_assert_mem_eq(rec.hook.body, "in the data dir", 15);
	store_hook_rec_free(&rec);
	store_close(st);
}
END_TEST

/* A data directory that holds the marker of an unfinished backup is not
 * opened as a store, and the error says what it is. */
START_TEST(test_backup_marker_refused)
{
	char path[PATH_MAX], err[1024];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, STORE_BACKUP_MARKER);
	ck_assert_int_ne(fd = open(path, O_WRONLY | O_CREAT, 0600), -1);
	close(fd);
	ck_assert_ptr_null(store_open(tmpdir, err, sizeof(err)));
	ck_assert_msg(strstr(err, STORE_BACKUP_MARKER) != NULL &&
	    strstr(err, "backup") != NULL && strstr(err, "not finish") !=
	    NULL, "error: %s", err);
	/* Nothing of a store was made there. */
	ck_assert_int_eq(entries(tmpdir), 1);
}
END_TEST

static Suite *
backup_suite(void)
{
	Suite *s = suite_create("store_backup");
	TCase *tc = tcase_create("backup");

	tcase_add_checked_fixture(tc, setup_copy, teardown_copy);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_backup_under_load);
	tcase_add_test(tc, test_backup_not_empty);
	tcase_add_test(tc, test_backup_refusals);
	tcase_add_test(tc, test_backup_cancel);
	tcase_add_test(tc, test_backup_recovery_sync_fails);
	tcase_add_test(tc, test_backup_holds_page_writes);
	tcase_add_test(tc, test_backup_regions_in_data_dir);
	tcase_add_test(tc, test_backup_marker_refused);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return storeutil_run(backup_suite());
}
