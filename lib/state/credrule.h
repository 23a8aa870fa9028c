/*
 * credrule.h: credential rules (issue 34).  A rule binds one of an
 * agent's secrets to the hosts it may be sent to and to where it goes in
 * a request.  Inside the sandbox the secret's variable holds only a
 * placeholder, "sbx-cred-<32 lowercase hex>-<NAME>", drawn per run; the
 * proxy puts the value in requests to the rule's hosts and refuses a
 * placeholder seen anywhere else (credential_host_mismatch).
 *
 * One JSON form, the same in an agent's settings ("credentials": [...]),
 * in `sbx secret bind`, and in the proxy's session request:
 *
 *   { "secret": "OPENAI_API_KEY",
 *     "hosts":  ["api.openai.com", "*.example.com:8443"],
 *     "header": "Authorization: Bearer {}" }          -- or
 *     "header": "x-api-key: {}"                       -- or
 *     "basic_user": "user"       (Authorization: Basic base64(user:{}))  -- or
 *     "query": "key"             (?key={} added or replaced in the URL)
 *
 * Exactly one of header, basic_user, query.  A host is an exact name or
 * "*.sub" (any name under sub, not sub itself), lowercase after parsing,
 * with an optional ":port" (default 443; "*" is not a port).  The header
 * template holds "{}" exactly once, after the colon; its name is an HTTP
 * token and is never Host, Content-Length, Transfer-Encoding, Connection
 * or a proxy header.
 *
 * In the proxy's session request (over the control socket, host side
 * only) each rule also carries "placeholder" and "value" (the secret in
 * clear: the proxy cannot open a passphrase-sealed store itself).  The
 * proxy's "end" answer lists what was used: "credentials": [{"secret",
 * "host", "port"}], never a value.
 */
#ifndef SBX_CREDRULE_H
#define SBX_CREDRULE_H

#include <stddef.h>

#include <jansson.h>

#include "error.h"

#define SBX_CRED_HOSTS_MAX	 16
#define SBX_CRED_RULES_MAX	 32
#define SBX_CRED_PREFIX		 "sbx-cred-"
#define SBX_CRED_RAND_HEX	 32
/* "sbx-cred-" + 32 hex + "-" + a secret's name (secret.h's limit). */
#define SBX_CRED_PLACEHOLDER_MAX (9 + SBX_CRED_RAND_HEX + 1 + 64)

enum sbx_cred_kind {
	SBX_CRED_HEADER, /* header: "Name: ...{}..." */
	SBX_CRED_BASIC, /* Authorization: Basic base64(user:value) */
	SBX_CRED_QUERY /* ?name=value in the request target */
};

struct sbx_cred_host {
	char	       name[256]; /* lowercase; without the "*." */
	int	       wildcard; /* "*.name": strictly under name */
	unsigned short port;
};

struct sbx_credrule {
	char		     secret[65];
	struct sbx_cred_host hosts[SBX_CRED_HOSTS_MAX];
	size_t		     nhosts;
	enum sbx_cred_kind   kind;
	char		     hname[64]; /* header name (HEADER, BASIC) */
	char		     tmpl[512]; /* HEADER: the value, with {} */
	char		     user[256]; /* BASIC */
	char		     qname[64]; /* QUERY */
};

/* One rule from its JSON form; "where" names it in messages
 * ("agents/alice/config.json: credentials[0]").  invalid_args or
 * invalid_config (e->reason) with what is wrong. */
int sbx_credrule_parse(const json_t *, const char *where, struct sbx_credrule *,
    struct sbx_error *);
/* Its JSON form (the settings' form: no placeholder, no value). */
json_t *sbx_credrule_json(const struct sbx_credrule *);
/* 1 when host:port (host lowercase, as the proxy has it) is one of the
 * rule's, else 0. */
int sbx_credrule_match(const struct sbx_credrule *, const char *host,
    unsigned short port);
/* A fresh placeholder for secret NAME (randombytes_buf), NUL-terminated
 * in out[SBX_CRED_PLACEHOLDER_MAX + 1]. */
void sbx_credrule_placeholder(const char *name, char *out);
/* 1 when ph is a placeholder of that form for the rule's secret
 * ("sbx-cred-" + 32 lowercase hex + "-" + secret), else 0. */
int sbx_credrule_placeholder_ok(const struct sbx_credrule *, const char *ph);

#endif
