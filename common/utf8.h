/* SPDX-License-Identifier: ISC */
/*
 * utf8.h: text from outside made safe to store and to show.
 *
 * A sink's error text, a control argument or a header value may hold any
 * bytes, and may have been cut by a fixed buffer in the middle of a
 * character.  jansson refuses a string that is not UTF-8, so such text
 * reaching a JSON answer of the master would have no encoding at all.
 * Everything that enters the master from outside goes through utf8_clean
 * before it is stored or echoed: the result is always well-formed UTF-8,
 * cut only between characters.
 */
#ifndef ANKUSA_UTF8_H
#define ANKUSA_UTF8_H

#include <stdarg.h>

#include <stddef.h>

/*
 * The length of the well-formed UTF-8 sequence at p (n > 0 bytes left):
 * 1 for ASCII (NUL included), 2-4 for a multi-byte character, 0 for a byte
 * that starts none (a stray continuation, an overlong form, a surrogate,
 * past U+10FFFF, or a sequence that n cuts short).  *cp, if not NULL, gets
 * the code point.
 */
size_t	utf8_seq(const unsigned char *p, size_t n, unsigned *cp);

/* 1 if the n bytes at s are well-formed UTF-8 with no NUL, else 0. */
int	utf8_valid(const char *s, size_t n);
/* 1 if they are also text of one line: no C0 control byte and no DEL
 * (an event type, a value shown or sent as a header), else 0. */
int	utf8_text(const char *s, size_t n);

/*
 * Copy the n bytes at src into dst (dstsz > 0 bytes, always
 * NUL-terminated) as well-formed UTF-8: each well-formed character as it
 * is, each other byte (and NUL) as the four characters \xNN.  What does
 * not fit is dropped a whole character or escape at a time, never half of
 * one.  Returns the length written, without the NUL.
 */
size_t	utf8_clean(char *dst, size_t dstsz, const char *src, size_t n);
/*
 * An excerpt of bytes from outside (a sink's answer) as text anyone can
 * show: the n bytes at src into dst (dstsz > 0, always NUL-terminated),
 * each well-formed character as it is but for the controls (C0 other than
 * tab, line feed and carriage return; DEL; C1), which like each byte
 * that starts no character (NUL included) become U+FFFD.  Cut between
 * characters to fit.  Returns the length written, without the NUL.
 */
size_t	utf8_excerpt(char *dst, size_t dstsz, const char *src, size_t n);
/*
 * printf into dst (dstsz > 0) as utf8_clean writes it: arguments from
 * outside quoted in a message come out well-formed, cut between
 * characters.  Formats at most 4 * dstsz bytes.  The length written.
 */
size_t	utf8_format(char *dst, size_t dstsz, const char *fmt, va_list ap)
	    __attribute__((format(printf, 3, 0)));

#endif /* ANKUSA_UTF8_H */
