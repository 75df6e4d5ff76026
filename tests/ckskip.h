/* SPDX-License-Identifier: ISC */
/*
 * ckskip.h: a Check case that cannot run here says so.
 *
 * Check has no skip: a case that returns has passed.  CK_SKIP(why) prints
 * one line "SKIP check_FILE:CASE: why" to stderr, which make check keeps
 * in the program's log (tests/check_FILE.log), and returns from the case.
 * scripts/test counts every such line as a skip and takes it off the
 * program's passes, so a skipped case is never counted as passed; CI
 * fails on any skip.  For what the machine lacks (a tool, root), never
 * for a result the case did not like.
 */
#ifndef ANKUSA_CKSKIP_H
#define ANKUSA_CKSKIP_H

#include <stdio.h>
#include <string.h>

static inline void
ck_skip_line(const char *file, const char *func, const char *why)
{
	const char *base = strrchr(file, '/');
	size_t n, fn;

	base = base != NULL ? base + 1 : file;
	n = strcspn(base, ".");
	/* START_TEST(name) defines name_fn since Check 0.13. */
	fn = strlen(func);
	if (fn > 3 && strcmp(func + fn - 3, "_fn") == 0)
		fn -= 3;
	fprintf(stderr, "\nSKIP %.*s:%.*s: %s\n", (int)n, base, (int)fn, func,
	    why);
	fflush(stderr);
}

#define CK_SKIP(why) do {						\
	ck_skip_line(__FILE__, __func__, (why));			\
	return;								\
} while (0)

#endif
