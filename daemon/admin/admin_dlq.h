/* SPDX-License-Identifier: ISC */
/*
 * admin_dlq.h: the operator's dead letters, hooks and quarantine purges, as the
 * admin API serves them (daemon/admin/admin_api_dlq.c): listing dead letters
 * with a count of those that match, purging them, showing and deleting one
 * hook, purging the pen; and the dead letters' upkeep: queue.dlq.max_age_s
 * (dead rows older than that purged with their hooks) and queue.dlq.warn_rows
 * (a warning line once per crossing, and dlq_over_warn for the gauge).
 *
 * Listings and purges are jobs: each step is a bounded part of the dead
 * table (DLQ_STEP_* in admin_dlq.c) run from a zero timer, so the loop's other
 * work runs between two steps; a purge commits each step's batch with a
 * sync, so what it answered deleted stays deleted after a crash.  Jobs
 * take their steps in turn.
 */
#ifndef ANKUSA_DLQ_H
#define ANKUSA_DLQ_H

#include <stdint.h>

#include <jansson.h>

#include "conf.h"
#include "ids.h"
#include "store/store.h"

struct dlq_ops {
	/* Whether the row at key is claimed by dispatch (an attempt runs on
	 * it, or is about to). */
	int	(*claimed)(const unsigned char *key, void *);
	/* A hook was deleted: a lane it headed has a new head. */
	void	(*changed)(void *);
	void	*arg;
};

/* What a listing or a purge of dead letters takes. */
struct dlq_filter {
	char		 source[CONF_ID_MAX + 1];	/* "": every source */
	uint64_t	 since;				/* dead at or after */
	uint64_t	 until;				/* dead at or before;
							 * UINT64_MAX: open */
	int		 has_id;			/* one hook's */
	unsigned char	 id[UUID_LEN];
	int		 has_after;			/* list after this */
	unsigned char	 after[STORE_DEADKEY_LEN];
	uint64_t	 limit;				/* entries listed */
	uint64_t	 after_seq;			/* the pen's listing:
							 * after this seq */
};

struct dlq_job;

/* Once at the start, with the master's loop; arms the upkeep timer. */
void	dlq_init(const struct dlq_ops *);
/*
 * The dead letters of f: done(arg, status, answer) once, status 200 with
 * {total, entries, next_cursor}, or 503 with {"error":"store_unavailable",
 * "message"}.  total is the dead letters that match f (its cursor
 * aside), counted by the job's walk of f's range (the store's dead
 * counter without any filter).  done may run before dlq_list returns;
 * then NULL, else a handle for dlq_detach, good until done runs.
 */
struct dlq_job *dlq_list(const struct dlq_filter *,
	    void (*done)(void *, int, json_t *), void *arg);
/* Purge f's dead letters with their rows, and their hooks left without a
 * live row: {"deleted":n,"bytes":b} (b the body bytes of the hooks
 * removed). */
struct dlq_job *dlq_purge(const struct dlq_filter *,
	    void (*done)(void *, int, json_t *), void *arg);
/* Purge the pen (source NULL: every source; id NULL: every hook):
 * {"deleted":n,"bytes":b}. */
struct dlq_job *dlq_quarantine_purge(const char *source, const char *id,
	    void (*done)(void *, int, json_t *), void *arg);
/* The pen's held hooks after f's after_seq, of its source, at most its
 * limit: {entries, next_cursor, held, bytes} (the last two the whole
 * pen's). */
struct dlq_job *dlq_quarantine_list(const struct dlq_filter *,
	    void (*done)(void *, int, json_t *), void *arg);
/* The caller went away: done is not called; a purge stops after the step
 * in hand (what it deleted stays deleted). */
void	dlq_detach(struct dlq_job *);

/* One hook by its id: 200 and its head and rows (a kept delivered hook's
 * too: each row's delivered_at), with body its body (capped, base64 when
 * not UTF-8), 404 when no hook has it, 503; the answer in *out. */
int	dlq_hook_show(const unsigned char id[UUID_LEN], int body,
	    json_t **out);
/* Delete one hook with everything it holds: 200 {"deleted":1,"bytes":b},
 * 404, 409 hook_claimed while dispatch holds a row of it, 503. */
int	dlq_hook_delete(const unsigned char id[UUID_LEN], json_t **out);

/* The answer of a job that met a store error: {"error":
 * "store_unavailable","message"}, after the master's check of a lost
 * store (master_store_check). */
json_t	*dlq_store_error(void);

/* 1 while the dead letters are over queue.dlq.warn_rows (for a gauge). */
int	dlq_over_warn(void);

#endif /* ANKUSA_DLQ_H */
