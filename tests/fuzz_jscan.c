/* SPDX-License-Identifier: ISC */
/*
 * fuzz_jscan.c: a libFuzzer target holding workers/jscan.c, the edge's
 * one-pass JSON scanner, against jansson (tests/jscan_ref.c).
 *
 * The input's first byte picks a path among the ones the presets and the
 * keys use; the rest is the body.  On every input jscan and json_loadb
 * must both accept or both refuse, and the value at the path must be of
 * the same kind with the same bytes (a string, decoded) or number; a scan
 * without a path must accept the same.  A disagreement aborts, printing
 * why.
 *
 * Run: ./fuzz_jscan -max_total_time=240 NEW_DIR tests/fuzz-corpus-jscan
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "jscan.h"
#include "jscan_ref.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static const char *paths[] = { "type", "event.type", "action", "id",
    "event", "data.object.id", "a.b.c", "" };

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jscan_val v;
	const char *path;
	char why[256];
	int ok;

	if (size == 0)
		return 0;
	path = paths[data[0] % (sizeof(paths) / sizeof(paths[0]))];
	data++;
	size--;
	if (!jscan_ref_agree(data, size, path, why, sizeof(why))) {
		fprintf(stderr, "fuzz_jscan: path \"%s\": %s\n", path, why);
		abort();
	}
	ok = jscan(data, size, path, &v);
	if (jscan(data, size, NULL, &v) != ok || v.kind != JSCAN_NONE) {
		fprintf(stderr, "fuzz_jscan: the path changed the verdict\n");
		abort();
	}
	return 0;
}
