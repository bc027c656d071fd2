/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "common.h"
#include "r4/check.h"

const char *r4cmd_prog = "r4kit";
int r4cmd_quiet, r4cmd_verbose, r4cmd_show_version;
/* JSON state (see r4cmd_json_start); the last error message is kept for
 * the JSON error object. */
int r4cmd_json;
static FILE *json_file;
static FILE *real_stderr;
static int json_done;
/* The top-level object being written (r4cmd_json_begin): open, and the
 * state of its one open array (r4cmd_json_array_begin). */
static int json_open, json_arr_open, json_arr_items;
static char last_err[R4_ERRMSG_MAX + 64];
static char err_line[R4_ERRMSG_MAX + 64];
static size_t err_len;

struct poptOption r4cmd_common_options[] = {
	{ "quiet", 'q', POPT_ARG_NONE, &r4cmd_quiet, 0,
	  "print nothing but errors", NULL },
	{ "verbose", 'v', POPT_ARG_NONE, &r4cmd_verbose, 0,
	  "print more", NULL },
	{ "version", 'V', POPT_ARG_NONE, &r4cmd_show_version, 0,
	  "print the version and exit", NULL },
	POPT_TABLEEND
};

static int opt_no_lock;
static char *opt_wait;	/* NULL: no --wait; "": without end */

struct poptOption r4cmd_wait_options[] = {
	{ "wait", '\0', POPT_ARG_STRING | POPT_ARGFLAG_OPTIONAL, &opt_wait, 0,
	  "when another program holds the image, try again until it is "
	  "free (at most SECONDS; without a value, without end) instead "
	  "of failing at once", "SECONDS" },
	POPT_TABLEEND
};

struct poptOption r4cmd_lock_options[] = {
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_wait_options, 0, NULL,
	  NULL },
	{ "no-lock", '\0', POPT_ARG_NONE, &opt_no_lock, 0,
	  "read-only: take no lock, read the image even while another "
	  "program writes it", NULL },
	POPT_TABLEEND
};

void r4cmd_wait_argv(int argc, const char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--wait"))
			argv[i] = "--wait=";
	}
}

static unsigned wait_seconds;

int r4cmd_lock_parse(int usage_exit)
{
	char *end;
	unsigned long v;

	if (!opt_wait || !opt_wait[0])
		return 0;
	errno = 0;
	v = strtoul(opt_wait, &end, 10);
	if (*end || errno || opt_wait[0] == '-' || v > 65535) {
		r4cmd_errorf("--wait=%s: give a whole number of seconds from 0 "
			     "to 65535 (or --wait alone: without end)",
			     opt_wait);
		return usage_exit;
	}
	wait_seconds = (unsigned)v;
	return 0;
}

unsigned r4cmd_lock_flags(void)
{
	unsigned f = opt_no_lock ? R4_OPEN_NOLOCK : 0;

	if (opt_wait && !opt_wait[0])
		f |= R4_OPEN_WAIT;
	else if (opt_wait && r4cmd_lock_parse(-1) == 0 && wait_seconds)
		f |= R4_OPEN_WAIT_SECONDS(wait_seconds);
	return f;
}

int r4cmd_busy_exit(const struct r4_error *err, int otherwise)
{
	return err && err->code == R4_EBUSY ? R4CMD_EXIT_BUSY : otherwise;
}

void r4cmd_lock_note(const struct r4_vol *vol)
{
	if (vol && r4_vol_lock_note(vol)[0])
		r4cmd_warnf("%s", r4_vol_lock_note(vol));
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
		snprintf(last_err, sizeof(last_err), "%s", err->msg);
	else
		snprintf(last_err, sizeof(last_err), "%s: %s", fallback,
			 r4_strerror(code));
	put_linef("", "%s", last_err);
}

int r4cmd_fail(struct r4_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	err->code = code;
	return code;
}

void r4cmd_errorf(const char *fmt, ...)
{
	va_list ap;

	r4cmd_progress_end();
	va_start(ap, fmt);
	vsnprintf(last_err, sizeof(last_err), fmt, ap);
	va_end(ap);
	put_linef("", "%s", last_err);
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
	snprintf(last_err, sizeof(last_err), "%s: %s",
		 poptBadOption(ctx, POPT_BADOPTION_NOALIAS), poptStrerror(rc));
	fprintf(stderr, "%s: %s\n", r4cmd_prog, last_err);
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
	/* asked for every entry and every chunk of data: the environment
	 * and the terminal are looked at once (-1: not yet) */
	static int tty = -1;

	if (r4cmd_quiet)
		return 0;
	if (tty < 0) {
		const char *det = getenv("R4_TEST_DETERMINISTIC");

		tty = !(det && *det && strcmp(det, "0")) &&
		      isatty(STDERR_FILENO);
	}
	return tty;
}

/* Columns of the bar on the terminal now (0: none drawn). */
static int progress_cols;

/* ---- progress events (--progress-fd) ---------------------------------- */

static char *opt_progress_fd;
static int progress_fd = -1;

struct poptOption r4cmd_progress_options[] = {
	{ "progress-fd", '\0', POPT_ARG_STRING, &opt_progress_fd, 0,
	  "write progress events to file descriptor FD, one JSON object a "
	  "line (phase, done, total, unit)", "FD" },
	POPT_TABLEEND
};

static struct {
	char phase[48], unit[16];
	uint64_t done, total;
	int sent, final;
	struct timespec last;
} ev = { "", "bytes", 0, 0, 0, 0, { 0, 0 } };

int r4cmd_progress_parse(int usage_exit)
{
	char *end;
	long fd;
	int fl;

	if (!opt_progress_fd)
		return 0;
	errno = 0;
	fd = strtol(opt_progress_fd, &end, 10);
	if (errno || end == opt_progress_fd || *end || fd < 0 ||
	    fd > 1 << 20) {
		r4cmd_errorf("--progress-fd=%s: not a file descriptor number",
			     opt_progress_fd);
		return usage_exit;
	}
	fl = fcntl((int)fd, F_GETFL);
	if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY) {
		r4cmd_errorf("--progress-fd=%ld: %s", fd, fl < 0 ?
			     "not an open file descriptor" :
			     "not open for writing");
		return usage_exit;
	}
	progress_fd = (int)fd;
	return 0;
}

int r4cmd_progress_events(void)
{
	return progress_fd >= 0;
}

int r4cmd_progress_wanted(void)
{
	return progress_fd >= 0 || r4cmd_progress_enabled();
}

void r4cmd_progress_kind(const char *phase, const char *unit)
{
	if (strcmp(phase, ev.phase)) {
		snprintf(ev.phase, sizeof(ev.phase), "%s", phase);
		ev.done = ev.total = 0;
		ev.sent = ev.final = 0;
	}
	snprintf(ev.unit, sizeof(ev.unit), "%s", unit);
}

static void event_write(void)
{
	char line[256];
	int n;

	n = snprintf(line, sizeof(line), "{\"schema\":1,\"program\":\"%s\","
		     "\"phase\":\"%s\",\"done\":%llu,\"total\":%llu,"
		     "\"unit\":\"%s\"}\n", r4cmd_prog, ev.phase,
		     (unsigned long long)ev.done,
		     (unsigned long long)ev.total, ev.unit);
	if (n > 0 && (size_t)n < sizeof(line) &&
	    write(progress_fd, line, (size_t)n) != n)
		progress_fd = -1;	/* a reader that went away */
	ev.sent = 1;
}

static void progress_event(const char *label, uint64_t done, uint64_t total)
{
	struct timespec now;
	int final;

	if (!ev.phase[0])
		r4cmd_progress_kind(label, ev.unit);
	if (ev.final && done >= ev.done)
		return;
	if (ev.final) {		/* the phase runs again (a second pass) */
		ev.done = 0;
		ev.sent = ev.final = 0;
	}
	if (done < ev.done)
		done = ev.done;
	/* a total that was an estimate the work passed */
	final = total && done == total;
	if (total < done)
		total = done;
	ev.done = done;
	ev.total = total;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (ev.sent && !final && (now.tv_sec - ev.last.tv_sec) * 1000000000L +
	    (now.tv_nsec - ev.last.tv_nsec) < 100000000L)
		return;
	ev.last = now;
	ev.final = final;
	event_write();
}

void r4cmd_progress_finish(void)
{
	if (progress_fd < 0 || !ev.phase[0] || ev.final)
		return;
	if (ev.total < ev.done)
		ev.total = ev.done;
	ev.done = ev.total;
	ev.final = 1;
	event_write();
}

void r4cmd_progress(const char *label, uint64_t done, uint64_t total)
{
	static struct timespec last;
	struct timespec now;
	int pct, fill;

	if (progress_fd >= 0)
		progress_event(label, done, total);
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

/* ---- JSON: one writer for every command --------------------------------
 *
 * Strings are written as UTF-8: a name that is valid UTF-8 keeps its
 * characters; control characters are escaped (\u00XX); a byte that is not
 * part of valid UTF-8 becomes U+FFFD, and r4cmd_json_name() then adds a
 * "KEY_b64" field holding the exact bytes in base64. Unsigned 64-bit
 * values above 2^53 (where a double loses precision) are written as
 * decimal strings. With --json a failure prints an error object. */


FILE *r4cmd_json_out(void)
{
	return json_file ? json_file : stdout;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if the
 * bytes there are not one (overlong forms, surrogates and code points
 * above U+10FFFF are not). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned c = s[0], cp;
	size_t len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

int r4cmd_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0, k; i < len; i += k) {
		k = utf8_seq(p + i, len - i);
		if (!k)
			return 0;
	}
	return 1;
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
	FILE *f = r4cmd_json_out();
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	for (size_t i = 0, k; i < len; i += k) {
		unsigned char c = p[i];

		k = utf8_seq(p + i, len - i);
		if (!k) {
			fputs("\xef\xbf\xbd", f);	/* U+FFFD */
			k = 1;
		} else if (c == '"' || c == '\\') {
			fprintf(f, "\\%c", c);
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
		} else {
			fwrite(p + i, 1, k, f);
		}
	}
	fputc('"', f);
}

static void json_b64(const unsigned char *p, size_t len)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "abcdefghijklmnopqrstuvwxyz0123456789+/";
	FILE *f = r4cmd_json_out();

	fputc('"', f);
	for (size_t i = 0; i < len; i += 3) {
		unsigned v = (unsigned)p[i] << 16;
		size_t left = len - i;

		if (left > 1)
			v |= (unsigned)p[i + 1] << 8;
		if (left > 2)
			v |= p[i + 2];
		fputc(tab[v >> 18 & 63], f);
		fputc(tab[v >> 12 & 63], f);
		fputc(left > 1 ? tab[v >> 6 & 63] : '=', f);
		fputc(left > 2 ? tab[v & 63] : '=', f);
	}
	fputc('"', f);
}

void r4cmd_json_name(const char *key, const char *s, size_t len)
{
	FILE *f = r4cmd_json_out();

	fprintf(f, "\"%s\":", key);
	r4cmd_json_str(s, len);
	if (!r4cmd_utf8_valid(s, len)) {
		fprintf(f, ",\"%s_b64\":", key);
		json_b64((const unsigned char *)s, len);
	}
}

#define JSON_SAFE_MAX (1ULL << 53)

void r4cmd_json_u64(uint64_t v)
{
	if (v <= JSON_SAFE_MAX)
		fprintf(r4cmd_json_out(), "%llu", (unsigned long long)v);
	else
		fprintf(r4cmd_json_out(), "\"%llu\"", (unsigned long long)v);
}

void r4cmd_json_i64(int64_t v)
{
	if (v <= (int64_t)JSON_SAFE_MAX && v >= -(int64_t)JSON_SAFE_MAX)
		fprintf(r4cmd_json_out(), "%lld", (long long)v);
	else
		fprintf(r4cmd_json_out(), "\"%lld\"", (long long)v);
}

static void keep_error(const char *msg, size_t len)
{
	if (len >= sizeof(last_err))
		len = sizeof(last_err) - 1;
	memcpy(last_err, msg, len);
	last_err[len] = '\0';
}

/* A line written to stderr: "prog: message" lines (not warnings) are
 * kept as the message of the JSON error object. */
static void err_line_done(void)
{
	size_t pl = strlen(r4cmd_prog);

	if (err_len > pl + 2 && !memcmp(err_line, r4cmd_prog, pl) &&
	    !memcmp(err_line + pl, ": ", 2) &&
	    strncmp(err_line + pl + 2, "warning: ", 9))
		keep_error(err_line + pl + 2, err_len - pl - 2);
	err_len = 0;
}

static ssize_t tee_write(void *cookie, const char *buf, size_t n)
{
	(void)cookie;
	fwrite(buf, 1, n, real_stderr);
	fflush(real_stderr);
	for (size_t i = 0; i < n; i++) {
		if (buf[i] == '\n')
			err_line_done();
		else if (buf[i] == '\r')
			err_len = 0;
		else if (err_len < sizeof(err_line))
			err_line[err_len++] = buf[i];
	}
	return (ssize_t)n;
}

void r4cmd_json_start(FILE *out)
{
	cookie_io_functions_t io = { NULL, tee_write, NULL, NULL };
	FILE *tee;

	r4cmd_json = 1;
	/* stdout is looked up at each write: a command may catch it. */
	json_file = out == stdout ? NULL : out;
	if (real_stderr)
		return;
	/* Every message on stderr still goes there; the last error line
	 * is also kept for the error object. */
	tee = fopencookie(NULL, "w", io);
	if (!tee)
		return;
	setvbuf(tee, NULL, _IOLBF, 0);
	fflush(stderr);
	real_stderr = stderr;
	stderr = tee;
}

void r4cmd_json_done(void)
{
	json_done = 1;
}

/* ---- the framing: one compact object a line ----------------------------
 *
 * Every top-level value any command prints under --json is one object on
 * one line, {"schema":VERSION,"program":PROG,"kind":KIND,...}; a list is
 * an array member of that object (r4cmd_json_array_begin). The schema
 * of each (program, kind) is doc/schema/PROG-KIND.schema.json. */

void r4cmd_json_begin(const char *kind, int version)
{
	FILE *f = r4cmd_json_out();

	fprintf(f, "{\"schema\":%d,\"program\":", version);
	r4cmd_json_str(r4cmd_prog, strlen(r4cmd_prog));
	fputs(",\"kind\":", f);
	r4cmd_json_str(kind, strlen(kind));
	json_open = 1;
	json_arr_open = 0;
}

void r4cmd_json_key(const char *key)
{
	fprintf(r4cmd_json_out(), ",\"%s\":", key);
}

void r4cmd_json_array_begin(const char *key)
{
	fprintf(r4cmd_json_out(), ",\"%s\":[", key);
	json_arr_open = 1;
	json_arr_items = 0;
}

void r4cmd_json_item(void)
{
	if (json_arr_items++)
		fputc(',', r4cmd_json_out());
}

void r4cmd_json_array_end(void)
{
	if (!json_arr_open)
		return;
	fputc(']', r4cmd_json_out());
	json_arr_open = 0;
}

void r4cmd_json_end(void)
{
	FILE *f = r4cmd_json_out();

	r4cmd_json_array_end();
	fputs("}\n", f);
	fflush(f);
	json_open = 0;
	json_done = 1;
}

void r4cmd_json_error_member(int code)
{
	FILE *f = r4cmd_json_out();

	fflush(stderr);
	fputs(",\"error\":{\"message\":", f);
	r4cmd_json_str(last_err[0] ? last_err : "failed",
		       strlen(last_err[0] ? last_err : "failed"));
	fprintf(f, ",\"exit\":%d}", code);
	json_done = 1;
}

/* A failure ends the object being written (its open array closed, the
 * error member added) or, when none was begun, prints an error object. */
int r4cmd_json_exit(int code)
{
	if (!r4cmd_json)
		return code;
	if (json_open) {
		r4cmd_json_array_end();
		if (code)
			r4cmd_json_error_member(code);
		r4cmd_json_end();
		return code;
	}
	if (!code || json_done)
		return code;
	r4cmd_json_begin("error", R4CMD_JSON_SCHEMA);
	r4cmd_json_error_member(code);
	r4cmd_json_end();
	return code;
}

/* ---- a sound volume ----------------------------------------------------- */

struct first_problem {
	char msg[512];
	const char *code;
};

static void first_problem(void *ctx, const struct r4_check_problem *p)
{
	struct first_problem *f = ctx;

	if (f->code)
		return;
	f->code = r4_check_code_name(p->code);
	if (p->block != R4_CHECK_NO_BLOCK)
		snprintf(f->msg, sizeof(f->msg), "block %llu: %s",
			 (unsigned long long)p->block, p->msg);
	else
		snprintf(f->msg, sizeof(f->msg), "%s", p->msg);
}

int r4cmd_sound(struct r4_vol *vol, const char *path, const char *verb,
		struct r4_error *err)
{
	struct first_problem f = { "", NULL };
	struct r4_check_opts co;
	struct r4_check_report cr;
	int rc;

	memset(&co, 0, sizeof(co));
	co.problem = first_problem;
	co.problem_ctx = &f;
	co.max_reports = 1;
	rc = r4_check(vol, &co, &cr, err);
	if (rc)
		return rc;
	if (!cr.problems)
		return 0;
	err->code = R4_ECORRUPT;
	if (snprintf(err->msg, sizeof(err->msg), "%s: %llu problem%s found "
		     "(the first, %s: %s): the volume is not %s; run r4fsck "
		     "on it first", path, (unsigned long long)cr.problems,
		     cr.problems == 1 ? "" : "s", f.code ? f.code : "?",
		     f.msg, verb) >= (int)sizeof(err->msg))
		memcpy(err->msg + sizeof(err->msg) - 4, "...", 4);
	return R4_ECORRUPT;
}
