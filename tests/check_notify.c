/* SPDX-License-Identifier: ISC */
/*
 * check_notify.c: the NOTIFY_SOCKET protocol (daemon/notify.c): the
 * address, the watchdog's variables, the messages, and the datagrams a
 * real socket receives (a path and an abstract name).
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <check.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "notify.h"

START_TEST(test_addr)
{
	struct sockaddr_un sun;
	socklen_t len;
	char longp[sizeof(sun.sun_path) + 2];

	ck_assert_int_eq(notify_addr("/run/systemd/notify", &sun, &len), 0);
	ck_assert_int_eq(sun.sun_family, AF_UNIX);
	ck_assert_str_eq(sun.sun_path, "/run/systemd/notify");
	ck_assert_uint_eq(len, offsetof(struct sockaddr_un, sun_path) +
	    strlen("/run/systemd/notify") + 1);

	/* Abstract: a NUL, then the name without a terminator. */
	ck_assert_int_eq(notify_addr("@ank/notify", &sun, &len), 0);
	ck_assert_int_eq(sun.sun_path[0], '\0');
	ck_assert_int_eq(memcmp(sun.sun_path + 1, "ank/notify", 10), 0);
	ck_assert_uint_eq(len, offsetof(struct sockaddr_un, sun_path) + 11);

	ck_assert_int_eq(notify_addr("relative/sock", &sun, &len), -1);
	ck_assert_int_eq(notify_addr("", &sun, &len), -1);
	ck_assert_int_eq(notify_addr("@", &sun, &len), -1);
	ck_assert_int_eq(notify_addr(NULL, &sun, &len), -1);
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	ck_assert_int_eq(notify_addr(longp, &sun, &len), -1);
	/* The longest that fits, with its terminator. */
	longp[sizeof(sun.sun_path) - 1] = '\0';
	ck_assert_int_eq(notify_addr(longp, &sun, &len), 0);
}
END_TEST

START_TEST(test_watchdog)
{
	uint64_t us = 99;

	ck_assert_int_eq(notify_watchdog(NULL, NULL, 10, &us), 0);
	ck_assert_uint_eq(us, 0);
	ck_assert_int_eq(notify_watchdog("", NULL, 10, &us), 0);
	ck_assert_uint_eq(us, 0);
	ck_assert_int_eq(notify_watchdog("30000000", NULL, 10, &us), 0);
	ck_assert_uint_eq(us, 30000000);
	ck_assert_int_eq(notify_watchdog("30000000", "10", 10, &us), 0);
	ck_assert_uint_eq(us, 30000000);
	/* Meant for another process: off. */
	ck_assert_int_eq(notify_watchdog("30000000", "11", 10, &us), 0);
	ck_assert_uint_eq(us, 0);
	ck_assert_int_eq(notify_watchdog("30000000", "", 10, &us), 0);
	ck_assert_uint_eq(us, 30000000);
	ck_assert_int_eq(notify_watchdog("0", NULL, 10, &us), -1);
	ck_assert_int_eq(notify_watchdog("-5", NULL, 10, &us), -1);
	ck_assert_int_eq(notify_watchdog("12s", NULL, 10, &us), -1);
	ck_assert_int_eq(notify_watchdog("1000", "x", 10, &us), -1);
	ck_assert_int_eq(notify_watchdog("99999999999999999999999", NULL, 10,
	    &us), -1);
}
END_TEST

START_TEST(test_format)
{
	char buf[256], tiny[12];

	ck_assert_int_eq(notify_format(buf, sizeof(buf), NOTIFY_READY, 4242,
	    0, NULL), (int)strlen("READY=1\nMAINPID=4242\n"));
	ck_assert_str_eq(buf, "READY=1\nMAINPID=4242\n");
	notify_format(buf, sizeof(buf), NOTIFY_READY, 7, 0, "accepting: 2");
	ck_assert_str_eq(buf, "READY=1\nMAINPID=7\nSTATUS=accepting: 2\n");
	notify_format(buf, sizeof(buf), NOTIFY_RELOADING, 7, 123456789,
	    "reloading");
	ck_assert_str_eq(buf, "RELOADING=1\nMONOTONIC_USEC=123456789\n"
	    "STATUS=reloading\n");
	notify_format(buf, sizeof(buf), NOTIFY_STOPPING, 7, 0, NULL);
	ck_assert_str_eq(buf, "STOPPING=1\n");
	notify_format(buf, sizeof(buf), NOTIFY_WATCHDOG, 7, 0, NULL);
	ck_assert_str_eq(buf, "WATCHDOG=1\n");
	/* A status is one line whatever it holds. */
	ck_assert_int_eq(notify_format(buf, sizeof(buf), NOTIFY_STATUS, 7, 0,
	    "a\nREADY=1\nb"), (int)strlen("STATUS=a READY=1 b\n"));
	ck_assert_str_eq(buf, "STATUS=a READY=1 b\n");
	/* What does not fit is refused, never cut. */
	ck_assert_int_eq(notify_format(tiny, sizeof(tiny), NOTIFY_READY, 4242,
	    0, NULL), -1);
	ck_assert_int_eq(notify_format(buf, 20, NOTIFY_STOPPING, 1, 0,
	    "a status that is long"), -1);
}
END_TEST

/* A datagram socket bound at addr (a path, or "@name"). */
static int
listener(const char *addr)
{
	struct sockaddr_un sun;
	socklen_t len;
	int fd;

	ck_assert_int_eq(notify_addr(addr, &sun, &len), 0);
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	ck_assert_int_ne(fd, -1);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sun, len), 0);
	return fd;
}

/* The next datagram within a second, or "" if none. */
static void
recv_one(int fd, char *buf, size_t len)
{
	struct pollfd pfd = { fd, POLLIN, 0 };
	ssize_t n;

	buf[0] = '\0';
	if (poll(&pfd, 1, 1000) != 1)
		return;
	n = recv(fd, buf, len - 1, 0);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
}

/* The next datagram other than a watchdog ping, counted in *pings. */
static void
recv_skip(int fd, char *buf, size_t len, int *pings)
{
	for (;;) {
		recv_one(fd, buf, len);
		if (strcmp(buf, "WATCHDOG=1\n") != 0)
			return;
		(*pings)++;
	}
}

/* Every datagram waiting: the count of pings; anything else fails. */
static int
drain_pings(int fd)
{
	struct pollfd pfd = { fd, POLLIN, 0 };
	char buf[512];
	ssize_t n;
	int pings = 0;

	while (poll(&pfd, 1, 0) == 1) {
		n = recv(fd, buf, sizeof(buf) - 1, 0);
		ck_assert_int_gt(n, 0);
		buf[n] = '\0';
		ck_assert_str_eq(buf, "WATCHDOG=1\n");
		pings++;
	}
	return pings;
}

static int	ready_now;
static int
ready_fn(void)
{
	return ready_now;
}

static void
status_fn(char *buf, size_t len)
{
	snprintf(buf, len, "accepting: test");
}

static void
live(const char *addr, int fd)
{
	struct event_base *base;
	struct timeval tv = { 0, 150000 };
	char buf[512], want[64];
	int pings = 0;

	setenv("NOTIFY_SOCKET", addr, 1);
	setenv("WATCHDOG_USEC", "200000", 1);
	snprintf(want, sizeof(want), "%d", (int)getpid());
	setenv("WATCHDOG_PID", want, 1);
	ck_assert_int_eq(notify_init(), 1);
	/* Taken: no child inherits them. */
	ck_assert_ptr_null(getenv("NOTIFY_SOCKET"));
	ck_assert_ptr_null(getenv("WATCHDOG_USEC"));
	ck_assert_ptr_null(getenv("WATCHDOG_PID"));

	base = event_base_new();
	ready_now = 0;
	notify_start(base, ready_fn, status_fn);
	recv_one(fd, buf, sizeof(buf));
	ck_assert_str_eq(buf, "WATCHDOG=1\n");
	/* Not ready: nothing but the watchdog's first ping. */
	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
	ck_assert_int_eq(drain_pings(fd), 1);	/* at 100 ms */
	/* Ready: READY=1 with our pid. */
	ready_now = 1;
	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
	recv_skip(fd, buf, sizeof(buf), &pings);
	snprintf(want, sizeof(want), "READY=1\nMAINPID=%d\n", (int)getpid());
	ck_assert_int_eq(strncmp(buf, want, strlen(want)), 0);
	ck_assert_ptr_nonnull(strstr(buf, "STATUS=accepting: test\n"));

	notify_reloading();
	recv_skip(fd, buf, sizeof(buf), &pings);
	ck_assert_int_eq(strncmp(buf, "RELOADING=1\nMONOTONIC_USEC=", 27),
	    0);
	notify_reloaded("accepting: new");
	recv_skip(fd, buf, sizeof(buf), &pings);
	ck_assert_int_eq(strncmp(buf, "READY=1\n", 8), 0);
	ck_assert_ptr_nonnull(strstr(buf, "STATUS=accepting: new\n"));
	/* A status unchanged is not sent again. */
	notify_status("accepting: new");
	notify_status("accepting: newer");
	recv_skip(fd, buf, sizeof(buf), &pings);
	ck_assert_str_eq(buf, "STATUS=accepting: newer\n");
	notify_stopping("draining: 3");
	recv_skip(fd, buf, sizeof(buf), &pings);
	ck_assert_str_eq(buf, "STOPPING=1\nSTATUS=draining: 3\n");
	/* After STOPPING no reload is told. */
	notify_reloading();
	notify_reloaded("accepting: again");
	(void)drain_pings(fd);

	/* The watchdog goes on while draining, every 100 ms: 5 pings in
	 * 0.55 s, one more if one was due as the loop began. */
	tv.tv_usec = 550000;
	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
	pings = drain_pings(fd);
	ck_assert_int_ge(pings, 5);
	ck_assert_int_le(pings, 6);
	notify_close();
	event_base_free(base);
}

START_TEST(test_live_path)
{
	char dir[] = "/tmp/check_notify.XXXXXX", path[128];
	int fd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/notify", dir);
	fd = listener(path);
	live(path, fd);
	close(fd);
	unlink(path);
	rmdir(dir);
}
END_TEST

START_TEST(test_live_abstract)
{
	char name[64];
	int fd;

	snprintf(name, sizeof(name), "@ankusa/check_notify/%d", (int)getpid());
	fd = listener(name);
	live(name, fd);
	close(fd);
}
END_TEST

/* No NOTIFY_SOCKET: nothing, and no timer in the loop. */
START_TEST(test_off)
{
	struct event_base *base;

	unsetenv("NOTIFY_SOCKET");
	setenv("WATCHDOG_USEC", "100000", 1);
	ck_assert_int_eq(notify_init(), 0);
	base = event_base_new();
	notify_start(base, ready_fn, status_fn);
	notify_stopping("x");
	/* The loop has no event: it returns at once. */
	ck_assert_int_eq(event_base_dispatch(base), 1);
	notify_close();
	event_base_free(base);
}
END_TEST

/* A name nobody listens on: not told, the variable taken all the same;
 * a listener gone later: the sends fail, the caller goes on. */
START_TEST(test_gone)
{
	char name[64];
	int fd;

	snprintf(name, sizeof(name), "@ankusa/check_notify/none/%d",
	    (int)getpid());
	setenv("NOTIFY_SOCKET", name, 1);
	ck_assert_int_eq(notify_init(), 0);
	ck_assert_ptr_null(getenv("NOTIFY_SOCKET"));
	notify_stopping("x");
	notify_close();

	fd = listener(name);
	setenv("NOTIFY_SOCKET", name, 1);
	ck_assert_int_eq(notify_init(), 1);
	close(fd);
	notify_stopping("x");
	notify_status("y");
	notify_close();
}
END_TEST

static Suite *
notify_suite(void)
{
	Suite *s = suite_create("notify");
	TCase *tc = tcase_create("notify");

	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_addr);
	tcase_add_test(tc, test_watchdog);
	tcase_add_test(tc, test_format);
	tcase_add_test(tc, test_live_path);
	tcase_add_test(tc, test_live_abstract);
	tcase_add_test(tc, test_off);
	tcase_add_test(tc, test_gone);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(notify_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
