/*
 * agentset.c: an agent's image binding and own environment, and the
 * summary of its settings for `sbx provision status` (moved out of
 * cmd/sbx-provision.c: the program parses and renders, this decides).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "agentset.h"
#include "credbind.h"
#include "envelope.h"
#include "fsutil.h"
#include "imagestore.h"
#include "layout.h"
#include "settings.h"

json_t *
sbx_agentset_image_warnings(const struct sbx_image_add *a)
{
	json_t	*w = json_array();
	char	 msg[160];

	if (a->dropped > 0) {
		snprintf(msg, sizeof(msg), "%llu device nodes, FIFOs or "
		    "sockets in the archive were dropped", a->dropped);
		json_array_append_new(w, json_string(msg));
	}
	if (a->stripped > 0) {
		snprintf(msg, sizeof(msg), "setuid, setgid or sticky bits were "
		    "removed from %llu entries", a->stripped);
		json_array_append_new(w, json_string(msg));
	}
	return w;
}

/*
 * The agent's image and environment settings: sbx-managed state, in the
 * record agents/A/image.json (imageref.h), never in
 * config/agents/A.json, which users edit (a rewrite of that file must not
 * unbind the image).  Under the provision lock: the record is written,
 * then the keys an older sbx kept in the config (`image`, `env`) are
 * removed from it, atomically.  digest "" unbinds.  With migrate set,
 * only an old config without a record is moved (digest and env are
 * ignored): provision does that on every run.
 */
int
sbx_agentset_write(struct sbx_provision *p, const char *agent,
    const char *digest, int env, int migrate, struct sbx_error *e)
{
	json_t	*cfg;
	char	 rel[128], name[64], cur[SBX_DIGEST_HEX + 1], *s;
	int	 lock, dfd, rc = -1, r, cur_env;

	if ((lock = sbx_provision_lock(p->rootfd, e)) == -1)
		return -1;
	SBX_LPATH(rel, SBX_L_AGENT_CONFIG, agent);
	snprintf(name, sizeof(name), "%s.json", agent);
	if (sbx_settings_load(p->rootfd, rel, &cfg, e) == -1)
		goto out;
	if (migrate) {
		if ((r = sbx_imageref_record(p->rootfd, agent, cur, &cur_env,
		    e)) != 0 || cfg == NULL || (json_object_get(cfg, "image") ==
		    NULL && json_object_get(cfg, "env") == NULL)) {
			rc = r == -1 ? -1 : 0;
			json_decref(cfg);
			goto out;
		}
		if (sbx_imageref_of(-1, cfg, rel, agent, cur, &cur_env,
		    e) == -1) {
			json_decref(cfg);
			goto out;
		}
		digest = cur;
		env = cur_env;
	}
	if (sbx_imageref_record_write(p->rootfd, agent, digest, env,
	    e) == -1) {
		json_decref(cfg);
		goto out;
	}
	if (cfg == NULL || (json_object_get(cfg, "image") == NULL &&
	    json_object_get(cfg, "env") == NULL)) {
		json_decref(cfg);
		rc = 0;
		goto out;
	}
	json_object_del(cfg, "image");
	json_object_del(cfg, "env");
	s = sbx_envelope_dump(cfg);
	json_decref(cfg);
	if (s == NULL) {
		sbx_error_sys(e, "nomem", "agent settings");
		goto out;
	}
	if ((dfd = sbx_layout_open(p->rootfd, SBX_L_CONFIG_AGENTS, NULL,
	    O_RDONLY | O_DIRECTORY, e)) != -1) {
		rc = sbx_fs_write_atomic(dfd, name, s, strlen(s), 0600, e);
		close(dfd);
	}
	free(s);
out:
	close(lock);
	return rc;
}


/*
 * Bind the agent to an image (--image; `none` unbinds) and give it its
 * own environment (--env) or take it away (--no-env).  An agent that has
 * an environment keeps one across a rebinding: it is made again from the
 * new image.  Unbinding removes it.
 */
int
sbx_agentset_settle(struct sbx_provision *p, const char *agent,
    const char *image, int want_env, int no_env, struct sbx_agentset *st,
    struct sbx_error *e)
{
	char	 cur[SBX_DIGEST_HEX + 1];
	int	 r, had_env = 0;

	memset(st, 0, sizeof(*st));
	st->removed = json_array();
	st->x.evicted = json_array();
	st->x.warnings = json_array();
	/* The current settings (a malformed image setting is replaced when
	 * --image is given). */
	r = sbx_imageref_agent_env(p->rootfd, agent, cur, &had_env, e);
	if (r == -1 && image == NULL)
		return -1;
	if (r != 1)
		cur[0] = '\0';
	if (image == NULL)
		memcpy(st->digest, cur, sizeof(cur));
	else if (strcmp(image, "none") != 0 &&
	    sbx_imagestore_resolve(p->rootfd, image, 1, st->digest, e) == -1)
		return -1;
	st->env = want_env || (had_env && !no_env);
	if (want_env && st->digest[0] == '\0')
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "env", "no_image",
		    "agent %s is not bound to an image: an environment is a "
		    "copy of one; give --image NAME with --own-rootfs",
		    agent);
	if (st->digest[0] == '\0')
		st->env = 0;
	if (sbx_agentset_write(p, agent, st->digest, st->env, 0, e) == -1)
		return -1;
	if (st->env) {
		st->x.agent = agent;
		st->x.digest = st->digest;
		if (sbx_rootfs_limits(p->rootfd, &st->x.max_envs, e) == -1 ||
		    sbx_rootfs_create(p->rootfd, &st->x, e) == -1)
			return -1;
		st->made = 1;
	} else if (had_env || no_env)
		return sbx_rootfs_remove(p->rootfd, agent, st->removed, e);
	return 0;
}

void
sbx_agentset_release(struct sbx_agentset *st)
{
	json_decref(st->removed);
	json_decref(st->x.evicted);
	json_decref(st->x.warnings);
}

/* {path, digest, present, replaced, clone, files, bytes, clone_us} */
json_t *
sbx_agentset_env_json(const char *agent, const struct sbx_agentset *st)
{
	char	 rel[96];

	SBX_LPATH(rel, SBX_L_ENV_ROOTFS, agent);
	return json_pack("{s:s,s:s,s:b,s:b,s:s,s:I,s:I,s:I}", "path", rel,
	    "digest", st->digest, "present", st->x.present, "replaced",
	    st->x.replaced, "clone", st->x.clone ? st->x.clone : "copy",
	    "files", (json_int_t)st->x.files, "bytes",
	    (json_int_t)st->x.bytes, "clone_us", (json_int_t)(st->x.clone_ms *
	    1000.0));
}

/*
 * What the agent's runs will use: its image (by name when one names it,
 * else the short digest) and environment, from the record sbx keeps, and
 * its network mode and allowlist from the settings users edit.  A bound
 * image that is gone or damaged, a revoked agent or settings a run would
 * refuse make the agent not ready (*ok = 0), each with its repair in
 * `problems`.
 */
/* The agent's credential rules: [{"secret","hosts"}], names and hosts
 * only (credbind.h); a set a run would refuse is a problem. */
static json_t *
summary_creds(const json_t *cfg, const char *rel, int *ok, json_t *problems)
{
	struct sbx_credset *set;
	struct sbx_error    e;
	json_t		   *out = json_array(), *h;
	char		    hs[300];
	size_t		    i, j;

	if (json_object_get(cfg, "credentials") == NULL ||
	    (set = malloc(sizeof(*set))) == NULL)
		return out;
	if (sbx_credbind_load(cfg, rel, set, &e) == -1) {
		*ok = 0;
		json_array_append_new(problems,
		    json_pack("{s:s,s:s,s:s,s:s}", "path", rel, "state",
			"invalid", "message", e.message, "repair",
			"correct it with `sbx secret bind` and `unbind`"));
		set->n = 0;
	}
	for (i = 0; i < set->n; i++) {
		h = json_array();
		for (j = 0; j < set->rule[i].nhosts; j++) {
			sbx_credbind_host_str(&set->rule[i].hosts[j], hs,
			    sizeof(hs));
			json_array_append_new(h, json_string(hs));
		}
		json_array_append_new(out, json_pack("{s:s,s:o}", "secret",
		    set->rule[i].secret, "hosts", h));
	}
	free(set);
	return out;
}

json_t *
sbx_agentset_summary(int rootfd, const char *agent, int *ok,
    json_t *problems)
{
	struct sbx_error	 e;
	json_t			*res, *cfg = NULL, *list, *it, *img = json_null();
	json_t			*creds;
	const json_t		*v;
	const char		*name = NULL;
	char			 rel[128], digest[SBX_DIGEST_HEX + 1];
	char			 net[16] = "none";
	size_t			 i, nallow = 0;
	int			 r, env = 0, fd;

	*ok = 1;
	res = json_object();
	if (rootfd < 0)
		return res;
	SBX_LPATH(rel, SBX_L_AGENT_CONFIG, agent);
	if (sbx_settings_agent(rootfd, agent, &cfg, &e) == -1) {
		*ok = 0;
		json_array_append_new(problems, json_pack("{s:s,s:s,s:s,s:s}",
		    "path", rel, "state", "invalid", "message", e.message,
		    "repair", "correct it with `sbx config`"));
	}
	if ((v = json_object_get(cfg, "network")) != NULL &&
	    json_is_string(v))
		snprintf(net, sizeof(net), "%s", json_string_value(v));
	if ((v = json_object_get(cfg, "allowed_domains")) != NULL &&
	    json_is_array(v))
		nallow = json_array_size(v);
	creds = summary_creds(cfg, rel, ok, problems);
	r = sbx_imageref_of(rootfd, cfg, rel, agent, digest, &env, &e);
	json_decref(cfg);
	if (r == -1) {
		*ok = 0;
		json_array_append_new(problems, json_pack("{s:s,s:s,s:s,s:s}",
		    "path", "agents/", "state", "invalid", "message",
		    e.message, "repair", e.hint));
	} else if (r == 1) {
		list = sbx_imagestore_list(rootfd, &e);
		json_array_foreach(list, i, it)
			if (strcmp(json_string_value(json_object_get(it,
			    "digest")), digest) == 0)
				name = json_string_value(json_array_get(
				    json_object_get(it, "names"), 0));
		img = json_pack("{s:s,s:s?}", "digest", digest, "name", name);
		json_decref(list);
		if ((fd = sbx_imageref_open(rootfd, digest, &e)) >= 0) {
			close(fd);
			json_object_set_new(img, "present", json_true());
		} else {
			*ok = 0;
			json_object_set_new(img, "present", json_false());
			json_array_append_new(problems, json_pack(
			    "{s:s+,s:s,s:s,s:s}", "path", "images/", digest,
			    "state", e.reason, "message", e.message, "repair",
			    e.hint));
		}
	}
	if ((r = sbx_provision_revoked(rootfd, agent, &e)) != 0) {
		char	 hint[128];

		*ok = 0;
		snprintf(hint, sizeof(hint), "restore it with `sbx provision "
		    "--agent %s`", agent);
		json_array_append_new(problems, json_pack("{s:s+++,s:s,s:s,"
		    "s:s}", "path", "agents/", agent, "/",
		    SBX_REVOKED_MARKER, "state", "unprovisioned", "message",
		    "the agent was unprovisioned (its token is revoked)",
		    "repair", hint));
	}
	json_object_set_new(res, "image", img);
	json_object_set_new(res, "env", json_boolean(r >= 0 && env));
	json_object_set_new(res, "network", json_string(net));
	json_object_set_new(res, "allowed_domains", json_integer(
	    (json_int_t)nallow));
	json_object_set_new(res, "unprovisioned", json_boolean(r == 1));
	json_object_set_new(res, "credentials", creds);
	return res;
}
