/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4dlclose LIB IMAGE: LIB (libr4kit.so) loaded with dlopen, a thread
 * makes 3,000 folders in IMAGE through it (the tree's per-thread lists
 * of item bodies fill), the library is unloaded with dlclose, then the
 * thread ends: it must end cleanly (no call into the unloaded code).
 * Prints "thread ended" and exits 0; 2 when a step fails. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "r4/r4.h"
#include "r4/edit.h"

static pthread_barrier_t bar;
static void *lib;
static const char *img;
static int failed;

static void *work(void *arg)
{
	int (*vopen)(const char *, const struct r4_open_opts *,
		     struct r4_vol **, struct r4_error *) =
		(int (*)(const char *, const struct r4_open_opts *,
			 struct r4_vol **, struct r4_error *))
		dlsym(lib, "r4_vol_open");
	int (*begin)(struct r4_vol *, struct r4_txn **, struct r4_error *) =
		(int (*)(struct r4_vol *, struct r4_txn **,
			 struct r4_error *))dlsym(lib, "r4_txn_begin");
	int (*mkdir_)(struct r4_txn *, const char *, const struct r4_attr *,
		      struct r4_error *) =
		(int (*)(struct r4_txn *, const char *,
			 const struct r4_attr *, struct r4_error *))
		dlsym(lib, "r4_mkdir");
	int (*commit)(struct r4_txn *, struct r4_error *) =
		(int (*)(struct r4_txn *, struct r4_error *))
		dlsym(lib, "r4_txn_commit");
	int (*vclose)(struct r4_vol *, struct r4_error *) =
		(int (*)(struct r4_vol *, struct r4_error *))
		dlsym(lib, "r4_vol_close");
	struct r4_open_opts o = { .flags = R4_OPEN_RDWR };
	struct r4_attr a = { .mode = 0755 };
	struct r4_error e;
	struct r4_vol *v = NULL;
	struct r4_txn *t = NULL;
	char path[32];

	memset(&e, 0, sizeof(e));
	if (!vopen || !begin || !mkdir_ || !commit || !vclose ||
	    vopen(img, &o, &v, &e) || begin(v, &t, &e)) {
		failed = 1;
	} else {
		for (int i = 0; i < 3000 && !failed; i++) {
			snprintf(path, sizeof(path), "/d%d", i);
			failed = mkdir_(t, path, &a, &e) != 0;
		}
		failed |= commit(t, &e) != 0;
		failed |= vclose(v, &e) != 0;
	}
	pthread_barrier_wait(&bar);	/* done with the library */
	pthread_barrier_wait(&bar);	/* it is unloaded: end */
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc != 3) {
		fprintf(stderr, "usage: r4dlclose LIB IMAGE\n");
		return 2;
	}
	img = argv[2];
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "r4dlclose: %s\n", dlerror());
		return 2;
	}
	pthread_barrier_init(&bar, NULL, 2);
	if (pthread_create(&t, NULL, work, NULL))
		return 2;
	pthread_barrier_wait(&bar);
	if (dlclose(lib))
		return 2;
	pthread_barrier_wait(&bar);
	pthread_join(t, NULL);
	if (failed) {
		fprintf(stderr, "r4dlclose: a step in the thread failed\n");
		return 2;
	}
	printf("thread ended\n");
	return 0;
}
