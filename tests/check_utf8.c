/* SPDX-License-Identifier: ISC */
/*
 * check_utf8.c: the UTF-8 checks and the cleaning of outside text.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>

#include "utf8.h"

/* Well-formed and ill-formed sequences, one per row. */
static const struct {
	const char	*in;
	size_t		 len;
	size_t		 seq;	/* utf8_seq of the first byte */
	unsigned	 cp;
} seq_cases[] = {
	{ "A", 1, 1, 0x41 },
	{ "\xc3\xa9", 2, 2, 0xe9 },		/* é */
	{ "\xe2\x82\xac", 3, 3, 0x20ac },	/* € */
	{ "\xf0\x9f\x98\x80", 4, 4, 0x1f600 },
	{ "\xc3", 1, 0, 0 },			/* cut short */
	{ "\xe2\x82", 2, 0, 0 },
	{ "\xa9", 1, 0, 0 },			/* stray continuation */
	{ "\xc0\xaf", 2, 0, 0 },		/* overlong / */
	{ "\xe0\x80\xaf", 3, 0, 0 },		/* overlong / */
	{ "\xed\xa0\x80", 3, 0, 0 },		/* a surrogate */
	{ "\xf4\x90\x80\x80", 4, 0, 0 },	/* past U+10FFFF */
	{ "\xff", 1, 0, 0 },
	{ "\xc3\x41", 2, 0, 0 },		/* bad continuation */
};

START_TEST(test_seq)
{
	unsigned cp = 0xdead;
	size_t k;

	k = utf8_seq((const unsigned char *)seq_cases[_i].in,
	    seq_cases[_i].len, &cp);
	ck_assert_uint_eq(k, seq_cases[_i].seq);
	if (k != 0)
		ck_assert_uint_eq(cp, seq_cases[_i].cp);
	ck_assert_int_eq(utf8_valid(seq_cases[_i].in, seq_cases[_i].len),
	    k == seq_cases[_i].len);
}
END_TEST

START_TEST(test_valid)
{
	ck_assert_int_eq(utf8_valid("", 0), 1);
	ck_assert_int_eq(utf8_valid("caf\xc3\xa9", 5), 1);
	ck_assert_int_eq(utf8_valid("caf\xc3\xa9", 4), 0);	/* cut */
	ck_assert_int_eq(utf8_valid("a\0b", 3), 0);		/* NUL */
}
END_TEST

/* What utf8_clean makes of ill-formed text, room to spare. */
static const struct {
	const char	*in;
	size_t		 len;
	const char	*out;
} clean_cases[] = {
	{ "plain", 5, "plain" },
	{ "caf\xc3\xa9", 5, "caf\xc3\xa9" },
	{ "caf\xc3", 4, "caf\\xc3" },
	{ "\xff\xfe", 2, "\\xff\\xfe" },
	{ "a\0b", 3, "a\\x00b" },
	{ "\xed\xa0\x80z", 4, "\\xed\\xa0\\x80z" },
	{ "\xe2\x82\xac\xe2\x82", 5, "\xe2\x82\xac\\xe2\\x82" },
};

START_TEST(test_clean)
{
	char out[64];
	size_t n;

	n = utf8_clean(out, sizeof(out), clean_cases[_i].in,
	    clean_cases[_i].len);
	ck_assert_str_eq(out, clean_cases[_i].out);
	ck_assert_uint_eq(n, strlen(out));
	ck_assert_int_eq(utf8_valid(out, n), 1);
}
END_TEST

/*
 * A buffer too small cuts between characters: 1,015 'a' then eight 'é'
 * (the control argument that killed the master) into 1,024 bytes keeps
 * four whole 'é' and no half of a fifth.
 */
START_TEST(test_clean_cut)
{
	char in[1031], out[1024], tiny[4];
	size_t i, n;

	memset(in, 'a', 1015);
	for (i = 0; i < 8; i++)
		memcpy(in + 1015 + 2 * i, "\xc3\xa9", 2);
	n = utf8_clean(out, sizeof(out), in, sizeof(in));
	ck_assert_uint_eq(n, 1015 + 8);
	ck_assert_int_eq(utf8_valid(out, n), 1);
	ck_assert_int_eq(memcmp(out + 1015, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
	    8), 0);
	/* An escape is never cut either: "\xff" needs 5 bytes with NUL. */
	n = utf8_clean(tiny, sizeof(tiny), "\xff", 1);
	ck_assert_uint_eq(n, 0);
	ck_assert_str_eq(tiny, "");
	n = utf8_clean(tiny, sizeof(tiny), "ab\xe2\x82\xac", 5);
	ck_assert_str_eq(tiny, "ab");
	n = utf8_clean(tiny, 1, "ab", 2);
	ck_assert_str_eq(tiny, "");
}
END_TEST

/* Every string of two arbitrary bytes cleans to valid UTF-8. */
static size_t
fmt(char *dst, size_t sz, const char *f, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, f);
	n = utf8_format(dst, sz, f, ap);
	va_end(ap);
	return n;
}

/* utf8_format: an argument's bad byte comes out escaped, a long message
 * cut to the buffer. */
START_TEST(test_format)
{
	char out[16], big[64];

	ck_assert_uint_eq(fmt(out, sizeof(out), "id %s!", "a\xff"), 9);
	ck_assert_str_eq(out, "id a\\xff!");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_uint_eq(fmt(out, sizeof(out), "%s", big), 15);
	ck_assert_uint_eq(strlen(out), 15);
}
END_TEST

START_TEST(test_clean_all_pairs)
{
	char in[2], out[16];
	unsigned a, b;
	size_t n;

	for (a = 0; a < 256; a++)
		for (b = 0; b < 256; b++) {
			in[0] = (char)a;
			in[1] = (char)b;
			n = utf8_clean(out, sizeof(out), in, 2);
			ck_assert_int_eq(utf8_valid(out, n), 1);
			ck_assert_uint_ge(n, 2);
		}
}
END_TEST

/* Excerpts: controls and bytes that start no character become U+FFFD,
 * tab, line feed and carriage return stay, the cut falls between
 * characters. */
START_TEST(test_excerpt)
{
	char out[64];

	ck_assert_uint_eq(utf8_excerpt(out, sizeof(out), "ok\t\r\n", 5), 5);
	ck_assert_str_eq(out, "ok\t\r\n");
	ck_assert_uint_eq(utf8_excerpt(out, sizeof(out), "a\x01\x1b" "[0m\x7f",
	    7), 13);
	ck_assert_str_eq(out, "a\xef\xbf\xbd\xef\xbf\xbd" "[0m\xef\xbf\xbd");
	ck_assert_uint_eq(utf8_excerpt(out, sizeof(out), "\xff<\0>\xc2\x85",
	    6), 11);
	ck_assert_str_eq(out, "\xef\xbf\xbd<\xef\xbf\xbd>\xef\xbf\xbd");
	ck_assert_uint_eq(utf8_excerpt(out, sizeof(out), "\xc3\xa9t\xc3\xa9",
	    5), 5);
	ck_assert_int_eq(utf8_valid(out, 5), 1);
	/* Room for "ab" and not the replacement after it. */
	ck_assert_uint_eq(utf8_excerpt(out, 5, "ab\x01" "cd", 5), 2);
	ck_assert_str_eq(out, "ab");
	ck_assert_uint_eq(utf8_excerpt(out, 4, "a\xc3\xa9" "b", 4), 3);
	ck_assert_str_eq(out, "a\xc3\xa9");
	ck_assert_uint_eq(utf8_excerpt(out, 1, "abc", 3), 0);
	ck_assert_str_eq(out, "");
}
END_TEST

static Suite *
utf8_suite(void)
{
	Suite *s = suite_create("utf8");
	TCase *tc = tcase_create("utf8");

	tcase_set_timeout(tc, 10);
	tcase_add_loop_test(tc, test_seq, 0,
	    sizeof(seq_cases) / sizeof(seq_cases[0]));
	tcase_add_test(tc, test_valid);
	tcase_add_loop_test(tc, test_clean, 0,
	    sizeof(clean_cases) / sizeof(clean_cases[0]));
	tcase_add_test(tc, test_clean_cut);
	tcase_add_test(tc, test_clean_all_pairs);
	tcase_add_test(tc, test_format);
	tcase_add_test(tc, test_excerpt);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(utf8_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
