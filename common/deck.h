/* SPDX-License-Identifier: ISC */
/*
 * deck.h: a deliver process's next job, and who decides that it runs.
 *
 * While a deliver process runs an attempt, the master may write it the
 * next attempt of the same sink key (MSG_DELIVER_NEXT, "on deck"), which
 * the process starts as soon as its attempt ends instead of sleeping until
 * the master's next turn.  Whether that job runs is decided by one word of
 * a page the two share (a memfd the master passes on PROC_FD_DECK, sealed
 * at its size so that the process can neither shrink it under the
 * master's mapping nor grow it): the master offers the job's id; then
 * either the process takes it (a compare-and-swap to id | DECK_STARTED,
 * its start time written first) or the master takes it back (a
 * compare-and-swap to 0).  Exactly one of them wins, and the master knows
 * which at once: a job on deck is attempted once, or given back with
 * nothing sent.  docs/DEPARTURES 17.
 */
#ifndef ANKUSA_DECK_H
#define ANKUSA_DECK_H

#include <stdatomic.h>
#include <stdint.h>

#define DECK_STARTED	(1ULL << 63)	/* job ids stay below */

struct deck {
	_Atomic uint64_t	word;		/* 0, an offered id, or an
						 * id | DECK_STARTED */
	_Atomic uint64_t	started_ms;	/* mono ms of the last take */
};

/* Master: a new shared page, mapped at *deckp; its descriptor for the
 * child (close it after the spawn), or -1 with errno. */
int	deck_create(struct deck **deckp);
/* Child: map the page passed on fd (and close fd); NULL with errno. */
struct deck *deck_map(int fd);
void	deck_unmap(struct deck *);
/* Master: offer job; the word holds no offer (0 or a started job). */
void	deck_offer(struct deck *, uint64_t job);
/* Master: take job back.  1: taken back, it will not run; 0: it has
 * started, at *started_ms (mono ms). */
int	deck_cancel(struct deck *, uint64_t job, uint64_t *started_ms);
/* Child: start job if it is still offered, at now_ms (mono).  1: run it;
 * 0: the master took it back. */
int	deck_take(struct deck *, uint64_t job, uint64_t now_ms);
/* Child: whether job is still offered (neither taken nor taken back). */
int	deck_offered(struct deck *, uint64_t job);

#endif
