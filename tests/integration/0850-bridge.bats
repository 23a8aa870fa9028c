#!/usr/bin/env bats
# sbx-bridge and sbx-host: the routes, each agent's records kept apart,
# plugin secrets, rate limits, the host-side commands, the lifecycle, and
# sbx-host inside a real sandbox (sbx exec with bridge.enabled).
# sbx-test: unprivileged

load lib
load bridge

BRIDGE_CONFIG='{"bridge":{"rate_limits":{"dispatch":3}}}'
setup() { bridge_setup; }
teardown() { bridge_teardown; }

@test "whoami names the session's agent; sbx-host prints the JSON" {
	run host a whoami
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .agent)" = a ]
	[ "$(json_get "$output" '.may | index("POST /v1/memory/query") != null')" = true ]
	run host b whoami
	[ "$(json_get "$output" .agent)" = b ]
}

@test "sbx-host without a token: a clear message and exit 77" {
	run env -u SBX_BRIDGE_TOKEN SBX_BRIDGE_SOCK="$TEST_ROOT/a.sock" "$HOSTCLI" whoami
	[ "$status" -eq 77 ]
	[[ "$output" == *"no bridge token"* ]]
	run env SBX_BRIDGE_TOKEN=wrong SBX_BRIDGE_SOCK="$TEST_ROOT/a.sock" "$HOSTCLI" whoami
	[ "$status" -eq 77 ]
	run env SBX_BRIDGE_TOKEN=x SBX_BRIDGE_SOCK="$TEST_ROOT/none.sock" "$HOSTCLI" whoami
	[ "$status" -eq 69 ]
	[[ "$output" == *"cannot reach the bridge"* ]]
	run "$HOSTCLI" nope
	[ "$status" -eq 64 ]
}

@test "config: set, get, rm; per agent; 404 once removed" {
	run host a config set color '"blue"'
	[ "$status" -eq 0 ]
	run host a config set limits '{"n":3}'
	[ "$status" -eq 0 ]
	run host a config get color
	[ "$(json_get "$output" .value)" = blue ]
	# Agent b never sees a's keys.
	run host b config get color
	[ "$status" -eq 1 ]
	[[ "$output" == *no_such_key* ]]
	run host a config rm color
	[ "$status" -eq 0 ]
	run host a config get color
	[ "$status" -eq 1 ]
	run host a config get limits
	[ "$(json_get "$output" .value.n)" = 3 ]
	# On disk, under a's records only.
	[ "$(jq -r .agent.limits.n "$SBX_HOME/agents/a/bridge/config.json")" = 3 ]
	[ ! -e "$SBX_HOME/agents/b/bridge/config.json" ]
}

@test "config: a plugin's namespace exists only for an installed plugin" {
	printf '%s\n' '{"version":1,"plugins":[{"id":"code-search","sha256":"00","secrets":["GH_TOKEN"],"created_by":"person"}]}' \
	    >"$SBX_HOME/agents/a/plugins.json"
	# The plugin is its session's (sbx plugin run), not a header.
	prelay pa a code-search
	prelay pb b code-search
	run phost pa a config set idx 1
	[ "$status" -eq 0 ]
	run phost pa a config get idx
	[ "$(json_get "$output" .value)" = 1 ]
	# The agent's own namespace does not have it.
	run host a config get idx
	[ "$status" -eq 1 ]
	# Not installed for b.
	run phost pb b config get idx
	[ "$status" -eq 77 ]
}

@test "secrets: only to a plugin's own session that declared the name, audited; 403 otherwise" {
	printf '%s\n' '{"version":1,"plugins":[{"id":"code-search","sha256":"00","secrets":["GH_TOKEN"],"created_by":"person"}]}' \
	    >"$SBX_HOME/agents/a/plugins.json"
	sbx secret set GH_TOKEN --agent a -q <<<"ghp-value-0850"
	sbx secret set OTHER --agent a -q <<<"other-value-0850"
	prelay pa a code-search GH_TOKEN=ghp-value-0850 OTHER=other-value-0850
	prelay pnope a nope GH_TOKEN=ghp-value-0850
	prelay pb b code-search GH_TOKEN=ghp-value-0850
	run phost pa a secret get GH_TOKEN
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .value)" = ghp-value-0850 ]
	# sbx-host --plugin saying what the session says is accepted.
	run phost pa a --plugin code-search secret get GH_TOKEN
	[ "$status" -eq 0 ]
	# Not declared by the plugin.
	run phost pa a secret get OTHER
	[ "$status" -eq 77 ]
	[[ "$output" != *other-value* ]]
	# No plugin session: the agent's own secrets are not served here.
	run host a secret get GH_TOKEN
	[ "$status" -eq 77 ]
	# Another plugin id, and another agent with the same id.
	run phost pnope a secret get GH_TOKEN
	[ "$status" -eq 77 ]
	run phost pb b secret get GH_TOKEN
	[ "$status" -eq 77 ]
	[[ "$output" != *ghp-value* ]]
	# Bad names never reach the store.
	run breq a GET /v1/secrets/..
	[ "${output%% *}" = 400 ]
	# The audit: granted twice, refused twice for a (not b's business).
	grep -c '"level":"audit"' "$SBX_HOME/agents/a/bridge/log.jsonl"
	[ "$(grep -c 'given to plugin code-search' "$SBX_HOME/agents/a/bridge/log.jsonl")" -eq 2 ]
	[ "$(grep -c 'refused' "$SBX_HOME/agents/a/bridge/log.jsonl")" -ge 2 ]
	! grep -q ghp-value "$SBX_HOME/agents/a/bridge/log.jsonl"
}

@test "events: emit, read since, per agent; sbx bridge events on the host" {
	for i in 1 2 3; do
		run host a events emit step "{\"i\":$i}"
		[ "$status" -eq 0 ]
		[ "$(json_get "$output" .id)" = "$i" ]
	done
	run host a events list --since 1
	[ "$(json_get "$output" '.events | length')" = 2 ]
	[ "$(json_get "$output" '.events[0].data.i')" = 2 ]
	run host a events list --limit 1
	[ "$(json_get "$output" '.events | length')" = 1 ]
	run host b events list
	[ "$(json_get "$output" '.events | length')" = 0 ]
	run breq a GET '/v1/events?since=x'
	[ "${output%% *}" = 400 ]
	run sbx bridge events --agent a --json
	[ "$(echo "$output" | wc -l)" -eq 3 ]
	[ "$(echo "$output" | tail -n 1 | jq -r .data.i)" = 3 ]
	run sbx bridge events --agent a --since 2
	[ "$(echo "$output" | wc -l)" -eq 1 ]
	[[ "$output" == 3*step* ]]
	# --follow prints new ones as they come (bounded by timeout).
	timeout 3 "$SBX" bridge events --agent a --since 3 --follow --json >"$TEST_ROOT/follow" &
	fpid=$!
	sleep 0.5
	host a events emit later '"x"'
	wait "$fpid" || true
	[ "$(jq -r .type "$TEST_ROOT/follow")" = later ]
}

@test "events are capped and rotated, ids go on" {
	printf '%s\n' '{"bridge":{"events_max_bytes":4096}}' >"$SBX_HOME/config/sandbox.json"
	"$BRIDGE" stop -q
	"$BRIDGE" serve -q
	relay a
	for i in $(seq 40); do
		host a events emit e "\"$(printf '%0100d' "$i")\"" >/dev/null
	done
	[ "$(stat -c %s "$SBX_HOME/agents/a/bridge/events.jsonl")" -le 4096 ]
	[ -e "$SBX_HOME/agents/a/bridge/events.jsonl.1" ]
	run host a events emit last '1'
	[ "$(json_get "$output" .id)" = 41 ]
}

@test "memory: store, ranked FTS5 query, per agent" {
	host a memory store "the deploy key rotates every monday" --tags ops,keys --salience 0.9
	host a memory store "monday is the team meeting" --salience 0.1
	host a memory store "lunch is at noon"
	host b memory store "agent b also has a monday note"
	run host a memory query "monday key"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" '.results | length')" = 2 ]
	[ "$(json_get "$output" '.results[0].text')" = "the deploy key rotates every monday" ]
	[ "$(json_get "$output" '.results[0].tags | join(",")')" = ops,keys ]
	run host a memory query "monday" --limit 1
	[ "$(json_get "$output" '.results | length')" = 1 ]
	run host b memory query "deploy"
	[ "$(json_get "$output" '.results | length')" = 0 ]
	run host a memory query "   "
	[ "$status" -eq 65 ]
	run breq a POST /v1/memory '{"text":"x","salience":7}'
	[ "${output%% *}" = 400 ]
	run breq a POST /v1/memory '{"text":"x","tags":["a b"]}'
	[ "${output%% *}" = 400 ]
}

@test "memory: FTS5 syntax in a query is searched for, never interpreted" {
	host a memory store "alpha beta gamma"
	host a memory store "delta"
	for q in '"' '*' 'alpha*' 'NEAR(alpha gamma)' 'text:delta' 'tags:x' '^alpha' \
	    'alpha AND' 'OR OR' '(((' '"alpha" "' "alpha' OR 1=1 --" '{text}: delta' \
	    'mem_fts MATCH' 'a"b"c' 'rank:*'; do
		run host a memory query "$q"
		echo "$q -> $status $output"
		[ "$status" -eq 0 ] || [ "$status" -eq 65 ]
		[[ "$output" != *memory_error* ]]
	done
	# Column filters and NEAR are plain words: "text:delta" finds delta
	# as a word, not a column query that would fail on an unknown column.
	run host a memory query 'tags:delta'
	[ "$(json_get "$output" '.results[0].text')" = delta ]
	run host a memory query 'NEAR(alpha'
	[ "$(json_get "$output" '.results[0].text')" = "alpha beta gamma" ]
}

@test "dispatch: queued for the same agent only; tasks and task done on the host" {
	run host a dispatch "summarize the logs" '{"k":1}'
	[ "$status" -eq 0 ]
	id=$(json_get "$output" .id)
	[ "$(json_get "$output" .status)" = queued ]
	run breq a POST /v1/dispatch '{"task":"x","agent_id":"b"}'
	[ "${output%% *}" = 403 ]
	[ ! -e "$SBX_HOME/agents/b/bridge/tasks" ]
	run host b dispatch get "$id"
	[ "$status" -eq 1 ]
	run sbx bridge tasks --agent a --json
	[ "$(echo "$output" | jq -r .id)" = "$id" ]
	run sbx bridge tasks --agent b
	[ -z "$output" ]
	run sbx bridge task done "$id" --agent a --result '{"ok":1}' --json
	[ "$status" -eq 0 ]
	run host a dispatch get "$id"
	[ "$(json_get "$output" .status)" = done ]
	[ "$(json_get "$output" .result.ok)" = 1 ]
	run sbx bridge task done "$id" --agent b
	[ "$status" -eq 1 ]
}

@test "rate limits: 429 with Retry-After past the service's window" {
	for i in 1 2 3; do
		run host a dispatch "t$i"
		[ "$status" -eq 0 ]
	done
	run curl -s -i --unix-socket "$TEST_ROOT/a.sock" -H "Authorization: Bearer $TOK_a" \
	    --data-binary '{"task":"t4"}' http://bridge/v1/dispatch
	[[ "$output" == "HTTP/1.1 429"* ]]
	[[ "$output" == *"Retry-After: "[1-9]* ]]
	run host a dispatch t5
	[ "$status" -eq 75 ]
	# Other services and other agents are not affected.
	run host a whoami
	[ "$status" -eq 0 ]
	run host b dispatch t1
	[ "$status" -eq 0 ]
	[ "$(ls "$SBX_HOME/agents/a/bridge/tasks" | wc -l)" -eq 3 ]
}

@test "log: a level and a message into the agent's log" {
	run host a log warning "disk almost full"
	[ "$status" -eq 0 ]
	run host a log loud "x"
	[ "$status" -eq 65 ]
	[ "$(jq -r .message "$SBX_HOME/agents/a/bridge/log.jsonl")" = "disk almost full" ]
}

@test "status, stop; status says not running after" {
	run sbx bridge status --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.running)" = true ]
	[ "$(json_get "$output" .result.sessions)" -ge 2 ]
	run sbx bridge stop
	[ "$status" -eq 0 ]
	run sbx bridge status
	[ "$status" -eq 1 ]
	[ ! -e "$SBX_HOME/run/bridge.sock" ]
}

@test "the bridge exits when idle" {
	"$BRIDGE" stop -q
	for p in $RELAY_PIDS; do kill "$p" 2>/dev/null || true; done
	RELAY_PIDS=""
	printf '%s\n' '{"bridge":{"idle_exit_s":1}}' >"$SBX_HOME/config/sandbox.json"
	"$BRIDGE" serve -q
	pid=$(cat "$SBX_HOME/run/bridge.pid")
	for i in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	! kill -0 "$pid" 2>/dev/null
}

@test "inside a sandbox: sbx-host at /run/sbx/bin, token file 0600, socket 0600" {
	"$BRIDGE" stop -q
	sbx config set bridge.enabled true --agent a -q
	run sbx exec --agent a -- sh -c '
		/run/sbx/bin/sbx-host whoami &&
		stat -c "%a %U" /run/sbx/token /run/sbx/bridge.sock &&
		[ "$SBX_BRIDGE_TOKEN" = "$(cat /run/sbx/token)" ] &&
		/run/sbx/bin/sbx-host memory store "from inside" &&
		/run/sbx/bin/sbx-host memory query inside'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *'"agent":"a"'* ]]
	[ "$(echo "$output" | grep -c '^600 ')" -eq 2 ]
	[[ "$output" == *'"text":"from inside"'* ]]
	# No host path of the bridge inside.
	run sbx exec --agent a -- sh -c "ls $SBX_HOME/run 2>&1; cat /proc/self/mountinfo"
	[[ "$output" != *bridge.sock*"$SBX_HOME"* ]]
	# An agent without bridge.enabled gets none of it.
	run sbx exec --agent b -- sh -c 'ls /run/sbx; echo "[$SBX_BRIDGE_TOKEN]"'
	[[ "$output" != *bridge.sock* ]]
	[[ "$output" == *"[]"* ]]
}

@test "stop returns once the bridge has exited; a run right after it starts a new one" {
	[ -s "$SBX_HOME/run/bridge.pid" ]
	"$BRIDGE" stop -q
	# Its pid file's lock is free: nothing of the old bridge is left to
	# make the next start say "already running" with nothing listening.
	flock -n "$SBX_HOME/run/bridge.pid" true
	sbx config set bridge.enabled true --agent a -q
	run sbx exec --agent a -- /run/sbx/bin/sbx-host whoami
	[ "$status" -eq 0 ]
	[[ "$output" == *'"agent":"a"'* ]]
	"$BRIDGE" stop -q
	flock -n "$SBX_HOME/run/bridge.pid" true
	run "$BRIDGE" status
	[ "$status" -eq 1 ]
}

# Issue 30: sbx exec holds the session and relays sbx-init's connections,
# so a bridge that dies mid-run is started again and the same session
# re-opened: the sandbox's next call works, and the envelope says what
# happened.
@test "the bridge killed mid-run: restarted, the next call works, a warning" {
	"$BRIDGE" stop -q
	sbx config set bridge.enabled true --agent a -q
	sbx exec --json --agent a -- sh -c '
		/run/sbx/bin/sbx-host memory store "before the kill" >/dev/null ||
		    exit 9
		touch /output/ready
		while [ ! -e /output/go ]; do sleep 0.05; done
		/run/sbx/bin/sbx-host whoami; echo "rc=$?"
		/run/sbx/bin/sbx-host memory query "the kill"' \
	    >"$TEST_ROOT/out" 2>"$TEST_ROOT/err" &
	epid=$!
	# Killed only once the run has been served once (a first run in a
	# new root may take a while to start: its /etc is built then).
	for i in $(seq 300); do
		[ -e "$SBX_HOME/output/a/ready" ] && break
		sleep 0.1
	done
	[ -e "$SBX_HOME/output/a/ready" ]
	old=$(cat "$SBX_HOME/run/bridge.pid")
	kill -9 "$old"
	for i in $(seq 100); do
		kill -0 "$old" 2>/dev/null || break
		sleep 0.05
	done
	touch "$SBX_HOME/output/a/go"
	wait "$epid" || true
	cat "$TEST_ROOT/out" "$TEST_ROOT/err"
	out=$(json_get "$(cat "$TEST_ROOT/out")" .result.stdout)
	# The same session: agent a; the stored record survived.
	[[ "$out" == *'"agent":"a"'* ]]
	[[ "$out" == *rc=0* ]]
	[[ "$out" == *'before the kill'* ]]
	json_get "$(cat "$TEST_ROOT/out")" '.warnings[]' |
	    grep -q 'sbx-bridge died during the run and was restarted'
	# A new bridge serves this root.
	new=$(cat "$SBX_HOME/run/bridge.pid")
	[ "$new" != "$old" ]
	kill -0 "$new"
}

@test "the bridge killed mid-run and not restartable: the next call fails cleanly, a warning" {
	"$BRIDGE" stop -q
	sbx config set bridge.enabled true --agent a -q
	sbx exec --json --agent a -- sh -c '
		/run/sbx/bin/sbx-host whoami >/dev/null || exit 9
		touch /output/ready
		while [ ! -e /output/go ]; do sleep 0.05; done
		/run/sbx/bin/sbx-host whoami; echo "rc=$?"' \
	    >"$TEST_ROOT/out" 2>"$TEST_ROOT/err" &
	epid=$!
	for i in $(seq 300); do
		[ -e "$SBX_HOME/output/a/ready" ] && break
		sleep 0.1
	done
	[ -e "$SBX_HOME/output/a/ready" ]
	# A bridge that cannot start again: its socket's place is a
	# directory (the running one keeps listening on the socket it has).
	old=$(cat "$SBX_HOME/run/bridge.pid")
	mv "$SBX_HOME/run/bridge.sock" "$SBX_HOME/run/bridge.sock.old"
	mkdir "$SBX_HOME/run/bridge.sock"
	kill -9 "$old"
	for i in $(seq 100); do
		kill -0 "$old" 2>/dev/null || break
		sleep 0.05
	done
	touch "$SBX_HOME/output/a/go"
	wait "$epid" || true
	rmdir "$SBX_HOME/run/bridge.sock"
	rm -f "$SBX_HOME/run/bridge.sock.old"
	cat "$TEST_ROOT/out" "$TEST_ROOT/err"
	out=$(json_get "$(cat "$TEST_ROOT/out")" .result.stdout)
	[[ "$out" == *rc=69* ]]
	json_get "$(cat "$TEST_ROOT/out")" '.warnings[]' |
	    grep -q 'sbx-bridge died during the run and could not be restarted'
}

@test "sbx-bridge stop mid-run is not a crash: no restart, the next call fails, a warning" {
	"$BRIDGE" stop -q
	sbx config set bridge.enabled true --agent a -q
	sbx exec --json --agent a -- sh -c '
		/run/sbx/bin/sbx-host whoami >/dev/null || exit 9
		touch /output/ready
		while [ ! -e /output/go ]; do sleep 0.05; done
		/run/sbx/bin/sbx-host whoami; echo "rc=$?"' \
	    >"$TEST_ROOT/out" 2>"$TEST_ROOT/err" &
	epid=$!
	for i in $(seq 300); do
		[ -e "$SBX_HOME/output/a/ready" ] && break
		sleep 0.1
	done
	[ -e "$SBX_HOME/output/a/ready" ]
	"$BRIDGE" stop -q
	touch "$SBX_HOME/output/a/go"
	wait "$epid" || true
	cat "$TEST_ROOT/out" "$TEST_ROOT/err"
	out=$(json_get "$(cat "$TEST_ROOT/out")" .result.stdout)
	[[ "$out" == *rc=69* ]]
	json_get "$(cat "$TEST_ROOT/out")" '.warnings[]' |
	    grep -q 'sbx-bridge was stopped (sbx bridge stop) during the run'
	run "$BRIDGE" status
	[ "$status" -eq 1 ]
}
