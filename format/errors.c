/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>
#include "errors.h"

const char *r4_strerror(int err)
{
	switch (err) {
	case 0: return "success";
	case R4_ECORRUPT: return "corrupted structure";
	case R4_EBADMAGIC: return "bad magic";
	case R4_ERANGE: return "value out of range";
	case R4_EUNSUPP: return "unsupported feature";
	case R4_ECSUM: return "checksum mismatch";
	case R4_ENOSPC: return "no space left";
	case R4_ENOTFOUND: return "not found";
	case R4_EEXIST: return "already exists";
	case R4_EINVAL: return "invalid argument";
	case R4_ELOOP: return "cycle detected";
	case R4_EBUSY: return "device is busy or mounted";
	default:
		break;
	}
	if (err < 0 && err > -R4_EBASE)
		return strerror(-err);
	return "unknown error";
}
