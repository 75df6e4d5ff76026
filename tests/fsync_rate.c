/* SPDX-License-Identifier: ISC */
/*
 * fsync_rate.c: how many synced commits per second the disk under a
 * directory takes, the ceiling of an ingest that syncs once per hook.
 *
 *   fsync_rate dir [seconds]
 *
 * Appends 4 KiB and calls fdatasync(2) in a loop for `seconds` (default 3)
 * on a temporary file in dir, the way a write-ahead log grows, then prints
 * `fsync_per_s N` and removes the file.  The file wraps at 64 MiB.  Exits 1
 * on any error, naming it.
 */
#include "config.h"

#include <sys/types.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BLOCK		4096
#define WRAP		(64L * 1024 * 1024)

static double	 now(void);

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(int argc, char *argv[])
{
	char path[4096], block[BLOCK];
	double secs = 3, t0, dt;
	off_t off = 0;
	long n = 0;
	char *end;
	int fd;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: fsync_rate dir [seconds]\n");
		return 1;
	}
	if (argc == 3) {
		secs = strtod(argv[2], &end);
		if (*end != '\0' || secs <= 0 || secs > 3600) {
			fprintf(stderr, "fsync_rate: seconds must be in (0, 3600],"
			    " got %s\n", argv[2]);
			return 1;
		}
	}
	if (snprintf(path, sizeof(path), "%s/fsync_rate.XXXXXX", argv[1]) >=
	    (int)sizeof(path)) {
		fprintf(stderr, "fsync_rate: path too long\n");
		return 1;
	}
	if ((fd = mkstemp(path)) == -1) {
		fprintf(stderr, "fsync_rate: %s: %s\n", path, strerror(errno));
		return 1;
	}
	memset(block, 'f', sizeof(block));

	t0 = now();
	do {
		if (pwrite(fd, block, sizeof(block), off) != sizeof(block) ||
		    fdatasync(fd) == -1) {
			fprintf(stderr, "fsync_rate: %s: %s\n", path,
			    strerror(errno));
			unlink(path);
			return 1;
		}
		n++;
		off += sizeof(block);
		if (off >= WRAP)
			off = 0;
	} while ((dt = now() - t0) < secs);

	close(fd);
	unlink(path);
	printf("fsync_per_s %.0f\n", n / dt);
	return 0;
}
