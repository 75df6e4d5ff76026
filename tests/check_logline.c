/* SPDX-License-Identifier: ISC */
/*
 * check_logline.c: unit tests of daemon/pipeline/pipeline_logline.c, the
 * delivery log lines: each status in text (the exact line) and in json
 * (each object parsed back with jansson), code and trace when absent, and
 * a hostile reason (quotes, backslashes, control bytes, bytes that are
 * not UTF-8, one far too long) that must neither break the line nor leave
 * its quotes.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "pipeline_logline.h"

#define HOOK	"01890a5d-ac96-774b-bcce-b302099a8058"

static struct logline
sent(void)
{
	struct logline l = {
		HOOK, "github", 2, "http", 1, LOGLINE_SENT, 523, 200,
		"4bf92f3577b34da6a3ce929d0e0e4736", "http 200"
	};

	return l;
}

/* The keys of a text line, in order, space-separated: key=value and
 * key="quoted", a backslash escaping the next byte inside quotes. */
static const char *
keys_of(const char *line)
{
	static char keys[512];
	const char *p = line, *eq;
	size_t k = 0;

	keys[0] = '\0';
	while (*p != '\0') {
		ck_assert_ptr_nonnull(eq = strchr(p, '='));
		ck_assert_uint_lt(k + (eq - p) + 2, sizeof(keys));
		if (k > 0)
			keys[k++] = ' ';
		memcpy(keys + k, p, eq - p);
		k += eq - p;
		keys[k] = '\0';
		p = eq + 1;
		if (*p == '"') {
			for (p++; *p != '"'; p++) {
				ck_assert_int_ne(*p, '\0');
				if (*p == '\\')
					p++;
			}
			p++;
		} else
			while (*p != ' ' && *p != '\0')
				p++;
		if (*p == ' ')
			p++;
	}
	return keys;
}

/* The members of a json line as one object. */
static json_t *
parse(const char *members)
{
	char buf[LOGLINE_MAX + 2];
	json_error_t jerr;
	json_t *o;

	snprintf(buf, sizeof(buf), "{%s}", members);
	o = json_loads(buf, JSON_REJECT_DUPLICATES, &jerr);
	ck_assert_msg(o != NULL, "not JSON (%s): %s", jerr.text, buf);
	return o;
}

static const char *
jstr(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	ck_assert_msg(json_is_string(v), "%s is not a string", k);
	return json_string_value(v);
}

static json_int_t
jint(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	ck_assert_msg(json_is_integer(v), "%s is not an integer", k);
	return json_integer_value(v);
}

START_TEST(test_text)
{
	char b[LOGLINE_MAX];
	struct logline l = sent();

	ck_assert_str_eq(logline_format(b, &l, 0), "hook=" HOOK " "
	    "source=github sink=2(http) attempt=1 status=sent delay=0.523 "
	    "code=200 trace=4bf92f3577b34da6a3ce929d0e0e4736 "
	    "reason=\"http 200\"");
	ck_assert_str_eq(keys_of(b), "hook source sink attempt status delay "
	    "code trace reason");
	l.status = LOGLINE_DEFERRED;
	l.attempt = 3;
	l.delay_ms = 12345678;
	l.code = 0;
	l.trace = "";
	l.reason = "attempt_timeout:30000";
	ck_assert_str_eq(logline_format(b, &l, 0), "hook=" HOOK " "
	    "source=github sink=2(http) attempt=3 status=deferred "
	    "delay=12345.678 code=- reason=\"attempt_timeout:30000\"");
	l.status = LOGLINE_BOUNCED;
	l.code = 410;
	l.reason = "";
	ck_assert_str_eq(logline_format(b, &l, 0), "hook=" HOOK " "
	    "source=github sink=2(http) attempt=3 status=bounced "
	    "delay=12345.678 code=410 reason=\"\"");
	l.status = LOGLINE_EXPIRED;
	l.delay_ms = 7;
	ck_assert(strstr(logline_format(b, &l, 0), " status=expired "
	    "delay=0.007 ") != NULL);
	l.status = LOGLINE_DELIVERED;
	l.trace = "4bf92f3577b34da6a3ce929d0e0e4736";
	ck_assert_str_eq(logline_format(b, &l, 0), "hook=" HOOK " "
	    "source=github status=delivered delay=0.007 "
	    "trace=4bf92f3577b34da6a3ce929d0e0e4736");
}
END_TEST

START_TEST(test_json)
{
	char b[LOGLINE_MAX];
	struct logline l = sent();
	json_t *o;

	o = parse(logline_format(b, &l, 1));
	ck_assert_str_eq(jstr(o, "hook"), HOOK);
	ck_assert_str_eq(jstr(o, "source"), "github");
	ck_assert_int_eq(jint(o, "sink"), 2);
	ck_assert_str_eq(jstr(o, "module"), "http");
	ck_assert_int_eq(jint(o, "attempt"), 1);
	ck_assert_str_eq(jstr(o, "status"), "sent");
	ck_assert(json_is_real(json_object_get(o, "delay")));
	ck_assert_double_eq_tol(json_real_value(json_object_get(o, "delay")),
	    0.523, 1e-9);
	ck_assert_int_eq(jint(o, "code"), 200);
	ck_assert_str_eq(jstr(o, "trace"), "4bf92f3577b34da6a3ce929d0e0e4736");
	ck_assert_str_eq(jstr(o, "reason"), "http 200");
	ck_assert_int_eq(json_object_size(o), 10);
	json_decref(o);

	/* No code: null; no trace: no member. */
	l.status = LOGLINE_EXPIRED;
	l.code = 0;
	l.trace = "";
	l.delay_ms = 61000;
	o = parse(logline_format(b, &l, 1));
	ck_assert_str_eq(jstr(o, "status"), "expired");
	ck_assert(json_is_null(json_object_get(o, "code")));
	ck_assert_ptr_null(json_object_get(o, "trace"));
	ck_assert_double_eq_tol(json_real_value(json_object_get(o, "delay")),
	    61.0, 1e-9);
	ck_assert_int_eq(json_object_size(o), 9);
	json_decref(o);

	l.status = LOGLINE_DELIVERED;
	o = parse(logline_format(b, &l, 1));
	ck_assert_str_eq(jstr(o, "hook"), HOOK);
	ck_assert_str_eq(jstr(o, "source"), "github");
	ck_assert_str_eq(jstr(o, "status"), "delivered");
	ck_assert_ptr_null(json_object_get(o, "sink"));
	ck_assert_ptr_null(json_object_get(o, "attempt"));
	ck_assert_int_eq(json_object_size(o), 4);
	json_decref(o);
}
END_TEST

/* A reason written to break the line: quotes, a backslash, a newline
 * and a fake key, a control byte, DEL, a byte that is not UTF-8, an
 * e-acute. */
#define HOSTILE	"a\"b\\c\nhook=forged \"x\x01y\x7f\xff\xc3\xa9"

START_TEST(test_hostile)
{
	char b[LOGLINE_MAX];
	struct logline l = sent();
	json_t *o;

	l.status = LOGLINE_BOUNCED;
	l.reason = HOSTILE;
	ck_assert(strstr(logline_format(b, &l, 0), " reason=\"a\\\"b\\\\c"
	    "\\x0ahook=forged \\\"x\\x01y\\x7f\\xff\xc3\xa9\"") != NULL);
	ck_assert_ptr_null(strchr(b, '\n'));
	/* Read as an operator's parser reads it, the keys are the line's
	 * own: the forged one stays inside the quotes. */
	ck_assert_str_eq(keys_of(b), "hook source sink attempt status delay "
	    "code trace reason");

	o = parse(logline_format(b, &l, 1));
	ck_assert_ptr_null(strchr(b, '\n'));
	ck_assert_str_eq(jstr(o, "reason"), "a\"b\\c\nhook=forged \"x\x01y"
	    "\x7f\xef\xbf\xbd\xc3\xa9");
	ck_assert_str_eq(jstr(o, "hook"), HOOK);
	json_decref(o);
}
END_TEST

/* A reason longer than a line holds is cut, the line still whole. */
START_TEST(test_long)
{
	static char big[4 * LOGLINE_MAX];
	char b[LOGLINE_MAX];
	struct logline l = sent();
	json_t *o;
	size_t n;

	memset(big, '\n', sizeof(big) - 1);
	l.reason = big;
	n = strlen(logline_format(b, &l, 0));
	ck_assert_uint_lt(n, LOGLINE_MAX);
	ck_assert_int_eq(b[n - 1], '"');
	ck_assert_uint_gt(n, 200);
	o = parse(logline_format(b, &l, 1));
	ck_assert_uint_gt(strlen(jstr(o, "reason")), 100);
	json_decref(o);
}
END_TEST

START_TEST(test_names)
{
	ck_assert_str_eq(logline_status_name(LOGLINE_SENT), "sent");
	ck_assert_str_eq(logline_status_name(LOGLINE_DEFERRED), "deferred");
	ck_assert_str_eq(logline_status_name(LOGLINE_BOUNCED), "bounced");
	ck_assert_str_eq(logline_status_name(LOGLINE_EXPIRED), "expired");
	ck_assert_str_eq(logline_status_name(LOGLINE_DELIVERED),
	    "delivered");
}
END_TEST

static Suite *
logline_suite(void)
{
	Suite *s = suite_create("logline");
	TCase *tc = tcase_create("logline");

	tcase_add_test(tc, test_text);
	tcase_add_test(tc, test_json);
	tcase_add_test(tc, test_hostile);
	tcase_add_test(tc, test_long);
	tcase_add_test(tc, test_names);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(logline_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
