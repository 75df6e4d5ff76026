/* SPDX-License-Identifier: ISC */
/*
 * admin_audit.c: the audit trail's entries, their log line and their
 * write, the admin API's action names, and the prune; see admin_audit.h.
 *
 * An entry is queued and written on the next loop pass (a zero timer), all
 * queued entries in one synced batch: the caller may be inside its own
 * batch (a job's step answering its request), where a second batch cannot
 * open, and its answer must not wait on our sync.  The queue holds at
 * most AUDIT_QUEUE_MAX entries; one more is a write error (logged and
 * counted, as any other).  A stop writes what is queued (audit_flush)
 * before the store closes.
 *
 * The prune is a job of prune.h: one batch of at most AUDIT_PRUNE_STEP
 * deletions a loop pass, started after a checkpoint, until no entry older
 * than admin.audit.max_age_s is left.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <event2/event.h>
#include <jansson.h>

#include "admin_audit.h"
#include "clock.h"
#include "conf.h"
#include "log.h"
#include "master.h"
#include "metrics.h"
#include "prune.h"
#include "repl.h"
#include "store/store.h"

#define AUDIT_QUEUE_MAX		256	/* entries waiting for their write */
#define AUDIT_PRUNE_STEP	500	/* deletions a step */

/* The admin API's changes, by route. */
static const struct {
	enum admin_method	 m;
	const char		*pattern;
	const char		*action;
} audit_routes[] = {
	{ ADMIN_DELETE, "/v1/dlq", "dlq.purge" },
	{ ADMIN_DELETE, "/v1/hooks/{}", "hook.delete" },
	{ ADMIN_DELETE, "/v1/quarantine", "quarantine.purge" },
	{ ADMIN_POST, "/v1/tenants/{}/sources/{}/retry-now", "retry_now" },
	{ ADMIN_POST, "/v1/retry-now", "retry_now" },
	{ ADMIN_POST, "/v1/tenants/{}/sources/{}/sinks/{}/pause",
	    "sink.pause" },
	{ ADMIN_POST, "/v1/tenants/{}/sources/{}/sinks/{}/resume",
	    "sink.resume" },
	{ ADMIN_POST, "/v1/tenants/{}/sources/{}/pause", "source.pause" },
	{ ADMIN_POST, "/v1/tenants/{}/sources/{}/resume", "source.resume" },
	{ ADMIN_PUT, "/v1/tenants/{}/rate-limit", "rate_limit.set" },
	{ ADMIN_DELETE, "/v1/tenants/{}/rate-limit", "rate_limit.delete" },
	{ ADMIN_PUT, "/v1/tenants/{}/sources/{}/sinks/{}/rate",
	    "sink_rate.set" },
	{ ADMIN_DELETE, "/v1/tenants/{}/sources/{}/sinks/{}/rate",
	    "sink_rate.delete" },
	{ ADMIN_POST, "/v1/tenants/{}/sources/{}/dead-letter",
	    "source.dead_letter" },
	{ ADMIN_DELETE, "/v1/tenants/{}/sources/{}", "source.delete" },
	{ ADMIN_POST, "/v1/replays", "replay.create" },
	{ ADMIN_PATCH, "/v1/replays/{}", "replay.change" },
	{ ADMIN_DELETE, "/v1/tenants/{}/hooks", "tenant.erase" },
};

/* A replay's change named by the state it asks for. */
static const struct {
	const char	*state;
	const char	*action;
} audit_replay_states[] = {
	{ "paused", "replay.pause" },
	{ "running", "replay.resume" },
	{ "cancelled", "replay.cancel" },
};

static struct store_audit	 queue[AUDIT_QUEUE_MAX];
static size_t			 nqueue;
static struct event		*ev_write;

static int	 audit_prune_fn(struct store_batch *, uint64_t, unsigned);

static struct prune		 prune = {
	.name = "audit",
	.what = "entries older than admin.audit.max_age_s",
	.max = AUDIT_PRUNE_STEP,
	.fn = audit_prune_fn,
};

static void	 audit_write_cb(evutil_socket_t, short, void *);
static void	 audit_failed(size_t, const char *);

const char *
audit_tenant_of(const char *source)
{
	const struct source_conf *sc;

	if (source == NULL || env->conf == NULL ||
	    (sc = conf_source(env->conf, source)) == NULL ||
	    sc->tenant == NULL)
		return "";
	return sc->tenant;
}

const char *
audit_action(enum admin_method m, const char *pattern, json_t *body,
    char *buf, size_t len)
{
	static const char *const names[] = { "", "GET", "POST", "PUT",
	    "PATCH", "DELETE" };
	const char *state;
	size_t i;

	for (i = 0; i < sizeof(audit_routes) / sizeof(audit_routes[0]); i++)
		if (audit_routes[i].m == m &&
		    strcmp(audit_routes[i].pattern, pattern) == 0)
			break;
	if (i == sizeof(audit_routes) / sizeof(audit_routes[0])) {
		snprintf(buf, len, "%s %s", m >= ADMIN_GET &&
		    m <= ADMIN_DELETE ? names[m] : "?", pattern);
		return buf;
	}
	if (m == ADMIN_PATCH && (state = json_string_value(
	    json_object_get(body, "state"))) != NULL) {
		for (i = 0; i < sizeof(audit_replay_states) /
		    sizeof(audit_replay_states[0]); i++)
			if (strcmp(state, audit_replay_states[i].state) == 0)
				return audit_replay_states[i].action;
		return "replay.change";
	}
	return audit_routes[i].action;
}

void
audit_record(const char *actor, const char *action, const char *target,
    const char *tenant, const char *outcome)
{
	struct store_audit *e;
	struct timeval tv = { 0, 0 };
	/* Each control character becomes four (\xNN). */
	char la[4 * STORE_AUDIT_ACTOR_MAX + 1];
	char lc[4 * STORE_AUDIT_ACTION_MAX + 1];
	char lt[4 * STORE_AUDIT_TARGET_MAX + 1], ln[4 * STORE_NAME_MAX + 1];
	char lo[4 * STORE_AUDIT_OUTCOME_MAX + 1];

	log_info("audit: actor=%s action=%s target=\"%s\" tenant=%s "
	    "outcome=\"%s\"", log_clean(la, sizeof(la), actor),
	    log_clean(lc, sizeof(lc), action), log_clean(lt, sizeof(lt),
	    target), tenant[0] != '\0' ? log_clean(ln, sizeof(ln), tenant) :
	    "-", log_clean(lo, sizeof(lo), outcome));
	if (!repl_writable()) {
		audit_failed(1, "this node's store is read only (a client of "
		    "its replication group)");
		return;
	}
	if (nqueue == AUDIT_QUEUE_MAX) {
		audit_failed(1, "too many entries waiting for their write");
		return;
	}
	e = &queue[nqueue++];
	memset(e, 0, sizeof(*e));
	e->at = time_wall_ms();
	/* The store cleans them (UTF-8) and cuts them between
	 * characters. */
	snprintf(e->actor, sizeof(e->actor), "%s", actor);
	snprintf(e->action, sizeof(e->action), "%s", action);
	snprintf(e->target, sizeof(e->target), "%s", target);
	snprintf(e->tenant, sizeof(e->tenant), "%s", tenant);
	snprintf(e->outcome, sizeof(e->outcome), "%s", outcome);
	if (ev_write == NULL &&
	    (ev_write = evtimer_new(env->base, audit_write_cb, NULL)) == NULL)
		fatalx("audit: evtimer_new");
	if (!evtimer_pending(ev_write, NULL))
		evtimer_add(ev_write, &tv);
}

/* n entries not stored. */
static void
audit_failed(size_t n, const char *why)
{
	log_warnx("audit: %zu %s not stored: %s", n, n == 1 ? "entry" :
	    "entries", why);
	metrics_add("ankusa_audit_write_errors_total", n, NULL);
}

static void
audit_write_cb(evutil_socket_t fd, short ev, void *arg)
{
	audit_flush();
}

void
audit_flush(void)
{
	struct store_batch *b;
	size_t i, n = nqueue;

	if (n == 0)
		return;
	nqueue = 0;
	if (ev_write != NULL)
		evtimer_del(ev_write);
	if ((b = store_batch_begin(env->store)) == NULL) {
		audit_failed(n, "no batch could be opened on the store");
		return;
	}
	for (i = 0; i < n; i++)
		if (store_batch_audit_put(b, &queue[i]) == -1) {
			store_batch_abort(b);
			audit_failed(n, store_strerror(env->store));
			master_store_check();
			return;
		}
	if (store_batch_commit(b) == -1) {
		audit_failed(n, store_strerror(env->store));
		master_store_check();
	}
}

void
audit_prune(void)
{
	prune_start(&prune);
}

/* One batch: the entries older than admin.audit.max_age_s at now. */
static int
audit_prune_fn(struct store_batch *b, uint64_t now, unsigned max)
{
	uint64_t age = env->conf->admin.audit_max_age_s * 1000;

	if (now <= age)
		return 0;
	return store_batch_audit_prune(b, now - age, max);
}
