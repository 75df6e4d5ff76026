/*
 * syncer.h: fdatasync(2) of a few descriptors in a thread of its own,
 * the loop told when they are done.
 *
 * The group commit's sync holds the disk's time, a quarter of a loop's
 * cycle under load, in which the loop could read the deliver processes'
 * outcomes and start their next jobs.  So the writer commits a batch
 * (its records written to the log files), hands the files to this
 * thread, and answers the batch only when done() says the sync ended.
 * The thread makes no other call: no Berkeley DB, no libevent, no log.
 *
 * One request at a time.  Only the loop's thread calls these.
 */
#ifndef ANKUSA_SYNCER_H
#define ANKUSA_SYNCER_H

#include <event2/event.h>

#define SYNCER_MAX_FDS	4

/* Start the thread; done(err, arg) runs in the loop after each request,
 * err 0 or the errno of the first descriptor whose sync failed. */
void	syncer_start(struct event_base *, void (*done)(int, void *), void *);
/* Sync fds[0..n-1] (n at most SYNCER_MAX_FDS); not while busy. */
void	syncer_request(const int *fds, int n);
/* A request has not ended yet, or its done() has not run. */
int	syncer_busy(void);
/* Block until the request in flight ends and run its done(); at once if
 * none is. */
void	syncer_wait(void);
/* syncer_wait, then end the thread. */
void	syncer_stop(void);

#endif
