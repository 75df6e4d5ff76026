/* SPDX-License-Identifier: ISC */
/*
 * store_logsum.h: the checksum Berkeley DB puts on every log record and, with
 * DB_CHKSUM, on every page it writes: h = h * 33 + byte over the bytes,
 * mod 2^32, which BDB computes one byte a step in its __ham_func4.
 *
 * logsum computes the same sum eight bytes a step (32 with AVX2).
 * ankusad defines __ham_func4 itself and exports it (the link's dynamic
 * list), so libdb's calls through its PLT come here: until logsum_install
 * has compared logsum with libdb's own function over a set of inputs, and
 * whenever that comparison failed, the call goes on to libdb's.  A program
 * that does not export the symbol (a test linked without the list, a
 * linker that has none) keeps libdb's function and only loses the speed.
 * docs/DEPARTURES 18.
 */
#ifndef ANKUSA_LOGSUM_H
#define ANKUSA_LOGSUM_H

#include <stddef.h>
#include <stdint.h>

uint32_t logsum(const void *, size_t);

/*
 * Check logsum against libdb's __ham_func4 and, if they agree, answer
 * libdb's calls with it.  major and minor are the running libdb's
 * (db_version): logsum answers only the version it was checked against.
 * Once per process: later calls give the first answer.  Returns 1 when
 * libdb's calls now come to logsum; 0 when they do not, and err says why
 * (another libdb version, the symbol not exported, libdb's function not
 * found, or the input over which the two differ).
 */
int	 logsum_install(int major, int minor, char *err, size_t errlen);

/*
 * Whether a call of libdb's has come to logsum since it was installed: a
 * libdb linked with internal binding would call its own function without
 * going through the PLT, and logsum would be installed but never used.
 */
int	 logsum_reached(void);

/* libdb's own __ham_func4, or NULL when it cannot be found (tests). */
uint32_t (*logsum_bdb(void))(void *, const void *, uint32_t);

#endif
