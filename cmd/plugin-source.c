/*
 * sbx-plugin's recipe sources (see cmd/plugin-int.h): a recipe file or
 * directory of the person's, or an URL whose bytes must have the digest
 * they gave.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "cmd.h"
#include "download.h"
#include "envelope.h"
#include "layout.h"
#include "plugin-int.h"
#include "plugin.h"
#include "recipe.h"

/* A recipe file or directory of the person's: the path resolved as they
 * wrote it; beneath it (a directory source) nothing is followed. */
json_t *
plugin_read_source(const char *src)
{
	struct sbx_error e;
	json_t		*in;
	char		 abs[PATH_MAX];
	int		 fd;

	if (realpath(src, abs) == NULL) {
		sbx_error_sys(&e, "not_found", "cannot read %s", src);
		e.kind = SBX_K_NOT_FOUND;
		e.field = "source";
		sbx_cmd_die(&e);
	}
	if ((fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    (in = sbx_plugin_source_read(fd, abs[1] != '\0' ? abs + 1 : ".",
		 &e)) == NULL)
		sbx_cmd_die(&e);
	close(fd);
	return in;
}

/*
 * A recipe from an https URL (plain http only to a loopback address, for
 * tests: lib/image/download.c's policy), whose bytes must have the
 * SHA-256 the person gave: nothing from the network is judged before its
 * hash is checked.
 */
json_t *
plugin_read_url(const char *url)
{
	struct sbx_download d;
	struct sbx_error    e;
	struct sbx_buf	    b = SBX_BUF_INIT;
	json_t		   *in;
	size_t		    i;
	int		    cachefd, fd;

	if (O.sha256 == NULL) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "sha256",
		    "missing_sha256",
		    "a recipe URL needs --sha256 HEX: the "
		    "digest of the file you reviewed");
		sbx_cmd_die(&e);
	}
	for (i = 0; O.sha256[i] != '\0'; i++)
		if (!((O.sha256[i] >= '0' && O.sha256[i] <= '9') ||
			(O.sha256[i] >= 'a' && O.sha256[i] <= 'f')))
			break;
	if (i != SBX_RECIPE_SHA_HEX || O.sha256[i] != '\0') {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "sha256",
		    "invalid_digest",
		    "argument `sha256` must be 64 lowercase hex digits");
		sbx_cmd_die(&e);
	}
	memset(&d, 0, sizeof(d));
	d.url = url;
	d.max_bytes = SBX_RECIPE_MAX;
	d.timeout = 120;
	d.expect = O.sha256;
	plugin_open_root();
	if ((cachefd = sbx_layout_mkdirs(root.fd, SBX_L_CACHE, NULL, &e)) == -1)
		sbx_cmd_die(&e);
	fd = sbx_download_fetch(cachefd, &d, &e);
	close(cachefd);
	if (fd == -1)
		sbx_cmd_die(&e);
	for (;;) {
		char	chunk[8192];
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		sbx_buf_append(&b, chunk, (size_t)n);
	}
	close(fd);
	in = sbx_json_parse(b.p != NULL ? b.p : "", b.len, SBX_RECIPE_MAX, &e);
	sbx_buf_release(&b);
	if (in == NULL)
		sbx_cmd_die(&e);
	return in;
}
