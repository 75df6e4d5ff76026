/* SPDX-License-Identifier: ISC */
/*
 * check_ops.c: unit tests of daemon/admin/admin_ops.c's stored settings: a
 * tenant's rate limit taken from its override, else rate_limits.tenants.<t>,
 * else rate_limits.default; overrides and pauses kept in the store and read
 * back at start; a stored setting it does not understand skipped.
 *
 * Each case works in its own mkdtemp directory under TMPDIR and removes it.
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "conf.h"
#include "master.h"
#include "admin_ops.h"
#include "pause.h"
#include "store.h"
#include "storeutil.h"

static Suite	*ops_suite(void);

static struct master	 m;

static struct conf *
conf_of(const char *y)
{
	struct conf_errors e = { NULL, 0 };
	struct conf *c;
	int k;

	if ((c = conf_parse(y, strlen(y), "test.yml", &e)) == NULL)
		for (k = 0; k < e.n; k++)
			fprintf(stderr, "  %s\n", e.msgs[k]);
	ck_assert_ptr_nonnull(c);
	conf_errors_free(&e);
	return c;
}

static void
start(void)
{
	char err[256];

	env = &m;
	if (m.base == NULL)
		ck_assert_ptr_nonnull(m.base = event_base_new());
	m.store = open_ok();
	ck_assert_msg(ops_init(err, sizeof(err)) == 0, "ops_init: %s", err);
}

static void
limit_is(struct conf *c, const char *tenant, const char *from, double rate,
    uint32_t burst)
{
	const struct rate_limit *rl;
	const char *f = NULL;

	rl = ops_rate_limit(c, tenant, &f);
	ck_assert_ptr_nonnull(f);
	ck_assert_msg(strcmp(f, from) == 0, "%s: from %s, want %s", tenant, f,
	    from);
	ck_assert_int_eq(rl->set, rate > 0);
	if (rate > 0) {
		ck_assert(rl->rate == rate);
		ck_assert_uint_eq(rl->burst, burst);
	}
}

START_TEST(test_rate_precedence)
{
	struct conf *c, *nodef;
	char err[256];

	c = conf_of("rate_limits:\n"
	    "  default: {rate: 5, burst: 5}\n"
	    "  tenants:\n"
	    "    t1: {rate: 10, burst: 10}\n"
	    "sources:\n"
	    "  s: {verify: {type: none}, sinks: [{type: log}]}\n");
	nodef = conf_of("sources:\n"
	    "  s: {verify: {type: none}, sinks: [{type: log}]}\n");
	start();
	limit_is(c, "t1", "tenant", 10, 10);
	limit_is(c, "t2", "default", 5, 5);
	limit_is(nodef, "t2", "default", 0, 0);	/* unlimited */

	ck_assert_int_eq(ops_rate_set("t2", 1, 2, err, sizeof(err)), 0);
	ck_assert_int_eq(ops_rate_set("t1", 0.5, 3, err, sizeof(err)), 0);
	ck_assert_int_eq(ops_rate_set("t1", 3, 4, err, sizeof(err)), 0);
	limit_is(c, "t1", "override", 3, 4);
	limit_is(c, "t2", "override", 1, 2);
	limit_is(nodef, "t2", "override", 1, 2);
	limit_is(c, "t3", "default", 5, 5);

	/* Kept across a restart; a removal falls back to the config. */
	ck_assert_int_eq(store_close(m.store), 0);
	start();
	limit_is(c, "t1", "override", 3, 4);
	limit_is(c, "t2", "override", 1, 2);
	ck_assert_int_eq(ops_rate_del("t1", err, sizeof(err)), 1);
	ck_assert_int_eq(ops_rate_del("t1", err, sizeof(err)), 0);
	limit_is(c, "t1", "tenant", 10, 10);
	ck_assert_int_eq(store_close(m.store), 0);
	start();
	limit_is(c, "t1", "tenant", 10, 10);
	limit_is(c, "t2", "override", 1, 2);
	ck_assert_int_eq(store_close(m.store), 0);
	conf_free(c);
	conf_free(nodef);
}
END_TEST

static void
setting(const char *name, const void *v, size_t len)
{
	struct store_batch *b;

	ck_assert_ptr_nonnull(b = store_batch_begin(m.store));
	ck_assert_int_eq(store_batch_setting_put(b, name, v, len), 0);
	commit_ok(m.store, b);
}

START_TEST(test_pauses_loaded)
{
	static const unsigned char t[8] = { 0, 0, 0, 0, 0, 0, 1, 0 };

	start();
	ck_assert_int_eq(pause_count(), 0);
	setting("pause:s#1", t, sizeof(t));
	setting("pause:s2#0", t, sizeof(t));
	setting("pause:bad", t, sizeof(t));		/* no sink: skipped */
	setting("pause:s#2", t, 3);			/* short: skipped */
	setting("rate:t1", t, sizeof(t));		/* short: skipped */
	ck_assert_int_eq(store_close(m.store), 0);
	start();
	ck_assert_int_eq(pause_count(), 2);
	ck_assert(pause_is("s", 1));
	ck_assert(pause_is("s2", 0));
	ck_assert(!pause_is("s", 0));
	ck_assert(!pause_is("s", 2));
	ck_assert_int_eq(store_close(m.store), 0);
}
END_TEST

static Suite *
ops_suite(void)
{
	Suite *s = suite_create("ops");
	TCase *tc;

	tc = tcase_create("settings");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_rate_precedence);
	tcase_add_test(tc, test_pauses_loaded);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return storeutil_run(ops_suite());
}
