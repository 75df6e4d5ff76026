/* SPDX-License-Identifier: ISC */
/*
 * check_log.c: unit tests of common/log.c: the line on stderr (date, time,
 * level, the journal's priority prefix), the same as JSON objects
 * (log.format json: each line parsed back with jansson, hostile text
 * included) and the rate limit of repeated lines.
 */
#include "config.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <jansson.h>
#include <pthread.h>

#include "log.h"

#define TIMEOUT	10

/* stderr into a temp file; what was written to it so far. */
static char	 errpath[64];

static void
err_capture(void)
{
	int fd;

	snprintf(errpath, sizeof(errpath), "/tmp/check_log.XXXXXX");
	fd = mkstemp(errpath);
	ck_assert_int_ne(fd, -1);
	ck_assert_int_ne(dup2(fd, STDERR_FILENO), -1);
	close(fd);
	unlink(errpath);
}

static char *
err_text(void)
{
	static char buf[16384];
	ssize_t n;

	fflush(stderr);
	n = pread(STDERR_FILENO, buf, sizeof(buf) - 1, 0);
	ck_assert_int_ge(n, 0);
	buf[n] = '\0';
	return buf;
}

static int
matches(const char *text, const char *re)
{
	regex_t rx;
	int r;

	ck_assert_int_eq(regcomp(&rx, re, REG_EXTENDED | REG_NEWLINE), 0);
	r = regexec(&rx, text, 0, NULL, 0) == 0;
	regfree(&rx);
	return r;
}

static int
count(const char *text, const char *needle)
{
	int n = 0;

	while ((text = strstr(text, needle)) != NULL) {
		n++;
		text += strlen(needle);
	}
	return n;
}

START_TEST(test_line)
{
	const char *t;

	unsetenv("JOURNAL_STREAM");
	err_capture();
	log_init("check_log", 1);
	log_setlevel(LOG_LEVEL_DEBUG);
	log_warnx("a warning %d", 1);
	log_info("an info");
	log_debug("a debug");
	t = err_text();
	ck_assert_msg(matches(t, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:"
	    "[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z check_log\\[[0-9]+\\]: warning: "
	    "a warning 1$"), "%s", t);
	ck_assert_msg(matches(t, "Z check_log\\[[0-9]+\\]: info: an info$"),
	    "%s", t);
	ck_assert_msg(matches(t, "Z check_log\\[[0-9]+\\]: debug: a debug$"),
	    "%s", t);
	ck_assert(!matches(t, "^<"));
}
END_TEST

/* Under systemd, with stderr the journal's stream: the priority first. */
START_TEST(test_journal)
{
	struct stat st;
	char js[64];
	const char *t;

	err_capture();
	ck_assert_int_eq(fstat(STDERR_FILENO, &st), 0);
	snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
	    (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", js, 1);
	log_init("check_log", 1);
	log_warnx("w");
	log_info("i");
	t = err_text();
	ck_assert_msg(matches(t, "^<4>[0-9]{4}-.*: warning: w$"), "%s", t);
	ck_assert_msg(matches(t, "^<6>[0-9]{4}-.*: info: i$"), "%s", t);

	/* Another stream's: no prefix. */
	setenv("JOURNAL_STREAM", "1:1", 1);
	log_init("check_log", 1);
	log_info("plain");
	t = err_text();
	ck_assert_msg(matches(t, "^[0-9]{4}-.*: info: plain$"), "%s", t);
}
END_TEST

/* The n-th line (0-based) of text, parsed as one JSON object. */
static json_t *
json_line(const char *text, int nth)
{
	static char line[16384];
	const char *p = text, *e;
	json_error_t jerr;
	json_t *o;

	while (nth-- > 0) {
		ck_assert_ptr_nonnull(p = strchr(p, '\n'));
		p++;
	}
	ck_assert_ptr_nonnull(e = strchr(p, '\n'));
	snprintf(line, sizeof(line), "%.*s", (int)(e - p), p);
	o = json_loads(line, JSON_REJECT_DUPLICATES, &jerr);
	ck_assert_msg(o != NULL && json_is_object(o), "not a JSON object "
	    "(%s): %s", jerr.text, line);
	return o;
}

static const char *
jstr(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	ck_assert_msg(json_is_string(v), "%s is not a string", k);
	return json_string_value(v);
}

START_TEST(test_json)
{
	json_t *o;
	const char *t;

	unsetenv("JOURNAL_STREAM");
	err_capture();
	log_init("check_log", 1);
	log_setlevel(LOG_LEVEL_INFO);
	log_setformat(LOG_FORMAT_JSON);
	ck_assert(log_json());
	/* Quotes, a backslash, a newline, a control byte, DEL, a lone
	 * continuation byte, a cut sequence and an e-acute. */
	log_warnx("sink said \"%s\"", "a\\b\nc\x01d\x7f\x80\xc3 \xc3\xa9");
	log_debug("not logged");
	log_setprefix("deliver 1.2");
	log_info("plain");
	log_setprefix("");
	log_fields(LOG_LEVEL_INFO, "\"hook\":\"h1\",\"attempt\":2");
	log_fields(LOG_LEVEL_DEBUG, "\"hook\":\"never\"");
	t = err_text();
	ck_assert_int_eq(count(t, "\n"), 3);
	ck_assert_msg(matches(t, "^\\{\"time\":\"[0-9]{4}-[0-9]{2}-[0-9]{2}T"
	    "[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z\",\"level\":\"warning\","
	    "\"process\":\"check_log\",\"pid\":[0-9]+,\"msg\":\""), "%s", t);
	o = json_line(t, 0);
	ck_assert_str_eq(jstr(o, "level"), "warning");
	ck_assert_str_eq(jstr(o, "process"), "check_log");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "pid")),
	    getpid());
	ck_assert_str_eq(jstr(o, "msg"), "sink said \"a\\b\nc\x01d\x7f"
	    "\xef\xbf\xbd\xef\xbf\xbd \xc3\xa9\"");
	ck_assert_int_eq(json_object_size(o), 5);
	json_decref(o);
	o = json_line(t, 1);
	ck_assert_str_eq(jstr(o, "level"), "info");
	ck_assert_str_eq(jstr(o, "msg"), "deliver 1.2: plain");
	json_decref(o);
	o = json_line(t, 2);
	ck_assert_str_eq(jstr(o, "hook"), "h1");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "attempt")), 2);
	ck_assert_ptr_null(json_object_get(o, "msg"));
	json_decref(o);

	/* The text format writes a field line's text as it is. */
	log_setformat(LOG_FORMAT_TEXT);
	ck_assert(!log_json());
	log_fields(LOG_LEVEL_INFO, "hook=h2 status=sent");
	ck_assert_msg(matches(err_text(), "^[0-9]{4}-.*Z check_log\\[[0-9]+\\]: "
	    "info: hook=h2 status=sent$"), "%s", err_text());
}
END_TEST

/* A message too long for its line is cut, still one valid object. */
START_TEST(test_json_long)
{
	static char big[2000];
	json_t *o;

	unsetenv("JOURNAL_STREAM");
	err_capture();
	log_init("check_log", 1);
	log_setformat(LOG_FORMAT_JSON);
	memset(big, '\n', sizeof(big) - 1);
	log_info("%s", big);
	o = json_line(err_text(), 0);
	ck_assert_uint_gt(strlen(jstr(o, "msg")), 500);
	ck_assert_uint_lt(strlen(jstr(o, "msg")), sizeof(big));
	json_decref(o);
	log_setformat(LOG_FORMAT_TEXT);
}
END_TEST

START_TEST(test_json_str)
{
	char b[32];
	enum log_format f;

	ck_assert_uint_eq(log_json_str(b, sizeof(b), "a\"b\\c", 5), 7);
	ck_assert_str_eq(b, "a\\\"b\\\\c");
	log_json_str(b, sizeof(b), "\t\x1f\x7f", 3);
	ck_assert_str_eq(b, "\\u0009\\u001f\\u007f");
	/* A NUL inside n bytes is escaped too. */
	ck_assert_uint_eq(log_json_str(b, sizeof(b), "a\0b", 3), 8);
	ck_assert_str_eq(b, "a\\u0000b");
	/* Overlong, surrogate, past U+10FFFF: one U+FFFD a byte. */
	log_json_str(b, sizeof(b), "\xc0\xaf", 2);
	ck_assert_str_eq(b, "\xef\xbf\xbd\xef\xbf\xbd");
	log_json_str(b, sizeof(b), "\xed\xa0\x80x", 4);
	ck_assert_str_eq(b, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdx");
	log_json_str(b, sizeof(b), "\xf4\x90\x80\x80", 4);
	ck_assert_uint_eq(strlen(b), 12);
	/* Cut between escapes and characters, never inside one. */
	ck_assert_uint_eq(log_json_str(b, 8, "ab\n\n", 4), 2);
	ck_assert_str_eq(b, "ab");
	ck_assert_uint_eq(log_json_str(b, 4, "a\xc3\xa9\xc3\xa9", 5), 3);
	ck_assert_str_eq(b, "a\xc3\xa9");
	ck_assert_uint_eq(log_json_str(b, 1, "abc", 3), 0);

	ck_assert_int_eq(log_format_parse("json", &f), 0);
	ck_assert_int_eq(f, LOG_FORMAT_JSON);
	ck_assert_int_eq(log_format_parse("text", &f), 0);
	ck_assert_int_eq(f, LOG_FORMAT_TEXT);
	ck_assert_int_eq(log_format_parse("JSON", &f), -1);
}
END_TEST

START_TEST(test_limit)
{
	struct log_limit ll = LOG_LIMIT_INIT("verify", 3);
	const char *t;
	int i, out = 0;

	unsetenv("JOURNAL_STREAM");
	err_capture();
	log_init("check_log", 1);
	log_setlevel(LOG_LEVEL_INFO);
	for (i = 0; i < 10; i++)
		if (log_limit_at(&ll, LOG_LEVEL_INFO, 100)) {
			log_info("line %d", i);
			out++;
		}
	ck_assert_int_eq(out, 3);
	t = err_text();
	ck_assert_int_eq(count(t, "suppressed"), 0);
	/* A later second: the summary, then the line. */
	ck_assert(log_limit_at(&ll, LOG_LEVEL_INFO, 101));
	log_info("line 10");
	t = err_text();
	ck_assert_msg(matches(t, ": info: verify: 7 more such lines "
	    "suppressed \\(at most 3 a second\\)\n[^\n]*: info: line 10$"),
	    "%s", t);
	ck_assert(log_limit_at(&ll, LOG_LEVEL_INFO, 101));
	ck_assert_int_eq(count(err_text(), "suppressed"), 1);
	/* A level not logged is not counted. */
	ck_assert(!log_limit_at(&ll, LOG_LEVEL_DEBUG, 102));
	ck_assert_int_eq(ll.n, 2);
}
END_TEST

/* Held lines (log_hold) go out at log_release, in their order, whole, in
 * writes of at most LOG_HOLD_MAX bytes; an error line goes out at once,
 * after the lines held before it; a line of another thread is not held. */
static void *
other_thread(void *arg)
{
	(void)arg;
	log_info("from another thread");
	return NULL;
}

START_TEST(test_hold)
{
	pthread_t th;
	const char *t;
	char big[600];
	int i;

	unsetenv("JOURNAL_STREAM");
	err_capture();
	log_init("check_log", 1);
	log_setlevel(LOG_LEVEL_DEBUG);
	log_hold();
	log_info("held one");
	log_info("held two");
	ck_assert_str_eq(err_text(), "");
	ck_assert_int_eq(pthread_create(&th, NULL, other_thread, NULL), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	t = err_text();
	ck_assert_int_eq(count(t, "from another thread"), 1);
	ck_assert_int_eq(count(t, "held"), 0);
	log_release();
	t = err_text();
	ck_assert_msg(matches(t, "from another thread\n.*held one\n"
	    ".*held two\n$"), "%s", t);

	/* An error: what was held first, then it, at once. */
	err_capture();
	log_hold();
	log_info("before the error");
	log_errorx("the error");
	t = err_text();
	ck_assert_msg(matches(t, "before the error\n.*error: the error\n$"),
	    "%s", t);
	log_release();

	/* More than a buffer's worth: every line whole, in order. */
	err_capture();
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	log_hold();
	for (i = 0; i < 20; i++)
		log_info("%02d %s", i, big);
	log_release();
	t = err_text();
	ck_assert_int_eq(count(t, big), 20);
	for (i = 0; i < 20; i++) {
		char want[16];

		snprintf(want, sizeof(want), "info: %02d x", i);
		ck_assert_msg(count(t, want) == 1, "line %d: %s", i, t);
	}
	ck_assert_msg(matches(t, "info: 00 x+\n.*info: 01 x+\n"), "%s", t);
	ck_assert_msg(matches(t, "info: 18 x+\n.*info: 19 x+\n$"), "%s", t);
}
END_TEST

START_TEST(test_clean)
{
	char b[32];

	ck_assert_str_eq(log_clean(b, sizeof(b), "http 503"), "http 503");
	ck_assert_str_eq(log_clean(b, sizeof(b), "a\nb\tc\x7f"),
	    "a\\x0ab\\x09c\\x7f");
	/* Cut between escapes, never inside one. */
	ck_assert_str_eq(log_clean(b, 8, "ab\n\n"), "ab\\x0a");
	ck_assert_str_eq(log_clean(b, 1, "abc"), "");
}
END_TEST

static Suite *
log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc;

	tc = tcase_create("log");
	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_test(tc, test_line);
	tcase_add_test(tc, test_journal);
	tcase_add_test(tc, test_json);
	tcase_add_test(tc, test_json_long);
	tcase_add_test(tc, test_json_str);
	tcase_add_test(tc, test_limit);
	tcase_add_test(tc, test_clean);
	tcase_add_test(tc, test_hold);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(log_suite());
	srunner_set_fork_status(sr, CK_FORK_GETENV);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
