/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * r4ref -- test oracle built on Debian's libreiser4 1.2.2.
 *
 * TEST-ONLY.  Never linked into an r4kit tool.  The tests use it to write
 * reference volumes with the reiser4progs library and to read volumes back
 * independently of r4kit's own code.  See tests/helpers/README.md.
 *
 *   r4ref mkfs [-o TYPE=PLUGIN]... [-L label] [-U uuid] [-I mkfs_id]
 *              IMAGE SRCDIR
 *   r4ref populate IMAGE SRCDIR
 *   r4ref manifest [-n] IMAGE
 *   r4ref manifest-dir DIR
 *   r4ref cat IMAGE PATH
 *
 * Build: gcc -std=gnu11 -O1 -g -Wall -Wextra -o r4ref r4ref.c \
 *            -lreiser4 -laal -luuid
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* tdestroy */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <search.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include <reiser4/libreiser4.h>

#define R4REF_BLKSIZE   4096u
#define R4REF_IOBUF     (64u * 1024u)
#define R4REF_MAXDEPTH  1024
#define R4REF_LINKMAX   8192

/* Kernel-internal dev_t encoding, which the reiser4 kernel module stores
 * raw in the unix stat-data extension (MKDEV of include/linux/kdev_t.h). */
#define KDEV_MINORBITS  20u
#define KDEV_MINORMASK  ((1u << KDEV_MINORBITS) - 1u)

/* extent40 unit: start u64 LE, width u64 LE; start 1 = unallocated. */
#define EXTENT40_UNIT_SIZE   16u
#define EXTENT40_UNALLOC     1u

#define FNV64_BASIS 0xcbf29ce484222325ull
#define FNV64_PRIME 0x100000001b3ull

static const char *prog = "r4ref";

/* ---- small helpers ------------------------------------------------- */

static void __attribute__((format(printf, 1, 2), noreturn))
die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory");
	return p;
}

static void *xmalloc(size_t n)
{
	return xrealloc(NULL, n);
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(xmalloc(n), s, n);
}

static char *path_join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *p = xmalloc(a + b + 2);

	memcpy(p, dir, a);
	if (a == 0 || dir[a - 1] != '/')
		p[a++] = '/';
	memcpy(p + a, name, b + 1);
	return p;
}

static uint64_t fnv1a_update(uint64_t h, const void *buf, size_t n)
{
	const unsigned char *p = buf;

	while (n--) {
		h ^= *p++;
		h *= FNV64_PRIME;
	}
	return h;
}

/* Print bytes; \t, \n, \\ and other control bytes become \xHH. */
static void put_escaped(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0x7f || c == '\\')
			printf("\\x%02x", c);
		else
			putchar(c);
	}
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names of a host directory except "." and "..", sorted bytewise. */
static char **host_names(const char *dir, size_t *np)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **v = NULL;
	size_t n = 0, cap = 0;

	if (!d)
		return NULL;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			v = xrealloc(v, cap * sizeof(*v));
		}
		v[n++] = xstrdup(de->d_name);
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), name_cmp);
	*np = n;
	return v ? v : xmalloc(1);
}

/* libaal reports through exceptions: print them on stderr and answer the
 * first option offered (the same as the progs' non-interactive default). */
static aal_exception_option_t on_exception(aal_exception_t *ex)
{
	static const char *const names[] = {
		"?", "info", "message", "warning", "error", "fatal", "bug"
	};
	aal_exception_type_t type = aal_exception_type(ex);
	aal_exception_option_t opts = aal_exception_option(ex);
	int bit;

	fprintf(stderr, "%s: libreiser4 %s: %s\n", prog,
		(unsigned)type < EXCEPTION_TYPE_LAST ? names[type] : "?",
		aal_exception_message(ex));
	for (bit = 1; bit < EXCEPTION_OPT_LAST; bit <<= 1)
		if (opts & bit)
			return (aal_exception_option_t)bit;
	return EXCEPTION_OPT_UNHANDLED;
}

static void lib_init(void)
{
	aal_exception_set_handler(on_exception);
	if (libreiser4_init())
		die("cannot initialise libreiser4");
}

/* ---- opening and closing volumes ----------------------------------- */

static aal_device_t *dev_open(const char *image, int flags)
{
	aal_device_t *dev;

	dev = aal_device_open(&file_ops, (char *)image, 512, flags);
	if (!dev)
		die("cannot open %s: %s", image, strerror(errno));
	return dev;
}

/* Read-write open the way the progs' demos do it: full checks, replay
 * the journal, then work without it. */
static reiser4_fs_t *fs_open_rw(const char *image)
{
	aal_device_t *dev = dev_open(image, O_RDWR);
	reiser4_fs_t *fs;

	fs = reiser4_fs_open(dev, 1);
	if (!fs)
		die("%s: libreiser4 cannot open the volume", image);
	fs->journal = reiser4_journal_open(fs, dev);
	if (!fs->journal)
		die("%s: cannot open the journal", image);
	if (reiser4_journal_replay(fs->journal))
		die("%s: journal replay failed", image);
	reiser4_journal_close(fs->journal);
	fs->journal = NULL;
	return fs;
}

/* Read-only open.  @check runs libreiser4's master/format/bitmap/oid/
 * backup checks; without it only the tree and the root pset are set up.
 * The journal is not replayed (that would need a write). */
static reiser4_fs_t *fs_open_ro(const char *image, int check)
{
	aal_device_t *dev = dev_open(image, O_RDONLY);
	reiser4_fs_t *fs;

	fs = reiser4_fs_open(dev, check ? 1 : 0);
	if (!fs)
		die("%s: libreiser4 cannot open the volume%s", image,
		    check ? " (try -n)" : "");
	if (!check && reiser4_pset_tree(fs->tree, 0))
		die("%s: cannot set up the root plugin set", image);
	return fs;
}

static void fs_close_all(reiser4_fs_t *fs)
{
	aal_device_t *dev = fs->device;
	int rw = !aal_device_readonly(dev);

	if (rw && reiser4_fs_sync(fs))
		die("syncing the volume failed");
	reiser4_fs_close(fs);
	if (rw && aal_device_sync(dev))
		die("cannot sync the device");
	aal_device_close(dev);
}

static reiser4_object_t *open_root(reiser4_fs_t *fs)
{
	reiser4_object_t *root;

	root = reiser4_object_obtain(fs->tree, NULL, &fs->tree->key);
	if (!root)
		die("cannot open the root directory");
	return root;
}

/* ---- objects: stat data and content ------------------------------- */

struct r4stat {
	sdhint_lw_t lw;
	sdhint_unix_t ux;
	char link[R4REF_LINKMAX + 1];
};

static int obj_stat(reiser4_object_t *obj, struct r4stat *st)
{
	stat_hint_t sh;

	memset(st, 0, sizeof(*st));
	memset(&sh, 0, sizeof(sh));
	sh.ext[SDEXT_LW_ID] = &st->lw;
	sh.ext[SDEXT_UNIX_ID] = &st->ux;
	sh.ext[SDEXT_SYMLINK_ID] = st->link;
	return reiser4_object_stat(obj, &sh) ? -1 : 0;
}

static uint32_t kdev_encode(dev_t d)
{
	return (uint32_t)(major(d) << KDEV_MINORBITS) |
	       (uint32_t)(minor(d) & KDEV_MINORMASK);
}

/* Overwrite mode (type + permission bits), uid, gid, atime, mtime, ctime
 * and, for devices, rdev in the stat data.  libreiser4 has no object call
 * for this, so the stat40 item's update_units method is driven directly
 * (what obj40_save_stat does inside the library); nlink/size/bytes are
 * read first and written back unchanged. */
static int obj_set_attrs(reiser4_object_t *obj, const struct stat *hs)
{
	reiser4_place_t *place = &obj->info.start;
	sdhint_lw_t lw;
	sdhint_unix_t ux;
	stat_hint_t sh;
	trans_hint_t th;

	if (reiser4_object_refresh(obj))
		return -1;
	memset(&sh, 0, sizeof(sh));
	sh.ext[SDEXT_LW_ID] = &lw;
	sh.ext[SDEXT_UNIX_ID] = &ux;
	if (reiser4_object_stat(obj, &sh))
		return -1;
	lw.mode = (uint16_t)hs->st_mode;
	ux.uid = hs->st_uid;
	ux.gid = hs->st_gid;
	ux.atime = (uint32_t)hs->st_atime;
	ux.mtime = (uint32_t)hs->st_mtime;
	ux.ctime = (uint32_t)hs->st_ctime;
	if (S_ISCHR(hs->st_mode) || S_ISBLK(hs->st_mode)) {
		ux.rdev = kdev_encode(hs->st_rdev);
		ux.bytes = 0;
	}
	memset(&sh, 0, sizeof(sh));
	sh.extmask = (1ull << SDEXT_LW_ID) | (1ull << SDEXT_UNIX_ID);
	sh.ext[SDEXT_LW_ID] = &lw;
	sh.ext[SDEXT_UNIX_ID] = &ux;
	memset(&th, 0, sizeof(th));
	th.specific = &sh;
	th.shift_flags = SF_DEFAULT;
	return place->plug->object->update_units(place, &th) == 1 ? 0 : -1;
}

/* Counts extent40 units whose start is 1 ("unallocated": reserved in
 * memory, never placed).  libreiser4 1.2.2 writes only such units, and
 * reads them back as zeros without any error, so they are reported. */
static errno_t cb_unalloc(reiser4_place_t *place, void *data)
{
	const unsigned char *p = place->body;
	uint32_t i;
	int b;

	if (place->plug->p.id.type != ITEM_PLUG_TYPE ||
	    place->plug->p.id.id != ITEM_EXTENT40_ID)
		return 0;
	for (i = 0; i + EXTENT40_UNIT_SIZE <= place->len;
	     i += EXTENT40_UNIT_SIZE) {
		uint64_t start = 0;

		for (b = 7; b >= 0; b--)
			start = (start << 8) | p[i + (uint32_t)b];
		if (start == EXTENT40_UNALLOC)
			(*(unsigned long *)data)++;
	}
	return 0;
}

struct readres {
	uint64_t hash, total;
	unsigned long unalloc;
	int failed;
};

/* Read a regular file from offset 0 to the end, hashing it and copying
 * it to @out when not NULL. */
static void obj_read_all(reiser4_object_t *obj, FILE *out, char *buf,
			 struct readres *rr)
{
	int64_t n;

	memset(rr, 0, sizeof(*rr));
	rr->hash = FNV64_BASIS;
	if (reiser4_object_metadata(obj, cb_unalloc, &rr->unalloc))
		rr->failed = 1;
	reiser4_object_reset(obj);
	while ((n = reiser4_object_read(obj, buf, R4REF_IOBUF)) > 0) {
		rr->hash = fnv1a_update(rr->hash, buf, (size_t)n);
		rr->total += (uint64_t)n;
		if (out && fwrite(buf, 1, (size_t)n, out) != (size_t)n)
			die("write error");
	}
	if (n < 0)
		rr->failed = 1;
}

/* ---- populate: copy a host tree into the volume -------------------- */

struct hl_node {
	dev_t dev;
	ino_t ino;
	reiser4_key_t key;
};

struct populate {
	reiser4_fs_t *fs;
	void *links;            /* tsearch tree of struct hl_node */
	unsigned long objects, errors;
	char *buf;
};

static int hl_cmp(const void *a, const void *b)
{
	const struct hl_node *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return 0;
}

static void pop_err(struct populate *pp, const char *path, const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, path, what);
	pp->errors++;
}

static int copy_content(struct populate *pp, reiser4_object_t *obj,
			const char *hpath)
{
	int fd = open(hpath, O_RDONLY);
	ssize_t n;

	if (fd < 0) {
		pop_err(pp, hpath, strerror(errno));
		return -1;
	}
	while ((n = read(fd, pp->buf, R4REF_IOBUF)) > 0) {
		if (reiser4_object_write(obj, pp->buf, (uint64_t)n) != n) {
			close(fd);
			pop_err(pp, hpath, "libreiser4 write failed");
			return -1;
		}
	}
	if (n < 0)
		pop_err(pp, hpath, strerror(errno));
	close(fd);
	return n < 0 ? -1 : 0;
}

/* Add one more name for an object created earlier (what demos/ln.c does:
 * prepare the entry in the parent, then link = add entry + nlink++). */
static int add_hard_link(struct populate *pp, reiser4_object_t *dir,
			 const char *name, const struct hl_node *hl,
			 const char *hpath)
{
	entry_hint_t *entry = xmalloc(sizeof(*entry));
	reiser4_key_t key = hl->key;
	reiser4_object_t *obj;
	int rc = -1;

	obj = reiser4_object_obtain(pp->fs->tree, dir, &key);
	if (!obj) {
		pop_err(pp, hpath, "cannot reopen hard-link target");
	} else {
		if (reiser4_object_entry_prep(pp->fs->tree, dir, entry, name) ||
		    reiser4_object_link(dir, obj, entry))
			pop_err(pp, hpath, "libreiser4 cannot add the link");
		else
			rc = 0;
		reiser4_object_close(obj);
	}
	free(entry);
	return rc;
}

static reiser4_object_t *create_one(reiser4_object_t *dir, const char *name,
				    const char *hpath, const struct stat *st)
{
	char target[R4REF_LINKMAX + 1];
	ssize_t n;

	switch (st->st_mode & S_IFMT) {
	case S_IFREG:
		/* R4REF_CCREG=1: compressed (ccreg40) files, as libreiser4
		 * writes them (raw clusters) */
		if (getenv("R4REF_CCREG"))
			return reiser4_ccreg_create(dir, name, NULL);
		return reiser4_reg_create(dir, name);
	case S_IFDIR:
		return reiser4_dir_create(dir, name);
	case S_IFLNK:
		n = readlink(hpath, target, sizeof(target) - 1);
		if (n < 0)
			return NULL;
		target[n] = '\0';
		return reiser4_sym_create(dir, name, target);
	case S_IFCHR:
	case S_IFBLK:
		return reiser4_spl_create(dir, name, st->st_mode & S_IFMT,
					  kdev_encode(st->st_rdev));
	case S_IFIFO:
	case S_IFSOCK:
		return reiser4_spl_create(dir, name, st->st_mode & S_IFMT, 0);
	default:
		return NULL;
	}
}

static int copy_tree(struct populate *pp, reiser4_object_t *dir,
		     const char *hdir, int depth);

/* Create one host entry; directories recurse before their own stat data
 * is written, so adding entries cannot disturb it afterwards. */
static int copy_entry(struct populate *pp, reiser4_object_t *dir,
		      const char *hdir, const char *name, int depth)
{
	char *hpath = path_join(hdir, name);
	struct hl_node probe, *hl, **slot;
	reiser4_object_t *obj;
	struct stat st;
	int rc = -1;

	if (lstat(hpath, &st)) {
		pop_err(pp, hpath, strerror(errno));
		goto out;
	}
	probe.dev = st.st_dev;
	probe.ino = st.st_ino;
	slot = NULL;
	if (!S_ISDIR(st.st_mode) && st.st_nlink > 1)
		slot = tfind(&probe, &pp->links, hl_cmp);
	if (slot) {
		rc = add_hard_link(pp, dir, name, *slot, hpath);
		goto out;
	}
	obj = create_one(dir, name, hpath, &st);
	if (!obj) {
		pop_err(pp, hpath, "libreiser4 cannot create the object");
		goto out;
	}
	pp->objects++;
	rc = 0;
	if (S_ISREG(st.st_mode))
		rc = copy_content(pp, obj, hpath);
	else if (S_ISDIR(st.st_mode))
		rc = copy_tree(pp, obj, hpath, depth + 1);
	if (obj_set_attrs(obj, &st)) {
		pop_err(pp, hpath, "cannot update the stat data");
		rc = -1;
	}
	if (!S_ISDIR(st.st_mode) && st.st_nlink > 1) {
		hl = xmalloc(sizeof(*hl));
		*hl = probe;
		hl->key = obj->info.object;
		if (!tsearch(hl, &pp->links, hl_cmp))
			die("out of memory");
	}
	reiser4_object_close(obj);
out:
	free(hpath);
	return rc;
}

/* Entries are created in byte order of their names (deterministic). */
static int copy_tree(struct populate *pp, reiser4_object_t *dir,
		     const char *hdir, int depth)
{
	char **names;
	size_t n, i;
	int rc = 0;

	if (depth > R4REF_MAXDEPTH) {
		pop_err(pp, hdir, "tree too deep");
		return -1;
	}
	names = host_names(hdir, &n);
	if (!names) {
		pop_err(pp, hdir, strerror(errno));
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (strlen(names[i]) > 255) {
			pop_err(pp, names[i], "name longer than 255 bytes");
			rc = -1;
		} else if (copy_entry(pp, dir, hdir, names[i], depth)) {
			rc = -1;
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

static int populate_root(reiser4_fs_t *fs, reiser4_object_t *root,
			 const char *src)
{
	struct populate pp;
	struct stat st;

	memset(&pp, 0, sizeof(pp));
	pp.fs = fs;
	pp.buf = xmalloc(R4REF_IOBUF);
	if (lstat(src, &st) || !S_ISDIR(st.st_mode))
		die("%s: not a directory", src);
	copy_tree(&pp, root, src, 0);
	if (obj_set_attrs(root, &st))
		pop_err(&pp, src, "cannot update the root stat data");
	free(pp.buf);
	tdestroy(pp.links, free);
	if (getenv("R4REF_VERBOSE"))
		fprintf(stderr, "%s: %lu objects created, %lu errors\n",
			prog, pp.objects, pp.errors);
	return pp.errors ? -1 : 0;
}

/* ---- mkfs and populate commands ------------------------------------ */

static void apply_override(char *spec)
{
	char *eq = strchr(spec, '=');

	if (!eq || eq == spec || !eq[1])
		die("bad -o %s (want TYPE=PLUGIN)", spec);
	*eq = '\0';
	if (reiser4_profile_override(spec, eq + 1))
		die("libreiser4 rejects -o %s=%s", spec, eq + 1);
	*eq = '=';
}

/* The steps of mkfs.reiser4 1.2.2 (progs/mkfs/mkfs.c): master, format,
 * allocator, oid allocator and tree; journal; root directory linked to
 * itself; fs-global plugin set; backup.  No lost+found. */
static reiser4_fs_t *fs_create(const char *image, fs_hint_t *hint,
			       const uint32_t *mkfs_id)
{
	aal_device_t *dev = dev_open(image, O_RDWR);
	reiser4_fs_t *fs;
	entry_hint_t *entry;
	object_info_t info;

	hint->blksize = R4REF_BLKSIZE;
	hint->blocks = reiser4_format_len(dev, hint->blksize);
	fs = reiser4_fs_create(dev, hint);
	if (!fs)
		die("%s: cannot create the volume", image);
	/* Before the first node exists: every node header copies it. */
	if (mkfs_id)
		reiser4_format_set_stamp(fs->format, *mkfs_id);
	fs->journal = reiser4_journal_create(fs, dev);
	if (!fs->journal)
		die("%s: cannot create the journal", image);

	memset(&info, 0, sizeof(info));
	info.tree = (tree_entity_t *)fs->tree;
	entry = xmalloc(sizeof(*entry));
	memset(entry, 0, sizeof(*entry));
	memcpy(&entry->offset, &fs->tree->key, sizeof(entry->offset));
	reiser4_pset_root(&info);
	fs->root = reiser4_object_create(entry, &info, NULL);
	free(entry);
	if (!fs->root)
		die("%s: cannot create the root directory", image);
	if (reiser4_object_link(fs->root, fs->root, NULL))
		die("%s: cannot link the root to itself", image);
	if (reiser4_pset_tree(fs->tree, 1))
		die("%s: cannot set up the fs-global plugin set", image);
	fs->backup = reiser4_backup_create(fs);
	if (!fs->backup)
		die("%s: cannot create the backup", image);
	return fs;
}

static int cmd_mkfs(int argc, char **argv)
{
	fs_hint_t hint;
	reiser4_fs_t *fs;
	reiser4_object_t *root;
	unsigned char uu[16];
	uint32_t mkfs_id = 0;
	int c, rc, have_uuid = 0, have_id = 0;
	char *end;

	memset(&hint, 0, sizeof(hint));
	lib_init();
	while ((c = getopt(argc, argv, "+o:L:U:I:")) != -1) {
		switch (c) {
		case 'o':
			apply_override(optarg);
			break;
		case 'L':
			strncpy(hint.label, optarg, sizeof(hint.label) - 1);
			break;
		case 'U':
			if (uuid_parse(optarg, uu))
				die("bad uuid %s", optarg);
			have_uuid = 1;
			break;
		case 'I':
			errno = 0;
			mkfs_id = (uint32_t)strtoul(optarg, &end, 0);
			if (errno || *end || !*optarg)
				die("bad mkfs id %s", optarg);
			have_id = 1;
			break;
		default:
			return 2;
		}
	}
	if (argc - optind != 2)
		die("usage: mkfs [-o TYPE=PLUGIN]... [-L label] [-U uuid] "
		    "[-I mkfs_id] IMAGE SRCDIR");
	if (!have_uuid)
		uuid_generate(uu);
	memcpy(hint.uuid, uu, 16);

	fs = fs_create(argv[optind], &hint, have_id ? &mkfs_id : NULL);
	root = fs->root;
	rc = populate_root(fs, root, argv[optind + 1]);
	reiser4_object_close(root);
	fs->root = NULL;
	fs_close_all(fs);
	libreiser4_fini();
	return rc ? 1 : 0;
}

static int cmd_populate(int argc, char **argv)
{
	reiser4_fs_t *fs;
	reiser4_object_t *root;
	int rc;

	if (argc != 3)
		die("usage: populate IMAGE SRCDIR");
	lib_init();
	fs = fs_open_rw(argv[1]);
	root = open_root(fs);
	rc = populate_root(fs, root, argv[2]);
	reiser4_object_close(root);
	fs_close_all(fs);
	libreiser4_fini();
	return rc ? 1 : 0;
}

/* ---- manifests ----------------------------------------------------- */

enum { H_NONE, H_VALUE, H_ERR, H_UNALLOC };

struct rec {
	char *path;
	char type;
	unsigned mode;          /* permission bits incl. suid/sgid/sticky */
	uint64_t uid, gid;
	int64_t size;           /* -1 prints '-' */
	int64_t mtime;
	int64_t nlink;          /* -1 prints '-' */
	char *target;           /* NULL prints '-' */
	int has_rdev;
	unsigned rmaj, rmin;
	int hstate;             /* H_* */
	uint64_t hash;
	uint64_t ida, idb;      /* identity: (dev, ino) or (locality, oid) */
	size_t label;           /* small integer identity */
};

struct recs {
	struct rec *v;
	size_t n, cap;
	int errors;
};

static struct rec *rec_new(struct recs *rs, const char *path)
{
	struct rec *r;

	if (rs->n == rs->cap) {
		rs->cap = rs->cap ? rs->cap * 2 : 256;
		rs->v = xrealloc(rs->v, rs->cap * sizeof(*rs->v));
	}
	r = &rs->v[rs->n++];
	memset(r, 0, sizeof(*r));
	r->path = xstrdup(path);
	return r;
}

static void rec_fail(struct recs *rs, struct rec *r, const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, r->path, what);
	rs->errors++;
}

/* Fill the columns that both sides derive the same way from a mode. */
static void rec_common(struct rec *r, unsigned mode, uint64_t size,
		       uint64_t nlink)
{
	static const struct { unsigned fmt; char c; } types[] = {
		{ S_IFREG, 'f' }, { S_IFDIR, 'd' }, { S_IFLNK, 'l' },
		{ S_IFCHR, 'c' }, { S_IFBLK, 'b' }, { S_IFIFO, 'p' },
		{ S_IFSOCK, 's' },
	};
	size_t i;

	r->type = '?';
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if ((mode & S_IFMT) == types[i].fmt)
			r->type = types[i].c;
	r->mode = mode & 07777;
	r->size = r->type == 'd' ? -1 : (int64_t)size;
	r->nlink = r->type == 'd' ? -1 : (int64_t)nlink;
	r->has_rdev = r->type == 'c' || r->type == 'b';
}

static int rec_cmp_path(const void *a, const void *b)
{
	return strcmp(((const struct rec *)a)->path,
		      ((const struct rec *)b)->path);
}

struct ident { uint64_t a, b; size_t label; };

static int ident_cmp(const void *x, const void *y)
{
	const struct ident *p = x, *q = y;

	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	return p->b < q->b ? -1 : (p->b > q->b);
}

static void no_free(void *p)
{
	(void)p;
}

/* Sort by path; give each distinct identity a small integer in the order
 * its first path appears. */
static void recs_label(struct recs *rs)
{
	struct ident *ids = xmalloc((rs->n + 1) * sizeof(*ids));
	struct ident **slot;
	void *seen = NULL;
	size_t i, next = 1;

	if (rs->n)
		qsort(rs->v, rs->n, sizeof(*rs->v), rec_cmp_path);
	for (i = 0; i < rs->n; i++) {
		ids[i].a = rs->v[i].ida;
		ids[i].b = rs->v[i].idb;
		ids[i].label = next;
		slot = tsearch(&ids[i], &seen, ident_cmp);
		if (!slot)
			die("out of memory");
		if (*slot == &ids[i])
			next++;
		rs->v[i].label = (*slot)->label;
	}
	tdestroy(seen, no_free);
	free(ids);
}

static void put_opt_int(int64_t v)
{
	if (v < 0)
		fputs("\t-", stdout);
	else
		printf("\t%" PRId64, v);
}

static void recs_print(struct recs *rs)
{
	static const char *const hs[] = { "-", "", "ERR", "UNALLOC" };
	size_t i;

	recs_label(rs);
	for (i = 0; i < rs->n; i++) {
		struct rec *r = &rs->v[i];

		put_escaped(r->path);
		printf("\t%c\t%04o\t%" PRIu64 "\t%" PRIu64, r->type, r->mode,
		       r->uid, r->gid);
		put_opt_int(r->size);
		printf("\t%" PRId64, r->mtime);
		put_opt_int(r->nlink);
		putchar('\t');
		if (r->target)
			put_escaped(r->target);
		else
			putchar('-');
		if (r->has_rdev)
			printf("\t%u:%u", r->rmaj, r->rmin);
		else
			fputs("\t-", stdout);
		if (r->hstate == H_VALUE)
			printf("\t%016" PRIx64, r->hash);
		else
			printf("\t%s", hs[r->hstate]);
		printf("\t%zu\n", r->label);
		free(r->path);
		free(r->target);
	}
	free(rs->v);
}

/* -- image side -- */

static void img_record(struct recs *rs, reiser4_object_t *obj,
		       const char *path, char *buf)
{
	struct r4stat *st = xmalloc(sizeof(*st));
	struct rec *r = rec_new(rs, path);
	struct readres rr;

	r->ida = reiser4_key_get_locality(&obj->info.object);
	r->idb = reiser4_key_get_objectid(&obj->info.object);
	if (obj_stat(obj, st)) {
		r->type = '?';
		rec_fail(rs, r, "cannot read stat data");
		free(st);
		return;
	}
	rec_common(r, st->lw.mode, st->lw.size, st->lw.nlink);
	r->uid = st->ux.uid;
	r->gid = st->ux.gid;
	r->mtime = st->ux.mtime;
	if (r->type == 'l')
		r->target = xstrdup(st->link);
	r->rmaj = st->ux.rdev >> KDEV_MINORBITS;
	r->rmin = st->ux.rdev & KDEV_MINORMASK;
	if (r->type == 'f') {
		obj_read_all(obj, NULL, buf, &rr);
		r->hstate = H_VALUE;
		r->hash = rr.hash;
		if (rr.unalloc) {
			fprintf(stderr, "%s: %s: %lu unallocated extent "
				"unit(s); content not on disk\n", prog,
				path, rr.unalloc);
			r->hstate = H_UNALLOC;
		} else if (rr.failed || rr.total != st->lw.size) {
			r->hstate = H_ERR;
			rec_fail(rs, r, "short or failed read");
		}
	}
	free(st);
}

struct dname { char *name; reiser4_key_t key; };

static struct dname *img_names(reiser4_object_t *dir, size_t *np)
{
	entry_hint_t *e = xmalloc(sizeof(*e));
	struct dname *v = NULL;
	size_t n = 0, cap = 0;

	reiser4_object_reset(dir);
	while (reiser4_object_readdir(dir, e) > 0) {
		if (!strcmp(e->name, ".") || !strcmp(e->name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			v = xrealloc(v, cap * sizeof(*v));
		}
		v[n].name = xstrdup(e->name);
		v[n].key = e->object;
		n++;
	}
	free(e);
	*np = n;
	return v;
}

static void img_walk(struct recs *rs, reiser4_fs_t *fs, reiser4_object_t *dir,
		     const char *path, char *buf, int depth)
{
	struct dname *v;
	size_t n, i;

	if (depth > R4REF_MAXDEPTH) {
		fprintf(stderr, "%s: %s: too deep\n", prog, path);
		rs->errors++;
		return;
	}
	v = img_names(dir, &n);
	for (i = 0; i < n; i++) {
		char *cpath = path_join(path, v[i].name);
		reiser4_object_t *c;

		c = reiser4_object_obtain(fs->tree, dir, &v[i].key);
		if (!c) {
			struct rec *r = rec_new(rs, cpath);

			r->type = '?';
			rec_fail(rs, r, "cannot open the object");
		} else {
			img_record(rs, c, cpath, buf);
			if (rs->v[rs->n - 1].type == 'd')
				img_walk(rs, fs, c, cpath, buf, depth + 1);
			reiser4_object_close(c);
		}
		free(cpath);
		free(v[i].name);
	}
	free(v);
}

static int cmd_manifest(int argc, char **argv)
{
	struct recs rs = { 0 };
	reiser4_fs_t *fs;
	reiser4_object_t *root;
	char *buf;
	int c, check = 1;

	while ((c = getopt(argc, argv, "+n")) != -1) {
		if (c != 'n')
			return 2;
		check = 0;
	}
	if (argc - optind != 1)
		die("usage: manifest [-n] IMAGE");
	lib_init();
	fs = fs_open_ro(argv[optind], check);
	root = open_root(fs);
	buf = xmalloc(R4REF_IOBUF);
	img_record(&rs, root, "/", buf);
	img_walk(&rs, fs, root, "/", buf, 0);
	reiser4_object_close(root);
	free(buf);
	fs_close_all(fs);
	libreiser4_fini();
	c = rs.errors;
	recs_print(&rs);
	if (c)
		fprintf(stderr, "%s: %d object(s) could not be read\n", prog, c);
	return c ? 1 : 0;
}

/* -- host side -- */

static void host_hash(struct recs *rs, struct rec *r, const char *hpath,
		      char *buf)
{
	int fd = open(hpath, O_RDONLY);
	uint64_t h = FNV64_BASIS;
	ssize_t n = -1;

	if (fd >= 0) {
		while ((n = read(fd, buf, R4REF_IOBUF)) > 0)
			h = fnv1a_update(h, buf, (size_t)n);
		close(fd);
	}
	if (n < 0) {
		r->hstate = H_ERR;
		rec_fail(rs, r, strerror(errno));
		return;
	}
	r->hstate = H_VALUE;
	r->hash = h;
}

static void host_record(struct recs *rs, const char *hpath, const char *path,
			const struct stat *st, char *buf)
{
	struct rec *r = rec_new(rs, path);
	char target[R4REF_LINKMAX + 1];
	ssize_t n;

	rec_common(r, st->st_mode, (uint64_t)st->st_size, st->st_nlink);
	r->uid = st->st_uid;
	r->gid = st->st_gid;
	r->mtime = st->st_mtime;
	r->ida = st->st_dev;
	r->idb = st->st_ino;
	r->rmaj = major(st->st_rdev);
	r->rmin = minor(st->st_rdev);
	if (r->type == 'l') {
		n = readlink(hpath, target, sizeof(target) - 1);
		target[n < 0 ? 0 : n] = '\0';
		r->target = xstrdup(target);
	}
	if (r->type == 'f')
		host_hash(rs, r, hpath, buf);
}

static void host_walk(struct recs *rs, const char *hdir, const char *path,
		      char *buf, int depth)
{
	char **names = NULL;
	struct stat st;
	size_t n = 0, i;

	if (depth <= R4REF_MAXDEPTH)
		names = host_names(hdir, &n);
	if (!names) {
		fprintf(stderr, "%s: %s: cannot read directory\n", prog, hdir);
		rs->errors++;
		return;
	}
	for (i = 0; i < n; i++) {
		char *hp = path_join(hdir, names[i]);
		char *p = path_join(path, names[i]);

		if (lstat(hp, &st)) {
			fprintf(stderr, "%s: %s: %s\n", prog, hp,
				strerror(errno));
			rs->errors++;
		} else {
			host_record(rs, hp, p, &st, buf);
			if (S_ISDIR(st.st_mode))
				host_walk(rs, hp, p, buf, depth + 1);
		}
		free(hp);
		free(p);
		free(names[i]);
	}
	free(names);
}

static int cmd_manifest_dir(int argc, char **argv)
{
	struct recs rs = { 0 };
	struct stat st;
	char *buf;
	int errs;

	if (argc != 2)
		die("usage: manifest-dir DIR");
	if (lstat(argv[1], &st) || !S_ISDIR(st.st_mode))
		die("%s: not a directory", argv[1]);
	buf = xmalloc(R4REF_IOBUF);
	host_record(&rs, argv[1], "/", &st, buf);
	host_walk(&rs, argv[1], "/", buf, 0);
	free(buf);
	errs = rs.errors;
	recs_print(&rs);
	return errs ? 1 : 0;
}

/* ---- cat ----------------------------------------------------------- */

static int cmd_cat(int argc, char **argv)
{
	reiser4_fs_t *fs;
	reiser4_object_t *obj;
	struct r4stat *st = xmalloc(sizeof(*st));
	struct readres rr;
	char *buf, *path;
	int rc = 0;

	if (argc != 3)
		die("usage: cat IMAGE PATH");
	lib_init();
	fs = fs_open_ro(argv[1], 1);
	path = xstrdup(argv[2]);
	obj = reiser4_semantic_open(fs->tree, path, NULL, 1);
	free(path);
	if (!obj)
		die("%s: no such object", argv[2]);
	if (obj_stat(obj, st) || !S_ISREG(st->lw.mode))
		die("%s: not a regular file", argv[2]);
	buf = xmalloc(R4REF_IOBUF);
	obj_read_all(obj, stdout, buf, &rr);
	if (fflush(stdout))
		die("write error");
	if (rr.unalloc) {
		fprintf(stderr, "%s: %s: %lu unallocated extent unit(s); "
			"they read as zeros\n", prog, argv[2], rr.unalloc);
		rc = 1;
	}
	if (rr.failed || rr.total != st->lw.size) {
		fprintf(stderr, "%s: %s: read %" PRIu64 " of %" PRIu64
			" bytes\n", prog, argv[2], rr.total,
			(uint64_t)st->lw.size);
		rc = 1;
	}
	free(buf);
	free(st);
	reiser4_object_close(obj);
	fs_close_all(fs);
	libreiser4_fini();
	return rc;
}

/* ---- main ---------------------------------------------------------- */

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr,
		"usage: %s mkfs [-o TYPE=PLUGIN]... [-L label] [-U uuid] "
		"[-I mkfs_id] IMAGE SRCDIR\n"
		"       %s populate IMAGE SRCDIR\n"
		"       %s manifest [-n] IMAGE\n"
		"       %s manifest-dir DIR\n"
		"       %s cat IMAGE PATH\n", prog, prog, prog, prog, prog);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} cmds[] = {
		{ "mkfs", cmd_mkfs },
		{ "populate", cmd_populate },
		{ "manifest", cmd_manifest },
		{ "manifest-dir", cmd_manifest_dir },
		{ "cat", cmd_cat },
	};
	size_t i;

	if (argc < 2)
		usage();
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (!strcmp(argv[1], cmds[i].name)) {
			optind = 1;
			return cmds[i].fn(argc - 1, argv + 1);
		}
	}
	usage();
}
