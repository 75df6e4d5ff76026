/* SPDX-License-Identifier: ISC */
/*
 * store_lag.c: how far behind its master each site of a replication group
 * is, in bytes of log (store_group.h: store_group_lag_bytes, the sites'
 * lag_bytes).
 *
 * Berkeley DB 5.3 tells a master nothing of where a client's log ends,
 * and a client nothing of where the master's does; every site's log has
 * the same LSNs, though.  So every beat a thread of this file on each
 * client asks the master over a repmgr message channel to DB_EID_MASTER
 * (DB_ENV->repmgr_channel; 5.3 has no broadcast channel): the request
 * carries the end of the client's log, the answer the end of the
 * master's.  The master takes the request on a repmgr thread in
 * lag_dispatch, which reads its own log's end (DB_ENV->log_stat: the
 * message dispatch callback may call Berkeley DB, unlike the event
 * callback of store_group.c), keeps the distance under the client's name
 * and answers; the client keeps the distance from its own log end to the
 * master's answer.  The thread, not the loop, asks: a request waits for
 * its answer, and a send may block on a site slow to read.
 *
 * A message is a fixed header (struct lag_msg, network order) and, in a
 * request, a second part: the client's replication.local, by which the
 * master finds it in its site list.  Anything else is dropped: the bytes
 * come from another site, and no site's bytes may crash this one.
 */
#include "config.h"

#include <arpa/inet.h>

#include <db.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "store.h"
#include "store_group.h"
#include "store_int.h"

#define LAG_MAGIC	0x414e4b4cU	/* "ANKL" */
#define LAG_VERSION	1
#define LAG_ASK		1		/* a client's log end, to the master */
#define LAG_ANSWER	2		/* the master's, in answer */
#define LAG_BEAT_MS	1000		/* unless store_group.beat_ms */
#define LAG_STALE	3		/* beats: a report older is stale */
#define LAG_SITES	(STORE_GROUP_MAX_PEERS + 8)

struct lag_msg {
	uint32_t	magic;
	uint32_t	version;
	uint32_t	kind;
	uint32_t	file;		/* the sender's log end */
	uint32_t	offset;
	uint32_t	lg_size;	/* the sender's log file size */
};

/* A client as the master heard from it. */
struct lag_site {
	char		addr[300];	/* its replication.local */
	uint32_t	file, offset;	/* its log end, as it said */
	int64_t		lag;		/* bytes behind then */
	uint64_t	at_ms;		/* when (monotonic); 0: free */
};

struct store_lag {
	pthread_t	 thread;
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	int		 on;		/* started, not joined */
	int		 stop;
	unsigned	 beat_ms;
	/* A client's: bytes behind the master's last word, and when. */
	int64_t		 lag;
	uint64_t	 lag_at_ms;
	/* A master's: its clients. */
	struct lag_site	 sites[LAG_SITES];
};

static void	*lag_main(void *);
static void	 lag_ask(struct store *, DB_CHANNEL **);
static void	 lag_dispatch(DB_ENV *, DB_CHANNEL *, DBT *, u_int32_t,
		    u_int32_t);
static int	 lag_log_end(DB_ENV *, uint32_t *, uint32_t *, uint32_t *);
static void	 lag_from_client(struct store_lag *, const char *, uint32_t,
		    uint32_t, int64_t);

static uint64_t
lag_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Bytes from LSN (cf, co) up to (mf, mo), log files of lg_size bytes; 0
 * when the first is not behind.  A file is at most lg_size long (a
 * record never spans two), so across files this is an upper bound. */
int64_t
group_lag_distance(uint32_t mf, uint32_t mo, uint32_t cf, uint32_t co,
    uint32_t lg_size)
{
	int64_t d;

	if (cf > mf || (cf == mf && co >= mo))
		return 0;
	d = ((int64_t)mf - cf) * lg_size + mo - (int64_t)co;
	return d > 0 ? d : 0;
}

/* Before repmgr_start (store_group.c's group_configure), at each open
 * of the environment (an upgrade at the open closes and opens it). */
int
group_lag_configure(struct store *st)
{
	struct store_lag *l;
	int ret;

	if ((l = st->lag) == NULL) {
		if ((l = calloc(1, sizeof(*l))) == NULL) {
			store_seterr(st, ENOMEM, "store %s: replication lag",
			    st->dir);
			return -1;
		}
		pthread_mutex_init(&l->mu, NULL);
		pthread_cond_init(&l->cv, NULL);
		l->beat_ms = st->group->beat_ms != 0 ? st->group->beat_ms :
		    LAG_BEAT_MS;
		st->lag = l;
	}
	l->stop = 0;
	l->lag = -1;
	l->lag_at_ms = 0;
	if ((ret = st->env->repmgr_msg_dispatch(st->env, lag_dispatch,
	    0)) != 0) {
		store_seterr(st, ret, "store %s: repmgr_msg_dispatch",
		    st->dir);
		return -1;
	}
	return 0;
}

/* After repmgr_start: the beat's thread. */
int
group_lag_start(struct store *st)
{
	struct store_lag *l = st->lag;
	int rc;

	if (l == NULL || l->on)
		return 0;
	if ((rc = pthread_create(&l->thread, NULL, lag_main, st)) != 0) {
		store_seterr(st, rc, "store %s: replication lag thread: %s",
		    st->dir, strerror(rc));
		return -1;
	}
	l->on = 1;
	return 0;
}

/* Before the environment closes: the thread stopped, its channel
 * closed. */
void
group_lag_stop(struct store *st)
{
	struct store_lag *l = st->lag;

	if (l == NULL || !l->on)
		return;
	pthread_mutex_lock(&l->mu);
	l->stop = 1;
	pthread_cond_signal(&l->cv);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->thread, NULL);
	l->on = 0;
}

/* After it closed (repmgr's threads, which call lag_dispatch, are
 * gone). */
void
group_lag_free(struct store *st)
{
	struct store_lag *l = st->lag;

	if (l == NULL)
		return;
	group_lag_stop(st);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cv);
	free(l);
	st->lag = NULL;
}

static void *
lag_main(void *arg)
{
	struct store *st = arg;
	struct store_lag *l = st->lag;
	DB_CHANNEL *ch = NULL;
	struct timespec until;

	pthread_mutex_lock(&l->mu);
	while (!l->stop) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += l->beat_ms / 1000;
		until.tv_nsec += (long)(l->beat_ms % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		while (!l->stop && pthread_cond_timedwait(&l->cv, &l->mu,
		    &until) != ETIMEDOUT)
			;
		if (l->stop)
			break;
		pthread_mutex_unlock(&l->mu);
		if (store_role(st) == STORE_ROLE_CLIENT)
			lag_ask(st, &ch);
		pthread_mutex_lock(&l->mu);
	}
	pthread_mutex_unlock(&l->mu);
	if (ch != NULL)
		(void)ch->close(ch, 0);
	return NULL;
}

static void
lag_msg_fill(struct lag_msg *m, uint32_t kind, uint32_t file,
    uint32_t offset, uint32_t lg_size)
{
	m->magic = htonl(LAG_MAGIC);
	m->version = htonl(LAG_VERSION);
	m->kind = htonl(kind);
	m->file = htonl(file);
	m->offset = htonl(offset);
	m->lg_size = htonl(lg_size);
}

/* The header of size bytes at p, of kind, into m: 0, or -1 if it is
 * not one. */
static int
lag_msg_take(struct lag_msg *m, const void *p, size_t size, uint32_t kind)
{
	if (p == NULL || size != sizeof(*m))
		return -1;
	memcpy(m, p, sizeof(*m));
	if (ntohl(m->magic) != LAG_MAGIC || ntohl(m->version) != LAG_VERSION ||
	    ntohl(m->kind) != kind)
		return -1;
	m->file = ntohl(m->file);
	m->offset = ntohl(m->offset);
	m->lg_size = ntohl(m->lg_size);
	return 0;
}

/* A client's beat: its log end to the master, the master's back.  A
 * failure (no master known, the connection broken, no answer within a
 * beat) is not news: the channel is opened again at the next beat. */
static void
lag_ask(struct store *st, DB_CHANNEL **ch)
{
	struct store_lag *l = st->lag;
	struct lag_msg m, a;
	DBT d[2], resp;
	uint32_t file, offset, lg_size;
	char addr[300];
	int ret;

	if (*ch == NULL && st->env->repmgr_channel(st->env, DB_EID_MASTER,
	    ch, 0) != 0) {
		*ch = NULL;
		return;
	}
	if (lag_log_end(st->env, &file, &offset, &lg_size) == -1)
		return;
	lag_msg_fill(&m, LAG_ASK, file, offset, lg_size);
	snprintf(addr, sizeof(addr), "%s:%u", st->group->local_host,
	    st->group->local_port);
	memset(d, 0, sizeof(d));
	d[0].data = &m;
	d[0].size = sizeof(m);
	d[1].data = addr;
	d[1].size = strlen(addr);
	memset(&resp, 0, sizeof(resp));
	resp.data = &a;
	resp.ulen = sizeof(a);
	resp.flags = DB_DBT_USERMEM;
	if ((ret = (*ch)->send_request(*ch, d, 2, &resp,
	    (db_timeout_t)l->beat_ms * 1000, 0)) != 0) {
		(void)(*ch)->close(*ch, 0);
		*ch = NULL;
		return;
	}
	if (lag_msg_take(&a, resp.data, resp.size, LAG_ANSWER) == -1 ||
	    lag_log_end(st->env, &file, &offset, &lg_size) == -1)
		return;
	pthread_mutex_lock(&l->mu);
	l->lag = group_lag_distance(a.file, a.offset, file, offset,
	    a.lg_size);
	l->lag_at_ms = lag_now_ms();
	pthread_mutex_unlock(&l->mu);
}

static int
lag_log_end(DB_ENV *e, uint32_t *file, uint32_t *offset, uint32_t *lg_size)
{
	DB_LOG_STAT *ls;

	if (e->log_stat(e, &ls, 0) != 0)
		return -1;
	*file = ls->st_cur_file;
	*offset = ls->st_cur_offset;
	*lg_size = ls->st_lg_size;
	free(ls);
	return 0;
}

/* A repmgr thread: a client's request.  Another site's bytes, checked
 * before anything is taken from them.  A request is always answered
 * (its sender waits), with nothing when this site cannot say. */
static void
lag_dispatch(DB_ENV *e, DB_CHANNEL *ch, DBT *req, u_int32_t n,
    u_int32_t flags)
{
	struct store *st = e->app_private;
	struct store_lag *l;
	struct lag_msg m, a;
	uint32_t file, offset, lg_size;
	char addr[300];
	DBT d;
	int ok;

	memset(&d, 0, sizeof(d));
	ok = st != NULL && (l = st->lag) != NULL && n == 2 &&
	    store_role(st) == STORE_ROLE_MASTER &&
	    lag_msg_take(&m, req[0].data, req[0].size, LAG_ASK) == 0 &&
	    req[1].size > 0 && req[1].size < sizeof(addr) &&
	    memchr(req[1].data, '\0', req[1].size) == NULL &&
	    lag_log_end(e, &file, &offset, &lg_size) == 0;
	if (ok) {
		memcpy(addr, req[1].data, req[1].size);
		addr[req[1].size] = '\0';
		lag_from_client(l, addr, m.file, m.offset,
		    group_lag_distance(file, offset, m.file, m.offset,
		    lg_size));
		lag_msg_fill(&a, LAG_ANSWER, file, offset, lg_size);
		d.data = &a;
		d.size = sizeof(a);
	}
	if ((flags & DB_REPMGR_NEED_RESPONSE) != 0)
		(void)ch->send_msg(ch, &d, 1, 0);
}

/* Kept under the client's address: its slot, a free one, or the one
 * heard from longest ago (the table is bounded; addresses come from
 * other sites). */
static void
lag_from_client(struct store_lag *l, const char *addr, uint32_t file,
    uint32_t offset, int64_t lag)
{
	struct lag_site *s, *pick = NULL;
	size_t i;

	pthread_mutex_lock(&l->mu);
	for (i = 0; i < LAG_SITES; i++) {
		s = &l->sites[i];
		if (s->at_ms != 0 && strcmp(s->addr, addr) == 0) {
			pick = s;
			break;
		}
		if (pick == NULL || s->at_ms < pick->at_ms)
			pick = s;
	}
	snprintf(pick->addr, sizeof(pick->addr), "%s", addr);
	pick->file = file;
	pick->offset = offset;
	pick->lag = lag;
	pick->at_ms = lag_now_ms();
	pthread_mutex_unlock(&l->mu);
}

int64_t
store_group_lag_bytes(struct store *st)
{
	struct store_lag *l = st->lag;
	int64_t lag;

	if (l == NULL || store_role(st) == STORE_ROLE_MASTER)
		return 0;
	pthread_mutex_lock(&l->mu);
	lag = l->lag;
	if (l->lag_at_ms == 0 ||
	    lag_now_ms() - l->lag_at_ms > (uint64_t)LAG_STALE * l->beat_ms)
		lag = -1;
	pthread_mutex_unlock(&l->mu);
	return lag;
}

/* On a master: bytes the client at addr is behind, -1 if it never said
 * (then *ago is -1 too, else ms since it said).  A client silent for a
 * while (stopped, cut off) is behind by all the master wrote since its
 * last word. */
int64_t
group_lag_site(struct store *st, const char *addr, int64_t *ago)
{
	struct store_lag *l = st->lag;
	struct lag_site *s;
	uint32_t file, offset, lg_size, sfile = 0, soff = 0;
	int64_t lag = -1;
	int stale = 0;
	size_t i;

	*ago = -1;
	if (l == NULL)
		return -1;
	pthread_mutex_lock(&l->mu);
	for (i = 0; i < LAG_SITES; i++) {
		s = &l->sites[i];
		if (s->at_ms != 0 && strcmp(s->addr, addr) == 0) {
			lag = s->lag;
			sfile = s->file;
			soff = s->offset;
			*ago = (int64_t)(lag_now_ms() - s->at_ms);
			stale = *ago > (int64_t)LAG_STALE * l->beat_ms;
			break;
		}
	}
	pthread_mutex_unlock(&l->mu);
	if (lag >= 0 && stale && lag_log_end(st->env, &file, &offset,
	    &lg_size) == 0)
		lag = group_lag_distance(file, offset, sfile, soff, lg_size);
	return lag;
}
