/* SPDX-License-Identifier: ISC */
/*
 * check_fair.c: deficit round-robin of a scan's page over tenants
 * (daemon/dispatch/fair.c): shares, carry-over, and the tenant a page did not
 * reach going first in the next one.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fair.h"

#define TIMEOUT	10
#define MAXT	64

static const char *const names[MAXT] = {
	"t00", "t01", "t02", "t03", "t04", "t05", "t06", "t07", "t08", "t09",
	"t10", "t11", "t12", "t13", "t14", "t15", "t16", "t17", "t18", "t19",
	"t20", "t21", "t22", "t23", "t24", "t25", "t26", "t27", "t28", "t29",
	"t30", "t31", "t32", "t33", "t34", "t35", "t36", "t37", "t38", "t39",
	"t40", "t41", "t42", "t43", "t44", "t45", "t46", "t47", "t48", "t49",
	"t50", "t51", "t52", "t53", "t54", "t55", "t56", "t57", "t58", "t59",
	"t60", "t61", "t62", "t63",
};

/* What each tenant has due; the claim takes min(want, left). */
struct due {
	uint32_t	left[MAXT];
	uint32_t	got[MAXT];
	uint32_t	calls[MAXT];
};

static uint32_t	claim(struct fair_tenant *, uint32_t, void *);

static uint32_t
claim(struct fair_tenant *t, uint32_t want, void *arg)
{
	struct due *d = arg;
	size_t i = (size_t)(const char *const *)t->arg - (size_t)names;
	uint32_t n;

	i /= sizeof(names[0]);
	n = d->left[i] < want ? d->left[i] : want;
	d->left[i] -= n;
	d->got[i] += n;
	d->calls[i]++;
	return n;
}

static void
setup(struct fair_tenant *ts, size_t n)
{
	size_t i;

	memset(ts, 0, n * sizeof(*ts));
	for (i = 0; i < n; i++) {
		ts[i].name = names[i];
		ts[i].arg = (void *)&names[i];
	}
}

static const struct {
	const char	*name;
	size_t		 n;
	uint32_t	 due[MAXT];
	uint32_t	 due_all;	/* non-zero: every tenant has it */
	uint32_t	 page;
	uint32_t	 want[MAXT];
	size_t		 next;
} pages[] = {
	{ "equal shares", 3, { 100, 100, 100 }, 0, 30, { 10, 10, 10 }, 3 },
	{ "carry-over", 3, { 2, 100, 100 }, 0, 30, { 2, 14, 14 }, 3 },
	{ "carry-over in the middle", 3, { 100, 2, 100 }, 0, 30,
	    { 14, 2, 14 }, 3 },
	{ "two small", 4, { 1, 3, 100, 100 }, 0, 20, { 1, 3, 8, 8 }, 4 },
	{ "remainder", 3, { 100, 100, 100 }, 0, 31, { 11, 10, 10 }, 1 },
	{ "page smaller than tenants", 50, { 0 }, 5, 10,
	    { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 }, 10 },
	{ "one tenant", 1, { 5 }, 0, 30, { 5 }, 1 },
	{ "nothing due", 3, { 0, 0, 0 }, 0, 30, { 0, 0, 0 }, 3 },
	{ "page 0", 3, { 9, 9, 9 }, 0, 0, { 0, 0, 0 }, 3 },
	{ "less due than the page", 3, { 3, 4, 5 }, 0, 30, { 3, 4, 5 }, 3 },
	{ "four over three", 3, { 100, 100, 100 }, 0, 4, { 2, 1, 1 }, 1 },
};

START_TEST(test_page)
{
	struct fair_tenant ts[MAXT];
	struct due d;
	size_t i, next, n = pages[_i].n;
	uint32_t total = 0, got;

	memset(&d, 0, sizeof(d));
	setup(ts, n);
	for (i = 0; i < n; i++)
		d.left[i] = pages[_i].due_all ? pages[_i].due_all :
		    pages[_i].due[i];
	got = fair_page(ts, n, pages[_i].page, claim, &d, &next);
	for (i = 0; i < n; i++) {
		ck_assert_msg(d.got[i] == pages[_i].want[i], "%s: tenant %zu "
		    "got %u, want %u", pages[_i].name, i, d.got[i],
		    pages[_i].want[i]);
		total += d.got[i];
	}
	ck_assert_uint_eq(got, total);
	ck_assert_msg(next == pages[_i].next, "%s: next %zu, want %zu",
	    pages[_i].name, next, pages[_i].next);
}
END_TEST

/* A page never claims more than its size, and stops short of it only when
 * every tenant's due rows are taken. */
START_TEST(test_never_over)
{
	struct fair_tenant ts[MAXT];
	struct due d;
	size_t i, next, n;
	uint32_t page, total, left;

	for (n = 1; n <= 20; n++)
		for (page = 0; page <= 64; page++) {
			memset(&d, 0, sizeof(d));
			setup(ts, n);
			for (i = 0; i < n; i++)
				d.left[i] = (uint32_t)(i * 7 % 11);
			total = fair_page(ts, n, page, claim, &d, &next);
			ck_assert_uint_le(total, page);
			for (i = 0, left = 0; i < n; i++)
				left += d.left[i];
			ck_assert(total == page || left == 0);
		}
}
END_TEST

/*
 * Pages in a row, each starting at the tenant the last did not reach (as
 * dispatch does it): every tenant with a backlog gets the same over a full
 * round, whatever the page size.
 */
static const struct {
	size_t		n;
	uint32_t	page;
	int		pages;
	uint32_t	each;
} rounds[] = {
	{ 3, 4, 3, 4 },
	{ 50, 10, 5, 1 },
	{ 50, 10, 10, 2 },
	{ 7, 3, 7, 3 },
	{ 5, 7, 5, 7 },
	{ 4, 30, 2, 15 },
};

START_TEST(test_rounds)
{
	struct fair_tenant ts[MAXT], rot[MAXT];
	struct due d;
	char first[8] = "";
	size_t i, next, start, n = rounds[_i].n;
	int p;

	memset(&d, 0, sizeof(d));
	setup(ts, n);
	for (i = 0; i < n; i++)
		d.left[i] = 1000000;
	for (p = 0; p < rounds[_i].pages; p++) {
		start = fair_start(ts, n, first);
		for (i = 0; i < n; i++)
			rot[i] = ts[(start + i) % n];
		ck_assert_uint_eq(fair_page(rot, n, rounds[_i].page, claim, &d,
		    &next), rounds[_i].page);
		first[0] = '\0';
		if (next < n)
			snprintf(first, sizeof(first), "%s", rot[next].name);
	}
	for (i = 0; i < n; i++)
		ck_assert_msg(d.got[i] == rounds[_i].each, "n %zu page %u: "
		    "tenant %zu got %u over %d pages, want %u", n,
		    rounds[_i].page, i, d.got[i], rounds[_i].pages,
		    rounds[_i].each);
}
END_TEST

START_TEST(test_start)
{
	struct fair_tenant ts[3];

	memset(ts, 0, sizeof(ts));
	ts[0].name = "a";
	ts[1].name = "c";
	ts[2].name = "e";
	ck_assert_uint_eq(fair_start(ts, 3, NULL), 0);
	ck_assert_uint_eq(fair_start(ts, 3, ""), 0);
	ck_assert_uint_eq(fair_start(ts, 3, "a"), 0);
	ck_assert_uint_eq(fair_start(ts, 3, "c"), 1);
	ck_assert_uint_eq(fair_start(ts, 3, "d"), 2);	/* c left */
	ck_assert_uint_eq(fair_start(ts, 3, "e"), 2);
	ck_assert_uint_eq(fair_start(ts, 3, "f"), 0);	/* wraps */
	ck_assert_uint_eq(fair_start(ts, 0, "f"), 0);
}
END_TEST

static Suite *
fair_suite(void)
{
	Suite *s = suite_create("fair");
	TCase *tc = tcase_create("drr");

	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_loop_test(tc, test_page, 0,
	    sizeof(pages) / sizeof(pages[0]));
	tcase_add_test(tc, test_never_over);
	tcase_add_loop_test(tc, test_rounds, 0,
	    sizeof(rounds) / sizeof(rounds[0]));
	tcase_add_test(tc, test_start);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(fair_suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
