/* SPDX-License-Identifier: ISC */
/*
 * store_rec.h: the store's keys and record codecs (store_rec.c), which
 * know nothing of Berkeley DB: the store's files and the tests that check
 * the codecs alone include it.  The keys' and records' layout and the
 * upgrade rule are in store_rec.c's header comment.
 */
#ifndef ANKUSA_STORE_REC_H
#define ANKUSA_STORE_REC_H

#include <stddef.h>
#include <stdint.h>

#include "ids.h"
#include "store.h"

#define STORE_REC_VERSION	1	/* record format this build writes */
#define STORE_REC_MAX		4096	/* any record but a hook fits */
#define STORE_REC_REPLAY_VERSION 4	/* replays: 2 adds dropped, seq
					 * bound and reason, 3 the event
					 * type, 4 the sink; 1 to 3 are
					 * read */

/* A dead letter (table dead); the row and its hook stay alive. */
struct store_dead {
	char		reason[STORE_ERROR_MAX + 1];	/* contracts' reasons */
	uint32_t	attempts;
	char		last_error[STORE_ERROR_MAX + 1];
};

/* A dedupe entry (table dedupe). */
struct store_dedupe {
	unsigned char	hook_id[UUID_LEN];	/* the original hook */
	uint64_t	expires;		/* wall ms */
};

/* Keys.  The variable ones return their length, 0 if they do not fit. */
void		 store_key_hook(unsigned char out[8], uint64_t seq);
void		 store_key_row(unsigned char out[STORE_ROWKEY_LEN],
		    uint64_t seq, uint32_t sink_index);
void		 store_key_dead(unsigned char out[STORE_DEADKEY_LEN],
		    uint64_t dead_at,
		    const unsigned char rowkey[STORE_ROWKEY_LEN]);
size_t		 store_key_due(unsigned char *, size_t, const char *tenant,
		    uint64_t due, const unsigned char rowkey[STORE_ROWKEY_LEN]);
size_t		 store_key_lane(unsigned char *, size_t, const char *tenant,
		    const char *source, uint32_t sink_index,
		    uint64_t lane_hash);
size_t		 store_key_member(unsigned char *, size_t,
		    const unsigned char *lane, size_t lanelen, uint64_t seq);
size_t		 store_key_dedupe(unsigned char *, size_t, const char *tenant,
		    const char *source, const char *key);
size_t		 store_key_dedupe_exp(unsigned char *, size_t, uint64_t expires,
		    const unsigned char *dkey, size_t dkeylen);

/*
 * Record codecs.  Encoders return the record's length, 0 if it does not fit
 * (or a field is too long).  Decoders take the record's key only to name it
 * in err: "rows record seq 42 sink 0 has format version 7, this build
 * reads 1".  They return 0, or -1 with err set.
 */
size_t		 store_rec_row_encode(const struct store_row *,
		    unsigned char *, size_t);
int		 store_rec_row_decode(const void *key, size_t klen,
		    const void *val, size_t vlen, struct store_row *,
		    char *err, size_t errlen);
size_t		 store_rec_dead_encode(const struct store_dead *,
		    unsigned char *, size_t);
int		 store_rec_dead_decode(const void *key, size_t klen,
		    const void *val, size_t vlen, struct store_dead *,
		    char *err, size_t errlen);
size_t		 store_rec_dedupe_encode(const struct store_dedupe *,
		    unsigned char *, size_t);
int		 store_rec_dedupe_decode(const void *key, size_t klen,
		    const void *val, size_t vlen, struct store_dedupe *,
		    char *err, size_t errlen);
size_t		 store_rec_replay_encode(const struct store_replay *,
		    unsigned char *, size_t);
int		 store_rec_replay_decode(const void *key, size_t klen,
		    const void *val, size_t vlen, struct store_replay *,
		    char *err, size_t errlen);
size_t		 store_rec_audit_encode(const struct store_audit *,
		    unsigned char *, size_t);
int		 store_rec_audit_decode(const void *key, size_t klen,
		    const void *val, size_t vlen, struct store_audit *,
		    char *err, size_t errlen);
/* attempts: buf of bufsz bytes (a record is at most
 * STORE_ATTEMPT_REC_MAX); the decoded strings point into val. */
#define STORE_ATTEMPT_REC_MAX	(32 + STORE_ERROR_MAX + \
				    STORE_ATTEMPT_RESPONSE_MAX + 16)
size_t		 store_rec_attempt_encode(const struct store_attempt *,
		    unsigned char *, size_t);
int		 store_rec_attempt_decode(const void *key, size_t klen,
		    const void *val, size_t vlen, struct store_attempt *,
		    char *err, size_t errlen);
void		 store_key_attempt(unsigned char out[STORE_ATTEMPT_KEY_LEN],
		    const unsigned char id[UUID_LEN], uint32_t sink,
		    uint64_t round, uint32_t n);
/* lanes (head row key) and members (row key): table is "lanes" or
 * "members". */
size_t		 store_rec_rowkey_encode(const unsigned char
		    rowkey[STORE_ROWKEY_LEN], unsigned char *, size_t);
int		 store_rec_rowkey_decode(const char *table, const void *key,
		    size_t klen, const void *val, size_t vlen,
		    unsigned char rowkey[STORE_ROWKEY_LEN], char *err,
		    size_t errlen);
/* Tables whose value is only the version byte: due, marks, dedupe_exp. */
size_t		 store_rec_empty_encode(unsigned char *, size_t);
int		 store_rec_empty_decode(const char *table, const void *key,
		    size_t klen, const void *val, size_t vlen, char *err,
		    size_t errlen);

#endif /* ANKUSA_STORE_REC_H */
