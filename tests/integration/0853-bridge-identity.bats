#!/usr/bin/env bats
# Issue 27 (hostile review) §3 and §5, the bridge's half: a plugin's
# identity is the run's session (`sbx plugin run` opens it), never the
# X-Sbx-Plugin header the sandbox writes; every secret value served is
# one the run's scrubber holds; and what a run stores through the bridge
# (events, log, config, memory, tasks) reaches no host-side reader
# unscrubbed, in any case of its letters.  Each test fails on the tree
# before the fix.  The proxy's half is 0603-proxy-secrets.bats.
# sbx-test: unprivileged

load lib
load bridge

setup() { bridge_setup; }
teardown() { bridge_teardown; }

PLUGINS='{"version":1,"plugins":[{"id":"code-search","sha256":"00","secrets":["GH_TOKEN"],"created_by":"person"}]}'
GH=ghp-Secret-Value-0853

# curl over a session's socket with extra headers: hreq L A PATH HEADER...
hreq() {
	local l=$1 a=$2 p=$3 h args=()
	shift 3
	for h in "$@"; do args+=(-H "$h"); done
	curl -s --path-as-is --max-time 60 --unix-socket "$TEST_ROOT/$l.sock" \
	    -o "$TEST_ROOT/body" -w '%{http_code}' \
	    -H "Authorization: Bearer $(tok "$a")" "${args[@]}" \
	    "http://bridge$p"
	printf ' %s\n' "$(cat "$TEST_ROOT/body")"
}

@test "X-Sbx-Plugin is never believed: in an agent's session it is 403 plugin_not_in_session, in every copy and on every route, and nothing is served or written" {
	printf '%s\n' "$PLUGINS" >"$SBX_HOME/agents/a/plugins.json"
	printf '%s' "$GH" | sbx secret set GH_TOKEN --agent a -q
	prelay pa a code-search "GH_TOKEN=$GH"
	# An agent's run (any sbx exec, --no-secrets too) claims the plugin.
	run hreq a a /v1/secrets/GH_TOKEN 'X-Sbx-Plugin: code-search'
	echo "$output"
	[ "${output%% *}" = 403 ]
	[ "$(json_get "${output#* }" .error.code)" = plugin_not_in_session ]
	[[ "$output" != *"$GH"* ]]
	run hreq a a /v1/secrets/GH_TOKEN 'x-sbx-plugin: code-search'
	[ "${output%% *}" = 403 ]
	[[ "$output" != *"$GH"* ]]
	# Without the header: no plugin, no secret.
	run hreq a a /v1/secrets/GH_TOKEN
	[ "${output%% *}" = 403 ]
	[ "$(json_get "${output#* }" .error.code)" = plugin_required ]
	# The plugin's config namespace is not reachable by a header either.
	run hreq a a /v1/config/idx 'X-Sbx-Plugin: code-search'
	[ "${output%% *}" = 403 ]
	[ ! -e "$SBX_HOME/agents/a/bridge/config.json" ] ||
	    [ "$(jq -r '.plugins // {} | length' "$SBX_HOME/agents/a/bridge/config.json")" = 0 ]
	# In the plugin's own session: a header naming another plugin, or
	# the right one twice with a wrong one, is refused, not picked from.
	run hreq pa a /v1/secrets/GH_TOKEN 'X-Sbx-Plugin: other'
	[ "${output%% *}" = 403 ]
	[ "$(json_get "${output#* }" .error.code)" = plugin_not_in_session ]
	run hreq pa a /v1/secrets/GH_TOKEN 'X-Sbx-Plugin: code-search' 'X-Sbx-Plugin: other'
	[ "${output%% *}" = 403 ]
	[[ "$output" != *"$GH"* ]]
	# whoami says whose session it is.
	run phost pa a whoami
	[ "$(json_get "$output" .plugin)" = code-search ]
	run host a whoami
	[ "$(json_get "$output" '.plugin // "none"')" = none ]
	# The session alone is enough, and the header that agrees is taken.
	run hreq pa a /v1/secrets/GH_TOKEN
	[ "${output%% *}" = 200 ]
	[ "$(json_get "${output#* }" .value)" = "$GH" ]
	run hreq pa a /v1/secrets/GH_TOKEN 'X-Sbx-Plugin: code-search'
	[ "${output%% *}" = 200 ]
}

@test "a secret set since the plugin's run began is 409 secret_not_in_run (its scrubber does not hold it), audited; a name the run does not hold likewise" {
	printf '%s\n' "$PLUGINS" >"$SBX_HOME/agents/a/plugins.json"
	printf '%s' "$GH" | sbx secret set GH_TOKEN --agent a -q
	prelay pa a code-search "GH_TOKEN=$GH"
	prelay pnone a code-search
	run phost pa a secret get GH_TOKEN
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .value)" = "$GH" ]
	printf '%s' "ghp-Rotated-Value-0853" | sbx secret set GH_TOKEN --agent a -q
	run preq pa a GET /v1/secrets/GH_TOKEN
	echo "$output"
	[ "${output%% *}" = 409 ]
	[ "$(json_get "${output#* }" .error.code)" = secret_not_in_run ]
	[[ "$output" != *Rotated* ]]
	# sbx-host: 409 is "try again" (75).
	run phost pa a secret get GH_TOKEN
	[ "$status" -eq 75 ]
	# A session that holds no value for the name.
	run preq pnone a GET /v1/secrets/GH_TOKEN
	[ "${output%% *}" = 409 ]
	[[ "$output" != *Rotated* ]]
	grep -q 'secret GH_TOKEN refused: not the value the run of plugin code-search holds' \
	    "$SBX_HOME/agents/a/bridge/log.jsonl"
}

@test "in a real sandbox: sbx exec --no-secrets cannot read a plugin's secret with --plugin; sbx plugin run can, and its output is scrubbed" {
	sbx config set bridge.enabled true --agent a -q
	printf '%s' "$GH" | sbx secret set GH_TOKEN --agent a -q
	printf '%s\n' '{"name":"code-search","description":"d","secrets":["GH_TOKEN"],
	  "tools":[{"id":"peek","description":"d","run":"/run/sbx/bin/sbx-host secret get GH_TOKEN"}]}' \
	    >"$TEST_ROOT/cs.json"
	sbx plugin add -q "$TEST_ROOT/cs.json"
	sbx plugin install -q --agent a code-search
	# Any run of the agent claiming the plugin: refused, nothing printed.
	run sbx exec --no-secrets --agent a -- \
	    /run/sbx/bin/sbx-host --plugin code-search secret get GH_TOKEN
	echo "$output"
	[ "$status" -eq 77 ]
	[[ "$output" == *plugin_not_in_session* ]]
	[[ "$output" != *"$GH"* ]]
	lower=$(printf '%s' "$GH" | tr 'A-Z' 'a-z')
	[[ "$output" != *"$lower"* ]]
	run sbx exec --no-secrets --agent a -- sh -c \
	    'SBX_PLUGIN=code-search /run/sbx/bin/sbx-host secret get GH_TOKEN'
	[ "$status" -eq 77 ]
	[[ "$output" != *"$GH"* ]]
	# The plugin's own run: served, and scrubbed from what it prints.
	run sbx plugin run --json --agent a code-search peek
	echo "$output"
	[ "$(json_get "$output" .ok)" = true ]
	[ "$(json_get "$output" .result.exit_code)" = 0 ]
	[[ "$(json_get "$output" .result.stdout)" == *'[REDACTED:GH_TOKEN]'* ]]
	[[ "$output" != *"$GH"* ]]
}

@test "records a run sends come back scrubbed: events, log, config, memory, tasks; on disk, to sbx bridge events|tasks and over the read routes; any case" {
	S=Rec0rd-Secret-Value-0853
	s=$(printf '%s' "$S" | tr 'A-Z' 'a-z')
	U=$(printf '%s' "$S" | tr 'a-z' 'A-Z')
	printf '%s' "$S" | sbx secret set REC --agent a -q
	run host a events emit step "{\"k\":\"x $S y\",\"$S\":1,\"l\":\"$s\",\"u\":\"$U\"}"
	[ "$status" -eq 0 ]
	run breq a POST /v1/log "{\"level\":\"info\",\"message\":\"log $S\"}"
	[ "${output%% *}" = 200 ]
	run host a config set k "\"cfg $S\""
	[ "$status" -eq 0 ]
	run host a memory store "remember $S tomorrow"
	[ "$status" -eq 0 ]
	run breq a POST /v1/dispatch "{\"task\":\"do $S\",\"data\":{\"v\":\"$S\"}}"
	[ "${output%% *}" = 202 ]
	id=$(json_get "${output#* }" .id)
	# Nothing of it on disk, in any case.
	! grep -rqiF "$S" "$SBX_HOME/agents/a/bridge"
	# The host-side readers.
	run sbx bridge events --agent a
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *'[REDACTED:REC]'* ]]
	! grep -qiF "$S" <<<"$output"
	run sbx bridge events --agent a --json
	[[ "$output" == *'[REDACTED:REC]'* ]]
	! grep -qiF "$S" <<<"$output"
	run sbx bridge tasks --agent a
	echo "$output"
	[[ "$output" == *'[REDACTED:REC]'* ]]
	! grep -qiF "$S" <<<"$output"
	run sbx bridge tasks --agent a --json
	! grep -qiF "$S" <<<"$output"
	# The read routes.
	for p in /v1/events "/v1/dispatch/$id" /v1/config/k; do
		run breq a GET "$p"
		echo "$p: $output"
		[ "${output%% *}" = 200 ]
		[[ "$output" == *'[REDACTED:REC]'* ]]
		! grep -qiF "$S" <<<"$output"
	done
	run breq a POST /v1/memory/query '{"text":"remember tomorrow"}'
	[[ "$output" == *'[REDACTED:REC]'* ]]
	! grep -qiF "$S" <<<"$output"
}

@test "a record stored raw (before this fix, or before the secret was set) is scrubbed when read, by sbx bridge events and the route alike" {
	S=Late-Secret-Value-0853
	run host a events emit step "{\"k\":\"early $S\"}"
	[ "$status" -eq 0 ]
	run breq a POST /v1/dispatch "{\"task\":\"early $S\"}"
	[ "${output%% *}" = 202 ]
	id=$(json_get "${output#* }" .id)
	# Stored before the secret existed: raw on disk.
	grep -qF "$S" "$SBX_HOME/agents/a/bridge/events.jsonl"
	printf '%s' "$S" | sbx secret set LATE --agent a -q
	run sbx bridge events --agent a --json
	echo "$output"
	[[ "$output" == *'[REDACTED:LATE]'* ]]
	[[ "$output" != *"$S"* ]]
	run breq a GET /v1/events
	[[ "$output" != *"$S"* ]]
	run sbx bridge tasks --agent a
	[[ "$output" != *"$S"* ]]
	run sbx bridge task done --agent a "$id"
	[[ "$output" != *"$S"* ]]
	# Marked done, the task is written again: scrubbed.
	! grep -qF "$S" "$SBX_HOME/agents/a/bridge/tasks/$id.json"
}

@test "a recipe an agent registers (POST /v1/plugins) is a record too: scrubbed before it is stored and listed" {
	S=Recipe-Secret-Value-0853
	printf '%s' "$S" | sbx secret set RCP --agent a -q
	s=$(printf '%s' "$S" | tr 'A-Z' 'a-z')
	run breq a POST /v1/plugins "{\"name\":\"leaky\",\"description\":\"has $s\",
	  \"files\":{\"run.sh\":\"#!/bin/sh\\necho $S\\n\"},
	  \"tools\":[{\"id\":\"go\",\"description\":\"d $S\",\"run\":\"./run.sh\"}]}"
	echo "$output"
	[ "${output%% *}" = 201 ]
	! grep -rqiF "$S" "$SBX_HOME/plugins"
	run sbx plugin list --json
	echo "$output"
	[[ "$output" == *'[REDACTED:RCP]'* ]]
	! grep -qiF "$S" <<<"$output"
}

@test "a store the bridge cannot open (sealed with a passphrase): a run's records are scrubbed of the values it holds; a run holding none has them withheld (503 cannot_scrub), never stored raw" {
	S=Pass-Secret-Value-0853
	sbx config set bridge.enabled true --agent a -q
	printf '%s' "$S" | SBX_SECRET_PASSPHRASE=pass-0853 \
	    sbx secret set PSEC --agent a --passphrase -q
	run env SBX_SECRET_PASSPHRASE=pass-0853 "$SBX" exec --agent a -- sh -c \
	    '/run/sbx/bin/sbx-host events emit step "{\"k\":\"$PSEC\"}" &&
	     /run/sbx/bin/sbx-host config set k "\"$PSEC\""'
	echo "$output"
	[ "$status" -eq 0 ]
	! grep -rqiF "$S" "$SBX_HOME/agents/a/bridge"
	grep -qF '[REDACTED:PSEC]' "$SBX_HOME/agents/a/bridge/events.jsonl"
	# A run that holds no secret: nothing to scrub with, nothing stored.
	run sbx exec --no-secrets --agent a -- sh -c \
	    '/run/sbx/bin/sbx-host events emit step "{\"k\":\"x\"}"'
	echo "$output"
	[ "$status" -eq 69 ]
	[[ "$output" == *cannot_scrub* ]]
	[ "$(grep -c . "$SBX_HOME/agents/a/bridge/events.jsonl")" -eq 1 ]
	# The host-side reader opens the store as sbx exec does.
	run sbx bridge events --agent a
	[ "$status" -ne 0 ]
	[[ "$output" != *"$S"* ]]
	run env SBX_SECRET_PASSPHRASE=pass-0853 "$SBX" bridge events --agent a
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *'[REDACTED:PSEC]'* ]]
}
