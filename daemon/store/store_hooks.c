/* SPDX-License-Identifier: ISC */
/*
 * store_hooks.c: hooks and quarantine in the store: a hook put in a batch
 * (its body inline or in bodies: store_bodies.c), the quarantine pen, the
 * listings and reads of both tables, and a hook's claim ref.  The layout
 * is in store_rec.c's header comment.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ids.h"
#include "store.h"
#include "store_int.h"

#define STORE_LIST_PEEK		4096	/* bytes of a hook read to list it */

/* A listing's caller, behind store_list_heads. */
struct list_ctx {
	int	(*hook_cb)(const struct store_hook_info *, void *);
	int	(*quarantine_cb)(const struct store_quarantine_info *, void *);
	void	*arg;
};

static int	 store_list_heads(struct store *, int, const char *, uint64_t,
		    uint64_t, int (*)(uint64_t, const struct store_hook_rec *,
		    void *), void *);
static int	 store_rec_get(struct store *, int, uint64_t,
		    struct store_hook_rec *, int);
static int	 list_hook_fn(uint64_t, const struct store_hook_rec *, void *);
static int	 list_quarantine_fn(uint64_t, const struct store_hook_rec *,
		    void *);

int
store_batch_put_hook(struct store_batch *b, struct store_hook *h,
    const struct store_row_spec *rows, int nrows)
{
	struct store *st = b->st;
	struct store_row r;
	unsigned char hk[8], rk[STORE_ROWKEY_LEN], key[STORE_KEY_MAX];
	unsigned char lane[STORE_KEY_MAX], val[STORE_REC_MAX];
	unsigned char *rec;
	size_t klen, lanelen, vlen, reclen;
	struct store_body_at at;
	int i, heap;

	if (b->failed) {
		store_seterr(st, 0, "store %s: batch already failed", st->dir);
		return -1;
	}
	if (h->tenant == NULL || h->source == NULL ||
	    strlen(h->tenant) > STORE_NAME_MAX ||
	    strlen(h->source) > STORE_NAME_MAX || nrows < 0) {
		store_seterr(st, 0, "store %s: hook with a bad tenant, source "
		    "or row count", st->dir);
		goto fail;
	}

	/* Taken before any write: an aborted batch burns its seqs. */
	h->seq = st->next_seq++;
	store_key_hook(hk, h->seq);
	if (h->id_seq)
		uuid_put_seq(h->id, h->seq);
	heap = h->body != NULL && h->body_len >= STORE_BODY_MIN &&
	    h->body_len <= STORE_BODY_MAX;
	if (heap && bodies_put(b, h, &at) == -1)
		goto fail;
	if ((rec = rec_hook_encode(h, nrows, "", NULL, heap ? &at : NULL,
	    &reclen)) == NULL) {
		store_seterr(st, 0, "store %s: hook seq %" PRIu64 ": cannot "
		    "encode (out of memory or a field too long)", st->dir,
		    h->seq);
		goto fail;
	}
	if (store_put(st, b->txn, T_HOOKS, hk, sizeof(hk), rec, reclen, 1) ==
	    -1) {
		free(rec);
		goto fail;
	}
	free(rec);
	if (!h->id_seq && hookids_put(b, h->id, h->seq) == -1)
		goto fail;
	if (h->dedupe_key != NULL && h->dedupe_key[0] != '\0' &&
	    !h->flagged && dedupe_put(st, b->txn, h) == -1)
		goto fail;

	for (i = 0; i < nrows; i++) {
		memset(&r, 0, sizeof(r));
		snprintf(r.tenant, sizeof(r.tenant), "%s", h->tenant);
		snprintf(r.source, sizeof(r.source), "%s", h->source);
		r.sink_index = rows[i].sink_index;
		r.module = rows[i].module;
		r.due = h->received_at;
		r.lane_hash = rows[i].ordered ? rows[i].lane_hash : 0;
		r.state = rows[i].ordered ? STORE_ROW_MEMBER : STORE_ROW_DUE;
		r.body_size = h->body_len;
		memcpy(r.replay_id, h->replay_id, UUID_LEN);
		store_key_row(rk, h->seq, r.sink_index);
		if ((vlen = store_rec_row_encode(&r, val, sizeof(val))) == 0) {
			store_seterr(st, 0, "store %s: row seq %" PRIu64
			    " sink %u: cannot encode", st->dir, h->seq,
			    r.sink_index);
			goto fail;
		}
		if (store_put(st, b->txn, T_ROWS, rk, sizeof(rk), val, vlen, 1) ==
		    -1)
			goto fail;
		keycount_row(b, rk, &r, 1, 0);
		if (!rows[i].ordered) {
			klen = store_key_due(key, sizeof(key), h->tenant,
			    h->received_at, rk);
			if (klen == 0)
				goto fail_key;
			vlen = store_rec_empty_encode(val, sizeof(val));
			if (store_put(st, b->txn, T_DUE, key, klen, val, vlen,
			    0) == -1)
				goto fail;
			continue;
		}
		/* Ordered: blind puts of the member and the lane's mark;
		 * only dispatch reads or moves lane state. */
		lanelen = store_key_lane(lane, sizeof(lane), h->tenant,
		    h->source, r.sink_index, r.lane_hash);
		klen = store_key_member(key, sizeof(key), lane, lanelen,
		    h->seq);
		if (lanelen == 0 || klen == 0)
			goto fail_key;
		vlen = store_rec_rowkey_encode(rk, val, sizeof(val));
		if (store_put(st, b->txn, T_MEMBERS, key, klen, val, vlen,
		    0) == -1)
			goto fail;
		vlen = store_rec_empty_encode(val, sizeof(val));
		if (store_put(st, b->txn, T_MARKS, lane, lanelen, val, vlen,
		    0) == -1)
			goto fail;
		b->counts.lane_members++;
	}
	b->counts.hooks++;
	b->counts.rows += nrows;
	return 0;

 fail_key:
	store_seterr(st, 0, "store %s: hook seq %" PRIu64 ": key too long",
	    st->dir, h->seq);
 fail:
	b->failed = 1;
	return -1;
}

int
store_hook_fits(const struct store_hook *h, const char *reason, char *why,
    size_t whylen)
{
	unsigned char dk[STORE_KEY_MAX], xk[STORE_KEY_MAX];
	size_t dklen;

	if (h->tenant == NULL || h->source == NULL ||
	    strlen(h->tenant) > STORE_NAME_MAX ||
	    strlen(h->source) > STORE_NAME_MAX) {
		snprintf(why, whylen, "a tenant or source id over %d bytes",
		    STORE_NAME_MAX);
		return -1;
	}
	if (h->tracestate != NULL && strlen(h->tracestate) > TRACE_STATE_MAX) {
		snprintf(why, whylen, "a tracestate of %zu bytes (at most %d)",
		    strlen(h->tracestate), TRACE_STATE_MAX);
		return -1;
	}
	if (h->event_type != NULL &&
	    strlen(h->event_type) > STORE_EVTYPE_MAX) {
		snprintf(why, whylen, "an event type of %zu bytes (at most "
		    "%d)", strlen(h->event_type), STORE_EVTYPE_MAX);
		return -1;
	}
	if (reason != NULL && strlen(reason) > STORE_QREASON_MAX) {
		snprintf(why, whylen, "a reason of %zu bytes (at most %d)",
		    strlen(reason), STORE_QREASON_MAX);
		return -1;
	}
	/* The same keys dedupe_put makes, so the two cannot differ. */
	if (reason == NULL && h->dedupe_key != NULL &&
	    h->dedupe_key[0] != '\0' && !h->flagged &&
	    ((dklen = store_key_dedupe(dk, sizeof(dk), h->tenant, h->source,
	    h->dedupe_key)) == 0 || store_key_dedupe_exp(xk, sizeof(xk),
	    h->dedupe_expires, dk, dklen) == 0)) {
		snprintf(why, whylen, "a dedupe key of %zu bytes, too long to "
		    "store", strlen(h->dedupe_key));
		return -1;
	}
	return 0;
}

int
store_batch_put_quarantine(struct store_batch *b, struct store_hook *h,
    const char *reason)
{
	struct store *st = b->st;
	unsigned char hk[8];
	unsigned char *rec;
	size_t reclen;

	if (b->failed) {
		store_seterr(st, 0, "store %s: batch already failed", st->dir);
		return -1;
	}
	if (reason == NULL)
		reason = "";
	if (h->tenant == NULL || h->source == NULL ||
	    strlen(h->tenant) > STORE_NAME_MAX ||
	    strlen(h->source) > STORE_NAME_MAX ||
	    strlen(reason) > STORE_QREASON_MAX) {
		store_seterr(st, 0, "store %s: quarantined hook with a bad "
		    "tenant, source or reason", st->dir);
		goto fail;
	}

	/* The hooks' counter: a released hook gets a new seq from it, and
	 * store_open checks both tables against it. */
	h->seq = st->next_seq++;
	store_key_hook(hk, h->seq);
	if ((rec = rec_hook_encode(h, 0, "", reason, NULL, &reclen)) == NULL) {
		store_seterr(st, 0, "store %s: quarantine seq %" PRIu64 ": "
		    "cannot encode (out of memory or a field too long)",
		    st->dir, h->seq);
		goto fail;
	}
	if (store_put(st, b->txn, T_QUARANTINE, hk, sizeof(hk), rec, reclen,
	    1) == -1) {
		free(rec);
		goto fail;
	}
	free(rec);
	b->counts.qhooks++;
	b->counts.qbytes += h->body_len;
	return 0;

 fail:
	b->failed = 1;
	return -1;
}

int
store_batch_del_quarantine(struct store_batch *b, uint64_t seq)
{
	struct store *st = b->st;
	struct store_hook_rec rec;
	unsigned char hk[8];
	int ret;

	st->dberr[0] = '\0';
	if (b->failed) {
		store_seterr(st, 0, "store %s: batch already failed", st->dir);
		return -1;
	}
	/* The head only, for the body size the counter drops by. */
	if ((ret = hooks_head_get(st, b->txn, T_QUARANTINE, seq, &rec)) != 1) {
		if (ret == -1)
			b->failed = 1;
		return ret;
	}
	store_key_hook(hk, seq);
	if ((ret = store_tdel(st, b->txn, T_QUARANTINE, hk, sizeof(hk))) != 1) {
		/* Read in this batch a moment ago: gone is an error too. */
		if (ret == 0)
			store_tmissing(st, T_QUARANTINE, "delete", hk,
			    sizeof(hk));
		store_hook_rec_free(&rec);
		b->failed = 1;
		return -1;
	}
	/* Never below 0, even if a counter was lost. */
	if (b->counts.qhooks > 0)
		b->counts.qhooks--;
	b->counts.qbytes -= b->counts.qbytes < rec.body_size ?
	    b->counts.qbytes : rec.body_size;
	store_hook_rec_free(&rec);
	return 1;
}

int
store_hooks_list(struct store *st, const char *source, uint64_t after_seq,
    uint64_t limit, int (*cb)(const struct store_hook_info *, void *),
    void *arg)
{
	struct list_ctx ctx;

	memset(&ctx, 0, sizeof(ctx));
	ctx.hook_cb = cb;
	ctx.arg = arg;
	return store_list_heads(st, T_HOOKS, source, after_seq, limit,
	    list_hook_fn, &ctx);
}

int
store_quarantine_list(struct store *st, const char *source,
    uint64_t after_seq, uint64_t limit,
    int (*cb)(const struct store_quarantine_info *, void *), void *arg)
{
	struct list_ctx ctx;

	memset(&ctx, 0, sizeof(ctx));
	ctx.quarantine_cb = cb;
	ctx.arg = arg;
	return store_list_heads(st, T_QUARANTINE, source, after_seq, limit,
	    list_quarantine_fn, &ctx);
}

static int
list_hook_fn(uint64_t seq, const struct store_hook_rec *rec, void *arg)
{
	struct list_ctx *ctx = arg;
	struct store_hook_info info;

	memset(&info, 0, sizeof(info));
	info.seq = seq;
	uuid_format(rec->hook.id, info.id);
	snprintf(info.tenant, sizeof(info.tenant), "%s", rec->hook.tenant);
	snprintf(info.source, sizeof(info.source), "%s", rec->hook.source);
	info.received_at = rec->hook.received_at;
	info.size = rec->body_size;
	info.rows = rec->rows;
	info.flagged = rec->hook.flagged;
	trace_id_hex(rec->hook.trace, info.trace_id);
	snprintf(info.event_type, sizeof(info.event_type), "%s",
	    rec->hook.event_type != NULL ? rec->hook.event_type : "");
	info.kept = rec->kept;
	return ctx->hook_cb(&info, ctx->arg);
}

static int
list_quarantine_fn(uint64_t seq, const struct store_hook_rec *rec, void *arg)
{
	struct list_ctx *ctx = arg;
	struct store_quarantine_info info;

	memset(&info, 0, sizeof(info));
	info.seq = seq;
	uuid_format(rec->hook.id, info.id);
	snprintf(info.tenant, sizeof(info.tenant), "%s", rec->hook.tenant);
	snprintf(info.source, sizeof(info.source), "%s", rec->hook.source);
	info.received_at = rec->hook.received_at;
	info.size = rec->body_size;
	snprintf(info.reason, sizeof(info.reason), "%s",
	    rec->reason != NULL ? rec->reason : "");
	snprintf(info.event_type, sizeof(info.event_type), "%s",
	    rec->hook.event_type != NULL ? rec->hook.event_type : "");
	return ctx->quarantine_cb(&info, ctx->arg);
}

/* Hook records of table t (hooks or quarantine) in seq order after
 * after_seq, of one source (NULL: all), at most limit (0: all), each
 * handed to fn with only its head decoded (no body: the read is partial,
 * STORE_LIST_PEEK bytes, or exactly the head when it is longer); fn
 * returning non-zero stops.  0, or -1 on a store error. */
static int
store_list_heads(struct store *st, int t, const char *source,
    uint64_t after_seq, uint64_t limit,
    int (*fn)(uint64_t, const struct store_hook_rec *, void *), void *arg)
{
	struct store_hook_rec rec;
	unsigned char kb[8], peek[STORE_LIST_PEEK], *full = NULL;
	const unsigned char *data;
	uint64_t n = 0;
	uint32_t want;
	size_t klen, dlen;
	struct cur c;
	int how = STORE_CUR_RANGE, ret, rv = 0, stop;

	st->dberr[0] = '\0';
	if (after_seq == UINT64_MAX)
		return 0;
	if (store_cur_open(&c, st, store_readtxn(st), t) == -1)
		return -1;
	store_key_hook(kb, after_seq + 1);
	for (;;) {
		ret = store_cur_step(&c, how, kb, sizeof(kb), &klen, peek,
		    sizeof(peek), &dlen);
		how = STORE_CUR_NEXT;
		if (ret == 0)
			break;
		if (ret == -1) {
			rv = -1;
			break;
		}
		data = peek;
		/* The head did not fit the peek: read exactly the head. */
		if (dlen >= 5 && peek[0] == STORE_REC_VERSION &&
		    (want = rec_get_u32(peek + 1)) > dlen - 5 &&
		    dlen == sizeof(peek)) {
			free(full);
			if ((full = malloc(want + 5)) == NULL) {
				store_seterr(st, 0, "store %s: out of memory",
				    st->dir);
				rv = -1;
				break;
			}
			if (store_cur_step(&c, STORE_CUR_AGAIN, kb, sizeof(kb),
			    &klen, full, want + 5, &dlen) == -1) {
				rv = -1;
				break;
			}
			data = full;
		}
		if (rec_hook_decode(t, kb, klen, data, dlen, 1, &rec,
		    st->err, sizeof(st->err)) == -1) {
			rv = -1;
			break;
		}
		if (source != NULL && strcmp(source, rec.hook.source) != 0) {
			store_hook_rec_free(&rec);
			continue;
		}
		n++;
		stop = fn(rec_get_u64(kb), &rec, arg);
		store_hook_rec_free(&rec);
		if (stop != 0 || (limit != 0 && n >= limit))
			break;
	}
	free(full);
	return store_cur_done(&c, rv);
}

int
store_hook_get(struct store *st, uint64_t seq, struct store_hook_rec *out)
{
	int ret;

	if ((ret = store_rec_get(st, T_HOOKS, seq, out, 1)) != 0)
		return ret == 1 ? 0 : -1;
	return 1;
}

int
store_quarantine_get(struct store *st, uint64_t seq,
    struct store_hook_rec *out, char *reason, size_t reasonlen)
{
	int ret;

	if ((ret = store_rec_get(st, T_QUARANTINE, seq, out, 1)) != 0)
		return ret == 1 ? 0 : -1;
	if (reason != NULL && reasonlen > 0)
		snprintf(reason, reasonlen, "%s", out->reason);
	return 1;
}

int
store_quarantine_usage(struct store *st, uint64_t *bytes, uint64_t *hooks)
{
	const struct store_counts *c;

	c = st->batch_open ? &st->batch.counts : &st->counts;
	if (bytes != NULL)
		*bytes = c->qbytes;
	if (hooks != NULL)
		*hooks = c->qhooks;
	return 0;
}

/* A whole hook record of table t (hooks, quarantine), with its body
 * read from bodies when body is set (otherwise out->at says where it is):
 * 0 found, 1 not found, -1 on a store error. */
static int
store_rec_get(struct store *st, int t, uint64_t seq,
    struct store_hook_rec *out, int body)
{
	unsigned char kb[8];
	void *val;
	size_t vlen;
	int ret;

	st->dberr[0] = '\0';
	memset(out, 0, sizeof(*out));
	store_key_hook(kb, seq);
	if ((ret = store_tget_alloc(st, store_readtxn(st), t, kb, sizeof(kb),
	    &val, &vlen)) != 1)
		return ret == 0 ? 1 : -1;
	if (rec_hook_decode(t, kb, sizeof(kb), val, vlen, 0, out, st->err,
	    sizeof(st->err)) == -1) {
		free(val);
		return -1;
	}
	out->mem = val;
	if (body && bodies_get(st, store_readtxn(st), seq, out) == -1) {
		store_hook_rec_free(out);
		return -1;
	}
	return 0;
}

/* The head of the hook record at seq of table t (hooks, quarantine),
 * without its body (a partial read).  1 found (out->mem owns the bytes:
 * store_hook_rec_free), 0 not found, -1 on a store error. */
int
hooks_head_get(struct store *st, struct __db_txn *txn, int t, uint64_t seq,
    struct store_hook_rec *out)
{
	unsigned char kb[8], *buf;
	uint32_t want = STORE_LIST_PEEK, head;
	size_t vlen;
	int ret, pass;

	memset(out, 0, sizeof(*out));
	store_key_hook(kb, seq);
	for (pass = 0;; pass++) {
		if ((buf = malloc(want)) == NULL) {
			store_seterr(st, 0, "store %s: out of memory",
			    st->dir);
			return -1;
		}
		if ((ret = store_tget_head(st, txn, t, kb, sizeof(kb), buf,
		    want, &vlen)) != 1) {
			free(buf);
			return ret;
		}
		/* The head did not fit: once more, exactly the head. */
		if (pass == 0 && vlen == want && want >= 5 &&
		    buf[0] == STORE_REC_VERSION &&
		    (head = rec_get_u32(buf + 1)) > want - 5 &&
		    head <= UINT32_MAX - 5) {
			free(buf);
			want = head + 5;
			continue;
		}
		break;
	}
	if (rec_hook_decode(t, kb, sizeof(kb), buf, vlen, 1, out, st->err,
	    sizeof(st->err)) == -1) {
		free(buf);
		return -1;
	}
	out->mem = buf;
	return 1;
}

void
store_hook_rec_free(struct store_hook_rec *rec)
{
	free(rec->hdrs);
	free(rec->mem);
	free(rec->body_mem);
	rec->hdrs = NULL;
	rec->mem = NULL;
	rec->body_mem = NULL;
}

int
store_hook_claim(struct store *st, uint64_t seq, char *ref, size_t reflen)
{
	struct store_hook_rec rec;
	int ret;

	if ((ret = hooks_head_get(st, store_readtxn(st), T_HOOKS, seq,
	    &rec)) != 1)
		return ret;
	if (ref != NULL && reflen > 0)
		snprintf(ref, reflen, "%s", rec.claim_ref != NULL ?
		    rec.claim_ref : "");
	store_hook_rec_free(&rec);
	return 1;
}

int
store_batch_hook_set_claim(struct store_batch *b, uint64_t seq,
    const char *ref)
{
	struct store *st = b->st;
	struct store_hook_rec rec;
	unsigned char hk[8];
	void *val;
	size_t len;
	int ret;

	/* The body stays where it is. */
	if ((ret = store_rec_get(st, T_HOOKS, seq, &rec, 0)) != 0)
		return ret == 1 ? 0 : -1;
	if ((val = rec_hook_encode(&rec.hook, rec.rows, ref, NULL, &rec.at,
	    &len)) == NULL) {
		store_hook_rec_free(&rec);
		store_seterr(st, 0, "store %s: out of memory", st->dir);
		return -1;
	}
	/* The archive's flags are no part of the hook as put. */
	((unsigned char *)val)[HOOK_HEAD_FLAGS] |= rec.aflags;
	store_hook_rec_free(&rec);
	store_key_hook(hk, seq);
	ret = store_put(st, b->txn, T_HOOKS, hk, sizeof(hk), val, len, 0);
	free(val);
	return ret == 0 ? 1 : -1;
}
