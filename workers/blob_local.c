/* SPDX-License-Identifier: ISC */
/*
 * blob_local.c: the local claim store, one file per object under root
 * (claim_check.store.root), the key as its relative path.
 *
 * A put is durable and atomic: the bytes go to a temp file in the target
 * directory (".<name>.<pid>.<random>.tmp", O_EXCL), fsync, rename over
 * the name, fsync the directory; directories it had to create are synced
 * into their parents first.  A reader sees the whole object or none.  A
 * crash can leave a temp file behind; blob_local_expire() takes it with
 * its day directory.
 *
 * Gets are pread(2)s on a fresh descriptor: a pack is never rewritten,
 * only removed whole by expiry.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blob.h"
#include "ids.h"
#include "job.h"
#include "log.h"

static int	blob_local_open(struct blob_store *, const struct claim_store *,
		    char *, size_t);
static enum blob_status blob_local_put(struct blob_store *, const char *,
		    const void *, size_t, char *, size_t);
static enum blob_status blob_local_get(struct blob_store *, const char *,
		    uint64_t, size_t, void *, char *, size_t);
static void	blob_local_close(struct blob_store *);
static int	blob_local_mkdirs(const char *, char *, size_t);
static int	blob_local_syncdir(const char *);
static int	blob_local_rmdir(const char *);

const struct blob_ops blob_local_ops = {
	"local",
	blob_local_open,
	blob_local_put,
	blob_local_get,
	blob_local_close,
};

static int
blob_local_open(struct blob_store *bs, const struct claim_store *cs,
    char *err, size_t errlen)
{
	if (cs->root == NULL || cs->root[0] != '/') {
		snprintf(err, errlen, "claim store local: root must be an "
		    "absolute directory");
		return -1;
	}
	if ((bs->priv = strdup(cs->root)) == NULL)
		fatal("blob_local_open");
	return 0;
}

static void
blob_local_close(struct blob_store *bs)
{
	free(bs->priv);
}

static int
blob_local_syncdir(const char *dir)
{
	int fd, r, save;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	r = fsync(fd);
	save = errno;
	close(fd);
	errno = save;
	return r;
}

/* mkdir -p of path's directories; each made is synced into its parent. */
static int
blob_local_mkdirs(const char *path, char *err, size_t errlen)
{
	char buf[PATH_MAX], *p;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		snprintf(err, errlen, "claim store local: path too long");
		return -1;
	}
	for (p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0750) == 0) {
			char *slash = strrchr(buf, '/');

			/* The new directory's name, durable in its parent. */
			*slash = '\0';
			if (blob_local_syncdir(slash == buf ? "/" : buf) == -1) {
				*slash = '/';
				snprintf(err, errlen, "claim store local: fsync "
				    "%s: %s", buf, strerror(errno));
				return -1;
			}
			*slash = '/';
		} else if (errno != EEXIST) {
			snprintf(err, errlen, "claim store local: mkdir %s: %s",
			    buf, strerror(errno));
			return -1;
		}
		*p = '/';
	}
	return 0;
}

static enum blob_status
blob_local_put(struct blob_store *bs, const char *key, const void *data,
    size_t len, char *err, size_t errlen)
{
	char path[PATH_MAX], tmp[PATH_MAX], dir[PATH_MAX], *slash;
	const unsigned char *p = data;
	unsigned char rnd[8];
	size_t left = len;
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", (char *)bs->priv, key) >=
	    (int)sizeof(path)) {
		snprintf(err, errlen, "claim store local: path too long");
		return BLOB_ERROR;
	}
	if (blob_local_mkdirs(path, err, errlen) == -1)
		return BLOB_ERROR;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	*slash = '\0';
	ids_random(rnd, sizeof(rnd));
	if (snprintf(tmp, sizeof(tmp), "%s/.%s.%ld.%02x%02x%02x%02x%02x%02x"
	    "%02x%02x.tmp", dir, slash + 1, (long)getpid(), rnd[0], rnd[1],
	    rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]) >=
	    (int)sizeof(tmp)) {
		snprintf(err, errlen, "claim store local: path too long");
		return BLOB_ERROR;
	}
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0640)) == -1) {
		snprintf(err, errlen, "claim store local: create %s: %s", tmp,
		    strerror(errno));
		return BLOB_ERROR;
	}
	while (left > 0) {
		if ((n = write(fd, p, left)) == -1) {
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "claim store local: write %s: %s",
			    tmp, strerror(errno));
			goto fail;
		}
		p += n;
		left -= n;
	}
	if (fsync(fd) == -1) {
		snprintf(err, errlen, "claim store local: fsync %s: %s", tmp,
		    strerror(errno));
		goto fail;
	}
	if (close(fd) == -1) {
		fd = -1;
		snprintf(err, errlen, "claim store local: close %s: %s", tmp,
		    strerror(errno));
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) == -1) {
		snprintf(err, errlen, "claim store local: rename to %s: %s",
		    path, strerror(errno));
		goto fail;
	}
	if (blob_local_syncdir(dir) == -1) {
		/* Renamed but perhaps not durable: the put failed. */
		snprintf(err, errlen, "claim store local: fsync %s: %s", dir,
		    strerror(errno));
		return BLOB_ERROR;
	}
	return BLOB_OK;
fail:
	if (fd != -1)
		close(fd);
	unlink(tmp);
	return BLOB_ERROR;
}

static enum blob_status
blob_local_get(struct blob_store *bs, const char *key, uint64_t off,
    size_t len, void *buf, char *err, size_t errlen)
{
	char path[PATH_MAX];
	unsigned char *p = buf;
	size_t got = 0;
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", (char *)bs->priv, key) >=
	    (int)sizeof(path)) {
		snprintf(err, errlen, "claim store local: path too long");
		return BLOB_ERROR;
	}
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "claim store local: open %s: %s", path,
		    strerror(errno));
		return errno == ENOENT || errno == ENOTDIR ? BLOB_NOTFOUND :
		    BLOB_ERROR;
	}
	while (got < len) {
		n = pread(fd, p + got, len - got, off + got);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "claim store local: read %s: %s",
			    path, strerror(errno));
			close(fd);
			return BLOB_ERROR;
		}
		if (n == 0) {
			snprintf(err, errlen, "claim store local: %s ends "
			    "before %" PRIu64, path, off + len);
			close(fd);
			return BLOB_RANGE;
		}
		got += n;
	}
	close(fd);
	return BLOB_OK;
}

/* A day directory: its files, then itself.  No deeper levels exist. */
static int
blob_local_rmdir(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) <
		    (int)sizeof(path))
			(void)unlink(path);
	}
	closedir(d);
	return rmdir(dir);
}

int
blob_local_expire(struct blob_store *bs, const char *tenant, uint64_t now_ms,
    uint32_t days, char *err, size_t errlen)
{
	char dir[PATH_MAX], sub[PATH_MAX], cutoff[16];
	struct dirent *de;
	struct tm tm;
	time_t t;
	DIR *d;
	int n = 0;

	/* Days strictly before today - days (UTC) go. */
	t = now_ms / 1000 - (time_t)days * 86400;
	gmtime_r(&t, &tm);
	snprintf(cutoff, sizeof(cutoff), "dt=%04d-%02d-%02d",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
	snprintf(dir, sizeof(dir), "%s/claims/tenant=%s", (char *)bs->priv,
	    tenant);
	if ((d = opendir(dir)) == NULL) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "claim store local: opendir %s: %s", dir,
		    strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "dt=", 3) != 0 ||
		    strlen(de->d_name) != strlen(cutoff) ||
		    strcmp(de->d_name, cutoff) >= 0)
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) >=
		    (int)sizeof(sub))
			continue;
		if (blob_local_rmdir(sub) == 0)
			n++;
		else
			log_warn("claim store local: expire %s", sub);
	}
	closedir(d);
	if (n > 0)
		(void)blob_local_syncdir(dir);
	return n;
}
