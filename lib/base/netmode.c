/* netmode.c: the network modes' table (netmode.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "netmode.h"

#define ROW(m, name, netns, relay, rank, warning)			\
	{ SBX_NETMODE_##m, name, netns, relay, rank, warning },
static const struct sbx_netmode_row rows[SBX_NETMODE_COUNT] = {
	SBX_NETMODE_TABLE(ROW)
};
#undef ROW

const struct sbx_netmode_row *
sbx_netmode_row(enum sbx_netmode m)
{
	return (unsigned)m < SBX_NETMODE_COUNT ? &rows[m] : &rows[0];
}

const char *
sbx_netmode_name(enum sbx_netmode m)
{
	return sbx_netmode_row(m)->name;
}

int
sbx_netmode_parse(const char *s, enum sbx_netmode *m)
{
	size_t	 i;

	for (i = 0; s != NULL && i < SBX_NETMODE_COUNT; i++)
		if (strcmp(s, rows[i].name) == 0) {
			*m = rows[i].mode;
			return 0;
		}
	errno = EINVAL;
	return -1;
}

int
sbx_netmode_rank(const char *s)
{
	enum sbx_netmode m;

	return sbx_netmode_parse(s, &m) == 0 ? rows[m].rank : rows[0].rank;
}

const char *
sbx_netmode_list(char *buf, size_t size)
{
	size_t	 i, n = 0;
	int	 w;

	if (size == 0)
		return buf;
	buf[0] = '\0';
	for (i = 0; i < SBX_NETMODE_COUNT && n < size; i++) {
		w = snprintf(buf + n, size - n, "%s%s",
		    i == 0 ? "" : i + 1 == SBX_NETMODE_COUNT ? " or " : ", ",
		    rows[i].name);
		if (w < 0)
			break;
		n += (size_t)w;
	}
	return buf;
}
