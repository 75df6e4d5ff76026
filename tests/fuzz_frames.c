/* SPDX-License-Identifier: ISC */
/*
 * fuzz_frames.c: a libFuzzer target for the frame readers the master runs
 * on what a deliver process sends it, fed the way a child feeds them.
 *
 * The input is the byte stream a (fake, hostile) child writes on its
 * channel: it is cut into frames by msg_decode_header, as the master's
 * channel cuts it (a header that cannot be valid ends the stream, as it
 * recycles the child), and each whole frame goes to the reader the master
 * uses for its type: job_outcome_decode, batch_outcome_decode,
 * claim_outcome_decode (common/job.c).  Checked on the way: a reader that
 * accepts a frame read all of it, and every detail it hands the master
 * is well-formed UTF-8 within its bound (common/utf8.h), whatever bytes
 * the child wrote.  The master's own readers of edge frames (hello,
 * hook_submit, quarantine verdicts in daemon/supervisor.c and writer.c)
 * are driven by tests/e2e/test_hostile.py's fake edge instead.
 *
 * Build: ./configure CC=clang --enable-fuzz && make tests/fuzz_frames
 * Run: ./tests/fuzz_frames -max_total_time=120 NEW_DIR
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "log.h"
#include "msg.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check_detail(const char *d)
{
	size_t n = strnlen(d, JOB_DETAIL_MAX);

	if (n == JOB_DETAIL_MAX || !utf8_valid(d, n))
		abort();
}

static void
read_frame(struct msg *m)
{
	struct job_outcome jo;
	struct batch_outcome bo;
	struct claim_outcome co;
	uint32_t i;

	switch (m->type) {
	case MSG_DELIVER_OUTCOME:
		if (job_outcome_decode(m, &jo) == 0) {
			if (m->rpos != m->len || jo.result >= JOB_RESULT_MAX)
				abort();
			check_detail(jo.detail);
		}
		break;
	case MSG_BATCH_OUTCOME:
		if (batch_outcome_decode(m, &bo) == 0) {
			if (m->rpos != m->len || bo.n == 0 ||
			    bo.n > BATCH_MAX_ENTRIES)
				abort();
			for (i = 0; i < bo.n; i++)
				check_detail(bo.r[i].detail);
			batch_outcome_free(&bo);
		}
		break;
	case MSG_CLAIM_OUTCOME:
		if (claim_outcome_decode(m, &co) == 0) {
			if (m->rpos != m->len)
				abort();
			check_detail(co.detail);
			claim_outcome_free(&co);
		}
		break;
	default:
		break;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	struct msg m;
	size_t off = 0;

	if (!init) {
		log_init("fuzz_frames", 1);
		log_setlevel(LOG_LEVEL_ERROR);
		init = 1;
	}
	while (size - off >= MSG_HDR_LEN) {
		memset(&m, 0, sizeof(m));
		if (msg_decode_header(data + off, &m) == -1)
			break;		/* the master recycles the child */
		if (m.len > size - off - MSG_HDR_LEN)
			break;		/* the rest never arrives */
		/* A passed descriptor is not fuzzed: the frame says none. */
		m.flags &= ~MSG_F_FD;
		m.fd = -1;
		if ((m.buf = malloc(m.len + 1)) == NULL)
			abort();
		memcpy(m.buf, data + off + MSG_HDR_LEN, m.len);
		off += MSG_HDR_LEN + m.len;
		read_frame(&m);
		free(m.buf);
	}
	return 0;
}
