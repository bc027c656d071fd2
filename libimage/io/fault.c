/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the fault-injection backend (see fault.h). */
#include "config.h"
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "r4/util.h"
#include "libimage/io/fault.h"
#include "libimage/util/err.h"

struct held {			/* a write held until the next sync */
	uint64_t off;
	size_t len;
	uint8_t *data;
};

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
};

struct fault_priv {
	struct io_dev lower;	/* the wrapped backend */
	struct r4_fault *power;
	uint64_t writes, syncs;
	int cut, fired;
	struct held *held;
	size_t nheld, capheld;
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
	f->report_fn = report;
	f->report_ctx = ctx;
	return f;
}

void io_fault_put(struct r4_fault *f)
{
	if (f && !--f->refs)
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

static void held_drop(struct fault_priv *p)
{
	for (size_t i = 0; i < p->nheld; i++)
		free(p->held[i].data);
	p->nheld = 0;
}

static int held_flush(struct fault_priv *p)
{
	int rc = 0;

	for (size_t i = 0; i < p->nheld && !rc; i++)
		rc = p->lower.ops->pwrite(&p->lower, p->held[i].data,
					  p->held[i].len, p->held[i].off);
	held_drop(p);
	return rc;
}

/* A power cut at a held write (keep-subset): the newest held write
 * reaches the disk, and of the older ones those that seed picks (none
 * with seed 0), in the order they were issued; the rest are lost. */
static int held_keep_subset(struct fault_priv *p, uint64_t seed,
			    uint64_t n)
{
	/* the cut point in the draws too: one seed, another subset at
	 * each point */
	uint64_t x = seed ^ (n * 0xd1342543de82ef95ULL);
	int rc = 0;

	for (size_t i = 0; i < p->nheld && !rc; i++) {
		int keep = i + 1 == p->nheld;

		if (!keep && seed) {
			/* splitmix64: one draw a held write */
			uint64_t z = (x += 0x9e3779b97f4a7c15ULL);

			z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
			z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
			keep = (int)((z ^ (z >> 31)) & 1);
		}
		if (keep)
			rc = p->lower.ops->pwrite(&p->lower, p->held[i].data,
						  p->held[i].len,
						  p->held[i].off);
	}
	held_drop(p);
	return rc;
}

static int held_add(struct fault_priv *p, const void *buf, size_t len,
		    uint64_t off)
{
	struct held *h;

	if (R4_RESERVE(p->held, p->capheld, p->nheld + 1, 64))
		return -ENOMEM;
	h = &p->held[p->nheld];
	h->data = malloc(len);
	if (!h->data)
		return -ENOMEM;
	memcpy(h->data, buf, len);
	h->off = off;
	h->len = len;
	p->nheld++;
	return 0;
}

/* Reads see the held writes, oldest first. */
static int fault_pread(struct io_dev *dev, void *buf, size_t len,
		       uint64_t off)
{
	struct fault_priv *p = dev->priv;
	int rc = p->lower.ops->pread(&p->lower, buf, len, off);

	for (size_t i = 0; !rc && i < p->nheld; i++) {
		const struct held *h = &p->held[i];
		uint64_t lo = off > h->off ? off : h->off;
		uint64_t hi = off + len < h->off + h->len ? off + len :
			      h->off + h->len;

		if (lo < hi)
			memcpy((uint8_t *)buf + (lo - off),
			       h->data + (lo - h->off), (size_t)(hi - lo));
	}
	return rc;
}

static int fault_pwrite(struct io_dev *dev, const void *buf, size_t len,
			uint64_t off)
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
				rc = held_keep_subset(p, power->spec.seed,
						      power->spec.n);
			else
				held_drop(p);
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

static int fault_sync(struct io_dev *dev)
{
	struct fault_priv *p = dev->priv;
	int rc;

	p->syncs++;
	note(p);
	if (p->cut || p->power->cut) {
		if (p->power->cut)
			held_drop(p);	/* the power went: unsynced is lost */
		return 0;
	}
	if (p->power->sync_fn)
		p->power->sync_fn(p->power->sync_ctx, p->power->writes);
	rc = held_flush(p);
	return rc ? rc : p->lower.ops->sync(&p->lower);
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

/* Without a cut, held writes reach the disk at close (as the page cache
 * would write them eventually). */
static void fault_close(struct io_dev *dev)
{
	struct fault_priv *p = dev->priv;

	if (!p->cut && !p->power->cut)
		held_flush(p);
	held_drop(p);
	free(p->held);
	note(p);
	if (p->power->report_fn)
		p->power->report_fn(p->power->report_ctx, &p->power->last);
	p->lower.ops->close(&p->lower);
	io_fault_put(p->power);
	free(p);
}

static const struct io_ops fault_ops = {
	.pread = fault_pread, .pwrite = fault_pwrite, .sync = fault_sync,
	.resize = fault_resize, .close = fault_close
};

int io_fault_attach(struct io_dev *dev, struct r4_fault *f,
		    struct r4_error *err)
{
	struct fault_priv *p;

	if (!f)
		return 0;
	p = calloc(1, sizeof(*p));
	if (!p)
		return r4i_fail(err, -ENOMEM, "%s: out of memory", dev->path);
	p->lower = *dev;
	p->power = f;
	f->refs++;
	dev->ops = &fault_ops;
	dev->priv = p;
	memset(&f->last, 0, sizeof(f->last));
	return 0;
}
