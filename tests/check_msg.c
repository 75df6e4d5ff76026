/* SPDX-License-Identifier: ISC */
/*
 * check_msg.c: the frame codec and the channel.
 */
#include "config.h"

#include <sys/socket.h>

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "msg.h"
#include "proc.h"

static void
build_sample(struct msg *m)
{
	msg_init(m, MSG_HOOK_RESULT, 0x0102030405060708ULL);
	msg_add_u8(m, 7);
	msg_add_u32(m, 0xdeadbeef);
	msg_add_u64(m, 0x1122334455667788ULL);
	msg_add_str(m, "tenant");
	msg_add_str(m, NULL);
	msg_add_data(m, "\0\1\2", 3);
}

START_TEST(test_roundtrip)
{
	struct msg m;
	uint8_t a;
	uint32_t c;
	uint64_t d;
	const char *s1, *s2;
	const void *p;
	size_t n;

	build_sample(&m);
	ck_assert_int_eq(msg_get_u8(&m, &a), 0);
	ck_assert_int_eq(msg_get_u32(&m, &c), 0);
	ck_assert_int_eq(msg_get_u64(&m, &d), 0);
	ck_assert_int_eq(msg_get_str(&m, &s1), 0);
	ck_assert_int_eq(msg_get_str(&m, &s2), 0);
	ck_assert_int_eq(msg_get_data(&m, &p, &n), 0);
	ck_assert_int_eq(msg_end(&m), 0);
	ck_assert_uint_eq(a, 7);
	ck_assert_uint_eq(c, 0xdeadbeef);
	ck_assert(d == 0x1122334455667788ULL);
	ck_assert_str_eq(s1, "tenant");
	ck_assert_str_eq(s2, "");
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(memcmp(p, "\0\1\2", 3), 0);
	msg_free(&m);
}
END_TEST

/* Reading every prefix of a payload fails somewhere, never succeeds. */
START_TEST(test_truncated)
{
	struct msg m, t;
	size_t cut;

	build_sample(&m);
	for (cut = 0; cut < m.len; cut++) {
		uint8_t a;
		uint32_t c;
		uint64_t d;
		const char *s;
		const void *p;
		size_t n;

		t = m;
		t.len = cut;
		t.rpos = 0;
		t.err = 0;
		(void)(msg_get_u8(&t, &a) == -1 || msg_get_u32(&t, &c) == -1 ||
		    msg_get_u64(&t, &d) == -1 ||
		    msg_get_str(&t, &s) == -1 || msg_get_str(&t, &s) == -1 ||
		    msg_get_data(&t, &p, &n) == -1);
		ck_assert_msg(msg_end(&t) == -1, "cut at %zu accepted", cut);
	}
	msg_free(&m);
}
END_TEST

START_TEST(test_leftover)
{
	struct msg m;
	uint8_t a;

	msg_init(&m, MSG_HOOK_RESULT, 1);
	msg_add_u8(&m, 1);
	msg_add_u8(&m, 2);
	ck_assert_int_eq(msg_get_u8(&m, &a), 0);
	ck_assert_int_eq(msg_end(&m), -1);
	msg_free(&m);
}
END_TEST

START_TEST(test_bad_strings)
{
	struct msg m;
	const char *s;
	unsigned char raw1[] = { 0, 0, 0, 2, 'a', 'b', 'c' };	/* no NUL */
	unsigned char raw2[] = { 0, 0, 0, 2, 'a', 0, 0 };	/* embedded */
	unsigned char raw3[] = { 0xff, 0xff, 0xff, 0xff, 'a', 0 };

	msg_init(&m, MSG_HOOK_RESULT, 1);
	m.buf = raw1;
	m.len = sizeof(raw1);
	ck_assert_int_eq(msg_get_str(&m, &s), -1);
	msg_init(&m, MSG_HOOK_RESULT, 1);
	m.buf = raw2;
	m.len = sizeof(raw2);
	ck_assert_int_eq(msg_get_str(&m, &s), -1);
	msg_init(&m, MSG_HOOK_RESULT, 1);
	m.buf = raw3;
	m.len = sizeof(raw3);
	ck_assert_int_eq(msg_get_str(&m, &s), -1);
	ck_assert_int_eq(msg_end(&m), -1);
}
END_TEST

/* Headers: oversized, unknown type, unknown flag are refused. */
static const struct {
	uint16_t type, flags;
	uint32_t len;
	int ok;
} hdr_cases[] = {
	{ MSG_HOOK_SUBMIT, 0, 10, 1 },
	{ MSG_HOOK_SUBMIT, MSG_F_FD, MSG_MAX_PAYLOAD, 1 },
	{ MSG_HOOK_SUBMIT, 0, MSG_MAX_PAYLOAD + 1, 0 },
	{ MSG_HOOK_SUBMIT, 0, 0xffffffff, 0 },
	{ MSG_NONE, 0, 0, 0 },
	{ MSG_TYPE_MAX, 0, 0, 0 },
	{ 0xffff, 0, 0, 0 },
	{ MSG_HOOK_SUBMIT, 0x8000, 0, 0 },
};

START_TEST(test_header)
{
	unsigned char h[MSG_HDR_LEN];
	struct msg m, d;

	msg_init(&m, hdr_cases[_i].type, 42);
	m.flags = hdr_cases[_i].flags;
	m.len = hdr_cases[_i].len;
	msg_encode_header(&m, h);
	ck_assert_int_eq(msg_decode_header(h, &d) == 0, hdr_cases[_i].ok);
	if (hdr_cases[_i].ok) {
		ck_assert_uint_eq(d.type, hdr_cases[_i].type);
		ck_assert_uint_eq(d.len, hdr_cases[_i].len);
		ck_assert(d.id == 42);
	}
}
END_TEST

START_TEST(test_names)
{
	ck_assert_str_eq(msg_type_name(MSG_HOOK_SUBMIT), "hook_submit");
	ck_assert_str_eq(msg_type_name(9999), "unknown");
}
END_TEST

/* --- channel --- */

struct rx {
	struct event_base	*base;
	int			 nmsg;
	int			 err;
	int			 gotfd_ok;
	uint64_t		 last_id;
	size_t			 last_len;
};

static void
rx_msg(struct chan *c, struct msg *m, void *arg)
{
	struct rx *r = arg;

	r->nmsg++;
	r->last_id = m->id;
	r->last_len = m->len;
	if (m->fd != -1) {
		char buf[8] = "";

		if (pread(m->fd, buf, 5, 0) == 5 && memcmp(buf, "hello", 5) ==
		    0)
			r->gotfd_ok = 1;
	}
	event_base_loopbreak(r->base);
}

static void
rx_err(struct chan *c, int err, void *arg)
{
	struct rx *r = arg;

	r->err = err == 0 ? -1 : err;
	event_base_loopbreak(r->base);
}

START_TEST(test_chan_fd)
{
	struct event_base *base = event_base_new();
	struct rx r = { base, 0, 0, 0, 0, 0 };
	struct chan *a, *b;
	struct msg m;
	int sv[2], fd;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	a = chan_new(base, sv[0], rx_msg, rx_err, &r);
	b = chan_new(base, sv[1], rx_msg, rx_err, &r);
	fd = proc_memfd("t", "hello", 5);
	ck_assert_int_ne(fd, -1);
	msg_init(&m, MSG_HOOK_SUBMIT, 77);
	msg_add_str(&m, "x");
	msg_set_fd(&m, fd);
	ck_assert_int_eq(chan_send(a, &m), 0);
	msg_free(&m);
	event_base_dispatch(base);
	ck_assert_int_eq(r.nmsg, 1);
	ck_assert(r.last_id == 77);
	ck_assert_int_eq(r.gotfd_ok, 1);
	chan_free(a);
	event_base_dispatch(base);
	ck_assert_int_eq(r.err, -1);	/* clean EOF */
	chan_free(b);
	event_base_free(base);
}
END_TEST

/* A large frame crosses the socket buffer in pieces. */
START_TEST(test_chan_large)
{
	struct event_base *base = event_base_new();
	struct rx r = { base, 0, 0, 0, 0, 0 };
	struct chan *a, *b;
	struct msg m;
	char *big;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	a = chan_new(base, sv[0], rx_msg, rx_err, &r);
	b = chan_new(base, sv[1], rx_msg, rx_err, &r);
	big = calloc(1, 3 * 1024 * 1024);
	msg_init(&m, MSG_HOOK_SUBMIT, 5);
	msg_add_data(&m, big, 3 * 1024 * 1024);
	ck_assert_int_eq(chan_send(a, &m), 0);
	msg_free(&m);
	free(big);
	while (r.nmsg == 0 && r.err == 0)
		event_base_dispatch(base);
	ck_assert_int_eq(r.nmsg, 1);
	ck_assert_uint_eq(r.last_len, 4 + 3 * 1024 * 1024);
	chan_free(a);
	chan_free(b);
	event_base_free(base);
}
END_TEST

/* Garbage and a frame that claims an fd it does not carry fail the
 * channel with EPROTO. */
START_TEST(test_chan_garbage)
{
	struct event_base *base = event_base_new();
	struct rx r = { base, 0, 0, 0, 0, 0 };
	struct chan *b;
	unsigned char h[MSG_HDR_LEN];
	struct msg m;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	b = chan_new(base, sv[1], rx_msg, rx_err, &r);
	if (_i == 0)
		ck_assert_int_eq(write(sv[0], "GET / HTTP/1.1\r\n\r\n", 18),
		    18);
	else {
		msg_init(&m, MSG_HOOK_SUBMIT, 1);
		m.flags = MSG_F_FD;
		msg_encode_header(&m, h);
		ck_assert_int_eq(write(sv[0], h, sizeof(h)), sizeof(h));
	}
	event_base_dispatch(base);
	ck_assert_int_eq(r.nmsg, 0);
	ck_assert_int_eq(r.err, EPROTO);
	chan_free(b);
	close(sv[0]);
	event_base_free(base);
}
END_TEST

/* A truncated frame followed by EOF is a protocol error, not a message. */
START_TEST(test_chan_truncated)
{
	struct event_base *base = event_base_new();
	struct rx r = { base, 0, 0, 0, 0, 0 };
	struct chan *b;
	unsigned char h[MSG_HDR_LEN];
	struct msg m;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	b = chan_new(base, sv[1], rx_msg, rx_err, &r);
	msg_init(&m, MSG_HOOK_SUBMIT, 1);
	m.len = 100;
	msg_encode_header(&m, h);
	ck_assert_int_eq(write(sv[0], h, sizeof(h)), sizeof(h));
	ck_assert_int_eq(write(sv[0], "abc", 3), 3);
	close(sv[0]);
	event_base_dispatch(base);
	ck_assert_int_eq(r.nmsg, 0);
	ck_assert_int_eq(r.err, EPROTO);
	chan_free(b);
	event_base_free(base);
}
END_TEST

static Suite *
msg_suite(void)
{
	Suite *s = suite_create("msg");
	TCase *tc;

	tc = tcase_create("codec");
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_leftover);
	tcase_add_test(tc, test_bad_strings);
	tcase_add_loop_test(tc, test_header, 0,
	    sizeof(hdr_cases) / sizeof(hdr_cases[0]));
	tcase_add_test(tc, test_names);
	suite_add_tcase(s, tc);

	tc = tcase_create("chan");
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_chan_fd);
	tcase_add_test(tc, test_chan_large);
	tcase_add_loop_test(tc, test_chan_garbage, 0, 2);
	tcase_add_test(tc, test_chan_truncated);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(msg_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
