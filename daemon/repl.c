/* SPDX-License-Identifier: ISC */
/*
 * repl.c: see repl.h.
 *
 * The role a node has when its store opens is the role of its process:
 * a master's loop schedules from the store as it was then, a client's
 * holds no scheduling state at all.  When the role changes (elected,
 * demoted, a duplicate master resolved) or a client's store is initialised
 * anew from the master (its handles are dead), the process executes
 * itself again (reexec.c): the store opens with recovery, the site rejoins
 * the group and the new role starts from the store, where a master finds
 * every row due, claimed ones included (claims are in memory:
 * at-least-once).  docs/DEPARTURES 38.
 */
#include "config.h"

#include <event2/event.h>
#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "conf.h"
#include "log.h"
#include "master.h"
#include "reexec.h"
#include "repl.h"
#include "store/store.h"
#include "store/store_group.h"

#define REPL_ENV_ELECTED	"ANKUSA_REPL_ELECTED"
#define REPL_BEAT_MS		1000
#define REPL_SILENT_MS		15000	/* a connected client this quiet */
#define REPL_SILENT_EVERY_MS	60000	/* is told of this often */

static struct store	*group_store;
static struct event	*ev_group;
static struct store_group_state at_start;
static char		 master_addr[300];
static struct event	*ev_beat;

/* Connected clients that stopped reporting, and when they were told of. */
static struct {
	char		 addr[300];
	uint64_t	 told_ms;
}			 silent[STORE_GROUP_MAX_PEERS + 1];

static void	repl_event_cb(evutil_socket_t, short, void *);
static void	repl_beat_cb(evutil_socket_t, short, void *);
static void	repl_silent_check(void);

int
repl_group_from_conf(const struct conf *c, struct store_group *g)
{
	const struct conf_repl *r = &c->repl;
	const char *v;
	size_t i;

	memset(g, 0, sizeof(*g));
	if (!r->enabled)
		return 0;
	g->local_host = r->local_host;
	g->local_port = r->local_port;
	for (i = 0; i < r->npeers && i < STORE_GROUP_MAX_PEERS; i++) {
		g->peer_host[i] = r->peers[i].host;
		g->peer_port[i] = r->peers[i].port;
	}
	g->npeers = i;
	g->priority = r->priority;
	g->create = r->create;
	g->ack_all = r->ack_all;
	g->ack_timeout_ms = r->ack_timeout_ms;
	g->heartbeat_ms = r->heartbeat_ms;
	g->heartbeat_timeout_ms = r->heartbeat_timeout_ms;
	/* Executed again because this site was elected (repl_event_cb):
	 * it takes up the role it won, for an election now could not be
	 * won by anyone while it is away and might go to another site,
	 * which would then execute itself again in turn. */
	g->as_master = reexec_inherited() && (v = getenv(REPL_ENV_ELECTED))
	    != NULL && strcmp(v, "1") == 0;
	(void)unsetenv(REPL_ENV_ELECTED);
	return 1;
}

void
repl_init(struct event_base *base, struct store *st)
{
	int fd;

	group_store = st;
	/* The children's /health says it (workers/edge.c). */
	if ((fd = store_group_fd(st)) == -1) {
		(void)setenv("ANKUSA_NODE_ROLE", "single", 1);
		return;
	}
	store_group_drain(st);
	store_group_state(st, &at_start);
	store_group_master(st, master_addr, sizeof(master_addr));
	log_info("replication: this node is the group's %s%s%s",
	    store_role_name(at_start.role), at_start.role ==
	    STORE_ROLE_CLIENT ? "; master " : "", at_start.role ==
	    STORE_ROLE_CLIENT ? (master_addr[0] != '\0' ? master_addr :
	    "unknown") : "");
	(void)setenv("ANKUSA_NODE_ROLE", store_role_name(at_start.role), 1);
	if ((ev_group = event_new(base, fd, EV_READ | EV_PERSIST,
	    repl_event_cb, NULL)) == NULL || event_add(ev_group, NULL) == -1)
		fatalx("replication: cannot watch the group's events");
	/* The master's beat: a probe committed every second, whose time a
	 * client reads to know how far behind it is (repl_lag_ms). */
	if (at_start.role == STORE_ROLE_MASTER) {
		struct timeval tv = { REPL_BEAT_MS / 1000,
		    REPL_BEAT_MS % 1000 * 1000 };

		if ((ev_beat = event_new(base, -1, EV_PERSIST, repl_beat_cb,
		    NULL)) == NULL || event_add(ev_beat, &tv) == -1)
			fatalx("replication: cannot arm the beat");
	}
}

static void
repl_event_cb(evutil_socket_t fd, short what, void *arg)
{
	struct store_group_state s;
	char addr[300], why[512];

	(void)fd, (void)what, (void)arg;
	store_group_drain(group_store);
	store_group_state(group_store, &s);
	store_group_master(group_store, addr, sizeof(addr));
	if (strcmp(addr, master_addr) != 0) {
		log_info("replication: the group's master is %s",
		    addr[0] != '\0' ? addr : "unknown");
		snprintf(master_addr, sizeof(master_addr), "%s", addr);
	}
	why[0] = '\0';
	if (s.panic)
		snprintf(why, sizeof(why), "the store's environment failed "
		    "(recovery at the start)");
	else if (s.role != at_start.role && s.role != STORE_ROLE_NONE)
		snprintf(why, sizeof(why), "this node is now the group's %s "
		    "(it was its %s)", store_role_name(s.role),
		    store_role_name(at_start.role));
	else if (s.handles_dead)
		snprintf(why, sizeof(why), "the store's handles are dead "
		    "after a rollback by the replication manager");
	else if (s.inits != at_start.inits)
		snprintf(why, sizeof(why), "the store was initialised anew "
		    "from the master");
	if (why[0] == '\0')
		return;
	log_warnx("replication: %s", why);
	if (!s.panic && s.role == STORE_ROLE_MASTER &&
	    at_start.role != STORE_ROLE_MASTER)
		(void)setenv(REPL_ENV_ELECTED, "1", 1);
	master_reexec(why);
}

static void
repl_beat_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what, (void)arg;
	/* Refused while the master is in doubt or stopping: the clients'
	 * lag grows, which is the truth. */
	if (repl_writable() && !env->draining)
		(void)store_ready_probe(group_store, time_wall_ms());
	repl_silent_check();
}

/*
 * A client whose process hangs (stopped, swapped out) or whose network
 * drops packets without a reset keeps its connection to the master, and
 * Berkeley DB keeps on the master every log file from the last one that
 * client acknowledged (repmgr counts each connected site): the disk fills
 * while it stays so.  Its lag reports (store_lag.c) stop; past
 * REPL_SILENT_MS it is named in the log, once a minute while it lasts.
 */
/* The slot of the client at addr, taken if it has none; -1 when full. */
static int
silent_slot(const char *addr)
{
	size_t j, n = sizeof(silent) / sizeof(silent[0]);
	int free_j = -1;

	for (j = 0; j < n; j++) {
		if (strcmp(silent[j].addr, addr) == 0)
			return (int)j;
		if (silent[j].addr[0] == '\0' && free_j == -1)
			free_j = (int)j;
	}
	if (free_j != -1) {
		snprintf(silent[free_j].addr, sizeof(silent[free_j].addr), "%s",
		    addr);
		silent[free_j].told_ms = 0;
	}
	return free_j;
}

static void
repl_silent_check(void)
{
	struct store_site sites[STORE_GROUP_MAX_PEERS + 1];
	uint64_t now = time_mono_ms();
	int i, j, n;

	n = store_group_sites(group_store, sites,
	    sizeof(sites) / sizeof(sites[0]));
	for (i = 0; i < n; i++) {
		if (!sites[i].connected || sites[i].said_ms_ago < REPL_SILENT_MS ||
		    (j = silent_slot(sites[i].addr)) == -1)
			continue;
		if (silent[j].told_ms != 0 &&
		    now - silent[j].told_ms < REPL_SILENT_EVERY_MS)
			continue;
		silent[j].told_ms = now;
		log_warnx("replication: site %s is connected but has not "
		    "reported its log for %lld s (hung, or its network drops "
		    "packets), %lld bytes behind: while it stays connected "
		    "the master keeps every log file from the last it "
		    "acknowledged; restart or stop it", sites[i].addr,
		    (long long)(sites[i].said_ms_ago / 1000),
		    (long long)sites[i].lag_bytes);
	}
}

int64_t
repl_lag_ms(void)
{
	uint64_t beat, now = time_wall_ms();

	if (group_store == NULL || store_group_fd(group_store) == -1 ||
	    at_start.role != STORE_ROLE_CLIENT)
		return 0;
	if (store_probe_ms(group_store, &beat) == -1 || beat == 0)
		return -1;
	return now > beat ? (int64_t)(now - beat) : 0;
}

int64_t
repl_lag_bytes(void)
{
	if (group_store == NULL || store_group_fd(group_store) == -1 ||
	    at_start.role != STORE_ROLE_CLIENT)
		return 0;
	return store_group_lag_bytes(group_store);
}

/* How far behind the master each site is in bytes, as this node knows:
 * on a client its own lag, on the master each client's that reported.
 * f(site, bytes, arg) for each; a single node has none. */
void
repl_lag_sites(void (*f)(const char *, int64_t, void *), void *arg)
{
	struct store_site sites[STORE_GROUP_MAX_PEERS + 1];
	char self[300];
	int64_t lag;
	int i, n;

	if (group_store == NULL || store_group_fd(group_store) == -1)
		return;
	if (at_start.role == STORE_ROLE_CLIENT) {
		if ((lag = repl_lag_bytes()) >= 0 &&
		    store_group_local(group_store, self, sizeof(self)) == 0)
			f(self, lag, arg);
		return;
	}
	n = store_group_sites(group_store, sites,
	    sizeof(sites) / sizeof(sites[0]));
	for (i = 0; i < n; i++)
		if (sites[i].lag_bytes >= 0)
			f(sites[i].addr, sites[i].lag_bytes, arg);
}

int
repl_writable(void)
{
	return group_store == NULL || store_role(group_store) ==
	    STORE_ROLE_SINGLE || (at_start.role == STORE_ROLE_MASTER &&
	    store_role(group_store) == STORE_ROLE_MASTER);
}

const char *
repl_role(void)
{
	enum store_role r;

	if (group_store == NULL)
		return "single";
	r = store_role(group_store);
	return store_role_name(r == STORE_ROLE_NONE ? STORE_ROLE_CLIENT : r);
}

const char *
repl_master(void)
{
	return master_addr;
}

void
repl_reload(const struct conf *c)
{
	struct store_group g;

	if (group_store == NULL || !repl_group_from_conf(c, &g))
		return;
	if (store_group_timeouts(group_store, &g) == -1)
		log_warnx("replication: %s", store_strerror(group_store));
}

void
repl_stats(struct repl_stats *rs)
{
	struct store_group_state s;
	struct store_site sites[STORE_GROUP_MAX_PEERS + 1];
	int i, n;

	memset(rs, 0, sizeof(*rs));
	if (group_store == NULL || store_group_fd(group_store) == -1)
		return;
	store_group_state(group_store, &s);
	rs->elections = s.elections;
	rs->perm_failed = s.perm_failed;
	rs->connects = s.connects;
	rs->disconnects = s.disconnects;
	if ((n = store_group_sites(group_store, sites,
	    sizeof(sites) / sizeof(sites[0]))) > 0) {
		rs->sites = n;
		for (i = 0; i < n; i++)
			rs->connected += sites[i].connected;
	}
}

json_t *
repl_status_json(void)
{
	struct store_group_state s;
	struct store_site sites[STORE_GROUP_MAX_PEERS + 1];
	json_t *o, *a;
	int i, n;

	if (group_store == NULL || store_group_fd(group_store) == -1)
		return NULL;
	store_group_state(group_store, &s);
	a = json_array();
	n = store_group_sites(group_store, sites,
	    sizeof(sites) / sizeof(sites[0]));
	for (i = 0; i < n; i++)
		json_array_append_new(a, json_pack("{s:s, s:b, s:b, s:I}",
		    "address", sites[i].addr, "connected", sites[i].connected,
		    "master", sites[i].is_master, "lag_bytes",
		    (json_int_t)sites[i].lag_bytes));
	o = json_pack("{s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "sites", a,
	    "lag_ms", (json_int_t)repl_lag_ms(),
	    "lag_bytes", (json_int_t)repl_lag_bytes(),
	    "elections", (json_int_t)s.elections, "perm_failed",
	    (json_int_t)s.perm_failed, "connects", (json_int_t)s.connects,
	    "disconnects", (json_int_t)s.disconnects, "inits",
	    (json_int_t)s.inits);
	return o;
}
