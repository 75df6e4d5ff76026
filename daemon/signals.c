/* SPDX-License-Identifier: ISC */
/*
 * signals.c: the master's SIGHUP, SIGTERM and SIGINT; see signals.h.
 *
 * libevent's own signal events would do for the loop, but they are made
 * only once the loop exists, after the store is open, and they hand a
 * signal to the loop, not to code that runs before it or instead of it:
 * a SIGTERM to a site still joining its group took the default action
 * (killed at once, no log, the store not closed), and one that arrived
 * while a site executed itself again on a change of role was read by
 * libevent's handler, never dispatched and gone with the exec: the new
 * process ran on as the group's master (docs/DEPARTURES 38).
 *
 * So the three are blocked from signals_init until signals_start, in the
 * loop's thread, and so in every thread the store makes meanwhile (the
 * replication manager's, which take a process's signal otherwise, too
 * late for the thread that acts on it): one sent then stays pending on
 * the process, where signals_stop sees it.  signals_hold blocks them in
 * the loop's thread again before an exec: no thread of the process takes
 * them then (the backup's blocks every signal), and a pending signal and
 * the mask outlive the exec (execve(2)).
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
#include "signals.h"

/* got_*: to be handed to the loop; stop_sig: the first stop, kept. */
static volatile sig_atomic_t	 got_hup, got_term, got_int, stop_sig;
static int			 sig_pipe[2] = { -1, -1 };
static struct event		*ev_signals;
static void			(*signals_cb)(int);

static void	signals_handler(int);
static void	signals_read(evutil_socket_t, short, void *);
static void	signals_set(sigset_t *);

static void
signals_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
}

/* Async-signal-safe: flags and a write. */
static void
signals_handler(int sig)
{
	int saved = errno;
	char c = 1;

	if (sig == SIGHUP)
		got_hup = 1;
	else if (sig == SIGTERM)
		got_term = 1;
	else if (sig == SIGINT)
		got_int = 1;
	if ((sig == SIGTERM || sig == SIGINT) && stop_sig == 0)
		stop_sig = sig;
	/* Full: the loop has bytes to read already. */
	(void)!write(sig_pipe[1], &c, 1);
	errno = saved;
}

void
signals_init(void)
{
	struct sigaction sa;

	signals_hold();
	if (pipe2(sig_pipe, O_NONBLOCK | O_CLOEXEC) == -1)
		fatal("signals: pipe");
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = signals_handler;
	signals_set(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGHUP, &sa, NULL) == -1 ||
	    sigaction(SIGTERM, &sa, NULL) == -1 ||
	    sigaction(SIGINT, &sa, NULL) == -1)
		fatal("signals: sigaction");
}

const char *
signals_stop(void)
{
	sigset_t set;

	if (stop_sig == SIGTERM)
		return "SIGTERM";
	if (stop_sig == SIGINT)
		return "SIGINT";
	/* Blocked: pending on the process. */
	if (sigpending(&set) == 0) {
		if (sigismember(&set, SIGTERM) == 1)
			return "SIGTERM";
		if (sigismember(&set, SIGINT) == 1)
			return "SIGINT";
	}
	return NULL;
}

void
signals_start(struct event_base *base, void (*cb)(int))
{
	sigset_t set;
	int ret;

	signals_cb = cb;
	if ((ev_signals = event_new(base, sig_pipe[0], EV_READ | EV_PERSIST,
	    signals_read, NULL)) == NULL || event_add(ev_signals, NULL) == -1)
		fatalx("signals: cannot watch the signals");
	/* One pending is taken by the handler now, its byte read at the
	 * loop's first turn. */
	signals_set(&set);
	if ((ret = pthread_sigmask(SIG_UNBLOCK, &set, NULL)) != 0)
		fatalx("signals: pthread_sigmask: %s", strerror(ret));
}

/* A stop first: a reload asked with it would be refused anyway. */
static void
signals_read(evutil_socket_t fd, short what, void *arg)
{
	char buf[64];

	(void)what, (void)arg;
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	if (got_term) {
		got_term = 0;
		signals_cb(SIGTERM);
	}
	if (got_int) {
		got_int = 0;
		signals_cb(SIGINT);
	}
	if (got_hup) {
		got_hup = 0;
		signals_cb(SIGHUP);
	}
}

void
signals_close(void)
{
	if (ev_signals != NULL) {
		event_free(ev_signals);
		ev_signals = NULL;
	}
}

void
signals_hold(void)
{
	sigset_t set;
	int ret;

	signals_set(&set);
	if ((ret = pthread_sigmask(SIG_BLOCK, &set, NULL)) != 0)
		fatalx("signals: pthread_sigmask: %s", strerror(ret));
}
