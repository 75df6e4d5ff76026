/* SPDX-License-Identifier: ISC */
/*
 * bearer.c: an Authorization: Bearer header against a list of tokens; see
 * bearer.h.
 */
#include "config.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "bearer.h"
#include "conf.h"
#include "sha256.h"

#define BEARER_TOKEN_MAX	4096	/* a bearer token longer is no token */

const struct conf_token *
bearer_check(const struct conf_token *t, int n, const char *authorization)
{
	const struct conf_token *hit = NULL;
	unsigned char md[SHA256_LEN];
	const char *tok;
	size_t len;
	int i;

	if (authorization == NULL || strncasecmp(authorization, "Bearer", 6)
	    != 0 || (authorization[6] != ' ' && authorization[6] != '\t'))
		return NULL;
	for (tok = authorization + 6; *tok == ' ' || *tok == '\t'; tok++)
		;
	len = strlen(tok);
	while (len > 0 && (tok[len - 1] == ' ' || tok[len - 1] == '\t'))
		len--;
	if (len == 0 || len > BEARER_TOKEN_MAX)
		return NULL;
	sha256(tok, len, md);
	for (i = 0; i < n; i++)
		if (t[i].has_digest &&
		    CRYPTO_memcmp(md, t[i].digest, sizeof(md)) == 0 &&
		    hit == NULL)
			hit = &t[i];
	OPENSSL_cleanse(md, sizeof(md));
	return hit;
}
