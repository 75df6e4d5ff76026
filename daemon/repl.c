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
 *
 * replication.local and replication.peers are the group's membership:
 * Berkeley DB 5.3 admits any site that reaches a member and asks, with
 * no authentication, so the master removes every other site as soon as
 * it joins (store_group_prune, at each site-added event and each beat),
 * logs an error and counts it.  A site removed may ask again; it is
 * removed again.  ankusad also refuses to start with a public
 * replication.local unless replication.insecure_public says so
 * (repl_check_network).
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <jansson.h>
#include <netdb.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "conf.h"
#include "log.h"
#include "master.h"
#include "netaddr.h"
#include "notice.h"
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
static int		 elected;	/* executed again as the group's new
					 * master */
/* Sites removed for not being listed: how many, and the last ones; the
 * newest logged at error when it is removed, again no more than once in
 * REPL_SILENT_EVERY_MS while it keeps rejoining (each beat). */
static unsigned long	 unknown_removed;
static char		 unknown_last[4][300];
static uint64_t		 unknown_told_ms;

/* Connected clients that stopped reporting, and when they were told of. */
static struct {
	char		 addr[300];
	uint64_t	 told_ms;
}			 silent[STORE_GROUP_MAX_PEERS + 1];

static void	repl_event_cb(evutil_socket_t, short, void *);
static void	repl_beat_cb(evutil_socket_t, short, void *);
static void	repl_silent_check(void);
static void	repl_prune(void);
static void	repl_elected_cb(evutil_socket_t, short, void *);
static void	repl_pruned(const char *, const char *, void *);

int
repl_check_network(const struct conf *c, char *err, size_t errlen)
{
	const struct conf_repl *r = &c->repl;
	struct addrinfo hints, *res, *ai;
	struct netaddr na;
	enum netaddr_class cls;
	char text[NETADDR_STRLEN];
	int rc = 0;

	if (!r->enabled || r->insecure_public || r->local_host == NULL)
		return 0;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	/* A name that does not resolve: the replication manager says so
	 * when it binds. */
	if (getaddrinfo(r->local_host, NULL, &hints, &res) != 0)
		return 0;
	for (ai = res; ai != NULL && rc == 0; ai = ai->ai_next) {
		if (netaddr_from_sockaddr(ai->ai_addr, ai->ai_addrlen,
		    &na) == -1)
			continue;
		cls = netaddr_classify(&na);
		if (cls == NETADDR_LOOPBACK || cls == NETADDR_PRIVATE ||
		    cls == NETADDR_LINKLOCAL || cls == NETADDR_CGNAT)
			continue;
		netaddr_format(&na, text, sizeof(text));
		snprintf(err, errlen, "replication.local %s is %s, a%s %s "
		    "address: the replication group's traffic is neither "
		    "encrypted nor authenticated, so it must stay on a "
		    "private network (loopback, RFC 1918, fc00::/7, "
		    "100.64/10, link-local; a WireGuard tunnel's address is "
		    "one): see REPLICATION in ankusad(8), or set "
		    "replication.insecure_public: true", r->local, text,
		    cls == NETADDR_PUBLIC ? "" : "n",
		    netaddr_class_name(cls));
		rc = -1;
	}
	freeaddrinfo(res);
	return rc;
}

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
	if (g->as_master)
		elected = 1;	/* a second call finds the variable gone */
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
		repl_prune();
		/* The new master says so, once it is one (notice.h): from
		 * the loop, the writer wired by then. */
		if (elected && event_base_once(base, -1, EV_TIMEOUT,
		    repl_elected_cb, NULL, &(struct timeval){ 0, 0 }) == -1)
			log_warnx("replication: no notice of this election");
	}
}

static void
repl_elected_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what, (void)arg;
	notice_emit("replication.master_changed", json_pack("{s:s}",
	    "master", master_addr[0] != '\0' ? master_addr :
	    env->conf->repl.local));
}

/* On the master: every site not listed is removed (store_group_prune). */
static void
repl_prune(void)
{
	if (at_start.role != STORE_ROLE_MASTER ||
	    store_role(group_store) != STORE_ROLE_MASTER)
		return;
	if (store_group_prune(group_store, repl_pruned, NULL) == -1)
		log_warnx("replication: %s", store_strerror(group_store));
}

static void
repl_pruned(const char *addr, const char *err, void *arg)
{
	uint64_t now = time_mono_ms();
	size_t i;

	(void)arg;
	if (err != NULL) {
		log_warnx("replication: site %s is not in replication.peers "
		    "and could not be removed from the group: %s", addr, err);
		return;
	}
	unknown_removed++;
	if (strcmp(unknown_last[0], addr) == 0 &&
	    now - unknown_told_ms < REPL_SILENT_EVERY_MS) {
		log_debug("replication: site %s removed again (%lu unknown "
		    "sites removed)", addr, unknown_removed);
		return;
	}
	if (strcmp(unknown_last[0], addr) != 0) {
		for (i = sizeof(unknown_last) / sizeof(unknown_last[0]) - 1;
		    i > 0; i--)
			memcpy(unknown_last[i], unknown_last[i - 1],
			    sizeof(unknown_last[i]));
		snprintf(unknown_last[0], sizeof(unknown_last[0]), "%s", addr);
	}
	unknown_told_ms = now;
	log_errorx("replication: site %s joined the group but is not "
	    "in replication.peers: removed (%lu unknown sites removed); a "
	    "host that reaches the replication port can join, keep it on a "
	    "private network", addr, unknown_removed);
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
	if (why[0] == '\0') {
		repl_prune();
		return;
	}
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
	repl_prune();
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
	rs->unknown_removed = unknown_removed;
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
	json_t *o, *a, *u;
	size_t k;
	int i, n;

	if (group_store == NULL || store_group_fd(group_store) == -1)
		return NULL;
	u = json_array();
	for (k = 0; k < sizeof(unknown_last) / sizeof(unknown_last[0]) &&
	    unknown_last[k][0] != '\0'; k++)
		json_array_append_new(u, json_string(unknown_last[k]));
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
	json_object_set_new(o, "unknown_sites_removed",
	    json_integer((json_int_t)unknown_removed));
	json_object_set_new(o, "unknown_sites", u);
	return o;
}
