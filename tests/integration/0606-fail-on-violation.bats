#!/usr/bin/env bats
# --fail-on-violation (issue 28, item 8): a plain-HTTP request the proxy
# denied (curl saw the proxy's 403 and exited 0), or a write the file-system
# guard refused, makes the run a `rejected` envelope with the violations
# listed and a non-zero status, for agents that judge by status; without
# it, the run is what it was (violations only in the envelope).  The
# option, the request key, the agent's fail_on_violation setting and MCP's
# shell_run argument all reach it.  Only loopback: the denied name is one
# the proxy refuses before any lookup (proxy.bash).
# sbx-test: unprivileged

load lib
load proxy
bats_require_minimum_version 1.5.0

# D: curl prints the status it saw, and exits 0 on a 403 (no -f).
world() {
	proxy_world
	D=("$CURL" -s -m 10 -o /dev/null -w 'curl saw %{http_code}\n'
	    "http://evil.sbx.test:$CANARY_PORT/")
	DJ=$(printf '%s\n' "${D[@]}" | jq -R . | jq -sc .)
}

@test "without the option: a denied plain-HTTP request exits 0, ok:true (the case the option is for)" {
	world
	run --separate-stderr sbx exec --network proxy --agent alice -- "${D[@]}"
	echo "$output / $stderr"
	[ "$status" -eq 0 ]
	[ "$output" = "curl saw 403" ]
	run sbx exec --json --network proxy --agent alice -- "${D[@]}"
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .ok)" = true ]
	[ "$(json_get "$output" '.result.violations[0].reason')" = not_allowlisted ]
}

@test "--fail-on-violation: the output streams, then exit 77; --json: rejected with the violations" {
	world
	run --separate-stderr sbx exec --fail-on-violation --network proxy \
	    --agent alice -- "${D[@]}"
	echo "stdout: $output"
	echo "stderr: $stderr"
	[ "$status" -eq 77 ]
	# The command's output went through as it ran.
	[ "$output" = "curl saw 403" ]
	[[ "$stderr" == *"sbx: proxy denied 1 request: evil.sbx.test:$CANARY_PORT (not_allowlisted)"* ]]
	[[ "$stderr" == *"refused 1 network request"*"--fail-on-violation"* ]]
	run sbx exec --json --fail-on-violation --network proxy --agent alice -- "${D[@]}"
	echo "$output"
	[ "$status" -eq 77 ]
	[ "$(json_get "$output" .ok)" = false ]
	[ "$(json_get "$output" .kind)" = rejected ]
	[ "$(json_get "$output" .reason)" = violation ]
	[ "$(json_get "$output" .retryable)" = false ]
	[ "$(jc "$output" '[.violations[] | [.type, .host, .reason]]')" = \
	    '[["network","evil.sbx.test","not_allowlisted"]]' ]
	# The run's result is still there: its status and output.
	[ "$(json_get "$output" .result.exit_code)" = 0 ]
	[ "$(json_get "$output" .result.stdout)" = "curl saw 403" ]
	# A clean run stays ok and 0.
	run sbx exec --json --fail-on-violation --network proxy --agent alice -- true
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .ok)" = true ]
}

@test "--fail-on-violation: a command that failed keeps its own status" {
	world
	run sbx exec --fail-on-violation --network proxy --agent alice -c \
	    "\"\$@\" >/dev/null; exit 3" sh "${D[@]}"
	[ "$status" -eq 3 ]
	run sbx exec --json --fail-on-violation --network proxy --agent alice -c \
	    "\"\$@\" >/dev/null; exit 3" sh "${D[@]}"
	[ "$status" -eq 3 ]
	[ "$(json_get "$output" .kind)" = rejected ]
	[ "$(json_get "$output" .result.exit_code)" = 3 ]
}

@test "the request key, the agent's setting and MCP's shell_run reach it; a bad setting is refused" {
	world
	# sbx exec --request: fail_on_violation.
	run sbx exec --json --request - <<EOF
{"agent":"alice","network":"proxy","fail_on_violation":true,
 "command":$DJ}
EOF
	echo "$output"
	[ "$status" -eq 77 ]
	[ "$(json_get "$output" .kind)" = rejected ]
	run sbx exec --json --request - <<<'{"agent":"alice","fail_on_violation":"yes","command":["true"]}'
	[ "$status" -eq 65 ]
	[ "$(json_get "$output" .field)" = fail_on_violation ]
	# The agent's setting: every foreground run of the agent.
	run sbx config set fail_on_violation true --agent alice
	[ "$status" -eq 0 ]
	run --separate-stderr sbx exec --network proxy --agent alice -- "${D[@]}"
	[ "$status" -eq 77 ]
	[ "$output" = "curl saw 403" ]
	# MCP: a tool error the model reads, with the run's output.
	sbx config set fail_on_violation false --agent alice
	args=$(jq -cn --argjson a "$DJ" \
	    '{argv: $a, network: "proxy", fail_on_violation: true}')
	out=$(printf '%s\n' \
	    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}' \
	    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"shell_run\",\"arguments\":$args}}" |
	    timeout 60 "$SBX" mcp --agent alice)
	echo "$out"
	r=$(printf '%s\n' "$out" | jq -c 'select(.id == 2)')
	[ "$(jq -r .result.isError <<<"$r")" = true ]
	[ "$(jq -r .result.structuredContent.kind <<<"$r")" = rejected ]
	[ "$(jq -r .result.structuredContent.reason <<<"$r")" = violation ]
	[[ "$(jq -r '.result.content[0].text' <<<"$r")" == *"curl saw 403"* ]]
	[[ "$(jq -r '.result.content[0].text' <<<"$r")" != *"sbx-exec:"*"sbx-exec:"* ]]
	# A setting that is no boolean: refused by sbx config, and when
	# edited by hand, it stops the run.
	run -65 sbx config set fail_on_violation yes --agent alice
	jq '.fail_on_violation = "yes"' "$SBX_HOME/config/agents/alice.json" > "$TEST_ROOT/a.json"
	cp "$TEST_ROOT/a.json" "$SBX_HOME/config/agents/alice.json"
	run sbx exec --json --agent alice -- true
	[ "$(json_get "$output" .reason)" = config_invalid ]
}

@test "a file-system violation (a protected path of the workdir) fails the run too" {
	W=$TEST_ROOT/w
	mkdir -p "$W/.git/hooks"
	if is_root; then chown -R "$(sandbox_uid)" "$W"; fi
	run sbx exec --fail-on-violation --workdir "$W" -c \
	    'echo x >.git/hooks/pre-commit 2>/dev/null; echo ran'
	echo "$output"
	[ "$status" -eq 77 ]
	[[ "$output" == *ran* ]]
	[ ! -e "$W/.git/hooks/pre-commit" ]
	run sbx exec --json --fail-on-violation --workdir "$W" -c \
	    'echo x >.envrc 2>/dev/null; true'
	[ "$(json_get "$output" .kind)" = rejected ]
	[ "$(jc "$output" '[.violations[] | [.type, .reason]]')" = '[["filesystem","protected_path"]]' ]
	[ ! -e "$W/.envrc" ]
}

@test "with --background: a usage error (a job's record keeps no violations); the setting leaves jobs alone" {
	sbx provision -q
	run -64 sbx exec --fail-on-violation --background -- true
	run -64 sbx exec --json --fail-on-violation --background -- true
	[ "$(json_get "$output" .reason)" = fail_on_violation_with_background ]
	sbx config set fail_on_violation true --agent default
	run -0 sbx exec --background -- true
}
