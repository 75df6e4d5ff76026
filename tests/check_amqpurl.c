/* SPDX-License-Identifier: ISC */
/*
 * check_amqpurl.c: AMQP URIs as the rabbitmq sink and its config check
 * read them (common/amqpurl.h).
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "amqpurl.h"

static const struct {
	const char	*url;
	int		 tls;
	const char	*user, *password, *host;
	unsigned	 port;
	const char	*vhost;
} good[] = {
	{ "amqp://h", 0, "guest", "guest", "h", 5672, "/" },
	{ "amqp://h/", 0, "guest", "guest", "h", 5672, "/" },
	{ "amqps://h", 1, "guest", "guest", "h", 5671, "/" },
	{ "AMQP://u:p@h:1234/v", 0, "u", "p", "h", 1234, "v" },
	{ "amqp://u@h/%2F", 0, "u", "guest", "h", 5672, "/" },
	{ "amqp://u%40x:p%3Aw%40@h/a%2Fb", 0, "u@x", "p:w@", "h", 5672,
	    "a/b" },
	{ "amqp://u:p:q@h", 0, "u", "p:q", "h", 5672, "/" },
	{ "amqp://a@b@h", 0, "a@b", "guest", "h", 5672, "/" },
	{ "amqp://[::1]:5999/x", 0, "guest", "guest", "[::1]", 5999, "x" },
	{ "amqps://u:@127.0.0.1:1/", 1, "u", "", "127.0.0.1", 1, "/" },
};

static const struct {
	const char	*url;
	const char	*why;
} bad[] = {
	{ "http://h/", "not an amqp:// or amqps:// URL" },
	{ "amqp:/h", "not an amqp:// or amqps:// URL" },
	{ "amqp://", "no host, or a % in it" },
	{ "amqp:///v", "no host, or a % in it" },
	{ "amqp://u:p@/v", "no host, or a % in it" },
	{ "amqp://h%41/", "no host, or a % in it" },
	{ "amqp://[::1/", "an unclosed [ in the host" },
	{ "amqp://h:/", "a bad port" },
	{ "amqp://h:x/", "a bad port" },
	{ "amqp://[::1]x/", "a bad port" },
	{ "amqp://h:0/", "a port not in 1..65535" },
	{ "amqp://h:65536/", "a port not in 1..65535" },
	{ "amqp://h:12ab/", "a port not in 1..65535" },
	{ "amqp://h/a/b", "a bad vhost (one segment, %2F for a /)" },
	{ "amqp://h/%2", "a bad vhost (one segment, %2F for a /)" },
	{ "amqp://h/%zz", "a bad vhost (one segment, %2F for a /)" },
	{ "amqp://h/%00", "a bad vhost (one segment, %2F for a /)" },
	{ "amqp://u%4:p@h/", "a bad % escape in the user or password" },
	{ "amqp://h/v?x=1", "a space, control character, query or fragment "
	    "in the URL" },
	{ "amqp://h/v#f", "a space, control character, query or fragment "
	    "in the URL" },
	{ "amqp://h /", "a space, control character, query or fragment in "
	    "the URL" },
};

START_TEST(test_good)
{
	struct amqpurl u;
	char err[128], host[64];

	ck_assert_int_eq(amqpurl_parse(good[_i].url, &u, err, sizeof(err)),
	    0);
	ck_assert_int_eq(u.tls, good[_i].tls);
	ck_assert_str_eq(u.user, good[_i].user);
	ck_assert_str_eq(u.password, good[_i].password);
	ck_assert_str_eq(u.host, good[_i].host);
	ck_assert_uint_eq(u.port, good[_i].port);
	ck_assert_str_eq(u.vhost, good[_i].vhost);
	amqpurl_bare_host(&u, host, sizeof(host));
	ck_assert_str_eq(host, strcmp(u.host, "[::1]") == 0 ? "::1" : u.host);
	amqpurl_free(&u);
	ck_assert_ptr_null(u.host);
}
END_TEST

START_TEST(test_bad)
{
	struct amqpurl u;
	char err[128];

	ck_assert_int_eq(amqpurl_parse(bad[_i].url, &u, err, sizeof(err)),
	    -1);
	ck_assert_str_eq(err, bad[_i].why);
	/* Nothing left to free. */
	ck_assert_ptr_null(u.user);
	ck_assert_ptr_null(u.host);
}
END_TEST

static Suite *
amqpurl_suite(void)
{
	Suite *s = suite_create("amqpurl");
	TCase *tc = tcase_create("amqpurl");

	tcase_set_timeout(tc, 10);
	tcase_add_loop_test(tc, test_good, 0, sizeof(good) / sizeof(good[0]));
	tcase_add_loop_test(tc, test_bad, 0, sizeof(bad) / sizeof(bad[0]));
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(amqpurl_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
