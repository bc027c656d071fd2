/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: parsing command-line values (sizes, times). */
#include "config.h"
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "cmd/common/common.h"

int r4cmd_parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	if (!s || !isdigit((unsigned char)*s))
		return R4_EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return R4_EINVAL;
	switch (toupper((unsigned char)*end)) {
	case '\0': break;
	case 'K': shift = 10; break;
	case 'M': shift = 20; break;
	case 'G': shift = 30; break;
	case 'T': shift = 40; break;
	case 'P': shift = 50; break;
	default: return R4_EINVAL;
	}
	if (*end) {
		end++;
		/* Accept "64M", "64MB", "64MiB". */
		if (!strcasecmp(end, "iB") || !strcasecmp(end, "B"))
			end += strlen(end);
		if (*end)
			return R4_EINVAL;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return R4_EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

/* Days from 1970-01-01 to the given proleptic Gregorian date. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static int parse_date(const char *s, int64_t *out)
{
	int y, mo, d, h = 0, mi = 0, sec = 0, n = 0;

	if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3)
		return R4_EINVAL;
	s += n;
	if (*s == 'T' || *s == ' ') {
		s++;
		n = 0;
		if (sscanf(s, "%2d:%2d%n", &h, &mi, &n) != 2)
			return R4_EINVAL;
		s += n;
		if (*s == ':') {
			n = 0;
			if (sscanf(s + 1, "%2d%n", &sec, &n) != 1)
				return R4_EINVAL;
			s += 1 + n;
		}
	}
	if (*s == 'Z')
		s++;
	if (*s || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
	    sec > 60)
		return R4_EINVAL;
	*out = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 +
	       h * 3600 + mi * 60 + sec;
	return 0;
}

int r4cmd_parse_time(const char *s, int64_t *out)
{
	const char *p = *s == '@' ? s + 1 : s;
	char *end;
	long long v;

	if (!*p)
		return R4_EINVAL;
	if (*s != '@' && strchr(p, '-') && strchr(p + 1, '-'))
		return parse_date(p, out);
	errno = 0;
	v = strtoll(p, &end, 10);
	if (errno || *end || end == p)
		return R4_EINVAL;
	*out = v;
	return 0;
}
