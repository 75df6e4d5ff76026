/* SPDX-License-Identifier: ISC */
/*
 * admin_console.h: the console's static page on the admin listener,
 * /ui/ and its files, and the reports of its Content-Security-Policy.
 *
 * The files (daemon/admin/ui/) are built into the daemon as bytes
 * (scripts/console-embed writes console_assets.c at build time):
 * nothing is read from disk or fetched from elsewhere.  They need no
 * token, being the same for everyone; every call the page makes to the
 * API carries the operator's token as any client's does.  Each answer
 * under /ui/ carries a Content-Security-Policy that admits scripts,
 * styles, images and connections of this origin only (no inline script
 * or style), report-uri /ui/csp-report, X-Frame-Options: DENY,
 * Referrer-Policy: no-referrer, X-Content-Type-Options: nosniff, and
 * an ETag of the build's version and the file's bytes, revalidated on
 * each load (Cache-Control: no-cache; 304 when it matches), so that an
 * upgraded daemon's page is never mixed with a cached one.
 *
 * POST /ui/csp-report counts a violation report the browser sent in
 * ankusa_console_csp_reports_total and answers 204; its body is not
 * read (it is a browser's, which anyone may send), so the counter is
 * a signal, not a proof.
 */
#ifndef ANKUSA_ADMIN_CONSOLE_H
#define ANKUSA_ADMIN_CONSOLE_H

#include <stddef.h>

#include "admin_api.h"

/* One file of the page, as console_assets.c holds it. */
struct console_asset {
	const char		*name;		/* "app.js": /ui/app.js */
	const unsigned char	*data;
	size_t			 len;
};

extern const struct console_asset console_assets[];	/* console_assets.c */
extern const size_t console_nassets;

/* 1 when path is the console's (/ui, or under /ui/). */
int	 console_path(const char *path);
/* Answer a request for path (console_path's), any method. */
void	 console_serve(struct admin_req *, const char *path);
/* The asset of a name, or NULL. */
const struct console_asset *console_asset(const char *name);
/* The Content-Type of an asset's name (by its suffix). */
const char *console_ctype(const char *name);

#endif /* ANKUSA_ADMIN_CONSOLE_H */
