/*
 * bridgestore.h: what sbx-bridge keeps for an agent under agents/A/bridge/
 * (lib/state/layout.h): small JSON config values namespaced per plugin,
 * the event log and the log (JSON lines, capped, rotated once), memory
 * (SQLite FTS5, ranked by bm25), and the dispatch queue (one file a task).
 *
 * Every function takes the agent the bridge authenticated and touches
 * nothing of another; names reaching a path or a query are checked again
 * here.  The bridge serializes calls (one lock); the host-side commands
 * (sbx bridge tasks, task done, events) only read, or replace a task's
 * file atomically.
 *
 * Every record is scrubbed of the agent's secrets (lib/base/scrub.h,
 * the agent's whole store) when it is stored and again when it is read:
 * one rule for every reader, so that a run cannot get a secret past the
 * scrubber of its output by storing it and having the host print it.
 * When the store cannot be opened for that, the call fails (unavailable,
 * reason "cannot_scrub"), never passing the raw record.
 */
#ifndef SBX_BRIDGESTORE_H
#define SBX_BRIDGESTORE_H

#include <stddef.h>

#include <jansson.h>

#include "error.h"

#define SBX_BSTORE_LINE_MAX   (64u << 10) /* an event or log line */
#define SBX_BSTORE_VALUE_MAX  (64u << 10) /* a config value */
#define SBX_BSTORE_CONFIG_MAX (1u << 20) /* config.json in all */
#define SBX_BSTORE_TASKS_MAX  1000 /* queued, per agent */

enum sbx_bstore_log { SBX_BSTORE_EVENTS, SBX_BSTORE_LOG };

struct sbx_scrub;
/* The asking run's scrubber (its secret values, which the bridge got from
 * the run), used beside the store's until set again; NULL: none.  Callers
 * serialize (the bridge's lock). */
void sbx_bstore_run_scrubber(struct sbx_scrub *);
/* j scrubbed in place as a record is (the store's and the run's values);
 * -1 (unavailable, "cannot_scrub") when neither is to be had. */
int sbx_bstore_scrub(int rootfd, const char *agent, json_t *j,
    struct sbx_error *);

/* A secret for plugin, if agents/A/plugins.json lists the plugin with
 * name among its secrets, and if its value is the one the asking run
 * holds (held: {name: sbx_secret_digest}, the session's): {"name",
 * "value"}; rejected otherwise (reason "secret_not_in_run" for a value
 * the run does not hold).  Every outcome is written to the agent's log
 * (audit). */
json_t *sbx_bstore_secret(int rootfd, const char *agent, const char *plugin,
    const char *name, const json_t *held, struct sbx_error *);
/* Is plugin installed for agent (agents/A/plugins.json)?  Its entry
 * (new reference) or NULL (not_found, or the file's error). */
json_t *sbx_bstore_plugin(int rootfd, const char *agent, const char *plugin,
    struct sbx_error *);
/* A config value: op 0 get (the value, new reference; not_found), 1 put
 * value, 2 delete (not_found when absent); plugin NULL: the agent's own
 * namespace.  Put and delete return json_true(). */
json_t *sbx_bstore_config(int rootfd, const char *agent, const char *plugin,
    const char *key, json_t *value, int op, struct sbx_error *);
/* Append ev (an object: id and ts are added) to the log; rotated to .1
 * past max_bytes.  The new id, or -1. */
long long sbx_bstore_append(int rootfd, const char *agent, enum sbx_bstore_log,
    json_t *ev, size_t max_bytes, struct sbx_error *);
/* Entries with id > since, oldest first, at most limit (an array). */
json_t *sbx_bstore_events_read(int rootfd, const char *agent,
    enum sbx_bstore_log, long long since, size_t limit, struct sbx_error *);
/* The same for people (sbx bridge events): a damaged line is listed where
 * it stands as {"damaged":true,"file","line","after"} (after: the id
 * before it; listed when after >= since), not skipped. */
json_t *sbx_bstore_events_list(int rootfd, const char *agent,
    enum sbx_bstore_log, long long since, size_t limit, struct sbx_error *);
/* Memory: store {"text","tags","salience"} (the oldest least salient
 * entry goes past max); the id, or -1. */
long long sbx_bstore_memory_add(int rootfd, const char *agent,
    const json_t *body, size_t max, struct sbx_error *);
/* Ranked query {"text","limit"}: [{"id","text","tags","salience",
 * "created","score"}].  The text is reduced to its words, each a quoted
 * FTS5 string: no query syntax of the caller is ever interpreted. */
json_t *sbx_bstore_memory_query(int rootfd, const char *agent,
    const json_t *body, struct sbx_error *);
/* The FTS5 expression for text (caller frees), or NULL when it has no
 * word.  Exposed for the tests. */
char *sbx_bstore_fts_expr(const char *text);
/* Dispatch: queue {"task","data"} (the task record, status "queued"). */
json_t *sbx_bstore_task_add(int rootfd, const char *agent, const json_t *body,
    struct sbx_error *);
json_t *sbx_bstore_task_get(int rootfd, const char *agent, const char *id,
    struct sbx_error *);
/* Every task of the agent, oldest first (an array); a record that cannot
 * be read is listed last as {"damaged":true,"id","file","message"}. */
json_t *sbx_bstore_task_list(int rootfd, const char *agent, struct sbx_error *);
/* Mark a task done with result (may be NULL); the record. */
json_t *sbx_bstore_task_done(int rootfd, const char *agent, const char *id,
    json_t *result, struct sbx_error *);
/* ^t[0-9a-f]{16}$ */
int sbx_bstore_task_id_valid(const char *);

#endif
