/*
 * syncer.c: fdatasync in a thread; see syncer.h.
 *
 * The thread sleeps on a condition until the loop posts a request, syncs
 * its descriptors, records the result and writes a byte into a pipe the
 * loop watches; the loop's callback takes the result and runs done().
 * The thread blocks every signal: they stay the loop's.  The master forks
 * its children from the loop's thread and they exec at once, so the
 * thread's lock is never needed in a child.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"
#include "syncer.h"

static struct {
	pthread_t	 thread;
	pthread_mutex_t	 mtx;
	pthread_cond_t	 cond;
	int		 started;
	/* Under mtx. */
	int		 stop;
	int		 posted;	/* a request the thread has not taken */
	int		 ended;		/* it ended; the loop was not told */
	int		 fds[SYNCER_MAX_FDS];
	int		 nfds;
	int		 err;
	/* The loop's own. */
	int		 busy;
	int		 pipe[2];
	struct event	*ev;
	void		(*done)(int, void *);
	void		*arg;
} sy = {
	.mtx = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.pipe = { -1, -1 },
};

static void	*syncer_main(void *);
static void	 syncer_cb(evutil_socket_t, short, void *);
static void	 syncer_finish(void);

static void *
syncer_main(void *unused)
{
	char c = 1;
	int i, err;

	pthread_mutex_lock(&sy.mtx);
	for (;;) {
		while (!sy.posted && !sy.stop)
			pthread_cond_wait(&sy.cond, &sy.mtx);
		if (!sy.posted)
			break;
		sy.posted = 0;
		pthread_mutex_unlock(&sy.mtx);
		/* The descriptors are the loop's; it leaves them open until
		 * done() has run. */
		err = 0;
		for (i = 0; i < sy.nfds; i++) {
			while (fdatasync(sy.fds[i]) == -1) {
				if (errno == EINTR)
					continue;
				if (err == 0)
					err = errno;
				break;
			}
		}
		pthread_mutex_lock(&sy.mtx);
		sy.err = err;
		sy.ended = 1;
		pthread_cond_broadcast(&sy.cond);
		/* A full pipe already holds a wake-up. */
		while (write(sy.pipe[1], &c, 1) == -1 && errno == EINTR)
			;
	}
	pthread_mutex_unlock(&sy.mtx);
	return NULL;
}

void
syncer_start(struct event_base *base, void (*done)(int, void *), void *arg)
{
	sigset_t all, old;
	int i, ret;

	sy.done = done;
	sy.arg = arg;
	if (pipe(sy.pipe) == -1)
		fatal("syncer: pipe");
	for (i = 0; i < 2; i++)
		if (fcntl(sy.pipe[i], F_SETFD, FD_CLOEXEC) == -1 ||
		    fcntl(sy.pipe[i], F_SETFL, O_NONBLOCK) == -1)
			fatal("syncer: fcntl");
	if ((sy.ev = event_new(base, sy.pipe[0], EV_READ | EV_PERSIST,
	    syncer_cb, NULL)) == NULL || event_add(sy.ev, NULL) == -1)
		fatalx("syncer: event");
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	ret = pthread_create(&sy.thread, NULL, syncer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret != 0) {
		errno = ret;
		fatal("syncer: pthread_create");
	}
	sy.started = 1;
}

void
syncer_request(const int *fds, int n)
{
	if (sy.busy || n < 1 || n > SYNCER_MAX_FDS)
		fatalx("syncer: bad request");
	pthread_mutex_lock(&sy.mtx);
	memcpy(sy.fds, fds, n * sizeof(*fds));
	sy.nfds = n;
	sy.posted = 1;
	sy.ended = 0;
	pthread_cond_signal(&sy.cond);
	pthread_mutex_unlock(&sy.mtx);
	sy.busy = 1;
}

int
syncer_busy(void)
{
	return sy.busy;
}

/* The request ended (under mtx: sy.ended): tell the loop's caller. */
static void
syncer_finish(void)
{
	int err;

	pthread_mutex_lock(&sy.mtx);
	err = sy.err;
	sy.ended = 0;
	pthread_mutex_unlock(&sy.mtx);
	sy.busy = 0;
	sy.done(err, sy.arg);
}

static void
syncer_cb(evutil_socket_t fd, short ev, void *arg)
{
	char buf[64];
	int ended;

	while (read(sy.pipe[0], buf, sizeof(buf)) > 0)
		;
	pthread_mutex_lock(&sy.mtx);
	ended = sy.ended;
	pthread_mutex_unlock(&sy.mtx);
	if (sy.busy && ended)
		syncer_finish();
}

void
syncer_wait(void)
{
	if (!sy.busy)
		return;
	pthread_mutex_lock(&sy.mtx);
	while (!sy.ended)
		pthread_cond_wait(&sy.cond, &sy.mtx);
	pthread_mutex_unlock(&sy.mtx);
	syncer_finish();
}

void
syncer_stop(void)
{
	if (!sy.started)
		return;
	syncer_wait();
	pthread_mutex_lock(&sy.mtx);
	sy.stop = 1;
	pthread_cond_signal(&sy.cond);
	pthread_mutex_unlock(&sy.mtx);
	pthread_join(sy.thread, NULL);
	sy.started = 0;
	event_free(sy.ev);
	sy.ev = NULL;
	close(sy.pipe[0]);
	close(sy.pipe[1]);
	sy.pipe[0] = sy.pipe[1] = -1;
}
