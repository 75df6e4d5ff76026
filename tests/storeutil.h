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
	uint64_t		due[16];	/* store_due_scan_keys */
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

#endif /* ANKUSA_STOREUTIL_H */
