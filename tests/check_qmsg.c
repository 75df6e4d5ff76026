/* SPDX-License-Identifier: ISC */
/*
 * check_qmsg.c: Queue message v1 (workers/qmsg.c) and the pure parts of
 * the sqs sink (classification, MD5).
 *
 * The exact bytes of a message with every field set; nulls and the hook
 * id as idempotency key without a dedupe key; the claim form above
 * inline_max_bytes and its refusal without a reference; header names
 * lower-cased, repeats joined; non-ASCII and control bytes escaped; the
 * attribute set with and without the optional ones.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "qmsg.h"
#include "sink.h"

static struct header_kv hdrs[] = {
	{ "X-GitHub-Event", "push" },
	{ "user-agent", "GitHub-Hookshot/1" },
	{ "x-github-event", "ping" },
};

/* The specification's example: trace id, parent id, sampled. */
static const unsigned char sample_trace[TRACE_CTX_LEN] = {
	0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92,
	0x9d, 0x0e, 0x0e, 0x47, 0x36, 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9,
	0x02, 0xb7, 0x01
};

static void
sample(struct batch_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->id = 7;
	e->hook_id = "01890a5d-ac96-774b-bcce-b302099a8057";
	e->tenant = "acme";
	e->source = "github";
	e->received_at = 1700000000123ULL;
	e->content_type = "application/json";
	e->headers = hdrs;
	e->nheaders = 3;
	e->dedupe_key = "delivery-42";
	e->replay_id = "";
	e->attempt = 1;
	e->claim_ref = "";
	e->order_key = "";
	memcpy(e->trace, sample_trace, sizeof(e->trace));
	memset(e->span, 0xab, sizeof(e->span));
	e->tracestate = "";
	e->body = (const unsigned char *)"{\"a\":1}";
	e->bodylen = 7;
}

START_TEST(test_exact)
{
	struct batch_entry e;
	struct qmsg q;
	char err[64];

	sample(&e);
	ck_assert_int_eq(qmsg_build(&q, &e, 65536, err, sizeof(err)), 0);
	ck_assert_str_eq(q.json,
	    "{\"v\":1,\"id\":\"01890a5d-ac96-774b-bcce-b302099a8057\","
	    "\"source_id\":\"github\",\"tenant_id\":\"acme\","
	    "\"received_at\":1700000000123,"
	    "\"content_type\":\"application/json\",\"size\":7,"
	    "\"sha256\":\"015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5ceb"
	    "eae62276a97f862\","
	    "\"dedupe_key\":\"delivery-42\",\"replay_id\":null,"
	    "\"idempotency_key\":\"acme:github:delivery-42\","
	    "\"headers\":{\"x-github-event\":\"push, ping\","
	    "\"user-agent\":\"GitHub-Hookshot/1\"},"
	    "\"body_base64\":\"eyJhIjoxfQ==\"}");
	ck_assert_uint_eq(q.jsonlen, strlen(q.json));
	ck_assert_int_eq(q.by_claim, 0);
	ck_assert_int_eq(q.nattrs, 8);
	ck_assert_str_eq(q.attrs[0].name, "ankusa_id");
	ck_assert_str_eq(q.attrs[0].value, e.hook_id);
	ck_assert_str_eq(q.attrs[1].name, "ankusa_source_id");
	ck_assert_str_eq(q.attrs[1].value, "github");
	ck_assert_str_eq(q.attrs[2].name, "ankusa_tenant_id");
	ck_assert_str_eq(q.attrs[2].value, "acme");
	ck_assert_str_eq(q.attrs[3].name, "ankusa_message_version");
	ck_assert_str_eq(q.attrs[3].value, "1");
	ck_assert_str_eq(q.attrs[4].name, "ankusa_idempotency_key");
	ck_assert_str_eq(q.attrs[4].value, "acme:github:delivery-42");
	ck_assert_str_eq(q.attrs[5].name, "content_type");
	ck_assert_str_eq(q.attrs[5].value, "application/json");
	ck_assert_str_eq(q.attrs[6].name, "ankusa_dedupe_key");
	ck_assert_str_eq(q.attrs[6].value, "delivery-42");
	/* The trace: the hook's trace id and flags, the attempt's span. */
	ck_assert_str_eq(q.attrs[7].name, "traceparent");
	ck_assert_str_eq(q.attrs[7].value,
	    "00-4bf92f3577b34da6a3ce929d0e0e4736-abababababababab-01");
	qmsg_free(&q);
}
END_TEST

/* No dedupe key, a replay, no content type, no headers, empty body. */
START_TEST(test_minimal)
{
	struct batch_entry e;
	struct qmsg q;
	char err[64];

	sample(&e);
	e.dedupe_key = "";
	e.replay_id = "r-1";
	e.content_type = "";
	e.nheaders = 0;
	e.body = NULL;
	e.bodylen = 0;
	ck_assert_int_eq(qmsg_build(&q, &e, 65536, err, sizeof(err)), 0);
	ck_assert_str_eq(q.json,
	    "{\"v\":1,\"id\":\"01890a5d-ac96-774b-bcce-b302099a8057\","
	    "\"source_id\":\"github\",\"tenant_id\":\"acme\","
	    "\"received_at\":1700000000123,"
	    "\"content_type\":\"application/octet-stream\",\"size\":0,"
	    "\"sha256\":\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca"
	    "495991b7852b855\","
	    "\"dedupe_key\":null,\"replay_id\":\"r-1\","
	    "\"idempotency_key\":\"01890a5d-ac96-774b-bcce-b302099a8057\","
	    "\"headers\":{},\"body_base64\":\"\"}");
	ck_assert_int_eq(q.nattrs, 8);
	ck_assert_str_eq(q.attrs[4].value, e.hook_id);
	ck_assert_str_eq(q.attrs[5].value, "application/octet-stream");
	ck_assert_str_eq(q.attrs[6].name, "ankusa_replay_id");
	ck_assert_str_eq(q.attrs[6].value, "r-1");
	ck_assert_str_eq(q.attrs[7].name, "traceparent");
	qmsg_free(&q);

	/* Every attribute there is: ten, SQS's limit, the body the same
	 * byte for byte whatever the trace. */
	sample(&e);
	e.replay_id = "r-1";
	e.tracestate = "rojo=00f067aa0ba902b7";
	ck_assert_int_eq(qmsg_build(&q, &e, 65536, err, sizeof(err)), 0);
	ck_assert_int_eq(q.nattrs, QMSG_MAX_ATTRS);
	ck_assert_int_eq(q.nattrs, 10);
	ck_assert_str_eq(q.attrs[8].name, "traceparent");
	ck_assert_str_eq(q.attrs[9].name, "tracestate");
	ck_assert_str_eq(q.attrs[9].value, "rojo=00f067aa0ba902b7");
	ck_assert_ptr_null(strstr(q.json, "trace"));
	ck_assert_ptr_null(strstr(q.json, "4bf92f35"));
	qmsg_free(&q);
}
END_TEST

/* Above inline_max the claim goes instead of the body; without a
 * reference the entry cannot go. */
START_TEST(test_claim)
{
	struct batch_entry e;
	struct qmsg q;
	char err[64];
	const char *ref = "urn:ankusa:claim:v1:acme:01HZY3S7V2W8X9Y0Z1A2B3C4D5";

	sample(&e);
	ck_assert_int_eq(qmsg_build(&q, &e, 6, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "claim check-in missing");
	ck_assert_ptr_null(q.json);
	e.claim_ref = (char *)ref;
	ck_assert_int_eq(qmsg_build(&q, &e, 6, err, sizeof(err)), 0);
	ck_assert_int_eq(q.by_claim, 1);
	ck_assert_ptr_null(strstr(q.json, "body_base64"));
	ck_assert_ptr_nonnull(strstr(q.json, ",\"size\":7,"));
	ck_assert_ptr_nonnull(strstr(q.json, "\"claim\":\"urn:ankusa:claim:v1:"
	    "acme:01HZY3S7V2W8X9Y0Z1A2B3C4D5\"}"));
	qmsg_free(&q);
	/* At exactly inline_max the body is inline, reference or not. */
	ck_assert_int_eq(qmsg_build(&q, &e, 7, err, sizeof(err)), 0);
	ck_assert_int_eq(q.by_claim, 0);
	ck_assert_ptr_nonnull(strstr(q.json, "\"body_base64\":"));
	qmsg_free(&q);
}
END_TEST

static const struct {
	const char	*in;
	const char	*out;
} esc_cases[] = {
	{ "plain", "\"plain\"" },
	{ "q\"b\\", "\"q\\\"b\\\\\"" },
	{ "a\nb\tc\r\x01\x7f", "\"a\\nb\\tc\\r\\u0001\\u007f\"" },
	{ "caf\xc3\xa9", "\"caf\\u00e9\"" },
	{ "\xe2\x82\xac", "\"\\u20ac\"" },
	{ "\xf0\x9f\x98\x80", "\"\\ud83d\\ude00\"" },
	{ "bad\xff", "\"bad\\ufffd\"" },
	{ "\xc0\xaf", "\"\\ufffd\\ufffd\"" },		/* overlong */
	{ "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"" },	/* surrogate */
	{ "\xe2\x82", "\"\\ufffd\\ufffd\"" },		/* cut short */
};

START_TEST(test_escape)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;

	qmsg_json_str(&buf, &len, &cap, esc_cases[_i].in,
	    strlen(esc_cases[_i].in));
	ck_assert_str_eq(buf, esc_cases[_i].out);
	ck_assert_uint_eq(len, strlen(esc_cases[_i].out));
	free(buf);
}
END_TEST

static const struct {
	const char	*code;
	int		 sf;
	enum job_result	 r;
} cls_cases[] = {
	{ "InvalidMessageContents", 1, JOB_PERMANENT },
	{ "InvalidParameterValue", 1, JOB_PERMANENT },
	{ "com.amazonaws.sqs#InvalidParameterValue", 1, JOB_PERMANENT },
	{ "AWS.SimpleQueueService.BatchRequestTooLong", 1, JOB_PERMANENT },
	{ "MessageTooLong", 0, JOB_PERMANENT },
	{ "InternalError", 0, JOB_ERROR },
	{ "ServiceUnavailable", 0, JOB_ERROR },
	{ "com.amazonaws.sqs#QueueDoesNotExist", 1, JOB_ERROR },
	{ "SignatureDoesNotMatch", 1, JOB_ERROR },
	{ "InvalidClientTokenId", 1, JOB_ERROR },
	{ NULL, 0, JOB_ERROR },
};

START_TEST(test_classify)
{
	ck_assert_int_eq(sink_sqs_classify(cls_cases[_i].code,
	    cls_cases[_i].sf), cls_cases[_i].r);
}
END_TEST

START_TEST(test_md5)
{
	char hex[33];

	sink_sqs_md5("", 0, hex);
	ck_assert_str_eq(hex, "d41d8cd98f00b204e9800998ecf8427e");
	sink_sqs_md5("{\"v\":1}", 7, hex);
	ck_assert_uint_eq(strlen(hex), 32);
}
END_TEST

static Suite *
qmsg_suite(void)
{
	Suite *s = suite_create("qmsg");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_exact);
	tcase_add_test(tc, test_minimal);
	tcase_add_test(tc, test_claim);
	tcase_add_loop_test(tc, test_escape, 0,
	    sizeof(esc_cases) / sizeof(esc_cases[0]));
	tcase_add_loop_test(tc, test_classify, 0,
	    sizeof(cls_cases) / sizeof(cls_cases[0]));
	tcase_add_test(tc, test_md5);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(qmsg_suite());
	int nf;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
