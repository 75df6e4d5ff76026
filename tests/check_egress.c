/* SPDX-License-Identifier: ISC */
/*
 * check_egress.c: the forward proxy's choices in workers/egress.c: which
 * proxy a request takes (a sink's own, none, egress.proxy unless
 * egress.no_proxy names the host, or the environment's), the no_proxy
 * matching, and what a failed transfer through a configured proxy says
 * (proxy_error for the proxy's faults only).  The guard's checks of
 * addresses are check_netaddr.c's; the CONNECT exchange itself is
 * libcurl's, and e2e's (tests/e2e/test_proxy.py).
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "conf.h"
#include "egress.h"

#define TIMEOUT	10

static char *list[] = {
	"corp.test", ".svc.test", "10.0.0.0/8", "[fd00::]/8", "192.0.2.7"
};

static const struct {
	const char	*host;
	int		 direct;
} hosts[] = {
	{ "corp.test", 1 },
	{ "CORP.test", 1 },
	{ "a.b.corp.test", 1 },
	{ "xcorp.test", 0 },		/* not a subdomain */
	{ "corp.test.evil", 0 },
	{ "svc.test", 0 },		/* .svc.test: subdomains only */
	{ "x.svc.test", 1 },
	{ "10.1.2.3", 1 },
	{ "11.1.2.3", 0 },
	{ "[fd00::1]", 1 },
	{ "[fe80::1]", 0 },
	{ "192.0.2.7", 1 },
	{ "192.0.2.8", 0 },
	/* a name is never resolved to decide */
	{ "ten.example", 0 },
};

START_TEST(test_no_proxy)
{
	ck_assert_msg(egress_no_proxy(list, 5, hosts[_i].host) ==
	    hosts[_i].direct, "%s", hosts[_i].host);
}
END_TEST

START_TEST(test_no_proxy_star)
{
	char *star[] = { "*" };

	ck_assert_int_eq(egress_no_proxy(star, 1, "anything.test"), 1);
	ck_assert_int_eq(egress_no_proxy(star, 0, "anything.test"), 0);
}
END_TEST

START_TEST(test_proxy_for)
{
	struct conf cf;

	memset(&cf, 0, sizeof(cf));
	/* No egress.proxy: the environment's (NULL), unless the sink says. */
	egress_configure(&cf);
	ck_assert_ptr_null(egress_proxy_for(SINK_PROXY_INHERIT, NULL,
	    "https://a.test/"));
	ck_assert_str_eq(egress_proxy_for(SINK_PROXY_NONE, NULL,
	    "https://a.test/"), "");
	ck_assert_str_eq(egress_proxy_for(SINK_PROXY_URL, "http://p.test:1",
	    "https://a.test/"), "http://p.test:1");
	/* egress.proxy, and no_proxy by the URL's host. */
	cf.egress.proxy = "http://proxy.test:3128";
	cf.egress.no_proxy = list;
	cf.egress.nno_proxy = 5;
	egress_configure(&cf);
	ck_assert_str_eq(egress_proxy_for(SINK_PROXY_INHERIT, NULL,
	    "https://a.test/x"), "http://proxy.test:3128");
	ck_assert_str_eq(egress_proxy_for(SINK_PROXY_INHERIT, NULL,
	    "http://u:p@x.corp.test:8080/x?q"), "");
	ck_assert_str_eq(egress_proxy_for(SINK_PROXY_INHERIT, NULL,
	    "https://10.9.9.9/"), "");
	/* A sink's own proxy wins over no_proxy; none over everything. */
	ck_assert_str_eq(egress_proxy_for(SINK_PROXY_URL, "http://p.test:1",
	    "https://corp.test/"), "http://p.test:1");
	ck_assert_str_eq(egress_proxy_for(SINK_PROXY_NONE, NULL,
	    "https://a.test/"), "");
	egress_configure(NULL);
}
END_TEST

/* What a transfer's result says of a configured proxy (the CONNECT code,
 * libcurl's, is 0 on a handle that made no transfer). */
static const struct {
	int		 proxied;
	CURLcode	 rc;
	long		 status;
	const char	*why;		/* NULL: not the proxy's */
} fails[] = {
	{ 1, CURLE_COULDNT_CONNECT, 0,
	  "proxy_error: could not connect to the proxy" },
	{ 1, CURLE_COULDNT_RESOLVE_PROXY, 0,
	  "proxy_error: the proxy's name does not resolve" },
	{ 1, CURLE_OK, 407, "proxy_error: the proxy answered 407" },
	{ 1, CURLE_OK, 502, NULL },	/* absolute form: whose 502? */
	{ 1, CURLE_OPERATION_TIMEDOUT, 0, NULL },
	{ 1, CURLE_OK, 200, NULL },
	{ 0, CURLE_COULDNT_CONNECT, 0, NULL },	/* no proxy: the sink's */
	{ 0, CURLE_OK, 407, NULL },
};

START_TEST(test_proxy_failed)
{
	struct egress_watch w;
	CURL *h = curl_easy_init();
	char err[128];

	ck_assert_ptr_nonnull(h);
	egress_watch_init(&w, "https://a.test/", 0);
	w.proxied = fails[_i].proxied;
	err[0] = '\0';
	ck_assert_int_eq(egress_proxy_failed(h, &w, fails[_i].rc,
	    fails[_i].status, err, sizeof(err)), fails[_i].why != NULL);
	if (fails[_i].why != NULL)
		ck_assert_str_eq(err, fails[_i].why);
	curl_easy_cleanup(h);
}
END_TEST

static Suite *
egress_suite(void)
{
	Suite *s = suite_create("egress");
	TCase *tc = tcase_create("proxy");

	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_loop_test(tc, test_no_proxy, 0,
	    (int)(sizeof(hosts) / sizeof(hosts[0])));
	tcase_add_test(tc, test_no_proxy_star);
	tcase_add_test(tc, test_proxy_for);
	tcase_add_loop_test(tc, test_proxy_failed, 0,
	    (int)(sizeof(fails) / sizeof(fails[0])));
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr;
	int failed;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	sr = srunner_create(egress_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	curl_global_cleanup();
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
