/*
 * bridgestore.c: the bridge's per-agent records (bridgestore.h).
 *
 * Everything is opened beneath the state root's descriptor through the
 * layout table, without following symbolic links; SQLite, which opens by
 * path, is given /proc/self/fd/N/memory.db of the directory so opened, so
 * a symlink planted in the root never redirects the database either.
 */
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>
#include <sqlite3.h>

#include "bridgestore.h"
#include "buf.h"
#include "credrule.h"
#include "envelope.h"
#include "fsutil.h"
#include "layout.h"
#include "scrub.h"
#include "secret.h"
#include "time.h"

/* agents/A/bridge/, created on demand (0700). */
static int
bridge_dir(int rootfd, const char *agent, struct sbx_error *e)
{
	return sbx_layout_mkdirs(rootfd, SBX_L_AGENT_BRIDGE, agent, e);
}

static const char *
leaf(enum sbx_layout_id id, const char *agent, char *buf, size_t sz)
{
	if (sbx_layout_path(id, agent, buf, sz, NULL) == -1)
		return "";
	return sbx_layout_leaf(buf);
}

/* A JSON document beneath dirfd, or an empty object when absent.  A
 * refusal names rel (the file from the root) and says how to repair. */
static json_t *
read_doc(int dirfd, const char *name, const char *rel, const char *repair,
    size_t cap, struct sbx_error *e)
{
	struct sbx_buf b = SBX_BUF_INIT;
	json_t	      *doc;

	if (sbx_fs_read_file_at(dirfd, name, cap, &b, e) == -1) {
		if (sbx_error_absent(e)) {
			memset(e, 0, sizeof(*e));
			return json_object();
		}
		sbx_error_in_file(e, rel, "%s", repair);
		return NULL;
	}
	if ((doc = sbx_json_parse(b.p != NULL ? b.p : "", b.len, cap, e)) ==
	    NULL)
		sbx_error_in_file(e, rel, "%s", repair);
	sbx_buf_release(&b);
	return doc;
}

static int
write_doc(int dirfd, const char *name, const json_t *doc, size_t cap,
    struct sbx_error *e)
{
	char *s;
	int   rc;

	if ((s = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS)) == NULL)
		return sbx_error_sys(e, "nomem", "encoding %s", name);
	if (strlen(s) > cap) {
		free(s);
		return sbx_error_set(e, SBX_K_REJECTED, NULL, "store_full",
		    "%s would exceed %zu bytes", name, cap);
	}
	rc = sbx_fs_write_atomic(dirfd, name, s, strlen(s), 0600, e);
	free(s);
	return rc;
}

/*
 * One rule for every record a run sends (issue 27): what the sandbox
 * prints is scrubbed of the agent's secrets, and so is what it stores
 * here, when it is stored and again when it is read, by whoever reads it
 * (the read routes, `sbx bridge events|tasks`, task done).  Scrubbing when
 * stored keeps the value off the disk; scrubbing when read also covers a
 * record stored before a secret was set, or by an older sbx.  The
 * scrubber is the agent's whole store (a superset of any run's), kept
 * while the store file is the same.  When the store cannot be opened (it
 * is sealed with a passphrase this process does not have), nothing is
 * stored or shown: the caller gets an error, never the raw record.
 */
static struct sbx_scrub *run_sc;

void
sbx_bstore_run_scrubber(struct sbx_scrub *sc)
{
	run_sc = sc;
}

static int
scrub_rec(int rootfd, const char *agent, json_t *j, struct sbx_error *e)
{
	struct sbx_scrub *sc;
	struct sbx_error  se = { 0 };

	if (j == NULL)
		return 0;
	/*
	 * The store, and the asking run's own values when the bridge has
	 * them: a store this process cannot open (a passphrase, a key file
	 * named in the caller's environment) is then covered by the run,
	 * which opened it.  Neither: withheld.
	 */
	if (sbx_secret_scrubber_cached(rootfd, agent, &sc, &se) == -1) {
		if (run_sc == NULL)
			return sbx_error_set(e, SBX_K_UNAVAILABLE, NULL,
			    "cannot_scrub", "the record is withheld: agent "
			    "%s's secret store cannot be opened to scrub it "
			    "(%s)", agent, se.message);
		sc = NULL;
	}
	sbx_scrub_json(sc, j);
	sbx_scrub_json(run_sc, j);
	return 0;
}

int
sbx_bstore_scrub(int rootfd, const char *agent, json_t *j,
    struct sbx_error *e)
{
	return scrub_rec(rootfd, agent, j, e);
}

/* Keys and plugin ids: what a person would write, nothing a path or a
 * shell could misread. */
static int
key_valid(const char *s, size_t max)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > max || !isalnum((unsigned char)s[0]))
		return 0;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '.' &&
		    s[i] != '_' && s[i] != '-')
			return 0;
	return 1;
}

json_t *
sbx_bstore_plugin(int rootfd, const char *agent, const char *plugin,
    struct sbx_error *e)
{
	char	rel[SBX_LAYOUT_PATH_MAX];
	json_t *doc, *list, *p;
	size_t	i;
	int	fd;

	if (!key_valid(plugin, 64))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "plugin",
			   "bad_plugin", "X-Sbx-Plugin is not a plugin id"),
		       NULL;
	if ((fd = sbx_layout_open(rootfd, SBX_L_AGENT_RECORDS, agent,
		 O_PATH | O_DIRECTORY | O_CLOEXEC, e)) == -1) {
		if (!sbx_error_absent(e))
			return NULL;
		/* No records at all: no plugin either. */
		memset(e, 0, sizeof(*e));
		return sbx_error_set(e, SBX_K_REJECTED, "plugin",
			   "not_installed",
			   "plugin %s is not installed for this "
			   "agent",
			   plugin),
		       NULL;
	}
	doc = read_doc(fd, leaf(SBX_L_AGENT_PLUGINS, agent, rel, sizeof(rel)),
	    rel,
	    "move it aside and install the agent's plugins again "
	    "(sbx plugin install)",
	    1u << 20, e);
	close(fd);
	if (doc == NULL)
		return NULL;
	list = json_object_get(doc, "plugins");
	for (i = 0; json_is_array(list) && i < json_array_size(list); i++) {
		p = json_array_get(list, i);
		if (json_is_string(json_object_get(p, "id")) &&
		    strcmp(json_string_value(json_object_get(p, "id")),
			plugin) == 0) {
			json_incref(p);
			json_decref(doc);
			return p;
		}
	}
	json_decref(doc);
	return sbx_error_set(e, SBX_K_REJECTED, "plugin", "not_installed",
		   "plugin %s is not installed for this agent", plugin),
	       NULL;
}

static void __attribute__((format(printf, 3, 4)))
audit(int rootfd, const char *agent, const char *fmt, ...)
{
	struct sbx_error e = { 0 };
	char		 msg[512];
	json_t		*ev;
	va_list		 ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ev = json_pack("{s:s,s:s}", "level", "audit", "message", msg);
	(void)sbx_bstore_append(rootfd, agent, SBX_BSTORE_LOG, ev, 4u << 20,
	    &e);
	json_decref(ev);
}

json_t *
sbx_bstore_secret(int rootfd, const char *agent, const char *plugin,
    const char *name, const json_t *held, struct sbx_error *e)
{
	char			hex[SBX_SECRET_DIGEST_HEX + 1];
	const char	       *want;
	struct sbx_secret_store st;
	struct sbx_secret_auth	auth = { 0 };
	unsigned char	       *val = NULL;
	size_t			len = 0, i;
	json_t		       *p, *sec, *out;
	int			declared = 0;

	if (sbx_secret_name_valid(name, e) == -1)
		return NULL;
	if ((p = sbx_bstore_plugin(rootfd, agent, plugin, e)) == NULL) {
		audit(rootfd, agent,
		    "secret %s refused: plugin %s is not "
		    "installed",
		    name, plugin);
		return NULL;
	}
	sec = json_object_get(p, "secrets");
	for (i = 0; json_is_array(sec) && i < json_array_size(sec); i++)
		if (json_is_string(json_array_get(sec, i)) &&
		    strcmp(json_string_value(json_array_get(sec, i)), name) ==
			0)
			declared = 1;
	json_decref(p);
	/* Only what the plugin declared at install time, which a person
	 * saw: a plugin cannot ask for the agent's other secrets. */
	if (!declared) {
		audit(rootfd, agent,
		    "secret %s refused: plugin %s did not "
		    "declare it",
		    name, plugin);
		return sbx_error_set(e, SBX_K_REJECTED, "name", "not_declared",
			   "plugin %s did not declare secret %s", plugin, name),
		       NULL;
	}
	/*
	 * A secret bound to hosts (sbx secret bind): the run holds only its
	 * placeholder, and so does the plugin.  The proxy puts the value in
	 * requests to the rule's hosts; the bridge never hands it over.
	 */
	want = json_string_value(json_object_get(held, name));
	if (want != NULL && strncmp(want, SBX_CRED_PREFIX,
	    strlen(SBX_CRED_PREFIX)) == 0) {
		audit(rootfd, agent, "secret %s given to plugin %s as its "
		    "placeholder (bound)", name, plugin);
		return json_pack("{s:s,s:s,s:b}", "name", name, "value", want,
		    "bound", 1);
	}
	memset(&st, 0, sizeof(st));
	if (sbx_secret_open(&st, rootfd, agent, 0, &auth, e) == -1)
		return NULL;
	if (sbx_secret_get(&st, name, &val, &len, e) == -1) {
		sbx_secret_close(&st);
		return NULL;
	}
	sbx_secret_close(&st);
	/*
	 * The run's scrubber holds the values it was started with: a value
	 * set since would reach the sandbox and come back unscrubbed.  The
	 * run sends the digest of each (the bridge never gets its copy).
	 */
	sbx_secret_digest(val, len, hex);
	want = json_string_value(json_object_get(held, name));
	if (want == NULL || sodium_memcmp(hex, want, sizeof(hex) - 1) != 0) {
		sbx_secret_free_value(val, len);
		audit(rootfd, agent, "secret %s refused: not the value the run "
		    "of plugin %s holds", name, plugin);
		return sbx_error_set(e, SBX_K_REJECTED, "name",
			   "secret_not_in_run", "secret %s is not the value "
			   "this run was started with (set or changed since): "
			   "its output would not be scrubbed of it; run the "
			   "tool again", name), NULL;
	}
	out = json_pack("{s:s,s:s%}", "name", name, "value", (char *)val, len);
	sbx_secret_free_value(val, len);
	if (out == NULL)
		return sbx_error_set(e, SBX_K_EXECUTION_ERROR, "name",
			   "not_utf8", "secret %s is not UTF-8 text", name),
		       NULL;
	audit(rootfd, agent, "secret %s given to plugin %s", name, plugin);
	return out;
}

json_t *
sbx_bstore_config(int rootfd, const char *agent, const char *plugin,
    const char *key, json_t *value, int op, struct sbx_error *e)
{
	char	rel[SBX_LAYOUT_PATH_MAX], *s;
	json_t *doc, *ns, *v, *pl;
	int	fd;

	if (!key_valid(key, 128))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "key", "bad_key",
			   "a key is 1 to 128 letters, digits, `.`, `_` or `-`, "
			   "starting with a letter or digit"),
		       NULL;
	if (plugin != NULL) {
		/* A plugin's namespace exists only while it is installed. */
		if ((pl = sbx_bstore_plugin(rootfd, agent, plugin, e)) == NULL)
			return NULL;
		json_decref(pl);
	}
	if (op == 1) {
		if (value == NULL)
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "body",
				   "missing", "PUT needs a JSON value"),
			       NULL;
		if ((s = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY)) ==
			NULL ||
		    strlen(s) > SBX_BSTORE_VALUE_MAX) {
			free(s);
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "body",
				   "too_large",
				   "a config value is at most %u bytes",
				   SBX_BSTORE_VALUE_MAX),
			       NULL;
		}
		free(s);
	}
	if ((fd = bridge_dir(rootfd, agent, e)) == -1)
		return NULL;
	leaf(SBX_L_AGENT_BR_CONFIG, agent, rel, sizeof(rel));
	if ((doc = read_doc(fd, sbx_layout_leaf(rel), rel,
		 "fix its JSON by hand, or move it aside (the agent's "
		 "bridge config values are then lost)",
		 SBX_BSTORE_CONFIG_MAX, e)) == NULL) {
		close(fd);
		return NULL;
	}
	if (plugin == NULL)
		ns = json_object_get(doc, "agent");
	else
		ns = json_object_get(json_object_get(doc, "plugins"), plugin);
	v = json_object_get(ns, key);
	if (op != 1 && v == NULL) {
		json_decref(doc);
		close(fd);
		return sbx_error_set(e, SBX_K_NOT_FOUND, "key", "no_such_key",
			   "no config key %s", key),
		       NULL;
	}
	if (op == 0) {
		json_incref(v);
		json_decref(doc);
		close(fd);
		if (scrub_rec(rootfd, agent, v, e) == -1) {
			json_decref(v);
			return NULL;
		}
		return v;
	}
	if (ns == NULL) {
		ns = json_object();
		if (plugin == NULL)
			json_object_set_new(doc, "agent", ns);
		else {
			if (json_object_get(doc, "plugins") == NULL)
				json_object_set_new(doc, "plugins",
				    json_object());
			json_object_set_new(json_object_get(doc, "plugins"),
			    plugin, ns);
		}
	}
	if (op == 1) {
		/* The caller's value is left alone; the copy is stored. */
		if ((v = json_deep_copy(value)) == NULL ||
		    scrub_rec(rootfd, agent, v, e) == -1) {
			if (v == NULL)
				sbx_error_sys(e, "nomem", "a config value");
			json_decref(v);
			json_decref(doc);
			close(fd);
			return NULL;
		}
		json_object_set_new(ns, key, v);
	} else
		json_object_del(ns, key);
	if (write_doc(fd, sbx_layout_leaf(rel), doc, SBX_BSTORE_CONFIG_MAX,
		e) == -1) {
		json_decref(doc);
		close(fd);
		return NULL;
	}
	json_decref(doc);
	close(fd);
	return json_true();
}

/* ---- logs --------------------------------------------------------------- */

static enum sbx_layout_id
log_id(enum sbx_bstore_log which)
{
	return which == SBX_BSTORE_EVENTS ? SBX_L_AGENT_BR_EVENTS :
					    SBX_L_AGENT_BR_LOG;
}

/*
 * The id of the last complete line of fd that has one, or 0.  Lines are
 * tried from the end back: a garbled last record does not make the ids
 * start again at 1 (a reader's --since N would then skip every later
 * event).
 */
static long long
last_id_fd(int fd)
{
	char	    buf[SBX_BSTORE_LINE_MAX + 2], *p, *end, *nl;
	struct stat st;
	off_t	    off;
	ssize_t	    n;
	json_t	   *o;
	long long   id = 0;

	if (fstat(fd, &st) == -1 || st.st_size == 0)
		return 0;
	off = st.st_size > (off_t)sizeof(buf) - 1 ?
	    st.st_size - (off_t)sizeof(buf) + 1 :
	    0;
	n = pread(fd, buf, sizeof(buf) - 1, off);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* Only whole lines: what precedes the first newline of a window
	 * that starts inside the file may be the end of a longer one. */
	p = buf;
	if (off > 0) {
		if ((nl = memchr(buf, '\n', (size_t)n)) == NULL)
			return 0;
		p = nl + 1;
	}
	end = buf + n;
	while (end > p && id <= 0) {
		if (end[-1] == '\n')
			*--end = '\0';
		nl = memrchr(p, '\n', (size_t)(end - p));
		o = json_loads(nl != NULL ? nl + 1 : p, 0, NULL);
		if (o != NULL) {
			id = json_integer_value(json_object_get(o, "id"));
			json_decref(o);
		}
		end = nl != NULL ? nl + 1 : p;
	}
	return id > 0 ? id : 0;
}

static long long
last_id(int dirfd, const char *name)
{
	long long id;
	int	  fd;

	if ((fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return 0;
	id = last_id_fd(fd);
	close(fd);
	return id;
}

static int
log_open(int dfd, const char *name, const char *rel, struct sbx_error *e)
{
	int fd;

	fd = openat(dfd, name,
	    O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd == -1)
		return sbx_error_sys(e, "write", "cannot open %s", rel);
	/*
	 * A last line cut short (a full disk, a kill between two write()s)
	 * is dropped before anything is appended: written after it, the
	 * next entry would be glued to it and lost as well.  The cut line
	 * was never acknowledged (its append failed).
	 */
	if (sbx_fs_repair_tail(fd) == -1) {
		sbx_error_sys(e, "write",
		    "cannot repair the unfinished last line of %s", rel);
		sbx_error_hint(e, "free some space, or move %s aside", rel);
		close(fd);
		return -1;
	}
	return fd;
}

long long
sbx_bstore_append(int rootfd, const char *agent, enum sbx_bstore_log which,
    json_t *ev, size_t max_bytes, struct sbx_error *e)
{
	char	    rel[SBX_LAYOUT_PATH_MAX], old[SBX_LAYOUT_PATH_MAX + 4];
	char	    ts[64], *line;
	const char *name;
	struct stat st;
	long long   id, id1;
	off_t	    size0;
	size_t	    n;
	int	    dfd, fd;

	if (scrub_rec(rootfd, agent, ev, e) == -1 ||
	    (dfd = bridge_dir(rootfd, agent, e)) == -1)
		return -1;
	name = leaf(log_id(which), agent, rel, sizeof(rel));
	snprintf(old, sizeof(old), "%s.1", name);
	if ((fd = log_open(dfd, name, rel, e)) == -1) {
		close(dfd);
		return -1;
	}
	/* The larger of the two generations: ids never go back. */
	id = last_id_fd(fd);
	if ((id1 = last_id(dfd, old)) > id)
		id = id1;
	id++;
	sbx_time_utc_iso_ms(ts);
	json_object_set_new(ev, "id", json_integer(id));
	json_object_set_new(ev, "ts", json_string(ts));
	if ((line = json_dumps(ev, JSON_COMPACT | JSON_SORT_KEYS)) == NULL) {
		close(fd);
		close(dfd);
		return sbx_error_sys(e, "nomem", "encoding an event");
	}
	n = strlen(line);
	if (n > SBX_BSTORE_LINE_MAX) {
		free(line);
		close(fd);
		close(dfd);
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "body", "too_large",
		    "an entry is at most %u bytes once encoded",
		    SBX_BSTORE_LINE_MAX);
	}
	line[n++] = '\n';
	/* Capped: past max_bytes the file becomes NAME.1 (the one before
	 * is dropped), so an agent cannot fill the disk with events. */
	if (fstat(fd, &st) == 0 && (size_t)st.st_size + n > max_bytes &&
	    renameat(dfd, name, dfd, old) == 0) {
		close(fd);
		if ((fd = log_open(dfd, name, rel, e)) == -1) {
			free(line);
			close(dfd);
			return -1;
		}
	}
	size0 = fstat(fd, &st) == 0 ? st.st_size : -1;
	if (sbx_fs_write_all(fd, line, n) == -1) {
		sbx_error_sys(e, "write", "cannot append to %s", rel);
		/* Nothing half written stays behind (best effort; the next
		 * append repairs the tail anyway). */
		if (size0 >= 0 && ftruncate(fd, size0) == -1) {
			/* The next append repairs the tail. */
		}
		free(line);
		close(fd);
		close(dfd);
		return -1;
	}
	free(line);
	close(fd);
	close(dfd);
	return id;
}

/*
 * The entries of dfd/name with id > since.  A complete line that is not
 * an entry (garbled, cut by hand, no id) is either skipped (the bridge's
 * own API) or, with damaged, listed as {"damaged":true,"file","line",
 * "after"} where it stands, so a person sees it was there: after is the
 * id before it, and it is listed when after >= since.  *prev carries the
 * last good id from one file to the next.  The unfinished last line of a
 * log being written is not damage: it is left alone.
 */
static int
read_lines(int dfd, const char *name, const char *rel, long long since,
    size_t limit, int damaged, long long *prev, json_t *out)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct sbx_error e = { 0 };
	char		*p, *nl;
	json_t		*o, *idv;
	long long	 line = 0;

	if (sbx_fs_read_file_at(dfd, name, 64u << 20, &b, &e) == -1)
		return sbx_error_absent(&e) ? 0 : -1;
	for (p = b.p;
	     p != NULL && p < b.p + b.len && json_array_size(out) < limit;
	     p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(b.p + b.len - p))) == NULL)
			break;
		*nl = '\0';
		line++;
		o = json_loads(p, 0, NULL);
		idv = json_object_get(o, "id");
		if (!json_is_integer(idv) || json_integer_value(idv) <= 0) {
			json_decref(o);
			if (damaged && *prev >= since)
				json_array_append_new(out,
				    json_pack("{s:b,s:s,s:I,s:I}", "damaged", 1,
					"file", rel, "line", (json_int_t)line,
					"after", (json_int_t)*prev));
			continue;
		}
		*prev = json_integer_value(idv);
		if (json_integer_value(idv) > since)
			json_array_append(out, o);
		json_decref(o);
	}
	sbx_buf_release(&b);
	return 0;
}

static json_t *
events_read(int rootfd, const char *agent, enum sbx_bstore_log which,
    long long since, size_t limit, int damaged, struct sbx_error *e)
{
	char	    rel[SBX_LAYOUT_PATH_MAX], old[SBX_LAYOUT_PATH_MAX + 4];
	char	    relold[SBX_LAYOUT_PATH_MAX + 4];
	const char *name;
	json_t	   *out;
	long long   prev = 0;
	int	    dfd;

	if ((dfd = sbx_layout_open(rootfd, SBX_L_AGENT_BRIDGE, agent,
		 O_PATH | O_DIRECTORY | O_CLOEXEC, e)) == -1) {
		if (sbx_error_absent(e)) {
			memset(e, 0, sizeof(*e));
			return json_array();
		}
		return NULL;
	}
	name = leaf(log_id(which), agent, rel, sizeof(rel));
	snprintf(old, sizeof(old), "%s.1", name);
	snprintf(relold, sizeof(relold), "%s.1", rel);
	out = json_array();
	if (read_lines(dfd, old, relold, since, limit, damaged, &prev, out) ==
		-1 ||
	    read_lines(dfd, name, rel, since, limit, damaged, &prev, out) ==
		-1) {
		close(dfd);
		json_decref(out);
		return sbx_error_sys(e, "read", "cannot read %s", rel), NULL;
	}
	close(dfd);
	if (scrub_rec(rootfd, agent, out, e) == -1) {
		json_decref(out);
		return NULL;
	}
	return out;
}

json_t *
sbx_bstore_events_read(int rootfd, const char *agent, enum sbx_bstore_log which,
    long long since, size_t limit, struct sbx_error *e)
{
	return events_read(rootfd, agent, which, since, limit, 0, e);
}

json_t *
sbx_bstore_events_list(int rootfd, const char *agent, enum sbx_bstore_log which,
    long long since, size_t limit, struct sbx_error *e)
{
	return events_read(rootfd, agent, which, since, limit, 1, e);
}

/* ---- memory ------------------------------------------------------------- */

static const char schema[] =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;"
    "CREATE TABLE IF NOT EXISTS mem(id INTEGER PRIMARY KEY, text TEXT NOT "
    "NULL, tags TEXT NOT NULL, salience REAL NOT NULL, created TEXT NOT "
    "NULL);"
    "CREATE VIRTUAL TABLE IF NOT EXISTS mem_fts USING fts5(text, tags, "
    "content='mem', content_rowid='id');";

/*
 * SQLite opens by path, and opens the WAL and its index by path again
 * later: it is given /proc/self/fd/N/memory.db of agents/A/bridge/ opened
 * beneath the root without following symlinks, and N stays open as long
 * as the database.  Open databases are kept (a few agents, least recently
 * used closed): opening and checking the schema costs more than a query.
 * The callers are serialized (bridge.c's lock), so one handle is never
 * used by two threads.
 */
#define MEM_CACHE 8

static struct mem_slot {
	char	  agent[64];
	sqlite3	 *db;
	int	  dfd;
	long long used;
} mem_cache[MEM_CACHE];
static long long mem_clock;

static sqlite3 *
mem_open(int rootfd, const char *agent, int *dfd, struct sbx_error *e)
{
	char		 rel[SBX_LAYOUT_PATH_MAX];
	char		 path[64 + SBX_LAYOUT_PATH_MAX];
	struct mem_slot *m, *lru = &mem_cache[0];
	sqlite3		*db = NULL;
	int		 i, fd;

	for (i = 0; i < MEM_CACHE; i++) {
		m = &mem_cache[i];
		if (m->db != NULL && strcmp(m->agent, agent) == 0) {
			m->used = ++mem_clock;
			*dfd = m->dfd;
			return m->db;
		}
		if (m->db == NULL || m->used < lru->used)
			lru = m;
	}
	if ((*dfd = bridge_dir(rootfd, agent, e)) == -1)
		return NULL;
	snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", *dfd,
	    leaf(SBX_L_AGENT_BR_MEMORY, agent, rel, sizeof(rel)));
	/*
	 * Created here 0600 like every other state file, not by SQLite
	 * (0644 less the umask: other users could read the agent's
	 * memory); SQLite gives its -wal and -shm the database's mode.  An
	 * older database made 0644 is narrowed.
	 */
	if ((fd = openat(*dfd, sbx_layout_leaf(rel),
		 O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) == -1 ||
	    fchmod(fd, 0600) == -1) {
		sbx_error_sys(e, "memory_open", "cannot create %s", rel);
		if (fd != -1)
			close(fd);
		close(*dfd);
		return NULL;
	}
	close(fd);
	if (sqlite3_open_v2(path, &db,
		SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
		    SQLITE_OPEN_NOMUTEX,
		NULL) != SQLITE_OK) {
		sbx_error_set(e, SBX_K_UNAVAILABLE, NULL, "memory_open",
		    "cannot open %s: %s", rel,
		    db != NULL ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		close(*dfd);
		return NULL;
	}
	sqlite3_busy_timeout(db, 2000);
	if (sqlite3_exec(db, schema, NULL, NULL, NULL) != SQLITE_OK) {
		sbx_error_set(e, SBX_K_UNAVAILABLE, NULL, "memory_open",
		    "%s: %s", rel, sqlite3_errmsg(db));
		sbx_error_hint(e,
		    "if the database is damaged, move %s aside (with its "
		    "-wal and -shm; the agent's memory is then lost)",
		    rel);
		sqlite3_close(db);
		close(*dfd);
		return NULL;
	}
	if (lru->db != NULL) {
		sqlite3_close(lru->db);
		close(lru->dfd);
	}
	snprintf(lru->agent, sizeof(lru->agent), "%s", agent);
	lru->db = db;
	lru->dfd = *dfd;
	lru->used = ++mem_clock;
	return db;
}

/* Kept open in the cache. */
static void
mem_close(sqlite3 *db, int dfd)
{
}

static int
db_err(sqlite3 *db, struct sbx_error *e)
{
	return sbx_error_set(e, SBX_K_UNAVAILABLE, NULL, "memory_error",
	    "memory: %s", sqlite3_errmsg(db));
}

/* Evict the oldest of the least salient entries while over max. */
static int
mem_evict(sqlite3 *db, size_t max, struct sbx_error *e)
{
	static const char q[] =
	    "INSERT INTO mem_fts(mem_fts, rowid, text, tags) SELECT 'delete', "
	    "id, text, tags FROM mem WHERE id IN (SELECT id FROM mem ORDER BY "
	    "salience ASC, id ASC LIMIT max(0, (SELECT count(*) FROM mem) - "
	    "?1));";
	static const char d[] =
	    "DELETE FROM mem WHERE id IN (SELECT id FROM mem ORDER BY "
	    "salience ASC, id ASC LIMIT max(0, (SELECT count(*) FROM mem) - "
	    "?1));";
	sqlite3_stmt *st;
	int	      k;
	const char   *sql[2] = { q, d };

	for (k = 0; k < 2; k++) {
		if (sqlite3_prepare_v2(db, sql[k], -1, &st, NULL) != SQLITE_OK)
			return db_err(db, e);
		sqlite3_bind_int64(st, 1, (sqlite3_int64)max - 1);
		if (sqlite3_step(st) != SQLITE_DONE) {
			sqlite3_finalize(st);
			return db_err(db, e);
		}
		sqlite3_finalize(st);
	}
	return 0;
}

static long long
memory_add(int rootfd, const char *agent, const json_t *body, size_t max,
    struct sbx_error *e)
{
	const char    *text;
	json_t	      *tags, *sal, *t;
	struct sbx_buf tb = SBX_BUF_INIT;
	sqlite3	      *db;
	sqlite3_stmt  *st = NULL;
	double	       salience = 0.5;
	long long      id = -1;
	int	       dfd;
	char	       ts[64];
	size_t	       i;

	text = json_string_value(json_object_get(body, "text"));
	if (text == NULL || *text == '\0' || strlen(text) > 65536)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "text", "bad_text",
		    "`text` must be a string of 1 byte to 64 KiB");
	tags = json_object_get(body, "tags");
	if (tags != NULL &&
	    (!json_is_array(tags) || json_array_size(tags) > 16))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "tags", "bad_tags",
		    "`tags` must be an array of at most 16 words");
	json_array_foreach (tags, i, t) {
		if (!json_is_string(t) || !key_valid(json_string_value(t), 32))
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "tags",
			    "bad_tags",
			    "a tag is 1 to 32 letters, digits, "
			    "`.`, `_` or `-`");
		sbx_buf_printf(&tb, "%s%s", i ? " " : "", json_string_value(t));
	}
	if ((sal = json_object_get(body, "salience")) != NULL) {
		if (!json_is_number(sal) || json_number_value(sal) < 0 ||
		    json_number_value(sal) > 1) {
			sbx_buf_release(&tb);
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "salience",
			    "bad_salience",
			    "`salience` must be a "
			    "number from 0 to 1");
		}
		salience = json_number_value(sal);
	}
	if ((db = mem_open(rootfd, agent, &dfd, e)) == NULL) {
		sbx_buf_release(&tb);
		return -1;
	}
	sbx_time_utc_iso(ts);
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	if (mem_evict(db, max, e) == -1)
		goto out;
	if (sqlite3_prepare_v2(db,
		"INSERT INTO mem(text, tags, salience, "
		"created) VALUES(?1, ?2, ?3, ?4)",
		-1, &st, NULL) != SQLITE_OK)
		goto fail;
	sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, tb.p != NULL ? tb.p : "", -1, SQLITE_STATIC);
	sqlite3_bind_double(st, 3, salience);
	sqlite3_bind_text(st, 4, ts, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(st);
	id = sqlite3_last_insert_rowid(db);
	if (sqlite3_prepare_v2(db,
		"INSERT INTO mem_fts(rowid, text, tags) "
		"VALUES(?1, ?2, ?3)",
		-1, &st, NULL) != SQLITE_OK)
		goto fail;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, tb.p != NULL ? tb.p : "", -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(st);
	st = NULL;
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	mem_close(db, dfd);
	sbx_buf_release(&tb);
	return id;
fail:
	db_err(db, e);
out:
	sqlite3_finalize(st);
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	mem_close(db, dfd);
	sbx_buf_release(&tb);
	return -1;
}

char *
sbx_bstore_fts_expr(const char *text)
{
	struct sbx_buf	     b = SBX_BUF_INIT;
	const unsigned char *p = (const unsigned char *)text, *w;
	int		     nwords = 0;

	/*
	 * The caller's text is never FTS5 syntax: it is cut into words
	 * (letters, digits, and every non-ASCII byte, so UTF-8 words stay
	 * whole) and each becomes a double-quoted string, joined by OR.  A
	 * `"`, `*`, `^`, `:` (a column filter), `(`, NEAR or AND is either
	 * dropped as a separator or searched for as a plain word.
	 */
	while (*p != '\0' && nwords < 32) {
		while (*p != '\0' && *p < 0x80 && !isalnum(*p))
			p++;
		if (*p == '\0')
			break;
		w = p;
		while (*p != '\0' && (*p >= 0x80 || isalnum(*p)))
			p++;
		sbx_buf_printf(&b, "%s\"%.*s\"", nwords ? " OR " : "",
		    (int)(p - w), (const char *)w);
		nwords++;
	}
	if (nwords == 0) {
		sbx_buf_release(&b);
		return NULL;
	}
	return sbx_buf_detach(&b);
}

json_t *
sbx_bstore_memory_query(int rootfd, const char *agent, const json_t *body,
    struct sbx_error *e)
{
	const char   *text;
	json_t	     *lim, *out;
	sqlite3	     *db;
	sqlite3_stmt *st;
	long long     limit = 10;
	char	     *expr;
	int	      rc, dfd;

	text = json_string_value(json_object_get(body, "text"));
	if (text == NULL || strlen(text) > 4096)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "text", "bad_text",
			   "`text` must be a string of at most 4 KiB"),
		       NULL;
	if ((lim = json_object_get(body, "limit")) != NULL) {
		if (!json_is_integer(lim) || json_integer_value(lim) < 1 ||
		    json_integer_value(lim) > 100)
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "limit",
				   "bad_limit",
				   "`limit` must be an integer from 1 "
				   "to 100"),
			       NULL;
		limit = json_integer_value(lim);
	}
	if ((expr = sbx_bstore_fts_expr(text)) == NULL)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "text",
			   "empty_query",
			   "the query has no word to search for"),
		       NULL;
	if ((db = mem_open(rootfd, agent, &dfd, e)) == NULL) {
		free(expr);
		return NULL;
	}
	/* bm25() is negative, smaller is better; salience (0..1) makes a
	 * match up to twice as strong. */
	/* FTS5 ranks first (its own ORDER BY rank, the cheap path), then
	 * the best few are weighed by salience. */
	if (sqlite3_prepare_v2(db,
		"SELECT m.id, m.text, m.tags, m.salience, "
		"m.created, r.b * (1.0 + m.salience) AS s FROM (SELECT rowid AS "
		"id, rank AS b FROM mem_fts WHERE mem_fts MATCH ?1 ORDER BY rank "
		"LIMIT ?2 * 4) r JOIN mem m ON m.id = r.id ORDER BY s LIMIT ?2",
		-1, &st, NULL) != SQLITE_OK) {
		db_err(db, e);
		mem_close(db, dfd);
		free(expr);
		return NULL;
	}
	sqlite3_bind_text(st, 1, expr, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, limit);
	out = json_array();
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *tags = json_array();
		char   *t, *save = NULL, *copy;

		copy = strdup((const char *)sqlite3_column_text(st, 2));
		for (t = copy != NULL ? strtok_r(copy, " ", &save) : NULL;
		     t != NULL; t = strtok_r(NULL, " ", &save))
			json_array_append_new(tags, json_string(t));
		free(copy);
		json_array_append_new(out,
		    json_pack("{s:I,s:o,s:o,s:f,s:s,"
			      "s:f}",
			"id", (json_int_t)sqlite3_column_int64(st, 0), "text",
			sbx_json_bytes((const char *)sqlite3_column_text(st, 1),
			    (size_t)sqlite3_column_bytes(st, 1)),
			"tags", tags, "salience", sqlite3_column_double(st, 3),
			"created", (const char *)sqlite3_column_text(st, 4),
			"score", -sqlite3_column_double(st, 5)));
	}
	if (rc != SQLITE_DONE) {
		db_err(db, e);
		json_decref(out);
		out = NULL;
	}
	sqlite3_finalize(st);
	mem_close(db, dfd);
	free(expr);
	if (out != NULL && scrub_rec(rootfd, agent, out, e) == -1) {
		json_decref(out);
		out = NULL;
	}
	return out;
}

/* ---- dispatch ----------------------------------------------------------- */

int
sbx_bstore_task_id_valid(const char *id)
{
	size_t i;

	if (id == NULL || strlen(id) != 17 || id[0] != 't')
		return 0;
	for (i = 1; i < 17; i++)
		if (!isxdigit((unsigned char)id[i]) ||
		    isupper((unsigned char)id[i]))
			return 0;
	return 1;
}

static int
tasks_dir(int rootfd, const char *agent, int create, struct sbx_error *e)
{
	if (create)
		return sbx_layout_mkdirs(rootfd, SBX_L_AGENT_BR_TASKS, agent,
		    e);
	return sbx_layout_open(rootfd, SBX_L_AGENT_BR_TASKS, agent,
	    O_RDONLY | O_DIRECTORY | O_CLOEXEC, e);
}

static json_t *
task_add(int rootfd, const char *agent, const json_t *body,
    struct sbx_error *e)
{
	const char   *task;
	unsigned char rnd[8];
	char	      id[18], name[32], ts[64];
	json_t	     *t;
	char	    **names;
	size_t	      n, i;
	int	      dfd;

	task = json_string_value(json_object_get(body, "task"));
	if (task == NULL || *task == '\0' || strlen(task) > 4096)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "task", "bad_task",
			   "`task` must be a string of 1 byte to 4 KiB"),
		       NULL;
	if ((dfd = tasks_dir(rootfd, agent, 1, e)) == -1)
		return NULL;
	names = sbx_fs_sorted_names(dfd, &n);
	for (i = 0; names != NULL && i < n; i++)
		free(names[i]);
	free(names);
	if (n >= SBX_BSTORE_TASKS_MAX) {
		close(dfd);
		return sbx_error_set(e, SBX_K_UNAVAILABLE, NULL, "queue_full",
			   "the agent's queue holds %u tasks already",
			   SBX_BSTORE_TASKS_MAX),
		       NULL;
	}
	randombytes_buf(rnd, sizeof(rnd));
	id[0] = 't';
	sodium_bin2hex(id + 1, sizeof(id) - 1, rnd, sizeof(rnd));
	snprintf(name, sizeof(name), "%s.json", id);
	sbx_time_utc_iso_ms(ts);
	t = json_pack("{s:s,s:s,s:s,s:O*,s:s,s:s}", "id", id, "agent", agent,
	    "task", task, "data", json_object_get(body, "data"), "status",
	    "queued", "created", ts);
	if (write_doc(dfd, name, t, 1u << 20, e) == -1) {
		json_decref(t);
		close(dfd);
		return NULL;
	}
	close(dfd);
	return t;
}

#define TASK_REPAIR \
	"move the file aside (the task is lost; the orchestrator may queue " \
	"it again)"

/* agents/A/bridge/tasks/NAME, for messages. */
static void
task_rel(const char *agent, const char *name, char *rel, size_t sz)
{
	char dir[SBX_LAYOUT_PATH_MAX];

	if (sbx_layout_path(SBX_L_AGENT_BR_TASKS, agent, dir, sizeof(dir),
		NULL) == -1)
		dir[0] = '\0';
	snprintf(rel, sz, "%s/%s", dir, name);
}

json_t *
sbx_bstore_task_get(int rootfd, const char *agent, const char *id,
    struct sbx_error *e)
{
	char	name[32], rel[SBX_LAYOUT_PATH_MAX + 40];
	json_t *t;
	int	dfd;

	if (!sbx_bstore_task_id_valid(id))
		return sbx_error_set(e, SBX_K_NOT_FOUND, "id", "no_such_task",
			   "no task %s", id),
		       NULL;
	if ((dfd = tasks_dir(rootfd, agent, 0, e)) == -1) {
		if (sbx_error_absent(e))
			sbx_error_set(e, SBX_K_NOT_FOUND, "id", "no_such_task",
			    "no task %s", id);
		return NULL;
	}
	snprintf(name, sizeof(name), "%s.json", id);
	task_rel(agent, name, rel, sizeof(rel));
	t = read_doc(dfd, name, rel, TASK_REPAIR, 1u << 20, e);
	close(dfd);
	if (t != NULL && json_object_size(t) == 0) {
		json_decref(t);
		return sbx_error_set(e, SBX_K_NOT_FOUND, "id", "no_such_task",
			   "no task %s", id),
		       NULL;
	}
	/* A record that parses but is not a task (cut by hand, another
	 * file renamed into place) is damaged as well: its readers index
	 * these fields. */
	if (t != NULL &&
	    (!json_is_string(json_object_get(t, "id")) ||
		strcmp(json_string_value(json_object_get(t, "id")), id) != 0 ||
		!json_is_string(json_object_get(t, "status")) ||
		!json_is_string(json_object_get(t, "task")) ||
		!json_is_string(json_object_get(t, "created")))) {
		json_decref(t);
		sbx_error_set(e, SBX_K_EXECUTION_ERROR, NULL, "damaged_record",
		    "%s is not a task record (id, task, status or created "
		    "missing)",
		    rel);
		sbx_error_hint(e, "%s", TASK_REPAIR);
		return NULL;
	}
	if (t != NULL && scrub_rec(rootfd, agent, t, e) == -1) {
		json_decref(t);
		return NULL;
	}
	return t;
}

json_t *
sbx_bstore_task_list(int rootfd, const char *agent, struct sbx_error *e)
{
	char  **names;
	size_t	n, i;
	json_t *out, *bad, *t;
	int	dfd;
	char	id[32], rel[SBX_LAYOUT_PATH_MAX + 40];

	if ((dfd = tasks_dir(rootfd, agent, 0, e)) == -1) {
		if (!sbx_error_absent(e))
			return NULL;
		memset(e, 0, sizeof(*e));
		return json_array();
	}
	names = sbx_fs_sorted_names(dfd, &n);
	close(dfd);
	out = json_array();
	bad = json_array();
	for (i = 0; names != NULL && i < n; i++) {
		snprintf(id, sizeof(id), "%s", names[i]);
		if (strlen(id) == 22 && strcmp(id + 17, ".json") == 0) {
			id[17] = '\0';
			if ((t = sbx_bstore_task_get(rootfd, agent, id, e)) !=
			    NULL)
				json_array_append_new(out, t);
			else if (e->reason != NULL &&
			    strcmp(e->reason, "cannot_scrub") == 0) {
				/* Withheld, not silently left out. */
				for (; i < n; i++)
					free(names[i]);
				free(names);
				json_decref(out);
				json_decref(bad);
				return NULL;
			} else if (!sbx_error_absent(e)) {
				/* Listed, not skipped: a task that silently
				 * vanished would never be redone. */
				task_rel(agent, names[i], rel, sizeof(rel));
				json_array_append_new(bad,
				    json_pack("{s:b,s:s,s:s,s:s}", "damaged", 1,
					"id", id, "file", rel, "message",
					e->message));
			}
			memset(e, 0, sizeof(*e));
		}
		free(names[i]);
	}
	free(names);
	memset(e, 0, sizeof(*e));
	/* Oldest first. */
	{
		size_t a, b;

		for (a = 1; a < json_array_size(out); a++)
			for (b = a; b > 0 &&
			     strcmp(json_string_value(json_object_get(
					json_array_get(out, b - 1), "created")),
				 json_string_value(json_object_get(
				     json_array_get(out, b), "created"))) > 0;
			     b--) {
				json_t *x =
				    json_incref(json_array_get(out, b - 1));

				json_array_set(out, b - 1,
				    json_array_get(out, b));
				json_array_set_new(out, b, x);
			}
	}
	json_array_extend(out, bad);
	json_decref(bad);
	return out;
}

json_t *
sbx_bstore_task_done(int rootfd, const char *agent, const char *id,
    json_t *result, struct sbx_error *e)
{
	char	name[32], ts[64];
	json_t *t;
	int	dfd;

	if ((t = sbx_bstore_task_get(rootfd, agent, id, e)) == NULL)
		return NULL;
	sbx_time_utc_iso_ms(ts);
	json_object_set_new(t, "status", json_string("done"));
	json_object_set_new(t, "done", json_string(ts));
	if (result != NULL) {
		json_object_set(t, "result", result);
		if (scrub_rec(rootfd, agent, t, e) == -1) {
			json_decref(t);
			return NULL;
		}
	}
	if ((dfd = tasks_dir(rootfd, agent, 0, e)) == -1) {
		json_decref(t);
		return NULL;
	}
	snprintf(name, sizeof(name), "%s.json", id);
	if (write_doc(dfd, name, t, 1u << 20, e) == -1) {
		json_decref(t);
		t = NULL;
	}
	close(dfd);
	return t;
}

/* What the run sent, scrubbed before it is looked at (a tag that was a
 * secret is then no tag: refused, not stored). */
static json_t *
scrubbed_copy(int rootfd, const char *agent, const json_t *body,
    struct sbx_error *e)
{
	json_t	*c;

	if ((c = json_deep_copy(body)) == NULL)
		return sbx_error_sys(e, "nomem", "a record"), NULL;
	if (scrub_rec(rootfd, agent, c, e) == -1) {
		json_decref(c);
		return NULL;
	}
	return c;
}

long long
sbx_bstore_memory_add(int rootfd, const char *agent, const json_t *body,
    size_t max, struct sbx_error *e)
{
	json_t		*c;
	long long	 id;

	if ((c = scrubbed_copy(rootfd, agent, body, e)) == NULL)
		return -1;
	id = memory_add(rootfd, agent, c, max, e);
	json_decref(c);
	return id;
}

json_t *
sbx_bstore_task_add(int rootfd, const char *agent, const json_t *body,
    struct sbx_error *e)
{
	json_t	*c, *t;

	if ((c = scrubbed_copy(rootfd, agent, body, e)) == NULL)
		return NULL;
	t = task_add(rootfd, agent, c, e);
	json_decref(c);
	return t;
}
