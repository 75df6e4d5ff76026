/* SPDX-License-Identifier: ISC */
/*
 * testutil.h: helpers the unit tests of the edge's modules share.
 */
#ifndef ANKUSA_TESTUTIL_H
#define ANKUSA_TESTUTIL_H

#include <stddef.h>

struct conf;
struct header_kv;

/* yaml[0..len) parsed as a config (its errors to stderr); the test fails
 * if it does not parse. */
struct conf	*test_conf_parse(const char *yaml, size_t len);
/* "Name: value" lines of text into at most max pairs; *bufp is the copy
 * they point into (the caller frees it).  The number of pairs. */
int		 test_headers(const char *text, struct header_kv *kv, int max,
		    char **bufp);

#endif
