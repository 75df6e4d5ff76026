/* SPDX-License-Identifier: ISC */
/*
 * conf_secret.c: values of the configuration read from files.
 *
 * In any scalar value, beside ${VAR} (conf_yaml.c):
 *	${file:PATH}		the bytes of the file PATH (an absolute path)
 *	${credential:NAME}	the bytes of $CREDENTIALS_DIRECTORY/NAME, a
 *				systemd credential (LoadCredential= in the
 *				unit); NAME has no "/"
 * with one trailing newline (LF or CRLF) stripped, so that a file written
 * by echo or an editor gives the secret alone.  A file is read when the
 * configuration is parsed: at the start by ankusad before it drops root
 * (so it may be root's alone), at a reload as node.user.  The children
 * never read one: the master writes what the reference stands for into
 * each child's part of the text (conf_role.c, conf_secret_inline), as
 * a child cannot reach the file (another user, Landlock).  A file that is
 * missing, unreadable, larger than CONF_SECRET_MAX or holds a NUL byte is
 * an error naming the key and the path.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf_secret.h"

#define SECRET_FILE	"file:"
#define SECRET_CRED	"credential:"

static int
secret_prefix(const char *ref, size_t len, const char *pfx)
{
	size_t n = strlen(pfx);

	return len >= n && strncmp(ref, pfx, n) == 0;
}

int
conf_secret_is_ref(const char *ref, size_t len)
{
	return secret_prefix(ref, len, SECRET_FILE) ||
	    secret_prefix(ref, len, SECRET_CRED);
}

/* The file's bytes, at most CONF_SECRET_MAX; NULL with why in err. */
static char *
secret_file(const char *path, char *err, size_t errlen)
{
	struct stat st;
	char *buf;
	ssize_t n;
	size_t len = 0;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1) {
		snprintf(err, errlen, "cannot read %s: %s", path,
		    strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is not a regular file", path);
		close(fd);
		return NULL;
	}
	if ((buf = malloc(CONF_SECRET_MAX + 1)) == NULL)
		abort();
	for (;;) {
		n = read(fd, buf + len, CONF_SECRET_MAX + 1 - len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += n;
		if (len > CONF_SECRET_MAX)
			break;
	}
	close(fd);
	if (n == -1) {
		snprintf(err, errlen, "cannot read %s: %s", path,
		    strerror(errno));
		free(buf);
		return NULL;
	}
	if (len > CONF_SECRET_MAX) {
		snprintf(err, errlen, "%s is larger than %d bytes", path,
		    CONF_SECRET_MAX);
		free(buf);
		return NULL;
	}
	if (memchr(buf, '\0', len) != NULL) {
		snprintf(err, errlen, "%s holds a NUL byte", path);
		free(buf);
		return NULL;
	}
	if (len > 0 && buf[len - 1] == '\n') {
		len--;
		if (len > 0 && buf[len - 1] == '\r')
			len--;
	}
	buf[len] = '\0';
	return buf;
}

char *
conf_secret_read(const char *ref, size_t len, char *err, size_t errlen)
{
	char path[4096];
	const char *dir, *name;
	size_t nl;

	if (secret_prefix(ref, len, SECRET_FILE)) {
		name = ref + strlen(SECRET_FILE);
		nl = len - strlen(SECRET_FILE);
		if (nl == 0 || name[0] != '/' || nl >= sizeof(path)) {
			snprintf(err, errlen, "${%.*s}: the path must be "
			    "absolute", (int)len, ref);
			return NULL;
		}
		snprintf(path, sizeof(path), "%.*s", (int)nl, name);
		return secret_file(path, err, errlen);
	}
	if (!secret_prefix(ref, len, SECRET_CRED)) {
		snprintf(err, errlen, "${%.*s}: not a file reference",
		    (int)len, ref);
		return NULL;
	}
	name = ref + strlen(SECRET_CRED);
	nl = len - strlen(SECRET_CRED);
	if (nl == 0 || memchr(name, '/', nl) != NULL ||
	    (nl <= 2 && name[0] == '.')) {
		snprintf(err, errlen, "${%.*s}: a credential's name has no "
		    "\"/\"", (int)len, ref);
		return NULL;
	}
	if ((dir = getenv("CREDENTIALS_DIRECTORY")) == NULL || *dir == '\0') {
		snprintf(err, errlen, "${%.*s}: CREDENTIALS_DIRECTORY is not "
		    "set (a systemd unit's LoadCredential= sets it)", (int)len,
		    ref);
		return NULL;
	}
	if (snprintf(path, sizeof(path), "%s/%.*s", dir, (int)nl, name) >=
	    (int)sizeof(path)) {
		snprintf(err, errlen, "${%.*s}: path too long", (int)len, ref);
		return NULL;
	}
	return secret_file(path, err, errlen);
}

/* A growing string. */
struct sbuf {
	char	*s;
	size_t	 len, cap;
};

static void
sbuf_add(struct sbuf *b, const char *s, size_t n)
{
	char *ns;

	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		if ((ns = realloc(b->s, b->cap)) == NULL)
			abort();
		b->s = ns;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

char *
conf_secret_inline(const char *value, int *changed, char *err,
    size_t errlen)
{
	struct sbuf b = { NULL, 0, 0 };
	const char *s = value, *end, *t;
	char *v;

	*changed = 0;
	sbuf_add(&b, "", 0);
	while (*s != '\0') {
		/* "$${" stays as it is: a literal "${" to the parse. */
		if (s[0] == '$' && s[1] == '$' && s[2] == '{') {
			sbuf_add(&b, s, 3);
			s += 3;
			continue;
		}
		if (s[0] != '$' || s[1] != '{' ||
		    (end = strchr(s + 2, '}')) == NULL ||
		    !conf_secret_is_ref(s + 2, end - (s + 2))) {
			sbuf_add(&b, s, 1);
			s++;
			continue;
		}
		if ((v = conf_secret_read(s + 2, end - (s + 2), err,
		    errlen)) == NULL) {
			free(b.s);
			return NULL;
		}
		for (t = v; *t != '\0'; t++) {
			if (t[0] == '$' && t[1] == '{')
				sbuf_add(&b, "$", 1);
			sbuf_add(&b, t, 1);
		}
		free(v);
		*changed = 1;
		s = end + 1;
	}
	return b.s;
}
