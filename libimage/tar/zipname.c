/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: zip member names as the zip file has them (read.c's archive
 * loop asks, libarchive reads the entries). */
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "format/endian.h"
#include "libimage/tar/tar.h"

/* A backslash in a zip member's name is a byte of the name (the zip
 * format's separator is '/'), except in a zip made on MS-DOS or Windows
 * (its central directory's "version made by" names host 0 FAT, 6 HPFS,
 * 11 NTFS or 14 VFAT), whose tools write '\\' for '/'. libarchive 3.6
 * turns every backslash of a name without '/' into '/' whatever the
 * host (so "a\\b" became a folder a with a file b). The central
 * directory of a zip file (not standard input) is read here once; its
 * records follow the entries libarchive gives, in order; where a record's
 * raw name is the entry's name with backslashes for some of its slashes
 * (and the host is not one of those), the raw name is taken. */
#define ZIP_CD_MAX (64u << 20)	/* central directories read at most */

/* The central directory of the zip file fd (size bytes) into z; nothing
 * when it cannot be found or read (the names stay libarchive's). */
static void zip_cd_load(struct tar_zipnames *z, int fd, uint64_t size)
{
	uint8_t tail[22 + 65535], loc[20], z64[56];
	size_t n = size < sizeof(tail) ? (size_t)size : sizeof(tail);
	uint64_t off, len;
	ssize_t i;

	if (size < 22 || pread(fd, tail, n, (off_t)(size - n)) != (ssize_t)n)
		return;
	for (i = (ssize_t)n - 22; i >= 0; i--)
		if (!memcmp(tail + i, "PK\5\6", 4))
			break;
	if (i < 0)
		return;
	len = get_le32(tail + i + 12);
	off = get_le32(tail + i + 16);
	/* zip64: the locator before the end record names the zip64 end */
	if ((off == 0xffffffffu || len == 0xffffffffu) &&
	    size - n + (uint64_t)i >= 20 &&
	    pread(fd, loc, 20, (off_t)(size - n + (uint64_t)i - 20)) == 20 &&
	    !memcmp(loc, "PK\6\7", 4) && get_le64(loc + 8) < size - 56 &&
	    pread(fd, z64, 56, (off_t)get_le64(loc + 8)) == 56 &&
	    !memcmp(z64, "PK\6\6", 4)) {
		len = get_le64(z64 + 40);
		off = get_le64(z64 + 48);
	}
	if (!len || len > ZIP_CD_MAX || off > size || len > size - off)
		return;
	z->cd = malloc((size_t)len);
	if (!z->cd)
		return;
	if (pread(fd, z->cd, (size_t)len, (off_t)off) != (ssize_t)len) {
		free(z->cd);
		z->cd = NULL;
		return;
	}
	z->len = (size_t)len;
	z->at = 0;
}

/* The next record's name for libarchive's entry name: buf when the raw
 * name is to be taken, else name. */
const char *tar_zip_name(struct tar_zipnames *z, const char *name, char *buf,
			    size_t cap)
{
	const uint8_t *r;
	size_t nl, el, cl, n = strlen(name), k;
	unsigned host;
	int back = 0;

	if (!z->cd || z->len - z->at < 46 ||
	    memcmp(z->cd + z->at, "PK\1\2", 4)) {
		free(z->cd);		/* out of step: names left as they are */
		z->cd = NULL;
		return name;
	}
	r = z->cd + z->at;
	host = r[5];
	nl = get_le16(r + 28);
	el = get_le16(r + 30);
	cl = get_le16(r + 32);
	if (nl + el + cl > z->len - z->at - 46) {
		free(z->cd);
		z->cd = NULL;
		return name;
	}
	z->at += 46 + nl + el + cl;
	r += 46;
	if (host == 0 || host == 6 || host == 11 || host == 14)
		return name;
	/* the same name, a '/' where the record has '\\' (and a '/'
	 * libarchive added to a directory's name) */
	if (nl + 1 >= cap || (n != nl && !(n == nl + 1 && name[nl] == '/')))
		return name;
	for (k = 0; k < nl; k++) {
		if (r[k] == '\\' && name[k] == '/')
			back = 1;
		else if (r[k] != (uint8_t)name[k])
			return name;
	}
	if (!back)
		return name;
	memcpy(buf, r, nl);
	memcpy(buf + nl, name + nl, n - nl + 1);
	return buf;
}

/* Once the first header is read the format is known (zip: a zip): a
 * zip file's central directory into z (and a name buffer), for the
 * names as they are. 1 for a zip file, else 0. */
int tar_zip_names_load(int zip, const char *path, struct tar_zipnames *z,
		       char **zbuf)
{
	int fd;
	struct stat st;

	zip = zip && strcmp(path, "-");
	fd = zip ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode))
		zip_cd_load(z, fd, (uint64_t)st.st_size);
	if (fd >= 0)
		close(fd);
	if (z->cd && !(*zbuf = malloc(PATH_MAX + 2))) {
		free(z->cd);
		z->cd = NULL;
	}
	return zip;
}
