/* SPDX-License-Identifier: ISC */
/*
 * check_handshake.c: unit tests for workers/handshake.c, the providers'
 * handshakes (Slack's url_verification, Zoom's endpoint.url_validation,
 * Meta's hub.challenge): their recognition, their answers, and hostile
 * bodies and queries.
 *
 * Zoom's encryptedToken values come from outside this code:
 *   printf '%s' TOKEN | openssl dgst -sha256 -hmac zoomsecret
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "conf.h"
#include "handshake.h"
#include "httpreq.h"
#include "testutil.h"

#define CASE_TIMEOUT	10

static const char test_yaml[] =
    "node:\n"
    "  data_dir: /tmp/ankusa-check-handshake\n"
    "sources:\n"
    "  slack:\n"
    "    verify: {type: slack, secret: slacksecret}\n"
    "    sinks: [{type: log}]\n"
    "  zoom:\n"
    "    verify: {type: zoom, secret: [zoomsecret, oldsecret]}\n"
    "    sinks: [{type: log}]\n"
    "  meta:\n"
    "    verify: {type: meta, secret: appsecret, verify_token: \"t k+x\"}\n"
    "    sinks: [{type: log}]\n"
    "  metanotoken:\n"
    "    verify: {type: meta, secret: appsecret}\n"
    "    sinks: [{type: log}]\n"
    "  github:\n"
    "    verify: {type: github, secret: ghsecret}\n"
    "    sinks: [{type: log}]\n";

#define JSON		"application/json"
#define ZOOM_TOKEN	"qgg8vlvZRS6UYooatFL8Aw"
#define ZOOM_ENC	\
    "83b2a60d4bbe49dc93763ed9e727a9a7690cbe4c1f8bb0adc0ffccd09ecb1384"
/* The token a"b\c</x>: escaped in the answer, hashed as its bytes. */
#define ZOOM_ODD_ENC	\
    "b85fbd841d413cc556491772c5ce3abc87cb14d7eadff9cfe6340685cc4116fe"

static struct conf *cf;

static void
setup(void)
{
	cf = test_conf_parse(test_yaml, sizeof(test_yaml) - 1);
}

static void
teardown(void)
{
	conf_free(cf);
}

static const struct source_conf *
src(const char *id)
{
	const struct source_conf *s = conf_source(cf, id);

	ck_assert_msg(s != NULL, "no source %s", id);
	return s;
}

struct pcase {
	const char		*source;
	const char		*ctype;
	const char		*body;
	enum handshake_verdict	 want;
	const char		*answer;	/* the body, or NULL */
	const char		*atype;		/* its Content-Type */
};

static const struct pcase pcases[] = {
	/* Slack's documented example. */
	{ "slack", JSON, "{\"token\":\"Jhj5dZrVaK7ZwHHjRyZWjbDl\","
	    "\"challenge\":\"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAY"
	    "M8P\",\"type\":\"url_verification\"}", HANDSHAKE_ANSWERED,
	    "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
	    "text/plain" },
	{ "slack", "Application/JSON; charset=utf-8", " {\"type\": "
	    "\"url_verification\", \"challenge\": \"<b>x</b>\"}\n",
	    HANDSHAKE_ANSWERED, "<b>x</b>", "text/plain" },
	/* Not handshakes: hooks. */
	{ "slack", "text/plain", "{\"type\":\"url_verification\","
	    "\"challenge\":\"c\"}", HANDSHAKE_NONE, NULL, NULL },
	{ "slack", NULL, "{\"type\":\"url_verification\","
	    "\"challenge\":\"c\"}", HANDSHAKE_NONE, NULL, NULL },
	{ "slack", "application/jsonx", "{\"type\":\"url_verification\","
	    "\"challenge\":\"c\"}", HANDSHAKE_NONE, NULL, NULL },
	{ "slack", JSON, "{\"type\":\"event_callback\",\"event\":{\"text\":"
	    "\"url_verification\"},\"challenge\":\"c\"}", HANDSHAKE_NONE,
	    NULL, NULL },
	{ "slack", JSON, "[\"url_verification\"]", HANDSHAKE_NONE, NULL,
	    NULL },
	{ "slack", JSON, "{\"type\":\"URL_VERIFICATION\",\"challenge\":\"c\","
	    "\"x\":\"url_verification\"}", HANDSHAKE_NONE, NULL, NULL },
	{ "slack", JSON, "{\"event\":{\"type\":\"url_verification\"},"
	    "\"challenge\":\"c\"}", HANDSHAKE_NONE, NULL, NULL },
	{ "github", JSON, "{\"type\":\"url_verification\","
	    "\"challenge\":\"c\"}", HANDSHAKE_NONE, NULL, NULL },
	{ "meta", JSON, "{\"type\":\"url_verification\","
	    "\"challenge\":\"c\"}", HANDSHAKE_NONE, NULL, NULL },
	/* Hostile ones. */
	{ "slack", JSON, "{\"type\":\"url_verification\"}", HANDSHAKE_BAD,
	    "{\"error\":\"bad_handshake\",\"reason\":\"challenge\"}", NULL },
	{ "slack", JSON, "{\"type\":\"url_verification\",\"challenge\":42}",
	    HANDSHAKE_BAD,
	    "{\"error\":\"bad_handshake\",\"reason\":\"challenge\"}", NULL },
	{ "slack", JSON, "{\"type\":\"url_verification\",\"challenge\":"
	    "[\"a\"]}", HANDSHAKE_BAD,
	    "{\"error\":\"bad_handshake\",\"reason\":\"challenge\"}", NULL },
	{ "slack", JSON, "{\"type\":\"url_verification\",\"challenge\":\"\"}",
	    HANDSHAKE_BAD,
	    "{\"error\":\"bad_handshake\",\"reason\":\"challenge\"}", NULL },
	{ "slack", JSON, "{\"type\":\"url_verification\",\"challenge\":"
	    "\"a b\"}", HANDSHAKE_BAD,
	    "{\"error\":\"bad_handshake\",\"reason\":\"challenge\"}", NULL },
	{ "slack", JSON, "{\"type\":\"url_verification\",\"challenge\":"
	    "\"a\\nb\"}", HANDSHAKE_BAD,
	    "{\"error\":\"bad_handshake\",\"reason\":\"challenge\"}", NULL },
	{ "slack", JSON, "{\"type\":\"url_verification\",\"challenge\":"
	    "\"caf\\u00e9\"}", HANDSHAKE_BAD,
	    "{\"error\":\"bad_handshake\",\"reason\":\"challenge\"}", NULL },
	{ "slack", JSON, "{\"type\":\"url_verification\",\"challenge\":"
	    "\"a\\u0000b\"}", HANDSHAKE_BAD,
	    "{\"error\":\"bad_handshake\",\"reason\":\"invalid_json\"}", NULL },
	{ "slack", JSON, "{\"type\":\"url_verification\",\"challenge\":\"c\"",
	    HANDSHAKE_BAD,
	    "{\"error\":\"bad_handshake\",\"reason\":\"invalid_json\"}", NULL },
	{ "slack", JSON, "{\"type\":\"url_verification\",\"challenge\":\"c\","
	    "\"challenge\":\"d\"}", HANDSHAKE_BAD,
	    "{\"error\":\"bad_handshake\",\"reason\":\"invalid_json\"}", NULL },
	{ "slack", JSON, "url_verification", HANDSHAKE_BAD,
	    "{\"error\":\"bad_handshake\",\"reason\":\"invalid_json\"}", NULL },

	/* Zoom's. */
	{ "zoom", JSON, "{\"payload\":{\"plainToken\":\"" ZOOM_TOKEN "\"},"
	    "\"event_ts\":1654503849680,\"event\":\"endpoint.url_validation\"}",
	    HANDSHAKE_ANSWERED, "{\"plainToken\":\"" ZOOM_TOKEN "\","
	    "\"encryptedToken\":\"" ZOOM_ENC "\"}", "application/json" },
	{ "zoom", JSON, "{\"event\":\"endpoint.url_validation\",\"payload\":"
	    "{\"plainToken\":\"a\\\"b\\\\c<\\/x>\"}}", HANDSHAKE_ANSWERED,
	    "{\"plainToken\":\"a\\\"b\\\\c</x>\",\"encryptedToken\":\""
	    ZOOM_ODD_ENC "\"}", "application/json" },
	{ "zoom", JSON, "{\"event\":\"meeting.started\",\"payload\":{\"x\":"
	    "\"endpoint.url_validation\"}}", HANDSHAKE_NONE, NULL, NULL },
	{ "zoom", JSON, "{\"event\":\"endpoint.url_validation\"}",
	    HANDSHAKE_BAD,
	    "{\"error\":\"bad_handshake\",\"reason\":\"payload\"}", NULL },
	{ "zoom", JSON, "{\"event\":\"endpoint.url_validation\",\"payload\":"
	    "{\"plainToken\":7}}", HANDSHAKE_BAD,
	    "{\"error\":\"bad_handshake\",\"reason\":\"plainToken\"}", NULL },
	{ "zoom", JSON, "{\"event\":\"endpoint.url_validation\",\"payload\":"
	    "[\"plainToken\"]}", HANDSHAKE_BAD,
	    "{\"error\":\"bad_handshake\",\"reason\":\"payload\"}", NULL },
	{ "zoom", JSON, "{\"event\":\"endpoint.url_validation\",",
	    HANDSHAKE_BAD,
	    "{\"error\":\"bad_handshake\",\"reason\":\"invalid_json\"}", NULL },
	{ "slack", JSON, "{\"event\":\"endpoint.url_validation\",\"payload\":"
	    "{\"plainToken\":\"p\"}}", HANDSHAKE_NONE, NULL, NULL },
};

static void
check_answer(const struct httpreq_answer *a, const char *want,
    const char *atype, int status)
{
	ck_assert_int_eq(a->status, status);
	ck_assert_str_eq(a->body, want);
	if (status == 200) {
		ck_assert_str_eq(a->content_type, atype);
		ck_assert_int_eq(a->nosniff, 1);
		ck_assert_int_eq(a->handshake, 1);
		ck_assert_ptr_null(a->refused);
	} else {
		ck_assert_ptr_null(a->content_type);
		ck_assert_int_eq(a->handshake, 0);
		ck_assert_ptr_nonnull(a->refused);
	}
}

START_TEST(test_post)
{
	const struct pcase *tc = &pcases[_i];
	struct httpreq_answer a;
	enum handshake_verdict v;

	memset(&a, 0, sizeof(a));
	a.status = -1;
	v = handshake_post(src(tc->source), tc->ctype, tc->body,
	    strlen(tc->body), &a);
	ck_assert_msg(v == tc->want, "case %d: got %d, want %d", _i, v,
	    tc->want);
	if (v == HANDSHAKE_NONE) {
		ck_assert_int_eq(a.status, -1);		/* untouched */
		return;
	}
	check_answer(&a, tc->answer, tc->atype, v == HANDSHAKE_BAD ? 400 :
	    200);
	httpreq_answer_free(&a);
}
END_TEST

/* The challenge's bound, at its edge; nesting, at its edge; a body over
 * HANDSHAKE_BODY_MAX is not looked at. */
START_TEST(test_bounds)
{
	struct httpreq_answer a;
	char *b, *c;
	size_t n;
	int i;

	b = malloc(HANDSHAKE_BODY_MAX + 64);
	c = malloc(HANDSHAKE_CHALLENGE_MAX + 2);
	ck_assert(b != NULL && c != NULL);
	memset(c, 'x', HANDSHAKE_CHALLENGE_MAX + 1);
	c[HANDSHAKE_CHALLENGE_MAX] = '\0';
	snprintf(b, HANDSHAKE_BODY_MAX, "{\"type\":\"url_verification\","
	    "\"challenge\":\"%s\"}", c);
	ck_assert_int_eq(handshake_post(src("slack"), JSON, b, strlen(b), &a),
	    HANDSHAKE_ANSWERED);
	ck_assert_str_eq(a.body, c);
	httpreq_answer_free(&a);
	c[HANDSHAKE_CHALLENGE_MAX] = 'x';
	c[HANDSHAKE_CHALLENGE_MAX + 1] = '\0';
	snprintf(b, HANDSHAKE_BODY_MAX, "{\"type\":\"url_verification\","
	    "\"challenge\":\"%s\"}", c);
	ck_assert_int_eq(handshake_post(src("slack"), JSON, b, strlen(b), &a),
	    HANDSHAKE_BAD);
	httpreq_answer_free(&a);

	/* HANDSHAKE_DEPTH_MAX levels (the top object one of them), then one
	 * more; brackets inside strings do not count. */
	for (i = 0; i <= 1; i++) {
		n = (size_t)snprintf(b, HANDSHAKE_BODY_MAX,
		    "{\"type\":\"url_verification\",\"challenge\":\"c\","
		    "\"s\":\"[[[[{{{{\",\"x\":");
		memset(b + n, '[', HANDSHAKE_DEPTH_MAX - 1 + i);
		n += HANDSHAKE_DEPTH_MAX - 1 + i;
		memset(b + n, ']', HANDSHAKE_DEPTH_MAX - 1 + i);
		n += HANDSHAKE_DEPTH_MAX - 1 + i;
		b[n++] = '}';
		ck_assert_int_eq(handshake_post(src("slack"), JSON, b, n, &a),
		    i == 0 ? HANDSHAKE_ANSWERED : HANDSHAKE_BAD);
		if (i == 1)
			ck_assert_str_eq(a.body, "{\"error\":\"bad_handshake\","
			    "\"reason\":\"too_deep\"}");
		httpreq_answer_free(&a);
	}

	/* Padded past HANDSHAKE_BODY_MAX: a hook, whatever it holds. */
	n = (size_t)snprintf(b, HANDSHAKE_BODY_MAX, "{\"type\":"
	    "\"url_verification\",\"challenge\":\"c\",\"pad\":\"");
	memset(b + n, 'p', HANDSHAKE_BODY_MAX + 1 - n - 2);
	n = HANDSHAKE_BODY_MAX - 1;
	b[n++] = '"';
	b[n++] = '}';
	ck_assert_uint_eq(n, HANDSHAKE_BODY_MAX + 1);
	a.status = -1;
	ck_assert_int_eq(handshake_post(src("slack"), JSON, b, n, &a),
	    HANDSHAKE_NONE);
	ck_assert_int_eq(a.status, -1);
	/* One byte shorter, it is read. */
	memmove(b + n - 3, b + n - 2, 2);
	ck_assert_int_eq(handshake_post(src("slack"), JSON, b, n - 1, &a),
	    HANDSHAKE_ANSWERED);
	ck_assert_str_eq(a.body, "c");
	httpreq_answer_free(&a);
	free(b);
	free(c);
}
END_TEST

/* Zoom's token is made with the first (newest) secret, and the answer
 * parses as JSON giving back the token's bytes. */
START_TEST(test_zoom_json)
{
	static const char body[] = "{\"event\":\"endpoint.url_validation\","
	    "\"payload\":{\"plainToken\":\"a\\\"b\\\\c<\\/x>\"}}";
	struct httpreq_answer a;
	json_t *o;

	ck_assert_int_eq(handshake_post(src("zoom"), JSON, body,
	    sizeof(body) - 1, &a), HANDSHAKE_ANSWERED);
	ck_assert_ptr_nonnull(o = json_loads(a.body, 0, NULL));
	ck_assert_str_eq(json_string_value(json_object_get(o, "plainToken")),
	    "a\"b\\c</x>");
	ck_assert_str_eq(json_string_value(json_object_get(o,
	    "encryptedToken")), ZOOM_ODD_ENC);
	ck_assert_int_eq(json_object_size(o), 2);
	json_decref(o);
	httpreq_answer_free(&a);
}
END_TEST

struct gcase {
	const char		*source;
	const char		*target;
	enum handshake_verdict	 want;
	const char		*answer;
};

#define FORBIDDEN_TOKEN	\
    "{\"error\":\"verify_token_mismatch\",\"reason\":\"hub.verify_token\"}"
#define BAD_Q(r)	"{\"error\":\"bad_handshake\",\"reason\":\"" r "\"}"

static const struct gcase gcases[] = {
	/* Meta's example, the token "t k+x" written both ways. */
	{ "meta", "/webhooks/meta?hub.mode=subscribe&hub.challenge=1158201444"
	    "&hub.verify_token=t+k%2Bx", HANDSHAKE_ANSWERED, "1158201444" },
	{ "meta", "/webhooks/meta?hub.verify_token=t%20k%2bx&hub.mode="
	    "subscribe&x=1&hub.challenge=%3Cb%3E#frag", HANDSHAKE_ANSWERED,
	    "<b>" },
	{ "meta", "http://h.example/webhooks/meta?hub%2Emode=subscribe&"
	    "hub.verify_token=t+k%2Bx&hub.challenge=9", HANDSHAKE_ANSWERED,
	    "9" },
	/* Refused: the token. */
	{ "meta", "/webhooks/meta?hub.mode=subscribe&hub.challenge=1&"
	    "hub.verify_token=t+k+x", HANDSHAKE_FORBIDDEN, FORBIDDEN_TOKEN },
	{ "meta", "/webhooks/meta?hub.mode=subscribe&hub.challenge=1&"
	    "hub.verify_token=", HANDSHAKE_FORBIDDEN, FORBIDDEN_TOKEN },
	{ "meta", "/webhooks/meta?hub.mode=subscribe&hub.challenge=1",
	    HANDSHAKE_FORBIDDEN, FORBIDDEN_TOKEN },
	{ "metanotoken", "/webhooks/metanotoken?hub.mode=subscribe&"
	    "hub.challenge=1&hub.verify_token=", HANDSHAKE_FORBIDDEN,
	    "{\"error\":\"verify_token_mismatch\",\"reason\":"
	    "\"verify_token_unset\"}" },
	/* Refused: the rest. */
	{ "meta", "/webhooks/meta?hub.mode=unsubscribe&hub.challenge=1&"
	    "hub.verify_token=t+k%2Bx", HANDSHAKE_BAD, BAD_Q("hub.mode") },
	{ "meta", "/webhooks/meta?hub.mode=subscribe&"
	    "hub.verify_token=t+k%2Bx", HANDSHAKE_BAD, BAD_Q("hub.challenge") },
	{ "meta", "/webhooks/meta?hub.mode=subscribe&hub.challenge=&"
	    "hub.verify_token=t+k%2Bx", HANDSHAKE_BAD, BAD_Q("hub.challenge") },
	{ "meta", "/webhooks/meta?hub.mode=subscribe&hub.challenge=a%0Ab&"
	    "hub.verify_token=t+k%2Bx", HANDSHAKE_BAD, BAD_Q("hub.challenge") },
	{ "meta", "/webhooks/meta?hub.mode=subscribe&hub.challenge=a%00b&"
	    "hub.verify_token=t+k%2Bx", HANDSHAKE_BAD, BAD_Q("query") },
	{ "meta", "/webhooks/meta?hub.mode=subscribe&hub.challenge=a%zzb&"
	    "hub.verify_token=t+k%2Bx", HANDSHAKE_BAD, BAD_Q("query") },
	{ "meta", "/webhooks/meta?hub.mode=subscribe&hub.challenge=a%4&"
	    "hub.verify_token=t+k%2Bx", HANDSHAKE_BAD, BAD_Q("query") },
	{ "meta", "/webhooks/meta?hub.mode=subscribe&hub.mode=subscribe&"
	    "hub.challenge=1&hub.verify_token=t+k%2Bx", HANDSHAKE_BAD,
	    BAD_Q("query") },
	/* Not handshakes: the edge's 405. */
	{ "meta", "/webhooks/meta", HANDSHAKE_NONE, NULL },
	{ "meta", "/webhooks/meta?", HANDSHAKE_NONE, NULL },
	{ "meta", "/webhooks/meta?hub.challenge=1&hub.verify_token=t+k%2Bx",
	    HANDSHAKE_NONE, NULL },
	{ "meta", "/webhooks/meta#?hub.mode=subscribe", HANDSHAKE_NONE,
	    NULL },
	{ "meta", "/webhooks/meta?x=1#hub.mode=subscribe", HANDSHAKE_NONE,
	    NULL },
	{ "slack", "/webhooks/slack?hub.mode=subscribe&hub.challenge=1&"
	    "hub.verify_token=t+k%2Bx", HANDSHAKE_NONE, NULL },
};

START_TEST(test_get)
{
	const struct gcase *tc = &gcases[_i];
	struct httpreq_answer a;
	enum handshake_verdict v;

	memset(&a, 0, sizeof(a));
	a.status = -1;
	v = handshake_get(src(tc->source), tc->target, &a);
	ck_assert_msg(v == tc->want, "case %d: got %d, want %d", _i, v,
	    tc->want);
	if (v == HANDSHAKE_NONE) {
		ck_assert_int_eq(a.status, -1);
		return;
	}
	check_answer(&a, tc->answer, "text/plain", v == HANDSHAKE_ANSWERED ?
	    200 : v == HANDSHAKE_FORBIDDEN ? 403 : 400);
	httpreq_answer_free(&a);
}
END_TEST

/* A hub.challenge at its bound, and one byte over (which does not fit). */
START_TEST(test_get_bounds)
{
	struct httpreq_answer a;
	char *t;
	size_t n;

	t = malloc(HANDSHAKE_CHALLENGE_MAX + 200);
	ck_assert_ptr_nonnull(t);
	n = (size_t)snprintf(t, 200, "/webhooks/meta?hub.mode=subscribe&"
	    "hub.verify_token=t+k%%2Bx&hub.challenge=");
	memset(t + n, '7', HANDSHAKE_CHALLENGE_MAX);
	t[n + HANDSHAKE_CHALLENGE_MAX] = '\0';
	ck_assert_int_eq(handshake_get(src("meta"), t, &a),
	    HANDSHAKE_ANSWERED);
	ck_assert_uint_eq(strlen(a.body), HANDSHAKE_CHALLENGE_MAX);
	httpreq_answer_free(&a);
	t[n + HANDSHAKE_CHALLENGE_MAX] = '7';
	t[n + HANDSHAKE_CHALLENGE_MAX + 1] = '\0';
	ck_assert_int_eq(handshake_get(src("meta"), t, &a), HANDSHAKE_BAD);
	httpreq_answer_free(&a);
	free(t);
}
END_TEST

START_TEST(test_names)
{
	ck_assert_str_eq(handshake_name(src("slack")), "url_verification");
	ck_assert_str_eq(handshake_name(src("zoom")),
	    "endpoint.url_validation");
	ck_assert_str_eq(handshake_name(src("meta")), "hub.challenge");
	ck_assert_ptr_null(handshake_name(src("github")));
}
END_TEST

static Suite *
handshake_suite(void)
{
	Suite *s = suite_create("handshake");
	TCase *tc;

#define NELEM(a)	((int)(sizeof(a) / sizeof((a)[0])))
	tc = tcase_create("post");
	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_post, 0, NELEM(pcases));
	tcase_add_test(tc, test_bounds);
	tcase_add_test(tc, test_zoom_json);
	suite_add_tcase(s, tc);

	tc = tcase_create("get");
	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_get, 0, NELEM(gcases));
	tcase_add_test(tc, test_get_bounds);
	tcase_add_test(tc, test_names);
	suite_add_tcase(s, tc);
#undef NELEM
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(handshake_suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
