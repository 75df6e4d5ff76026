/* SPDX-License-Identifier: ISC */
/*
 * store_trash.c: the thread that empties the log files store_maint.c pruned
 * (docs/DEPARTURES 16) and removes them.  No libdb calls: it touches
 * nothing of the store but the queue, under its mutex.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <fcntl.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "store.h"
#include "store_int.h"

#define STORE_TRASH_PREFIX	"removed-log."	/* a pruned log file */
#define STORE_TRASH_STEP	(1u * 1024 * 1024)	/* bytes one step
						 * truncates: 0.5-4 ms,
						 * now and then 40-110
						 * ms on a disk mounted
						 * with discard */
#define STORE_TRASH_PAUSE_MS	5	/* between the steps */

static int	 trash_shrink(const struct store *, const char *);

void
trash_path(const struct store *st, uint32_t n, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s%010" PRIu32, st->dir, STORE_TRASH_PREFIX, n);
}

/* Shorten the file at path by STORE_TRASH_STEP: 1 while some is left,
 * 0 when it is short enough to unlink at once (or cannot be opened). */
static int
trash_shrink(const struct store *st, const char *path)
{
	struct stat sb;
	int fd, rc = 0;

	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return 0;
	if (fstat(fd, &sb) == 0 && sb.st_size > STORE_TRASH_STEP) {
		if (ftruncate(fd, sb.st_size - STORE_TRASH_STEP) == 0)
			rc = 1;
		else
			log_warn("store %s: truncate %s", st->dir, path);
	}
	close(fd);
	return rc;
}

/*
 * The trash thread: empties the pruned log files a megabyte at a time
 * and removes them.  Freeing a file's blocks (and, on a disk mounted with
 * discard, trimming them) takes milliseconds a megabyte, and in the
 * master's loop, every 10 ms for the seconds after a checkpoint that
 * followed a backlog, that was a small tenant's p99 (docs/PERFORMANCE has
 * the figures).  It makes no
 * Berkeley DB call and touches nothing of the store but the queue, under
 * trash.mu; the queue's head is the file in hand, and goes from the queue
 * when the file is gone.
 */
void *
trash_main(void *arg)
{
	struct store *st = arg;
	struct timespec pause = { 0, STORE_TRASH_PAUSE_MS * 1000000L };
	char path[PATH_MAX];
	uint32_t n;

	pthread_mutex_lock(&st->trash.mu);
	for (;;) {
		while (st->trash.n == 0 && !st->trash.stop)
			pthread_cond_wait(&st->trash.cv, &st->trash.mu);
		if (st->trash.stop)
			break;
		n = st->trash.files[0];
		pthread_mutex_unlock(&st->trash.mu);
		trash_path(st, n, path, sizeof(path));
		if (trash_shrink(st, path)) {
			nanosleep(&pause, NULL);
			pthread_mutex_lock(&st->trash.mu);
			st->trash.steps++;
			continue;	/* the same file, unless stopped */
		}
		if (unlink(path) == -1 && errno != ENOENT)
			log_warn("store %s: remove %s", st->dir, path);
		pthread_mutex_lock(&st->trash.mu);
		st->trash.steps++;
		memmove(st->trash.files, st->trash.files + 1,
		    (st->trash.n - 1) * sizeof(*st->trash.files));
		st->trash.n--;
		pthread_cond_broadcast(&st->trash.cv);
	}
	pthread_mutex_unlock(&st->trash.mu);
	return NULL;
}

/* Remove the pruned log files: those queued (at close), or every one in
 * the directory, a stop or crash having left them (at open, all). */
void
trash_clear(struct store *st, int all)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *dp;

	if (!all) {
		while (st->trash.n > 0) {
			trash_path(st, st->trash.files[--st->trash.n], path,
			    sizeof(path));
			if (unlink(path) == -1 && errno != ENOENT)
				log_warn("store %s: remove %s", st->dir,
				    path);
		}
		return;
	}
	if ((dp = opendir(st->dir)) == NULL)
		return;
	while ((de = readdir(dp)) != NULL) {
		if (strncmp(de->d_name, STORE_TRASH_PREFIX,
		    strlen(STORE_TRASH_PREFIX)) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", st->dir, de->d_name);
		if (unlink(path) == -1 && errno != ENOENT)
			log_warn("store %s: remove %s", st->dir, path);
	}
	closedir(dp);
}
