/* imageref.c: an agent's image, as sbx-exec finds and checks it. */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "fsutil.h"
#include "imageref.h"
#include "runlimits.h"

int
sbx_image_digest_valid(const char *s)
{
	size_t	 i;

	if (s == NULL)
		return 0;
	for (i = 0; i < SBX_DIGEST_HEX; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[i] == '\0';
}

int
sbx_image_name_valid(const char *s)
{
	size_t	 i;

	if (s == NULL || !((s[0] >= 'a' && s[0] <= 'z') ||
	    (s[0] >= '0' && s[0] <= '9')))
		return 0;
	for (i = 1; s[i] != '\0'; i++) {
		if (i >= 64)
			return 0;
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '.' ||
		    s[i] == '_' || s[i] == '-'))
			return 0;
	}
	/* A name that looks like a digest would shadow one. */
	return !sbx_image_digest_valid(s);
}

int
sbx_imageref_agent(int rootfd, const char *agent,
    char digest[SBX_DIGEST_HEX + 1], struct sbx_error *e)
{
	char		 rel[128];
	json_t		*cfg, *v;

	snprintf(rel, sizeof(rel), "config/agents/%s.json", agent);
	if (sbx_config_load(rootfd, rel, &cfg, e) == -1)
		return -1;
	if (cfg == NULL)
		return 0;
	v = json_object_get(cfg, "image");
	if (v == NULL || json_is_null(v)) {
		json_decref(cfg);
		return 0;
	}
	if (!json_is_string(v) || !sbx_image_digest_valid(
	    json_string_value(v))) {
		json_decref(cfg);
		sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "config_invalid", "%s: image must be a sha256 digest "
		    "(64 lowercase hex digits)", rel);
		sbx_error_hint(e, "bind the agent again with `sbx provision "
		    "--agent %s --image NAME`", agent);
		return -1;
	}
	memcpy(digest, json_string_value(v), SBX_DIGEST_HEX + 1);
	json_decref(cfg);
	return 1;
}

static int
refuse(struct sbx_error *e, const char *reason, const char *digest,
    const char *what)
{
	sbx_error_set(e, SBX_K_REJECTED, "image", reason, "image %.12s %s",
	    digest, what);
	sbx_error_hint(e, "add it again with `sbx provision image add "
	    "SOURCE --sha256 %s`, then check it with `sbx provision image "
	    "verify`", digest);
	return -1;
}

int
sbx_imageref_open(int rootfd, const char *digest, struct sbx_error *e)
{
	static const char *const need[] = { "etc/passwd", "etc/group",
	    "etc/hosts", "etc/resolv.conf" };
	struct sbx_error e2;
	struct stat	 st;
	char		 rel[SBX_DIGEST_HEX + 64];
	size_t		 i;
	int		 dfd, fd;

	if (!sbx_image_digest_valid(digest))
		return refuse(e, "image_missing", "?", "is not a digest");
	snprintf(rel, sizeof(rel), "images/%s", digest);
	/* Beneath the root, no symlink followed: a planted images/ or
	 * images/<digest> link never redirects what the sandbox sees. */
	if ((dfd = sbx_open_beneath(rootfd, rel, O_PATH | O_DIRECTORY, &e2))
	    == -1) {
		if (e2.kind != NULL && strcmp(e2.kind, SBX_K_NOT_FOUND) == 0)
			return refuse(e, "image_missing", digest, "is not in "
			    "images/ of the state root");
		return refuse(e, "image_damaged", digest, "cannot be opened "
		    "safely");
	}
	/* Cheap on purpose (no tree walk at start-up, DESIGN.md §7): the
	 * manifest is written last, just before the atomic rename, so its
	 * presence means the unpacking completed; `image verify` does the
	 * full comparison. */
	if (fstatat(dfd, SBX_IMAGE_MANIFEST, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    !S_ISREG(st.st_mode) || st.st_size == 0) {
		close(dfd);
		return refuse(e, "image_damaged", digest, "has no manifest");
	}
	fd = openat(dfd, "rootfs", O_PATH | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	close(dfd);
	if (fd == -1)
		return refuse(e, "image_damaged", digest, "has no rootfs "
		    "directory");
	for (i = 0; i < sizeof(need) / sizeof(*need); i++)
		if (fstatat(fd, need[i], &st, AT_SYMLINK_NOFOLLOW) == -1 ||
		    !S_ISREG(st.st_mode)) {
			close(fd);
			return refuse(e, "image_damaged", digest, "lacks a "
			    "regular /etc/passwd, group, hosts or "
			    "resolv.conf");
		}
	return fd;
}
