/* SPDX-License-Identifier: ISC */
/*
 * jscan_ref.h: workers/jscan.c held against jansson, for tests/check_jscan.c
 * and tests/fuzz_jscan.c.
 */
#ifndef ANKUSA_JSCAN_REF_H
#define ANKUSA_JSCAN_REF_H

#include <stddef.h>

/*
 * Whether jscan and json_loadb(buf, len, 0) with keys.c's former walk of
 * path agree on buf: both accept or both refuse, and the value at path is
 * of one kind (a string, an integer, another value, none) and, for a
 * string or an integer, the same bytes or number.  When they do not, why
 * (at least 128 bytes) says how.
 */
int	jscan_ref_agree(const void *buf, size_t len, const char *path,
	    char *why, size_t whylen);

#endif
