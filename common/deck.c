/* SPDX-License-Identifier: ISC */
/*
 * deck.c: the on-deck word shared by the master and a deliver process;
 * see deck.h.
 */
#include "config.h"

#include <sys/mman.h>

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "deck.h"

int
deck_create(struct deck **deckp)
{
	struct deck *dk;
	int fd, save;

	/* Sealed at its size: a process that truncated it would make the
	 * master's next touch of the mapping a SIGBUS. */
	if ((fd = memfd_create("ankusa-deck", MFD_CLOEXEC |
	    MFD_ALLOW_SEALING)) == -1)
		return -1;
	if (ftruncate(fd, sizeof(*dk)) == -1 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
	    F_SEAL_SEAL) == -1 ||
	    (dk = mmap(NULL, sizeof(*dk), PROT_READ | PROT_WRITE, MAP_SHARED,
	    fd, 0)) == MAP_FAILED) {
		save = errno;
		close(fd);
		errno = save;
		return -1;
	}
	atomic_init(&dk->word, 0);
	atomic_init(&dk->started_ms, 0);
	*deckp = dk;
	return fd;
}

struct deck *
deck_map(int fd)
{
	struct deck *dk;
	int save;

	dk = mmap(NULL, sizeof(*dk), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
	    0);
	save = errno;
	close(fd);
	if (dk == MAP_FAILED) {
		errno = save;
		return NULL;
	}
	return dk;
}

void
deck_unmap(struct deck *dk)
{
	if (dk != NULL)
		munmap(dk, sizeof(*dk));
}

void
deck_offer(struct deck *dk, uint64_t job)
{
	atomic_store_explicit(&dk->word, job, memory_order_release);
}

int
deck_cancel(struct deck *dk, uint64_t job, uint64_t *started_ms)
{
	uint64_t want = job;

	if (atomic_compare_exchange_strong_explicit(&dk->word, &want, 0,
	    memory_order_acq_rel, memory_order_acquire))
		return 1;
	if (want != (job | DECK_STARTED))
		return 1;	/* not this job's word: it cannot start */
	*started_ms = atomic_load_explicit(&dk->started_ms,
	    memory_order_relaxed);
	return 0;
}

int
deck_take(struct deck *dk, uint64_t job, uint64_t now_ms)
{
	uint64_t want = job;

	/* The time first: the master reads it once it sees the take. */
	atomic_store_explicit(&dk->started_ms, now_ms, memory_order_relaxed);
	return atomic_compare_exchange_strong_explicit(&dk->word, &want,
	    job | DECK_STARTED, memory_order_acq_rel, memory_order_acquire);
}

int
deck_offered(struct deck *dk, uint64_t job)
{
	return atomic_load_explicit(&dk->word, memory_order_acquire) == job;
}
