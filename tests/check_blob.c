/* SPDX-License-Identifier: ISC */
/*
 * check_blob.c: the claim store verbs (workers/blob.c) over the local
 * store (workers/blob_local.c); the s3 store is tested end to end against
 * moto_server (tests/e2e/test_claims.py).
 *
 * A put appears whole under its key with no temp file left; gets read
 * exact ranges, a range past the end is BLOB_RANGE, a missing key
 * BLOB_NOTFOUND; keys that could leave the root are refused; expiry
 * removes only day directories before the cutoff; an unknown store type
 * and a relative root are refused at open.
 */
#include "config.h"

#include <sys/stat.h>

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blob.h"
#include "job.h"

static char	root[64];

static struct blob_store *
open_local(void)
{
	struct claim_store cs;
	struct blob_store *bs;
	char err[BLOB_ERR_MAX];

	snprintf(root, sizeof(root), "/tmp/check_blob.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	memset(&cs, 0, sizeof(cs));
	cs.type = "local";
	cs.root = root;
	bs = blob_open(&cs, err, sizeof(err));
	ck_assert_msg(bs != NULL, "%s", err);
	return bs;
}

static int
count_entries(const char *dir)
{
	struct dirent *de;
	DIR *d;
	int n = 0;

	if ((d = opendir(dir)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.' || (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0))
			n++;
	closedir(d);
	return n;
}

static void
rm_rf(const char *path)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", path);
}

START_TEST(test_local)
{
	struct blob_store *bs = open_local();
	char err[BLOB_ERR_MAX], dir[256], buf[16];
	const char *key = "claims/tenant=acme/dt=2024-02-29/0123456789abcdef";

	ck_assert_int_eq(blob_get(bs, key, 0, 4, buf, err, sizeof(err)),
	    BLOB_NOTFOUND);
	ck_assert_int_eq(blob_put(bs, key, "hello, claims", 13, err,
	    sizeof(err)), BLOB_OK);
	ck_assert_int_eq(blob_get(bs, key, 12, 1, buf, err, sizeof(err)),
	    BLOB_OK);
	ck_assert_int_eq(blob_get(bs, key, 13, 1, buf, err, sizeof(err)),
	    BLOB_RANGE);
	ck_assert_int_eq(blob_get(bs, key, 7, 6, buf, err, sizeof(err)),
	    BLOB_OK);
	ck_assert(memcmp(buf, "claims", 6) == 0);
	ck_assert_int_eq(blob_get(bs, key, 10, 4, buf, err, sizeof(err)),
	    BLOB_RANGE);
	ck_assert_int_eq(blob_get(bs, key, 100, 1, buf, err, sizeof(err)),
	    BLOB_RANGE);
	/* Only the object in its directory: no temp file. */
	snprintf(dir, sizeof(dir), "%s/claims/tenant=acme/dt=2024-02-29",
	    root);
	ck_assert_int_eq(count_entries(dir), 1);
	/* A second put replaces it whole. */
	ck_assert_int_eq(blob_put(bs, key, "x", 1, err, sizeof(err)),
	    BLOB_OK);
	ck_assert_int_eq(blob_get(bs, key, 0, 1, buf, err, sizeof(err)),
	    BLOB_OK);
	ck_assert(buf[0] == 'x');
	ck_assert_int_eq(blob_get(bs, key, 0, 2, buf, err, sizeof(err)),
	    BLOB_RANGE);
	ck_assert_int_eq(count_entries(dir), 1);
	blob_close(bs);
	rm_rf(root);
}
END_TEST

START_TEST(test_keys)
{
	struct blob_store *bs = open_local();
	char err[BLOB_ERR_MAX];
	const char *bad[] = { "", "/abs", "a/../b", "..", "a//b", "a/", "a b",
	    "a/./b", "a%2f", "a\nb" };
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(!blob_valid_key(bad[i]), "%s", bad[i]);
		ck_assert_int_eq(blob_put(bs, bad[i], "x", 1, err,
		    sizeof(err)), BLOB_ERROR);
	}
	ck_assert(blob_valid_key("claims/tenant=a_b-c/dt=2024-01-01/x.y"));
	blob_close(bs);
	rm_rf(root);
}
END_TEST

START_TEST(test_expire)
{
	struct blob_store *bs = open_local();
	char err[BLOB_ERR_MAX], dir[256];
	/* 2024-03-10T12:00:00Z */
	uint64_t now = 1710072000000ULL;

	ck_assert_int_eq(blob_put(bs, "claims/tenant=t/dt=2024-03-01/a", "1",
	    1, err, sizeof(err)), BLOB_OK);
	ck_assert_int_eq(blob_put(bs, "claims/tenant=t/dt=2024-03-02/b", "1",
	    1, err, sizeof(err)), BLOB_OK);
	ck_assert_int_eq(blob_put(bs, "claims/tenant=t/dt=2024-03-03/c", "1",
	    1, err, sizeof(err)), BLOB_OK);
	ck_assert_int_eq(blob_put(bs, "claims/tenant=u/dt=2024-03-01/d", "1",
	    1, err, sizeof(err)), BLOB_OK);
	/* 8 days: the cutoff is 2024-03-02, kept; only 03-01 goes. */
	ck_assert_int_eq(blob_expire(bs, "t", now, 8, err, sizeof(err)), 1);
	snprintf(dir, sizeof(dir), "%s/claims/tenant=t", root);
	ck_assert_int_eq(count_entries(dir), 2);
	/* Another tenant is untouched; 0 days keeps everything. */
	snprintf(dir, sizeof(dir), "%s/claims/tenant=u", root);
	ck_assert_int_eq(count_entries(dir), 1);
	ck_assert_int_eq(blob_expire(bs, "u", now, 0, err, sizeof(err)), 0);
	ck_assert_int_eq(blob_expire(bs, "nobody", now, 1, err, sizeof(err)),
	    0);
	blob_close(bs);
	rm_rf(root);
}
END_TEST

START_TEST(test_open)
{
	struct claim_store cs;
	char err[BLOB_ERR_MAX];

	memset(&cs, 0, sizeof(cs));
	cs.type = "ftp";
	ck_assert_ptr_null(blob_open(&cs, err, sizeof(err)));
	cs.type = "local";
	cs.root = "relative/dir";
	ck_assert_ptr_null(blob_open(&cs, err, sizeof(err)));
	cs.type = "s3";
	cs.root = NULL;
	ck_assert_ptr_null(blob_open(&cs, err, sizeof(err)));	/* bucket */
	cs.bucket = "b";
	cs.access_key_id = "k";
	ck_assert_ptr_null(blob_open(&cs, err, sizeof(err)));	/* secret */
	ck_assert(strstr(err, "credentials") != NULL);
}
END_TEST

static Suite *
blob_suite(void)
{
	Suite *s = suite_create("blob");
	TCase *tc;

	tc = tcase_create("local");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_local);
	tcase_add_test(tc, test_keys);
	tcase_add_test(tc, test_expire);
	tcase_add_test(tc, test_open);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(blob_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
