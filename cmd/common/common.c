/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "common.h"

const char *r4cmd_prog = "r4kit";
int r4cmd_quiet, r4cmd_verbose, r4cmd_show_version;

struct poptOption r4cmd_common_options[] = {
	{ "quiet", 'q', POPT_ARG_NONE, &r4cmd_quiet, 0,
	  "print nothing but errors", NULL },
	{ "verbose", 'v', POPT_ARG_NONE, &r4cmd_verbose, 0,
	  "print more", NULL },
	{ "version", 'V', POPT_ARG_NONE, &r4cmd_show_version, 0,
	  "print the version and exit", NULL },
	POPT_TABLEEND
};

static int opt_no_lock, opt_wait;

struct poptOption r4cmd_lock_options[] = {
	{ "wait", '\0', POPT_ARG_NONE, &opt_wait, 0,
	  "wait while another program holds the image, instead of "
	  "failing", NULL },
	{ "no-lock", '\0', POPT_ARG_NONE, &opt_no_lock, 0,
	  "read-only: take no lock, read the image even while another "
	  "program writes it", NULL },
	POPT_TABLEEND
};

unsigned r4cmd_lock_flags(void)
{
	return (opt_no_lock ? R4_OPEN_NOLOCK : 0) |
	       (opt_wait ? R4_OPEN_WAIT : 0);
}

static void on_signal(int sig)
{
	r4_tmpfile_remove_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

void r4cmd_cleanup_on_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigfillset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction old;

		/* A signal ignored by the parent (nohup) stays ignored. */
		if (!sigaction(sigs[i], NULL, &old) &&
		    old.sa_handler == SIG_IGN)
			continue;
		sigaction(sigs[i], &sa, NULL);
	}
}

void r4cmd_init(const char *prog)
{
	const char *slash = strrchr(prog, '/');

	r4cmd_prog = slash ? slash + 1 : prog;
}

void r4cmd_put_escaped(FILE *f, const char *s, size_t len, int backslash)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < len; i++) {
		if (p[i] < 0x20 || p[i] == 0x7f || (backslash && p[i] == '\\'))
			fprintf(f, "\\x%02x", p[i]);
		else
			fputc(p[i], f);
	}
}

/* "prog: [prefix]message\n" on stderr, control bytes of the message
 * (names from an image or an archive) escaped. */
static void put_line(const char *prefix, const char *fmt, va_list ap)
{
	char msg[2048];
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);

	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(msg))
		n = (int)sizeof(msg) - 1;
	fprintf(stderr, "%s: %s", r4cmd_prog, prefix);
	r4cmd_put_escaped(stderr, msg, (size_t)n, 0);
	fputc('\n', stderr);
}

static void put_linef(const char *prefix, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void put_linef(const char *prefix, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	put_line(prefix, fmt, ap);
	va_end(ap);
}

void r4cmd_error(const struct r4_error *err, const char *fallback, int code)
{
	r4cmd_progress_end();
	if (err && err->msg[0])
		put_linef("", "%s", err->msg);
	else
		put_linef("", "%s: %s", fallback, r4_strerror(code));
}

void r4cmd_errorf(const char *fmt, ...)
{
	va_list ap;

	r4cmd_progress_end();
	va_start(ap, fmt);
	put_line("", fmt, ap);
	va_end(ap);
}

void r4cmd_warnf(const char *fmt, ...)
{
	va_list ap;

	r4cmd_progress_end();
	va_start(ap, fmt);
	put_line("warning: ", fmt, ap);
	va_end(ap);
}

int r4cmd_popt_error(poptContext ctx, int rc, int usage_exit)
{
	fprintf(stderr, "%s: %s: %s\n", r4cmd_prog,
		poptBadOption(ctx, POPT_BADOPTION_NOALIAS), poptStrerror(rc));
	fprintf(stderr, "Try '%s --help' for more information.\n",
		r4cmd_prog);
	return usage_exit;
}

void r4cmd_print_version(void)
{
	printf("%s (r4kit) %s\n", r4cmd_prog, r4_version());
	printf("Reiser4 format40, disk format release 4.0.2\n");
	printf("License GPL-2.0-or-later: this is free software; there is "
	       "NO warranty.\n");
}

int r4cmd_progress_enabled(void)
{
	const char *det = getenv("R4_TEST_DETERMINISTIC");

	if (r4cmd_quiet || (det && *det && strcmp(det, "0")))
		return 0;
	return isatty(STDERR_FILENO);
}

/* Columns of the bar on the terminal now (0: none drawn). */
static int progress_cols;

void r4cmd_progress(const char *label, uint64_t done, uint64_t total)
{
	static struct timespec last;
	struct timespec now;
	int pct, fill;

	if (!r4cmd_progress_enabled())
		return;
	if (total && done >= total) {	/* finished: clear the bar */
		r4cmd_progress_end();
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (progress_cols && (now.tv_sec - last.tv_sec) * 1000000000L +
	    (now.tv_nsec - last.tv_nsec) < 200000000L)
		return;
	last = now;
	pct = total ? (int)(done * 100 / total) : 0;
	fill = pct * 30 / 100;
	progress_cols = fprintf(stderr, "\r%s [%.*s%*s] %3d%%", label, fill,
				"##############################", 30 - fill,
				"", pct) - 1;
	fflush(stderr);
}

void r4cmd_progress_end(void)
{
	if (!progress_cols)
		return;
	fprintf(stderr, "\r%*s\r", progress_cols, "");
	fflush(stderr);
	progress_cols = 0;
}

void r4cmd_json_str(const char *s, size_t len)
{
	putchar('"');
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}
