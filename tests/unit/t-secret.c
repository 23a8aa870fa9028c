/* t-secret: the sealed store: names, sealing, binding, generations, keys. */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "tap.h"

#include "buf.h"
#include "envelope.h"
#include "fsutil.h"
#include "secret.h"

static int	 rootfd;
static char	 root[] = "/tmp/t-secret.XXXXXX";

static int
set(const char *agent, const char *name, const char *val,
    const struct sbx_secret_auth *a, struct sbx_error *e)
{
	struct sbx_secret_store	 s;
	int			 rc;

	rc = sbx_secret_open(&s, rootfd, agent, 1, a, e);
	if (rc == 0)
		rc = sbx_secret_put(&s, name, (const unsigned char *)val,
		    strlen(val), "desc", e);
	if (rc == 0)
		rc = sbx_secret_commit(&s, e);
	sbx_secret_close(&s);
	return rc;
}

/* The value, or NULL with e (reason) set; *warned: the previous
 * generation was used. */
static char *
get(const char *agent, const char *name, const struct sbx_secret_auth *a,
    struct sbx_error *e, int *warned)
{
	struct sbx_secret_store	 s;
	unsigned char		*v;
	size_t			 n;
	char			*r = NULL;

	memset(e, 0, sizeof(*e));
	if (sbx_secret_open(&s, rootfd, agent, 0, a, e) == 0 &&
	    sbx_secret_get(&s, name, &v, &n, e) == 0) {
		r = strndup((char *)v, n);
		sbx_secret_free_value(v, n);
	}
	if (warned != NULL)
		*warned = s.warnings != NULL && json_array_size(s.warnings) > 0;
	sbx_secret_close(&s);
	return r;
}

static char *
readf(const char *rel, size_t *n)
{
	struct sbx_buf		 b = SBX_BUF_INIT;
	struct sbx_error	 e;

	if (sbx_fs_read_file_at(rootfd, rel, 1 << 24, &b, &e) == -1)
		return NULL;
	*n = b.len;
	return sbx_buf_detach(&b);
}

static void
writef(const char *rel, const char *p, size_t n)
{
	int	 fd = openat(rootfd, rel, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	(void)!write(fd, p, n);
	close(fd);
}

int
main(void)
{
	static const char *const good[] = { "API_KEY", "_X", "A1", "TOKEN_2",
	    "GITHUB_TOKEN", NULL };
	static const char *const bad[] = { "api_key", "1A", "A-B", "", "A B",
	    NULL };
	static const char *const reserved[] = { "PATH", "HOME", "TZ", "PWD",
	    "LD_PRELOAD", "BASH_ENV", "ENV", "PYTHONPATH", "NODE_OPTIONS",
	    "PERL5LIB", "RUBYOPT", "SBX_AGENT", "HTTPS_PROXY", "SSL_CERT_FILE",
	    "NODE_EXTRA_CA_CERTS", "MY_CA_FILE", "GCONV_PATH", NULL };
	struct sbx_secret_auth	 pa;
	struct sbx_secret_store	 s;
	struct sbx_error	 e;
	struct stat		 st;
	char			*v, *cur, *prevf, big[SBX_SECRET_VALUE_MAX + 2];
	char			 kpath[256], longname[80];
	size_t			 i, n, np;
	int			 bad_n, warned, fd;
	json_t			*doc, *rec;

	unsetenv("SBX_SECRET_KEY_FILE");
	unsetenv("CREDENTIALS_DIRECTORY");
	for (i = 0; good[i] != NULL; i++)
		ok(sbx_secret_name_valid(good[i], &e) == 0, "name %s ok",
		    good[i]);
	for (i = 0; bad[i] != NULL; i++)
		ok(sbx_secret_name_valid(bad[i], &e) == -1 &&
		    (strcmp(e.reason, "invalid_name") == 0 ||
		    strcmp(e.reason, "empty") == 0), "name '%s' refused",
		    bad[i]);
	memset(longname, 'A', 65);
	longname[65] = '\0';
	ok(sbx_secret_name_valid(longname, &e) == -1, "65 characters refused");
	longname[64] = '\0';
	ok(sbx_secret_name_valid(longname, &e) == 0, "64 characters ok");
	for (i = 0; reserved[i] != NULL; i++)
		ok(sbx_secret_name_valid(reserved[i], &e) == -1 &&
		    strcmp(e.reason, "reserved_name") == 0 &&
		    strstr(e.message, "LD_*") != NULL, "%s reserved, the list "
		    "in the message", reserved[i]);

	if ((rootfd = t_tmpdir(root)) == -1)
		return 1;

	/* A round trip; the key file made 0600 on first use. */
	ok(set("a", "API_KEY", "value-one-1", NULL, &e) == 0, "set: %s",
	    e.message);
	ok(fstatat(rootfd, SBX_SECRET_KEY_NAME, &st, 0) == 0 &&
	    (st.st_mode & 0777) == 0600 && st.st_size == 32,
	    "config/secret.key: 32 bytes, 0600");
	v = get("a", "API_KEY", NULL, &e, NULL);
	is_str(v ? v : "(null)", "value-one-1", "get");
	free(v);
	ok(fstatat(rootfd, "agents/a/secrets.json", &st, 0) == 0 &&
	    (st.st_mode & 0777) == 0600, "the store is 0600");
	cur = readf("agents/a/secrets.json", &n);
	ok(cur != NULL && strstr(cur, "value-one") == NULL, "no plaintext in "
	    "the file");
	free(cur);
	v = get("a", "NOPE", NULL, &e, NULL);
	ok(v == NULL && strcmp(e.reason, "secret_missing") == 0 &&
	    strstr(e.hint, "sbx secret set NOPE --agent a") != NULL,
	    "a missing name: the command that fixes it");
	v = get("zz", "API_KEY", NULL, &e, NULL);
	ok(v == NULL && strcmp(e.reason, "secret_missing") == 0,
	    "no store: missing");

	/* Values: NUL and size. */
	ok(sbx_secret_open(&s, rootfd, "a", 1, NULL, &e) == 0, "open for "
	    "writing");
	ok(sbx_secret_put(&s, "X", (const unsigned char *)"a\0b", 3, NULL,
	    &e) == -1 && strcmp(e.reason, "nul_byte") == 0, "NUL refused");
	memset(big, 'x', sizeof(big));
	ok(sbx_secret_put(&s, "X", (unsigned char *)big, SBX_SECRET_VALUE_MAX +
	    1, NULL, &e) == -1 && strcmp(e.reason, "too_long") == 0,
	    "64 KiB + 1 refused");
	ok(sbx_secret_put(&s, "BIG", (unsigned char *)big,
	    SBX_SECRET_VALUE_MAX, NULL, &e) == 0, "64 KiB taken");
	ok(sbx_secret_commit(&s, &e) == 0, "committed");
	sbx_secret_close(&s);
	v = get("a", "BIG", NULL, &e, NULL);
	ok(v != NULL && strlen(v) == SBX_SECRET_VALUE_MAX, "64 KiB back");
	free(v);

	/* Associated data: a record copied to another agent or name. */
	ok(set("b", "OTHER", "b-value-xyz", NULL, &e) == 0, "agent b");
	cur = readf("agents/a/secrets.json", &n);
	doc = sbx_json_parse(cur, n, 1 << 24, &e);
	rec = json_deep_copy(json_object_get(json_object_get(doc, "secrets"),
	    "API_KEY"));
	free(cur);
	json_decref(doc);
	cur = readf("agents/b/secrets.json", &n);
	doc = sbx_json_parse(cur, n, 1 << 24, &e);
	free(cur);
	json_object_set(json_object_get(doc, "secrets"), "API_KEY", rec);
	json_object_set(json_object_get(doc, "secrets"), "RENAMED",
	    json_object_get(json_object_get(doc, "secrets"), "OTHER"));
	cur = json_dumps(doc, 0);
	writef("agents/b/secrets.json", cur, strlen(cur));
	free(cur);
	json_decref(doc);
	json_decref(rec);
	v = get("b", "API_KEY", NULL, &e, NULL);
	ok(v == NULL && strcmp(e.reason, "secret_store_unreadable") == 0,
	    "a record copied from agent a does not open in b: %s", e.message);
	v = get("b", "RENAMED", NULL, &e, NULL);
	ok(v == NULL && strcmp(e.reason, "secret_store_unreadable") == 0,
	    "a record under another name does not open");
	v = get("b", "OTHER", NULL, &e, NULL);
	is_str(v ? v : "(null)", "b-value-xyz", "b's own record still opens");
	free(v);
	/* A whole store copied to another agent: its key is bound too. */
	cur = readf("agents/a/secrets.json", &n);
	sbx_fs_mkdirs_at(rootfd, "agents/c", 0700, &e);
	doc = sbx_json_parse(cur, n, 1 << 24, &e);
	free(cur);
	json_object_set_new(doc, "agent", json_string("c"));
	cur = json_dumps(doc, 0);
	writef("agents/c/secrets.json", cur, strlen(cur));
	free(cur);
	json_decref(doc);
	v = get("c", "API_KEY", NULL, &e, NULL);
	ok(v == NULL && strcmp(e.reason, "wrong_key") == 0, "a store moved "
	    "to agent c: wrong_key");

	/* Generations: truncated at every offset, the previous one is read
	 * (or, with none sound, a clear error); nothing is lost. */
	ok(set("g", "TOK", "generation-one", NULL, &e) == 0, "gen 1");
	ok(set("g", "TOK", "generation-two", NULL, &e) == 0, "gen 2");
	cur = readf("agents/g/secrets.json", &n);
	prevf = readf("agents/g/secrets.json.prev", &np);
	ok(cur != NULL && prevf != NULL, "two generations on disk");
	bad_n = 0;
	for (i = 0; i < n; i++) {
		/* A truncation that only drops the final newline leaves a
		 * whole document: the current generation, rightly. */
		writef("agents/g/secrets.json", cur, i);
		v = get("g", "TOK", NULL, &e, &warned);
		if (v == NULL || (strcmp(v, "generation-one") != 0 &&
		    !(i >= n - 1 && strcmp(v, "generation-two") == 0)) ||
		    (strcmp(v, "generation-one") == 0 && !warned)) {
			if (!bad_n)
				diag("offset %zu: %s", i, v ? v : e.message);
			bad_n++;
		}
		free(v);
	}
	ok(bad_n == 0, "truncated at each of %zu offsets: the previous "
	    "generation, with a warning", n);
	/* A set on a damaged store keeps the good previous generation. */
	writef("agents/g/secrets.json", cur, n / 2);
	ok(set("g", "NEW", "another-value", NULL, &e) == 0, "set over a "
	    "damaged file");
	v = get("g", "TOK", NULL, &e, &warned);
	ok(v != NULL && strcmp(v, "generation-one") == 0 && !warned,
	    "the previous generation carried on");
	free(v);
	writef("agents/g/secrets.json", cur, n / 2);
	writef("agents/g/secrets.json.prev", prevf, np / 3);
	v = get("g", "TOK", NULL, &e, NULL);
	ok(v == NULL && strcmp(e.reason, "secret_store_unreadable") == 0 &&
	    strcmp(e.kind, "rejected") == 0, "both damaged: rejected, "
	    "secret_store_unreadable");
	free(cur);
	free(prevf);

	/* One damaged record (issue 30): its refusal names the file; the
	 * next unrelated set neither carries it on nor rotates the backup
	 * over the last good copy; the record is kept aside. */
	ok(set("h", "GOOD", "good-value", NULL, &e) == 0 &&
		set("h", "HURT", "hurt-value", NULL, &e) == 0 &&
		set("h", "GOOD", "good-value-2", NULL, &e) == 0,
	    "store h");
	prevf = readf("agents/h/secrets.json.prev", &np);
	cur = readf("agents/h/secrets.json", &n);
	doc = sbx_json_parse(cur, n, 1 << 24, &e);
	free(cur);
	{
		json_t *r =
		    json_object_get(json_object_get(doc, "secrets"), "HURT");
		char *c =
		    strdup(json_string_value(json_object_get(r, "value")));

		c[3] = c[3] == 'A' ? 'B' : 'A';
		json_object_set_new(r, "value", json_string(c));
		free(c);
	}
	cur = json_dumps(doc, 0);
	writef("agents/h/secrets.json", cur, strlen(cur));
	free(cur);
	json_decref(doc);
	v = get("h", "HURT", NULL, &e, NULL);
	ok(v == NULL && strstr(e.message, "agents/h/secrets.json") != NULL &&
		strstr(e.hint, "sbx secret set HURT") != NULL,
	    "a damaged record's refusal names the file and the repair: %s",
	    e.message);
	{
		struct sbx_secret_store ss;
		size_t			np2;
		char		       *prev2, *aside;

		memset(&e, 0, sizeof(e));
		ok(sbx_secret_open(&ss, rootfd, "h", 1, NULL, &e) == 0 &&
			sbx_secret_put(&ss, "OTHER", (const unsigned char *)"x",
			    1, NULL, &e) == 0 &&
			sbx_secret_commit(&ss, &e) == 0 &&
			json_array_size(ss.warnings) == 1 &&
			strstr(
			    json_string_value(json_array_get(ss.warnings, 0)),
			    "secrets.json.damaged") != NULL,
		    "an unrelated set over it: done, with a warning: %s",
		    e.message);
		sbx_secret_close(&ss);
		prev2 = readf("agents/h/secrets.json.prev", &np2);
		ok(prev2 != NULL && np2 == np && memcmp(prev2, prevf, np) == 0,
		    "secrets.json.prev is the last good copy still");
		free(prev2);
		aside = readf("agents/h/secrets.json.damaged", &np2);
		ok(aside != NULL && strstr(aside, "\"HURT@") != NULL,
		    "the damaged record is kept aside");
		free(aside);
	}
	v = get("h", "HURT", NULL, &e, NULL);
	ok(v == NULL && strcmp(e.reason, "secret_missing") == 0,
	    "the new generation does not carry it on");
	v = get("h", "GOOD", NULL, &e, NULL);
	ok(v != NULL && strcmp(v, "good-value-2") == 0, "the others stay");
	free(v);
	free(prevf);

	/* Another key file: wrong_key; a readable one: refused. */
	snprintf(kpath, sizeof(kpath), "%s/other.key", root);
	fd = open(kpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	(void)!write(fd, "0123456789abcdef0123456789abcdef", 32);
	close(fd);
	setenv("SBX_SECRET_KEY_FILE", kpath, 1);
	v = get("a", "API_KEY", NULL, &e, NULL);
	ok(v == NULL && strcmp(e.reason, "wrong_key") == 0, "another key "
	    "file: wrong_key");
	chmod(kpath, 0644);
	v = get("a", "API_KEY", NULL, &e, NULL);
	ok(v == NULL && strcmp(e.reason, "key_file_permissions") == 0,
	    "a key file others can read is refused");
	chmod(kpath, 0600);
	ok(set("k", "K", "keyed-by-file", NULL, &e) == 0, "a store under "
	    "SBX_SECRET_KEY_FILE");
	v = get("k", "K", NULL, &e, NULL);
	is_str(v ? v : "(null)", "keyed-by-file", "opens with it");
	free(v);
	unsetenv("SBX_SECRET_KEY_FILE");
	v = get("k", "K", NULL, &e, NULL);
	ok(v == NULL && strcmp(e.reason, "wrong_key") == 0, "not with the "
	    "default key");

	/* rotate-key: new data key, same values, other ciphertexts. */
	cur = readf("agents/a/secrets.json", &n);
	ok(sbx_secret_open(&s, rootfd, "a", 1, NULL, &e) == 0 &&
	    sbx_secret_rotate(&s, &e) == 0 && sbx_secret_commit(&s, &e) == 0,
	    "rotated");
	sbx_secret_close(&s);
	prevf = readf("agents/a/secrets.json", &np);
	doc = sbx_json_parse(cur, n, 1 << 24, &e);
	rec = sbx_json_parse(prevf, np, 1 << 24, &e);
	ok(!json_equal(json_object_get(doc, "key"), json_object_get(rec,
	    "key")) && !json_equal(json_object_get(doc, "secrets"),
	    json_object_get(rec, "secrets")), "key and records re-sealed");
	json_decref(doc);
	json_decref(rec);
	free(cur);
	free(prevf);
	v = get("a", "API_KEY", NULL, &e, NULL);
	is_str(v ? v : "(null)", "value-one-1", "the value survives rotation");
	free(v);

	/* A passphrase (Argon2id). */
	memset(&pa, 0, sizeof(pa));
	pa.passphrase = "correct horse";
	pa.passphrase_len = strlen(pa.passphrase);
	pa.use_passphrase = 1;
	ok(set("p", "P", "pass-sealed", &pa, &e) == 0, "set with a "
	    "passphrase");
	ok(sbx_secret_needs_passphrase(rootfd, "p"), "the store says so");
	v = get("p", "P", NULL, &e, NULL);
	ok(v == NULL && strcmp(e.reason, "passphrase_required") == 0,
	    "without it: passphrase_required");
	/* The length goes with the string: "wrong horse" is shorter than
	 * "correct horse", and the store reads passphrase_len bytes. */
	pa.passphrase = "wrong horse";
	pa.passphrase_len = strlen(pa.passphrase);
	v = get("p", "P", &pa, &e, NULL);
	ok(v == NULL && strcmp(e.reason, "wrong_key") == 0, "a wrong one: "
	    "wrong_key");
	pa.passphrase = "correct horse";
	pa.passphrase_len = strlen(pa.passphrase);
	v = get("p", "P", &pa, &e, NULL);
	is_str(v ? v : "(null)", "pass-sealed", "the right one opens it");
	free(v);

	/* rm, list, remove. */
	ok(sbx_secret_open(&s, rootfd, "a", 1, NULL, &e) == 0, "open");
	is_int(sbx_secret_del(&s, "API_KEY", &e), 1, "rm");
	is_int(sbx_secret_del(&s, "API_KEY", &e), 0, "rm again: absent");
	sbx_secret_put(&s, "AAA", (const unsigned char *)"aaaaaaa", 7, NULL,
	    &e);
	doc = sbx_secret_list(&s);
	cur = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	ok(strstr(cur, "aaaaaaa") == NULL && strncmp(cur, "[{\"created\"", 11)
	    == 0 && strstr(cur, "\"name\":\"AAA\"") < strstr(cur,
	    "\"name\":\"BIG\""), "list: sorted, no values");
	free(cur);
	json_decref(doc);
	sbx_secret_commit(&s, &e);
	sbx_secret_close(&s);
	doc = sbx_secret_names(rootfd, "a");
	is_int((int)json_array_size(doc), 2, "names for remove's list");
	json_decref(doc);
	ok(sbx_secret_remove_store(rootfd, "a", &e) == 0 &&
	    !sbx_secret_store_exists(rootfd, "a"), "store removed");

	sbx_fs_rm_tree_at(AT_FDCWD, root, &e);
	return done_testing();
}
