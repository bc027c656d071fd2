/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: is an image in use? The mount table and the loop devices
 * (io_is_mounted, io_loop_attached; libimage/io/dev.h). */
#include "config.h"
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <errno.h>
#include "libimage/io/dev.h"

static const char *mountinfo_of(const struct io_mount_tables *t)
{
	return t && t->mountinfo ? t->mountinfo : "/proc/self/mountinfo";
}

static const char *sysblock_of(const struct io_mount_tables *t)
{
	return t && t->sysblock ? t->sysblock : "/sys/block";
}

/* mountinfo: "id parent major:minor root mountpoint ...". */
static int mounted_devno(const struct io_mount_tables *t, dev_t devno,
			 char *where, size_t len)
{
	FILE *f = fopen(mountinfo_of(t), "r");
	char line[4096];
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned maj, min;
		char mnt[2048];

		if (sscanf(line, "%*u %*u %u:%u %*s %2047s", &maj, &min,
			   mnt) != 3)
			continue;
		if (makedev(maj, min) == devno) {
			found = 1;
			if (where)
				snprintf(where, len, "%s", mnt);
		}
	}
	fclose(f);
	return found;
}

/* The loop device named name (a /sys/block entry) is backed by the file
 * st, real: by device and inode where /dev/NAME opens (LOOP_GET_STATUS64),
 * else by the backing file's name in sysfs. */
static int loop_backs(const struct io_mount_tables *t, const char *name,
		      const struct stat *st, const char *real)
{
	char p[PATH_MAX], back[PATH_MAX];
	struct loop_info64 li;
	FILE *f;
	int fd;

	snprintf(p, sizeof(p), "%s/%s/loop/backing_file", sysblock_of(t),
		 name);
	f = fopen(p, "r");
	if (!f)
		return 0;	/* not attached */
	if (!fgets(back, sizeof(back), f))
		back[0] = '\0';
	fclose(f);
	back[strcspn(back, "\n")] = '\0';
	if (!strcmp(back, real))
		return 1;
	if (t && t->sysblock)
		return 0;	/* a made-up table: names only */
	snprintf(p, sizeof(p), "/dev/%s", name);
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	memset(&li, 0, sizeof(li));
	if (ioctl(fd, LOOP_GET_STATUS64, &li)) {
		close(fd);
		return 0;
	}
	close(fd);
	return li.lo_inode == (uint64_t)st->st_ino &&
	       li.lo_device == (uint64_t)st->st_dev;
}

/* The first loop device backed by the image file path (loop: its name),
 * and where it is mounted, if it is (where: "" when not). 1 when one
 * is attached, 0 when none. */
int io_loop_attached(const char *path, const struct io_mount_tables *t,
		     char *loop, size_t looplen, char *where, size_t len)
{
	char real[PATH_MAX];
	struct stat st;
	struct dirent *e;
	DIR *d;
	int found = 0;

	if (where && len)
		where[0] = '\0';
	if (stat(path, &st) || !S_ISREG(st.st_mode) || !realpath(path, real))
		return 0;
	d = opendir(sysblock_of(t));
	if (!d)
		return 0;
	while (!found && (e = readdir(d))) {
		char p[PATH_MAX], devp[64];
		unsigned maj, min;
		FILE *f;

		if (strncmp(e->d_name, "loop", 4) ||
		    !loop_backs(t, e->d_name, &st, real))
			continue;
		found = 1;
		if (loop)
			snprintf(loop, looplen, "/dev/%s", e->d_name);
		snprintf(p, sizeof(p), "%s/%s/dev", sysblock_of(t), e->d_name);
		f = fopen(p, "r");
		if (!f)
			continue;
		if (fgets(devp, sizeof(devp), f) &&
		    sscanf(devp, "%u:%u", &maj, &min) == 2)
			mounted_devno(t, makedev(maj, min), where, len);
		fclose(f);
	}
	closedir(d);
	return found;
}

int io_is_mounted(const char *path, const struct io_mount_tables *t,
		  char *where, size_t len)
{
	char w[1024] = "";
	struct stat st;

	if (stat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (S_ISBLK(st.st_mode))
		return mounted_devno(t, st.st_rdev, where, len);
	if (!S_ISREG(st.st_mode) ||
	    !io_loop_attached(path, t, NULL, 0, w, sizeof(w)) || !w[0])
		return 0;
	if (where && len)
		snprintf(where, len, "%s", w);
	return 1;
}
