/* SPDX-License-Identifier: ISC */
/*
 * tlsmat.c: the ingest edges' TLS material, read from files and passed in
 * a memfd; see tlsmat.h.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "conf.h"
#include "proc.h"
#include "tlsmat.h"

#define TLSMAT_HEAD	12	/* three 32-bit lengths */

static int	read_file(const char *, const char *, char **, size_t *,
		    char *, size_t);
static void	put32(unsigned char *, size_t);
static size_t	get32(const unsigned char *);
static char	*part(const unsigned char *, size_t);
static int	check(const struct tlsmat *, char *, size_t);

/* The whole of path (what: the key's name, for the error), at most
 * TLSMAT_FILE_MAX bytes, NUL-terminated. */
static int
read_file(const char *what, const char *path, char **out, size_t *lenp,
    char *err, size_t errlen)
{
	struct stat st;
	char *buf;
	size_t off = 0;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1) {
		snprintf(err, errlen, "%s %s: %s", what, path,
		    strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > TLSMAT_FILE_MAX || st.st_size == 0) {
		snprintf(err, errlen, "%s %s: not a regular file of 1 to %d "
		    "bytes", what, path, TLSMAT_FILE_MAX);
		close(fd);
		return -1;
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
		close(fd);
		snprintf(err, errlen, "%s: out of memory", what);
		return -1;
	}
	while (off < (size_t)st.st_size) {
		n = read(fd, buf + off, (size_t)st.st_size - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	if (off != (size_t)st.st_size) {
		explicit_bzero(buf, off);
		free(buf);
		snprintf(err, errlen, "%s %s: short read", what, path);
		return -1;
	}
	buf[off] = '\0';
	*out = buf;
	*lenp = off;
	return 0;
}

int
tlsmat_load(const struct conf *cf, struct tlsmat *m, char *err,
    size_t errlen)
{
	memset(m, 0, sizeof(*m));
	if (cf->http.tls.cert_file == NULL)
		return 0;
	if (read_file("http.tls.cert_file", cf->http.tls.cert_file,
	    &m->cert, &m->certlen, err, errlen) == -1 ||
	    read_file("http.tls.key_file", cf->http.tls.key_file, &m->key,
	    &m->keylen, err, errlen) == -1 ||
	    (cf->http.tls.client_ca_file != NULL &&
	    read_file("http.tls.client_ca_file", cf->http.tls.client_ca_file,
	    &m->ca, &m->calen, err, errlen) == -1) ||
	    check(m, err, errlen) == -1) {
		tlsmat_free(m);
		return -1;
	}
	return 0;
}

/*
 * What would make every edge fail at its start, found before the master
 * puts it in force (a reload keeps the old files then): a certificate
 * that is no PEM certificate, a key that is none or not the
 * certificate's, a CA file without a certificate.  The files are the
 * operator's, not a client's bytes.
 */
static int
check(const struct tlsmat *m, char *err, size_t errlen)
{
	EVP_PKEY *k = NULL;
	X509 *x = NULL, *ca = NULL;
	BIO *b;
	const char *what = NULL;

	if ((b = BIO_new_mem_buf(m->cert, (int)m->certlen)) != NULL) {
		x = PEM_read_bio_X509(b, NULL, NULL, NULL);
		BIO_free(b);
	}
	if ((b = BIO_new_mem_buf(m->key, (int)m->keylen)) != NULL) {
		k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
		BIO_free(b);
	}
	if (m->ca != NULL &&
	    (b = BIO_new_mem_buf(m->ca, (int)m->calen)) != NULL) {
		ca = PEM_read_bio_X509(b, NULL, NULL, NULL);
		BIO_free(b);
	}
	if (x == NULL)
		what = "http.tls.cert_file: no PEM certificate";
	else if (k == NULL)
		what = "http.tls.key_file: no PEM private key (an encrypted "
		    "one is not read)";
	else if (X509_check_private_key(x, k) != 1)
		what = "http.tls.key_file: not the key of "
		    "http.tls.cert_file's certificate";
	else if (m->ca != NULL && ca == NULL)
		what = "http.tls.client_ca_file: no PEM certificate";
	ERR_clear_error();
	X509_free(x);
	X509_free(ca);
	EVP_PKEY_free(k);
	if (what == NULL)
		return 0;
	snprintf(err, errlen, "%s", what);
	return -1;
}

static void
put32(unsigned char *p, size_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static size_t
get32(const unsigned char *p)
{
	return (size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 |
	    p[3];
}

int
tlsmat_memfd(const struct tlsmat *m)
{
	unsigned char *buf;
	size_t len = TLSMAT_HEAD + m->certlen + m->keylen + m->calen;
	int fd, save;

	if ((buf = malloc(len)) == NULL)
		return -1;
	put32(buf, m->certlen);
	put32(buf + 4, m->keylen);
	put32(buf + 8, m->calen);
	memcpy(buf + TLSMAT_HEAD, m->cert, m->certlen);
	memcpy(buf + TLSMAT_HEAD + m->certlen, m->key, m->keylen);
	if (m->calen > 0)
		memcpy(buf + TLSMAT_HEAD + m->certlen + m->keylen, m->ca,
		    m->calen);
	fd = proc_memfd("ankusa-tls", buf, len);
	save = errno;
	explicit_bzero(buf, len);
	free(buf);
	errno = save;
	return fd;
}

/* One part of a memfd's bytes, copied and NUL-terminated. */
static char *
part(const unsigned char *p, size_t len)
{
	char *s;

	if ((s = malloc(len + 1)) == NULL)
		return NULL;
	memcpy(s, p, len);
	s[len] = '\0';
	return s;
}

int
tlsmat_read(int fd, struct tlsmat *m)
{
	unsigned char *buf;
	size_t len, c, k, a;
	int rc = -1;

	memset(m, 0, sizeof(*m));
	if ((buf = (unsigned char *)proc_read_all(fd, &len)) == NULL)
		return -1;
	if (len < TLSMAT_HEAD)
		goto done;
	c = get32(buf);
	k = get32(buf + 4);
	a = get32(buf + 8);
	if (c > TLSMAT_FILE_MAX || k > TLSMAT_FILE_MAX ||
	    a > TLSMAT_FILE_MAX || TLSMAT_HEAD + c + k + a != len)
		goto done;
	m->certlen = c;
	m->keylen = k;
	m->calen = a;
	if ((m->cert = part(buf + TLSMAT_HEAD, c)) == NULL ||
	    (m->key = part(buf + TLSMAT_HEAD + c, k)) == NULL ||
	    (a > 0 && (m->ca = part(buf + TLSMAT_HEAD + c + k, a)) == NULL))
		goto done;
	rc = 0;
 done:
	explicit_bzero(buf, len);
	free(buf);
	if (rc == -1)
		tlsmat_free(m);
	return rc;
}

void
tlsmat_free(struct tlsmat *m)
{
	if (m->key != NULL)
		explicit_bzero(m->key, m->keylen);
	free(m->cert);
	free(m->key);
	free(m->ca);
	memset(m, 0, sizeof(*m));
}
