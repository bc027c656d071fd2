/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4debugfs: the command table, splitting lines and dispatching them,
 * and the small parsers every command shares. */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <popt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../common/common.h"
#include "debugfs.h"

static int cmd_help(struct dbg *d, int argc, const char **argv);
static int cmd_print(struct dbg *d, int argc, const char **argv);

const struct dbg_cmd dbg_cmds[] = {
	{ "help", cmd_help, "help", "list the commands" },
	{ "print", cmd_print, "print super|node BLOCK|tree|journal|"
	  "bitmap [REGION]|file PATH", "print raw structures (see below)" },
	{ "ls", dbg_ls, "ls [-l] PATH", "list a directory (-l: long)" },
	{ "stat", dbg_stat, "stat PATH", "show an object's stat data" },
	{ "cat", dbg_cat, "cat PATH", "write a file's bytes to stdout" },
	{ "dump", dbg_dump, "dump PATH HOSTFILE",
	  "copy a file out to a new host file" },
	{ "rdump", dbg_rdump, "rdump [--manifest] PATH HOSTDIR",
	  "copy a tree out under an existing host directory" },
	{ "blocks", dbg_blocks, "blocks PATH",
	  "list the data blocks of a file" },
	{ "icheck", dbg_icheck, "icheck BLOCK...",
	  "which object owns each block" },
	{ "ncheck", dbg_ncheck, "ncheck OID...",
	  "the paths of each object id" },
	{ "lsdel", dbg_lsdel, "lsdel",
	  "list deleted objects that survive in free blocks" },
	{ "undel", dbg_undel, "undel OID HOSTFILE | undel --all DIR",
	  "write what survives of a deleted object to a host file" },
	{ "bodyfile", dbg_bodyfile, "bodyfile [PATH]",
	  "TSK 3 body file of every object (deleted ones too) for mactime" },
	{ "dumpblock", dbg_dumpblock, "dumpblock BLOCK [HOSTFILE]",
	  "raw bytes of a block to stdout or a host file" },
	{ "hash", dbg_hash, "hash PATH",
	  "sha256 of every regular file under PATH" },
	/* -w: these change the volume */
	{ "mkdir", dbg_mkdir, "mkdir PATH", "-w: make a directory" },
	{ "write", dbg_write, "write HOSTFILE PATH",
	  "-w: copy a host file in (replaces PATH)" },
	{ "rm", dbg_rm, "rm [-r] PATH",
	  "-w: remove a name (-r: a directory and all below)" },
	{ "rmdir", dbg_rmdir, "rmdir PATH",
	  "-w: remove an empty directory" },
	{ "mv", dbg_mv, "mv FROM TO", "-w: rename, as rename(2)" },
	{ "ln", dbg_ln, "ln [-s] TARGET PATH",
	  "-w: hard link (-s: symbolic link)" },
	{ "mknod", dbg_mknod, "mknod PATH p|s|c|b [MAJOR MINOR]",
	  "-w: make a fifo, socket or device" },
	{ "chmod", dbg_chmod, "chmod MODE PATH",
	  "-w: set the permission bits (octal)" },
	{ "chown", dbg_chown, "chown UID[:GID] PATH",
	  "-w: set the owner (and group)" },
	{ "touch", dbg_touch, "touch [-d TIME] PATH",
	  "-w: set atime and mtime, or make an empty file" },
	{ "truncate", dbg_truncate, "truncate SIZE PATH",
	  "-w: change a file's size" },
	{ NULL, NULL, NULL, NULL }
};

static const struct dbg_cmd print_cmds[] = {
	{ "super", dbg_print_super, "print super",
	  "master, format40 and status blocks, journal, backups" },
	{ "node", dbg_print_node, "print node BLOCK",
	  "a formatted node: header and every item" },
	{ "tree", dbg_print_tree, "print tree",
	  "every node from the root, parents first" },
	{ "journal", dbg_print_journal, "print journal",
	  "journal header, footer and uncommitted transactions" },
	{ "bitmap", dbg_print_bitmap, "print bitmap [REGION]",
	  "used/free counts and used ranges per bitmap region" },
	{ "file", dbg_print_file, "print file PATH",
	  "the items and blocks of an object" },
	{ NULL, NULL, NULL, NULL }
};

static const struct dbg_cmd *find(const struct dbg_cmd *t, const char *name)
{
	for (; t->name; t++)
		if (!strcmp(t->name, name))
			return t;
	return NULL;
}

int dbg_usage(const char *name)
{
	const struct dbg_cmd *c = find(dbg_cmds, name);

	if (!c)
		c = find(print_cmds, name);
	fprintf(stderr, "%s: usage: %s\n", r4cmd_prog, c ? c->usage : name);
	return DBG_USAGE;
}

static int cmd_help(struct dbg *d, int argc, const char **argv)
{
	(void)d;
	(void)argc;
	(void)argv;
	printf("Commands (those marked -w change the volume):\n");
	for (const struct dbg_cmd *c = dbg_cmds; c->name; c++)
		if (c->fn != cmd_print)
			printf("  %-28s %s\n", c->usage, c->help);
	for (const struct dbg_cmd *c = print_cmds; c->name; c++)
		printf("  %-28s %s\n", c->usage, c->help);
	printf("  %-28s %s\n", "quit", "leave (interactive and -f)");
	return DBG_OK;
}

static int cmd_print(struct dbg *d, int argc, const char **argv)
{
	const struct dbg_cmd *c;

	if (argc < 2)
		return dbg_usage("print");
	c = find(print_cmds, argv[1]);
	if (!c) {
		fprintf(stderr, "%s: print: unknown structure '%s' (super, "
			"node, tree, journal, bitmap, file)\n", r4cmd_prog,
			argv[1]);
		return DBG_USAGE;
	}
	return c->fn(d, argc - 1, argv + 1);
}

/* --json: one object a line per command (the framing of
 * cmd/common/common.c), {"schema":N,"program":"r4debugfs","kind":KIND,
 * "command":LINE,...}. A failed command prints an object of kind
 * "error" naming the command. */
static void json_head(const char *kind, const char *line)
{
	r4cmd_json_begin(kind, R4CMD_JSON_SCHEMA);
	r4cmd_json_key("command");
	r4cmd_json_str(line, strlen(line));
}

static void json_error(const char *line)
{
	json_head("error", line);
	r4cmd_json_error_member(1);
	r4cmd_json_end();
}

/* Commands whose output is JSON of their own: an object, whose members
 * join the line's object, or (key set) an array, which becomes its
 * member "key". Kind "super" is print super, "undel-all" undel
 * --all. The others print text,
 * which --json carries as kind "text": "lines":[...]. */
static const struct native {
	const char *name, *key;
} natives[] = {
	{ "ls", "entries" }, { "stat", NULL }, { "blocks", NULL },
	{ "icheck", "blocks" }, { "ncheck", "objects" },
	{ "lsdel", "deleted" }, { "undel", NULL }, { "hash", "files" },
	{ "dumpblock", NULL }, { NULL, NULL }
};

static const struct native *native_json(const struct dbg_cmd *c, int argc,
					const char **argv)
{
	static const struct native super = { "super", NULL },
				   undel_all = { "undel-all", NULL };

	if (c->fn == cmd_print)
		return argc > 1 && !strcmp(argv[1], "super") ? &super : NULL;
	if (!strcmp(c->name, "undel") && argc > 1 &&
	    !strcmp(argv[1], "--all"))
		return &undel_all;
	for (int i = 0; natives[i].name; i++)
		if (!strcmp(c->name, natives[i].name))
			return &natives[i];
	return NULL;
}

/* Run c with its standard output caught: a failure drops what it
 * printed (the error object replaces it), text becomes lines. */
static int run_json(struct dbg *d, const struct dbg_cmd *c, int argc,
		    const char **argv, const char *line)
{
	FILE *saved = stdout, *mem;
	const struct native *nat;
	char *buf = NULL;
	size_t len = 0, jlen;
	int rc;

	fflush(stdout);
	mem = open_memstream(&buf, &len);
	if (!mem)
		return c->fn(d, argc, argv);
	stdout = mem;
	rc = c->fn(d, argc, argv);
	fclose(mem);
	stdout = saved;
	nat = native_json(c, argc, argv);
	jlen = len;
	while (jlen && (buf[jlen - 1] == '\n' || buf[jlen - 1] == ' '))
		jlen--;
	if (rc == DBG_OK && nat && jlen &&
	    (buf[0] == '{' || buf[0] == '[')) {
		json_head(nat->name, line);
		if (nat->key) {		/* [...] */
			r4cmd_json_key(nat->key);
			fwrite(buf, 1, jlen, stdout);
		} else if (jlen > 2) {	/* {...}: its members */
			putchar(',');
			fwrite(buf + 1, 1, jlen - 2, stdout);
		}
		r4cmd_json_end();
	} else if (rc == DBG_OK && len) {
		json_head("text", line);
		r4cmd_json_array_begin("lines");
		for (size_t i = 0; i < len;) {
			const char *nl = memchr(buf + i, '\n', len - i);
			size_t end = nl ? (size_t)(nl - buf) : len;

			r4cmd_json_item();
			/* a line that is not UTF-8 (a name in it): {"line":
			 * lossy, "line_b64": its bytes} in the array's place,
			 * as the paths of icheck and ncheck */
			if (r4cmd_utf8_valid(buf + i, end - i)) {
				r4cmd_json_str(buf + i, end - i);
			} else {
				putchar('{');
				r4cmd_json_name("line", buf + i, end - i);
				putchar('}');
			}
			i = end + 1;
		}
		r4cmd_json_end();
	}
	free(buf);
	return rc;
}

int dbg_run_line(struct dbg *d, const char *line)
{
	const struct dbg_cmd *c;
	const char **argv = NULL;
	int argc = 0, rc;

	rc = poptParseArgvString(line, &argc, &argv);
	if (rc == POPT_ERROR_NOARG)
		return DBG_OK;
	if (rc < 0) {
		fprintf(stderr, "%s: cannot split '%s': %s\n", r4cmd_prog,
			line, poptStrerror(rc));
		return DBG_USAGE;
	}
	c = find(dbg_cmds, argv[0]);
	if (!c) {
		fprintf(stderr, "%s: unknown command '%s' (try 'help')\n",
			r4cmd_prog, argv[0]);
		rc = DBG_USAGE;
	} else if (d->json && c->fn != dbg_cat) {
		rc = run_json(d, c, argc, argv, line);
	} else {
		rc = c->fn(d, argc, argv);
	}
	if (rc != DBG_OK && d->json)
		json_error(line);
	fflush(stdout);
	free(argv);
	return rc;
}

int dbg_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

int dbg_parse_block(struct dbg *d, const char *s, uint64_t *blk)
{
	if (dbg_parse_u64(s, blk)) {
		fprintf(stderr, "%s: '%s' is not a block number\n",
			r4cmd_prog, s);
		return -1;
	}
	if (*blk >= d->si.block_count) {
		fprintf(stderr, "%s: block %" PRIu64 " is outside the volume "
			"(%" PRIu64 " blocks)\n", r4cmd_prog, *blk,
			d->si.block_count);
		return -1;
	}
	return 0;
}

int dbg_read(struct dbg *d, uint64_t blk)
{
	struct r4_error err = { 0 };

	if (r4_vol_read_block(d->vol, blk, d->buf, &err)) {
		if (err.msg[0])
			fprintf(stderr, "%s: block %" PRIu64 ": %s\n",
				r4cmd_prog, blk, err.msg);
		else
			fprintf(stderr, "%s: block %" PRIu64 ": cannot read: "
				"%s\n", r4cmd_prog, blk,
				r4_strerror(err.code));
		return DBG_FAIL;
	}
	return DBG_OK;
}
