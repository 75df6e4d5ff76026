/* SPDX-License-Identifier: ISC */
/*
 * admin_audit.h: the audit trail of the operators' changes (admin_audit.c):
 * every change asked for through the admin API (its routes other than GET,
 * recorded by admin_api.c when it answers) or the control socket (reload,
 * drain, backup, the quarantine's release and purge, dead-letter-source),
 * with its time, actor, action, target, tenant and outcome.
 *
 * Each entry is one log line at once (info: "audit: actor=... action=...
 * target=... tenant=... outcome=..."), and a record of table audit written
 * in a batch of its own on the next loop pass, so that the write never
 * runs inside the caller's own work nor delays its answer.  A write that
 * fails (the store lost, a client of a replication group, whose store is
 * read-only, the queue full) is logged and counted in
 * ankusa_audit_write_errors_total; the change's own outcome stands.
 */
#ifndef ANKUSA_ADMIN_AUDIT_H
#define ANKUSA_ADMIN_AUDIT_H

#include "admin_api.h"

/* Record one change.  actor, action, target and outcome ("ok" or the
 * error) are cleaned and cut to the store's bounds; tenant is "" when the
 * change has none (or several). */
void		 audit_record(const char *actor, const char *action,
		    const char *target, const char *tenant,
		    const char *outcome);
/* The tenant a source is bound to, "" when it is none or not
 * configured. */
const char	*audit_tenant_of(const char *source);
/* The action an admin API route names (method and pattern as in its
 * table); body, the request's (or NULL), chooses among a replay's changes.
 * A route the table misses is "<METHOD> <pattern>", so that nothing goes
 * unrecorded. */
const char	*audit_action(enum admin_method, const char *pattern,
		    json_t *body, char *buf, size_t len);
/* After a checkpoint (main's upkeep): entries older than
 * admin.audit.max_age_s go, in bounded steps on the loop. */
void		 audit_prune(void);
/* Entries still queued are written now (a stop's last turn). */
void		 audit_flush(void);

/* admin_api_audit.c: GET /v1/audit. */
extern const struct admin_route admin_routes_audit[];

#endif
