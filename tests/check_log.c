/* SPDX-License-Identifier: ISC */
/*
 * check_log.c: unit tests of common/log.c: the line on stderr (date, time,
 * level, the journal's priority prefix) and the rate limit of repeated
 * lines.
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
	tcase_add_test(tc, test_limit);
	tcase_add_test(tc, test_clean);
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
