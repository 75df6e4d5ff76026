/* SPDX-License-Identifier: ISC */
/*
 * admin_archive.h: what the store keeps of hooks, as the operator sees
 * it: the search of hooks (GET /v1/hooks), a tenant's erase (DELETE
 * /v1/tenants/{t}/hooks) and the upkeep of the delivered hooks kept by
 * retention.delivered_s (the archive: daemon/store/store_archive.c),
 * pruned by age and by retention.max_bytes.  The routes are
 * admin_api_hooks.c's.
 *
 * A page of the search is one bounded call: it reads at most
 * ARCHIVE_PAGE_SEQS consecutive seqs of the hooks and of the pen (which
 * share the seq counter), newest first, and the rows of those it passes
 * (for their state), so a page costs the same however large the store; a
 * page that found fewer than limit still has a next_cursor while older
 * seqs remain.
 *
 * The erase and the prune are jobs in bounded steps on the loop
 * (steps.c): the erase's steps each read at most ARCHIVE_ERASE_VISITS
 * hooks or dedupe entries and delete what matched in one synced batch.
 */
#ifndef ANKUSA_ARCHIVE_H
#define ANKUSA_ARCHIVE_H

#include <stdint.h>

#include <jansson.h>

#include "admin_api.h"
#include "admin_dlq.h"
#include "conf.h"

#define ARCHIVE_PAGE_SEQS	1024	/* seqs a page of the search reads */
#define ARCHIVE_SINCE_SLACK_MS	60000	/* the search stops a minute of
					 * receive time before since: a
					 * hook's seq is its commit's order,
					 * which may differ from its receive
					 * time's by what an edge takes */
#define ARCHIVE_ERASE_VISITS	512

extern const struct admin_route admin_routes_archive[];	/* admin_api_hooks.c */

/* The states a hook is listed in (GET /v1/hooks?state=). */
enum archive_state {
	ARCHIVE_ANY = 0,
	ARCHIVE_PENDING,	/* a row not yet delivered, none dead */
	ARCHIVE_DEAD,		/* a row dead-lettered */
	ARCHIVE_DELIVERED,	/* every row delivered, kept */
	ARCHIVE_QUARANTINED,	/* held in the pen */
};

/* What a search asks for. */
struct archive_filter {
	char		 source[CONF_ID_MAX + 1];	/* "": any */
	char		 tenant[CONF_ID_MAX + 1];	/* "": any */
	char		 event_type[STORE_EVTYPE_MAX + 1];	/* "": any;
						 * else exactly this one */
	int		 state;			/* enum archive_state */
	uint64_t	 since, until;		/* received at, wall ms */
	uint64_t	 limit;
	uint64_t	 before_seq;		/* the cursor; 0: the newest */
};

/* Once at the start, after the store is open: the archive's keeping as
 * configured, the upkeep's timer; the erase tells the pipeline the lanes
 * it released through ops. */
void	archive_init(const struct dlq_ops *);
/* A page of the search: 200 {entries, next_cursor} or 503, in *out. */
int	archive_search(const struct archive_filter *, json_t **out);
/*
 * Erase tenant's hooks received in [since, until] with every row (a
 * claimed one once its attempt has settled, finding its hook gone), body,
 * attempts, delivered record and archive entry, and the dedupe entries of
 * hooks of the range: done(arg, status, answer) once, from a later loop
 * pass, 200 {"deleted":n,"bytes":b} (the hooks and their body bytes) or
 * 503; a handle for archive_detach until then.
 */
struct archive_job *archive_erase(const char *tenant, uint64_t since,
	    uint64_t until, void (*done)(void *, int, json_t *), void *arg);
/* The caller went away: done is not called, the erase goes on to its
 * end; the arg it was given. */
void	*archive_detach(struct archive_job *);

#endif
