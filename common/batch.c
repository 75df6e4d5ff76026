/* SPDX-License-Identifier: ISC */
/*
 * batch.c: the codec of MSG_BATCH_JOB and MSG_BATCH_OUTCOME; see batch.h.
 *
 * MSG_BATCH_JOB payload (the frame id is the batch id):
 *
 *   the sink, exactly as in a job,
 *   u32 n (1..BATCH_MAX_ENTRIES), then per entry:
 *     u64 entry id, str hook_id, str tenant, str source, u64 received_at,
 *     str content_type, u32 nheaders, per header str name, str value,
 *     str dedupe_key, str replay_id, u32 attempt, str claim_ref,
 *     u8 verification, data trace context, str tracestate (as a job's),
 *     str order_key, u64 body offset, u64 body length,
 *   u64 total body bytes, then the bodies, concatenated in entry order:
 *   as one data field when the total is at most MSG_INLINE_MAX (also 0),
 *   else no data field and a memfd holding exactly the total.
 *
 * An entry's offset is the sum of the lengths before it, and the total
 * the sum of them all: anything else (an overlap, a gap, a body past the
 * end) is refused, as are two entries with one entry id.
 *
 * MSG_BATCH_OUTCOME payload (the batch id): u32 n, per entry u64 entry
 * id, u8 result, u64 retry_after_ms, str detail; then u32 http_status,
 * u64 duration_ms.
 *
 * Decoding is strict: counts over their bounds, an unknown sink type or
 * result, a body length that disagrees with its descriptor, a descriptor
 * where none belongs (or none where one must be), leftover bytes: each
 * refuses the frame.  Nothing here is fatal except running out of memory.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "job_int.h"
#include "log.h"
#include "msg.h"
#include "proc.h"
#include "utf8.h"

static int	batch_get_entry(struct msg *, struct batch_entry *,
		    uint64_t *, uint64_t *);
static int	batch_get_bodies(struct msg *, struct batch *,
		    const uint64_t *, const uint64_t *);
static void	batch_free_entry(struct batch_entry *);

int
batch_encode(struct msg *m, const struct batch *b)
{
	const struct batch_entry *e;
	uint64_t total = 0;
	uint32_t i;
	unsigned char *all;
	int fd;

	if (b->nentries == 0 || b->nentries > BATCH_MAX_ENTRIES) {
		errno = EINVAL;
		return -1;
	}
	msg_init(m, MSG_BATCH_JOB, b->id);
	job_add_sink(m, &b->sink);
	msg_add_u32(m, b->nentries);
	for (i = 0; i < b->nentries; i++) {
		e = &b->entries[i];
		msg_add_u64(m, e->id);
		msg_add_str(m, e->hook_id);
		msg_add_str(m, e->tenant);
		msg_add_str(m, e->source);
		msg_add_u64(m, e->received_at);
		msg_add_str(m, e->content_type);
		job_add_pairs(m, e->headers, e->nheaders);
		msg_add_str(m, e->dedupe_key);
		msg_add_str(m, e->replay_id);
		msg_add_u32(m, e->attempt);
		msg_add_str(m, e->claim_ref);
		job_add_trace(m, e->verification, e->trace);
		msg_add_str(m, e->tracestate);
		msg_add_str(m, e->order_key);
		msg_add_u64(m, total);
		msg_add_u64(m, e->bodylen);
		total += e->bodylen;
	}
	msg_add_u8(m, b->claim != NULL);
	if (b->claim != NULL)
		claim_store_add(m, b->claim);
	msg_add_u64(m, total);
	if (total > JOB_MAX_BODY) {
		msg_free(m);
		errno = EMSGSIZE;
		return -1;
	}
	/* The bodies, concatenated: inline, or one memfd. */
	if ((all = malloc(total + 1)) == NULL)
		fatal("batch_encode");
	for (total = 0, i = 0; i < b->nentries; i++) {
		e = &b->entries[i];
		if (e->bodylen > 0)
			memcpy(all + total, e->body, e->bodylen);
		total += e->bodylen;
	}
	if (total <= MSG_INLINE_MAX)
		msg_add_data(m, all, total);
	if (m->len > MSG_MAX_PAYLOAD) {
		free(all);
		msg_free(m);
		errno = EMSGSIZE;
		return -1;
	}
	if (total > MSG_INLINE_MAX) {
		if ((fd = proc_memfd("batch", all, total)) == -1) {
			free(all);
			msg_free(m);
			return -1;
		}
		msg_set_fd(m, fd);
	}
	free(all);
	return 0;
}

int
batch_decode(struct msg *m, struct batch *b)
{
	uint64_t *off = NULL, *len = NULL;
	uint32_t n, i, k;

	memset(b, 0, sizeof(*b));
	b->id = m->id;
	if (m->type != MSG_BATCH_JOB || job_get_sink(m, &b->sink, 0) == -1 ||
	    msg_get_u32(m, &n) == -1)
		goto bad;
	if (n == 0 || n > BATCH_MAX_ENTRIES) {
		m->err = 1;
		goto bad;
	}
	if ((b->entries = calloc(n, sizeof(*b->entries))) == NULL ||
	    (off = calloc(n, sizeof(*off))) == NULL ||
	    (len = calloc(n, sizeof(*len))) == NULL)
		fatal("batch_decode");
	for (i = 0; i < n; i++) {
		b->nentries = i + 1;
		if (batch_get_entry(m, &b->entries[i], &off[i], &len[i]) == -1)
			goto bad;
		for (k = 0; k < i; k++)
			if (b->entries[k].id == b->entries[i].id) {
				m->err = 1;
				goto bad;
			}
	}
	{
		uint8_t has;

		if (msg_get_u8(m, &has) == -1 || has > 1)
			goto bad;
		if (has) {
			if ((b->claim = calloc(1, sizeof(*b->claim))) == NULL)
				fatal("batch_decode");
			if (claim_store_get(m, b->claim) == -1)
				goto bad;
		}
	}
	if (batch_get_bodies(m, b, off, len) == -1 || msg_end(m) == -1)
		goto bad;
	free(off);
	free(len);
	return 0;
bad:
	free(off);
	free(len);
	batch_free(b);
	return -1;
}

static int
batch_get_entry(struct msg *m, struct batch_entry *e, uint64_t *off,
    uint64_t *len)
{
	if (msg_get_u64(m, &e->id) == -1 ||
	    job_get_str(m, &e->hook_id) == -1 ||
	    job_get_str(m, &e->tenant) == -1 ||
	    job_get_str(m, &e->source) == -1 ||
	    msg_get_u64(m, &e->received_at) == -1 ||
	    job_get_str(m, &e->content_type) == -1 ||
	    job_get_pairs(m, &e->headers, &e->nheaders, 0) == -1 ||
	    job_get_str(m, &e->dedupe_key) == -1 ||
	    job_get_str(m, &e->replay_id) == -1 ||
	    msg_get_u32(m, &e->attempt) == -1 ||
	    job_get_str(m, &e->claim_ref) == -1 ||
	    job_get_trace(m, &e->verification, e->trace) == -1 ||
	    job_get_str(m, &e->tracestate) == -1 ||
	    job_get_str(m, &e->order_key) == -1 ||
	    msg_get_u64(m, off) == -1 || msg_get_u64(m, len) == -1)
		return -1;
	return 0;
}

/* The bodies: contiguous, in entry order, inline or in the memfd. */
static int
batch_get_bodies(struct msg *m, struct batch *b, const uint64_t *off,
    const uint64_t *len)
{
	struct stat st;
	const void *p;
	uint64_t total, sum = 0;
	size_t n;
	uint32_t i;

	for (i = 0; i < b->nentries; i++) {
		if (off[i] != sum || len[i] > JOB_MAX_BODY - sum) {
			m->err = 1;
			return -1;
		}
		sum += len[i];
	}
	if (msg_get_u64(m, &total) == -1)
		return -1;
	if (total != sum) {
		m->err = 1;
		return -1;
	}
	if (total <= MSG_INLINE_MAX) {
		if (m->fd != -1 || msg_get_data(m, &p, &n) == -1 ||
		    n != total) {
			m->err = 1;
			return -1;
		}
		if ((b->bodies = malloc(n + 1)) == NULL)
			fatal("batch_decode");
		if (n > 0)
			memcpy(b->bodies, p, n);
		b->bodies[n] = '\0';
	} else {
		if (m->fd == -1 || fstat(m->fd, &st) == -1 ||
		    (uint64_t)st.st_size != total) {
			m->err = 1;
			return -1;
		}
		if ((b->bodies = (unsigned char *)proc_read_fd(m->fd,
		    total)) == NULL) {
			if (errno == ENOMEM)
				fatal("batch_decode");
			m->err = 1;
			return -1;
		}
	}
	b->bodieslen = total;
	for (i = 0; i < b->nentries; i++) {
		b->entries[i].body = b->bodies + off[i];
		b->entries[i].bodylen = len[i];
	}
	return 0;
}

static void
batch_free_entry(struct batch_entry *e)
{
	free(e->hook_id);
	free(e->tenant);
	free(e->source);
	free(e->content_type);
	job_free_pairs(e->headers, e->nheaders);
	free(e->dedupe_key);
	free(e->replay_id);
	free(e->claim_ref);
	free(e->tracestate);
	free(e->order_key);
}

void
batch_free(struct batch *b)
{
	uint32_t i;

	if (b->entries != NULL)
		for (i = 0; i < b->nentries; i++)
			batch_free_entry(&b->entries[i]);
	free(b->entries);
	free(b->bodies);
	job_free_sink(&b->sink, 0);
	if (b->claim != NULL) {
		claim_store_free(b->claim);
		free(b->claim);
	}
	memset(b, 0, sizeof(*b));
}

void
batch_entry_from_job(struct batch_entry *e, const struct job *j)
{
	memset(e, 0, sizeof(*e));
	e->id = j->id;
	e->hook_id = j->hook_id;
	e->tenant = j->tenant;
	e->source = j->source;
	e->received_at = j->received_at;
	e->content_type = j->content_type;
	e->headers = j->headers;
	e->nheaders = j->nheaders;
	e->dedupe_key = j->dedupe_key;
	e->replay_id = j->replay_id;
	e->attempt = j->attempt;
	e->claim_ref = j->claim_ref;
	e->verification = j->verification;
	memcpy(e->trace, j->trace, sizeof(e->trace));
	e->tracestate = j->tracestate;
	memcpy(e->span, j->span, sizeof(e->span));
	e->order_key = "";
	e->body = j->body;
	e->bodylen = j->bodylen;
}

/* --- batch outcomes --- */

void
batch_outcome_init(struct batch_outcome *o, const struct batch *b)
{
	uint32_t i;

	memset(o, 0, sizeof(*o));
	if ((o->r = calloc(b->nentries + 1, sizeof(*o->r))) == NULL)
		fatal("batch_outcome_init");
	o->n = b->nentries;
	for (i = 0; i < b->nentries; i++)
		o->r[i].id = b->entries[i].id;
}

void
batch_outcome_set(struct batch_result *r, enum job_result res,
    const char *fmt, ...)
{
	va_list ap;

	r->result = res;
	va_start(ap, fmt);
	job_detail_vset(r->detail, fmt, ap);
	va_end(ap);
}

void
batch_outcome_set_many(struct batch_outcome *o, const uint32_t *idx,
    uint32_t n, enum job_result res, uint64_t retry_after_ms,
    const char *detail)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		batch_outcome_set(&o->r[idx[i]], res, "%s", detail);
		o->r[idx[i]].retry_after_ms = res == JOB_ERROR ?
		    retry_after_ms : 0;
	}
}

void
batch_outcome_encode(struct msg *m, uint64_t id,
    const struct batch_outcome *o)
{
	uint32_t i;

	msg_init(m, MSG_BATCH_OUTCOME, id);
	msg_add_u32(m, o->n);
	for (i = 0; i < o->n; i++) {
		msg_add_u64(m, o->r[i].id);
		msg_add_u8(m, o->r[i].result);
		msg_add_u64(m, o->r[i].retry_after_ms);
		msg_add_str(m, o->r[i].detail);
	}
	msg_add_u32(m, o->http_status);
	msg_add_u64(m, o->duration_ms);
}

int
batch_outcome_decode(struct msg *m, struct batch_outcome *o)
{
	const char *s;
	uint32_t i;
	uint8_t r;

	memset(o, 0, sizeof(*o));
	if (m->type != MSG_BATCH_OUTCOME || m->fd != -1 ||
	    msg_get_u32(m, &o->n) == -1)
		return -1;
	if (o->n == 0 || o->n > BATCH_MAX_ENTRIES) {
		m->err = 1;
		o->n = 0;
		return -1;
	}
	if ((o->r = calloc(o->n, sizeof(*o->r))) == NULL)
		fatal("batch_outcome_decode");
	for (i = 0; i < o->n; i++) {
		if (msg_get_u64(m, &o->r[i].id) == -1 ||
		    msg_get_u8(m, &r) == -1 ||
		    msg_get_u64(m, &o->r[i].retry_after_ms) == -1 ||
		    msg_get_str(m, &s) == -1)
			goto bad;
		if (r >= JOB_RESULT_MAX || strlen(s) >= JOB_DETAIL_MAX) {
			m->err = 1;
			goto bad;
		}
		o->r[i].result = r;
		(void)utf8_clean(o->r[i].detail, JOB_DETAIL_MAX, s,
		    strlen(s));
	}
	if (msg_get_u32(m, &o->http_status) == -1 ||
	    msg_get_u64(m, &o->duration_ms) == -1 || msg_end(m) == -1)
		goto bad;
	return 0;
bad:
	batch_outcome_free(o);
	return -1;
}

void
batch_outcome_free(struct batch_outcome *o)
{
	free(o->r);
	memset(o, 0, sizeof(*o));
}
