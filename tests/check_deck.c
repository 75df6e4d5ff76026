/* SPDX-License-Identifier: ISC */
/*
 * check_deck.c: the on-deck page shared by the master and a deliver
 * process: offer, take and cancel, and that the process cannot change
 * the page's size under the master's mapping.
 */
#include "config.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "deck.h"

START_TEST(test_take_cancel)
{
	struct deck *dk, *child;
	uint64_t started = 0;
	int fd;

	ck_assert_int_ne(fd = deck_create(&dk), -1);
	ck_assert_ptr_nonnull(child = deck_map(dup(fd)));
	deck_offer(dk, 7);
	ck_assert_int_eq(deck_offered(child, 7), 1);
	ck_assert_int_eq(deck_take(child, 7, 1234), 1);
	ck_assert_int_eq(deck_cancel(dk, 7, &started), 0);	/* started */
	ck_assert_uint_eq(started, 1234);
	deck_offer(dk, 8);
	ck_assert_int_eq(deck_cancel(dk, 8, &started), 1);	/* taken back */
	ck_assert_int_eq(deck_take(child, 8, 99), 0);
	deck_unmap(child);
	deck_unmap(dk);
	close(fd);
}
END_TEST

/*
 * A deliver process holds the page's descriptor.  Truncating it would
 * make the master's next touch of its mapping a SIGBUS; growing it would
 * let the process pin memory.  The page is sealed against both (and
 * against removing the seals), so both fail and the master reads on.
 */
START_TEST(test_sealed)
{
	struct deck *dk;
	struct stat sb;
	int fd, seals;

	ck_assert_int_ne(fd = deck_create(&dk), -1);
	ck_assert_int_eq(ftruncate(fd, 0), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(ftruncate(fd, 1 << 20), -1);
	ck_assert_int_eq(errno, EPERM);
	seals = fcntl(fd, F_GET_SEALS);
	ck_assert_int_eq(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
	    F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, 0), -1);
	ck_assert_int_eq(fstat(fd, &sb), 0);
	ck_assert_int_eq(sb.st_size, sizeof(*dk));
	deck_offer(dk, 5);			/* the master's touch */
	ck_assert_int_eq(deck_offered(dk, 5), 1);
	deck_unmap(dk);
	close(fd);
}
END_TEST

static Suite *
deck_suite(void)
{
	Suite *s = suite_create("deck");
	TCase *tc = tcase_create("deck");

	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_take_cancel);
	tcase_add_test(tc, test_sealed);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(deck_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
