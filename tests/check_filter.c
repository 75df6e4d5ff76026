/* SPDX-License-Identifier: ISC */
/*
 * check_filter.c: unit tests for workers/filter.c: event_types patterns,
 * jq programs (a boolean decides; an error, a value that is no boolean
 * and a program that runs past its CPU or its memory budget count as
 * matches, and the evaluator killed for it is replaced) and a source's
 * sinks decided together.
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "conf.h"
#include "filter.h"
#include "testutil.h"

#define CASE_TIMEOUT	20
#define MEM_BUDGET	(64 * 1024 * 1024)
#define NELEM(a)	((int)(sizeof(a) / sizeof((a)[0])))

struct tcase_ {
	const char	*types;		/* ","-separated */
	const char	*evtype;	/* NULL: none */
	int		 want;
};

static const struct tcase_ tcases[] = {
	{ "invoice.paid", "invoice.paid", 1 },
	{ "invoice.paid", "invoice.paid2", 0 },
	{ "invoice.paid", "invoice", 0 },
	{ "invoice.*", "invoice.paid", 1 },
	{ "invoice.*", "invoice.payment.failed", 1 },
	{ "invoice.*", "invoice", 0 },
	{ "invoice.*", "invoices.paid", 0 },
	{ "invoice.*", "customer.created", 0 },
	{ "orders/*", "orders/create", 1 },
	{ "*", "anything", 1 },
	{ "*", "", 0 },
	{ "*", NULL, 0 },
	{ "charge.succeeded,invoice.*", "charge.succeeded", 1 },
	{ "charge.succeeded,invoice.*", "invoice.created", 1 },
	{ "charge.succeeded,invoice.*", "charge.failed", 0 },
	{ "Invoice.paid", "invoice.paid", 0 },
	{ "issues.*", "issues", 0 },
	{ "issues", "issues.opened", 0 },
};

START_TEST(test_types)
{
	const struct tcase_ *c = &tcases[_i];
	char *buf, *p, *types[8];
	int n = 0;

	buf = strdup(c->types);
	for (p = strtok(buf, ","); p != NULL && n < 8; p = strtok(NULL, ","))
		types[n++] = p;
	ck_assert_int_eq(filter_types_match(types, n, c->evtype), c->want);
	free(buf);
}
END_TEST

struct jcase {
	const char		*prog;
	const char		*body;
	enum filter_result	 want;
};

static const struct jcase jcases[] = {
	{ "true", "{}", FILTER_MATCH },
	{ "false", "{}", FILTER_NO },
	{ "null", "{}", FILTER_NO },
	{ "empty", "{}", FILTER_NO },
	{ ".type == \"invoice.paid\"", "{\"type\":\"invoice.paid\"}",
	    FILTER_MATCH },
	{ ".type == \"invoice.paid\"", "{\"type\":\"charge\"}", FILTER_NO },
	{ ".data.amount > 100", "{\"data\":{\"amount\":500}}", FILTER_MATCH },
	{ ".data.amount > 100", "{\"data\":{\"amount\":5}}", FILTER_NO },
	/* The first output decides. */
	{ "false, true", "{}", FILTER_NO },
	{ "empty, true", "{}", FILTER_MATCH },
	/* Not JSON, or no body: the input is null. */
	{ ". == null", "not json", FILTER_MATCH },
	{ ". == null", "", FILTER_MATCH },
	{ ". == null", "{\"a\":", FILTER_MATCH },
	/* Errors and values that are no boolean: a match. */
	{ "error(\"boom\")", "{}", FILTER_ERROR },
	{ ".a.b", "{\"a\":1}", FILTER_ERROR },
	{ "1 / 0 | . > 1", "{}", FILTER_ERROR },
	{ "1", "{}", FILTER_ERROR },
	{ "\"true\"", "{}", FILTER_ERROR },
	{ ".", "{\"a\":1}", FILTER_ERROR },
	{ "select(.a == 1)", "{\"a\":1}", FILTER_ERROR },
	{ "select(.a == 1)", "{\"a\":2}", FILTER_NO },
	{ "halt", "{}", FILTER_ERROR },
	{ "\"bye\" | halt_error", "{}", FILTER_ERROR },
	/* That does not compile: refused by the configuration before; an
	 * error here. */
	{ ".a | | .b", "{}", FILTER_ERROR },
};

START_TEST(test_jq)
{
	const struct jcase *c = &jcases[_i];

	ck_assert_int_eq(filter_jq_once(c->prog, c->body, strlen(c->body),
	    1000, MEM_BUDGET), c->want);
	ck_assert_int_eq(filter_stuck(), 0);
}
END_TEST

/* Programs that never end: past the CPU budget, soon after it; the
 * evaluator is killed for it and a fresh one evaluates the next. */
static const char *const loops[] = {
	"def f: f; f",
	"last(repeat(.))",
	"until(false; .)",
	"[limit(1000000; repeat(1))] | length < 0",
};

START_TEST(test_jq_budget)
{
	uint64_t t0, dt;

	t0 = time_mono_ms();
	ck_assert_int_eq(filter_jq_once(loops[_i], "{\"a\":1}", 7, 100,
	    MEM_BUDGET), FILTER_BUDGET);
	dt = time_mono_ms() - t0;
	ck_assert_msg(dt >= 100 && dt < 2000, "budget of 100 ms took %llu",
	    (unsigned long long)dt);
	ck_assert_int_eq(filter_stuck(), 0);
	/* The next evaluation runs, in a fresh evaluator. */
	ck_assert_int_eq(filter_jq_once("true", "{}", 2, 100, MEM_BUDGET),
	    FILTER_MATCH);
}
END_TEST

/* Programs that allocate without bound: past the memory budget (16 MiB
 * here) long before the CPU budget (two seconds); the next evaluation
 * works. */
static const char *const hogs[] = {
	"[range(1e9)] | length > 0",
	"[limit(1e9; repeat(\"x\" * 1000))] | length > 0",
	"reduce range(1e9) as $i (\"\"; . + \"xxxxxxxxxxxxxxxx\") | length > 0",
};

START_TEST(test_jq_memory)
{
	ck_assert_int_eq(filter_jq_once(hogs[_i], "{}", 2, 2000,
	    16 * 1024 * 1024), FILTER_MEMORY);
	ck_assert_int_eq(filter_stuck(), 0);
	ck_assert_int_eq(filter_jq_once(".a == 1", "{\"a\":1}", 7, 1000,
	    MEM_BUDGET), FILTER_MATCH);
}
END_TEST

/* A body bigger than the memory budget: the evaluator cannot take it. */
START_TEST(test_jq_big_body)
{
	size_t n = 3 * 1024 * 1024;
	char *body;

	if ((body = malloc(n)) == NULL)
		ck_abort_msg("malloc");
	memset(body, ' ', n);
	body[0] = '1';
	ck_assert_int_eq(filter_jq_once("true", body, n, 1000,
	    1024 * 1024), FILTER_MEMORY);
	free(body);
}
END_TEST

static const char sinks_yaml[] =
    "node:\n"
    "  data_dir: /tmp/ankusa-check-filter\n"
    "http:\n"
    "  jq_timeout_ms: 200\n"
    "sources:\n"
    "  pay:\n"
    "    verify: {type: none}\n"
    "    sinks:\n"
    "      - {type: log, filter: {event_types: [invoice.*]}}\n"
    "      - {type: log}\n"
    "      - {type: log, filter: {event_types: [charge.succeeded]}}\n"
    "      - {type: log, filter: {jq: '.amount > 100'}}\n"
    "      - {type: log, filter: {jq: 'error(\"x\")'}}\n"
    "  other:\n"
    "    verify: {type: none}\n"
    "    sinks:\n"
    "      - {type: log, filter: {jq: 'def f: f; f'}}\n"
    "      - {type: log, filter: {event_types: [a]}}\n";

START_TEST(test_sinks)
{
	struct conf *cf = test_conf_parse(sinks_yaml, sizeof(sinks_yaml) - 1);
	const struct source_conf *pay = conf_source(cf, "pay");
	const struct source_conf *other = conf_source(cf, "other");
	struct filter_out fo;
	const char *big = "{\"amount\":500}", *small = "{\"amount\":5}";
	int i;

	ck_assert_int_eq(filter_load(cf), 0);
	ck_assert_int_eq(filter_needs_body(pay), 1);
	filter_sinks(pay, "invoice.paid", small, strlen(small), &fo);
	ck_assert_uint_eq(fo.match, 0x01 | 0x02 | 0x10);
	ck_assert_uint_eq(fo.errors, 0x10);
	ck_assert_uint_eq(fo.budget, 0);
	filter_sinks(pay, "charge.succeeded", big, strlen(big), &fo);
	ck_assert_uint_eq(fo.match, 0x02 | 0x04 | 0x08 | 0x10);
	filter_sinks(pay, NULL, "x", 1, &fo);
	ck_assert_uint_eq(fo.match, 0x02 | 0x10);

	/* A loop: a match over budget, and the source's other sinks are
	 * still decided. */
	filter_sinks(other, "b", "{}", 2, &fo);
	ck_assert_uint_eq(fo.match, 0x01);
	ck_assert_uint_eq(fo.budget, 0x01);
	ck_assert_int_eq(fo.result[0], FILTER_BUDGET);
	ck_assert_int_eq(filter_stuck(), 0);
	filter_sinks(other, "a", "{}", 2, &fo);
	ck_assert_uint_eq(fo.match, 0x03);
	ck_assert_uint_eq(fo.budget, 0x01);

	/* Evaluations in a row after the kills, each by a live evaluator:
	 * its answers are its own (a late one is never taken for them). */
	for (i = 0; i < 200; i++) {
		filter_sinks(pay, NULL, i % 2 ? big : small,
		    strlen(i % 2 ? big : small), &fo);
		ck_assert_uint_eq(fo.match, i % 2 ? 0x02 | 0x08 | 0x10 :
		    0x02 | 0x10);
		ck_assert_uint_eq(fo.errors, 0x10);
		ck_assert_int_eq(fo.result[4], FILTER_ERROR);
	}
	filter_unload();
	conf_free(cf);
}
END_TEST

static Suite *
filter_suite(void)
{
	Suite *s = suite_create("filter");
	TCase *tc;

	tc = tcase_create("types");
	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_loop_test(tc, test_types, 0, NELEM(tcases));
	suite_add_tcase(s, tc);
	tc = tcase_create("jq");
	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_loop_test(tc, test_jq, 0, NELEM(jcases));
	tcase_add_loop_test(tc, test_jq_budget, 0, NELEM(loops));
	tcase_add_loop_test(tc, test_jq_memory, 0, NELEM(hogs));
	tcase_add_test(tc, test_jq_big_body);
	tcase_add_test(tc, test_sinks);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(filter_suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
