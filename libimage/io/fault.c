/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the fault-injection backend (see fault.h). */
#include "config.h"
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "r4/util.h"
#include "libimage/io/fault.h"
#include "libimage/util/err.h"

struct held {			/* a write held until its file's next sync */
	size_t file;		/* in r4_fault.files */
	uint64_t off;
	size_t len;
	uint8_t *data;
};

/* A file opened with the power object: held writes belong to it, not
 * to the open that issued them (a close does not make them durable; a
 * sync through any open of it does). */
struct hfile {
	uint64_t id[3];		/* io_file_id: device, inode, window */
	char *path;		/* to write them when no open is left */
};

struct fault_priv;

/* One power cut for the devices opened with it: they count their
 * writes together (the N of the spec is the N-th write to any of them),
 * and once the cut came none writes, syncs or resizes any more. */
struct r4_fault {
	struct io_fault_spec spec;
	uint64_t writes;
	int cut;
	unsigned refs;
	struct io_fault_stats last;
	io_fault_report_fn report_fn;
	void *report_ctx;
	io_fault_sync_fn sync_fn;
	void *sync_ctx;
	struct hfile *files;
	size_t nfiles, capfiles;
	struct held *held;	/* every file's, in the order issued */
	size_t nheld, capheld;
	struct fault_priv *opens;	/* the devices open now */
	/* The held writes are one list for every open of every file:
	 * threads that use devices of one power object take turns
	 * (recursive: the end may close what it opened) */
	pthread_mutex_t mu;
};

struct fault_priv {
	struct io_dev lower;	/* the wrapped backend */
	struct r4_fault *power;
	struct fault_priv *next;	/* in power->opens */
	size_t file;		/* in power->files */
	uint64_t writes, syncs;
	int cut, fired;
};

int io_fault_parse(const char *s, struct io_fault_spec *out)
{
	static const struct { const char *name; enum io_fault_mode m; } t[] = {
		{ "fail-write=", IO_FAULT_FAIL_WRITE },
		{ "cut-after=", IO_FAULT_CUT_AFTER },
		{ "torn-write=", IO_FAULT_TORN_WRITE },
		{ "drop-unsynced=", IO_FAULT_DROP_UNSYNCED },
		{ "keep-subset=", IO_FAULT_KEEP_SUBSET }
	};
	char *end;

	memset(out, 0, sizeof(*out));
	if (!strcmp(s, "count")) {
		out->mode = IO_FAULT_COUNT;
		return 0;
	}
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		size_t l = strlen(t[i].name);

		if (strncmp(s, t[i].name, l))
			continue;
		errno = 0;
		out->n = strtoull(s + l, &end, 10);
		if (errno || end == s + l || out->n == 0 ||
		    !isdigit((unsigned char)s[l]))
			return R4_EINVAL;
		if (*end == ':' && t[i].m == IO_FAULT_KEEP_SUBSET) {
			const char *q = end + 1;

			out->seed = strtoull(q, &end, 10);
			if (errno || end == q || !isdigit((unsigned char)*q))
				return R4_EINVAL;
		}
		if (*end)
			return R4_EINVAL;
		out->mode = t[i].m;
		return 0;
	}
	return R4_EINVAL;
}

int io_fault_format(const struct io_fault_spec *spec, char *buf,
		    size_t len)
{
	static const char *const name[] = {
		[IO_FAULT_FAIL_WRITE] = "fail-write",
		[IO_FAULT_CUT_AFTER] = "cut-after",
		[IO_FAULT_TORN_WRITE] = "torn-write",
		[IO_FAULT_DROP_UNSYNCED] = "drop-unsynced",
		[IO_FAULT_KEEP_SUBSET] = "keep-subset"
	};
	unsigned long long n = spec->n, seed = spec->seed;

	switch (spec->mode) {
	case IO_FAULT_NONE:
		return snprintf(buf, len, "%s", "");
	case IO_FAULT_COUNT:
		return snprintf(buf, len, "count");
	case IO_FAULT_KEEP_SUBSET:
		if (seed)
			return snprintf(buf, len, "keep-subset=%llu:%llu", n,
					seed);
		/* fall through */
	case IO_FAULT_FAIL_WRITE:
	case IO_FAULT_CUT_AFTER:
	case IO_FAULT_TORN_WRITE:
	case IO_FAULT_DROP_UNSYNCED:
		return snprintf(buf, len, "%s=%llu", name[spec->mode], n);
	default:	/* not a mode: what io_fault_parse refuses */
		return snprintf(buf, len, "?");
	}
}

struct r4_fault *io_fault_new(const struct io_fault_spec *spec,
			      io_fault_report_fn report, void *ctx)
{
	struct r4_fault *f;

	if (spec->mode == IO_FAULT_NONE || !(f = calloc(1, sizeof(*f))))
		return NULL;
	f->spec = *spec;
	f->refs = 1;
	{
		pthread_mutexattr_t a;

		if (pthread_mutexattr_init(&a) ||
		    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE) ||
		    pthread_mutex_init(&f->mu, &a)) {
			free(f);
			return NULL;
		}
		pthread_mutexattr_destroy(&a);
	}
	f->report_fn = report;
	f->report_ctx = ctx;
	return f;
}

static int held_out(struct r4_fault *f, const uint8_t *keep);

static void held_free(struct r4_fault *f)
{
	for (size_t i = 0; i < f->nheld; i++)
		free(f->held[i].data);
	free(f->held);
	for (size_t i = 0; i < f->nfiles; i++)
		free(f->files[i].path);
	free(f->files);
}

/* The process ends without a cut: every held write reaches its file,
 * as the page cache would write it. */
int io_fault_end(struct r4_fault *f)
{
	int rc = 0;

	if (!f)
		return 0;
	pthread_mutex_lock(&f->mu);
	if (!f->cut && f->nheld)
		rc = held_out(f, NULL);
	pthread_mutex_unlock(&f->mu);
	return rc;
}

void io_fault_put(struct r4_fault *f)
{
	unsigned left;

	if (!f)
		return;
	pthread_mutex_lock(&f->mu);
	left = --f->refs;
	pthread_mutex_unlock(&f->mu);
	if (left)
		return;
	(void)io_fault_end(f);	/* no one left to tell: see fault.h */
	held_free(f);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

void io_fault_on_sync(struct r4_fault *f, io_fault_sync_fn fn, void *ctx)
{
	if (f) {
		f->sync_fn = fn;
		f->sync_ctx = ctx;
	}
}

void io_fault_last_stats(const struct r4_fault *f,
			 struct io_fault_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (f)
		*out = f->last;
}

static void note(struct fault_priv *p)
{
	p->power->last.writes = p->writes;
	p->power->last.syncs = p->syncs;
	p->power->last.fired = p->fired;
}

/* Drop the held writes of file (all: file == SIZE_MAX). */
static void held_drop(struct r4_fault *f, size_t file)
{
	size_t k = 0;

	for (size_t i = 0; i < f->nheld; i++) {
		if (file == SIZE_MAX || f->held[i].file == file)
			free(f->held[i].data);
		else
			f->held[k++] = f->held[i];
	}
	f->nheld = k;
}

/* Write the held writes of file that keep says (NULL: all), in the
 * order issued, through an open of it, or else through a plain open of
 * its path (its last open closed before). */
static int held_out_file(struct r4_fault *f, size_t file,
			 const uint8_t *keep)
{
	struct io_window win = { .offset = f->files[file].id[2] };
	struct io_dev *dev = NULL, *raw = NULL;
	struct r4_error err = { 0 };
	uint64_t id[3];
	int rc = 0;

	for (struct fault_priv *p = f->opens; p && !dev; p = p->next)
		if (p->file == file)
			dev = &p->lower;
	for (size_t i = 0; i < f->nheld && !rc; i++) {
		const struct held *h = &f->held[i];

		if (h->file != file || (keep && !keep[i]))
			continue;
		if (!dev) {
			rc = io_open_win(f->files[file].path, IO_RDWR, &win,
					 &raw, NULL, &err);
			if (!rc && (io_file_id(raw, id) ||
				    memcmp(id, f->files[file].id, sizeof(id))))
				rc = -ESTALE;	/* another file now */
			dev = raw;
		}
		if (!rc)
			rc = dev->ops->pwrite(dev, h->data, h->len, h->off);
	}
	if (raw)
		io_close(raw);
	return rc;
}

/* Write out the held writes keep says (NULL: all), then drop them all;
 * the first error (a file that could not take them, or another file
 * under its path now: -ESTALE), after trying every file. */
static int held_out(struct r4_fault *f, const uint8_t *keep)
{
	int rc = 0;

	for (size_t file = 0; file < f->nfiles; file++) {
		int r = held_out_file(f, file, keep);

		if (r && !rc)
			rc = r;
	}
	held_drop(f, SIZE_MAX);
	return rc;
}

/* A sync through an open of a file: its held writes reach the disk. */
static int held_flush(struct fault_priv *p)
{
	struct r4_fault *f = p->power;
	int rc = 0;

	for (size_t i = 0; i < f->nheld && !rc; i++)
		if (f->held[i].file == p->file)
			rc = p->lower.ops->pwrite(&p->lower, f->held[i].data,
						  f->held[i].len,
						  f->held[i].off);
	held_drop(f, p->file);
	return rc;
}

/* A power cut at a held write (keep-subset): the newest held write
 * reaches the disk, and of the older ones (of every file) those that
 * seed picks (none with seed 0), in the order they were issued; the
 * rest are lost. */
static int held_keep_subset(struct r4_fault *f, uint64_t seed, uint64_t n)
{
	/* the cut point in the draws too: one seed, another subset at
	 * each point */
	uint64_t x = seed ^ (n * 0xd1342543de82ef95ULL);
	uint8_t *keep = calloc(f->nheld ? f->nheld : 1, 1);
	int rc;

	if (!keep) {
		held_drop(f, SIZE_MAX);
		return -ENOMEM;
	}
	for (size_t i = 0; i < f->nheld; i++) {
		keep[i] = i + 1 == f->nheld;
		if (!keep[i] && seed) {
			/* splitmix64: one draw a held write */
			uint64_t z = (x += 0x9e3779b97f4a7c15ULL);

			z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
			z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
			keep[i] = (uint8_t)((z ^ (z >> 31)) & 1);
		}
	}
	rc = held_out(f, keep);
	free(keep);
	return rc;
}

static int held_add(struct fault_priv *p, const void *buf, size_t len,
		    uint64_t off)
{
	struct r4_fault *f = p->power;
	struct held *h;

	if (R4_RESERVE(f->held, f->capheld, f->nheld + 1, 64))
		return -ENOMEM;
	h = &f->held[f->nheld];
	h->data = malloc(len);
	if (!h->data)
		return -ENOMEM;
	memcpy(h->data, buf, len);
	h->file = p->file;
	h->off = off;
	h->len = len;
	f->nheld++;
	return 0;
}

/* Reads see the held writes, oldest first. */
static int fault_pread_locked(struct io_dev *dev, void *buf, size_t len,
			      uint64_t off)
{
	struct fault_priv *p = dev->priv;
	const struct r4_fault *f = p->power;
	int rc = p->lower.ops->pread(&p->lower, buf, len, off);

	for (size_t i = 0; !rc && i < f->nheld; i++) {
		const struct held *h = &f->held[i];
		uint64_t lo = off > h->off ? off : h->off;
		uint64_t hi = off + len < h->off + h->len ? off + len :
			      h->off + h->len;

		if (h->file == p->file && lo < hi)
			memcpy((uint8_t *)buf + (lo - off),
			       h->data + (lo - h->off), (size_t)(hi - lo));
	}
	return rc;
}

static int fault_pwrite_locked(struct io_dev *dev, const void *buf,
			       size_t len, uint64_t off)
{
	struct fault_priv *p = dev->priv;
	struct r4_fault *power = p->power;
	uint64_t n = ++power->writes;
	int rc;

	p->writes++;
	note(p);
	if (p->cut || power->cut)
		return 0;
	switch (power->spec.mode) {
	case IO_FAULT_FAIL_WRITE:
		if (n == power->spec.n) {
			p->fired = 1;
			note(p);
			return -EIO;
		}
		break;
	case IO_FAULT_TORN_WRITE:
		if (n == power->spec.n) {
			p->cut = p->fired = power->cut = 1;
			note(p);
			return p->lower.ops->pwrite(&p->lower, buf, len / 2,
						    off);
		}
		break;
	case IO_FAULT_DROP_UNSYNCED:
	case IO_FAULT_KEEP_SUBSET:
		rc = held_add(p, buf, len, off);
		if (!rc && n == power->spec.n) {
			if (power->spec.mode == IO_FAULT_KEEP_SUBSET)
				rc = held_keep_subset(power, power->spec.seed,
						      power->spec.n);
			else
				held_drop(power, SIZE_MAX);
			p->cut = p->fired = power->cut = 1;
			note(p);
		}
		return rc;
	default:
		break;
	}
	rc = p->lower.ops->pwrite(&p->lower, buf, len, off);
	if (power->spec.mode == IO_FAULT_CUT_AFTER && n == power->spec.n) {
		p->cut = p->fired = power->cut = 1;
		note(p);
	}
	return rc;
}

static int fault_sync_locked(struct io_dev *dev)
{
	struct fault_priv *p = dev->priv;
	int rc;

	p->syncs++;
	note(p);
	if (p->cut || p->power->cut)
		return 0;	/* the power went: the cut dropped the held */
	if (p->power->sync_fn)
		p->power->sync_fn(p->power->sync_ctx, p->power->writes);
	rc = held_flush(p);
	return rc ? rc : p->lower.ops->sync(&p->lower);
}

static int fault_pread(struct io_dev *dev, void *buf, size_t len,
		       uint64_t off)
{
	struct r4_fault *f = ((struct fault_priv *)dev->priv)->power;
	int rc;

	pthread_mutex_lock(&f->mu);
	rc = fault_pread_locked(dev, buf, len, off);
	pthread_mutex_unlock(&f->mu);
	return rc;
}

static int fault_pwrite(struct io_dev *dev, const void *buf, size_t len,
			uint64_t off)
{
	struct r4_fault *f = ((struct fault_priv *)dev->priv)->power;
	int rc;

	pthread_mutex_lock(&f->mu);
	rc = fault_pwrite_locked(dev, buf, len, off);
	pthread_mutex_unlock(&f->mu);
	return rc;
}

static int fault_sync(struct io_dev *dev)
{
	struct r4_fault *f = ((struct fault_priv *)dev->priv)->power;
	int rc;

	pthread_mutex_lock(&f->mu);
	rc = fault_sync_locked(dev);
	pthread_mutex_unlock(&f->mu);
	return rc;
}

static int fault_resize(struct io_dev *dev, uint64_t size)
{
	struct fault_priv *p = dev->priv;
	int rc;

	/* after a cut nothing reaches the device: the length neither (a
	 * power loss stops the program before its next change) */
	if (p->power->cut) {
		dev->size = size;
		return 0;
	}
	rc = p->lower.ops->resize(&p->lower, size);
	if (!rc)
		dev->size = size;
	return rc;
}

/* A close does not make the held writes durable: they stay with the
 * file, for a sync through a later open of it, the power cut, or the end
 * (io_fault_end, io_fault_put). */
static void fault_close(struct io_dev *dev)
{
	struct fault_priv *p = dev->priv;
	struct r4_fault *f = p->power;
	struct fault_priv **pp = &f->opens;

	pthread_mutex_lock(&f->mu);
	while (*pp && *pp != p)
		pp = &(*pp)->next;
	if (*pp)
		*pp = p->next;
	note(p);
	if (f->report_fn)
		f->report_fn(f->report_ctx, &f->last);
	p->lower.ops->close(&p->lower);
	pthread_mutex_unlock(&f->mu);
	io_fault_put(f);
	free(p);
}

static const struct io_ops fault_ops = {
	.pread = fault_pread, .pwrite = fault_pwrite, .sync = fault_sync,
	.resize = fault_resize, .close = fault_close
};

/* The file of dev among f's (a new one when first seen; a device that
 * is no plain file is a file of its own). 0 or -ENOMEM. */
static int file_of(struct r4_fault *f, const struct io_dev *dev,
		   size_t *out)
{
	uint64_t id[3];
	int known = !io_file_id(dev, id);
	struct hfile *h;

	for (size_t i = 0; known && i < f->nfiles; i++)
		if (!memcmp(f->files[i].id, id, sizeof(id))) {
			*out = i;
			return 0;
		}
	if (R4_RESERVE(f->files, f->capfiles, f->nfiles + 1, 4))
		return -ENOMEM;
	h = &f->files[f->nfiles];
	memset(h, 0, sizeof(*h));
	if (known)
		memcpy(h->id, id, sizeof(id));
	else
		h->id[0] = h->id[1] = UINT64_MAX;	/* matches none */
	h->path = strdup(dev->path ? dev->path : "");
	if (!h->path)
		return -ENOMEM;
	*out = f->nfiles++;
	return 0;
}

int io_fault_down(const struct io_dev *dev)
{
	const struct fault_priv *p = dev->priv;

	return dev->ops == &fault_ops && (p->cut || p->power->cut);
}

int io_fault_attach(struct io_dev *dev, struct r4_fault *f,
		    struct r4_error *err)
{
	struct fault_priv *p;

	if (!f)
		return 0;
	p = calloc(1, sizeof(*p));
	pthread_mutex_lock(&f->mu);
	if (!p || file_of(f, dev, &p->file)) {
		pthread_mutex_unlock(&f->mu);
		free(p);
		return r4i_fail(err, -ENOMEM, "%s: out of memory", dev->path);
	}
	p->lower = *dev;
	p->power = f;
	p->next = f->opens;
	f->opens = p;
	f->refs++;
	pthread_mutex_unlock(&f->mu);
	dev->ops = &fault_ops;
	dev->priv = p;
	memset(&f->last, 0, sizeof(f->last));
	return 0;
}
