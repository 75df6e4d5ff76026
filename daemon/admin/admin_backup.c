/* SPDX-License-Identifier: ISC */
/*
 * admin_backup.c: the master's side of an online backup; see admin_backup.h.
 *
 * The copy (store_backup_run) runs in a thread of its own that makes no
 * call on the loop's handles: it joins the store's environment through a
 * handle of its own, and tells the loop only through a pipe, one byte a
 * step (a full pipe loses nothing: the loop reads the counters, which the
 * thread keeps with atomics, whenever it wakes).  The loop reads the pipe
 * with a libevent event, tells the caller, and once the run has returned
 * joins the thread, frees the backup (which lets log removal go on:
 * store_maint.c) and gives the caller the end.  Nothing here blocks the
 * loop but backup_join, at the exit.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "admin_backup.h"
#include "log.h"
#include "master.h"
#include "store/store.h"

struct backup {
	struct store_backup	*sb;
	struct backup_cbs	 cbs;
	void			*arg;		/* NULL: detached */
	pthread_t		 thread;
	int			 fds[2];	/* the pipe: loop, thread */
	struct event		*ev;
	int			 rc;		/* the run's, once done */
	int			 done;		/* __atomic: the run returned */
	const char		*why;		/* a cancel's reason, or NULL */
	struct store_backup_progress told;	/* the last progress told */
};

static struct backup	*running;
static int		 stopping;

static void	*backup_main(void *);
static void	 backup_notify(void *);
static void	 backup_read(evutil_socket_t, short, void *);
static void	 backup_end(struct backup *);

int
backup_start(const char *dir, const struct backup_cbs *cbs, void *arg,
    char *err, size_t errlen)
{
	struct backup *bk;
	sigset_t all, old;
	const char *pace;
	int ret;

	if (stopping) {
		snprintf(err, errlen, "backup %s: ankusad is stopping", dir);
		return -1;
	}
	if (running != NULL) {
		snprintf(err, errlen, "backup %s: a backup is running already, "
		    "into %s; one at a time", dir,
		    store_backup_dir(running->sb));
		return -1;
	}
	if ((bk = calloc(1, sizeof(*bk))) == NULL) {
		snprintf(err, errlen, "backup %s: out of memory", dir);
		return -1;
	}
	bk->cbs = *cbs;
	bk->arg = arg;
	bk->fds[0] = bk->fds[1] = -1;
	if ((bk->sb = store_backup_new(env->store, dir, backup_notify, bk,
	    err, errlen)) == NULL) {
		free(bk);
		return -1;
	}
	if ((pace = getenv("ANKUSA_BACKUP_PACE_MS")) != NULL)
		store_backup_set_pace(bk->sb, (unsigned)strtoul(pace, NULL,
		    10) % 10000);
	if (pipe2(bk->fds, O_NONBLOCK | O_CLOEXEC) == -1 ||
	    (bk->ev = event_new(env->base, bk->fds[0], EV_READ | EV_PERSIST,
	    backup_read, bk)) == NULL || event_add(bk->ev, NULL) == -1) {
		snprintf(err, errlen, "backup %s: %s", dir, strerror(errno));
		goto fail;
	}
	/* The loop's signal events are the loop's: none comes to this
	 * thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&bk->thread, NULL, backup_main, bk);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret != 0) {
		snprintf(err, errlen, "backup %s: cannot start its thread: %s",
		    dir, strerror(ret));
		goto fail;
	}
	running = bk;
	log_info("backup %s: started", dir);
	return 0;

 fail:
	if (bk->ev != NULL)
		event_free(bk->ev);
	if (bk->fds[0] != -1) {
		close(bk->fds[0]);
		close(bk->fds[1]);
	}
	store_backup_free(bk->sb);
	free(bk);
	return -1;
}

static void *
backup_main(void *arg)
{
	struct backup *bk = arg;

	bk->rc = store_backup_run(bk->sb);
	__atomic_store_n(&bk->done, 1, __ATOMIC_SEQ_CST);
	backup_notify(bk);
	return NULL;
}

/* From the run's thread: wake the loop.  A full pipe already will. */
static void
backup_notify(void *arg)
{
	struct backup *bk = arg;
	char c = 0;

	while (write(bk->fds[1], &c, 1) == -1 && errno == EINTR)
		;
}

static void
backup_read(evutil_socket_t fd, short what, void *arg)
{
	struct backup *bk = arg;
	struct store_backup_progress p;
	char buf[256];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
	if (__atomic_load_n(&bk->done, __ATOMIC_SEQ_CST)) {
		backup_end(bk);
		return;
	}
	store_backup_progress(bk->sb, &p);
	if (bk->arg == NULL || p.phase == STORE_BACKUP_DONE ||
	    memcmp(&p, &bk->told, sizeof(p)) == 0)
		return;
	bk->told = p;
	bk->cbs.progress(bk->arg, &p);
}

/* The run returned: its thread is joined at once (it has nothing left to
 * do), the backup freed, the caller told. */
static void
backup_end(struct backup *bk)
{
	struct store_backup_progress p;
	char err[2048];
	const char *dir = store_backup_dir(bk->sb);

	pthread_join(bk->thread, NULL);
	store_backup_progress(bk->sb, &p);
	if (bk->rc == 0)
		log_info("backup %s: complete, %llu bytes in %llu files", dir,
		    (unsigned long long)p.bytes, (unsigned long long)p.files);
	else {
		snprintf(err, sizeof(err), "%s%s%s%s",
		    store_backup_error(bk->sb), bk->why != NULL ? " (" : "",
		    bk->why != NULL ? bk->why : "", bk->why != NULL ? ")" : "");
		log_warnx("%s", err);
	}
	if (bk->arg != NULL)
		bk->cbs.done(bk->arg, &p, bk->rc == 0 ? NULL : err);
	running = NULL;
	event_free(bk->ev);
	close(bk->fds[0]);
	close(bk->fds[1]);
	store_backup_free(bk->sb);
	free(bk);
}

void
backup_detach(void *arg)
{
	if (running == NULL || running->arg != arg)
		return;
	running->arg = NULL;
	running->why = "its caller went away";
	store_backup_cancel(running->sb);
}

void
backup_stop(void)
{
	stopping = 1;
	if (running == NULL)
		return;
	running->why = "ankusad is stopping";
	store_backup_cancel(running->sb);
}

int
backup_busy(void)
{
	return running != NULL;
}

/* The loop has ended with the run still going (a loop exit that did not
 * wait for it): cancel it and wait, so that its handle on the store's
 * environment is closed before the store is. */
void
backup_join(void)
{
	if (running == NULL)
		return;
	store_backup_cancel(running->sb);
	running->arg = NULL;
	backup_end(running);	/* joins: the run stops at its next write */
}
