/* SPDX-License-Identifier: ISC */
/*
 * testutil.c: helpers the unit tests share; see testutil.h.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "testutil.h"

struct conf *
test_conf_parse(const char *yaml, size_t len)
{
	struct conf_errors errs = { NULL, 0 };
	struct conf *cf;
	int i;

	cf = conf_parse(yaml, len, "test", &errs);
	for (i = 0; i < errs.n; i++)
		fprintf(stderr, "test config: %s\n", errs.msgs[i]);
	conf_errors_free(&errs);
	ck_assert_ptr_nonnull(cf);
	return cf;
}

int
test_headers(const char *text, struct header_kv *kv, int max, char **bufp)
{
	char *buf, *line, *next, *colon, *v;
	int n = 0;

	ck_assert_ptr_nonnull(buf = strdup(text));
	*bufp = buf;
	for (line = buf; *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		else
			next = line + strlen(line);
		ck_assert_ptr_nonnull(colon = strchr(line, ':'));
		*colon = '\0';
		v = colon + 1;
		while (*v == ' ')
			v++;
		ck_assert_int_lt(n, max);
		kv[n].name = line;
		kv[n].value = v;
		n++;
	}
	return n;
}
