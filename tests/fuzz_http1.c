/* SPDX-License-Identifier: ISC */
/*
 * fuzz_http1.c: a libFuzzer target for the http sink's answer parser
 * (workers/http1.c), which reads what an HTTP server sends a deliver
 * process.
 *
 * The input is one byte of framing and then the answer's bytes as the
 * server sends them.  The first byte's low 6 bits are the size of the
 * pieces the bytes are fed in (0: all at once), since the network may cut
 * anywhere; its top two bits pick the body cap (16, 512, 64 KiB, 1 MiB).
 * After the last byte the connection ends (http1_parse_eof).  Checked on
 * the way: no piece is taken past its end, what is kept for the log stays
 * within its bounds and printable, a finished answer has a status of three
 * digits, and one cut at the cap is never kept alive.
 *
 * Build: ./configure CC=clang --enable-fuzz && make tests/fuzz_http1
 * Run: ./tests/fuzz_http1 -max_total_time=120 NEW_DIR
 *   $srcdir/tests/fuzz-corpus-http1
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http1.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t caps[] = { 16, 512, 65536, 1 << 20 };
	static struct http1_parser p;
	struct http1_answer a;
	enum http1_state st = HTTP1_MORE;
	size_t step, off = 0, k, used;

	if (size < 1)
		return 0;
	step = data[0] & 0x3f;
	memset(&a, 0, sizeof(a));
	http1_parse_init(&p, &a, caps[data[0] >> 6]);
	data++;
	size--;
	while (off < size && st == HTTP1_MORE) {
		k = step == 0 || size - off < step ? size - off : step;
		st = http1_parse(&p, (const char *)data + off, k, &used);
		if (used > k)
			abort();
		off += used;
		if (st == HTTP1_MORE && used != k)
			abort();	/* wanting more, it takes it all */
	}
	if (st == HTTP1_MORE)
		st = http1_parse_eof(&p);
	/* The kept bytes are the body's, raw (the sink cleans them). */
	if (a.keeplen > HTTP1_KEEP_MAX ||
	    strlen(a.retry_after) > HTTP1_VALUE_MAX)
		abort();
	if (st == HTTP1_DONE && (a.status < 0 || a.status > 999))
		abort();
	if (st == HTTP1_DONE && a.capped && http1_parse_keep_alive(&p))
		abort();
	if (st == HTTP1_BAD && http1_parse_error(&p)[0] == '\0')
		abort();
	return 0;
}
