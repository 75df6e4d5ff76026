/* SPDX-License-Identifier: ISC */
/*
 * check_store_group: the store as a site of a replication group
 * (store_group.c): three sites in this process, each its own environment
 * and its own repmgr, on 127.0.0.1 ports only.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <check.h>
#include <db.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store.h"
#include "store_group.h"
#include "store_int.h"
#include "storeutil.h"

#define NSITES	3

static unsigned	 base_port;

/* A port on 127.0.0.1 that a listener may bind now (repmgr sets no
 * SO_REUSEADDR: a port in TIME_WAIT from an earlier test is taken). */
static int
port_free(unsigned port)
{
	struct sockaddr_in sin;
	int fd, ok;

	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return 0;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0;
	close(fd);
	return ok;
}

/* Ports of this test process's own, below the ephemeral range, away
 * from other runs' and free now. */
static void
ports_pick(void)
{
	unsigned i, tries;
	int ok;

	base_port = 20000 + (unsigned)(getpid() % 1200) * 10;
	for (tries = 0; tries < 1200; tries++) {
		for (ok = 1, i = 0; i < NSITES && ok; i++)
			ok = port_free(base_port + i);
		if (ok)
			return;
		base_port = base_port + 10 >= 32000 ? 20000 : base_port + 10;
	}
	ck_abort_msg("no %d free ports on 127.0.0.1", NSITES);
}

static void
group_fill(struct store_group *g, int me, int create)
{
	int i;

	memset(g, 0, sizeof(*g));
	g->local_host = "127.0.0.1";
	g->local_port = base_port + me;
	for (i = 0; i < NSITES; i++) {
		if (i == me)
			continue;
		g->peer_host[g->npeers] = "127.0.0.1";
		g->peer_port[g->npeers++] = base_port + i;
	}
	g->priority = 100;
	g->create = create;
	/* Long enough for a client under valgrind; the commits left in
	 * doubt on purpose wait it out. */
	g->ack_timeout_ms = 2000;
	g->heartbeat_ms = 200;
	g->heartbeat_timeout_ms = 1000;
	g->beat_ms = 100;
}

static struct store *
site_open_prio(int me, int create, unsigned prio)
{
	struct store_group g;
	struct store *st;
	char dir[300], err[1024];

	snprintf(dir, sizeof(dir), "%s/site%d", tmpdir, me);
	group_fill(&g, me, create);
	g.priority = prio;
	st = store_open_group(dir, &g, err, sizeof(err));
	ck_assert_msg(st != NULL, "site %d: %s", me, err);
	return st;
}

static struct store *
site_open(int me, int create)
{
	struct store_group g;
	struct store *st;
	char dir[300], err[1024];

	snprintf(dir, sizeof(dir), "%s/site%d", tmpdir, me);
	group_fill(&g, me, create);
	st = store_open_group(dir, &g, err, sizeof(err));
	ck_assert_msg(st != NULL, "site %d: %s", me, err);
	return st;
}

START_TEST(test_group_of_one)
{
	struct store_group_state s;
	struct store *st;
	char m[300];

	ports_pick();
	st = site_open(0, 1);
	ck_assert_int_eq(store_role(st), STORE_ROLE_MASTER);
	ck_assert_str_eq(store_role_name(store_role(st)), "master");
	store_group_master(st, m, sizeof(m));
	ck_assert_uint_eq(strtoul(strchr(m, ':') + 1, NULL, 10), base_port);
	/* A group of one acknowledges by itself. */
	put_one(st, "github", "{}", 2, 1);
	ck_assert_int_eq(store_in_doubt(st), 0);
	store_group_state(st, &s);
	ck_assert_uint_eq(s.perm_failed, 0);
	ck_assert_int_ge(store_group_fd(st), 0);
	ck_assert_int_eq(store_close(st), 0);
}
END_TEST

/* The master's commits reach the clients; clients write nothing; with
 * both clients gone the master's commit is in doubt, not a success. */
START_TEST(test_group_of_three)
{
	struct store *st[NSITES];
	struct store_site sites[8];
	char m[300], want[300];
	int i, n, tries;

	ports_pick();
	st[0] = site_open(0, 1);
	ck_assert_int_eq(store_role(st[0]), STORE_ROLE_MASTER);
	put_one(st[0], "github", "{\"n\":1}", 7, 1);
	st[1] = site_open(1, 0);
	st[2] = site_open(2, 0);
	for (i = 1; i < NSITES; i++) {
		ck_assert_int_eq(store_role(st[i]), STORE_ROLE_CLIENT);
		ck_assert_ptr_null(store_batch_begin(st[i]));
		ck_assert_msg(strstr(store_strerror(st[i]), "not the master")
		    != NULL, "%s", store_strerror(st[i]));
		store_group_master(st[i], m, sizeof(m));
		snprintf(want, sizeof(want), "127.0.0.1:%u", base_port);
		ck_assert_str_eq(m, want);
	}
	/* Acknowledged by a quorum: on a client when commit returns. */
	put_one(st[0], "github", "{\"n\":2}", 7, 1);
	ck_assert_int_eq(store_in_doubt(st[0]), 0);
	for (i = 1; i < NSITES; i++) {
		for (tries = 0; tries < 200 &&
		    store_debug_count(st[i], "hooks") < 2; tries++)
			usleep(10000);
		ck_assert_int_eq(store_debug_count(st[i], "hooks"), 2);
	}
	/* A replicated table is in the client's data directory, where the
	 * master's is in its own. */
	for (i = 0; i < NSITES; i++) {
		snprintf(m, sizeof(m), "%s/site%d/hooks.db", tmpdir, i);
		ck_assert_msg(access(m, F_OK) == 0, "%s", m);
	}
	n = store_group_sites(st[0], sites, 8);
	ck_assert_int_eq(n, 2);
	/* One client gone: the other makes the quorum. */
	ck_assert_int_eq(store_close(st[2]), 0);
	put_one(st[0], "github", "{\"n\":3}", 7, 1);
	ck_assert_int_eq(store_in_doubt(st[0]), 0);
	/* Both gone: the commit is the master's alone. */
	ck_assert_int_eq(store_close(st[1]), 0);
	{
		struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
		struct store_batch *b;
		struct store_hook h;

		hook_fill(&h, "github", "{\"n\":4}", 7);
		ck_assert_ptr_nonnull(b = store_batch_begin(st[0]));
		ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
		ck_assert_int_eq(store_batch_commit(b), -1);
		ck_assert_int_eq(store_in_doubt(st[0]), 1);
		ck_assert_msg(strstr(store_strerror(st[0]), "quorum") != NULL,
		    "%s", store_strerror(st[0]));
	}
	ck_assert_int_eq(store_close(st[0]), 0);
}
END_TEST

/* What store_group_prune says it removed. */
struct pruned {
	char	addr[4][300];
	int	n, failed;
};

static void
prune_cb(const char *addr, const char *err, void *arg)
{
	struct pruned *p = arg;

	if (err != NULL) {
		p->failed++;
		return;
	}
	if (p->n < 4)
		snprintf(p->addr[p->n], sizeof(p->addr[0]), "%s", addr);
	p->n++;
}

/*
 * The membership is replication.local and replication.peers: sites 0 and
 * 1 list each other only, site 2 lists site 0 and joins through it; the
 * master's prune removes site 2 and nothing else, a client's prunes
 * nothing, and the master's sites are site 1 alone afterwards.
 */
START_TEST(test_group_prune_unlisted)
{
	struct store_group g;
	struct store_group_state s;
	struct store *st[NSITES];
	struct store_site sites[8];
	struct pruned p;
	char dir[300], err[1024], want[300];
	int i, n, tries;

	ports_pick();
	for (i = 0; i < NSITES; i++) {
		group_fill(&g, i, i == 0);
		/* 0 and 1 list each other; 2 lists 0. */
		g.npeers = 1;
		g.peer_port[0] = base_port + (i == 0 ? 1 : 0);
		snprintf(dir, sizeof(dir), "%s/site%d", tmpdir, i);
		st[i] = store_open_group(dir, &g, err, sizeof(err));
		ck_assert_msg(st[i] != NULL, "site %d: %s", i, err);
	}
	ck_assert_int_eq(store_role(st[0]), STORE_ROLE_MASTER);
	ck_assert_int_eq(store_role(st[2]), STORE_ROLE_CLIENT);
	store_group_state(st[0], &s);
	ck_assert_uint_ge(s.sites_added, 2);

	memset(&p, 0, sizeof(p));
	ck_assert_int_eq(store_group_prune(st[1], prune_cb, &p), 0);
	ck_assert_int_eq(p.n, 0);
	ck_assert_int_eq(store_group_prune(st[0], prune_cb, &p), 1);
	ck_assert_int_eq(p.failed, 0);
	ck_assert_int_eq(p.n, 1);
	snprintf(want, sizeof(want), "127.0.0.1:%u", base_port + 2);
	ck_assert_str_eq(p.addr[0], want);
	/* Out of the membership: the master lists site 1 only. */
	for (tries = 0; tries < 200; tries++) {
		n = store_group_sites(st[0], sites, 8);
		if (n == 1)
			break;
		usleep(10000);
	}
	ck_assert_int_eq(n, 1);
	snprintf(want, sizeof(want), "127.0.0.1:%u", base_port + 1);
	ck_assert_str_eq(sites[0].addr, want);
	/* The listed site still acknowledges: no doubt. */
	put_one(st[0], "github", "{\"after\":1}", 11, 1);
	ck_assert_int_eq(store_in_doubt(st[0]), 0);
	for (i = NSITES - 1; i >= 0; i--)
		(void)store_close(st[i]);
}
END_TEST

/* LSN distance: same file, across files, a site ahead of its master. */
START_TEST(test_lag_distance)
{
	ck_assert_int_eq(group_lag_distance(1, 5000, 1, 1000, 10485760),
	    4000);
	ck_assert_int_eq(group_lag_distance(3, 100, 1, 200, 1000),
	    2 * 1000 + 100 - 200);
	ck_assert_int_eq(group_lag_distance(1, 1000, 1, 5000, 10485760), 0);
	ck_assert_int_eq(group_lag_distance(1, 9000, 2, 10, 10485760), 0);
}
END_TEST

/* Each site's lag in bytes: the clients report their log's end to the
 * master, the master its own to the clients.  A client gone falls behind
 * by what the master wrote since its last report. */
START_TEST(test_group_lag_bytes)
{
	struct store *st[NSITES];
	struct store_site sites[8];
	char body[4096];
	int i, n, tries, known;
	int64_t lag;

	ports_pick();
	st[0] = site_open(0, 1);
	st[1] = site_open(1, 0);
	st[2] = site_open(2, 0);
	ck_assert_int_eq(store_group_lag_bytes(st[0]), 0);
	/* Every client known to the master, and the master to each. */
	for (tries = 0; tries < 300; tries++) {
		n = store_group_sites(st[0], sites, 8);
		for (known = 0, i = 0; i < n; i++)
			known += sites[i].lag_bytes >= 0;
		if (known == 2 && store_group_lag_bytes(st[1]) >= 0 &&
		    store_group_lag_bytes(st[2]) >= 0)
			break;
		usleep(10000);
	}
	ck_assert_int_eq(known, 2);
	ck_assert_int_ge(store_group_lag_bytes(st[1]), 0);
	ck_assert_int_ge(store_group_lag_bytes(st[2]), 0);
	/* Site 2 gone, 100 hooks of 4 KiB later: 400 KiB behind at least. */
	ck_assert_int_eq(store_close(st[2]), 0);
	memset(body, 'x', sizeof(body));
	for (i = 0; i < 100; i++)
		put_one(st[0], "github", body, sizeof(body), 1);
	/* Its last word goes stale in three beats. */
	for (tries = 0; tries < 300; tries++) {
		n = store_group_sites(st[0], sites, 8);
		for (lag = -1, i = 0; i < n; i++)
			if (sites[i].addr[strlen(sites[i].addr) - 1] == '2')
				lag = sites[i].lag_bytes;
		if (lag >= 100 * (int64_t)sizeof(body))
			break;
		usleep(10000);
	}
	ck_assert_msg(lag >= 100 * (int64_t)sizeof(body), "site 2 behind "
	    "by %lld bytes", (long long)lag);
	/* Site 1 stays close: its reports follow the master's log. */
	for (tries = 0; tries < 300; tries++) {
		n = store_group_sites(st[0], sites, 8);
		for (lag = -1, i = 0; i < n; i++)
			if (sites[i].addr[strlen(sites[i].addr) - 1] == '1')
				lag = sites[i].lag_bytes;
		if (lag >= 0 && lag < 64 * 1024)
			break;
		usleep(10000);
	}
	ck_assert_msg(lag >= 0 && lag < 64 * 1024, "site 1 behind by %lld "
	    "bytes", (long long)lag);
	ck_assert_int_eq(store_close(st[1]), 0);
	ck_assert_int_eq(store_close(st[0]), 0);
}
END_TEST

/*
 * A client's handles die when replication rolls back what it had: site 1
 * (priority 0, never master) holds a commit of site 0 that site 2 never
 * saw; the commit was in doubt (a site that cannot be elected does not
 * make a quorum); site 0 goes, site 2 is elected with the shorter log,
 * and site 1 rolls the commit back.  Its next read meets
 * DB_REP_HANDLE_DEAD, which the store reports for the loop to open again
 * (repl.c), and nothing else fails.
 */
START_TEST(test_group_handles_dead)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_group_state s;
	struct store *st[NSITES];
	struct store_batch *b;
	struct store_hook h;
	int tries;
	int64_t n;

	ports_pick();
	st[0] = site_open(0, 1);
	st[1] = site_open_prio(1, 0, 0);
	st[2] = site_open(2, 0);
	put_one(st[0], "github", "{\"n\":1}", 7, 1);
	for (tries = 0; tries < 300 &&
	    store_debug_count(st[2], "hooks") < 1; tries++)
		usleep(10000);
	ck_assert_int_eq(store_debug_count(st[2], "hooks"), 1);
	ck_assert_int_eq(store_close(st[2]), 0);
	hook_fill(&h, "github", "{\"n\":2}", 7);
	ck_assert_ptr_nonnull(b = store_batch_begin(st[0]));
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	ck_assert_int_eq(store_batch_commit(b), -1);
	ck_assert_int_eq(store_in_doubt(st[0]), 1);
	for (tries = 0; tries < 300 &&
	    store_debug_count(st[1], "hooks") < 2; tries++)
		usleep(10000);
	ck_assert_int_eq(store_debug_count(st[1], "hooks"), 2);
	ck_assert_int_eq(store_close(st[0]), 0);
	st[2] = site_open(2, 0);
	ck_assert_int_eq(store_role(st[2]), STORE_ROLE_MASTER);
	ck_assert_int_eq(store_debug_count(st[2], "hooks"), 1);
	for (tries = 0; tries < 500; tries++) {
		n = store_debug_count(st[1], "hooks");
		store_group_state(st[1], &s);
		if (n == -1 || s.handles_dead)
			break;
		usleep(10000);
	}
	ck_assert_msg(n == -1 && s.handles_dead, "site 1: %lld hooks, "
	    "handles dead %d: %s", (long long)n, s.handles_dead,
	    store_strerror(st[1]));
	ck_assert_msg(strstr(store_strerror(st[1]), "DB_REP_HANDLE_DEAD") !=
	    NULL || strstr(store_strerror(st[1]), "invalid") != NULL, "%s",
	    store_strerror(st[1]));
	(void)store_close(st[1]);
	ck_assert_int_eq(store_close(st[2]), 0);
}
END_TEST

/* A reader on a client while the master writes: the replication
 * manager's apply takes locks the reads wait for, or lose to. */
struct reader {
	struct store	*st;
	volatile int	 stop;
	unsigned long	 reads, failed;
	char		 err[1536];
};

static void *
reader_main(void *arg)
{
	struct reader *r = arg;
	struct store_counts c;

	while (!r->stop) {
		r->reads++;
		if (store_counts(r->st, &c) == -1 ||
		    store_debug_count(r->st, "rows") == -1) {
			if (r->failed++ == 0)
				snprintf(r->err, sizeof(r->err), "%s",
				    store_strerror(r->st));
		}
		/* Not a spin: under valgrind, which runs one thread at a
		 * time, it starved the client's replication threads. */
		usleep(200);
	}
	return NULL;
}

START_TEST(test_group_client_reads_under_load)
{
	struct store *st[NSITES];
	struct reader r;
	pthread_t t;
	char body[512], werr[1536];
	int i, bad;

	ports_pick();
	st[0] = site_open(0, 1);
	st[1] = site_open(1, 0);
	st[2] = site_open(2, 0);
	memset(&r, 0, sizeof(r));
	r.st = st[1];
	ck_assert_int_eq(pthread_create(&t, NULL, reader_main, &r), 0);
	memset(body, 'y', sizeof(body));
	/* No assertion while the reader runs: a failed one leaves the test
	 * (a longjmp under CK_FORK=no) with the thread on its stack. */
	for (i = 0, bad = 0; i < 1500; i++) {
		struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
		struct store_batch *b;
		struct store_hook h;

		hook_fill(&h, "github", body, sizeof(body));
		if ((b = store_batch_begin(st[0])) == NULL ||
		    store_batch_put_hook(b, &h, &row, 1) == -1 ||
		    store_batch_commit(b) == -1) {
			if (bad++ == 0)
				snprintf(werr, sizeof(werr), "%s",
				    store_strerror(st[0]));
			if (b != NULL && st[0]->batch_open)
				store_batch_abort(b);
		}
	}
	r.stop = 1;
	pthread_join(t, NULL);
	ck_assert_msg(bad == 0, "%d of 1500 writes failed, the first: %s",
	    bad, werr);
	ck_assert_msg(r.failed == 0, "%lu of %lu reads on a client failed, "
	    "the first: %s", r.failed, r.reads, r.err);
	ck_assert_uint_gt(r.reads, 10);
	for (i = NSITES - 1; i >= 0; i--)
		ck_assert_int_eq(store_close(st[i]), 0);
}
END_TEST

/* A read locked out while the replication manager synchronises a client
 * says so and loses nothing: the store is not lost. */
START_TEST(test_group_lockout_message)
{
	struct store *st[2];

	ports_pick();
	st[0] = site_open(0, 1);
	st[1] = site_open(1, 0);
	store_seterr(st[1], DB_REP_LOCKOUT, "store x: read");
	ck_assert_msg(strstr(store_strerror(st[1]), "synchronising") != NULL,
	    "%s", store_strerror(st[1]));
	store_seterr(st[1], DB_LOCK_DEADLOCK, "store x: read");
	ck_assert_msg(strstr(store_strerror(st[1]), "synchronising") != NULL,
	    "%s", store_strerror(st[1]));
	ck_assert_int_eq(st[1]->lost, 0);
	/* On a master a deadlock is a deadlock. */
	store_seterr(st[0], DB_LOCK_DEADLOCK, "store x: read");
	ck_assert_ptr_null(strstr(store_strerror(st[0]), "synchronising"));
	ck_assert_int_eq(store_close(st[1]), 0);
	ck_assert_int_eq(store_close(st[0]), 0);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("store_group");
	TCase *tc = tcase_create("group");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_group_of_one);
	tcase_add_test(tc, test_group_of_three);
	tcase_add_test(tc, test_lag_distance);
	tcase_add_test(tc, test_group_lag_bytes);
	tcase_add_test(tc, test_group_handles_dead);
	tcase_add_test(tc, test_group_client_reads_under_load);
	tcase_add_test(tc, test_group_lockout_message);
	tcase_add_test(tc, test_group_prune_unlisted);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return storeutil_run(suite());
}
