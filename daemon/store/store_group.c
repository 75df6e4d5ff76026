/* SPDX-License-Identifier: ISC */
/*
 * store_group.c: the store as a site of a replication group; see
 * store_group.h.
 *
 * Berkeley DB 5.3's replication manager (repmgr), on its documented API
 * only, set up as shared/notes/bdb-replication.md (section 8.4) found it
 * must be:
 *
 *   - the ack policy and the priority are set before repmgr_start and
 *     never again in the process (5.3.28 stops a QUORUM master from
 *     waiting for acks after a change at run time: note 1.11); a reload
 *     changes only the timeouts (store_group_timeouts);
 *   - DB_REP_CONF_BULK: repmgr sets no TCP_NODELAY, and without bulk
 *     transfer each small commit waits out Nagle against delayed ACKs
 *     (some 40 ms on loopback: note 1.10);
 *   - heartbeats on, so that a client notices a master that hangs or is
 *     cut off, not only one whose connection breaks;
 *   - DB_REP_CHECKPOINT_DELAY 0: a master's checkpoint otherwise sleeps
 *     30 s in the loop's thread (note 1.4);
 *   - the environment's home is the data directory, not a tmpfs
 *     (docs/DEPARTURES 21): a table is named to the other sites by its
 *     path from the home, and the replication metadata (__db.rep.*) must
 *     outlive a reboot.
 *
 * Events arrive on repmgr's threads, and PERM_FAILED in the committing
 * one; the callback calls no Berkeley DB function (it may not): it counts,
 * and writes a byte to a pipe the loop watches.
 */
#include "config.h"

#include <db.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "store.h"
#include "store_group.h"
#include "store_int.h"

#define GROUP_NTHREADS		3	/* message threads */
#define GROUP_RETRY_US		1000000	/* election and connection retry */
#define GROUP_WAIT_STEP_US	10000
#define GROUP_WAIT_LOG_S	5

struct store_repl {
	int			 pipe[2];
	atomic_int		 role;
	atomic_int		 synced;
	atomic_int		 master_eid;
	atomic_ulong		 role_changes;
	atomic_ulong		 inits;
	atomic_ulong		 elections;
	atomic_ulong		 perm_failed;
	atomic_ulong		 connects;
	atomic_ulong		 disconnects;
	atomic_ulong		 sites_added;
	atomic_int		 panic;
	atomic_int		 handles_dead;
	unsigned long		 pf_before;	/* perm_failed at a commit */
	int			 in_doubt;
};

static void	group_event(DB_ENV *, u_int32_t, void *);
static void	group_poke(struct store_repl *);
static int	group_wait_role(struct store *);
static int	group_stopped(struct store *);

static const char *(*group_stop)(void);

const char *
store_role_name(enum store_role r)
{
	switch (r) {
	case STORE_ROLE_SINGLE:
		return "single";
	case STORE_ROLE_NONE:
		return "none";
	case STORE_ROLE_CLIENT:
		return "client";
	case STORE_ROLE_MASTER:
		return "master";
	}
	return "unknown";
}

/* Before DB_ENV->open: the sites, the policy, the timeouts.  The home is
 * the data directory (store.c), where the replication metadata
 * (__db.rep.*) then is too, and must be: it outlives a reboot. */
int
group_configure(struct store *st)
{
	const struct store_group *g = st->group;
	DB_ENV *e = st->env;
	DB_SITE *site;
	struct store_repl *r;
	size_t i;
	int ret;

	if ((r = st->repl) == NULL) {
		if ((r = calloc(1, sizeof(*r))) == NULL) {
			store_seterr(st, ENOMEM, "store %s: replication",
			    st->dir);
			return -1;
		}
		r->pipe[0] = r->pipe[1] = -1;
		if (pipe2(r->pipe, O_NONBLOCK | O_CLOEXEC) == -1) {
			store_seterr(st, 0, "store %s: pipe: %s", st->dir,
			    strerror(errno));
			free(r);
			return -1;
		}
		st->repl = r;
	}
	atomic_store(&r->role, STORE_ROLE_NONE);
	atomic_store(&r->synced, 0);
	atomic_store(&r->master_eid, -1);
	if ((ret = e->set_event_notify(e, group_event)) != 0) {
		store_seterr(st, ret, "store %s: set_event_notify", st->dir);
		return -1;
	}
	if ((ret = e->repmgr_site(e, g->local_host, g->local_port, &site,
	    0)) != 0) {
		store_seterr(st, ret, "replication.local %s:%u", g->local_host,
		    g->local_port);
		return -1;
	}
	ret = site->set_config(site, DB_LOCAL_SITE, 1);
	if (ret == 0 && g->create)
		ret = site->set_config(site, DB_GROUP_CREATOR, 1);
	(void)site->close(site);
	if (ret != 0) {
		store_seterr(st, ret, "replication.local %s:%u", g->local_host,
		    g->local_port);
		return -1;
	}
	for (i = 0; i < g->npeers; i++) {
		if ((ret = e->repmgr_site(e, g->peer_host[i], g->peer_port[i],
		    &site, 0)) != 0) {
			store_seterr(st, ret, "replication.peers %s:%u",
			    g->peer_host[i], g->peer_port[i]);
			return -1;
		}
		ret = site->set_config(site, DB_BOOTSTRAP_HELPER, 1);
		(void)site->close(site);
		if (ret != 0) {
			store_seterr(st, ret, "replication.peers %s:%u",
			    g->peer_host[i], g->peer_port[i]);
			return -1;
		}
	}
	if ((ret = e->repmgr_set_ack_policy(e, g->ack_all ?
	    DB_REPMGR_ACKS_ALL : DB_REPMGR_ACKS_QUORUM)) != 0 ||
	    (ret = e->rep_set_priority(e, g->priority)) != 0 ||
	    (ret = e->rep_set_config(e, DB_REP_CONF_BULK, 1)) != 0 ||
	    (ret = e->rep_set_timeout(e, DB_REP_CHECKPOINT_DELAY, 0)) != 0 ||
	    (ret = e->rep_set_timeout(e, DB_REP_ELECTION_RETRY,
	    GROUP_RETRY_US)) != 0 ||
	    (ret = e->rep_set_timeout(e, DB_REP_CONNECTION_RETRY,
	    GROUP_RETRY_US)) != 0) {
		store_seterr(st, ret, "store %s: configure replication",
		    st->dir);
		return -1;
	}
	if (group_lag_configure(st) == -1)
		return -1;
	return group_set_timeouts(st, g);
}

int
group_set_timeouts(struct store *st, const struct store_group *g)
{
	DB_ENV *e = st->env;
	int ret;

	if ((ret = e->rep_set_timeout(e, DB_REP_ACK_TIMEOUT,
	    (db_timeout_t)g->ack_timeout_ms * 1000)) != 0 ||
	    (ret = e->rep_set_timeout(e, DB_REP_HEARTBEAT_SEND,
	    (db_timeout_t)g->heartbeat_ms * 1000)) != 0 ||
	    (ret = e->rep_set_timeout(e, DB_REP_HEARTBEAT_MONITOR,
	    (db_timeout_t)g->heartbeat_timeout_ms * 1000)) != 0) {
		store_seterr(st, ret, "store %s: replication timeouts",
		    st->dir);
		return -1;
	}
	return 0;
}

int
store_group_timeouts(struct store *st, const struct store_group *g)
{
	if (st->repl == NULL)
		return 0;
	return group_set_timeouts(st, g);
}

/*
 * After DB_ENV->open, before the tables: start repmgr and wait until this
 * site is master, or a client caught up with one.  A site that cannot join
 * yet (DB_REP_UNAVAIL: no master, or too few sites to admit it) tries
 * again every second.  The wait has no end: a site that finds no group
 * serves nothing, and says so every few seconds.
 */
int
group_start(struct store *st)
{
	DB_ENV *e = st->env;
	time_t t0 = time(NULL), said = t0;
	useconds_t slept;
	int ret;

	for (;;) {
		if (group_stopped(st))
			return -1;
		ret = e->repmgr_start(e, GROUP_NTHREADS,
		    st->group->as_master ? DB_REP_MASTER : DB_REP_ELECTION);
		if (ret == 0 || ret == DB_REP_IGNORE)
			break;
		if (ret != DB_REP_UNAVAIL) {
			store_seterr(st, ret, "store %s: cannot start "
			    "replication on %s:%u", st->dir,
			    st->group->local_host, st->group->local_port);
			return -1;
		}
		if (time(NULL) - said >= GROUP_WAIT_LOG_S) {
			log_warnx("store: cannot join the replication group "
			    "yet (no master, or too few sites to admit this "
			    "one) after %lld s; retrying",
			    (long long)(time(NULL) - t0));
			said = time(NULL);
		}
		for (slept = 0; slept < GROUP_RETRY_US && !group_stopped(st);
		    slept += GROUP_WAIT_STEP_US)
			usleep(GROUP_WAIT_STEP_US);
	}
	if (group_wait_role(st) == -1)
		return -1;
	return group_lag_start(st);
}

void
store_group_stop_check(const char *(*stop)(void))
{
	group_stop = stop;
}

/* A stop asked while joining: the open fails, saying so. */
static int
group_stopped(struct store *st)
{
	const char *why;

	if (group_stop == NULL || (why = group_stop()) == NULL)
		return 0;
	store_seterr(st, 0, "store %s: %s " STORE_GROUP_STOPPED, st->dir,
	    why);
	return 1;
}

static int
group_wait_role(struct store *st)
{
	struct store_repl *r = st->repl;
	time_t t0 = time(NULL), said = t0;
	int role;

	for (;;) {
		if (group_stopped(st))
			return -1;
		if (atomic_load(&r->panic)) {
			store_seterr(st, DB_RUNRECOVERY, "store %s: the "
			    "environment failed while joining the group",
			    st->dir);
			return -1;
		}
		role = atomic_load(&r->role);
		if (role == STORE_ROLE_MASTER ||
		    (role == STORE_ROLE_CLIENT && atomic_load(&r->synced)))
			break;
		if (time(NULL) - said >= GROUP_WAIT_LOG_S) {
			log_warnx("store: no role in the replication group "
			    "after %lld s (%s, master %s); waiting",
			    (long long)(time(NULL) - t0),
			    role == STORE_ROLE_CLIENT ? "a client not yet "
			    "caught up" : "no election won",
			    atomic_load(&r->master_eid) >= 0 ? "known" :
			    "unknown");
			said = time(NULL);
		}
		usleep(GROUP_WAIT_STEP_US);
	}
	st->client = role == STORE_ROLE_CLIENT;
	return 0;
}

/* Repmgr's threads, or the committing thread: no Berkeley DB call. */
static void
group_event(DB_ENV *e, u_int32_t ev, void *info)
{
	struct store *st = e->app_private;
	struct store_repl *r;

	if (st == NULL || (r = st->repl) == NULL)
		return;
	switch (ev) {
	case DB_EVENT_REP_MASTER:
		atomic_store(&r->role, STORE_ROLE_MASTER);
		atomic_store(&r->master_eid, DB_EID_INVALID);
		atomic_fetch_add(&r->role_changes, 1);
		break;
	case DB_EVENT_REP_CLIENT:
		atomic_store(&r->role, STORE_ROLE_CLIENT);
		atomic_fetch_add(&r->role_changes, 1);
		break;
	case DB_EVENT_REP_DUPMASTER:
		/* Another master won: this site is a client again. */
		atomic_store(&r->role, STORE_ROLE_CLIENT);
		atomic_fetch_add(&r->role_changes, 1);
		break;
	case DB_EVENT_REP_NEWMASTER:
		if (info != NULL)
			atomic_store(&r->master_eid, *(int *)info);
		break;
	case DB_EVENT_REP_MASTER_FAILURE:
		atomic_store(&r->master_eid, -1);
		break;
	case DB_EVENT_REP_STARTUPDONE:
		atomic_store(&r->synced, 1);
		break;
	case DB_EVENT_REP_INIT_DONE:
		atomic_fetch_add(&r->inits, 1);
		break;
	case DB_EVENT_REP_ELECTED:
		atomic_fetch_add(&r->elections, 1);
		break;
	case DB_EVENT_REP_PERM_FAILED:
		atomic_fetch_add(&r->perm_failed, 1);
		break;
	case DB_EVENT_REP_CONNECT_ESTD:
		atomic_fetch_add(&r->connects, 1);
		break;
	case DB_EVENT_REP_CONNECT_BROKEN:
		atomic_fetch_add(&r->disconnects, 1);
		break;
	case DB_EVENT_REP_SITE_ADDED:
		/* The loop checks it against the peers (store_group_prune). */
		atomic_fetch_add(&r->sites_added, 1);
		break;
	case DB_EVENT_PANIC:
		atomic_store(&r->panic, 1);
		break;
	default:
		return;
	}
	group_poke(r);
}

static void
group_poke(struct store_repl *r)
{
	char c = 1;

	/* Full: the loop has bytes to read already. */
	(void)!write(r->pipe[1], &c, 1);
}

/* A call got DB_REP_HANDLE_DEAD: the loop re-opens (repl.c). */
void
group_handles_dead(struct store *st)
{
	if (st->repl == NULL)
		return;
	atomic_store(&st->repl->handles_dead, 1);
	group_poke(st->repl);
}

/* Around a batch's commit (store.c): did a quorum acknowledge it? */
void
group_commit_begin(struct store *st)
{
	if (st->repl == NULL)
		return;
	st->repl->pf_before = atomic_load(&st->repl->perm_failed);
	st->repl->in_doubt = 0;
}

int
group_commit_acked(struct store *st)
{
	struct store_repl *r = st->repl;

	if (r == NULL)
		return 1;
	r->in_doubt = atomic_load(&r->perm_failed) != r->pf_before;
	return !r->in_doubt;
}

int
store_in_doubt(struct store *st)
{
	return st->repl != NULL && st->repl->in_doubt;
}

enum store_role
store_role(struct store *st)
{
	if (st->repl == NULL)
		return STORE_ROLE_SINGLE;
	return atomic_load(&st->repl->role);
}

int
store_group_fd(struct store *st)
{
	return st->repl != NULL ? st->repl->pipe[0] : -1;
}

void
store_group_drain(struct store *st)
{
	char buf[64];

	if (st->repl == NULL)
		return;
	while (read(st->repl->pipe[0], buf, sizeof(buf)) > 0)
		;
}

void
store_group_state(struct store *st, struct store_group_state *s)
{
	struct store_repl *r = st->repl;

	memset(s, 0, sizeof(*s));
	s->master_eid = -1;
	if (r == NULL)
		return;
	s->role = atomic_load(&r->role);
	s->synced = atomic_load(&r->synced);
	s->master_eid = atomic_load(&r->master_eid);
	s->role_changes = atomic_load(&r->role_changes);
	s->inits = atomic_load(&r->inits);
	s->elections = atomic_load(&r->elections);
	s->perm_failed = atomic_load(&r->perm_failed);
	s->connects = atomic_load(&r->connects);
	s->disconnects = atomic_load(&r->disconnects);
	s->sites_added = atomic_load(&r->sites_added);
	s->panic = atomic_load(&r->panic);
	s->handles_dead = atomic_load(&r->handles_dead);
}

void
store_group_master(struct store *st, char *buf, size_t len)
{
	DB_SITE *site;
	const char *host;
	u_int port;
	int eid;

	*buf = '\0';
	if (st->repl == NULL)
		return;
	if (atomic_load(&st->repl->role) == STORE_ROLE_MASTER) {
		snprintf(buf, len, "%s:%u", st->group->local_host,
		    st->group->local_port);
		return;
	}
	if ((eid = atomic_load(&st->repl->master_eid)) < 0)
		return;
	if (st->env->repmgr_site_by_eid(st->env, eid, &site) != 0)
		return;
	if (site->get_address(site, &host, &port) == 0)
		snprintf(buf, len, "%s:%u", host, port);
	(void)site->close(site);
}

int
store_group_local(struct store *st, char *buf, size_t len)
{
	if (st->group == NULL)
		return -1;
	snprintf(buf, len, "%s:%u", st->group->local_host,
	    st->group->local_port);
	return 0;
}

int
store_group_sites(struct store *st, struct store_site *sites, size_t max)
{
	DB_REPMGR_SITE *list;
	u_int n, i;
	int meid, k = 0;

	if (st->repl == NULL)
		return 0;
	if (st->env->repmgr_site_list(st->env, &n, &list) != 0)
		return -1;
	meid = atomic_load(&st->repl->master_eid);
	for (i = 0; i < n && (size_t)k < max; i++) {
		snprintf(sites[k].addr, sizeof(sites[k].addr), "%s:%u",
		    list[i].host, list[i].port);
		sites[k].connected = list[i].status == DB_REPMGR_CONNECTED;
		sites[k].is_master = list[i].eid == meid;
		sites[k].lag_bytes = group_lag_site(st, sites[k].addr,
		    &sites[k].said_ms_ago);
		k++;
	}
	free(list);
	return k;
}

/* A member of the configured group: this site or a peer, by the host
 * string and port the group knows it by (repmgr_site's rule: the same
 * string everywhere). */
static int
group_listed(const struct store_group *g, const char *host, unsigned port)
{
	size_t i;

	if (strcmp(host, g->local_host) == 0 && port == g->local_port)
		return 1;
	for (i = 0; i < g->npeers; i++)
		if (strcmp(host, g->peer_host[i]) == 0 &&
		    port == g->peer_port[i])
			return 1;
	return 0;
}

int
store_group_prune(struct store *st,
    void (*removed)(const char *, const char *, void *), void *arg)
{
	DB_REPMGR_SITE *list;
	DB_SITE *site;
	char addr[300], why[256];
	u_int n, i;
	int ret, found = 0;

	if (st->repl == NULL ||
	    atomic_load(&st->repl->role) != STORE_ROLE_MASTER)
		return 0;
	if ((ret = st->env->repmgr_site_list(st->env, &n, &list)) != 0) {
		store_seterr(st, ret, "store %s: repmgr_site_list", st->dir);
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (group_listed(st->group, list[i].host, list[i].port))
			continue;
		found++;
		snprintf(addr, sizeof(addr), "%s:%u", list[i].host,
		    list[i].port);
		/* The handle is gone after remove, whatever it returns. */
		if ((ret = st->env->repmgr_site(st->env, list[i].host,
		    list[i].port, &site, 0)) == 0)
			ret = site->remove(site);
		if (ret == 0) {
			removed(addr, NULL, arg);
			continue;
		}
		snprintf(why, sizeof(why), "%s", db_strerror(ret));
		removed(addr, why, arg);
	}
	free(list);
	return found;
}

/* One allocation: the struct, then its strings. */
struct store_group *
group_copy(const struct store_group *g)
{
	struct store_group *c;
	size_t i, len = sizeof(*c) + strlen(g->local_host) + 1;
	char *p;

	if (g->npeers > STORE_GROUP_MAX_PEERS)
		return NULL;
	for (i = 0; i < g->npeers; i++)
		len += strlen(g->peer_host[i]) + 1;
	if ((c = malloc(len)) == NULL)
		return NULL;
	*c = *g;
	p = (char *)(c + 1);
	c->local_host = strcpy(p, g->local_host);
	p += strlen(p) + 1;
	for (i = 0; i < g->npeers; i++) {
		c->peer_host[i] = strcpy(p, g->peer_host[i]);
		p += strlen(p) + 1;
	}
	return c;
}

void
group_free(struct store *st)
{
	struct store_repl *r = st->repl;

	free(st->group);
	st->group = NULL;
	group_lag_free(st);
	if (r == NULL)
		return;
	if (r->pipe[0] != -1)
		close(r->pipe[0]);
	if (r->pipe[1] != -1)
		close(r->pipe[1]);
	free(r);
	st->repl = NULL;
}
