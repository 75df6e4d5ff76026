/* SPDX-License-Identifier: ISC */
/*
 * pause.c: the paused sink keys; see pause.h.  A sorted array: pauses are
 * few (an operator's), and pause_is, asked for every claimed row, is a
 * test of the count when there are none.
 *
 * Fatal: out of memory.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pause.h"

struct pause_key {
	char		 source[65];
	uint32_t	 sink;
	uint64_t	 since;
	char		 reason[PAUSE_REASON_MAX + 1];	/* "": an
							 * operator's */
};

static struct pause_key	*keys;
static size_t		 nkeys, capkeys;

static int	 key_cmp(const char *, uint32_t, const struct pause_key *);
static size_t	 key_find(const char *, uint32_t, int *);

static int
key_cmp(const char *source, uint32_t sink, const struct pause_key *k)
{
	int c = strcmp(source, k->source);

	if (c != 0)
		return c;
	return sink < k->sink ? -1 : sink > k->sink;
}

/* Where (source, sink) is or would go; *found whether it is there. */
static size_t
key_find(const char *source, uint32_t sink, int *found)
{
	size_t lo = 0, hi = nkeys, mid;
	int c;

	*found = 0;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if ((c = key_cmp(source, sink, &keys[mid])) == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

int
pause_is(const char *source, uint32_t sink)
{
	int found;

	if (nkeys == 0)
		return 0;
	(void)key_find(source, sink, &found);
	return found;
}

const char *
pause_reason(const char *source, uint32_t sink)
{
	size_t i;
	int found;

	if (nkeys == 0)
		return NULL;
	i = key_find(source, sink, &found);
	return found ? keys[i].reason : NULL;
}

int
pause_add(const char *source, uint32_t sink, uint64_t since_ms,
    const char *reason)
{
	size_t i;
	int found;

	if (strlen(source) >= sizeof(keys[0].source))
		return -1;
	i = key_find(source, sink, &found);
	if (found)
		return 0;
	if (nkeys >= PAUSE_MAX)
		return -1;
	if (nkeys == capkeys) {
		capkeys = capkeys ? capkeys * 2 : 16;
		if ((keys = reallocarray(keys, capkeys, sizeof(*keys))) ==
		    NULL)
			fatal("pause");
	}
	memmove(&keys[i + 1], &keys[i], (nkeys - i) * sizeof(*keys));
	snprintf(keys[i].source, sizeof(keys[i].source), "%s", source);
	keys[i].sink = sink;
	keys[i].since = since_ms;
	snprintf(keys[i].reason, sizeof(keys[i].reason), "%s",
	    reason != NULL ? reason : "");
	nkeys++;
	return 1;
}

int
pause_del(const char *source, uint32_t sink)
{
	size_t i;
	int found;

	i = key_find(source, sink, &found);
	if (!found)
		return 0;
	memmove(&keys[i], &keys[i + 1], (nkeys - i - 1) * sizeof(*keys));
	nkeys--;
	return 1;
}

int
pause_count(void)
{
	return (int)nkeys;
}

void
pause_each(int (*cb)(const char *, uint32_t, uint64_t, void *), void *arg)
{
	size_t i;

	for (i = 0; i < nkeys; i++)
		if (cb(keys[i].source, keys[i].sink, keys[i].since, arg) != 0)
			break;
}

void
pause_clear(void)
{
	free(keys);
	keys = NULL;
	nkeys = capkeys = 0;
}
