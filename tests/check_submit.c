/* SPDX-License-Identifier: ISC */
/*
 * check_submit.c: the hook's submit frame (common/submit.c) as the master
 * reads it from an edge.  What the master keeps and hands on as text is
 * checked at the frame: an event type must be UTF-8 without control
 * characters (it is stored and shown), a tracestate must be one the
 * edge's own check keeps (it is sent as a header to the sinks, so a CR or
 * LF in it would start a header of its own).
 */
#include "config.h"

#include <check.h>
#include <string.h>

#include "msg.h"
#include "submit.h"

static int
roundtrip(const char *evtype, const char *tracestate)
{
	struct submit s, d;
	struct msg m, r;
	int rc;

	memset(&s, 0, sizeof(s));
	s.tenant = "t";
	s.source = "s";
	s.method = "POST";
	s.path = "/webhooks/s";
	s.content_type = "application/json";
	s.received_at = 1;
	s.verify_reason = "";
	s.tracestate = tracestate;
	s.tail.dedupe = "";
	s.tail.evtype = evtype;
	s.tail.match = 1;
	s.body = "{}";
	s.body_len = 2;
	ck_assert_int_eq(submit_encode(&m, 7, &s), 0);
	msg_init(&r, m.type, m.id);
	r.flags = m.flags;
	r.buf = m.buf;
	r.len = m.len;
	r.fd = -1;
	rc = submit_decode(&r, &d);
	if (rc == 0) {
		ck_assert_str_eq(d.tail.evtype, evtype);
		ck_assert_str_eq(d.tracestate, tracestate);
	}
	msg_free(&m);
	return rc;
}

START_TEST(test_text_kept)
{
	ck_assert_int_eq(roundtrip("", ""), 0);
	ck_assert_int_eq(roundtrip("invoice.paid", "vendor=x,other=y"), 0);
	ck_assert_int_eq(roundtrip("caf\xc3\xa9.cr\xc3\xa9\xc3\xa9", ""), 0);
}
END_TEST

START_TEST(test_text_refused)
{
	ck_assert_int_eq(roundtrip("a\nb", ""), -1);
	ck_assert_int_eq(roundtrip("a\x7f", ""), -1);
	ck_assert_int_eq(roundtrip("\xff\xfe", ""), -1);
	ck_assert_int_eq(roundtrip("", "vendor=x\r\nx-evil: 1"), -1);
	ck_assert_int_eq(roundtrip("", "not a tracestate"), -1);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("submit");
	TCase *tc = tcase_create("text");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, test_text_kept);
	tcase_add_test(tc, test_text_refused);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? 0 : 1;
}
