/* SPDX-License-Identifier: ISC */
/*
 * failstreak.c: the sink keys' streaks of failures; see failstreak.h.
 * An unsorted array searched from the start: it holds only the keys that
 * failed their last attempt and have a disable_after_s, few and bounded
 * by the sinks of the config.
 *
 * Fatal: out of memory.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "failstreak.h"
#include "log.h"

struct streak {
	char		 source[65];
	uint32_t	 sink;
	uint64_t	 since;		/* wall ms of its first failure */
};

static struct streak	*streaks;
static size_t		 nstreaks, capstreaks;

static struct streak	*streak_find(const char *, uint32_t);

static struct streak *
streak_find(const char *source, uint32_t sink)
{
	size_t i;

	for (i = 0; i < nstreaks; i++)
		if (streaks[i].sink == sink &&
		    strcmp(streaks[i].source, source) == 0)
			return &streaks[i];
	return NULL;
}

int
failstreak_fail(const char *source, uint32_t sink, uint64_t now,
    uint64_t after_ms)
{
	struct streak *s;

	if (after_ms == 0 || strlen(source) >= sizeof(s->source))
		return 0;
	if ((s = streak_find(source, sink)) == NULL) {
		if (nstreaks == capstreaks) {
			capstreaks = capstreaks ? capstreaks * 2 : 16;
			if ((streaks = reallocarray(streaks, capstreaks,
			    sizeof(*streaks))) == NULL)
				fatal("failstreak");
		}
		s = &streaks[nstreaks++];
		snprintf(s->source, sizeof(s->source), "%s", source);
		s->sink = sink;
		s->since = now;
		return 0;
	}
	/* A clock stepped back: the streak counts from now. */
	if (now < s->since)
		s->since = now;
	if (now - s->since < after_ms)
		return 0;
	failstreak_ok(source, sink);
	return 1;
}

void
failstreak_ok(const char *source, uint32_t sink)
{
	struct streak *s;

	if ((s = streak_find(source, sink)) == NULL)
		return;
	*s = streaks[--nstreaks];
}

int
failstreak_count(void)
{
	return (int)nstreaks;
}

void
failstreak_clear(void)
{
	free(streaks);
	streaks = NULL;
	nstreaks = capstreaks = 0;
}
