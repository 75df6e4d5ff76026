/* SPDX-License-Identifier: ISC */
/*
 * store_plant.c: plant in a stopped daemon's store what no build of ours
 * writes now.
 *
 *   store_plant DATA_DIR
 *	text that is not UTF-8, as builds before the cleaning of outside
 *	text (common/utf8.h) could store it: every due row is dead-lettered
 *	with such a reason and last error (test_hostile's listing test).
 *   store_plant -o DATA_DIR SOURCE
 *	orphans: the hook of every due row of SOURCE is deleted and its rows
 *	are left, as a damaged store may have them (the orphans' counts in
 *	test_metrics).
 *   store_plant -c DATA_DIR SEQ REF
 *	a stored claim reference: the hook of sequence number SEQ gets
 *	REF, as a build before references were signed stored its v1 ones
 *	(test_queue_daemon's upgrade test).
 *
 * Prints the number of rows dead-lettered, or of hooks deleted or
 * changed.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_int.h"

#define PLANT_MAX	1024

struct plant {
	char		tenants[16][STORE_NAME_MAX + 1];
	int		ntenants;
	const char	*source;	/* -o: its rows only */
	unsigned char	keys[PLANT_MAX][STORE_ROWKEY_LEN];
	uint32_t	attempts[PLANT_MAX];
	int		nkeys;
};

static int	orphan_hooks(struct store *, struct store_batch *,
		    const struct plant *);
static int	claim_hook(struct store *, const char *, const char *);

static int
plant_tenant(const char *tenant, uint64_t earliest, void *arg)
{
	struct plant *p = arg;

	if (p->ntenants == 16)
		return 1;
	snprintf(p->tenants[p->ntenants++], STORE_NAME_MAX + 1, "%s", tenant);
	return 0;
}

static int
plant_row(const unsigned char *duekey, size_t klen, uint64_t due,
    const unsigned char rk[STORE_ROWKEY_LEN], const struct store_row *row,
    void *arg)
{
	struct plant *p = arg;

	if (row == NULL ||
	    (p->source != NULL && strcmp(row->source, p->source) != 0))
		return 0;
	if (p->nkeys == PLANT_MAX)
		return 1;
	memcpy(p->keys[p->nkeys], rk, STORE_ROWKEY_LEN);
	p->attempts[p->nkeys++] = row->attempts;
	return 0;
}

/* The hooks of the rows in p go, their rows stay: how many hooks. */
static int
orphan_hooks(struct store *st, struct store_batch *b, const struct plant *p)
{
	unsigned char hk[8];
	uint64_t seq, last = 0;
	int i, n = 0;

	for (i = 0; i < p->nkeys; i++) {
		if ((seq = store_rowkey_seq(p->keys[i])) == last)
			continue;
		last = seq;
		store_key_hook(hk, seq);
		if (store_tdel(st, b->txn, T_HOOKS, hk, sizeof(hk)) == -1)
			return -1;
		n++;
	}
	return n;
}

/* The hook of sequence number seq gets the claim reference ref: 1, or 0
 * when there is no such hook, or -1. */
static int
claim_hook(struct store *st, const char *seq, const char *ref)
{
	struct store_batch *b;
	int n;

	if ((b = store_batch_begin(st)) == NULL)
		return -1;
	if ((n = store_batch_hook_set_claim(b, strtoull(seq, NULL, 10),
	    ref)) == -1) {
		store_batch_abort(b);
		return -1;
	}
	return store_batch_commit(b) == -1 ? -1 : n;
}

int
main(int argc, char *argv[])
{
	/* A cut 'é', a lone continuation, 0xff, and a cut '€'. */
	static const char bad[] = "sqs InvalidParameterValue: \xc3\xa9\xc3";
	static const char badr[] = "permanent:\x80\xff\xe2\x82";
	struct plant *p;
	struct store *st;
	struct store_batch *b;
	const char *dir;
	char err[512];
	int i, n;

	if ((argc == 4 && strcmp(argv[1], "-o") == 0) ||
	    (argc == 5 && strcmp(argv[1], "-c") == 0))
		dir = argv[2];
	else if (argc == 2)
		dir = argv[1];
	else {
		fprintf(stderr, "usage: store_plant [-o] DATA_DIR [SOURCE]\n"
		    "       store_plant -c DATA_DIR SEQ REF\n");
		return 2;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL ||
	    (st = store_open(dir, err, sizeof(err))) == NULL) {
		fprintf(stderr, "store_plant: %s\n", p == NULL ? "calloc" : err);
		return 1;
	}
	if (argc == 5) {
		if ((n = claim_hook(st, argv[3], argv[4])) == -1)
			goto fail;
		store_close(st);
		printf("%d\n", n);
		free(p);
		return 0;
	}
	if (argc == 4)
		p->source = argv[3];
	if (store_due_tenants(st, plant_tenant, p) == -1)
		goto fail;
	for (i = 0; i < p->ntenants; i++)
		if (store_due_scan_from(st, p->tenants[i], UINT64_MAX, 0, NULL,
		    NULL, plant_row, p) == -1)
			goto fail;
	if ((b = store_batch_begin(st)) == NULL)
		goto fail;
	if (p->source != NULL) {
		if ((n = orphan_hooks(st, b, p)) == -1 ||
		    store_batch_commit(b) == -1) {
			if (n == -1)
				store_batch_abort(b);
			goto fail;
		}
		store_close(st);
		printf("%d\n", n);
		free(p);
		return 0;
	}
	for (i = 0; i < p->nkeys; i++)
		if (store_batch_row_dead(b, p->keys[i], 1, badr, bad,
		    p->attempts[i]) == -1) {
			store_batch_abort(b);
			goto fail;
		}
	if (store_batch_commit(b) == -1)
		goto fail;
	store_close(st);
	printf("%d\n", p->nkeys);
	free(p);
	return 0;
 fail:
	fprintf(stderr, "store_plant: %s\n", store_strerror(st));
	store_close(st);
	free(p);
	return 1;
}
