/* SPDX-License-Identifier: ISC */
/*
 * check_redisurl.c: a redis sink's url (common/redisurl.c).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "redisurl.h"

static const struct {
	const char	*url;
	int		 tls;
	const char	*host, *addr;
	unsigned	 port;
	const char	*user, *password;
	unsigned	 db;
} good[] = {
	{ "redis://r.test", 0, "r.test", "r.test", 6379, NULL, NULL, 0 },
	{ "REDIS://r.test:7000/", 0, "r.test", "r.test", 7000, NULL, NULL,
	  0 },
	{ "rediss://127.0.0.1:6380/15", 1, "127.0.0.1", "127.0.0.1", 6380,
	  NULL, NULL, 15 },
	{ "redis://:s3cret@r.test", 0, "r.test", "r.test", 6379, NULL,
	  "s3cret", 0 },
	{ "redis://app:p%40ss%3Aw@r.test/2", 0, "r.test", "r.test", 6379,
	  "app", "p@ss:w", 2 },
	/* An '@' in the password, unescaped: the last one ends it. */
	{ "redis://app:a@b@r.test", 0, "r.test", "r.test", 6379, "app",
	  "a@b", 0 },
	{ "rediss://[::1]:6390", 1, "[::1]", "::1", 6390, NULL, NULL, 0 },
	{ "redis://:@r.test", 0, "r.test", "r.test", 6379, NULL, "", 0 },
	{ "redis://r.test/2147483647", 0, "r.test", "r.test", 6379, NULL,
	  NULL, 2147483647 },
};

static const char *const bad[] = {
	"http://r.test",
	"redis:/r.test",
	"redis://",
	"redis://u@r.test",		/* a user, no password */
	"redis://r.test:0",
	"redis://r.test:65536",
	"redis://r.test:",
	"redis://r.test:12x",
	"redis://r.test/x",
	"redis://r.test/2147483648",
	"redis://r.test/1/2",
	"redis://r.test?db=1",
	"redis://r.test#x",
	"redis://:%zz@r.test",		/* a bad escape */
	"redis://:%00@r.test",		/* a NUL */
	"redis://:%4@r.test",		/* cut short */
	"redis://[::1",
	"redis://[]:1",
	"redis://fe80::1%25eth0",
	"redis://r%2etest",
};

START_TEST(test_good)
{
	struct redis_url u;
	char err[128];

	ck_assert_msg(redis_url_parse(good[_i].url, &u, err, sizeof(err)) == 0,
	    "%s: %s", good[_i].url, err);
	ck_assert_int_eq(u.tls, good[_i].tls);
	ck_assert_str_eq(u.host, good[_i].host);
	ck_assert_str_eq(u.addr, good[_i].addr);
	ck_assert_uint_eq(u.port, good[_i].port);
	ck_assert_uint_eq(strtoul(u.portstr, NULL, 10), good[_i].port);
	if (good[_i].user == NULL)
		ck_assert_ptr_null(u.user);
	else
		ck_assert_str_eq(u.user, good[_i].user);
	if (good[_i].password == NULL)
		ck_assert_ptr_null(u.password);
	else
		ck_assert_str_eq(u.password, good[_i].password);
	ck_assert_uint_eq(u.db, good[_i].db);
	redis_url_free(&u);
	ck_assert_ptr_null(u.password);
}
END_TEST

START_TEST(test_bad)
{
	struct redis_url u;
	char err[128] = "";

	ck_assert_msg(redis_url_parse(bad[_i], &u, err, sizeof(err)) == -1,
	    "%s accepted", bad[_i]);
	ck_assert_msg(err[0] != '\0', "%s: no reason", bad[_i]);
	ck_assert_ptr_null(u.user);
	ck_assert_ptr_null(u.password);
}
END_TEST

static Suite *
redisurl_suite(void)
{
	Suite *s = suite_create("redisurl");
	TCase *tc = tcase_create("parse");

	tcase_add_loop_test(tc, test_good, 0,
	    (int)(sizeof(good) / sizeof(good[0])));
	tcase_add_loop_test(tc, test_bad, 0,
	    (int)(sizeof(bad) / sizeof(bad[0])));
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(redisurl_suite());
	int nf;

	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
