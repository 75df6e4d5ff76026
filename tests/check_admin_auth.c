/* SPDX-License-Identifier: ISC */
/*
 * check_admin_auth.c: the admin API's credentials and the control
 * socket's admission: admin.tokens as the configuration reads it
 * (common/conf_tokens.c, common/scope.c), a bearer token's match, the
 * Host and Origin checks (daemon/admin/admin_auth.c) and the peer policy
 * (daemon/admin/admin_peer.c).  No socket: every input is built here.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/stat.h>

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin_auth.h"
#include "admin_peer.h"
#include "conf.h"
#include "scope.h"
#include "sha256.h"

#define SRC	"sources:\n  s:\n    tenant: t\n    sinks:\n      - type: log\n"

/* The configuration of text, or NULL; its errors joined in errs. */
static struct conf *
parse(const char *admin, char *errs, size_t len)
{
	struct conf_errors e = { NULL, 0 };
	struct conf *c;
	char text[4096];
	size_t n = 0;
	int i;

	snprintf(text, sizeof(text), "%s%s", SRC, admin);
	errs[0] = '\0';
	c = conf_parse(text, strlen(text), "test.yml", &e);
	for (i = 0; i < e.n && n < len; i++)
		n += snprintf(errs + n, len - n, "%s\n", e.msgs[i]);
	conf_errors_free(&e);
	return c;
}

static struct conf *
parse_ok(const char *admin)
{
	char errs[2048];
	struct conf *c = parse(admin, errs, sizeof(errs));

	ck_assert_msg(c != NULL, "refused: %s", errs);
	return c;
}

START_TEST(test_scope_names)
{
	int s;

	ck_assert_uint_eq(scope_parse("*"), SCOPE_ALL);
	ck_assert_uint_eq(scope_parse("dlq:write"), SCOPE_BIT(SCOPE_DLQ_WRITE));
	ck_assert_uint_eq(scope_parse("dlq:wrote"), 0);
	ck_assert_uint_eq(scope_parse(""), 0);
	ck_assert_uint_eq(scope_parse("DLQ:WRITE"), 0);
	for (s = SCOPE_NONE + 1; s < SCOPE_N; s++) {
		ck_assert_uint_eq(scope_parse(scope_name(s)), SCOPE_BIT(s));
		ck_assert(scope_has(SCOPE_ALL, s));
		ck_assert(!scope_has(SCOPE_ALL & ~SCOPE_BIT(s), s));
	}
	ck_assert(scope_has(0, SCOPE_NONE));
	ck_assert(!scope_has(SCOPE_ALL, SCOPE_N));
	ck_assert_str_eq(scope_name(SCOPE_AUDIT_READ), "audit:read");
	ck_assert_str_eq(scope_name(SCOPE_HOOKS_READ_BODY), "hooks:read_body");
}
END_TEST

START_TEST(test_tokens_parse)
{
	struct conf *c;
	unsigned char d[SHA256_LEN];

	c = parse_ok("admin:\n  tokens:\n"
	    "    - {name: ops, token: s3cret, scopes: ['*']}\n"
	    "    - {name: ro, token_sha256: "
	    "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b"
	    ", scopes: [dlq:read, metrics:read]}\n"
	    "    - {name: f, token_file: /run/tok, scopes: [config:read]}\n");
	ck_assert_int_eq(c->admin.ntokens, 3);
	ck_assert_str_eq(c->admin.tokens[0].name, "ops");
	ck_assert_int_eq(c->admin.tokens[0].kind, TOKEN_INLINE);
	ck_assert_uint_eq(c->admin.tokens[0].scopes, SCOPE_ALL);
	sha256("s3cret", 6, d);
	ck_assert(c->admin.tokens[0].has_digest);
	ck_assert_mem_eq(c->admin.tokens[0].digest, d, SHA256_LEN);
	/* sha256("secret") */
	ck_assert_int_eq(c->admin.tokens[1].kind, TOKEN_SHA256);
	sha256("secret", 6, d);
	ck_assert_mem_eq(c->admin.tokens[1].digest, d, SHA256_LEN);
	ck_assert_uint_eq(c->admin.tokens[1].scopes,
	    SCOPE_BIT(SCOPE_DLQ_READ) | SCOPE_BIT(SCOPE_METRICS_READ));
	ck_assert_int_eq(c->admin.tokens[2].kind, TOKEN_FILE);
	ck_assert_str_eq(c->admin.tokens[2].file, "/run/tok");
	ck_assert(!c->admin.tokens[2].has_digest);
	conf_free(c);
}
END_TEST

static const struct {
	const char	*yaml;
	const char	*want;
} bad_cases[] = {
	{ "[{name: a, token: x, token_sha256: x, scopes: ['*']}]",
	  "admin.tokens[0] must have exactly one of token, token_file and "
	  "token_sha256, got 2" },
	{ "[{name: a, scopes: ['*']}]",
	  "admin.tokens[0] must have exactly one of token, token_file and "
	  "token_sha256, got 0" },
	{ "[{token: x, scopes: ['*']}]", "admin.tokens[0].name is required" },
	{ "[{name: 'a b', token: x, scopes: ['*']}]",
	  "admin.tokens[0].name must be an id" },
	{ "[{name: a, token: x, scopes: [nope]}]",
	  "admin.tokens[0].scopes[0]: unknown scope nope" },
	{ "[{name: a, token: x, scopes: []}]",
	  "admin.tokens[0].scopes must be a non-empty list" },
	{ "[{name: a, token: x}]",
	  "admin.tokens[0].scopes must be a non-empty list" },
	{ "[{name: a, token: x, scopes: ['*']}, {name: a, token: y, "
	  "scopes: ['*']}]",
	  "admin.tokens[1].name: a is the name of another token too" },
	{ "[{name: a, token_sha256: 12ab, scopes: ['*']}]",
	  "admin.tokens[0].token_sha256 must be 64 hex digits" },
	{ "[{name: a, token_file: tok, scopes: ['*']}]",
	  "admin.tokens[0].token_file must be an absolute path, got tok" },
	{ "[{name: a, token: '', scopes: ['*']}]",
	  "admin.tokens[0].token must be a non-empty string" },
	{ "[{name: a, token: x, scopes: ['*'], role: admin}]",
	  "admin.tokens[0].role: unknown key" },
	{ "{name: a}", "admin.tokens must be a list of tokens, got a map" },
	{ "[x]", "admin.tokens[0] must be a map" },
};

START_TEST(test_tokens_bad)
{
	char admin[512], errs[2048];
	struct conf *c;

	snprintf(admin, sizeof(admin), "admin:\n  tokens: %s\n",
	    bad_cases[_i].yaml);
	c = parse(admin, errs, sizeof(errs));
	ck_assert_msg(c == NULL, "accepted %s", bad_cases[_i].yaml);
	ck_assert_msg(strstr(errs, bad_cases[_i].want) != NULL,
	    "%s: want \"%s\", got \"%s\"", bad_cases[_i].yaml,
	    bad_cases[_i].want, errs);
}
END_TEST

START_TEST(test_no_token_loopback_only)
{
	char errs[2048];
	struct conf *c;

	c = parse("admin:\n  ip: 0.0.0.0\n", errs, sizeof(errs));
	ck_assert(c == NULL);
	ck_assert_msg(strstr(errs, "admin.ip 0.0.0.0 is not a loopback "
	    "address, and admin.tokens is empty") != NULL, "%s", errs);
	conf_free(parse_ok("admin:\n  ip: 127.0.0.2\n"));
	conf_free(parse_ok("admin:\n  ip: '::1'\n"));
	conf_free(parse_ok("admin:\n  ip: 0.0.0.0\n  tokens: [{name: a, "
	    "token: x, scopes: ['*']}]\n"));
	conf_free(parse_ok("admin:\n  enabled: false\n  ip: 10.0.0.1\n"));
}
END_TEST

static struct conf *
two_tokens(void)
{
	return parse_ok("admin:\n  port: 4002\n  hosts: [admin.example, "
	    "'lb.example:8443', '[fd00::1]:9']\n  tokens:\n"
	    "    - {name: a, token: alpha-token, scopes: [dlq:read]}\n"
	    "    - {name: b, token: bravo-token, scopes: ['*']}\n");
}

START_TEST(test_token_match)
{
	struct conf *c = two_tokens();
	const struct conf_token *t;

	ck_assert_ptr_null(auth_token(c, NULL));
	t = auth_token(c, "Bearer alpha-token");
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(t->name, "a");
	t = auth_token(c, "bearer   bravo-token  ");
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(t->name, "b");
	ck_assert_ptr_null(auth_token(c, "Bearer alpha-tokeN"));
	ck_assert_ptr_null(auth_token(c, "Bearer alpha-toke"));
	ck_assert_ptr_null(auth_token(c, "Bearer alpha-token2"));
	ck_assert_ptr_null(auth_token(c, "Bearer "));
	ck_assert_ptr_null(auth_token(c, "Bearer"));
	ck_assert_ptr_null(auth_token(c, "Basic alpha-token"));
	ck_assert_ptr_null(auth_token(c, "alpha-token"));
	conf_free(c);
}
END_TEST

START_TEST(test_token_file)
{
	char dir[] = "/tmp/check_admin_auth.XXXXXX", path[128], yaml[512];
	char err[256];
	struct conf *c;
	int fd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/tok", dir);
	snprintf(yaml, sizeof(yaml), "admin:\n  tokens: [{name: f, "
	    "token_file: %s, scopes: [dlq:read]}]\n", path);
	c = parse_ok(yaml);
	/* Missing: the error names the key and the file. */
	ck_assert_int_eq(conf_tokens_read(c, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "admin.tokens[0].token_file") != NULL &&
	    strstr(err, path) != NULL, "%s", err);
	/* The first line, without its CRLF. */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ne(fd, -1);
	ck_assert_int_eq(write(fd, "from-file\r\nsecond\n", 18), 18);
	close(fd);
	ck_assert_int_eq(conf_tokens_read(c, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(auth_token(c, "Bearer from-file"));
	ck_assert_ptr_null(auth_token(c, "Bearer second"));
	conf_free(c);
	/* An empty file is no token. */
	c = parse_ok(yaml);
	fd = open(path, O_WRONLY | O_TRUNC);
	ck_assert_int_eq(write(fd, "\n", 1), 1);
	close(fd);
	ck_assert_int_eq(conf_tokens_read(c, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "empty") != NULL, "%s", err);
	conf_free(c);
	unlink(path);
	rmdir(dir);
}
END_TEST

START_TEST(test_tokens_reload_keep)
{
	struct conf *old = two_tokens(), *nw;
	int n;

	/* The same list: kept as it is, digests included. */
	nw = two_tokens();
	n = conf_reload_keep(old, nw, NULL, NULL);
	ck_assert_int_eq(n, 0);
	ck_assert_ptr_nonnull(auth_token(nw, "Bearer alpha-token"));
	conf_free(nw);
	/* Another list: reported, and the old one stays. */
	nw = parse_ok("admin:\n  tokens: [{name: z, token: zulu, scopes: "
	    "['*']}]\n");
	n = conf_reload_keep(old, nw, NULL, NULL);
	ck_assert_int_ge(n, 1);
	ck_assert_ptr_nonnull(auth_token(nw, "Bearer alpha-token"));
	ck_assert_ptr_null(auth_token(nw, "Bearer zulu"));
	conf_free(nw);
	conf_free(old);
}
END_TEST

START_TEST(test_host)
{
	struct conf *c = two_tokens();

	ck_assert(auth_host_ok(c, "127.0.0.1:4002", NULL));
	ck_assert(auth_host_ok(c, "127.0.0.1", NULL));
	ck_assert(auth_host_ok(c, "localhost:4002", NULL));
	ck_assert(auth_host_ok(c, "LocalHost", NULL));
	ck_assert(auth_host_ok(c, "admin.example", NULL));
	ck_assert(auth_host_ok(c, "ADMIN.example:80", NULL));
	ck_assert(auth_host_ok(c, "lb.example:8443", NULL));
	ck_assert(auth_host_ok(c, "[fd00::1]:9", NULL));
	ck_assert(auth_host_ok(c, "10.1.2.3:4002", "10.1.2.3:4002"));
	ck_assert(!auth_host_ok(c, "10.1.2.3:4002", "10.1.2.4:4002"));
	ck_assert(!auth_host_ok(c, "lb.example", NULL));
	ck_assert(!auth_host_ok(c, "lb.example:8444", NULL));
	ck_assert(!auth_host_ok(c, "[fd00::1]:10", NULL));
	ck_assert(!auth_host_ok(c, "127.0.0.1:4003", NULL));
	ck_assert(!auth_host_ok(c, "127.0.0.10:4002", NULL));
	ck_assert(!auth_host_ok(c, "localhost.evil.example", NULL));
	ck_assert(!auth_host_ok(c, "localhost:", NULL));
	ck_assert(!auth_host_ok(c, "admin.example:x", NULL));
	ck_assert(!auth_host_ok(c, "evil.example", NULL));
	ck_assert(!auth_host_ok(c, "", NULL));
	ck_assert(!auth_host_ok(c, NULL, NULL));
	conf_free(c);
}
END_TEST

START_TEST(test_origin)
{
	ck_assert(auth_origin_ok("http://127.0.0.1:4002", "127.0.0.1:4002"));
	ck_assert(auth_origin_ok("https://Admin.Example", "admin.example"));
	ck_assert(!auth_origin_ok("http://evil.example", "127.0.0.1:4002"));
	ck_assert(!auth_origin_ok("http://127.0.0.1:4003", "127.0.0.1:4002"));
	ck_assert(!auth_origin_ok("http://127.0.0.1", "127.0.0.1:4002"));
	ck_assert(!auth_origin_ok("null", "127.0.0.1:4002"));
	ck_assert(!auth_origin_ok("file://", "127.0.0.1:4002"));
	ck_assert(!auth_origin_ok("127.0.0.1:4002", "127.0.0.1:4002"));
}
END_TEST

START_TEST(test_peer_admit)
{
	struct peer_policy pp;
	gid_t groups[2] = { 7, 50 };
	char why[256], err[128];

	/* Not started as root: its own user is the operator. */
	ck_assert_int_eq(peer_policy_init(&pp, NULL, 1000, 0, err,
	    sizeof(err)), 0);
	ck_assert(peer_admit(&pp, 1000, 1000, NULL, 0, why, sizeof(why)));
	ck_assert(peer_admit(&pp, 0, 0, NULL, 0, why, sizeof(why)));
	ck_assert(!peer_admit(&pp, 1001, 1001, NULL, 0, why, sizeof(why)));
	ck_assert_msg(strstr(why, "control.group is unset") != NULL, "%s",
	    why);
	/* Started as root: node.user (999) is refused, in the group or
	 * not. */
	ck_assert_int_eq(peer_policy_init(&pp, NULL, 999, 1, err,
	    sizeof(err)), 0);
	ck_assert(!peer_admit(&pp, 999, 999, NULL, 0, why, sizeof(why)));
	ck_assert_msg(strstr(why, "uid 999 is node.user") != NULL, "%s", why);
	ck_assert(peer_admit(&pp, 0, 0, NULL, 0, why, sizeof(why)));
	/* A group, by hand: its gid and a member list. */
	memset(&pp, 0, sizeof(pp));
	pp.self = 999;
	pp.has_group = 1;
	pp.gid = 50;
	pp.members[pp.nmembers++] = 2001;
	ck_assert(peer_admit(&pp, 2000, 50, NULL, 0, why, sizeof(why)));
	ck_assert(peer_admit(&pp, 2002, 2002, groups, 2, why, sizeof(why)));
	ck_assert(peer_admit(&pp, 2001, 2001, NULL, 0, why, sizeof(why)));
	ck_assert(!peer_admit(&pp, 2003, 2003, groups, 1, why, sizeof(why)));
	ck_assert_msg(strstr(why, "uid 2003 is not root nor a member of "
	    "control.group") != NULL, "%s", why);
	ck_assert(!peer_admit(&pp, 999, 50, groups, 2, why, sizeof(why)));
	/* A group that does not exist is an error naming it. */
	ck_assert_int_eq(peer_policy_init(&pp, "ankusa-no-such-group", 999, 1,
	    err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "control.group ankusa-no-such-group") !=
	    NULL, "%s", err);
}
END_TEST

static Suite *
auth_suite(void)
{
	Suite *s = suite_create("admin_auth");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_scope_names);
	tcase_add_test(tc, test_tokens_parse);
	tcase_add_loop_test(tc, test_tokens_bad, 0,
	    sizeof(bad_cases) / sizeof(bad_cases[0]));
	tcase_add_test(tc, test_no_token_loopback_only);
	tcase_add_test(tc, test_token_match);
	tcase_add_test(tc, test_token_file);
	tcase_add_test(tc, test_tokens_reload_keep);
	tcase_add_test(tc, test_host);
	tcase_add_test(tc, test_origin);
	tcase_add_test(tc, test_peer_admit);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(auth_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
