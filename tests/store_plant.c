/* SPDX-License-Identifier: ISC */
/*
 * store_plant.c: plant text that is not UTF-8 in a stopped daemon's store,
 * as builds before the cleaning of outside text (common/utf8.h) could
 * store it: every due row is dead-lettered with such a reason and last
 * error.  For test_hostile's listing test.
 *
 * usage: store_plant DATA_DIR   (prints the number of rows planted)
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
	unsigned char	keys[PLANT_MAX][STORE_ROWKEY_LEN];
	uint32_t	attempts[PLANT_MAX];
	int		nkeys;
};

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
plant_row(const unsigned char rk[STORE_ROWKEY_LEN],
    const struct store_row *row, void *arg)
{
	struct plant *p = arg;

	if (row == NULL)
		return 0;
	if (p->nkeys == PLANT_MAX)
		return 1;
	memcpy(p->keys[p->nkeys], rk, STORE_ROWKEY_LEN);
	p->attempts[p->nkeys++] = row->attempts;
	return 0;
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
	char err[512];
	int i;

	if (argc != 2) {
		fprintf(stderr, "usage: store_plant DATA_DIR\n");
		return 2;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL ||
	    (st = store_open(argv[1], err, sizeof(err))) == NULL) {
		fprintf(stderr, "store_plant: %s\n", p == NULL ? "calloc" : err);
		return 1;
	}
	if (store_due_tenants(st, plant_tenant, p) == -1)
		goto fail;
	for (i = 0; i < p->ntenants; i++)
		if (store_due_scan(st, p->tenants[i], UINT64_MAX, plant_row,
		    p) == -1)
			goto fail;
	if ((b = store_batch_begin(st)) == NULL)
		goto fail;
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
