/* SPDX-License-Identifier: ISC */
/*
 * conf_man.c: ankusa.yml(5), written from the key table (ankusad -M).
 *
 * conf_write_manual() writes the KEYS section, one entry a key in the order
 * of the table; conf_write_manpage() wraps it in the rest of the page.  The
 * page in the tree, daemon/ankusa.yml.5.in, is this output with the
 * configured paths as placeholders (make update-man); the page the build
 * makes from it is this output, byte for byte (e2e
 * test_man_page_from_key_table).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "conf.h"
#include "conf_int.h"

static void	 cman_escape(FILE *, const char *);
static void	 cman_name(FILE *, const char *);
static void	 cman_elixir(FILE *);

/* Text for man(7): backslashes and dashes escaped, no leading control
 * character. */
static void
cman_escape(FILE *fp, const char *s)
{
	if (*s == '.' || *s == '\'')
		fputs("\\&", fp);
	for (; *s != '\0'; s++) {
		if (*s == '\\')
			fputs("\\e", fp);
		else if (*s == '-')
			fputs("\\-", fp);
		else
			fputc(*s, fp);
		if (*s == '\n' && (s[1] == '.' || s[1] == '\''))
			fputs("\\&", fp);
	}
}

/* A key name in bold, "*" shown as an italic id or tenant. */
static void
cman_name(FILE *fp, const char *name)
{
	const char *s;

	fputs("\\fB", fp);
	for (s = name; *s != '\0'; s++) {
		if (*s == '*') {
			if (s - name >= 8 && strncmp(s - 8, "tenants.", 8) == 0)
				fputs("\\fItenant\\fB", fp);
			else
				fputs("\\fIid\\fB", fp);
		} else if (*s == '-')
			fputs("\\-", fp);
		else
			fputc(*s, fp);
	}
	fputs("\\fR", fp);
}

void
conf_write_manual(FILE *fp)
{
	const struct conf_key *k;
	const char *const *e;
	char want[256];
	size_t i;
	int j, n;

	for (i = 0; i < CONF_TAB_N; i++) {
		k = &conf_tab[i];
		if (strchr(k->name, '.') == NULL) {
			fprintf(fp, ".SS %s\n", k->name);
			cman_escape(fp, k->doc);
			fputs("\n", fp);
			continue;
		}
		fputs(".TP\n", fp);
		cman_name(fp, k->name);
		fputs("\n", fp);
		if (k->sinks != 0 && k->sinks != M_ALL) {
			n = 0;
			for (j = SINK_HTTP; j <= SINK_KAFKA; j++)
				if ((k->sinks & (1 << j)) &&
				    !conf_in_list(conf_sink_refused, conf_sink_type_name(
				    (enum sink_type)j)))
					fprintf(fp, "%s%s", n++ ? ", " : "(",
					    conf_sink_type_name(
					    (enum sink_type)j));
			fputs(" sinks) ", fp);
		}
		switch (k->type) {
		case T_SECTION:
		case T_MAPOF:
		case T_LISTOF:
		case T_DEDUPE:
			conf_key_want(k, want, sizeof(want));
			fputs("A", fp);
			cman_escape(fp, want + 1);
			break;
		case T_ENUM:
		case T_ENUMSTR:
		case T_SINKTYPE:
			fputs("One of ", fp);
			for (e = k->names; *e != NULL; e++) {
				if (conf_name_refused(k, *e))
					continue;
				fprintf(fp, "%s\\fB", e != k->names ?
				    ", " : "");
				cman_escape(fp, *e);
				fprintf(fp, "\\fR");
			}
			break;
		default:
			conf_key_want(k, want, sizeof(want));
			if (want[0] >= 'a' && want[0] <= 'z')
				fputc(want[0] - 'a' + 'A', fp);
			cman_escape(fp, want + 1);
			break;
		}
		if (k->def != NULL) {
			fputs("; default \\fB", fp);
			cman_escape(fp, k->def);
			fputs("\\fR", fp);
		}
		if (k->flags & F_REQUIRED)
			fputs("; required", fp);
		if (k->flags & F_RESTART)
			fputs("; a change needs a restart", fp);
		fputs(".\n", fp);
		cman_escape(fp, k->doc);
		fputs("\n", fp);
	}
}

/* The Elixir Ankusa's keys this build refuses, and the environment. */
static void
cman_elixir(FILE *fp)
{
	const struct cnosup *u;
	const struct cenv *e;
	const char *const *s;

	fputs(".SH THE ELIXIR ANKUSA'S FILES\n"
	    "A file written for the Elixir Ankusa loads unchanged when it "
	    "uses the keys above, whose defaults are the Elixir Ankusa's.  "
	    "Its keys for what this build does not have are refused, each "
	    "with a line saying so:\n", fp);
	for (u = conf_nosup_keys; u->name != NULL; u++) {
		fputs(".TP\n", fp);
		cman_name(fp, u->name);
		fputs("\n", fp);
		cman_escape(fp, u->why);
		fputs(".\n", fp);
	}
	fputs(".PP\n"
	    "and so are the values\n"
	    ".B wal.type: none\n"
	    "or\n"
	    ".BR postgres ,\n"
	    ".B routes.enabled: true,\n"
	    ".B backup.enabled: true,\n"
	    ".B source_store.type: persistent\n"
	    "or\n"
	    ".BR redis ,\n"
	    ".B claim_check.store.type: gcs,\n", fp);
	if (conf_sink_refused[0] != NULL) {
		fputs("the sink types\n", fp);
		for (s = conf_sink_refused; *s != NULL; s++)
			if (s[1] != NULL && s[2] == NULL)
				fprintf(fp, ".B %s\nand\n", *s);
			else
				fprintf(fp, ".BR %s ,\n", *s);
	}
	fputs("and a\n"
	    ".B node.roles\n"
	    "list that is not all-in-one.\n"
	    ".SH ENVIRONMENT\n"
	    "These variables, the Elixir Ankusa image's (and\n"
	    ".BR ANKUSA_CONTROL_SOCKET ,\n"
	    "which ankusactl(8) reads too and the systemd unit sets), override "
	    "a key over "
	    "the file (and over the embedded default), at every load and "
	    "reload; a bad value is an error naming the key and the "
	    "variable.  Those naming a key this build refuses are refused "
	    "when set.\n", fp);
	for (e = conf_env_keys; e->var != NULL; e++) {
		fprintf(fp, ".TP\n.B %s\n", e->var);
		cman_name(fp, e->key);
		if (e->unless != NULL)
			fprintf(fp, ", unless\n.B %s\nis set", e->unless);
		fputs("\n", fp);
	}
	fputs(".PP\n"
	    "A\n"
	    ".B claim_check.port\n"
	    "or\n"
	    ".B claim_check.ip\n"
	    "override does not configure the claim gateway; it applies when\n"
	    ".B claim_check\n"
	    "is in the file.\n", fp);
}

void
conf_write_manpage(FILE *fp)
{
	fputs(".\\\" Generated by conf_write_manpage() from the key table in "
	    "common/conf_keys.c.\n"
	    ".\\\" Edit the table, not this file.\n", fp);
	fprintf(fp, ".TH ANKUSA.YML 5 2026-11-30 \"%s\" \"File Formats\"\n",
	    PACKAGE_STRING);
	fputs(".SH NAME\n"
	    "ankusa.yml \\- configuration file of the ankusad webhook relay\n"
	    ".SH SYNOPSIS\n"
	    ".B " ANKUSA_SYSCONFDIR "/ankusa.yml\n"
	    ".SH DESCRIPTION\n"
	    ".BR ankusad (8)\n"
	    "reads one YAML document: a map of the sections below.  Keys are "
	    "written here as dotted paths:\n"
	    ".B http.port\n"
	    "is the key\n"
	    ".B port\n"
	    "of the map\n"
	    ".BR http ;\n"
	    ".I id\n"
	    "stands for a source id,\n"
	    ".I tenant\n"
	    "for a tenant id (both match\n"
	    ".BR [A\\-Za\\-z0\\-9_\\-]{1,64} ),\n"
	    "and\n"
	    ".B []\n"
	    "for an element of a list.  Only\n"
	    ".B sources\n"
	    "is required; every other key has the default shown.  A null "
	    "value (\\fB~\\fR, \\fBnull\\fR or nothing) leaves a section "
	    "at its defaults.\n"
	    ".PP\n"
	    "Unknown keys are errors.  Every error is reported, in the form\n"
	    ".IP\n"
	    "\\fIdotted.key\\fR must be \\fIconstraint\\fR, got \\fIvalue\\fR, "
	    "line \\fIN\\fR\n"
	    ".PP\n"
	    "and the daemon exits 78 (\\fBEX_CONFIG\\fR); secrets are never "
	    "echoed.\n"
	    ".PP\n"
	    "In every value (not in keys),\n"
	    ".B ${VAR}\n"
	    "is replaced by the environment variable\n"
	    ".IR VAR ,\n"
	    "which must be set, and\n"
	    ".B ${VAR:\\-text}\n"
	    "by\n"
	    ".I VAR\n"
	    "or, when it is unset or empty, by\n"
	    ".I text\n"
	    "(taken literally; it cannot contain a closing brace).\n"
	    ".B $${\n"
	    "is a literal\n"
	    ".BR ${ ;\n"
	    "any other dollar sign is literal.  Replacement happens after the "
	    "YAML is parsed, so a variable cannot add structure, and never "
	    "makes a value null.\n"
	    ".PP\n"
	    "A secret can come from a file:\n"
	    ".BI ${file: path }\n"
	    "is replaced by the bytes of the file\n"
	    ".I path\n"
	    "(absolute), and\n"
	    ".BI ${credential: name }\n"
	    "by those of the systemd credential\n"
	    ".I name\n"
	    "(the file of that name in\n"
	    ".BR $CREDENTIALS_DIRECTORY ,\n"
	    "which the unit's\n"
	    ".B LoadCredential=\n"
	    "sets), one trailing newline stripped.  ankusad reads them when it "
	    "reads the file: at the start before it leaves root (so a file may "
	    "be root's alone), at a reload as node.user; the children get the "
	    "bytes, never the path.  A file that is missing, unreadable, over "
	    "64 KiB or holds a NUL byte is an error naming the key and the "
	    "path.  A file that writes a secret in its own text and that every "
	    "user, or a group other than root's and node.user's, may read is "
	    "a warning at the start naming the file and its mode.\n"
	    ".PP\n"
	    "On\n"
	    ".B SIGHUP\n"
	    "or\n"
	    ".B ankusactl reload\n"
	    "the file is read again; if it has any error the running "
	    "configuration is kept.  Keys marked \"a change needs a restart\" "
	    "keep their old value until the next start, and the daemon says "
	    "which.\n"
	    ".SH KEYS\n", fp);
	conf_write_manual(fp);
	cman_elixir(fp);
	fputs(".SH EXAMPLES\n"
	    "The embedded default, used by\n"
	    ".B ankusad\n"
	    "when there is no configuration file:\n"
	    ".PP\n.RS\n.nf\n", fp);
	cman_escape(fp, conf_default_yaml);
	fputs(".fi\n.RE\n.PP\n"
	    "Two tenants' sources, verified, with a signed HTTP sink and an "
	    "ordered SQS sink:\n"
	    ".PP\n.RS\n.nf\n", fp);
	cman_escape(fp,
	    "node:\n"
	    "  data_dir: /var/lib/ankusa\n"
	    "http:\n"
	    "  port: 4000\n"
	    "rate_limits:\n"
	    "  default: {rate: 50, burst: 100}\n"
	    "dispatch:\n"
	    "  concurrency: 64\n"
	    "  tenants:\n"
	    "    default: {concurrency: 8}\n"
	    "sources:\n"
	    "  stripe:\n"
	    "    tenant: acme\n"
	    "    verify:\n"
	    "      type: stripe\n"
	    "      secret: \"${STRIPE_WHSEC}\"\n"
	    "    dedupe: stripe\n"
	    "    sinks:\n"
	    "      - type: http\n"
	    "        url: https://billing.internal/hooks\n"
	    "        secret: \"${SINK_WHSEC}\"\n"
	    "  github:\n"
	    "    tenant: initech\n"
	    "    verify: {type: github, secret: \"${GITHUB_SECRET}\"}\n"
	    "    dedupe: {header: X-GitHub-Delivery, ttl_seconds: 86400}\n"
	    "    retry: {max_attempts: 20}\n"
	    "    sinks:\n"
	    "      - type: sqs\n"
	    "        queue_url: "
	    "https://sqs.eu-west-1.amazonaws.com/1234/gh.fifo\n"
	    "        region: eu-west-1\n"
	    "        ordered: true\n"
	    "        order_key: {json: repository.full_name}\n");
	fputs(".fi\n.RE\n"
	    ".SH SEE ALSO\n"
	    ".BR ankusactl (8),\n"
	    ".BR ankusad (8)\n", fp);
}
