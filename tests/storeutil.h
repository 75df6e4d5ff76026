/* SPDX-License-Identifier: ISC */
/*
 * storeutil.h: what the store's unit tests (check_store_*.c) share: the
 * per-case temp directory, fixtures, and helpers that put hooks and rows,
 * settle them, and edit a closed store's files behind its back.
 */
#ifndef ANKUSA_STOREUTIL_H
#define ANKUSA_STOREUTIL_H

#include <sys/types.h>

#include <check.h>
#include <stdint.h>

#include "store.h"

#define BIG_BODY	(1024 * 1024)

struct listed {
	struct store_hook_info	info[16];
	int			n;
	int			stop_after;	/* 0: never */
};

struct qlisted {
	struct store_quarantine_info	info[16];
	int				n;
	int				stop_after;	/* 0: never */
};

struct tenants_seen {
	char		tenant[8][STORE_NAME_MAX + 1];
	uint64_t	due[8];
	int		n;
	int		stop_after;	/* 0: never */
};

/* Rows handed to a due scan or a pending walk. */
struct scanned {
	uint64_t		seq[16];
	uint32_t		sink[16];
	int			null[16];	/* handed with no row */
	struct store_row	row[16];
	uint64_t		due[16];	/* due_scan_keys */
	unsigned char		key[16][128];
	size_t			klen[16];
	int			n;
	int			stop_after;	/* 0: never */
};

struct dead_seen {
	struct store_dead_info	info[8];
	int			n;
	int			stop_after;	/* 0: never */
};

struct tables_case {
	const char	*table;
	const char	*want;		/* expected start of the error */
};


extern char	 tmpdir[256];

void	 setup(void);
void	 teardown(void);
void	 hook_fill(struct store_hook *, const char *, const void *,
		    size_t);
uint64_t	 put_one(struct store *, const char *, const void *, size_t,
		    int);
int	 list_cb(const struct store_hook_info *, void *);
int	 qlist_cb(const struct store_quarantine_info *, void *);
void	 put_dedupe(struct store *, const char *, const char *,
		    const char *, uint64_t, unsigned char *);
uint64_t	 put_quarantined(struct store *, const char *, const void *,
		    size_t, const char *, int);
void	 meta_delete(const char *);
int	 sweep(struct store *, uint64_t, unsigned, int);
struct store *open_ok(void);
void	 meta_poke(const char *, const void *, size_t);
void	 table_poke(const char *, const void *, size_t, const void *,
		    size_t);
void	 file_scribble(const char *, off_t, size_t);
void	 table_del(const char *, const void *, size_t);
void	 table_truncate(const char *);
uint64_t	 put_hook_body(struct store *, const char *, const char *,
		    uint64_t, const void *, size_t,
		    const struct store_row_spec *, int);
uint64_t	 put_rows(struct store *, const char *, const char *,
		    uint64_t, const struct store_row_spec *, int);
void	 commit_ok(struct store *, struct store_batch *);
int	 deliver(struct store *, uint64_t, uint32_t);
int	 kill_row(struct store *, uint64_t, uint32_t, uint64_t,
		    const char *, const char *, uint32_t);
void	 kill_scanned(struct store *, const struct scanned *);
int	 lane_sweep(struct store *, const char *, unsigned);
void	 head_alone(struct store *, uint64_t);
struct store *orphan(struct store *, uint64_t, uint64_t);
int	 tenants_cb(const char *, uint64_t, void *);
int	 scan_cb(const unsigned char *, const struct store_row *,
		    void *);
int	 scan_keys_cb(const unsigned char *, size_t, uint64_t,
		    const unsigned char *, const struct store_row *, void *);
int	 pending_cb(const unsigned char *, const struct store_row *,
		    void *);
int	 dead_cb(const struct store_dead_info *, void *);
int	 marked_cb(const char *, void *);
void	 home_of(char *, size_t, const char *, const char *);
void	 child_killed(pid_t);
void	 child_ok(pid_t);
int	 deliver_known(struct store *, const unsigned char *,
		    const struct store_row *);
int	 file_exists(const char *, uint32_t);
int	 log_file_exists(uint32_t);
int	 storeutil_run(Suite *);

/*
 * The store's verbs that only the tests call.
 */
/* The tenant's due keys with due <= now_ms in key order (due time, then
 * row key), each with its row.  A due key that names no pending row (row
 * gone, damaged, DEAD or MEMBER, or due elsewhere) is handed over with row
 * NULL and logged: it never stalls the scan; drop it with
 * store_batch_due_drop (due_scan_keys gives the key).  cb returning
 * non-zero stops.  0 or -1 on a store error. */
int	 due_scan(struct store *, const char *tenant, uint64_t now_ms,
	    int (*cb)(const unsigned char rowkey[STORE_ROWKEY_LEN],
	    const struct store_row *, void *), void *);
/* As due_scan, with each due key and its due time. */
int	 due_scan_keys(struct store *, const char *tenant, uint64_t now_ms,
	    int (*cb)(const unsigned char *duekey, size_t duekeylen,
	    uint64_t due, const unsigned char rowkey[STORE_ROWKEY_LEN],
	    const struct store_row *, void *), void *);
/* 1 found, 0 no such row, -1 on a store error (a damaged record too). */
int	 row_get(struct store *, const unsigned char rowkey[STORE_ROWKEY_LEN],
	    struct store_row *);
/* The log files the checkpoint removes are renamed aside and emptied by a
 * thread of the store's, a megabyte at a time: wait until it has removed
 * every one queued; the steps it has taken so far. */
uint64_t trash_wait(struct store *);
/* A hooks record (malloc'd), as the store writes one with its body in the
 * record. */
void	*hook_encode(const struct store_hook *, uint32_t rows,
	    const char *claim_ref, size_t *lenp);
/* The same with the body elsewhere (at; NULL: in the record), as the
 * store writes it, or as a build before 2026-12-02 wrote one whose body
 * is a log record (STORE_BODY_LOG). */
void	*hook_encode_at(const struct store_hook *, uint32_t rows,
	    const char *claim_ref, const struct store_body_at *, size_t *lenp);
/* A hooks or quarantine record (table "hooks" or "quarantine") decoded:
 * 0, or -1 with err. */
int	 hook_decode(const char *table, const void *key, size_t klen,
	    const void *val, size_t vlen, struct store_hook_rec *, char *err,
	    size_t errlen);
/* A quarantine record (hook_decode with "quarantine" reads it back,
 * reason in rec.reason).  NULL if it does not fit. */
void	*quarantine_encode(const struct store_hook *, const char *reason,
	    size_t *lenp);

#endif /* ANKUSA_STOREUTIL_H */
