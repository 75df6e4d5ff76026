/* SPDX-License-Identifier: ISC */
/*
 * check_claimjob.c: the claim check-in codec, common/claimjob.c
 * (MSG_CLAIM_JOB, MSG_CLAIM_OUTCOME).
 *
 * Every field round-trips, for both store types, with bodies of 0, 1 and
 * many bytes in one memfd; a truncated frame, a byte too many, no memfd,
 * a memfd of another size, a body past its end, a bad store type or
 * tenant, and counts out of range are refused; outcomes round-trip with
 * and without URNs, and an error outcome that carries URNs is refused.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "job.h"
#include "msg.h"
#include "proc.h"

#define NBODIES	5

static unsigned char	payload[70000];
static struct claim_body bodies[NBODIES];

static void
sample(struct claim_job *j, int s3)
{
	size_t i, sizes[NBODIES] = { 0, 1, 4096, 65000, 3 }, off = 0;

	for (i = 0; i < sizeof(payload); i++)
		payload[i] = (unsigned char)(i * 13 + (i >> 9));
	for (i = 0; i < NBODIES; i++) {
		bodies[i].data = payload + off;
		bodies[i].len = sizes[i];
		off += 7;	/* overlapping on purpose: copied anyway */
	}
	memset(j, 0, sizeof(*j));
	j->id = 0x1122334455667788ULL;
	if (s3) {
		j->store.type = "s3";
		j->store.bucket = "claims";
		j->store.region = "eu-west-1";
		j->store.endpoint = "http://127.0.0.1:9000";
		j->store.access_key_id = "AKIA";
		j->store.secret_access_key = "s3cr3t";
		j->store.session_token = NULL;
	} else {
		j->store.type = "local";
		j->store.root = "/var/lib/ankusa/claims";
		j->store.retention_days = 30;
	}
	j->store.pack_max_bytes = 16777216;
	j->tenant = "acme_1-x";
	j->timeout_ms = 30000;
	j->bodies = bodies;
	j->nbodies = NBODIES;
}

static int
roundtrip(const struct msg *m, struct claim_job *out)
{
	struct msg r;
	int rc;

	msg_init(&r, m->type, m->id);
	r.flags = m->flags;
	r.buf = m->buf;
	r.len = m->len;
	r.fd = m->fd != -1 ? dup(m->fd) : -1;
	rc = claim_job_decode(&r, out);
	if (r.fd != -1)
		close(r.fd);
	return rc;
}

#define ck_assert_opt_eq(a, b) do {					\
	if ((b) == NULL)						\
		ck_assert_ptr_null(a);					\
	else								\
		ck_assert_str_eq((a), (b));				\
} while (0)

START_TEST(test_roundtrip)
{
	struct claim_job j, d;
	struct msg m;
	uint32_t i;

	sample(&j, _i);
	ck_assert_int_eq(claim_job_encode(&m, &j), 0);
	ck_assert_int_eq(m.type, MSG_CLAIM_JOB);
	ck_assert_int_ne(m.fd, -1);
	ck_assert_int_eq(roundtrip(&m, &d), 0);
	ck_assert(d.id == j.id);
	ck_assert_str_eq(d.store.type, j.store.type);
	ck_assert_opt_eq(d.store.root, j.store.root);
	ck_assert_opt_eq(d.store.bucket, j.store.bucket);
	ck_assert_opt_eq(d.store.region, j.store.region);
	ck_assert_opt_eq(d.store.endpoint, j.store.endpoint);
	ck_assert_opt_eq(d.store.access_key_id, j.store.access_key_id);
	ck_assert_opt_eq(d.store.secret_access_key,
	    j.store.secret_access_key);
	ck_assert_opt_eq(d.store.session_token, j.store.session_token);
	ck_assert(d.store.pack_max_bytes == j.store.pack_max_bytes);
	ck_assert_uint_eq(d.store.retention_days, j.store.retention_days);
	ck_assert_str_eq(d.tenant, j.tenant);
	ck_assert(d.timeout_ms == j.timeout_ms);
	ck_assert_uint_eq(d.nbodies, j.nbodies);
	for (i = 0; i < d.nbodies; i++) {
		ck_assert_uint_eq(d.bodies[i].len, j.bodies[i].len);
		ck_assert(memcmp(d.bodies[i].data, j.bodies[i].data,
		    j.bodies[i].len) == 0);
	}
	claim_job_free(&d);
	ck_assert_ptr_null(d.tenant);
	msg_free(&m);
}
END_TEST

START_TEST(test_truncated)
{
	struct claim_job j, d;
	struct msg m, r;
	size_t n;

	sample(&j, 1);
	ck_assert_int_eq(claim_job_encode(&m, &j), 0);
	for (n = 0; n < m.len; n++) {
		msg_init(&r, m.type, m.id);
		r.flags = m.flags;
		r.buf = m.buf;
		r.len = n;
		r.fd = dup(m.fd);
		ck_assert_int_eq(claim_job_decode(&r, &d), -1);
		ck_assert_ptr_null(d.tenant);
		ck_assert_ptr_null(d.store.type);
		close(r.fd);
	}
	msg_add_u8(&m, 0);
	ck_assert_int_eq(roundtrip(&m, &d), -1);
	msg_free(&m);
}
END_TEST

/* The memfd: required, exactly the total, every body inside it. */
START_TEST(test_fd)
{
	struct claim_job j, d;
	struct msg m;
	int fd;

	sample(&j, 0);
	ck_assert_int_eq(claim_job_encode(&m, &j), 0);
	fd = m.fd;
	m.fd = -1;
	ck_assert_int_eq(roundtrip(&m, &d), -1);		/* none */
	m.fd = fd;
	ck_assert_int_eq(ftruncate(m.fd, 3), 0);
	ck_assert_int_eq(roundtrip(&m, &d), -1);		/* short */
	msg_free(&m);

	/* A body past the end: the last offset, pushed. */
	sample(&j, 0);
	ck_assert_int_eq(claim_job_encode(&m, &j), 0);
	/* total is the last u64; the last body's offset is 24 bytes
	 * before it (offset, length, total). */
	m.buf[m.len - 24 + 7] += 1;
	ck_assert_int_eq(roundtrip(&m, &d), -1);
	msg_free(&m);
}
END_TEST

START_TEST(test_refused)
{
	struct claim_job j, d;
	struct msg m;

	sample(&j, 0);
	j.store.type = "ftp";
	ck_assert_int_eq(claim_job_encode(&m, &j), 0);
	ck_assert_int_eq(roundtrip(&m, &d), -1);
	msg_free(&m);

	sample(&j, 0);
	j.tenant = "a/b";
	ck_assert_int_eq(claim_job_encode(&m, &j), 0);
	ck_assert_int_eq(roundtrip(&m, &d), -1);
	msg_free(&m);

	sample(&j, 0);
	j.nbodies = 0;
	errno = 0;
	ck_assert_int_eq(claim_job_encode(&m, &j), -1);
	ck_assert_int_eq(errno, EINVAL);
	j.nbodies = CLAIM_MAX_BODIES + 1;
	ck_assert_int_eq(claim_job_encode(&m, &j), -1);

	/* The wrong type. */
	sample(&j, 0);
	ck_assert_int_eq(claim_job_encode(&m, &j), 0);
	m.type = MSG_DELIVER_JOB;
	ck_assert_int_eq(roundtrip(&m, &d), -1);
	msg_free(&m);
}
END_TEST

static int
outcome_roundtrip(const struct msg *m, struct claim_outcome *out)
{
	struct msg r;

	msg_init(&r, m->type, m->id);
	r.flags = m->flags;
	r.buf = m->buf;
	r.len = m->len;
	r.fd = -1;
	return claim_outcome_decode(&r, out);
}

START_TEST(test_outcome)
{
	struct claim_outcome o, d;
	struct msg m;
	char *urns[3] = {
	    "urn:ankusa:claim:v1:acme:01HZY3S7V2W8X9Y0Z1A2B3C4D5",
	    "urn:ankusa:claim:v1:acme:01HZY3S7V2W8X9Y0Z1A2B3C4D6",
	    "urn:ankusa:claim:v1:acme:01HZY3S7V2W8X9Y0Z1A2B3C4D7",
	};
	size_t n;

	memset(&o, 0, sizeof(o));
	o.result = JOB_OK;
	o.duration_ms = 42;
	snprintf(o.detail, sizeof(o.detail), "pack 0123456789abcdef");
	o.key = "claims/tenant=acme/dt=2024-06-01/0123456789abcdef";
	o.urns = urns;
	o.nurns = 3;
	claim_outcome_encode(&m, 77, &o);
	ck_assert_int_eq(outcome_roundtrip(&m, &d), 0);
	ck_assert(m.id == 77);
	ck_assert_int_eq(d.result, JOB_OK);
	ck_assert(d.duration_ms == 42);
	ck_assert_str_eq(d.detail, o.detail);
	ck_assert_str_eq(d.key, o.key);
	ck_assert_uint_eq(d.nurns, 3);
	ck_assert_str_eq(d.urns[2], urns[2]);
	claim_outcome_free(&d);

	/* Every truncation is refused, with nothing left to free. */
	for (n = 0; n < m.len; n++) {
		struct msg r;

		msg_init(&r, m.type, m.id);
		r.buf = m.buf;
		r.len = n;
		ck_assert_int_eq(claim_outcome_decode(&r, &d), -1);
		ck_assert_ptr_null(d.urns);
		ck_assert_ptr_null(d.key);
	}
	msg_free(&m);

	/* An error: no key, no URNs. */
	memset(&o, 0, sizeof(o));
	o.result = JOB_ERROR;
	snprintf(o.detail, sizeof(o.detail), "claim store s3: PUT: http 503");
	claim_outcome_encode(&m, 78, &o);
	ck_assert_int_eq(outcome_roundtrip(&m, &d), 0);
	ck_assert_int_eq(d.result, JOB_ERROR);
	ck_assert_str_eq(d.key, "");
	ck_assert_uint_eq(d.nurns, 0);
	ck_assert_ptr_null(d.urns);
	claim_outcome_free(&d);
	msg_free(&m);

	/* An error that carries URNs makes no sense. */
	o.urns = urns;
	o.nurns = 1;
	claim_outcome_encode(&m, 79, &o);
	ck_assert_int_eq(outcome_roundtrip(&m, &d), -1);
	msg_free(&m);

	/* A result out of range. */
	o.result = JOB_RESULT_MAX;
	o.nurns = 0;
	claim_outcome_encode(&m, 80, &o);
	ck_assert_int_eq(outcome_roundtrip(&m, &d), -1);
	msg_free(&m);
}
END_TEST

static Suite *
claim_job_suite(void)
{
	Suite *s = suite_create("claim_job");
	TCase *tc;

	tc = tcase_create("job");
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, test_roundtrip, 0, 2);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_fd);
	tcase_add_test(tc, test_refused);
	suite_add_tcase(s, tc);

	tc = tcase_create("outcome");
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_outcome);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(claim_job_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
