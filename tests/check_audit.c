/* SPDX-License-Identifier: ISC */
/*
 * check_audit.c: unit tests of daemon/admin/admin_audit.c: every admin API
 * route that changes something names its action; entries queued and
 * written in one batch on the loop's next pass, or at a flush; a write
 * that cannot be made counted, the change's caller untouched; the prune's
 * steps on the loop, which leave the entries younger than
 * admin.audit.max_age_s.
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
#include <jansson.h>

#include "admin_audit.h"
#include "clock.h"
#include "conf.h"
#include "master.h"
#include "metrics.h"
#include "store.h"
#include "storeutil.h"

static Suite	*audit_suite(void);

static struct master	 m;

#define SOURCES	"sources:\n  s:\n    tenant: acme\n    verify: {type: none}\n" \
	"    sinks: [{type: log}]\n  u:\n    verify: {type: none}\n" \
	"    sinks: [{type: log}]\n"

static void
start(const char *yaml)
{
	struct conf_errors e = { NULL, 0 };

	env = &m;
	if (m.base == NULL)
		ck_assert_ptr_nonnull(m.base = event_base_new());
	ck_assert_ptr_nonnull(m.conf = conf_parse(yaml, strlen(yaml),
	    "test.yml", &e));
	conf_errors_free(&e);
	m.store = open_ok();
	metrics_reset();
}

static int
collect(const struct store_audit *a, void *arg)
{
	json_t *list = arg;

	json_array_append_new(list, json_pack("{s:I, s:s, s:s, s:s, s:s, s:s}",
	    "at", (json_int_t)a->at, "actor", a->actor, "action", a->action,
	    "target", a->target, "tenant", a->tenant, "outcome", a->outcome));
	return 0;
}

/* Every entry stored, newest first. */
static json_t *
stored(void)
{
	struct store_audit_walk w;
	json_t *list = json_array();

	memset(&w, 0, sizeof(w));
	w.until = UINT64_MAX;
	ck_assert_int_eq(store_audit_walk(m.store, &w, collect, list), 0);
	return list;
}

static const char *
field(json_t *list, size_t i, const char *key)
{
	return json_string_value(json_object_get(json_array_get(list, i),
	    key));
}

/* Every route but a GET is a change with a name of its own: a route
 * added without one would be recorded as "METHOD pattern". */
START_TEST(test_audit_routes_named)
{
	static const struct admin_route *const tables[] = {
		admin_routes_core, admin_routes_config, admin_routes_dlq,
		admin_routes_metrics, admin_routes_ops, admin_routes_replay,
		admin_routes_audit,
	};
	const struct admin_route *r;
	const char *a;
	char buf[300];
	size_t t;
	int n = 0;
	json_t *body;

	for (t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
		for (r = tables[t]; r->pattern != NULL; r++) {
			if (r->method == ADMIN_GET)
				continue;
			a = audit_action(r->method, r->pattern, NULL, buf,
			    sizeof(buf));
			ck_assert_msg(strchr(a, ' ') == NULL, "%s has no "
			    "action name", a);
			n++;
		}
	ck_assert_int_ge(n, 15);
	ck_assert_str_eq(audit_action(ADMIN_POST, "/v1/nope", NULL, buf,
	    sizeof(buf)), "POST /v1/nope");
	body = json_pack("{s:s}", "state", "paused");
	ck_assert_str_eq(audit_action(ADMIN_PATCH, "/v1/replays/{}", body, buf,
	    sizeof(buf)), "replay.pause");
	json_object_set_new(body, "state", json_string("cancelled"));
	ck_assert_str_eq(audit_action(ADMIN_PATCH, "/v1/replays/{}", body, buf,
	    sizeof(buf)), "replay.cancel");
	json_object_del(body, "state");
	ck_assert_str_eq(audit_action(ADMIN_PATCH, "/v1/replays/{}", body, buf,
	    sizeof(buf)), "replay.change");
	json_decref(body);
}
END_TEST

/* Queued, then written on the loop's next pass, in order; the tenant of a
 * bound source. */
START_TEST(test_audit_record_written)
{
	json_t *list;
	uint64_t t0 = time_wall_ms();

	start(SOURCES);
	ck_assert_str_eq(audit_tenant_of("s"), "acme");
	ck_assert_str_eq(audit_tenant_of("u"), "");
	ck_assert_str_eq(audit_tenant_of("nope"), "");
	ck_assert_str_eq(audit_tenant_of(NULL), "");
	audit_record("uid:0", "reload", "/etc/ankusa.yml", "", "ok");
	audit_record("admin", "sink.pause", "acme/s/0", audit_tenant_of("s"),
	    "not_found: no such\nsource");
	list = stored();
	ck_assert_uint_eq(json_array_size(list), 0);
	json_decref(list);
	ck_assert_int_eq(event_base_loop(m.base, EVLOOP_ONCE), 0);
	list = stored();
	ck_assert_uint_eq(json_array_size(list), 2);
	ck_assert_str_eq(field(list, 0, "action"), "sink.pause");
	ck_assert_str_eq(field(list, 0, "tenant"), "acme");
	ck_assert_str_eq(field(list, 0, "outcome"),
	    "not_found: no such\nsource");
	ck_assert_str_eq(field(list, 1, "actor"), "uid:0");
	ck_assert_str_eq(field(list, 1, "target"), "/etc/ankusa.yml");
	ck_assert_uint_ge(json_integer_value(json_object_get(
	    json_array_get(list, 1), "at")), t0);
	json_decref(list);
	ck_assert_uint_eq(metrics_get("ankusa_audit_write_errors_total",
	    NULL), 0);
	ck_assert_int_eq(store_close(m.store), 0);
}
END_TEST

/* A write that cannot be made (here, a batch left open by the caller) is
 * counted, for each entry; the next ones are written. */
START_TEST(test_audit_write_error_counted)
{
	struct store_batch *b;
	json_t *list;
	int i;

	start(SOURCES);
	for (i = 0; i < 3; i++)
		audit_record("admin", "dlq.purge", "?all=true", "", "ok");
	ck_assert_ptr_nonnull(b = store_batch_begin(m.store));
	audit_flush();
	store_batch_abort(b);
	ck_assert_uint_eq(metrics_get("ankusa_audit_write_errors_total",
	    NULL), 3);
	audit_record("admin", "dlq.purge", "?all=true", "", "ok");
	audit_flush();
	list = stored();
	ck_assert_uint_eq(json_array_size(list), 1);
	json_decref(list);
	ck_assert_uint_eq(metrics_get("ankusa_audit_write_errors_total",
	    NULL), 3);
	ck_assert_int_eq(store_close(m.store), 0);
}
END_TEST

/* The prune, steps of 500 on the loop: every entry older than the bound
 * goes, the younger one stays. */
START_TEST(test_audit_prune_steps)
{
	struct store_audit a;
	struct store_batch *b;
	json_t *list;
	uint64_t now = time_wall_ms();
	int i, passes = 0;

	start("admin:\n  audit:\n    max_age_s: 60\n" SOURCES);
	memset(&a, 0, sizeof(a));
	snprintf(a.actor, sizeof(a.actor), "admin");
	snprintf(a.action, sizeof(a.action), "old");
	ck_assert_ptr_nonnull(b = store_batch_begin(m.store));
	for (i = 0; i < 1200; i++) {
		a.at = now - 120000 - (uint64_t)i;
		ck_assert_int_eq(store_batch_audit_put(b, &a), 0);
	}
	a.at = now - 1000;
	snprintf(a.action, sizeof(a.action), "young");
	ck_assert_int_eq(store_batch_audit_put(b, &a), 0);
	commit_ok(m.store, b);
	audit_prune();
	audit_prune();		/* one job at a time */
	for (;;) {
		list = stored();
		if (json_array_size(list) == 1)
			break;
		json_decref(list);
		ck_assert_int_eq(event_base_loop(m.base, EVLOOP_ONCE), 0);
		ck_assert_int_le(++passes, 3);
	}
	ck_assert_int_eq(passes, 3);	/* 500, 500, 200 */
	ck_assert_uint_eq(json_array_size(list), 1);
	ck_assert_str_eq(field(list, 0, "action"), "young");
	json_decref(list);
	ck_assert_int_eq(store_close(m.store), 0);
}
END_TEST

static Suite *
audit_suite(void)
{
	Suite *s = suite_create("audit");
	TCase *tc;

	tc = tcase_create("audit");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_audit_routes_named);
	tcase_add_test(tc, test_audit_record_written);
	tcase_add_test(tc, test_audit_write_error_counted);
	tcase_add_test(tc, test_audit_prune_steps);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return storeutil_run(audit_suite());
}
