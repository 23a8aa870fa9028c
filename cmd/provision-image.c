/*
 * provision-image.c: sbx provision image add, list, rm and verify: image.c,
 * imagestore.c and download.c's answers rendered as text or
 * envelopes.  Part of sbx-provision (cmd/sbx-provision.c parses).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "agentset.h"
#include "buf.h"
#include "cli.h"
#include "cmd.h"
#include "download.h"
#include "envelope.h"
#include "fsutil.h"
#include "image.h"
#include "imageref.h"
#include "imagestore.h"
#include "layout.h"
#include "manifest.h"
#include "names.h"
#include "opts.h"
#include "provision.h"
#include "root.h"
#include "rootfs.h"
#include "time.h"
#include "users.h"
#include "utf8.h"

#include "provision-int.h"

/* ---- images ------------------------------------------------------------- */

/* A progress bar on standard error, only when it is a terminal (and not
 * with -q): download.c calls this as data arrives. */
static struct {
	int		 on;
	int		 shown;
	long long	 last_ms;
} bar;


static void
progress(void *arg, unsigned long long now, unsigned long long total)
{
	char		 fill[31];
	long long	 t = sbx_now_ms();
	unsigned	 k;

	(void)arg;
	if (!bar.on || (t - bar.last_ms < 100 && (total == 0 || now < total)))
		return;
	bar.last_ms = t;
	bar.shown = 1;
	if (total == 0) {
		fprintf(stderr, "\r%s: downloading %.1f MiB", PROG,
		    (double)now / 1048576.0);
		return;
	}
	k = (unsigned)(now * 30 / total);
	memset(fill, '#', k > 30 ? 30 : k);
	memset(fill + (k > 30 ? 30 : k), ' ', 30 - (k > 30 ? 30 : k));
	fill[30] = '\0';
	fprintf(stderr, "\r%s: [%s] %3u%% %.1f/%.1f MiB", PROG, fill,
	    (unsigned)(now * 100 / total), (double)now / 1048576.0,
	    (double)total / 1048576.0);
}

static void
progress_end(void)
{
	if (bar.shown)
		fputc('\n', stderr);
	bar.shown = 0;
}

/* Fetch a URL source into cache/ (an unnamed file) for image add. */
static int
download(struct sbx_image_add *a, struct sbx_download *d)
{
	struct sbx_error	 e;
	int			 cachefd, fd;

	memset(d, 0, sizeof(*d));
	d->url = a->source;
	d->max_bytes = a->max_bytes;
	d->timeout = a->download_timeout;
	d->expect = a->sha256;
	d->progress = progress;
	bar.on = !O.quiet && isatty(STDERR_FILENO);
	if ((cachefd = sbx_fs_mkdirs_at(root.fd, "cache", 0700, &e)) == -1)
		sbx_cmd_die(&e);
	fd = sbx_download_fetch(cachefd, d, &e);
	progress_end();
	close(cachefd);
	if (fd == -1)
		sbx_cmd_die(&e);
	a->use_fd = 1;
	a->fd = fd;
	return fd;
}

int
do_image_add(void)
{
	struct sbx_image_add	 a;
	struct sbx_download	 d;
	struct sbx_error	 e;
	json_t			*res, *w;
	char			 rel[SBX_DIGEST_HEX + 32];
	int			 plain, url, fd = -1, downloaded;

	if (O.npos != 2)
		usage("image add needs SOURCE");
	if (O.sha256 == NULL)
		usage("image add needs --sha256 HEX");
	memset(&a, 0, sizeof(a));
	memset(&d, 0, sizeof(d));
	a.source = O.pos[1];
	a.sha256 = O.sha256;
	a.name = O.name;
	/* Refuse a malformed digest or name before touching anything. */
	if (!sbx_names_digest_valid(a.sha256) || (a.name != NULL &&
	    !sbx_names_image_valid(a.name))) {
		if (sbx_image_add(-1, &a, &e) == -1)
			sbx_cmd_die(&e);
	}
	/* And a URL against the download policy before anything is
	 * created, resolved or dialled. */
	if ((url = sbx_download_is_url(a.source)) &&
	    sbx_download_check(a.source, &plain, &e) == -1)
		sbx_cmd_die(&e);
	if (sbx_root_open(&root, 1, &e) == -1)
		sbx_cmd_die(&e);
	umask(077);
	if (sbx_image_limits(root.fd, &a, &e) == -1)
		sbx_cmd_die(&e);
	/* Already there (the digest names the content): no download. */
	if (url) {
		a.present_only = 1;
		if (sbx_image_add(root.fd, &a, &e) == -1)
			sbx_cmd_die(&e);
		a.present_only = 0;
		if (!a.present)
			fd = download(&a, &d);
	}
	if (!a.present && sbx_image_add(root.fd, &a, &e) == -1)
		sbx_cmd_die(&e);
	if ((downloaded = fd != -1))
		close(fd);
	SBX_LPATH(rel, SBX_L_IMAGE_ROOTFS, a.sha256);
	w = sbx_agentset_image_warnings(&a);
	if (O.json) {
		res = json_pack("{s:s,s:s,s:b,s:o,s:I,s:I,s:I,s:I}", "digest",
		    a.sha256, "path", rel, "present", a.present, "root",
		    root_json(), "entries", (json_int_t)a.entries, "bytes",
		    (json_int_t)a.bytes, "dropped", (json_int_t)a.dropped,
		    "stripped", (json_int_t)a.stripped);
		/* Never the URL itself: it may carry a signed query. */
		if (downloaded)
			json_object_set_new(res, "download", json_pack(
			    "{s:I,s:i,s:I}", "bytes", (json_int_t)d.bytes,
			    "redirects", (int)d.redirects, "status",
			    (json_int_t)d.status));
		if (a.name != NULL)
			json_object_set_new(res, "name", json_string(a.name));
		if (a.layers > 0)
			json_object_set_new(res, "layers",
			    json_integer((json_int_t)a.layers));
		sbx_cmd_emit(sbx_envelope_ok(tool, res, w));
		return 0;
	}
	if (!O.quiet) {
		print_warnings(w);
		if (a.present)
			printf("image %s already present%s%s\n", a.sha256,
			    a.name ? "; named " : "", a.name ? a.name : "");
		else
			printf("image %s added: %llu entries, %llu bytes%s%s\n",
			    a.sha256, a.entries, a.bytes, a.name ?
			    "; named " : "", a.name ? a.name : "");
	}
	json_decref(w);
	return 0;
}

int
do_image_list(void)
{
	struct sbx_error	 e;
	json_t			*imgs, *envs = NULL, *it, *v;
	size_t			 i, j;
	int			 rootfd;

	if (O.npos != 1)
		usage("too many arguments");
	rootfd = open_root_existing(0);
	if ((imgs = sbx_imagestore_list(rootfd, &e)) == NULL ||
	    (envs = sbx_rootfs_list(rootfd, &e)) == NULL)
		sbx_cmd_die(&e);
	if (O.json) {
		sbx_cmd_emit(sbx_envelope_ok(tool, json_pack("{s:o,s:o,s:o}",
		    "images", imgs, "envs", envs, "root", root_json()), NULL));
		return 0;
	}
	if (!O.quiet) {
		printf("%-64s  %-8s  %s\n", "DIGEST", "COMPLETE", "NAMES");
		json_array_foreach(imgs, i, it) {
			printf("%-64s  %-8s  ", json_string_value(
			    json_object_get(it, "digest")), json_is_true(
			    json_object_get(it, "complete")) ? "yes" : "no");
			json_array_foreach(json_object_get(it, "names"), j, v)
				printf("%s%s", j ? "," : "",
				    json_string_value(v));
			printf("\n");
		}
		if (json_array_size(envs) > 0)
			printf("\n%-32s  %-12s  %-24s  %s\n", "ENV (AGENT)",
			    "IMAGE", "LAST USED", "CLONE");
		json_array_foreach(envs, i, it) {
			const char *dg = json_string_value(json_object_get(it,
			    "digest"));
			const char *lu = json_string_value(json_object_get(it,
			    "last_used"));
			const char *cl = json_string_value(json_object_get(it,
			    "clone"));
			printf("%-32s  %-12.12s  %-24s  %s\n",
			    json_string_value(json_object_get(it, "agent")),
			    dg ? dg : "?", lu ? lu : "?", cl ? cl : "?");
		}
	}
	json_decref(imgs);
	json_decref(envs);
	return 0;
}

int
do_image_rm(void)
{
	struct sbx_error	 e;
	json_t			*res, *a;
	size_t			 i;
	int			 rootfd, kept;

	if (O.npos != 2)
		usage("image rm needs NAME or DIGEST");
	if ((rootfd = open_root_existing(0)) < 0) {
		sbx_error_set(&e, SBX_K_NOT_FOUND, "image", "image_missing",
		    "there is no state root, so no image");
		sbx_cmd_die(&e);
	}
	res = json_object();
	if (sbx_imagestore_rm(rootfd, O.pos[1], O.force, res, &e) == -1)
		sbx_cmd_die(&e);
	kept = strcmp(json_string_value(json_object_get(res, "template")),
	    "kept") == 0;
	json_object_set_new(res, "root", root_json());
	if (O.json) {
		sbx_cmd_emit(sbx_envelope_ok(tool, res, NULL));
		return 0;
	}
	if (!O.quiet) {
		print_list("removed   ", json_object_get(res, "removed"));
		json_array_foreach(json_object_get(res, "names_removed"), i, a)
			printf("name %s removed\n", json_string_value(a));
		if (kept)
			printf("template %.12s kept: %zu other name%s, %zu "
			    "agent%s bound to it\n", json_string_value(
			    json_object_get(res, "digest")),
			    json_array_size(json_object_get(res, "names_left")),
			    json_array_size(json_object_get(res,
			    "names_left")) == 1 ? "" : "s",
			    json_array_size(json_object_get(res,
			    "agents_bound")), json_array_size(json_object_get(
			    res, "agents_bound")) == 1 ? "" : "s");
	}
	/* Said even with -q: a forced removal broke these agents. */
	json_array_foreach(json_object_get(res, "broken_agents"), i, a)
		fprintf(stderr, "%s: warning: agent %s was bound to the "
		    "removed image; its runs are refused until it is bound to "
		    "another (sbx provision --agent %s --image NAME)\n", PROG,
		    json_string_value(a), json_string_value(a));
	json_decref(res);
	return 0;
}

int
do_image_verify(void)
{
	struct sbx_error	 e;
	json_t			*imgs, *it, *d, *diffs, *out;
	char			 digest[SBX_DIGEST_HEX + 1];
	const char		*dg;
	size_t			 i, j;
	int			 rootfd, damaged = 0;

	if (O.npos > 2)
		usage("too many arguments");
	rootfd = open_root_existing(0);
	if (O.npos == 2) {
		if (rootfd < 0 || (!sbx_names_digest_valid(O.pos[1]) &&
		    sbx_imagestore_resolve(rootfd, O.pos[1], 0, digest, &e) ==
		    -1)) {
			if (rootfd < 0)
				sbx_error_set(&e, SBX_K_NOT_FOUND, "image",
				    "image_missing", "there is no state root, "
				    "so no image");
			sbx_cmd_die(&e);
		}
		if (sbx_names_digest_valid(O.pos[1]))
			snprintf(digest, sizeof(digest), "%s", O.pos[1]);
		imgs = json_pack("[{s:s}]", "digest", digest);
	} else if ((imgs = sbx_imagestore_list(rootfd, &e)) == NULL)
		sbx_cmd_die(&e);
	out = json_array();
	json_array_foreach(imgs, i, it) {
		dg = json_string_value(json_object_get(it, "digest"));
		diffs = json_array();
		if (sbx_manifest_verify(rootfd, dg, diffs, &e) == -1)
			sbx_cmd_die(&e);
		if (json_array_size(diffs) > 0)
			damaged = 1;
		json_array_append_new(out, json_pack("{s:s,s:b,s:o}", "digest",
		    dg, "ok", json_array_size(diffs) == 0, "differences",
		    diffs));
	}
	json_decref(imgs);
	if (O.json) {
		sbx_cmd_emit(sbx_envelope_ok(tool, json_pack("{s:o,s:b,s:o}",
		    "images", out, "ok", !damaged, "root", root_json()), NULL));
		return damaged ? SBX_EX_NEGATIVE : 0;
	}
	if (!O.quiet)
		json_array_foreach(out, i, it) {
			diffs = json_object_get(it, "differences");
			printf("image %s: %s\n", json_string_value(
			    json_object_get(it, "digest")),
			    json_array_size(diffs) ? "damaged" : "ok");
			json_array_foreach(diffs, j, d) {
				char pre[64];
				snprintf(pre, sizeof(pre), "  %-8s ",
				    json_string_value(json_object_get(d,
				    "change")));
				print_line(stdout, pre, json_string_value(
				    json_object_get(d, "path")), "");
			}
		}
	json_decref(out);
	return damaged ? SBX_EX_NEGATIVE : 0;
}
