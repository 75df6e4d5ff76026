/* SPDX-License-Identifier: ISC */
/*
 * admin_ops.c: the operator's manual operations; see admin_ops.h.
 *
 * Pauses and overrides live in meta settings (store_settings.c): a pause
 * "pause:<source>#<sink>" (the time it was set, then, for a key
 * disabled, its reason: a build before it reads the time alone), an
 * override
 * "rate:<tenant>" (rate as a double's bits, burst).  They are read once at
 * start; every change is a synced batch before it is in force, so an
 * answered change survives a crash.  In force, the pauses are pause.c's
 * and the overrides the writer's (writer_rate.c).
 *
 * Jobs move rows in steps (store_batch_due_move), one step of the first
 * job a loop pass, jobs in turn.  They run on the master's loop, the only
 * place that moves pending rows; a step leaves claimed rows alone.
 *
 * Fatal: out of memory.
 */
#include "config.h"

#include <sys/queue.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin_audit.h"
#include "admin_ops.h"
#include "clock.h"
#include "conf.h"
#include "dispatch/failstreak.h"
#include "dispatch/pause.h"
#include "dispatch/rateov.h"
#include "log.h"
#include "master.h"
#include "metrics.h"
#include "notice.h"
#include "pipeline/pipeline.h"
#include "steps.h"
#include "store/store.h"
#include "writer.h"

struct ops_job {
	struct step_job		 sj;		/* first: in line */
	struct store_due_move	 m;
	char			 tenant[STORE_NAME_MAX + 1];
	char			 source[STORE_NAME_MAX + 1];
	int			 resume;	/* the stored pause goes at
						 * the end */
	void			(*done)(void *, uint64_t, const char *);
	void			*arg;
};

static struct steps	 jobs;
static int		 jobs_init;
static int		 stopped;

static int	 step(struct step_job *);
static int	 job_step(struct ops_job *, char *, size_t);
static void	 job_end(struct ops_job *, const char *);
static void	 job_start(struct ops_job *);
static int	 skip_claimed(const unsigned char *, void *);
static void	 pause_name(char *, size_t, const char *, uint32_t);
static void	 srate_name(char *, size_t, const char *, const char *,
		    uint32_t);
static int	 srate_load(const char *, const unsigned char *, size_t);
static uint8_t	 ops_module(const char *, uint32_t);
static int	 load_fn(const char *, const void *, size_t, void *);
static int	 setting_write(const char *, const void *, size_t, int,
		    char *, size_t);
static void	 put_u64(unsigned char *, uint64_t);
static void	 put_u32(unsigned char *, uint32_t);
static uint64_t	 get_u64(const unsigned char *);
static uint32_t	 get_u32(const unsigned char *);

/* --- start --- */

/* A stored setting's numbers, big-endian. */
static void
put_u64(unsigned char *p, uint64_t v)
{
	put_u32(p, (uint32_t)(v >> 32));
	put_u32(p + 4, (uint32_t)v);
}

static void
put_u32(unsigned char *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static uint64_t
get_u64(const unsigned char *p)
{
	return (uint64_t)get_u32(p) << 32 | get_u32(p + 4);
}

static uint32_t
get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

static void
pause_name(char *buf, size_t len, const char *source, uint32_t sink)
{
	snprintf(buf, len, "pause:%s#%u", source, sink);
}

static void
srate_name(char *buf, size_t len, const char *tenant, const char *source,
    uint32_t sink)
{
	snprintf(buf, len, "srate:%s/%s#%u", tenant, source, sink);
}

/* A stored srate:<tenant>/<source>#<sink>: 0, or -1 not understood. */
static int
srate_load(const char *name, const unsigned char *v, size_t len)
{
	char tenant[STORE_SETTING_NAME_MAX + 1], *source, *hash, *e;
	unsigned long sink;
	uint64_t bits;
	double ps;

	snprintf(tenant, sizeof(tenant), "%s", name + 6);
	if (len < 12 || (source = strchr(tenant, '/')) == NULL ||
	    (hash = strrchr(source, '#')) == NULL)
		return -1;
	*source++ = '\0';
	*hash++ = '\0';
	sink = strtoul(hash, &e, 10);
	bits = get_u64(v);
	memcpy(&ps, &bits, sizeof(ps));
	/* The bounds of a sink's rate (common/conf_keys.c). */
	if (!conf_valid_id(tenant) || !conf_valid_id(source) ||
	    *hash == '\0' || *e != '\0' || sink > UINT32_MAX ||
	    !(ps > 0 && ps <= 1e6) || get_u32(v + 8) > 1000000 ||
	    rateov_set(tenant, source, (uint32_t)sink, ps,
	    get_u32(v + 8)) == -1)
		return -1;
	return 0;
}

static int
load_fn(const char *name, const void *val, size_t len, void *arg)
{
	const unsigned char *v = val;
	char source[STORE_NAME_MAX + 1], *hash;
	char reason[PAUSE_REASON_MAX + 1];
	unsigned long sink;
	uint64_t bits;
	double rate;

	if (strncmp(name, "pause:", 6) == 0) {
		snprintf(source, sizeof(source), "%s", name + 6);
		if ((hash = strrchr(source, '#')) == NULL || len < 8 ||
		    len - 8 > PAUSE_REASON_MAX)
			goto bad;
		*hash = '\0';
		sink = strtoul(hash + 1, NULL, 10);
		memcpy(reason, v + 8, len - 8);
		reason[len - 8] = '\0';
		if (!conf_valid_id(source) || sink > UINT32_MAX ||
		    pause_add(source, (uint32_t)sink, get_u64(v), reason) ==
		    -1)
			goto bad;
		return 0;
	}
	if (strncmp(name, "srate:", 6) == 0) {
		if (srate_load(name, v, len) == -1)
			goto bad;
		return 0;
	}
	if (strncmp(name, "rate:", 5) == 0) {
		if (len < 12 || !conf_valid_id(name + 5))
			goto bad;
		bits = get_u64(v);
		memcpy(&rate, &bits, sizeof(rate));
		if (!(rate > 0 && rate <= 1e9) || get_u32(v + 8) == 0 ||
		    writer_rate_override(name + 5, rate, get_u32(v + 8)) ==
		    -1)
			goto bad;
		return 0;
	}
 bad:
	log_warnx("ops: stored setting %s of %zu bytes not understood: "
	    "skipped", name, len);
	return 0;
}

int
ops_init(char *err, size_t errlen)
{
	pause_clear();
	rateov_clear();
	writer_rate_clear();
	if (!jobs_init) {
		steps_init(&jobs, env->base);
		jobs_init = 1;
	}
	if (store_settings_list(env->store, "", load_fn, NULL) == -1) {
		snprintf(err, errlen, "store: %s", store_strerror(env->store));
		return -1;
	}
	if (pause_count() > 0 || writer_rate_count() > 0 ||
	    rateov_count() > 0)
		log_info("ops: %d paused sink keys, %zu rate-limit overrides, "
		    "%d sink rate overrides", pause_count(),
		    writer_rate_count(), rateov_count());
	return 0;
}

void
ops_stop(void)
{
	struct step_job *j;

	stopped = 1;
	while ((j = TAILQ_FIRST(&jobs.jobs)) != NULL)
		job_end((struct ops_job *)j,
		    "unavailable: the pipeline is stopping");
}

/* One setting written (del 0) or removed (del 1) in a synced batch.  0
 * (1 or 0 for a removal: there was one or not), or -1 with err. */
static int
setting_write(const char *name, const void *val, size_t len, int del,
    char *err, size_t errlen)
{
	struct store_batch *b;
	int rc = 0;

	if ((b = store_batch_begin(env->store)) == NULL)
		goto fail;
	if (del)
		rc = store_batch_setting_del(b, name);
	else
		rc = store_batch_setting_put(b, name, val, len);
	if (rc == -1) {
		store_batch_abort(b);
		goto fail;
	}
	if (store_batch_commit(b) == -1)
		goto fail;
	return rc;

 fail:
	return steps_store_failed(err, errlen);
}

/* --- jobs --- */

static int
skip_claimed(const unsigned char *key, void *arg)
{
	return pipeline_claimed(key);
}

static void
job_start(struct ops_job *j)
{
	if (stopped) {
		j->done(j->arg, 0, "unavailable: the pipeline is stopping");
		free(j);
		return;
	}
	j->m.skip = skip_claimed;
	j->m.visits = OPS_VISITS;
	j->m.limit = OPS_PAGE;
	j->sj.step = step;
	steps_add(&jobs, &j->sj);
}

void
ops_retry(const struct ops_target *t,
    void (*done)(void *, uint64_t, const char *), void *arg)
{
	struct ops_job *j;

	if ((j = calloc(1, sizeof(*j))) == NULL)
		fatal("ops");
	if (t->tenant != NULL) {
		snprintf(j->tenant, sizeof(j->tenant), "%s", t->tenant);
		j->m.tenant = j->tenant;
	}
	if (t->source != NULL) {
		snprintf(j->source, sizeof(j->source), "%s", t->source);
		j->m.source = j->source;
	}
	j->m.sink = t->sink;
	j->m.any_sink = t->any_sink;
	j->m.seq = t->seq;
	/* Backing off: due after now, short of a pause's time; a row parked
	 * by an open breaker waits for the breaker. */
	j->m.from = time_wall_ms() + 1;
	j->m.to = STORE_DUE_PAUSED - 1;
	j->m.keep_parked = 1;
	j->done = done;
	j->arg = arg;
	job_start(j);
}

void
ops_resume(const char *source, uint32_t sink,
    void (*done)(void *, uint64_t, const char *), void *arg)
{
	const char *reason = pause_reason(source, sink);
	struct ops_job *j;

	if (reason == NULL) {
		done(arg, 0, "not_paused");
		return;
	}
	/* Its failures before the pause are no streak of the key's now. */
	failstreak_ok(source, sink);
	/* A disabled key is enabled again: said to the notices. */
	if (reason[0] != '\0')
		notice_emit("sink.enabled", notice_sink_data(
		    audit_tenant_of(source), source, sink, ops_module(source,
		    sink), reason));
	if ((j = calloc(1, sizeof(*j))) == NULL)
		fatal("ops");
	snprintf(j->source, sizeof(j->source), "%s", source);
	j->m.source = j->source;
	j->m.sink = sink;
	j->m.from = j->m.to = STORE_DUE_PAUSED;
	j->resume = 1;
	j->done = done;
	j->arg = arg;
	/* Its rows claimed from now on go ahead; those set aside follow. */
	pause_del(source, sink);
	log_info("ops: sink %s#%u resumed", source, sink);
	job_start(j);
}

void
ops_detach(void *arg)
{
	struct step_job *j;

	TAILQ_FOREACH(j, &jobs.jobs, entry)
		if (((struct ops_job *)j)->arg == arg)
			((struct ops_job *)j)->done = NULL;
}

/* One step of a job: 1 more to do, 0 it ended. */
static int
step(struct step_job *sj)
{
	struct ops_job *j = (struct ops_job *)sj;
	char err[256];
	int rc;

	if ((rc = job_step(j, err, sizeof(err))) == 1)
		return 1;
	job_end(j, rc == -1 ? err : NULL);
	return 0;
}

/* 1 more to do, 0 done, -1 with err. */
static int
job_step(struct ops_job *j, char *err, size_t errlen)
{
	struct store_batch *b;
	uint64_t moved0 = j->m.moved;
	char name[STORE_SETTING_NAME_MAX + 1];
	int rc;

	j->m.due = time_wall_ms();
	if ((b = store_batch_begin(env->store)) == NULL)
		goto fail;
	if (j->m.seq != 0)
		rc = store_batch_hook_move(b, &j->m);
	else
		rc = store_batch_due_move(b, &j->m);
	/* Paused again meanwhile: that pause's record is the one stored. */
	if (rc == 0 && j->resume && !pause_is(j->source, j->m.sink)) {
		pause_name(name, sizeof(name), j->source, j->m.sink);
		if (store_batch_setting_del(b, name) == -1)
			rc = -1;
	}
	if (rc == -1) {
		store_batch_abort(b);
		j->m.moved = moved0;
		goto fail;
	}
	if (store_batch_commit(b) == -1) {
		j->m.moved = moved0;
		goto fail;
	}
	if (j->m.moved > moved0)
		pipeline_wake(j->m.due);
	return rc;

 fail:
	return steps_store_failed(err, errlen);
}

static void
job_end(struct ops_job *j, const char *err)
{
	steps_end(&jobs, &j->sj);
	if (err != NULL)
		log_warnx("ops: %s of %s: %s (%" PRIu64 " rows moved)",
		    j->resume ? "resume" : "retry now", j->source[0] != '\0' ?
		    j->source : "every source", err, j->m.moved);
	else if (j->m.moved > 0 || j->resume)
		log_info("ops: %s of %s: %" PRIu64 " rows due now",
		    j->resume ? "resume" : "retry now", j->source[0] != '\0' ?
		    j->source : "every source", j->m.moved);
	if (j->done != NULL)
		j->done(j->arg, j->m.moved, err);
	free(j);
}

/* --- pauses --- */

int
ops_pause(const char *source, uint32_t sink, char *err, size_t errlen)
{
	unsigned char v[8];
	char name[STORE_SETTING_NAME_MAX + 1];
	uint64_t now = time_wall_ms();

	if (pause_is(source, sink))
		return 0;
	if (pause_count() >= PAUSE_MAX) {
		snprintf(err, errlen, "too many paused keys (at most %d)",
		    PAUSE_MAX);
		return -1;
	}
	pause_name(name, sizeof(name), source, sink);
	put_u64(v, now);
	if (setting_write(name, v, sizeof(v), 0, err, errlen) == -1)
		return -1;
	(void)pause_add(source, sink, now, NULL);
	pipeline_pause(source, sink);
	log_info("ops: sink %s#%u paused", source, sink);
	return 1;
}

/* The module of a source's sink as configured, 0 when it is not. */
static uint8_t
ops_module(const char *source, uint32_t sink)
{
	const struct source_conf *src = conf_source(env->conf, source);

	if (src == NULL || sink >= (uint32_t)src->nsinks)
		return 0;
	return dispatch_sink_module(src->sinks[sink].type);
}

/*
 * The key is disabled: a pause with a reason, stored (a synced batch) as
 * a pause is, so that it outlives a restart and a failover, audited as
 * the daemon's own act, counted, and said to the notices.  0, or -1 (the
 * store refused, or the set is full: logged).
 */
int
ops_disable(const char *source, uint32_t sink, const char *reason)
{
	unsigned char v[8 + PAUSE_REASON_MAX];
	char name[STORE_SETTING_NAME_MAX + 1], err[256];
	char target[STORE_NAME_MAX + 32];
	uint64_t now = time_wall_ms();
	size_t rl = strlen(reason);

	if (pause_is(source, sink))
		return 0;	/* paused or disabled already: held */
	if (rl > PAUSE_REASON_MAX)
		rl = PAUSE_REASON_MAX;
	snprintf(target, sizeof(target), "%s#%u", source, sink);
	if (pause_count() >= PAUSE_MAX) {
		log_warnx("ops: sink %s not disabled (%s): too many paused "
		    "keys (at most %d)", target, reason, PAUSE_MAX);
		return -1;
	}
	pause_name(name, sizeof(name), source, sink);
	put_u64(v, now);
	memcpy(v + 8, reason, rl);
	if (setting_write(name, v, 8 + rl, 0, err, sizeof(err)) == -1) {
		log_warnx("ops: sink %s not disabled (%s): %s", target,
		    reason, err);
		return -1;
	}
	(void)pause_add(source, sink, now, reason);
	pipeline_pause(source, sink);
	log_warnx("ops: sink %s disabled (%s): its rows are held until "
	    "ankusactl resume %s", target, reason, target);
	audit_record("ankusad", "sink.disable", target,
	    audit_tenant_of(source), reason);
	metrics_add("ankusa_dispatch_disabled_total", 1, "source_id", source,
	    "reason", strncmp(reason, "disable_on", 10) == 0 ? "disable_on" :
	    "disable_after_s", NULL);
	notice_emit("sink.disabled", notice_sink_data(audit_tenant_of(source),
	    source, sink, ops_module(source, sink), reason));
	return 0;
}

/* --- rate-limit overrides --- */

const struct rate_limit *
ops_rate_limit(const struct conf *c, const char *tenant, const char **from)
{
	return writer_rate_limit(c, tenant, from);
}

int
ops_rate_set(const char *tenant, double rate, uint32_t burst, char *err,
    size_t errlen)
{
	unsigned char v[12];
	char name[STORE_SETTING_NAME_MAX + 1];
	uint64_t bits;

	if (writer_rate_full(tenant)) {
		snprintf(err, errlen, "too many rate-limit overrides (at most "
		    "%d)", WRITER_RATE_MAX);
		return -1;
	}
	snprintf(name, sizeof(name), "rate:%s", tenant);
	memcpy(&bits, &rate, sizeof(bits));
	put_u64(v, bits);
	put_u32(v + 8, burst);
	if (setting_write(name, v, sizeof(v), 0, err, errlen) == -1)
		return -1;
	(void)writer_rate_override(tenant, rate, burst);
	writer_rate_reset(tenant);
	log_info("ops: tenant %s rate limit overridden: %g/s burst %u",
	    tenant, rate, burst);
	return 0;
}

int
ops_rate_del(const char *tenant, char *err, size_t errlen)
{
	char name[STORE_SETTING_NAME_MAX + 1];
	int rc;

	snprintf(name, sizeof(name), "rate:%s", tenant);
	if ((rc = setting_write(name, NULL, 0, 1, err, errlen)) == -1)
		return -1;
	if (writer_rate_unset(tenant))
		rc = 1;
	writer_rate_reset(tenant);
	if (rc == 1)
		log_info("ops: tenant %s rate-limit override removed", tenant);
	return rc;
}

void
ops_rate_each(int (*cb)(const char *, const struct rate_limit *, void *),
    void *arg)
{
	writer_rate_each(cb, arg);
}

/* --- sink rate overrides --- */

int
ops_sink_rate_set(const char *tenant, const char *source, uint32_t sink,
    double per_second, uint32_t burst, char *err, size_t errlen)
{
	unsigned char v[12];
	char name[STORE_SETTING_NAME_MAX + 1];
	uint64_t bits;
	double ps;
	uint32_t b;

	if (!rateov_get(tenant, source, sink, &ps, &b) &&
	    rateov_count() >= RATEOV_MAX) {
		snprintf(err, errlen, "too many sink rate overrides (at most "
		    "%d)", RATEOV_MAX);
		return -1;
	}
	srate_name(name, sizeof(name), tenant, source, sink);
	memcpy(&bits, &per_second, sizeof(bits));
	put_u64(v, bits);
	put_u32(v + 8, burst);
	if (setting_write(name, v, sizeof(v), 0, err, errlen) == -1)
		return -1;
	(void)rateov_set(tenant, source, sink, per_second, burst);
	pipeline_rate_changed(tenant, source, sink);
	log_info("ops: sink %s/%s#%u rate overridden: %g/s burst %u", tenant,
	    source, sink, per_second, burst);
	return 0;
}

int
ops_sink_rate_del(const char *tenant, const char *source, uint32_t sink,
    char *err, size_t errlen)
{
	char name[STORE_SETTING_NAME_MAX + 1];
	int rc;

	srate_name(name, sizeof(name), tenant, source, sink);
	if ((rc = setting_write(name, NULL, 0, 1, err, errlen)) == -1)
		return -1;
	if (rateov_del(tenant, source, sink))
		rc = 1;
	pipeline_rate_changed(tenant, source, sink);
	if (rc == 1)
		log_info("ops: sink %s/%s#%u rate override removed", tenant,
		    source, sink);
	return rc;
}
