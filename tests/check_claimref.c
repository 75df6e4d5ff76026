/* SPDX-License-Identifier: ISC */
/*
 * check_claimref.c: claim references (common/claimref.c) and the
 * base64url encoder they use (common/b64.c).
 *
 * A signed reference reads back with its key; one known answer (computed
 * with Python's hmac, so another implementation can check itself against
 * the same text); a change in each field (tenant, id, expiry, signature)
 * is a bad signature, as is another key; the expiry is refused from its
 * second on, and only of a reference whose signature holds; v1 references
 * read only when accepted; malformed ones are refused by what is wrong.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "b64.h"
#include "claimref.h"

#define KEY	"0123456789abcdef0123456789abcdef"
#define ID	"01ARZ3NDEKTSV4RRFFQ69G5FAV7ZZZZZZZZZZZZZZZZZZZZZZZZZ"
#define NOW	1699395200ULL		/* exp 1700000000 with a week */

static const struct claimref_key key = {
	(const unsigned char *)KEY, sizeof(KEY) - 1, 604800
};

static enum claimref_status
check(const char *ref, uint64_t now, int v1, struct claimref *r)
{
	return claimref_check(&key, v1, ref, now, r);
}

START_TEST(test_b64url)
{
	static const unsigned char ff[] = { 0xfb, 0xff };
	char out[16];

	ck_assert_uint_eq(b64url_encode((const unsigned char *)"", 0, out), 0);
	ck_assert_str_eq(out, "");
	b64url_encode((const unsigned char *)"f", 1, out);
	ck_assert_str_eq(out, "Zg");
	b64url_encode((const unsigned char *)"fo", 2, out);
	ck_assert_str_eq(out, "Zm8");
	b64url_encode((const unsigned char *)"foo", 3, out);
	ck_assert_str_eq(out, "Zm9v");
	ck_assert_uint_eq(b64url_encode(ff, 2, out), 3);
	ck_assert_str_eq(out, "-_8");
	ck_assert_uint_le(strlen(out) + 1, B64URL_ENCODED_MAX(2));
}
END_TEST

START_TEST(test_sign_known)
{
	struct claimref r;
	char ref[CLAIMREF_MAX];

	ck_assert_int_eq(claimref_sign(&key, "acme", ID, NOW, ref,
	    sizeof(ref)), 0);
	ck_assert_str_eq(ref, "urn:ankusa:claim:v2:acme:" ID ":1700000000:"
	    "ByXqqm1DqQqhQulkStJzIsGndynhYUjhmWjUSy3diX4");
	ck_assert_int_eq(check(ref, NOW, 0, &r), CLAIMREF_OK);
	ck_assert_int_eq(r.version, 2);
	ck_assert_str_eq(r.tenant, "acme");
	ck_assert_str_eq(r.id, ID);
	ck_assert(r.exp == 1700000000ULL);
	/* Too small a buffer, a bad tenant or id: refused, not cut. */
	ck_assert_int_eq(claimref_sign(&key, "acme", ID, NOW, ref, 100), -1);
	ck_assert_int_eq(claimref_sign(&key, "ac:me", ID, NOW, ref,
	    sizeof(ref)), -1);
	ck_assert_int_eq(claimref_sign(&key, "acme", "01AR:", NOW, ref,
	    sizeof(ref)), -1);
}
END_TEST

/* One character changed in each field: never ours. */
START_TEST(test_tampered)
{
	struct claimref r;
	char ref[CLAIMREF_MAX], bad[CLAIMREF_MAX];
	size_t i, len, tenant_at, id_at, exp_at, sig_at;
	struct {
		const char	*what;
		size_t		 at;
	} f[4];

	ck_assert_int_eq(claimref_sign(&key, "acme", ID, NOW, ref,
	    sizeof(ref)), 0);
	len = strlen(ref);
	tenant_at = strlen(CLAIMREF_V2_PREFIX);
	id_at = tenant_at + 5;
	exp_at = id_at + strlen(ID) + 1;
	sig_at = len - CLAIMREF_SIG_LEN;
	f[0].what = "tenant", f[0].at = tenant_at + 1;
	f[1].what = "id", f[1].at = id_at + 30;
	f[2].what = "exp", f[2].at = exp_at + 9;
	f[3].what = "signature", f[3].at = sig_at + 20;
	for (i = 0; i < 4; i++) {
		memcpy(bad, ref, len + 1);
		bad[f[i].at] = bad[f[i].at] == '1' ? '2' : '1';
		ck_assert_msg(check(bad, NOW, 1, &r) == CLAIMREF_BAD_SIGNATURE,
		    "%s changed: %s", f[i].what, bad);
	}
	/* The expiry pushed later, into the future: still not ours. */
	snprintf(bad, sizeof(bad), "%.*s9%s", (int)exp_at, ref, ref + exp_at);
	ck_assert_int_eq(check(bad, NOW, 0, &r), CLAIMREF_BAD_SIGNATURE);
	/* The signature cut or lengthened. */
	snprintf(bad, sizeof(bad), "%.*s", (int)len - 1, ref);
	ck_assert_int_eq(check(bad, NOW, 0, &r), CLAIMREF_BAD_SIGNATURE);
	snprintf(bad, sizeof(bad), "%sA", ref);
	ck_assert_int_eq(check(bad, NOW, 0, &r), CLAIMREF_BAD_SIGNATURE);
	/* Another key. */
	{
		struct claimref_key other = {
			(const unsigned char *)KEY "x", sizeof(KEY), 604800
		};

		ck_assert_int_eq(claimref_check(&other, 0, ref, NOW, &r),
		    CLAIMREF_BAD_SIGNATURE);
	}
}
END_TEST

START_TEST(test_expired)
{
	struct claimref r;
	char ref[CLAIMREF_MAX], bad[CLAIMREF_MAX];
	size_t len;

	ck_assert_int_eq(claimref_sign(&key, "acme", ID, NOW, ref,
	    sizeof(ref)), 0);
	ck_assert_int_eq(check(ref, 1700000000ULL - 1, 0, &r), CLAIMREF_OK);
	ck_assert_int_eq(check(ref, 1700000000ULL, 0, &r), CLAIMREF_EXPIRED);
	ck_assert(r.exp == 1700000000ULL);
	ck_assert_int_eq(check(ref, 1800000000ULL, 0, &r), CLAIMREF_EXPIRED);
	/* An expired one that is not ours says so first. */
	len = strlen(ref);
	memcpy(bad, ref, len + 1);
	bad[len - 1] = bad[len - 1] == 'A' ? 'B' : 'A';
	ck_assert_int_eq(check(bad, 1800000000ULL, 0, &r),
	    CLAIMREF_BAD_SIGNATURE);
}
END_TEST

START_TEST(test_v1)
{
	struct claimref r;
	const char *v1 = "urn:ankusa:claim:v1:acme:01ARZ3NDEKTSV4RRFFQ69G5FAV";

	ck_assert_int_eq(check(v1, NOW, 0, &r), CLAIMREF_BAD_SIGNATURE);
	ck_assert_int_eq(check(v1, NOW, 1, &r), CLAIMREF_OK);
	ck_assert_int_eq(r.version, 1);
	ck_assert_str_eq(r.tenant, "acme");
	ck_assert_str_eq(r.id, "01ARZ3NDEKTSV4RRFFQ69G5FAV");
	ck_assert(r.exp == 0);
	/* A v1 reference with a field too many. */
	ck_assert_int_eq(check("urn:ankusa:claim:v1:acme:01AR:1", NOW, 1, &r),
	    CLAIMREF_BAD_ID);
}
END_TEST

/* A stored reference renewed for a delivery: v2 with a fresh expiry and
 * the key's signature, whatever it was signed with; a v1 one becomes a
 * v2 one to the same claim. */
START_TEST(test_renew)
{
	struct claimref_key old = {
		(const unsigned char *)"an-old-key-0123456789abcdef0123456",
		33, 3600
	};
	struct claimref r;
	char ref[CLAIMREF_MAX], fresh[CLAIMREF_MAX];

	ck_assert_int_eq(claimref_sign(&old, "acme", ID, 1000, ref,
	    sizeof(ref)), 0);
	ck_assert_int_eq(check(ref, NOW, 0, &r), CLAIMREF_BAD_SIGNATURE);
	ck_assert_int_eq(claimref_renew(&key, ref, NOW, fresh, sizeof(fresh)),
	    0);
	ck_assert_int_eq(check(fresh, NOW, 0, &r), CLAIMREF_OK);
	ck_assert_str_eq(r.tenant, "acme");
	ck_assert_str_eq(r.id, ID);
	ck_assert(r.exp == NOW + 604800);

	ck_assert_int_eq(claimref_renew(&key,
	    "urn:ankusa:claim:v1:acme:01ARZ3NDEKTSV4RRFFQ69G5FAV", NOW, fresh,
	    sizeof(fresh)), 0);
	ck_assert_int_eq(check(fresh, NOW, 0, &r), CLAIMREF_OK);
	ck_assert_int_eq(r.version, 2);
	ck_assert_str_eq(r.id, "01ARZ3NDEKTSV4RRFFQ69G5FAV");

	ck_assert_int_eq(claimref_renew(&key, "", NOW, fresh, sizeof(fresh)),
	    -1);
	ck_assert_int_eq(claimref_renew(&key, "urn:ankusa:claim:v2:a.b:"
	    ID ":1:x", NOW, fresh, sizeof(fresh)), -1);
}
END_TEST

START_TEST(test_malformed)
{
	struct claimref r;

	ck_assert_int_eq(check("", NOW, 1, &r), CLAIMREF_BAD_ID);
	ck_assert_int_eq(check("urn:ankusa:claim:v3:acme:01AR", NOW, 1, &r),
	    CLAIMREF_BAD_ID);
	ck_assert_int_eq(check("urn:ankusa:claim:v2::" ID ":1:x", NOW, 1, &r),
	    CLAIMREF_BAD_TENANT);
	ck_assert_int_eq(check("urn:ankusa:claim:v2:a.b:" ID ":1:x", NOW, 1,
	    &r), CLAIMREF_BAD_TENANT);
	ck_assert_int_eq(check("urn:ankusa:claim:v2:acme:" ID ":1", NOW, 1,
	    &r), CLAIMREF_BAD_ID);
	ck_assert_int_eq(check("urn:ankusa:claim:v2:acme:" ID "::x", NOW, 1,
	    &r), CLAIMREF_BAD_ID);
	ck_assert_int_eq(check("urn:ankusa:claim:v2:acme:" ID ":1:x:y", NOW, 1,
	    &r), CLAIMREF_BAD_ID);
	ck_assert_int_eq(check("urn:ankusa:claim:v2:acme:01-R:1:x", NOW, 1,
	    &r), CLAIMREF_BAD_ID);
	ck_assert_int_eq(check("urn:ankusa:claim:v2:acme:" ID ID ":1:x", NOW,
	    1, &r), CLAIMREF_BAD_ID);
	ck_assert_str_eq(claimref_error(CLAIMREF_BAD_SIGNATURE),
	    "bad_signature");
	ck_assert_str_eq(claimref_error(CLAIMREF_EXPIRED), "ref_expired");
	ck_assert_str_eq(claimref_error(CLAIMREF_BAD_TENANT),
	    "invalid_tenant");
	ck_assert_str_eq(claimref_error(CLAIMREF_BAD_ID), "invalid_id");
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("claimref");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_b64url);
	tcase_add_test(tc, test_sign_known);
	tcase_add_test(tc, test_tampered);
	tcase_add_test(tc, test_expired);
	tcase_add_test(tc, test_v1);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_renew);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
