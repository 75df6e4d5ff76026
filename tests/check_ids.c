/* SPDX-License-Identifier: ISC */
/*
 * check_ids.c: UUIDv7 layout and ordering, ULID encoding.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "ids.h"

static uint64_t fake_now;

static uint64_t
fake_clock(void)
{
	return fake_now;
}

static void
zero_random(void *p, size_t n)
{
	memset(p, 0xff, n);	/* worst case for the counter start */
}

/* A UUIDv7's time: its first 48 bits, big-endian. */
static uint64_t
time_ms(const unsigned char in[UUID_LEN])
{
	uint64_t ms = 0;
	int i;

	for (i = 0; i < 6; i++)
		ms = (ms << 8) | in[i];
	return ms;
}

START_TEST(test_layout)
{
	unsigned char id[UUID_LEN], back[UUID_LEN];
	char s[UUID_STRLEN + 1];

	fake_now = 0x0123456789abULL;
	ids_set_clock(fake_clock);
	uuidv7_new(id);
	ck_assert_uint_eq(id[6] >> 4, 7);		/* version */
	ck_assert_uint_eq(id[8] >> 6, 2);		/* variant 10 */
	ck_assert(time_ms(id) == 0x0123456789abULL);
	uuid_format(id, s);
	ck_assert_uint_eq(strlen(s), 36);
	ck_assert_int_eq(strncmp(s, "01234567-89ab-7", 15), 0);
	ck_assert_int_eq(uuid_parse(s, back), 0);
	ck_assert_int_eq(memcmp(id, back, UUID_LEN), 0);
	ck_assert_int_eq(uuid_parse("01234567-89ab-7xyz-8000-000000000000",
	    back), -1);
	ck_assert_int_eq(uuid_parse("0123456789ab", back), -1);
	ids_set_clock(NULL);
}
END_TEST

/* A seq's low 24 bits in the id's last three bytes: the version, the
 * variant, the time, the counter and the 38 random bits before them stay
 * as they were. */
START_TEST(test_seq_in_id)
{
	unsigned char id[UUID_LEN], was[UUID_LEN];

	uuidv7_new(id);
	memcpy(was, id, UUID_LEN);
	uuid_put_seq(id, 0x0123456789abcdefULL);
	ck_assert_uint_eq(uuid_seq_low(id), 0xabcdef);
	ck_assert_int_eq(memcmp(id, was, 13), 0);
	ck_assert_uint_eq(id[6] >> 4, 7);
	ck_assert_uint_eq(id[8] >> 6, 2);
	uuid_put_seq(id, 1);
	ck_assert_uint_eq(uuid_seq_low(id), 1);
	ck_assert_uint_eq(id[13], 0);
	ck_assert_uint_eq(id[14], 0);
	ck_assert_uint_eq(id[15], 1);
}
END_TEST

/* Ids sort in the order made: same millisecond, a backward clock step,
 * counter wrap, and with a random source that starts the counter high. */
START_TEST(test_ordering)
{
	unsigned char prev[UUID_LEN], cur[UUID_LEN];
	char a[UUID_STRLEN + 1], b[UUID_STRLEN + 1];
	int i;

	ids_set_clock(fake_clock);
	if (_i == 1)
		ids_set_random(zero_random);
	fake_now = 1700000000000ULL;
	uuidv7_new(prev);
	for (i = 0; i < 20000; i++) {
		if (i % 7000 == 6999)
			fake_now -= 5;		/* clock steps back */
		else if (i % 3 == 0)
			fake_now++;
		uuidv7_new(cur);
		uuid_format(prev, a);
		uuid_format(cur, b);
		ck_assert_msg(memcmp(prev, cur, UUID_LEN) < 0,
		    "id %d out of order: %s then %s", i, a, b);
		ck_assert_msg(strcmp(a, b) < 0, "string order at %d", i);
		memcpy(prev, cur, UUID_LEN);
	}
	/* 5000 ids in one millisecond wrap the 12-bit counter. */
	for (i = 0; i < 5000; i++) {
		uuidv7_new(cur);
		ck_assert(memcmp(prev, cur, UUID_LEN) < 0);
		memcpy(prev, cur, UUID_LEN);
	}
	ids_set_clock(NULL);
	ids_set_random(NULL);
}
END_TEST

START_TEST(test_ulid)
{
	unsigned char r[10];
	char s[ULID_STRLEN + 1];

	memset(r, 0, sizeof(r));
	ulid_format(0, r, s);
	ck_assert_str_eq(s, "00000000000000000000000000");
	memset(r, 0xff, sizeof(r));
	ulid_format(0xffffffffffffULL, r, s);
	ck_assert_str_eq(s, "7ZZZZZZZZZZZZZZZZZZZZZZZZZ");
	/* The time part: 1469918176385 ms is 01ARYZ6S41 (ULID spec). */
	memset(r, 0, sizeof(r));
	ulid_format(1469918176385ULL, r, s);
	ck_assert_int_eq(strncmp(s, "01ARYZ6S41", 10), 0);
}
END_TEST

static Suite *
ids_suite(void)
{
	Suite *s = suite_create("ids");
	TCase *tc = tcase_create("ids");

	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_seq_in_id);
	tcase_add_loop_test(tc, test_ordering, 0, 2);
	tcase_add_test(tc, test_ulid);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(ids_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
