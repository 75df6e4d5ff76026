/* SPDX-License-Identifier: ISC */
/*
 * dispatchutil.c: the scheduler's unit tests' shared fixtures and helpers;
 * see dispatchutil.h.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "dispatch.h"
#include "dispatchutil.h"
#include "fakestore.h"
#include "log.h"

/* Every test's dispatch keys but those it gives itself. */
static const char *const base_keys[] = {
	"batch: 30", "concurrency: 32", "breaker_failures: 3",
	"breaker_open_ms: 1000", "breaker_max_open_ms: 8000",
	/* The tests of the global window want no tenant window in the way
	 * (by default a tenant gets a share of the global one). */
	"tenants: {default: {max_inflight: 10000000, "
	    "max_inflight_bytes: 1099511627776, concurrency: 1024}}",
};

struct dispatch	*d;
struct conf	*cf;

/* dispatch keys (base_keys fill in the rest) and sources: a config that
 * must parse. */
struct conf *
parse(const char *dkeys, const char *sources)
{
	struct conf_errors e = { NULL, 0 };
	struct conf *c;
	char y[8192], have[2048], name[64];
	size_t i;
	int k;

	snprintf(have, sizeof(have), "\n%s", dkeys);
	snprintf(y, sizeof(y), "dispatch:\n%s", dkeys);
	for (i = 0; i < sizeof(base_keys) / sizeof(base_keys[0]); i++) {
		snprintf(name, sizeof(name), "\n  %.*s", (int)(strchr(
		    base_keys[i], ':') - base_keys[i] + 1), base_keys[i]);
		if (strstr(have, name) == NULL)
			snprintf(y + strlen(y), sizeof(y) - strlen(y),
			    "  %s\n", base_keys[i]);
	}
	snprintf(y + strlen(y), sizeof(y) - strlen(y), "%s", sources);
	if ((c = conf_parse(y, strlen(y), "test.yml", &e)) == NULL) {
		fprintf(stderr, "config refused:\n%s", y);
		for (k = 0; k < e.n; k++)
			fprintf(stderr, "  %s\n", e.msgs[k]);
	}
	ck_assert_ptr_nonnull(c);
	conf_errors_free(&e);
	return c;
}

void
mk(const char *dkeys, const char *sources)
{
	struct dispatch_ops ops;

	fake_init();
	fake_ops(&ops);
	cf = parse(dkeys, sources);
	d = dispatch_new(cf, &ops);
	ck_assert_ptr_nonnull(d);
}

void
done(void)
{
	dispatch_free(d);
	conf_free(cf);
	fake_free();
	d = NULL;
	cf = NULL;
}

/* The first running job ends delivered at now; its settle is written and
 * dispatch runs. */
void
next_ok(uint64_t now)
{
	fake_finish(d, fake_running_job(0), ATTEMPT_OK, 0, "", now);
	fake_flush(d);
	dispatch_run(d, now);
}

/* One loop turn of the glue: run, write the settles, run again while there
 * were any.  Returns the wake time of the last run. */
uint64_t
turn(uint64_t now)
{
	uint64_t w;

	do
		w = dispatch_run(d, now);
	while (fake_flush(d) > 0);
	return w;
}

/* The last settle of row seq. */
const struct fsettle *
last_settle(uint64_t seq)
{
	size_t i;

	for (i = fake.nsettles; i > 0; i--)
		if (fake.settles[i - 1]->seq == seq)
			return fake.settles[i - 1];
	ck_abort_msg("no settle of seq %llu", (unsigned long long)seq);
	return NULL;
}

/* Finish up to n running jobs of (tenant, source) as res; how many. */
size_t
finish_key(const char *tenant, const char *source, size_t n,
    enum attempt_result res, const char *detail, uint64_t now)
{
	struct fjob *j;
	size_t i = 0, done_n = 0;

	while (done_n < n && (j = fake_running_job(i)) != NULL) {
		if (strcmp(j->row.tenant, tenant) == 0 &&
		    strcmp(j->row.source, source) == 0) {
			fake_finish(d, j, res, 0, detail, now);
			done_n++;
		} else
			i++;
	}
	return done_n;
}

int
dispatchutil_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	log_setlevel(LOG_LEVEL_WARN);	/* no dead-letter and breaker lines */
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
