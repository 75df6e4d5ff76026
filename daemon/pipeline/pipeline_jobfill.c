/* SPDX-License-Identifier: ISC */
/*
 * pipeline_jobfill.c: an attempt's fields from its row and its hook; see
 * pipeline_jobfill.h.
 *
 * Fatal: nothing.
 */
#include "config.h"

#include <string.h>

#include "pipeline_jobfill.h"

static void
jobfill_ids(struct jobfill_ids *ids, const struct drow *r,
    const struct store_hook_rec *rec)
{
	static const unsigned char zero[UUID_LEN];

	uuid_format(rec->hook.id, ids->hook);
	ids->replay[0] = '\0';
	if (memcmp(r->row.replay_id, zero, UUID_LEN) != 0)
		uuid_format(r->row.replay_id, ids->replay);
}

/* struct job and struct batch_entry name these fields alike; one
 * list of them for both. */
#define JOBFILL_COMMON(x, ids, r, rec) do {				\
	(x)->hook_id = (ids)->hook;					\
	(x)->tenant = (char *)(rec)->hook.tenant;			\
	(x)->source = (char *)(rec)->hook.source;			\
	(x)->received_at = (rec)->hook.received_at;			\
	(x)->content_type = (char *)(rec)->hook.content_type;		\
	(x)->headers = (struct header_kv *)(rec)->hook.headers;		\
	(x)->nheaders = (rec)->hook.nheaders;				\
	(x)->dedupe_key = (char *)((rec)->hook.dedupe_key != NULL ?	\
	    (rec)->hook.dedupe_key : "");				\
	(x)->replay_id = (ids)->replay;					\
	(x)->attempt = (r)->row.attempts + 1;				\
	(x)->claim_ref = (char *)((rec)->claim_ref != NULL ?		\
	    (rec)->claim_ref : "");					\
	(x)->verification = (rec)->hook.verification;			\
	memcpy((x)->trace, (rec)->hook.trace, TRACE_CTX_LEN);		\
	(x)->tracestate = (char *)(rec)->hook.tracestate;		\
	(x)->bodylen = (rec)->hook.body_len;				\
} while (0)

void
jobfill_job(struct job *j, struct jobfill_ids *ids, const struct drow *r,
    const struct store_hook_rec *rec)
{
	jobfill_ids(ids, r, rec);
	JOBFILL_COMMON(j, ids, r, rec);
	memcpy(j->sha256, rec->hook.sha256, sizeof(j->sha256));
	j->body = (unsigned char *)rec->hook.body;
}

void
jobfill_entry(struct batch_entry *e, struct jobfill_ids *ids,
    const struct drow *r, const struct store_hook_rec *rec)
{
	jobfill_ids(ids, r, rec);
	JOBFILL_COMMON(e, ids, r, rec);
	e->order_key = "";
	e->body = rec->hook.body;
}
