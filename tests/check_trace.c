/* SPDX-License-Identifier: ISC */
/*
 * check_trace.c: W3C Trace Context: which traceparent and tracestate
 * values the edge keeps, the contexts it makes, an attempt's traceparent.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ids.h"
#include "trace.h"

#define GOOD	"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static const char *const bad_parents[] = {
	"",
	GOOD "x",					/* too long */
	"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
	"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", /* v01 */
	"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", /* case */
	"00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",
	"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A",
	"00-00000000000000000000000000000000-00f067aa0ba902b7-01", /* zero */
	"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
	"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	"00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
	"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01",
	"00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
	"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0 ",
	" 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
};

START_TEST(test_parse_good)
{
	struct trace_ctx t;
	unsigned char packed[TRACE_CTX_LEN];
	static const unsigned char span[TRACE_SPAN_LEN] = { 0xa1, 0xb2, 0xc3,
	    0xd4, 0xe5, 0xf6, 0x07, 0x18 };
	char out[TRACE_PARENT_STRLEN + 1], hex[33];

	ck_assert_int_eq(trace_parse(GOOD, strlen(GOOD), &t), 0);
	ck_assert_uint_eq(t.trace_id[0], 0x4b);
	ck_assert_uint_eq(t.trace_id[15], 0x36);
	ck_assert_uint_eq(t.parent_id[0], 0x00);
	ck_assert_uint_eq(t.parent_id[7], 0xb7);
	ck_assert_uint_eq(t.flags, 0x01);
	trace_pack(&t, packed);
	trace_id_hex(packed, hex);
	ck_assert_str_eq(hex, "4bf92f3577b34da6a3ce929d0e0e4736");
	memset(&t, 0, sizeof(t));
	trace_unpack(packed, &t);
	/* An attempt's traceparent: the same trace, its own span. */
	trace_format(&t, span, out);
	ck_assert_str_eq(out,
	    "00-4bf92f3577b34da6a3ce929d0e0e4736-a1b2c3d4e5f60718-01");
	/* Flags as received, unknown bits too. */
	ck_assert_int_eq(trace_parse("00-4bf92f3577b34da6a3ce929d0e0e4736-"
	    "00f067aa0ba902b7-fe", TRACE_PARENT_STRLEN, &t), 0);
	ck_assert_uint_eq(t.flags, 0xfe);
}
END_TEST

START_TEST(test_parse_bad)
{
	struct trace_ctx t;
	const char *s = bad_parents[_i];

	memset(&t, 0x5a, sizeof(t));
	ck_assert_msg(trace_parse(s, strlen(s), &t) == -1, "kept \"%s\"", s);
	ck_assert_uint_eq(t.flags, 0x5a);	/* untouched */
}
END_TEST

/* A NUL inside the value's length is refused. */
START_TEST(test_parse_nul)
{
	char s[TRACE_PARENT_STRLEN + 1];
	struct trace_ctx t;

	memcpy(s, GOOD, sizeof(s));
	s[54] = '\0';
	ck_assert_int_eq(trace_parse(s, TRACE_PARENT_STRLEN, &t), -1);
}
END_TEST

static const struct {
	const char	*v;
	int		 ok;
} states[] = {
	{ "congo=t61rcWkgMzE", 1 },
	{ "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", 1 },
	{ " rojo=1 ,\tcongo=2\t", 1 },
	{ "rojo=1,,congo=2", 1 },		/* empty members allowed */
	{ "fw529a3039@dt=ZmIxMw", 1 },		/* multi-tenant key */
	{ "a*_-/9=v a l", 1 },			/* spaces inside a value */
	{ "", 0 },
	{ " , ", 0 },				/* no member at all */
	{ "Rojo=1", 0 },			/* upper-case key */
	{ "9rojo=1", 0 },			/* a simple key's first */
	{ "rojo", 0 },
	{ "rojo=", 0 },
	{ "=1", 0 },
	{ "rojo=a=b", 0 },
	{ "rojo=caf\xc3\xa9", 0 },		/* not ASCII */
	{ "rojo=1\x01", 0 },
	{ "t@", 0 },
	{ "@sys=1", 0 },
	{ "t@Sys=1", 0 },
	{ "t@sys456789012345=1", 0 },		/* system-id over 14 */
};

START_TEST(test_state)
{
	ck_assert_msg(trace_state_valid(states[_i].v, strlen(states[_i].v)) ==
	    states[_i].ok, "\"%s\"", states[_i].v);
}
END_TEST

/* The bounds: 512 bytes, 32 members. */
START_TEST(test_state_bounds)
{
	char s[1024];
	size_t n = 0;
	int i;

	for (i = 0; i < 32; i++)
		n += snprintf(s + n, sizeof(s) - n, "%sk%02d=v", i ? "," : "",
		    i);
	ck_assert_int_eq(trace_state_valid(s, n), 1);
	n += snprintf(s + n, sizeof(s) - n, ",k32=v");
	ck_assert_int_eq(trace_state_valid(s, n), 0);

	memset(s, 'x', sizeof(s));
	memcpy(s, "k=", 2);
	ck_assert_int_eq(trace_state_valid(s, 258), 1);	/* value 256 */
	ck_assert_int_eq(trace_state_valid(s, 259), 0);	/* value 257 */
	n = 0;
	for (i = 0; n < TRACE_STATE_MAX - 50; i++)
		n += snprintf(s + n, sizeof(s) - n, "%sk%02d=%040d",
		    i ? "," : "", i, i);
	ck_assert_uint_le(n, TRACE_STATE_MAX);
	ck_assert_int_eq(trace_state_valid(s, n), 1);
	/* Under 32 members but over 512 bytes. */
	n = 0;
	for (i = 0; i < 3; i++)
		n += snprintf(s + n, sizeof(s) - n, "%sk%d=%0200d",
		    i ? "," : "", i, 0);
	ck_assert_uint_gt(n, TRACE_STATE_MAX);
	ck_assert_int_eq(trace_state_valid(s, n), 0);
}
END_TEST

static unsigned char rnd_byte;

static void
zero_random(void *p, size_t n)
{
	/* All zero the first time, then non-zero: never an all-zero id. */
	memset(p, rnd_byte, n);
	rnd_byte = 0x11;
}

START_TEST(test_new)
{
	struct trace_ctx a, b;
	unsigned char span[TRACE_SPAN_LEN], packed[TRACE_CTX_LEN];
	char out[TRACE_PARENT_STRLEN + 1];

	trace_new(&a);
	trace_new(&b);
	ck_assert_uint_eq(a.flags, TRACE_FLAGS_MADE);
	ck_assert(memcmp(a.trace_id, b.trace_id, TRACE_ID_LEN) != 0);
	ck_assert(memcmp(a.parent_id, b.parent_id, TRACE_SPAN_LEN) != 0);
	/* What it makes is what the edge would keep. */
	trace_span_new(span);
	trace_format(&a, span, out);
	ck_assert_int_eq(trace_parse(out, strlen(out), &b), 0);
	trace_pack(&a, packed);
	ck_assert(memcmp(packed, b.trace_id, TRACE_ID_LEN) == 0);
	ck_assert(memcmp(span, b.parent_id, TRACE_SPAN_LEN) == 0);

	/* A random source that gives zeros first: drawn again. */
	rnd_byte = 0;
	ids_set_random(zero_random);
	trace_new(&a);
	ids_set_random(NULL);
	ck_assert_uint_eq(a.trace_id[0], 0x11);
	ck_assert_uint_eq(a.parent_id[0], 0x11);
}
END_TEST

static Suite *
trace_suite(void)
{
	Suite *s = suite_create("trace");
	TCase *tc = tcase_create("trace");

	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_parse_good);
	tcase_add_loop_test(tc, test_parse_bad, 0,
	    sizeof(bad_parents) / sizeof(bad_parents[0]));
	tcase_add_test(tc, test_parse_nul);
	tcase_add_loop_test(tc, test_state, 0,
	    sizeof(states) / sizeof(states[0]));
	tcase_add_test(tc, test_state_bounds);
	tcase_add_test(tc, test_new);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(trace_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
