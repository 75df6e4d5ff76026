/* SPDX-License-Identifier: ISC */
/*
 * bearer.h: checking an Authorization: Bearer header against a list of
 * tokens (struct conf_token: a name and a SHA-256; conf_tokens.c), for
 * the admin API (admin.tokens) and the claim gateway
 * (claim_check.auth.tokens).
 *
 * The token presented is hashed with SHA-256 and its digest compared
 * with every configured one in constant time (CRYPTO_memcmp over the
 * digests, and always all of them), so neither the token's bytes nor
 * which entry came closest shows in the time taken.
 */
#ifndef ANKUSA_BEARER_H
#define ANKUSA_BEARER_H

#include "conf.h"

/*
 * The entry whose token authorization (a header's value, "Bearer" in any
 * case, spaces or tabs, the token; NULL: no header) presents, or NULL
 * when it presents none of the n tokens (an entry without its digest,
 * a token_file not read, matches none).
 */
const struct conf_token *bearer_check(const struct conf_token *, int n,
		    const char *authorization);

#endif
