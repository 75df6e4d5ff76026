/* SPDX-License-Identifier: ISC */
/*
 * jscan.h: one value read from a JSON text in one pass, without a tree and
 * without allocating.
 *
 * jscan accepts exactly the texts that jansson's json_loadb(buf, len, 0,
 * NULL) accepts and refuses the others: an object or an array at the top,
 * nothing but whitespace (space, tab, CR, LF) after it; strings of valid
 * UTF-8 (no overlong form, no surrogate, nothing above U+10FFFF) without a
 * control character below 0x20, escapes as RFC 8259 with a high surrogate
 * always followed by its low one and no "\u0000"; integers within a signed
 * 64-bit json_int_t; reals that strtod does not take to infinity; at most
 * JSCAN_MAX_DEPTH values nested, a scalar counting as one level (jansson's
 * JSON_PARSER_MAX_DEPTH).  Duplicate member names are allowed and the last
 * one wins, as json_object_set does in the tree.  tests/check_jscan.c
 * compares the two over a generated and mutated corpus, and
 * tests/fuzz_jscan.c under libFuzzer.
 *
 * The path is keys.h's: member names separated by dots, matched byte for
 * byte against the names with their escapes decoded; the top must be an
 * object, and each step but the last must reach an object.
 */
#ifndef ANKUSA_JSCAN_H
#define ANKUSA_JSCAN_H

#include <stddef.h>

#define JSCAN_MAX_DEPTH	2048	/* as jansson's JSON_PARSER_MAX_DEPTH */

enum jscan_kind {
	JSCAN_NONE,		/* no such member */
	JSCAN_STRING,
	JSCAN_INTEGER,
	JSCAN_OTHER		/* a real, true, false, null, array, object */
};

struct jscan_val {
	enum jscan_kind	 kind;
	const char	*raw;		/* a string's bytes between its quotes */
	size_t		 rawlen;
	int		 escaped;	/* raw holds a backslash escape */
	long long	 integer;	/* an integer's value */
};

/*
 * Scan len bytes of buf (buf may be NULL when len is 0): 1 when the text is
 * JSON as described above, with *v the value at path (kind JSCAN_NONE when
 * there is none, or when path is NULL), or 0 when it is not JSON (*v then
 * kind JSCAN_NONE).  A string's raw bytes point into buf.
 */
int	jscan(const void *buf, size_t len, const char *path,
	    struct jscan_val *v);

/*
 * A string's raw bytes from a successful jscan, decoded into out (room for
 * rawlen bytes always suffices: no escape decodes to more bytes than it
 * takes).  Returns the decoded length.
 */
size_t	jscan_unescape(const char *raw, size_t rawlen, char *out);

#endif
