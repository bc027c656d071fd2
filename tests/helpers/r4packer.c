/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4packer: a test driver of the one-pass builder (include/r4/pack.h).
 *
 *   r4packer [-s] [-o TYPE=PLUGIN]... [-S SIZE] [-U UUID] [-L LABEL]
 *           [-F FREE%] IMAGE SRCDIR
 *
 * Walks SRCDIR (names in byte order, depth first), adds every entry and
 * builds IMAGE. File data is read at finish time through a data source
 * that opens the host files (holes found with SEEK_DATA/SEEK_HOLE), or
 * with -s streamed during the add, as an archive reader would. Hard
 * links inside SRCDIR become hard links. Prints one summary line. */
#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <uuid/uuid.h>
#include "r4/pack.h"
#include "cmd/common/common.h"

#define CHUNK 65536

struct hostfile {
	int fd;
	uint64_t off, size;
	uint8_t buf[CHUNK];
};

struct seen {
	dev_t dev;
	ino_t ino;
	char *path;
};

static const char *src_root;
static int stream;
static struct seen *seen;
static size_t nseen, capseen;

static int host_fn(void *ctx, uint64_t *off, const void **buf, size_t *len,
		   struct r4_error *err)
{
	struct hostfile *h = ctx;
	off_t data, hole;
	ssize_t n;

	(void)err;
	if (h->off >= h->size)
		return 0;
	data = lseek(h->fd, (off_t)h->off, SEEK_DATA);
	if (data < 0)
		return errno == ENXIO ? 0 : -errno;
	hole = lseek(h->fd, data, SEEK_HOLE);
	if (hole < 0)
		return -errno;
	if ((uint64_t)hole > h->size)
		hole = (off_t)h->size;
	n = hole - data > CHUNK ? CHUNK : hole - data;
	n = pread(h->fd, h->buf, (size_t)n, data);
	if (n <= 0)
		return n < 0 ? -errno : 0;
	*off = (uint64_t)data;
	*buf = h->buf;
	*len = (size_t)n;
	h->off = (uint64_t)data + (uint64_t)n;
	return 1;
}

static int host_open_path(const char *full, r4_data_fn *fn, void **ctx)
{
	struct hostfile *h = malloc(sizeof(*h));
	struct stat st;

	if (!h)
		return -ENOMEM;
	h->fd = open(full, O_RDONLY);
	if (h->fd < 0 || fstat(h->fd, &st)) {
		int e = -errno;

		if (h->fd >= 0)
			close(h->fd);
		free(h);
		return e;
	}
	h->off = 0;
	h->size = (uint64_t)st.st_size;
	*fn = host_fn;
	*ctx = h;
	return 0;
}

static int host_open(void *src_ctx, const char *path, r4_data_fn *fn,
		     void **ctx, struct r4_error *err)
{
	char full[8192];

	(void)src_ctx;
	(void)err;
	snprintf(full, sizeof(full), "%s/%s", src_root, path);
	return host_open_path(full, fn, ctx);
}

static void host_close(void *ctx)
{
	struct hostfile *h = ctx;

	if (h) {
		close(h->fd);
		free(h);
	}
}

static const char *hardlink_of(const struct stat *st, const char *rel)
{
	if (S_ISDIR(st->st_mode) || st->st_nlink < 2)
		return NULL;
	for (size_t i = 0; i < nseen; i++)
		if (seen[i].dev == st->st_dev && seen[i].ino == st->st_ino)
			return seen[i].path;
	if (nseen == capseen) {
		capseen = capseen ? capseen * 2 : 64;
		seen = realloc(seen, capseen * sizeof(*seen));
	}
	seen[nseen].dev = st->st_dev;
	seen[nseen].ino = st->st_ino;
	seen[nseen++].path = strdup(rel);
	return NULL;
}

static void fill_entry(struct r4_entry *e, const struct stat *st)
{
	e->mode = st->st_mode & 07777;
	e->uid = st->st_uid;
	e->gid = st->st_gid;
	e->atime = st->st_atim.tv_sec;
	e->mtime = st->st_mtim.tv_sec;
	e->ctime = st->st_ctim.tv_sec;
	e->atime_ns = (uint32_t)st->st_atim.tv_nsec;
	e->mtime_ns = (uint32_t)st->st_mtim.tv_nsec;
	e->ctime_ns = (uint32_t)st->st_ctim.tv_nsec;
	e->rdev_major = major(st->st_rdev);
	e->rdev_minor = minor(st->st_rdev);
	if (S_ISDIR(st->st_mode))
		e->type = R4_ENT_DIR;
	else if (S_ISLNK(st->st_mode))
		e->type = R4_ENT_SYMLINK;
	else if (S_ISCHR(st->st_mode))
		e->type = R4_ENT_CHR;
	else if (S_ISBLK(st->st_mode))
		e->type = R4_ENT_BLK;
	else if (S_ISFIFO(st->st_mode))
		e->type = R4_ENT_FIFO;
	else if (S_ISSOCK(st->st_mode))
		e->type = R4_ENT_SOCK;
	else
		e->type = R4_ENT_REG;
	e->size = e->type == R4_ENT_REG ? (uint64_t)st->st_size : 0;
}

static int add_one(struct r4_pack *b, const char *full, const char *rel,
		   const struct stat *st, struct r4_error *err)
{
	struct r4_entry e = { .path = rel };
	char target[8192];
	void *ctx = NULL;
	int rc;

	fill_entry(&e, st);
	e.target = hardlink_of(st, rel);
	if (e.target) {
		e.type = R4_ENT_HARDLINK;
	} else if (e.type == R4_ENT_SYMLINK) {
		ssize_t n = readlink(full, target, sizeof(target) - 1);

		if (n < 0)
			return -errno;
		target[n] = '\0';
		e.target = target;
	} else if (e.type == R4_ENT_REG && stream) {
		rc = host_open_path(full, &e.data, &ctx);
		if (rc)
			return rc;
		e.data_ctx = ctx;
	}
	rc = r4_pack_add(b, &e, err);
	host_close(ctx);
	return rc;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int walk(struct r4_pack *b, const char *full, const char *rel,
		struct r4_error *err)
{
	DIR *d = opendir(full);
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			names = realloc(names, cap * sizeof(*names));
		}
		names[n++] = strdup(de->d_name);
	}
	closedir(d);
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		char *f = malloc(strlen(full) + strlen(names[i]) + 2);
		char *r = malloc(strlen(rel) + strlen(names[i]) + 2);
		struct stat st;

		sprintf(f, "%s/%s", full, names[i]);
		sprintf(r, "%s%s%s", rel, *rel ? "/" : "", names[i]);
		if (!rc && lstat(f, &st))
			rc = -errno;
		if (!rc)
			rc = add_one(b, f, r, &st, err);
		if (!rc && S_ISDIR(st.st_mode))
			rc = walk(b, f, r, err);
		free(f);
		free(r);
		free(names[i]);
	}
	free(names);
	return rc;
}

static int parse(int argc, char **argv, struct r4_pack_opts *o)
{
	struct r4_error err = { 0 };
	int c;

	while ((c = getopt(argc, argv, "so:S:U:L:F:")) != -1) {
		switch (c) {
		case 's': stream = 1; break;
		case 'o':
			if (r4_mkfs_override(&o->mkfs, optarg, &err)) {
				fprintf(stderr, "r4packer: %s\n", err.msg);
				return -1;
			}
			break;
		case 'S':
			if (r4cmd_parse_size(optarg, &o->mkfs.size_bytes))
				return -1;
			o->auto_size = 0;
			break;
		case 'U':
			if (uuid_parse(optarg, o->mkfs.uuid))
				return -1;
			o->mkfs.have_uuid = 1;
			break;
		case 'L':
			snprintf(o->mkfs.label, sizeof(o->mkfs.label), "%s",
				 optarg);
			break;
		case 'F': o->free_percent = (unsigned)atoi(optarg); break;
		default: return -1;
		}
	}
	return argc - optind == 2 ? 0 : -1;
}

int main(int argc, char **argv)
{
	static const struct r4_data_source src = { host_open, host_close,
						   NULL, 1 };
	struct r4_pack_opts o;
	struct r4_pack_result res;
	struct r4_error err = { 0 };
	struct r4_pack *b;
	struct r4_entry root = { .path = "", .type = R4_ENT_DIR };
	struct stat st;
	int rc;

	r4_pack_opts_init(&o);
	r4cmd_env_pack(&o);
	o.source = &src;
	if (parse(argc, argv, &o)) {
		fprintf(stderr, "usage: r4packer [-s] [-o TYPE=PLUGIN]... "
			"[-S SIZE] [-U UUID] [-L LABEL] [-F FREE%%] IMAGE "
			"SRCDIR\n");
		return 2;
	}
	src_root = argv[optind + 1];
	if (stat(src_root, &st)) {
		perror(src_root);
		return 2;
	}
	if (r4_pack_begin(argv[optind], &o, &b, &err)) {
		fprintf(stderr, "r4packer: %s\n", err.msg);
		return 1;
	}
	fill_entry(&root, &st);
	root.path = "";
	rc = r4_pack_add(b, &root, &err);
	if (!rc)
		rc = walk(b, src_root, "", &err);
	if (rc) {
		fprintf(stderr, "r4packer: %s\n", err.msg[0] ? err.msg :
			strerror(-rc));
		r4_pack_abort(b);
		return 1;
	}
	if (r4_pack_finish(b, &res, &err)) {
		fprintf(stderr, "r4packer: %s\n", err.msg);
		return 1;
	}
	printf("blocks %" PRIu64 " free %" PRIu64 " files %" PRIu64 " dirs %"
	       PRIu64 " bytes %" PRIu64 " nodes %" PRIu64 " leaves %" PRIu64
	       " twigs %" PRIu64 " data %" PRIu64 "\n", res.block_count,
	       res.free_blocks, res.files, res.dirs, res.bytes, res.nodes,
	       res.leaves, res.twigs, res.data_blocks);
	return 0;
}
