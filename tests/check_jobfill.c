/* SPDX-License-Identifier: ISC */
/*
 * check_jobfill.c: an attempt's fields from its row and its hook
 * (daemon/pipeline/pipeline_jobfill.c), for a single job and a batch entry
 * alike, and the queue message v1 (workers/qmsg.c) a batch entry becomes: the
 * replay id of a replayed row is in the job, the entry, the message's replay_id
 * and its ankusa_replay_id attribute; a row that is no replay has none.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "ids.h"
#include "msg.h"
#include "pipeline_jobfill.h"
#include "qmsg.h"

static const struct {
	const char	*name;
	const char	*replay;	/* the row's, NULL: not a replay */
} replays[] = {
	{ "no replay", NULL },
	{ "a replay", "01890a5d-ac96-774b-bcce-b302099a8058" },
};

static struct store_header hdrs[] = {
	{ "x-github-event", "push" },
};

static void
sample(struct drow *r, struct store_hook_rec *rec, const char *replay)
{
	memset(r, 0, sizeof(*r));
	memset(rec, 0, sizeof(*rec));
	ck_assert_int_eq(uuid_parse("01890a5d-ac96-774b-bcce-b302099a8057",
	    rec->hook.id), 0);
	rec->hook.tenant = "acme";
	rec->hook.source = "github";
	rec->hook.received_at = 1700000000123ULL;
	rec->hook.content_type = "application/json";
	rec->hook.headers = hdrs;
	rec->hook.nheaders = 1;
	rec->hook.body = "{\"a\":1}";
	rec->hook.body_len = 7;
	rec->claim_ref = "";
	rec->hook.verification = VERIFICATION_FLAGGED;
	memset(rec->hook.trace, 0x3c, TRACE_CTX_LEN);
	rec->hook.tracestate = "rojo=1";
	memset(rec->hook.sha256, 0xd5, sizeof(rec->hook.sha256));
	r->row.attempts = 2;
	if (replay != NULL)
		ck_assert_int_eq(uuid_parse(replay, r->row.replay_id), 0);
}

START_TEST(test_replay_id)
{
	const char *want = replays[_i].replay;
	struct drow r;
	struct store_hook_rec rec;
	struct jobfill_ids ids, eids;
	struct job j;
	struct batch_entry e;
	struct qmsg q;
	char err[64], field[128];
	int k, found = 0;

	sample(&r, &rec, want);
	memset(&j, 0, sizeof(j));
	memset(&e, 0, sizeof(e));
	jobfill_job(&j, &ids, &r, &rec);
	jobfill_entry(&e, &eids, &r, &rec);
	ck_assert_str_eq(j.hook_id, "01890a5d-ac96-774b-bcce-b302099a8057");
	ck_assert_str_eq(e.hook_id, j.hook_id);
	ck_assert_str_eq(j.replay_id, want != NULL ? want : "");
	ck_assert_str_eq(e.replay_id, j.replay_id);
	ck_assert_uint_eq(j.attempt, 3);
	ck_assert_uint_eq(e.attempt, 3);
	/* The hook's verification, trace context and digest, as stored. */
	ck_assert_uint_eq(j.verification, VERIFICATION_FLAGGED);
	ck_assert_uint_eq(e.verification, VERIFICATION_FLAGGED);
	ck_assert_int_eq(memcmp(j.trace, rec.hook.trace, TRACE_CTX_LEN), 0);
	ck_assert_int_eq(memcmp(e.trace, rec.hook.trace, TRACE_CTX_LEN), 0);
	ck_assert_str_eq(j.tracestate, "rojo=1");
	ck_assert_str_eq(e.tracestate, "rojo=1");
	ck_assert_int_eq(memcmp(j.sha256, rec.hook.sha256, 32), 0);

	ck_assert_int_eq(qmsg_build(&q, &e, 65536, err, sizeof(err)), 0);
	if (want != NULL)
		snprintf(field, sizeof(field), "\"replay_id\":\"%s\"", want);
	else
		snprintf(field, sizeof(field), "\"replay_id\":null");
	ck_assert_msg(strstr(q.json, field) != NULL, "%s not in %s", field,
	    q.json);
	for (k = 0; k < q.nattrs; k++)
		if (strcmp(q.attrs[k].name, "ankusa_replay_id") == 0) {
			ck_assert_ptr_nonnull(want);
			ck_assert_str_eq(q.attrs[k].value, want);
			found++;
		}
	ck_assert_int_eq(found, want != NULL ? 1 : 0);
	qmsg_free(&q);
}
END_TEST

static Suite *
jobfill_suite(void)
{
	Suite *s = suite_create("jobfill");
	TCase *tc = tcase_create("fields");

	tcase_add_loop_test(tc, test_replay_id, 0,
	    sizeof(replays) / sizeof(replays[0]));
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(jobfill_suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
