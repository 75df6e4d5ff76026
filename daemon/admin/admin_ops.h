/* SPDX-License-Identifier: ISC */
/*
 * admin_ops.h: the operator's manual operations (issue 24, section 4): retry
 * now, pause and resume of a sink key, rate-limit overrides.  The admin
 * API's routes are daemon/admin/admin_api_ops.c's; the store's part is
 * store_settings.c's (store.h, "Manual operations").
 *
 * Moves of rows (retry now, resume) are jobs of bounded steps on the
 * master's loop, each step one synced batch of at most OPS_PAGE rows
 * moved and OPS_VISITS due keys read, one step a loop pass (a zero timer)
 * so that ingest and dispatch run between two steps.
 */
#ifndef ANKUSA_OPS_H
#define ANKUSA_OPS_H

#include <stddef.h>
#include <stdint.h>

struct conf;
struct rate_limit;

#define OPS_PAGE	256	/* rows moved a step */
#define OPS_VISITS	4096	/* due keys read a step */

/* At start, after the store opened: the stored pauses and overrides into
 * memory.  0, or -1 with err (a store error). */
int	 ops_init(char *err, size_t errlen);
/* The pipeline stops: jobs in progress end with "unavailable". */
void	 ops_stop(void);

/*
 * Retry now: every backing-off row (pending, due after now and not set
 * aside by a pause, not PARKED by an open breaker) of tenant (NULL: every
 * tenant) and source (NULL: every source), of sink unless any_sink, of
 * hook seq unless 0, becomes due at once, attempts unchanged.
 * done(arg, n, err) once: n rows moved; err NULL, or why it stopped (the
 * rows moved by then stay so).  done may run before this returns.
 */
struct ops_target {
	const char	*tenant;
	const char	*source;
	uint32_t	 sink;
	int		 any_sink;
	uint64_t	 seq;
};
void	 ops_retry(const struct ops_target *,
	    void (*done)(void *, uint64_t, const char *), void *arg);
/* Pause (source, sink): stored (synced) first, then in force; dispatch
 * sets its claimed rows aside.  1 paused, 0 paused already, -1 with err
 * (a store error, or too many pauses). */
/* Disable (source, sink): a pause with a reason ("disable_on: 410"),
 * stored, audited as ankusad's, counted and said to the notices; the
 * pipeline's disable hook (pipeline_on_disable).  0, or -1 not disabled
 * (logged). */
int	 ops_disable(const char *source, uint32_t sink, const char *reason);
int	 ops_pause(const char *source, uint32_t sink, char *err,
	    size_t errlen);
/* Resume: no longer paused at once (its rows claimed from now on go
 * ahead), its rows set aside brought back due now in steps, every
 * tenant's, then the stored pause removed; done(arg, n, err) as for
 * ops_retry, with n the rows brought back.  Not paused: done(arg, 0,
 * "not_paused").  A resume cut short (an error, a crash) leaves the pause
 * stored: after a restart the key is paused again and a resume finishes
 * it. */
void	 ops_resume(const char *source, uint32_t sink,
	    void (*done)(void *, uint64_t, const char *), void *arg);
/* The caller of a job with arg went away: the job finishes (rows move
 * consistently), done is not called. */
void	 ops_detach(void *arg);

/*
 * Rate-limit overrides: the tenant's limit as in force, and where it
 * comes from: "override", "tenant" (rate_limits.tenants.<t>), "default"
 * (rate_limits.default; unset: unlimited).  In force they are the
 * writer's (writer_rate_limit); here they are stored.
 */
const struct rate_limit *ops_rate_limit(const struct conf *,
	    const char *tenant, const char **from);
/* Stored (synced), then in force, the tenant's bucket reset.  0, or -1
 * with err (a store error, or too many overrides). */
int	 ops_rate_set(const char *tenant, double rate, uint32_t burst,
	    char *err, size_t errlen);
/* 1 removed (the tenant's bucket reset), 0 there was none, -1 with err. */
int	 ops_rate_del(const char *tenant, char *err, size_t errlen);
/* Every override, in tenant order. */
void	 ops_rate_each(int (*cb)(const char *tenant,
	    const struct rate_limit *, void *), void *);

/*
 * The operators' rates of sink keys (PUT /v1/tenants/{t}/sources/{s}/
 * sinks/{i}/rate), in place of the sink's rate: stored as settings
 * srate:<tenant>/<source>#<sink>, loaded at start (dispatch/rateov.h).
 */
/* Stored (synced), then in force.  0, or -1 with err (a store error, or
 * too many overrides). */
int	 ops_sink_rate_set(const char *tenant, const char *source,
	    uint32_t sink, double per_second, uint32_t burst, char *err,
	    size_t errlen);
/* 1 removed, 0 there was none, -1 with err. */
int	 ops_sink_rate_del(const char *tenant, const char *source,
	    uint32_t sink, char *err, size_t errlen);

#endif
