#!/usr/bin/env bats
# sbx mcp (issue 18): the MCP server over stdio.  The acceptance test
# drives it with the reference TypeScript SDK client (tests/helpers/
# mcp-client.mjs, the SDK installed by scripts/deps.sh --mcp-client into
# tests/mcp-client); the hostile tests speak raw JSON-RPC lines to it.
# sbx-test: unprivileged

load lib
load proxy
load install
bats_require_minimum_version 1.5.0

CLIENT=$BATS_TEST_DIRNAME/../helpers/mcp-client.mjs
SDK=$BATS_TEST_DIRNAME/../mcp-client/node_modules/@modelcontextprotocol/sdk

setup() { proxy_setup; }
teardown() { proxy_teardown; }

need_client() {
	command -v node >/dev/null 2>&1 || skip "node is not installed"
	[ -d "$SDK" ] || skip "the MCP SDK is not installed (sh scripts/deps.sh --mcp-client: npm ci in tests/mcp-client)"
}

INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bats","version":"1"}}}'

# mcp_raw N [OPTIONS...]: stdin's lines to a fresh sbx mcp (after
# initialize), then its output in $output until N responses (the
# initialize one included) have come, 60 s at most; stdin stays open
# until then, as a client's would (EOF ends the session and its runs).
mcp_raw() {
	local want=$1 line n=0 in out pid prog=("$SBX" mcp)
	shift
	# MCP_DIRECT: that sbx-mcp itself, without SBX_EXEC_PATH.
	[ -n "${MCP_DIRECT:-}" ] && prog=(env -u SBX_EXEC_PATH "$MCP_DIRECT")
	coproc MCP { exec "${prog[@]}" "$@" 2>/dev/null; }
	# bash forgets the coprocess's fds and pid when it ends: kept.
	pid=$MCP_PID
	exec {in}>&"${MCP[1]}" {out}<&"${MCP[0]}"
	printf '%s\n' "$INIT" >&"$in"
	cat >&"$in"
	output=
	while [ "$n" -lt "$want" ] && IFS= read -r -t 60 line <&"$out"; do
		output+=$line$'\n'
		case $line in '{"jsonrpc":"2.0","id":'*) n=$((n + 1)) ;; esac
	done
	exec {in}>&- {out}<&-
	eval "exec ${MCP[1]:-$in}>&-" 2>/dev/null || true
	wait "$pid"
	status=$?
	[ "$n" -eq "$want" ] || { echo "$n of $want responses"; return 1; }
}

# reply ID: the response line with that id.
reply() { printf '%s\n' "$output" | jq -c "select(.id == $1)"; }

# No process whose command line holds $1 is left on the host.
gone() {
	local i
	for i in $(seq 100); do
		grep -qsF -- "$1" /proc/[0-9]*/cmdline || return 0
		sleep 0.05
	done
	return 1
}

@test "the reference SDK client: tools and schemas, run, background, files, secret, progress, cancel" {
	need_client
	sbx provision -q
	SBX="$SBX" run -0 timeout 120 node "$CLIENT" acceptance
	echo "$output"
	[[ "$output" == *"PASS tools"* ]]
	[[ "$output" == *"PASS shell_run"* ]]
	[[ "$output" == *"PASS sandbox_process"* ]]
	[[ "$output" == *"PASS secret_request"* ]]
	[[ "$output" == *"PASS progress"* ]]
	[[ "$output" == *"PASS cancel"* ]]
	[[ "$output" != *FAIL* ]]
	gone 'sleep 47.25'
	# The background job was killed, not left running.
	run -0 sbx exec ps --json
	[ "$(json_get "$output" '[.result.jobs[] | select(.state == "running")] | length')" = 0 ]
}

@test "the reference SDK client: sandbox_install from the loopback registry" {
	need_client
	need_install_tools
	install_world
	AGENT=alice MCP_INSTALL_PKG=sbxpy-hello SBX="$SBX" run -0 timeout 180 node "$CLIENT" acceptance
	echo "$output"
	[[ "$output" == *"PASS install pip sbxpy-hello"* ]]
	[[ "$output" != *FAIL* ]]
	run -0 sbx exec --agent alice -- sbxpy_hello-hello
	[ "$output" = "hello from sbxpy-hello" ]
}

@test "the reference SDK client: a plugin tool, listed with its schema and called" {
	need_client
	[ -x "$SBX_EXEC_PATH/sbx-plugin" ] || skip "sbx plugin is not built (branch plugins)"
	sbx provision -q
	printf '%s\n' '{"name": "Greet", "description": "greets",
	 "tools": [{"id": "hello", "description": "says hello to someone",
	  "parameters": {"type": "object", "properties": {"who": {"type": "string"}},
	   "required": ["who"]},
	  "run": "echo \"hello $PARAM_WHO\""}]}' > "$TEST_ROOT/greet.json"
	sbx plugin add -q "$TEST_ROOT/greet.json"
	sbx plugin install -q greet
	MCP_PLUGIN_TOOL=plugin-greet-hello MCP_PLUGIN_ARGS='{"who":"mcp"}' \
	    MCP_PLUGIN_EXPECT='hello mcp' SBX="$SBX" run -0 timeout 120 node "$CLIENT" acceptance
	echo "$output"
	[[ "$output" == *"PASS plugin plugin-greet-hello called"* ]]
	[[ "$output" != *FAIL* ]]
	# Its schema is checked before anything runs.
	mcp_raw 3 <<'EOF'
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"plugin-greet-hello","arguments":{}}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"plugin-greet-hello","arguments":{"who":1}}}
EOF
	[ "$(reply 1 | jq -r .result.structuredContent.reason)" = missing_property ]
	[ "$(reply 2 | jq -r .result.structuredContent.reason)" = wrong_type ]
}

@test "plugin tool names: every one a name clients take, unique, however long the ids; the id in the title (issue 28)" {
	[ -x "$SBX_EXEC_PATH/sbx-plugin" ] || skip "sbx plugin is not built"
	sbx provision -q
	# The longest plugin id (32) with the longest tool ids (64), two
	# tools that differ only past the cut, and two short ones that a
	# careless joining would give one name.
	pid=pppppppppppppppppppppppppppppppp
	t1=$(printf 't%.0s' $(seq 64))
	t2=$(printf 't%.0s' $(seq 63))u
	jq -n --arg n "$pid" --arg a "$t1" --arg b "$t2" '{name: $n,
	    description: "long names", tools: [
	    {id: $a, description: "one", run: "echo one"},
	    {id: $b, description: "two", run: "echo two"}]}' > "$TEST_ROOT/long.json"
	printf '%s\n' '{"name": "a-b", "description": "d", "tools": [{"id": "c",
	    "description": "dash", "run": "echo dash"}]}' > "$TEST_ROOT/ab.json"
	printf '%s\n' '{"name": "a", "description": "d", "tools": [{"id": "b_c",
	    "description": "underscore", "run": "echo underscore"}]}' > "$TEST_ROOT/a.json"
	for f in long ab a; do
		sbx plugin add -q "$TEST_ROOT/$f.json"
	done
	sbx plugin install -q "$pid"
	sbx plugin install -q a-b
	sbx plugin install -q a
	# sbx tools --json: the name and the id side by side.
	run -0 sbx tools --json
	[ "$(json_get "$output" '[.result.tools[] | select(.id == "plugin.a-b.c") | .name, .title, .plugin, .tool] | join(" ")')" = \
	    "plugin-a-b-c plugin.a-b.c a-b c" ]
	[ "$(json_get "$output" '[.result.tools[] | select(.id == "plugin.a.b_c") | .name] | join(" ")')" = plugin-a-b_c ]
	long1=$(printf '%s' "$output" | jq -r --arg id "plugin.$pid.$t1" '.result.tools[] | select(.id == $id) | .name')
	long2=$(printf '%s' "$output" | jq -r --arg id "plugin.$pid.$t2" '.result.tools[] | select(.id == $id) | .name')
	want1=plugin-$pid-${t1:0:15}-$(printf 'plugin.%s.%s' "$pid" "$t1" | sha256sum | cut -c1-8 | tr a-f A-F)
	echo "$long1 $long2"
	[ "$long1" = "$want1" ]
	[ "${#long2}" -eq 64 ]
	[ "$long1" != "$long2" ]
	# The text output names the id beside the name.
	run -0 sbx tools
	[[ "$output" == *$'plugin-a-b-c\tplugin\tplugin.a-b.c'* ]]
	# tools/list: every name is one clients take, none twice; the title
	# is the id.
	mcp_raw 4 <<EOF
{"jsonrpc":"2.0","id":1,"method":"tools/list"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"$long2","arguments":{}}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"plugin.a-b.c","arguments":{}}}
EOF
	echo "$output" | cut -c1-300
	reply 1 | jq -e '.result.tools | map(.name) |
	    all(test("^[a-zA-Z0-9_-]{1,64}$")) and (unique | length) == length'
	reply 1 | jq -e --arg n "$long1" --arg id "plugin.$pid.$t1" \
	    '.result.tools[] | select(.name == $n) | .title == $id and .annotations.title == $id'
	[ "$(reply 1 | jq '[.result.tools[] | select(.title | startswith("plugin."))] | length')" -eq 4 ]
	[ "$(reply 2 | jq -r .result.structuredContent.result.stdout)" = two ]
	# The dotted id, as clients written before called it, still works.
	[ "$(reply 3 | jq -r .result.structuredContent.result.stdout)" = dash ]
}

@test "a Python MCP client: skipped without Debian's python3-mcp" {
	if ! /usr/bin/python3 -c 'import mcp' 2>/dev/null; then
		skip "Debian has no python3-mcp package (and the Python mcp module is not installed)"
	fi
	skip "python mcp module found but no test written for it yet"
}

@test "initialize: the client's revision when known, else ours; ping; unknown methods -32601" {
	sbx provision -q
	mcp_raw 7 <<'EOF'
{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{}}}
{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{}}}
{"jsonrpc":"2.0","id":3,"method":"ping"}
{"jsonrpc":"2.0","id":4,"method":"resources/list"}
{"jsonrpc":"2.0","method":"notifications/whatever"}
{"jsonrpc":"2.0","id":5,"method":"logging/setLevel","params":{"level":"debug"}}
{"jsonrpc":"2.0","id":6,"method":"logging/setLevel","params":{"level":"loud"}}
EOF
	echo "$output"
	[ "$(reply 0 | jq -r .result.protocolVersion)" = 2025-06-18 ]
	[ "$(reply 1 | jq -r .result.protocolVersion)" = 2024-11-05 ]
	[ "$(reply 2 | jq -r .result.protocolVersion)" = 2025-11-25 ]
	[ "$(reply 3 | jq -c .result)" = '{}' ]
	[ "$(reply 4 | jq -r .error.code)" = -32601 ]
	[ "$(reply 5 | jq -c .result)" = '{}' ]
	[ "$(reply 6 | jq -r .error.code)" = -32602 ]
	# A notification gets no answer: 7 lines for 7 requests.
	[ "$(printf '%s' "$output" | wc -l)" -eq 7 ]
}

@test "malformed JSON -32700, not JSON-RPC -32600, batches -32600, unknown tool -32602: the session goes on" {
	sbx provision -q
	mcp_raw 12 <<'EOF'
{"jsonrpc":"2.0","id":1,"method":"ping"
{"jsonrpc":"1.0","id":2,"method":"ping"}
{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}
[{"jsonrpc":"2.0","id":3,"method":"ping"}]
{"jsonrpc":"2.0","id":4,"id":5,"method":"ping"}
{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"rm_rf"}}
{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"shell_run","arguments":"echo"}}
{"jsonrpc":"2.0","id":8,"method":"tools/call","params":[1]}
42
"ping"
{"jsonrpc":"2.0","id":9,"method":"ping"}
EOF
	echo "$output"
	[ "$(printf '%s\n' "$output" | jq -s '[.[] | select(.id == null) | .error.code] | sort | join(",")')" = '"-32700,-32700,-32600,-32600,-32600,-32600"' ]
	[ "$(reply 2 | jq -r .error.code)" = -32600 ]
	[ "$(reply 6 | jq -r .error.code)" = -32602 ]
	[ "$(reply 7 | jq -r .error.code)" = -32602 ]
	[ "$(reply 8 | jq -r .error.code)" = -32602 ]
	[ "$(reply 9 | jq -c .result)" = '{}' ]
}

@test "tool arguments: extra properties, wrong types, huge strings, missing ones are tool errors; nothing runs" {
	sbx provision -q
	big=$(head -c 70000 /dev/zero | tr '\0' x)
	mcp_raw 9 <<EOF
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell_run","arguments":{"command":"touch pwned1","sudo":true}}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shell_run","arguments":{"command":"touch pwned2","timeout":"soon"}}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"shell_run","arguments":{"command":"touch pwned3 #$big"}}}
{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"shell_run","arguments":{"command":"touch pwned4","argv":["touch","pwned4"]}}}
{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sandbox_process","arguments":{"action":"poll"}}}
{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"shell_run","arguments":{"command":"touch pwned6","network":"everything"}}}
{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"shell_run","arguments":{"command":"touch pwned7","env":{"A":1}}}}
{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"file_write","arguments":{"path":"x","content":"y","mode":"4755"}}}
EOF
	echo "$output" | cut -c1-300
	for id_reason in 1:unknown_property 2:wrong_type 3:too_long 4:command_or_argv \
	    5:missing_property 6:not_allowed 7:wrong_type 8:bad_format; do
		r=$(reply "${id_reason%%:*}")
		[ "$(jq -r .result.isError <<<"$r")" = true ]
		[ "$(jq -r .result.structuredContent.kind <<<"$r")" = invalid_args ]
		[ "$(jq -r .result.structuredContent.reason <<<"$r")" = "${id_reason#*:}" ]
	done
	[ "$(reply 7 | jq -r .result.structuredContent.field)" = env.A ]
	run ls "$WS"
	[[ "$output" != *pwned* ]]
}

@test "sbx-mcp finds its tools' programs next to itself (an install moved by make install PREFIX=)" {
	sbx provision -q
	# Calls run at once: the read in a second session, after the write.
	MCP_DIRECT=$SBX_EXEC_PATH/sbx-mcp mcp_raw 2 <<'EOF'
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"file_write","arguments":{"path":"moved.txt","content":"here\n"}}}
EOF
	echo "$output"
	[ "$(reply 1 | jq -r .result.isError)" = false ]
	MCP_DIRECT=$SBX_EXEC_PATH/sbx-mcp mcp_raw 2 <<'EOF'
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"file_read","arguments":{"path":"moved.txt"}}}
EOF
	echo "$output"
	[ "$(reply 2 | jq -r .result.structuredContent.result.content)" = here ]
}

@test "a tool that fails is a tool error with the envelope, not a JSON-RPC error" {
	sbx provision -q
	mcp_raw 4 <<'EOF'
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell_run","arguments":{"command":"true","cwd":"../../etc"}}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sandbox_process","arguments":{"action":"poll","job":"0123456789abcdef"}}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"secret_check","arguments":{"name":"NOPE"}}}
EOF
	echo "$output"
	[ "$(reply 1 | jq -r .result.isError)" = true ]
	[ "$(reply 1 | jq -r .result.structuredContent.kind)" = invalid_args ]
	[ "$(reply 1 | jq -r .result.structuredContent.field)" = cwd ]
	[ "$(reply 2 | jq -r .result.structuredContent.kind)" = not_found ]
	[ "$(reply 3 | jq -r .result.structuredContent.reason)" = secret_missing ]
	[[ "$(reply 3 | jq -r '.result.content[0].text')" == *"hint: sbx secret set NOPE"* ]]
}

@test "100 concurrent tools/call: at most --max-runs at once, the rest rejected with the limit" {
	sbx provision -q
	mcp_raw 102 --max-runs 4 < <(for i in $(seq 1 100); do
		printf '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"shell_run","arguments":{"argv":["sleep","0.2"]}}}\n' "$i"
	done
	echo '{"jsonrpc":"2.0","id":1000,"method":"ping"}')
	[ "$(printf '%s' "$output" | grep -c '"id":')" -eq 102 ]
	ok=$(printf '%s\n' "$output" | jq -s '[.[] | select(.result.isError == false)] | length')
	rej=$(printf '%s\n' "$output" | jq -s '[.[] | select(.result.structuredContent.reason == "concurrency_limit" and .result.structuredContent.limit == 4)] | length')
	echo "ok $ok rejected $rej"
	[ "$ok" -ge 4 ]
	[ "$((ok + rej))" -eq 100 ]
	[ "$rej" -ge 1 ]
	[ "$(reply 1000 | jq -c .result)" = '{}' ]
}

@test "the agent's settings: mcp.max_runs and mcp.max_per_minute, the options win, a bad value stops the server" {
	sbx provision -q
	sbx config set mcp.max_runs 2 --agent default
	sbx config set mcp.max_per_minute 50 --global
	mcp_raw 6 < <(for i in 1 2 3 4 5; do
		printf '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"shell_run","arguments":{"argv":["sleep","0.3"]}}}\n' "$i"
	done)
	[ "$(printf '%s' "$output" | jq -s '[.[] | select(.result.structuredContent.limit == 2)] | length')" -ge 1 ]
	[ "$(printf '%s' "$output" | jq -s '[.[] | select(.result.isError == false)] | length')" -ge 2 ]
	mcp_raw 6 --max-runs 5 < <(for i in 1 2 3 4 5; do
		printf '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"shell_run","arguments":{"argv":["sleep","0.3"]}}}\n' "$i"
	done)
	[ "$(printf '%s' "$output" | jq -s '[.[] | select(.result.isError == false)] | length')" -eq 5 ]
	run -65 sbx config set mcp.max_runs 65 --agent default
	echo '{"mcp":{"max_runs":"lots"}}' > "$SBX_HOME/config/agents/default.json"
	run -78 sbx mcp </dev/null
	[[ "$output" == *"mcp.max_runs must be an integer from 1 to 64"* ]]
}

@test "the network of a call stays within the agent's setting: outbound refused unless configured" {
	sbx provision -q
	mcp_raw 3 <<'EOF'
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell_run","arguments":{"command":"touch pwned","network":"outbound"}}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shell_run","arguments":{"command":"true","network":"none"}}}
EOF
	echo "$output"
	[ "$(reply 1 | jq -r .result.structuredContent.kind)" = rejected ]
	[ "$(reply 1 | jq -r .result.structuredContent.reason)" = network_not_allowed ]
	[[ "$(reply 1 | jq -r .result.structuredContent.hint)" == *"sbx config set network outbound --agent default"* ]]
	[ ! -e "$WS/pwned" ]
	[ "$(reply 2 | jq -r .result.structuredContent.result.network)" = none ]
	sbx config set network outbound --agent default
	mcp_raw 2 <<'EOF'
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell_run","arguments":{"command":"true","network":"outbound"}}}
EOF
	echo "$output"
	[ "$(reply 1 | jq -r .result.structuredContent.result.network)" = outbound ]
}

@test "commands per minute: over --max-per-minute, rejected (retryable) with the limit" {
	sbx provision -q
	mcp_raw 4 --max-per-minute 2 <<'EOF'
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"secret_check","arguments":{"name":"A"}}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"secret_check","arguments":{"name":"B"}}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"secret_check","arguments":{"name":"C"}}}
EOF
	echo "$output"
	[ "$(reply 3 | jq -r .result.structuredContent.kind)" = rejected ]
	[ "$(reply 3 | jq -r .result.structuredContent.reason)" = rate_limit ]
	[ "$(reply 3 | jq -r .result.structuredContent.limit)" = 2 ]
	[ "$(reply 3 | jq -r .result.structuredContent.retryable)" = true ]
	[ "$(reply 1 | jq -r .result.structuredContent.reason)" = secret_missing ]
}

@test "a request id reused while its call runs: -32600 with a null id; the first call answers under its id" {
	sbx provision -q
	mcp_raw 3 <<'EOF'
{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"shell_run","arguments":{"command":"sleep 0.5; echo first"}}}
{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"shell_run","arguments":{"command":"echo second"}}}
EOF
	echo "$output"
	[ "$(printf '%s\n' "$output" | jq -s '[.[] | select(.id == null) | .error.code] | join(",")')" = '"-32600"' ]
	[ "$(reply '"a"' | jq -r .result.structuredContent.result.stdout)" = first ]
	[ "$(reply '"a"' | wc -l)" -eq 1 ]
}

@test "an oversized message: -32600 before parsing, the next message is answered" {
	sbx provision -q
	big=$(head -c 5000 /dev/zero | tr '\0' x)
	mcp_raw 3 --max-message 2048 <<EOF
{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"$big"}}
{"jsonrpc":"2.0","id":2,"method":"ping"}
EOF
	echo "$output"
	[ "$(printf '%s\n' "$output" | jq -s '[.[] | select(.id == null) | .error.code] | join(",")')" = '"-32600"' ]
	[ "$(reply 2 | jq -c .result)" = '{}' ]
	run -65 sbx mcp --max-message 10
}

@test "half a message then EOF: the server ends cleanly, without an answer" {
	sbx provision -q
	run -0 timeout 20 sh -c 'printf "%s" "{\"jsonrpc\":\"2.0\",\"id\":1,\"meth" | "$1" mcp' sh "$SBX"
	[ -z "$output" ]
}

@test "a server told to stop (SIGTERM): its runs are killed first" {
	sbx provision -q
	coproc MCP { exec "$SBX" mcp 2>/dev/null; }
	local pid=$MCP_PID in
	exec {in}>&"${MCP[1]}"
	# `; :`: the shell stays, its argv names the run (in a warm session
	# no argv of sbx's carries the command).
	printf '%s\n' "$INIT" '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell_run","arguments":{"command":"sleep 57.75; :"}}}' >&"$in"
	for i in $(seq 100); do
		grep -qsF 'sleep 57.75' /proc/[0-9]*/cmdline && break
		sleep 0.05
	done
	grep -qsF 'sleep 57.75' /proc/[0-9]*/cmdline
	kill -TERM "$pid"
	wait "$pid" || true
	exec {in}>&-
	gone 'sleep 57.75'
}

@test "a client that disappears (both of its pipes closed): its runs are killed, its background jobs too" {
	sbx provision -q
	coproc MCP { exec "$SBX" mcp 2>/dev/null; }
	local pid=$MCP_PID in out line
	exec {in}>&"${MCP[1]}" {out}<&"${MCP[0]}"
	printf '%s\n' "$INIT" \
	    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbox_process","arguments":{"action":"start","command":"sleep 58.5"}}}' \
	    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shell_run","arguments":{"command":"sleep 59.5"}}}' >&"$in"
	output=
	while IFS= read -r -t 60 line <&"$out"; do
		output+=$line$'\n'
		case $line in '{"jsonrpc":"2.0","id":1,'*) break ;; esac
	done
	for i in $(seq 100); do
		grep -qsF 'sleep 59.5' /proc/[0-9]*/cmdline && break
		sleep 0.05
	done
	# The client goes: its ends of both pipes close.
	exec {in}>&- {out}<&-
	eval "exec ${MCP[1]:-$in}>&- ${MCP[0]:-$out}<&-" 2>/dev/null || true
	timeout 30 tail --pid="$pid" -f /dev/null
	echo "$output"
	[ "$(reply 1 | jq -r .result.isError)" = false ]
	gone 'sleep 59.5'
	gone 'sleep 58.5'
}

@test "sbx mcp fed by a pipe: EOF answers the calls in flight before it exits (issue 28)" {
	sbx provision -q
	# printf ... | sbx mcp: the input ends at once, the calls still run.
	run -0 timeout 60 sh -c 'printf "%s\n" "$1" \
	    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"shell_run\",\"arguments\":{\"command\":\"sleep 0.5; echo hello from the sandbox\"}}}" \
	    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"file_list\",\"arguments\":{}}}" \
	    "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"shell_run\",\"arguments\":{\"command\":\"sleep 600\",\"timeout\":1}}}" |
	    "$2" mcp' sh "$INIT" "$SBX"
	echo "$output" | cut -c1-300
	[ "$(reply 2 | jq -r .result.structuredContent.result.stdout)" = "hello from the sandbox" ]
	[ "$(reply 2 | jq -r .result.isError)" = false ]
	[ -n "$(reply 3)" ]
	# Bounded by its own timeout: answered as a timeout, not dropped.
	[ "$(reply 4 | jq -r .result.structuredContent.reason)" = idle_timeout ]
	gone 'sleep 600'
}

@test "a background job's start gives the model its id, no host path (log_file under the state root)" {
	sbx provision -q
	mcp_raw 3 <<'EOF'
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbox_process","arguments":{"action":"start","command":"echo up"}}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sandbox_process","arguments":{"action":"list"}}}
EOF
	echo "$output"
	job=$(reply 1 | jq -r .result.structuredContent.result.job)
	[[ "$job" =~ ^[0-9a-f]{16}$ ]]
	[ "$(reply 1 | jq -r '.result.structuredContent.result | has("log_file")')" = false ]
	[[ "$(reply 1 | jq -r '.result.content[0].text')" == *"job=\"$job\""* ]]
	# No answer carries the host's state root.
	[[ "$output" != *"$SBX_HOME"* ]]
}

@test "usage: no operand, bad numbers, an invalid agent" {
	run -64 sbx mcp extra
	run -65 sbx mcp --max-runs 0
	run -65 sbx mcp --max-runs 65
	run -65 sbx mcp --json --agent ../x
	[ "$(json_get "$output" .field)" = agent ]
}

@test "file tools through MCP: traversal in every spelling, links out of the home, a FIFO; nothing outside changes" {
	[ -x "$SBX_EXEC_PATH/sbx-file" ] || skip "sbx file is not built (branch file)"
	sbx provision -q
	ln -s /etc "$WS/etc-link"
	ln -s /proc/self/root "$WS/root-link"
	mkfifo "$WS/fifo"
	echo secret-of-bob > "$TEST_ROOT/outside"
	ln -s "$TEST_ROOT/outside" "$WS/out-link"
	if is_root; then chown -h "$(sandbox_uid)" "$WS"/*-link "$WS/fifo"; fi
	n=0
	{
	for p in ../../../etc/passwd /etc/passwd 'a/../../x' './../x' '' 'a//b' \
	    /workspace/agents/other/x etc-link/passwd root-link/etc/passwd \
	    out-link; do
		for t in file_read file_list file_write file_edit; do
			n=$((n + 1))
			case $t in
			file_write) a=$(jq -cn --arg p "$p" '{path:$p,content:"pwned"}') ;;
			file_edit) a=$(jq -cn --arg p "$p" '{path:$p,old:"root",new:"pwned"}') ;;
			*) a=$(jq -cn --arg p "$p" '{path:$p}') ;;
			esac
			printf '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}\n' "$n" "$t" "$a"
		done
		n=$((n + 1))
		printf '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"file_search","arguments":%s}}\n' \
		    "$n" "$(jq -cn --arg p "$p" '{pattern:"root",path:$p}')"
	done
	printf '{"jsonrpc":"2.0","id":1000,"method":"tools/call","params":{"name":"file_read","arguments":{"path":"fifo"}}}\n'
	} > "$TEST_ROOT/calls"
	mcp_raw "$((n + 2))" --max-runs 64 --max-per-minute 0 < "$TEST_ROOT/calls"
	# Every call is a tool error (an empty path is refused by the schema
	# or by sbx file), but a search that follows no link out of the home
	# and finds nothing; none answered with a file's content.
	printf '%s' "$output" | jq -c 'select(.id != 0 and .id != null) | select(.result.isError != true) | [.id, .result.structuredContent.result.count]'
	[ "$(printf '%s' "$output" | jq -s '[.[] | select(.id != 0 and .id != null) | select(.result.isError != true) | select(.result.structuredContent.result.count != 0)] | length')" = 0 ]
	[ "$(reply 1000 | jq -r .result.structuredContent.kind)" = invalid_args ]
	[ "$(printf '%s' "$output" | jq -s '[.[] | select(.id != 0) | .result.structuredContent.kind] | unique | join(",")')" != '""' ]
	[[ "$output" != *"root:x:0:0"* ]]
	[[ "$output" != *secret-of-bob* ]]
	[ "$(cat "$TEST_ROOT/outside")" = secret-of-bob ]
	grep -q '^root:' /etc/passwd
	! grep -rq pwned "$WS" "$TEST_ROOT/outside" /etc/passwd
}
