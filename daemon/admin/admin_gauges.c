/* SPDX-License-Identifier: ISC */
/*
 * admin_gauges.c: the gauges' readers, the per-tenant pass and the blocked lane
 * heads; see admin_gauges.h.
 *
 * The readers take what the master keeps anyway: the store's counters
 * (store_counts, from meta), its earliest due time (one seek per tenant),
 * the dispatch's statistics (in memory) and statvfs of node.data_dir.
 * None walks a table, so a scrape costs the same with a million rows.
 *
 * The store keeps no per-tenant count, so ankusa_tenant_pending comes
 * from a pass over the due keys (keys only: one row read per step, to
 * resume the walk after it), GAUGES_STEP_KEYS a step with the loop free
 * between steps, every tenant in turn; the counts are published when the
 * pass ends, and the next pass starts GAUGES_PASS_EVERY times its own
 * busy time later (at least GAUGES_PASS_MIN_MS), which bounds its share
 * of the loop.  Nothing is kept across a restart: the first pass after
 * the start counts again from the store.  A row that moves during a pass
 * may be counted twice or not at all by it; the next pass is right again.
 *
 * Blocked lane heads are a bounded set of row keys, kept from the
 * settles: a head rescheduled (retry or park) joins it, a head delivered
 * or dead-lettered leaves it.  After a restart a head blocked before it
 * joins at its next failure.
 */
#include "config.h"

#include <sys/statvfs.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "admin_dlq.h"
#include "admin_gauges.h"
#include "admin_sinks.h"
#include "clock.h"
#include "conf.h"
#include "dispatch/dispatch.h"
#include "dispatch/pause.h"
#include "ids.h"
#include "log.h"
#include "master.h"
#include "metrics.h"
#include "pipeline/pipeline.h"
#include "repl.h"
#include "sandbox.h"
#include "store/store.h"
#include "supervisor.h"

#define GAUGES_STEP_KEYS	4096	/* due keys a step */
#define GAUGES_PASS_MIN_MS	2000
#define GAUGES_PASS_EVERY	20	/* pause = 20 x the pass's busy time */
#define GAUGES_MAX_TENANTS	(METRICS_MAX_SERIES - 1)
#define GAUGES_LANES		16384	/* slots; 3/4 of them used at most */

struct tcount {
	char		name[STORE_NAME_MAX + 1];
	uint64_t	n;
};

/* The pass under way. */
static struct {
	struct event	*ev;
	struct tcount	*t;		/* tenants with a due key */
	size_t		 nt, cap, cur;	/* cur: the tenant being walked */
	uint64_t	 other;		/* past GAUGES_MAX_TENANTS */
	int		 resume;	/* after (due, rk) of tenant cur */
	uint64_t	 due;
	unsigned char	 rk[STORE_ROWKEY_LEN];
	unsigned	 keys;		/* this step's */
	uint64_t	 busy_us;	/* the pass's time in steps */
	int		 running;
} pass;

/* The blocked lane heads: open addressing, all-zero is a free slot (no
 * row has seq 0). */
static unsigned char	 lanes[GAUGES_LANES][STORE_ROWKEY_LEN];
static size_t		 nlanes;

static void	g_store(void);
static void	g_dispatch(void);
static void	g_disk(void);
static void	g_pauses(void);
static void	g_dlq(void);
static void	pass_cb(evutil_socket_t, short, void *);
static void	g_repl(void);
static void	g_sandbox(void);
static void	g_children(void);

/* Each reader sets its gauges; a new one is a line here.  The sink
 * keys' (sinks_gauges), whose cost grows with the keys, runs apart:
 * gauges_update_core leaves it out. */
static void (*const readers[])(void) = {
	g_store,
	g_dispatch,
	g_disk,
	g_pauses,
	g_dlq,
	g_repl,
	g_sandbox,
	g_children,
};

/* fn once per kind with a running child and feature of its sandbox. */
static void
sandbox_each(void (*fn)(const char *, const char *, int, void *), void *arg)
{
	const char *f;
	uint32_t have;
	int k, i;

	for (k = 0; k < KIND_MAX; k++) {
		if (supervisor_sandbox(k, &have) == 0)
			continue;
		for (i = 0; (f = sandbox_feature_name(i)) != NULL; i++)
			fn(supervisor_kind_name(k), f, (have >> i) & 1, arg);
	}
}

static void
sandbox_gauge(const char *child, const char *feature, int on, void *arg)
{
	metrics_set("ankusa_sandbox", on, "child", child, "feature", feature,
	    NULL);
}

/* The children running, by kind (a retiring generation's included). */
static void
g_children(void)
{
	int k;

	metrics_clear("ankusa_children");
	for (k = 0; k < KIND_MAX; k++)
		if (supervisor_children(k) > 0)
			metrics_set("ankusa_children", supervisor_children(k),
			    "child", supervisor_kind_name(k), NULL);
}

static void
g_sandbox(void)
{
	metrics_clear("ankusa_sandbox");
	sandbox_each(sandbox_gauge, NULL);
}

static void
sandbox_json(const char *child, const char *feature, int on, void *arg)
{
	json_t *o = arg, *k;

	if ((k = json_object_get(o, child)) == NULL) {
		k = json_object();
		json_object_set_new(o, child, k);
	}
	json_object_set_new(k, feature, json_boolean(on));
}

json_t *
gauges_sandbox_json(void)
{
	json_t *o = json_object();

	sandbox_each(sandbox_json, o);
	return o;
}

void
gauges_update(void)
{
	gauges_update_core();
	sinks_gauges();
}

void
gauges_update_core(void)
{
	size_t i;

	for (i = 0; i < sizeof(readers) / sizeof(readers[0]); i++)
		readers[i]();
}

static void
g_store(void)
{
	struct store_counts sc;
	struct dispatch_stats st;
	uint64_t due, now = time_wall_ms(), pending;
	int idle, busy, rc;

	if (store_counts(env->store, &sc) == -1)
		return;
	pipeline_stats(&st, &idle, &busy);
	metrics_set("ankusa_store_hooks", (double)sc.hooks, NULL);
	metrics_set("ankusa_archive_hooks", (double)sc.ahooks, NULL);
	metrics_set("ankusa_archive_bytes", (double)sc.abytes, NULL);
	metrics_set("ankusa_store_deliveries", (double)sc.rows, NULL);
	metrics_set("ankusa_queue_dead", (double)sc.dead, NULL);
	/* Claimed rows are still pending in the store. */
	pending = sc.rows > sc.dead ? sc.rows - sc.dead : 0;
	pending = pending > st.claimed ? pending - st.claimed : 0;
	metrics_set("ankusa_queue_pending", (double)pending, NULL);
	metrics_set("ankusa_queue_inflight", (double)st.claimed, NULL);
	if ((rc = store_oldest_due(env->store, &due)) != -1)
		metrics_set("ankusa_queue_oldest_due_age_seconds",
		    rc == 1 && due < now ? (double)(now - due) / 1000 : 0,
		    NULL);
}

static void
g_lag_site(const char *site, int64_t bytes, void *arg)
{
	(void)arg;
	metrics_set("ankusa_replication_lag_bytes", (double)bytes, "site",
	    site, NULL);
}

/* Sites removed for not being listed, as last added to the counter. */
static unsigned long	unknown_seen;

static void
g_repl(void)
{
	struct repl_stats rs;
	int64_t lag;

	metrics_clear("ankusa_replication_role");
	metrics_set("ankusa_replication_role", 1, "role", repl_role(), NULL);
	repl_stats(&rs);
	metrics_clear("ankusa_replication_sites");
	if (rs.sites > 0) {
		metrics_set("ankusa_replication_sites", rs.connected, "state",
		    "connected", NULL);
		metrics_set("ankusa_replication_sites", rs.sites -
		    rs.connected, "state", "disconnected", NULL);
	}
	metrics_set("ankusa_replication_elections", (double)rs.elections,
	    NULL);
	if ((lag = repl_lag_ms()) >= 0)
		metrics_set("ankusa_replication_lag_seconds", (double)lag /
		    1000, NULL);
	metrics_clear("ankusa_replication_lag_bytes");
	repl_lag_sites(g_lag_site, NULL);
	metrics_set("ankusa_replication_perm_failed", (double)rs.perm_failed,
	    NULL);
	metrics_set("ankusa_replication_connections_broken",
	    (double)rs.disconnects, NULL);
	/* A counter: what repl.c counted since the last read (0 shows
	 * it from the start). */
	metrics_add("ankusa_replication_unknown_sites_total",
	    rs.unknown_removed - unknown_seen, NULL);
	unknown_seen = rs.unknown_removed;
}

static void
g_dispatch(void)
{
	struct dispatch_stats st;
	int idle, busy;

	pipeline_stats(&st, &idle, &busy);
	metrics_set("ankusa_dispatch_running", st.running, NULL);
	metrics_set("ankusa_dispatch_claimed", st.claimed, NULL);
	metrics_set("ankusa_dispatch_claimed_bytes", (double)st.claimed_bytes,
	    NULL);
	metrics_set("ankusa_dispatch_breakers_open", st.breakers_open, NULL);
	metrics_set("ankusa_dispatch_lanes_blocked",
	    (double)gauges_lanes_blocked(), NULL);
}

static void
g_disk(void)
{
	struct statvfs sv;

	if (statvfs(env->conf->data_dir, &sv) == 0)
		metrics_set("ankusa_disk_free_bytes", (double)sv.f_bavail *
		    (double)sv.f_frsize, NULL);
}

static int
g_pause_one(const char *source, uint32_t sink, uint64_t since_ms, void *arg)
{
	char idx[16];

	snprintf(idx, sizeof(idx), "%u", sink);
	metrics_set("ankusa_dispatch_paused", 1, "source_id", source,
	    "sink_index", idx, NULL);
	return 0;
}

/* Paused keys are few (PAUSE_MAX) and named by the config's sources: the
 * series are cleared and set again, so a resumed key's goes. */
static void
g_pauses(void)
{
	metrics_set("ankusa_dispatch_paused_keys", (double)pause_count(),
	    NULL);
	metrics_clear("ankusa_dispatch_paused");
	pause_each(g_pause_one, NULL);
}

static void
g_dlq(void)
{
	metrics_set("ankusa_queue_dead_over_warn", dlq_over_warn(), NULL);
}

/*
 * Blocked lane heads.
 */

static size_t
lane_slot(const unsigned char *rk)
{
	return ids_fnv1a(IDS_FNV_INIT, rk, STORE_ROWKEY_LEN) % GAUGES_LANES;
}

void
gauges_settled(enum settle_kind kind, enum settle_written how,
    const unsigned char *key, const struct store_row *row, void *arg)
{
	if (kind == SETTLE_RESCHEDULE && row->state == STORE_ROW_HEAD)
		gauges_lane_head(key, 1);
	else if (kind != SETTLE_RESCHEDULE)
		gauges_lane_head(key, 0);
}

void
gauges_lane_head(const unsigned char rk[STORE_ROWKEY_LEN], int blocked)
{
	static const unsigned char zero[STORE_ROWKEY_LEN];
	size_t i = lane_slot(rk), n, j, k;

	for (n = 0; n < GAUGES_LANES; n++, i = (i + 1) % GAUGES_LANES) {
		if (memcmp(lanes[i], zero, STORE_ROWKEY_LEN) == 0)
			break;
		if (memcmp(lanes[i], rk, STORE_ROWKEY_LEN) == 0) {
			if (blocked)
				return;
			/* Delete, moving back the entries of the run
			 * after it that hash at or before the hole. */
			memset(lanes[i], 0, STORE_ROWKEY_LEN);
			nlanes--;
			for (j = (i + 1) % GAUGES_LANES;
			    memcmp(lanes[j], zero, STORE_ROWKEY_LEN) != 0;
			    j = (j + 1) % GAUGES_LANES) {
				k = lane_slot(lanes[j]);
				if ((j > i && (k <= i || k > j)) ||
				    (j < i && k <= i && k > j)) {
					memcpy(lanes[i], lanes[j],
					    STORE_ROWKEY_LEN);
					memset(lanes[j], 0, STORE_ROWKEY_LEN);
					i = j;
				}
			}
			return;
		}
	}
	/* Kept at most 3/4 full, so that a probe ends soon. */
	if (!blocked || n == GAUGES_LANES || nlanes >= GAUGES_LANES / 4 * 3 ||
	    memcmp(rk, zero, STORE_ROWKEY_LEN) == 0)
		return;
	memcpy(lanes[i], rk, STORE_ROWKEY_LEN);
	nlanes++;
}

size_t
gauges_lanes_blocked(void)
{
	return nlanes;
}

/*
 * The per-tenant pass.
 */

static int
tenant_fn(const char *tenant, uint64_t earliest, void *arg)
{
	struct tcount *nt;

	if (pass.nt == pass.cap) {
		pass.cap = pass.cap ? pass.cap * 2 : 16;
		if ((nt = reallocarray(pass.t, pass.cap, sizeof(*nt))) ==
		    NULL)
			fatal("gauges");
		pass.t = nt;
	}
	memset(&pass.t[pass.nt], 0, sizeof(pass.t[0]));
	snprintf(pass.t[pass.nt].name, sizeof(pass.t[0].name), "%s", tenant);
	pass.nt++;
	return 0;
}

/* Counts a key without its row; the step's last is read, to resume. */
static int
want_fn(const unsigned char *rk, void *arg)
{
	if (++pass.keys < GAUGES_STEP_KEYS) {
		pass.t[pass.cur].n++;
		return 0;
	}
	return 1;
}

static int
last_fn(const unsigned char *key, size_t klen, uint64_t due,
    const unsigned char *rk, const struct store_row *r, void *arg)
{
	pass.t[pass.cur].n++;
	pass.due = due;
	memcpy(pass.rk, rk, STORE_ROWKEY_LEN);
	pass.resume = 1;
	return 1;
}

static void
pass_arm(uint64_t ms)
{
	struct timeval tv;

	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(pass.ev, &tv);
}

static void
pass_publish(void)
{
	size_t i;

	metrics_clear("ankusa_tenant_pending");
	for (i = 0; i < pass.nt; i++) {
		if (i < GAUGES_MAX_TENANTS)
			metrics_set("ankusa_tenant_pending",
			    (double)pass.t[i].n, "tenant", pass.t[i].name,
			    NULL);
		else
			pass.other += pass.t[i].n;
	}
	if (pass.nt > GAUGES_MAX_TENANTS)
		metrics_set("ankusa_tenant_pending", (double)pass.other,
		    "tenant", "_other", NULL);
}

/* One step: walk up to GAUGES_STEP_KEYS due keys. */
static void
pass_cb(evutil_socket_t fd, short ev, void *arg)
{
	uint64_t t0 = time_mono_us(), pause;

	if (env->draining)
		return;
	if (!pass.running) {
		pass.nt = pass.cur = 0;
		pass.other = pass.busy_us = 0;
		pass.resume = 0;
		pass.running = 1;
		if (store_due_tenants(env->store, tenant_fn, NULL) == -1)
			goto failed;
	}
	pass.keys = 0;
	while (pass.cur < pass.nt && pass.keys < GAUGES_STEP_KEYS) {
		int resumed = pass.resume;

		pass.resume = 0;
		if (store_due_scan_from(env->store, pass.t[pass.cur].name,
		    UINT64_MAX, pass.due, resumed ? pass.rk : NULL, want_fn,
		    last_fn, NULL) == -1)
			goto failed;
		if (!pass.resume)
			pass.cur++;	/* the tenant's last key was passed */
	}
	pass.busy_us += time_mono_us() - t0;
	if (pass.cur < pass.nt) {
		pass_arm(0);
		return;
	}
	pass_publish();
	pass.running = 0;
	log_debug("gauges: pass over the due keys of %zu tenants: %llu us "
	    "in steps", pass.nt, (unsigned long long)pass.busy_us);
	pause = pass.busy_us / 1000 * GAUGES_PASS_EVERY;
	pass_arm(pause > GAUGES_PASS_MIN_MS ? pause : GAUGES_PASS_MIN_MS);
	return;
 failed:
	log_warnx("gauges: the pass over the due keys failed: %s; again in "
	    "%d ms", store_strerror(env->store), GAUGES_PASS_MIN_MS);
	pass.running = 0;
	pass_arm(GAUGES_PASS_MIN_MS);
}

void
gauges_init(void)
{
	if ((pass.ev = evtimer_new(env->base, pass_cb, NULL)) == NULL)
		fatalx("gauges: evtimer_new");
	pass_arm(0);
}
