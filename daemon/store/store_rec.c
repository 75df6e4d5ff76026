/* SPDX-License-Identifier: ISC */
/*
 * store_rec.c: the store's record codecs: the encoder and decoder, and
 * the records' encoders and decoders (store_rec_*), with the words a
 * damaged key or record is reported in; the keys and big-endian integers
 * are store_key.c's.  No libdb calls: functions of their bytes alone.
 *
 * Layout.  All integers big-endian, so keys sort by number; "str" in a key
 * is the bytes and a NUL; "str" in a value is a u32 length, the bytes and a
 * NUL (so a decoded string points into the record).  Every value starts
 * with a format version byte, today 1 (replays: 2).
 *
 *   meta        name (no NUL) -> v1:
 *                 "schema"    u32 STORE_SCHEMA_VERSION of the layout
 *                 "next_seq"  u64 the next hook seq (written by each batch
 *                             that takes seqs)
 *                 "store_id"  16 random bytes, made at creation
 *                 "hooks", "rows", "dead"  u64 counters, kept in the same
 *                             transactions that change them
 *                 "qhooks", "qbytes"  u64 hooks and body bytes held in
 *                             quarantine, likewise; added after schema 1
 *                             shipped, so (these two only) a missing
 *                             record reads as 0 and is written by the
 *                             first batch that changes the pen
 *                 "lane_members"  u64 members entries (rows waiting
 *                             behind a lane head), likewise kept; added
 *                             later too: a missing record is counted
 *                             from members at open and written by the
 *                             next commit
 *   hooks       seq u64 -> v1, u32 head length, head, body:
 *                 head: u8 flags (1 flagged, 2 body checked in, 4 body
 *                 in the log, 8 body in bodies, 16 (with 4) that log
 *                 record could not be read, 32 a row has a delivered
 *                 record, 64 kept: every row delivered, 128 the id
 *                 carries the seq's low bits: no hookids entry), id[16],
 *                 u64 received_at, u32 live rows, sha256[32], u64 body
 *                 size, str tenant, source, method, path, content type,
 *                 dedupe key ("" none), claim ref ("" none), u32 nheaders,
 *                 nheaders x (str name, str value), then the fields added
 *                 at the head's end since (below): u8 verification
 *                 (enum hook_verification), trace context[25]
 *                 (common/trace.h: trace id, parent id, flags, as the
 *                 edge checked or made it), str tracestate ("" none),
 *                 str event type ("" none: workers/evtype.h);
 *                 body: body size raw bytes, absent when checked in;
 *                 in bodies, its record id there instead (DB_HEAP_RID:
 *                 u32 page, u16 index); in the log (builds before
 *                 2026-12-02, schema 1), the log record's position (u32
 *                 file, u32 offset), which store_open moves into bodies
 *                 (store_bodies.c; flag 16 when it could not).
 *                 The head length lets a listing read the head alone
 *                 (DB_DBT_PARTIAL) without the body.
 *   quarantine  seq u64 -> v1, the hooks layout with str reason (the
 *                 verification failure) after the headers and before the
 *                 added fields, inside the head; live rows 0, claim
 *                 ref "" (the body is always inline), headers: all of
 *                 the request's
 *   rows        seq u64, sink index u32 -> v1, u8 state, u8 module,
 *                 u32 sink index, u32 attempts, u64 first attempt, u64 due,
 *                 u64 lane hash, u64 body size, replay id[16],
 *                 str tenant, str source, str last error.  State (enum
 *                 store_row_state): DUE, HEAD (a lane's head) and PARKED
 *                 have one due key at their due time; MEMBER has a
 *                 members entry instead; DEAD has neither and a dead
 *                 entry at (its due, its key): a DEAD row's due is its
 *                 dead time (builds before 2026-12-02 left the due it
 *                 had).  A delivered row is deleted; a DEAD one stays,
 *                 and is counted in "rows" and in its hook's live rows.
 *   due         str tenant, u64 due, row key -> v1.  Sorted by tenant,
 *                 then due time: a tenant's earliest due row is its first
 *                 key, and the next tenant starts at its id and a 0x01
 *                 byte, so listing the tenants with work is a seek each.
 *                 A key whose row is gone or elsewhere is stale: readers
 *                 report it, store_batch_due_drop removes it.
 *   lanes       str tenant, str source, u32 sink, u64 key hash (the lane
 *                 key) -> v1, head row key[12]; present while the lane
 *                 has a head (written at promotion, deleted at release)
 *   members     lane key, u64 seq -> v1, row key[12]: the rows waiting
 *                 behind the head, in commit order; put blind by the
 *                 writer, deleted at promotion or when the member is
 *                 settled (dead-lettered)
 *   marks       lane key -> v1: put blind with each member, deleted once
 *                 the lane has no member left; the sweep visits only
 *                 marked lanes
 *   dead        u64 dead time, row key -> v1, u32 attempts, str reason,
 *                 str last error (the row stays, in state DEAD)
 *   dedupe      str tenant, str source, key bytes (no NUL) -> v1, hook
 *                 id[16], u64 expiry
 *   dedupe_exp  u64 expiry, dedupe key -> v1 (the expiry index: the
 *                 sweep walks it from the start; a dedupe entry stored
 *                 again leaves its old index entry behind, which the sweep
 *                 removes without touching the newer entry)
 *   bodies      a heap (DB_HEAP): record id -> v1, u64 the hook's seq,
 *                 its body (STORE_BODY_MIN to STORE_BODY_MAX bytes); put
 *                 and deleted in the transactions that put and delete
 *                 its hook
 *   replays     job id[16] -> v4 (STORE_REC_REPLAY_VERSION; v1 to v3 read),
 *                 u8 state, u8 kind, u32 rate, u32 max lag ms, u64
 *                 since, until, created at, moved, cursor[20] (a dead
 *                 key, or a pen seq and zeros), str source, and from v2:
 *                 u64 dropped, u64 seq bound, str reason, and from v3:
 *                 str event type ("" any), and from v4: u32 sink
 *                 (archive: its index + 1, 0 every sink).  v1 ends
 *                 after the source, v2 after the reason, v3 after the
 *                 event type
 *   delivered   row key -> v1, u8 module, u64 delivered at (wall ms),
 *                 replay id[16]: a row delivered while
 *                 retention.delivered_s keeps hooks (the row itself is
 *                 deleted as without it); deleted with its hook
 *   archive     u64 kept at (the hook's last delivery, wall ms), u64 seq
 *                 -> v1, u64 bytes (the record's head and the body, for
 *                 retention.max_bytes): one per kept hook, pruned oldest
 *                 first
 *   audit       ~at u64, ~n u32 (the entry's wall ms and its number
 *                 within that ms, each bitwise inverted so that the
 *                 newest sorts first) -> v1, u64 at, str actor, str
 *                 action, str target, str tenant, str outcome
 *   attempts    hook id[16], u32 sink index, u64 round (the row's first
 *                 attempt of the round, wall ms), u32 n -> v1, u8 module,
 *                 u8 outcome (enum store_attempt_outcome), u32 status, u64
 *                 started at, u64 duration ms, str error, str response
 *                 (cleaned by the deliver process, at most 65536 bytes)
 *   attempts_end  u64 gone at (wall ms), hook id[16] -> v1: the hook went
 *                 then; its attempts are pruned retention.attempts_s
 *                 after
 *
 * A hook's head grows at its end without a new version: a field added
 * there is read when the head holds it (the head length says where it
 * ends), and a head that ends before it is an older build's record, read
 * with the field's default; the encoder always writes it, and an older
 * build refuses the longer head by name ("bad headers").  Defaults of
 * the fields added so far, for records written before them: verification
 * flagged for a flagged hook, failed for a held one, else skipped (that
 * build did not
 * keep whether a signature was checked, and a delivery must not claim it
 * was); a trace context whose trace id is the hook id and parent id its
 * last 8 bytes, sampled (so every attempt of an old hook carries one
 * trace id); no tracestate; no event type (a head that ends after the
 * tracestate: a build before the event types).
 *
 * Upgrading a record: add the new layout as version 2 beside version 1 in
 * its decoder (a decoder reads every version it knows into the same
 * struct), make the encoder write 2, and bump STORE_REC_VERSION for that
 * table.  Old records are then rewritten lazily when next written; a
 * downgrade refuses them by name.  A change that cannot be read lazily
 * (a key layout) bumps STORE_SCHEMA_VERSION and migrates in store_open,
 * inside one transaction, before anything else reads the store; a build
 * refuses a store whose schema is newer than its own.  A migration too
 * long for one transaction (schema 1 -> 2: bodies out of the log, in
 * transactions of a few hundred hooks) must leave each record readable
 * after each of them and resume where it stopped, and writes the new
 * schema in its last.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ids.h"
#include "msg.h"
#include "store.h"
#include "store_int.h"
#include "trace.h"

#define HOOK_FLAG_FLAGGED	0x01
#define HOOK_FLAG_CLAIMED	0x02

static void	 enc_init(struct enc *, unsigned char *, size_t, int);
static void	 enc_room(struct enc *, size_t);
static void	 enc_u8(struct enc *, uint8_t);
static void	 enc_u32(struct enc *, uint32_t);
static void	 enc_u64(struct enc *, uint64_t);
static void	 enc_bytes(struct enc *, const void *, size_t);
static void	 enc_str(struct enc *, const char *, size_t);
static void	 dec_init(struct dec *, const void *, size_t);
static uint8_t	 dec_u8(struct dec *);
static uint32_t	 dec_u32(struct dec *);
static uint64_t	 dec_u64(struct dec *);
static const unsigned char *dec_bytes(struct dec *, size_t);
static const char *dec_str(struct dec *);
static void	 dec_strcpy(struct dec *, char *, size_t);
static void	 rec_hook_added(struct dec *, size_t, int,
		    struct store_hook_rec *);
static size_t	 key_part(const unsigned char *, size_t, char *, size_t);
static size_t	 key_describe_lane(const unsigned char *, size_t, char *,
		    size_t);

/* Printable bytes of a key part, others as '?'. */
static size_t
key_part(const unsigned char *p, size_t len, char *buf, size_t bufsz)
{
	size_t i, n = 0;

	for (i = 0; i < len && p[i] != '\0' && n + 1 < bufsz; i++)
		buf[n++] = isprint(p[i]) ? p[i] : '?';
	if (bufsz > 0)
		buf[n] = '\0';
	return i;
}

/* "acme/github#0 key 00ab...", returns the lane key's length or 0. */
static size_t
key_describe_lane(const unsigned char *k, size_t len, char *buf,
    size_t bufsz)
{
	char t[STORE_NAME_MAX + 1], s[STORE_NAME_MAX + 1];
	size_t a, b;

	a = key_part(k, len, t, sizeof(t));
	if (a >= len)
		return 0;
	b = key_part(k + a + 1, len - a - 1, s, sizeof(s));
	if (a + 1 + b + 1 + 12 > len)
		return 0;
	snprintf(buf, bufsz, "lane %s/%s#%u key %016" PRIx64, t, s,
	    rec_get_u32(k + a + b + 2), rec_get_u64(k + a + b + 6));
	return a + b + 2 + 12;
}

/* A key in words, for error messages. */
void
rec_key_describe(int t, const void *key, size_t len, char *buf, size_t bufsz)
{
	const unsigned char *k = key;
	char a[STORE_NAME_MAX + 1], s[STORE_NAME_MAX + 1], d[128];
	size_t n, m;

	switch (t) {
	case T_META:
		key_part(k, len, d, sizeof(d));
		snprintf(buf, bufsz, "\"%s\"", d);
		return;
	case T_HOOKS:
	case T_QUARANTINE:
		if (len != 8)
			break;
		snprintf(buf, bufsz, "seq %" PRIu64, rec_get_u64(k));
		return;
	case T_HOOKIDS: {
		char u[UUID_STRLEN + 1];

		if (len != UUID_LEN)
			break;
		uuid_format(k, u);
		snprintf(buf, bufsz, "id %s", u);
		return;
	}
	case T_BODIES: {
		/* A DB_HEAP_RID, whose layout is libdb's: its bytes. */
		size_t i, o;

		if (len == 0 || len > 16)
			break;
		o = (size_t)snprintf(buf, bufsz, "id ");
		for (i = 0; i < len && o + 3 <= bufsz; i++, o += 2)
			snprintf(buf + o, bufsz - o, "%02x", k[i]);
		return;
	}
	case T_AUDIT:
		if (len != STORE_AUDIT_KEY_LEN)
			break;
		snprintf(buf, bufsz, "at %" PRIu64 " n %u", ~rec_get_u64(k),
		    ~rec_get_u32(k + 8));
		return;
	case T_ATTEMPTS:
		if (len != STORE_ATTEMPT_KEY_LEN)
			break;
		uuid_format(k, d);
		snprintf(buf, bufsz, "hook %s sink %u round %" PRIu64 " n %u",
		    d, rec_get_u32(k + 16), rec_get_u64(k + 20),
		    rec_get_u32(k + 28));
		return;
	case T_ATTEMPTS_END:
		if (len != 8 + UUID_LEN)
			break;
		uuid_format(k + 8, d);
		snprintf(buf, bufsz, "at %" PRIu64 " hook %s", rec_get_u64(k),
		    d);
		return;
	case T_ROWS:
		if (len != STORE_ROWKEY_LEN)
			break;
		snprintf(buf, bufsz, "seq %" PRIu64 " sink %u", rec_get_u64(k),
		    rec_get_u32(k + 8));
		return;
	case T_DUE:
		n = key_part(k, len, a, sizeof(a));
		if (n + 1 + 8 + STORE_ROWKEY_LEN != len)
			break;
		snprintf(buf, bufsz, "tenant %s due %" PRIu64 " seq %" PRIu64
		    " sink %u", a, rec_get_u64(k + n + 1),
		    rec_get_u64(k + n + 9), rec_get_u32(k + n + 17));
		return;
	case T_LANES:
	case T_MARKS:
		if (key_describe_lane(k, len, buf, bufsz) != len)
			break;
		return;
	case T_MEMBERS:
		if (len < 8 || key_describe_lane(k, len - 8, d, sizeof(d)) !=
		    len - 8)
			break;
		snprintf(buf, bufsz, "%s seq %" PRIu64, d,
		    rec_get_u64(k + len - 8));
		return;
	case T_DEAD:
		if (len != STORE_DEADKEY_LEN)
			break;
		snprintf(buf, bufsz, "at %" PRIu64 " seq %" PRIu64 " sink %u",
		    rec_get_u64(k), rec_get_u64(k + 8), rec_get_u32(k + 16));
		return;
	case T_DEDUPE:
	case T_DEDUPE_EXP:
		if (t == T_DEDUPE_EXP) {
			if (len < 8)
				break;
			snprintf(buf, bufsz, "expiry %" PRIu64, rec_get_u64(k));
			return;
		}
		n = key_part(k, len, a, sizeof(a));
		if (n >= len)
			break;
		m = key_part(k + n + 1, len - n - 1, s, sizeof(s));
		if (n + 1 + m >= len)
			break;
		key_part(k + n + m + 2, len - n - m - 2, d, sizeof(d));
		snprintf(buf, bufsz, "%s/%s key \"%s\"", a, s, d);
		return;
	case T_REPLAYS:
		if (len != UUID_LEN)
			break;
		uuid_format(k, d);
		snprintf(buf, bufsz, "job %s", d);
		return;
	}
	snprintf(buf, bufsz, "(key of %zu bytes)", len);
}

/*
 * Record codecs.
 */

static void
enc_init(struct enc *e, unsigned char *buf, size_t cap, int grow)
{
	e->buf = buf;
	e->len = 0;
	e->cap = cap;
	e->grow = grow;
	e->bad = 0;
}

static void
enc_room(struct enc *e, size_t n)
{
	unsigned char *nb;
	size_t ncap;

	if (e->bad || n <= e->cap - e->len)
		return;
	if (!e->grow || n > SIZE_MAX / 2 - e->len) {
		e->bad = 1;
		return;
	}
	ncap = e->cap > 0 ? e->cap : 256;
	while (ncap - e->len < n)
		ncap *= 2;
	if ((nb = realloc(e->buf, ncap)) == NULL) {
		e->bad = 1;
		return;
	}
	e->buf = nb;
	e->cap = ncap;
}

static void
enc_bytes(struct enc *e, const void *p, size_t n)
{
	enc_room(e, n);
	if (e->bad)
		return;
	if (n > 0)
		memcpy(e->buf + e->len, p, n);
	e->len += n;
}

static void
enc_u8(struct enc *e, uint8_t v)
{
	enc_bytes(e, &v, 1);
}

static void
enc_u32(struct enc *e, uint32_t v)
{
	unsigned char b[4];

	rec_put_u32(b, v);
	enc_bytes(e, b, 4);
}

static void
enc_u64(struct enc *e, uint64_t v)
{
	unsigned char b[8];

	rec_put_u64(b, v);
	enc_bytes(e, b, 8);
}

/* u32 length, bytes, NUL; NULL is "".  max 0: no limit. */
static void
enc_str(struct enc *e, const char *s, size_t max)
{
	size_t n;

	if (s == NULL)
		s = "";
	n = strlen(s);
	if ((max != 0 && n > max) || n > UINT32_MAX - 1) {
		e->bad = 1;
		return;
	}
	enc_u32(e, n);
	enc_bytes(e, s, n + 1);
}

static void
dec_init(struct dec *d, const void *p, size_t len)
{
	d->p = p;
	d->len = len;
	d->off = 0;
	d->bad = 0;
}

static const unsigned char *
dec_bytes(struct dec *d, size_t n)
{
	const unsigned char *p;

	if (d->bad || n > d->len - d->off) {
		d->bad = 1;
		return NULL;
	}
	p = d->p + d->off;
	d->off += n;
	return p;
}

static uint8_t
dec_u8(struct dec *d)
{
	const unsigned char *p = dec_bytes(d, 1);

	return p != NULL ? p[0] : 0;
}

static uint32_t
dec_u32(struct dec *d)
{
	const unsigned char *p = dec_bytes(d, 4);

	return p != NULL ? rec_get_u32(p) : 0;
}

static uint64_t
dec_u64(struct dec *d)
{
	const unsigned char *p = dec_bytes(d, 8);

	return p != NULL ? rec_get_u64(p) : 0;
}

/* A string in place: its NUL must be there and be the only one. */
static const char *
dec_str(struct dec *d)
{
	const unsigned char *p;
	uint32_t n;

	n = dec_u32(d);
	if (d->bad || n == UINT32_MAX || (p = dec_bytes(d, n + 1)) == NULL)
		goto bad;
	if (p[n] != '\0' || memchr(p, '\0', n) != NULL)
		goto bad;
	return (const char *)p;
 bad:
	d->bad = 1;
	return "";
}

static void
dec_strcpy(struct dec *d, char *dst, size_t dstsz)
{
	const char *s = dec_str(d);

	if (strlen(s) >= dstsz)
		d->bad = 1;
	else
		memcpy(dst, s, strlen(s) + 1);
}

/* The version byte: 0, or -1 naming the record. */
int
rec_version(int t, const void *key, size_t klen, const void *val,
    size_t vlen, char *err, size_t errlen)
{
	const unsigned char *v = val;
	char desc[256];

	if (vlen >= 1 && v[0] == STORE_REC_VERSION)
		return 0;
	rec_key_describe(t, key, klen, desc, sizeof(desc));
	if (vlen == 0)
		snprintf(err, errlen, "%s record %s is empty (no format "
		    "version)", store_tables[t], desc);
	else
		snprintf(err, errlen, "%s record %s has format version %u, "
		    "this build reads %u", store_tables[t], desc, v[0],
		    STORE_REC_VERSION);
	return -1;
}

int
rec_malformed(int t, const void *key, size_t klen, const char *why,
    char *err, size_t errlen)
{
	char desc[256];

	rec_key_describe(t, key, klen, desc, sizeof(desc));
	snprintf(err, errlen, "%s record %s is damaged: %s", store_tables[t],
	    desc, why);
	return -1;
}

/* reason: NULL for a hooks record, the failure for a quarantine one; at:
 * where the body is, NULL (or STORE_BODY_RECORD) for h->body in the
 * record. */
void *
rec_hook_encode(const struct store_hook *h, uint32_t rows,
    const char *claim_ref, const char *reason, const struct store_body_at *at,
    size_t *lenp)
{
	struct enc e;
	size_t headpos;
	int i, claimed, in;

	in = at != NULL ? at->in : STORE_BODY_RECORD;
	/* Checked in and dropped: a claim reference and no body to keep.
	 * A hook that has a reference and its body keeps both (the body
	 * still serves the sinks that send it whole). */
	claimed = claim_ref != NULL && claim_ref[0] != '\0' &&
	    h->body == NULL && in == STORE_BODY_RECORD;
	enc_init(&e, NULL, 0, 1);
	enc_room(&e, 512 + (claimed || in != STORE_BODY_RECORD ? 0 :
	    h->body_len));
	enc_u8(&e, STORE_REC_VERSION);
	headpos = e.len;
	enc_u32(&e, 0);		/* head length, below */
	enc_u8(&e, (h->flagged ? HOOK_FLAG_FLAGGED : 0) |
	    (claimed ? HOOK_FLAG_CLAIMED : 0) |
	    (in == STORE_BODY_HEAP ? HOOK_FLAG_HEAP : 0) |
	    (in == STORE_BODY_LOG || in == STORE_BODY_LOST ?
	    HOOK_FLAG_LOGGED : 0) |
	    (in == STORE_BODY_LOST ? HOOK_FLAG_LOST : 0) |
	    (h->id_seq && reason == NULL ? HOOK_FLAG_IDSEQ : 0));
	enc_bytes(&e, h->id, UUID_LEN);
	enc_u64(&e, h->received_at);
	enc_u32(&e, rows);
	enc_bytes(&e, h->sha256, sizeof(h->sha256));
	enc_u64(&e, h->body_len);
	enc_str(&e, h->tenant, STORE_NAME_MAX);
	enc_str(&e, h->source, STORE_NAME_MAX);
	enc_str(&e, h->method, 0);
	enc_str(&e, h->path, 0);
	enc_str(&e, h->content_type, 0);
	enc_str(&e, h->dedupe_key, 0);
	enc_str(&e, claim_ref, 0);
	if (h->nheaders < 0)
		e.bad = 1;
	enc_u32(&e, h->nheaders);
	for (i = 0; i < h->nheaders && !e.bad; i++) {
		enc_str(&e, h->headers[i].name, 0);
		enc_str(&e, h->headers[i].value, 0);
	}
	if (reason != NULL)
		enc_str(&e, reason, STORE_QREASON_MAX);
	/* Added at the head's end (see the top of this file). */
	enc_u8(&e, h->verification);
	enc_bytes(&e, h->trace, TRACE_CTX_LEN);
	enc_str(&e, h->tracestate, TRACE_STATE_MAX);
	enc_str(&e, h->event_type != NULL ? h->event_type : "",
	    STORE_EVTYPE_MAX);
	if (!e.bad) {
		if (e.len - headpos - 4 > UINT32_MAX)
			e.bad = 1;
		else
			rec_put_u32(e.buf + headpos, e.len - headpos - 4);
	}
	switch (in) {
	case STORE_BODY_HEAP:
		enc_u32(&e, at->page);
		enc_room(&e, 2);
		if (!e.bad) {
			e.buf[e.len++] = at->indx >> 8;
			e.buf[e.len++] = at->indx & 0xff;
		}
		break;
	case STORE_BODY_LOG:
	case STORE_BODY_LOST:
		enc_u32(&e, at->file);
		enc_u32(&e, at->off);
		break;
	default:
		if (!claimed)
			enc_bytes(&e, h->body, h->body_len);
	}
	if (e.bad || (in != STORE_BODY_RECORD && reason != NULL)) {
		free(e.buf);
		return NULL;
	}
	*lenp = e.len;
	return e.buf;
}

/* head_only: val may end after the head (a listing's partial read). */
/* Where a hooks record's body (or its position) starts: after the
 * version byte, the head's length and the head; head holds at least the
 * first five bytes. */
size_t
rec_hook_body_off(const unsigned char *head)
{
	return 5 + (size_t)rec_get_u32(head + 1);
}

/* A body's record id in bodies, as the record's last HOOK_RID_LEN bytes
 * hold it: u32 page, u16 index, big-endian. */
void
rec_hook_rid_get(const unsigned char *p, uint32_t *page, uint16_t *indx)
{
	*page = rec_get_u32(p);
	*indx = (uint16_t)(p[4] << 8 | p[5]);
}

/* The fields added at a head's end: read when the head holds them, else
 * their defaults (see the top of this file); d.bad when they are bad. */
static void
rec_hook_added(struct dec *d, size_t headend, int t, struct store_hook_rec *out)
{
	struct store_hook *h = &out->hook;
	const unsigned char *p;

	if (d->bad)
		return;
	if (d->off == headend) {
		h->verification = h->flagged ? VERIFICATION_FLAGGED :
		    t == T_QUARANTINE ? VERIFICATION_FAILED :
		    VERIFICATION_SKIPPED;
		memcpy(h->trace, h->id, TRACE_ID_LEN);
		memcpy(h->trace + TRACE_ID_LEN, h->id + UUID_LEN -
		    TRACE_SPAN_LEN, TRACE_SPAN_LEN);
		h->trace[TRACE_CTX_LEN - 1] = TRACE_FLAGS_MADE;
		h->tracestate = "";
		h->event_type = "";
		return;
	}
	h->verification = dec_u8(d);
	if ((p = dec_bytes(d, TRACE_CTX_LEN)) != NULL)
		memcpy(h->trace, p, TRACE_CTX_LEN);
	h->tracestate = dec_str(d);
	if (!d->bad && (h->verification >= VERIFICATION_MAX ||
	    strlen(h->tracestate) > TRACE_STATE_MAX))
		d->bad = 1;
	h->event_type = "";
	if (!d->bad && d->off < headend) {
		h->event_type = dec_str(d);
		if (!d->bad && strlen(h->event_type) > STORE_EVTYPE_MAX)
			d->bad = 1;
	}
}

int
rec_hook_decode(int t, const void *key, size_t klen, const void *val,
    size_t vlen, int head_only, struct store_hook_rec *out, char *err,
    size_t errlen)
{
	struct store_hook *h = &out->hook;
	struct dec d;
	const unsigned char *p;
	uint32_t headlen, nh, i;
	uint8_t flags;
	size_t headend;

	memset(out, 0, sizeof(*out));
	if (rec_version(t, key, klen, val, vlen, err, errlen) == -1)
		return -1;
	dec_init(&d, val, vlen);
	dec_u8(&d);
	headlen = dec_u32(&d);
	if (d.bad || headlen > vlen - d.off)
		return rec_malformed(t, key, klen, "truncated head", err,
		    errlen);
	headend = d.off + headlen;
	d.len = headend;	/* the head may not run into the body */
	flags = dec_u8(&d);
	if ((p = dec_bytes(&d, UUID_LEN)) != NULL)
		memcpy(h->id, p, UUID_LEN);
	h->received_at = dec_u64(&d);
	out->rows = dec_u32(&d);
	if ((p = dec_bytes(&d, sizeof(h->sha256))) != NULL)
		memcpy(h->sha256, p, sizeof(h->sha256));
	out->body_size = dec_u64(&d);
	h->tenant = dec_str(&d);
	h->source = dec_str(&d);
	h->method = dec_str(&d);
	h->path = dec_str(&d);
	h->content_type = dec_str(&d);
	h->dedupe_key = dec_str(&d);
	out->claim_ref = dec_str(&d);
	nh = dec_u32(&d);
	/* At most one place for the body (in the record, checked in, in
	 * bodies, in the log), and only a hook's may be elsewhere. */
	if (d.bad || (flags & ~(HOOK_FLAG_FLAGGED | HOOK_FLAG_CLAIMED |
	    HOOK_FLAG_LOGGED | HOOK_FLAG_HEAP | HOOK_FLAG_LOST |
	    HOOK_FLAG_DELIVERED | HOOK_FLAG_KEPT | HOOK_FLAG_IDSEQ)) != 0 ||
	    ((flags & (HOOK_FLAG_DELIVERED | HOOK_FLAG_KEPT |
	    HOOK_FLAG_IDSEQ)) && t != T_HOOKS) ||
	    ((flags & (HOOK_FLAG_LOGGED | HOOK_FLAG_HEAP)) && (t != T_HOOKS ||
	    (flags & HOOK_FLAG_CLAIMED))) ||
	    ((flags & HOOK_FLAG_LOGGED) && (flags & HOOK_FLAG_HEAP)) ||
	    ((flags & HOOK_FLAG_LOST) && !(flags & HOOK_FLAG_LOGGED)) ||
	    nh > (headend - d.off) / 10 ||
	    strlen(h->tenant) > STORE_NAME_MAX ||
	    strlen(h->source) > STORE_NAME_MAX)
		return rec_malformed(t, key, klen, "bad head", err, errlen);
	if (h->dedupe_key[0] == '\0')
		h->dedupe_key = NULL;
	h->flagged = (flags & HOOK_FLAG_FLAGGED) != 0;
	h->id_seq = (flags & HOOK_FLAG_IDSEQ) != 0;
	out->kept = (flags & HOOK_FLAG_KEPT) != 0;
	out->aflags = flags & (HOOK_FLAG_DELIVERED | HOOK_FLAG_KEPT);
	if (nh > 0 && (out->hdrs = calloc(nh, sizeof(*out->hdrs))) == NULL) {
		snprintf(err, errlen, "store: out of memory");
		return -1;
	}
	for (i = 0; i < nh; i++) {
		out->hdrs[i].name = dec_str(&d);
		out->hdrs[i].value = dec_str(&d);
	}
	h->headers = out->hdrs;
	h->nheaders = nh;
	if (t == T_QUARANTINE)
		out->reason = dec_str(&d);
	rec_hook_added(&d, headend, t, out);
	if (d.bad || d.off != headend) {
		store_hook_rec_free(out);
		return rec_malformed(t, key, klen, "bad headers", err, errlen);
	}
	if (head_only)
		return 0;

	/* The body is the rest of the record: none when checked in, its
	 * record id in bodies or an older build's log position
	 * (store_rec_get reads it). */
	d.len = vlen;
	p = (const unsigned char *)val + d.off;
	if (flags & (HOOK_FLAG_LOGGED | HOOK_FLAG_HEAP)) {
		if (vlen - d.off != (flags & HOOK_FLAG_HEAP ? HOOK_RID_LEN :
		    8)) {
			store_hook_rec_free(out);
			return rec_malformed(t, key, klen, "bad body position",
			    err, errlen);
		}
		if (flags & HOOK_FLAG_HEAP) {
			out->at.in = STORE_BODY_HEAP;
			rec_hook_rid_get(p, &out->at.page, &out->at.indx);
		} else {
			out->at.in = flags & HOOK_FLAG_LOST ? STORE_BODY_LOST :
			    STORE_BODY_LOG;
			out->at.file = rec_get_u32(p);
			out->at.off = rec_get_u32(p + 4);
		}
		h->body = NULL;
		h->body_len = out->body_size;
		return 0;
	}
	if (flags & HOOK_FLAG_CLAIMED) {
		h->body = NULL;
		h->body_len = 0;
		if (d.off != vlen) {
			store_hook_rec_free(out);
			return rec_malformed(t, key, klen, "trailing bytes",
			    err, errlen);
		}
		return 0;
	}
	if (out->body_size != vlen - d.off) {
		store_hook_rec_free(out);
		return rec_malformed(t, key, klen, "body length", err, errlen);
	}
	h->body = (const unsigned char *)val + d.off;
	h->body_len = out->body_size;
	return 0;
}

size_t
store_rec_row_encode(const struct store_row *r, unsigned char *buf,
    size_t bufsz)
{
	struct enc e;

	enc_init(&e, buf, bufsz, 0);
	enc_u8(&e, STORE_REC_VERSION);
	enc_u8(&e, r->state);
	enc_u8(&e, r->module);
	enc_u32(&e, r->sink_index);
	enc_u32(&e, r->attempts);
	enc_u64(&e, r->first_attempt);
	enc_u64(&e, r->due);
	enc_u64(&e, r->lane_hash);
	enc_u64(&e, r->body_size);
	enc_bytes(&e, r->replay_id, UUID_LEN);
	enc_str(&e, r->tenant, STORE_NAME_MAX);
	enc_str(&e, r->source, STORE_NAME_MAX);
	enc_str(&e, r->last_error, STORE_ERROR_MAX);
	return e.bad ? 0 : e.len;
}

int
store_rec_row_decode(const void *key, size_t klen, const void *val,
    size_t vlen, struct store_row *r, char *err, size_t errlen)
{
	struct dec d;
	const unsigned char *p;

	memset(r, 0, sizeof(*r));
	if (rec_version(T_ROWS, key, klen, val, vlen, err, errlen) == -1)
		return -1;
	dec_init(&d, val, vlen);
	dec_u8(&d);
	r->state = dec_u8(&d);
	r->module = dec_u8(&d);
	r->sink_index = dec_u32(&d);
	r->attempts = dec_u32(&d);
	r->first_attempt = dec_u64(&d);
	r->due = dec_u64(&d);
	r->lane_hash = dec_u64(&d);
	r->body_size = dec_u64(&d);
	if ((p = dec_bytes(&d, UUID_LEN)) != NULL)
		memcpy(r->replay_id, p, UUID_LEN);
	dec_strcpy(&d, r->tenant, sizeof(r->tenant));
	dec_strcpy(&d, r->source, sizeof(r->source));
	dec_strcpy(&d, r->last_error, sizeof(r->last_error));
	if (d.bad || d.off != d.len)
		return rec_malformed(T_ROWS, key, klen, "bad length", err,
		    errlen);
	if (r->state < STORE_ROW_DUE || r->state > STORE_ROW_DEAD)
		return rec_malformed(T_ROWS, key, klen, "unknown state", err,
		    errlen);
	return 0;
}

size_t
store_rec_dead_encode(const struct store_dead *dl, unsigned char *buf,
    size_t bufsz)
{
	struct enc e;

	enc_init(&e, buf, bufsz, 0);
	enc_u8(&e, STORE_REC_VERSION);
	enc_u32(&e, dl->attempts);
	enc_str(&e, dl->reason, STORE_ERROR_MAX);
	enc_str(&e, dl->last_error, STORE_ERROR_MAX);
	return e.bad ? 0 : e.len;
}

int
store_rec_dead_decode(const void *key, size_t klen, const void *val,
    size_t vlen, struct store_dead *dl, char *err, size_t errlen)
{
	struct dec d;

	memset(dl, 0, sizeof(*dl));
	if (rec_version(T_DEAD, key, klen, val, vlen, err, errlen) == -1)
		return -1;
	dec_init(&d, val, vlen);
	dec_u8(&d);
	dl->attempts = dec_u32(&d);
	dec_strcpy(&d, dl->reason, sizeof(dl->reason));
	dec_strcpy(&d, dl->last_error, sizeof(dl->last_error));
	if (d.bad || d.off != d.len)
		return rec_malformed(T_DEAD, key, klen, "bad length", err,
		    errlen);
	return 0;
}

size_t
store_rec_dedupe_encode(const struct store_dedupe *dd, unsigned char *buf,
    size_t bufsz)
{
	struct enc e;

	enc_init(&e, buf, bufsz, 0);
	enc_u8(&e, STORE_REC_VERSION);
	enc_bytes(&e, dd->hook_id, UUID_LEN);
	enc_u64(&e, dd->expires);
	return e.bad ? 0 : e.len;
}

int
store_rec_dedupe_decode(const void *key, size_t klen, const void *val,
    size_t vlen, struct store_dedupe *dd, char *err, size_t errlen)
{
	struct dec d;
	const unsigned char *p;

	memset(dd, 0, sizeof(*dd));
	if (rec_version(T_DEDUPE, key, klen, val, vlen, err, errlen) == -1)
		return -1;
	dec_init(&d, val, vlen);
	dec_u8(&d);
	if ((p = dec_bytes(&d, UUID_LEN)) != NULL)
		memcpy(dd->hook_id, p, UUID_LEN);
	dd->expires = dec_u64(&d);
	if (d.bad || d.off != d.len)
		return rec_malformed(T_DEDUPE, key, klen, "bad length", err,
		    errlen);
	return 0;
}

size_t
store_rec_replay_encode(const struct store_replay *rp, unsigned char *buf,
    size_t bufsz)
{
	struct enc e;

	enc_init(&e, buf, bufsz, 0);
	enc_u8(&e, STORE_REC_REPLAY_VERSION);
	enc_u8(&e, rp->state);
	enc_u8(&e, rp->kind);
	enc_u32(&e, rp->rate);
	enc_u32(&e, rp->max_lag_ms);
	enc_u64(&e, rp->since);
	enc_u64(&e, rp->until);
	enc_u64(&e, rp->created_at);
	enc_u64(&e, rp->moved);
	enc_bytes(&e, rp->cursor, STORE_DEADKEY_LEN);
	enc_str(&e, rp->source, STORE_NAME_MAX);
	enc_u64(&e, rp->dropped);
	enc_u64(&e, rp->seq_below);
	enc_str(&e, rp->reason, STORE_REPLAY_REASON_MAX);
	enc_str(&e, rp->event_type, STORE_EVTYPE_MAX);
	enc_u32(&e, rp->sink);
	return e.bad ? 0 : e.len;
}

/* Version 1 (no build wrote one, but the layout shipped) is version 2
 * without its last three fields, which read as 0 and ""; version 2 is 3
 * without its event type (""); version 3 is 4 without the sink, which
 * reads as 0 (every sink). */
int
store_rec_replay_decode(const void *key, size_t klen, const void *val,
    size_t vlen, struct store_replay *rp, char *err, size_t errlen)
{
	struct dec d;
	const unsigned char *p, *v = val;
	char desc[256];
	uint8_t version;

	memset(rp, 0, sizeof(*rp));
	if (vlen == 0 || v[0] < 1 || v[0] > STORE_REC_REPLAY_VERSION) {
		if (vlen == 0)
			return rec_version(T_REPLAYS, key, klen, val, vlen,
			    err, errlen);
		rec_key_describe(T_REPLAYS, key, klen, desc, sizeof(desc));
		snprintf(err, errlen, "%s record %s has format version %u, "
		    "this build reads 1 to %u", store_tables[T_REPLAYS], desc,
		    v[0], STORE_REC_REPLAY_VERSION);
		return -1;
	}
	dec_init(&d, val, vlen);
	version = dec_u8(&d);
	rp->state = dec_u8(&d);
	rp->kind = dec_u8(&d);
	rp->rate = dec_u32(&d);
	rp->max_lag_ms = dec_u32(&d);
	rp->since = dec_u64(&d);
	rp->until = dec_u64(&d);
	rp->created_at = dec_u64(&d);
	rp->moved = dec_u64(&d);
	if ((p = dec_bytes(&d, STORE_DEADKEY_LEN)) != NULL)
		memcpy(rp->cursor, p, STORE_DEADKEY_LEN);
	dec_strcpy(&d, rp->source, sizeof(rp->source));
	if (version >= 2) {
		rp->dropped = dec_u64(&d);
		rp->seq_below = dec_u64(&d);
		dec_strcpy(&d, rp->reason, sizeof(rp->reason));
	}
	if (version >= 3)
		dec_strcpy(&d, rp->event_type, sizeof(rp->event_type));
	if (version >= 4)
		rp->sink = dec_u32(&d);
	if (d.bad || d.off != d.len)
		return rec_malformed(T_REPLAYS, key, klen, "bad length", err,
		    errlen);
	if (rp->state < STORE_REPLAY_RUNNING || rp->state > STORE_REPLAY_DONE ||
	    rp->kind < STORE_REPLAY_DLQ || rp->kind > STORE_REPLAY_ARCHIVE)
		return rec_malformed(T_REPLAYS, key, klen, "unknown state or "
		    "kind", err, errlen);
	return 0;
}

size_t
store_rec_rowkey_encode(const unsigned char rowkey[STORE_ROWKEY_LEN],
    unsigned char *buf, size_t bufsz)
{
	if (bufsz < 1 + STORE_ROWKEY_LEN)
		return 0;
	buf[0] = STORE_REC_VERSION;
	memcpy(buf + 1, rowkey, STORE_ROWKEY_LEN);
	return 1 + STORE_ROWKEY_LEN;
}

int
store_rec_rowkey_decode(const char *table, const void *key, size_t klen,
    const void *val, size_t vlen, unsigned char rowkey[STORE_ROWKEY_LEN],
    char *err, size_t errlen)
{
	int t = store_table_index(table);

	if (t != T_LANES && t != T_MEMBERS) {
		snprintf(err, errlen, "store: %s holds no row keys", table);
		return -1;
	}
	if (rec_version(t, key, klen, val, vlen, err, errlen) == -1)
		return -1;
	if (vlen != 1 + STORE_ROWKEY_LEN)
		return rec_malformed(t, key, klen, "bad length", err, errlen);
	memcpy(rowkey, (const unsigned char *)val + 1, STORE_ROWKEY_LEN);
	return 0;
}

size_t
store_rec_empty_encode(unsigned char *buf, size_t bufsz)
{
	if (bufsz < 1)
		return 0;
	buf[0] = STORE_REC_VERSION;
	return 1;
}

int
store_rec_empty_decode(const char *table, const void *key, size_t klen,
    const void *val, size_t vlen, char *err, size_t errlen)
{
	int t = store_table_index(table);

	if (t != T_DUE && t != T_MARKS && t != T_DEDUPE_EXP) {
		snprintf(err, errlen, "store: %s has non-empty values", table);
		return -1;
	}
	if (rec_version(t, key, klen, val, vlen, err, errlen) == -1)
		return -1;
	if (vlen != 1)
		return rec_malformed(t, key, klen, "bad length", err, errlen);
	return 0;
}

size_t
store_rec_audit_encode(const struct store_audit *a, unsigned char *buf,
    size_t bufsz)
{
	struct enc e;

	enc_init(&e, buf, bufsz, 0);
	enc_u8(&e, STORE_REC_VERSION);
	enc_u64(&e, a->at);
	enc_str(&e, a->actor, STORE_AUDIT_ACTOR_MAX);
	enc_str(&e, a->action, STORE_AUDIT_ACTION_MAX);
	enc_str(&e, a->target, STORE_AUDIT_TARGET_MAX);
	enc_str(&e, a->tenant, STORE_NAME_MAX);
	enc_str(&e, a->outcome, STORE_AUDIT_OUTCOME_MAX);
	return e.bad ? 0 : e.len;
}

int
store_rec_audit_decode(const void *key, size_t klen, const void *val,
    size_t vlen, struct store_audit *a, char *err, size_t errlen)
{
	struct dec d;

	memset(a, 0, sizeof(*a));
	if (rec_version(T_AUDIT, key, klen, val, vlen, err, errlen) == -1)
		return -1;
	dec_init(&d, val, vlen);
	dec_u8(&d);
	a->at = dec_u64(&d);
	dec_strcpy(&d, a->actor, sizeof(a->actor));
	dec_strcpy(&d, a->action, sizeof(a->action));
	dec_strcpy(&d, a->target, sizeof(a->target));
	dec_strcpy(&d, a->tenant, sizeof(a->tenant));
	dec_strcpy(&d, a->outcome, sizeof(a->outcome));
	if (d.bad || d.off != d.len)
		return rec_malformed(T_AUDIT, key, klen, "bad length", err,
		    errlen);
	return 0;
}

size_t
store_rec_attempt_encode(const struct store_attempt *a, unsigned char *buf,
    size_t bufsz)
{
	struct enc e;

	enc_init(&e, buf, bufsz, 0);
	enc_u8(&e, STORE_REC_VERSION);
	enc_u8(&e, a->module);
	enc_u8(&e, a->outcome);
	enc_u32(&e, a->status);
	enc_u64(&e, a->started_at);
	enc_u64(&e, a->duration_ms);
	enc_str(&e, a->error, STORE_ERROR_MAX);
	enc_str(&e, a->response, STORE_ATTEMPT_RESPONSE_MAX);
	return e.bad ? 0 : e.len;
}

int
store_rec_attempt_decode(const void *key, size_t klen, const void *val,
    size_t vlen, struct store_attempt *a, char *err, size_t errlen)
{
	const unsigned char *k = key;
	struct dec d;

	memset(a, 0, sizeof(*a));
	a->error = a->response = "";
	if (klen != STORE_ATTEMPT_KEY_LEN)
		return rec_malformed(T_ATTEMPTS, key, klen, "bad key length",
		    err, errlen);
	if (rec_version(T_ATTEMPTS, key, klen, val, vlen, err, errlen) == -1)
		return -1;
	memcpy(a->id, k, UUID_LEN);
	a->sink_index = rec_get_u32(k + 16);
	a->round = rec_get_u64(k + 20);
	a->n = rec_get_u32(k + 28);
	dec_init(&d, val, vlen);
	dec_u8(&d);
	a->module = dec_u8(&d);
	a->outcome = dec_u8(&d);
	a->status = dec_u32(&d);
	a->started_at = dec_u64(&d);
	a->duration_ms = dec_u64(&d);
	a->error = dec_str(&d);
	a->response = dec_str(&d);
	if (d.bad || d.off != d.len || a->outcome >= STORE_ATTEMPT_OUTCOMES)
		return rec_malformed(T_ATTEMPTS, key, klen, "bad length",
		    err, errlen);
	return 0;
}
