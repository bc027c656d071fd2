/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "tap.h"
#include "format/checksum.h"

int main(void)
{
	uint8_t buf[4092];

	is_u64(fmt_crc32c_raw(~0u, "123456789", 9), 0x1cf96d7c,
	       "crc32c raw of 123456789");
	is_u64(~fmt_crc32c_raw(~0u, "123456789", 9), 0xe3069283,
	       "standard crc32c of 123456789");
	is_u64(fmt_crc32c_raw(fmt_crc32c_raw(~0u, "1234", 4), "56789", 5),
	       0x1cf96d7c, "crc32c raw continues over pieces");
	memset(buf, 0, sizeof(buf));
	is_u64(fmt_adler32(buf, sizeof(buf)), 0x0ffc0001, "adler32 of 4092 zeros");
	memset(buf, 0xff, sizeof(buf));
	is_u64(fmt_adler32(buf, sizeof(buf)), 0xc397ece6, "adler32 of 4092 0xff");
	is_u64(fmt_adler32("Wikipedia", 9), 0x11E60398, "adler32 of Wikipedia");
	is_u64(fmt_adler32_update(fmt_adler32("Wiki", 4), "pedia", 5),
	       0x11E60398, "adler32 continues over pieces");
	return tap_done();
}
