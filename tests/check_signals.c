/* SPDX-License-Identifier: ISC */
/*
 * check_signals.c: the master's SIGHUP, SIGTERM and SIGINT
 * (daemon/signals.c): blocked from signals_init, and so in a thread made
 * then, a stop pending is seen by signals_stop before the loop runs and
 * handed to the loop once it does; a SIGHUP is no stop; signals_hold
 * keeps one pending across an exec.
 */
#include "config.h"

#include <sys/wait.h>

#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "signals.h"

#define TIMEOUT	10

static int	got[NSIG];
static int	ncb;

static void
cb(int sig)
{
	got[sig]++;
	ncb++;
}

static void
spin(struct event_base *b)
{
	event_base_loop(b, EVLOOP_NONBLOCK);
}

START_TEST(test_stop_pending_before_the_loop)
{
	struct event_base *b = event_base_new();

	signals_init();
	ck_assert_ptr_null(signals_stop());
	ck_assert_int_eq(kill(getpid(), SIGTERM), 0);
	/* Blocked: alive, pending, seen. */
	ck_assert_str_eq(signals_stop(), "SIGTERM");
	signals_start(b, cb);
	spin(b);
	ck_assert_int_eq(got[SIGTERM], 1);
	ck_assert_int_eq(ncb, 1);
	/* Kept: a stop asked stays asked. */
	ck_assert_str_eq(signals_stop(), "SIGTERM");
	spin(b);
	ck_assert_int_eq(ncb, 1);
	signals_close();
	event_base_free(b);
}
END_TEST

START_TEST(test_hup_is_no_stop)
{
	struct event_base *b = event_base_new();

	signals_init();
	signals_start(b, cb);
	ck_assert_int_eq(kill(getpid(), SIGHUP), 0);
	spin(b);
	ck_assert_int_eq(got[SIGHUP], 1);
	ck_assert_ptr_null(signals_stop());
	ck_assert_int_eq(kill(getpid(), SIGINT), 0);
	spin(b);
	ck_assert_int_eq(got[SIGINT], 1);
	ck_assert_str_eq(signals_stop(), "SIGINT");
	ck_assert_int_eq(kill(getpid(), SIGTERM), 0);
	spin(b);
	ck_assert_int_eq(got[SIGTERM], 1);
	/* The first stop is the one named. */
	ck_assert_str_eq(signals_stop(), "SIGINT");
	signals_close();
	event_base_free(b);
}
END_TEST

static void *
thread_mask(void *arg)
{
	sigset_t set;

	pthread_sigmask(SIG_BLOCK, NULL, &set);
	*(int *)arg = sigismember(&set, SIGTERM) == 1 &&
	    sigismember(&set, SIGINT) == 1 && sigismember(&set, SIGHUP) == 1;
	return NULL;
}

START_TEST(test_threads_made_before_the_loop_block_them)
{
	pthread_t t;
	int blocked = 0;

	signals_init();
	ck_assert_int_eq(pthread_create(&t, NULL, thread_mask, &blocked), 0);
	pthread_join(t, NULL);
	ck_assert_int_eq(blocked, 1);
}
END_TEST

/* A status line's hex mask has SIGTERM's bit. */
static int
has_term(const char *status, const char *field)
{
	const char *p = strstr(status, field);
	unsigned long long m;

	if (p == NULL || sscanf(p + strlen(field), " %llx", &m) != 1)
		return -1;
	return (m >> (SIGTERM - 1)) & 1;
}

START_TEST(test_held_across_an_exec)
{
	struct event_base *b = event_base_new();
	char buf[8192];
	size_t len = 0;
	ssize_t n;
	int fds[2], st;
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	if ((pid = fork()) == 0) {
		signals_init();
		signals_start(b, cb);
		signals_hold();
		kill(getpid(), SIGTERM);
		dup2(fds[1], 1);
		execl("/bin/cat", "cat", "/proc/self/status", (char *)NULL);
		_exit(127);
	}
	ck_assert_int_gt(pid, 0);
	close(fds[1]);
	while (len < sizeof(buf) - 1 &&
	    (n = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	buf[len] = '\0';
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	/* cat ran (not killed by the signal) with it blocked and pending. */
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	ck_assert_int_eq(has_term(buf, "SigBlk:"), 1);
	ck_assert_int_eq(has_term(buf, "ShdPnd:"), 1);
	signals_close();
	event_base_free(b);
}
END_TEST

static Suite *
signals_suite(void)
{
	Suite *s = suite_create("signals");
	TCase *tc = tcase_create("signals");

	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_test(tc, test_stop_pending_before_the_loop);
	tcase_add_test(tc, test_hup_is_no_stop);
	tcase_add_test(tc, test_threads_made_before_the_loop_block_them);
	tcase_add_test(tc, test_held_across_an_exec);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(signals_suite());
	int nfail;

	/* Each test a process of its own: the signals' state is the
	 * process's. */
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	nfail = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nfail == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
