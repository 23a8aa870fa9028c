#!/usr/bin/env bats
# sbx exec --request FILE|- and --envelope-fd N: composition over pipes
# (DESIGN.md §2): a server hands sbx exec one request envelope and reads
# one result envelope back, while the command's output streams through.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

# bad_request STDIN-TEXT [REASON]: refused before anything runs: one
# invalid_args envelope (reason REASON when given), exit 65.
bad_request() {
	run -65 sbx exec --json --request - <<<"$1"
	echo "$1 => $output"
	[ "$(printf '%s\n' "$output" | wc -l)" -eq 1 ]
	[ "$(json_get "$output" .ok)" = false ]
	[ "$(json_get "$output" .kind)" = invalid_args ]
	[ "$(json_get "$output" .retryable)" = false ]
	if [ -n "${2:-}" ]; then
		[ "$(json_get "$output" .reason)" = "$2" ]
	fi
	[ ! -e "$SBX_HOME/workspace/agents/default/marker" ]
}

@test "--request -: a request envelope on stdin runs its command" {
	run sbx exec --json --request - <<'EOF2'
{"command":["sh","-c","echo \"$FOO\"; pwd; exit 3"],"env":["FOO=bar"],"cwd":"sub","network":"none"}
EOF2
	# The cwd does not exist yet: refused as the option would be.
	status_is_kind
	[ "$(json_get "$output" .field)" = cwd ]
	mkdir -p "$SBX_HOME/workspace/agents/default/sub"
	if is_root; then chown "$(sandbox_uid)" "$SBX_HOME/workspace/agents/default/sub"; fi
	run sbx exec --json --request - <<'EOF2'
{"command":["sh","-c","echo \"$FOO\"; pwd; exit 3"],"env":["FOO=bar"],"cwd":"sub","network":"none"}
EOF2
	[ "$status" -eq 3 ]
	[ "$(json_get "$output" .ok)" = true ]
	[ "$(json_get "$output" .result.exit_code)" = 3 ]
	[ "$(json_get "$output" .result.stdout)" = $'bar\n/workspace/agents/default/sub' ]
}

@test "--request FILE: a shell string with its \$0 and arguments, transparent" {
	f="$BATS_TEST_TMPDIR/req.json"
	printf '%s\n' '{"shell":"printf \"%s|\" \"$0\" \"$@\"","args":["me","a b","c"],"timeout":30}' >"$f"
	run sbx exec -q --request "$f"
	[ "$status" -eq 0 ]
	[ "$output" = "me|a b|c|" ]
	# A missing file is bad input too.
	run -65 sbx exec --json --request "$BATS_TEST_TMPDIR/none.json"
	[ "$(json_get "$output" .field)" = request ]
}

@test "--request: bad JSON, duplicate keys, unknown keys, wrong types, oversized: invalid_args, exit 65" {
	bad_request '{"command":["touch","/workspace/agents/default/marker"]'
	[ "$(json_get "$output" .field)" = request ]
	bad_request 'not json'
	bad_request ''
	bad_request '{"command":["true"],"command":["touch","/workspace/agents/default/marker"]}'
	bad_request '{"command":["touch","/workspace/agents/default/marker"],"bogus":1}' unknown_key
	bad_request '{"command":["touch","/workspace/agents/default/marker"],"home":"/tmp"}' unknown_key
	bad_request '{"command":"touch /workspace/agents/default/marker"}' wrong_type
	bad_request '{"command":["touch","/workspace/agents/default/marker"],"stdin":"inherit"}' stdin_consumed
	# Larger than the cap (4 MiB): refused without being parsed.
	SBX="$SBX" run -65 bash -c 'head -c 5000000 /dev/zero | tr "\0" " " |
	    "$SBX" exec --json --request -'
	[ "$(json_get "$output" .field)" = request ]
	[ "$(json_get "$output" .kind)" = invalid_args ]
	[ ! -e "$SBX_HOME/workspace/agents/default/marker" ]
}

@test "--request with run options or a command: a usage error" {
	run -64 sbx exec --json --request - --network none <<<'{"command":["true"]}'
	[ "$(printf '%s\n' "$output" | head -1 | jq -r .reason)" = request_with_options ]
	# Every option with a request key (lib/exec/execreq.c's table), --ask
	# too: beside --request it was dropped without a word.
	run -64 sbx exec --json --request - --ask <<<'{"command":["true"]}'
	[ "$(printf '%s\n' "$output" | head -1 | jq -r .reason)" = request_with_options ]
	run -64 sbx exec --request - -- true <<<'{"command":["true"]}'
	[[ "$output" == *usage:* ]]
}

@test "--envelope-fd: output streams through byte for byte; fd N gets exactly one envelope" {
	out="$BATS_TEST_TMPDIR/out" err="$BATS_TEST_TMPDIR/err" env="$BATS_TEST_TMPDIR/env"
	status=0
	"$SBX" exec --envelope-fd 3 -- sh -c \
	    'printf "a\0b\001\n"; printf "line1\nno newline" >&2; exit 7' \
	    >"$out" 2>"$err" 3>"$env" || status=$?
	[ "$status" -eq 7 ]
	sh -c 'printf "a\0b\001\n"' >"$BATS_TEST_TMPDIR/want"
	cmp "$out" "$BATS_TEST_TMPDIR/want"
	[ "$(cat "$err")" = $'line1\nno newline' ]
	[ "$(wc -l <"$env")" -eq 1 ]
	[ "$(jq -r .ok "$env")" = true ]
	[ "$(jq -r .result.exit_code "$env")" = 7 ]
	[ "$(jq -r '.result | has("stdout")' "$env")" = false ]
	# A command that is not there: said on stderr, and the envelope.
	run -127 sbx exec --envelope-fd 3 -- no-such-command-here 3>"$env"
	[ "$(wc -l <"$env")" -eq 1 ]
	[ "$(jq -r .reason "$env")" = command_not_found ]
	[[ "$output" == *"command not found"* ]]
}

@test "--envelope-fd: with a request from stdin; the sandbox does not inherit fd N" {
	env="$BATS_TEST_TMPDIR/env"
	run sbx exec --request - --envelope-fd 5 5>"$env" <<'EOF2'
{"command":["sh","-c","echo streamed; ls /proc/self/fd"]}
EOF2
	[ "$status" -eq 0 ]
	[[ "$output" == streamed* ]]
	[ "$(wc -l <"$env")" -eq 1 ]
	[ "$(jq -r .result.exit_code "$env")" = 0 ]
	[[ " $(printf '%s\n' "$output" | tail -n +2 | tr '\n' ' ') " != *" 5 "* ]]
}

@test "--envelope-fd with --background: the job's supervisor does not hold fd N" {
	# Read to the end of the pipe: that comes when sbx exec returns, not
	# when the job ends.
	env=$(timeout 20 "$SBX" exec -q --background --envelope-fd 3 -- \
	    sleep 30 3>&1 >/dev/null)
	[ "$(printf '%s\n' "$env" | wc -l)" -eq 1 ]
	job=$(json_get "$env" .result.job)
	[ -n "$job" ] && [ "$job" != null ]
	run sbx exec kill --force "$job"
	[ "$status" -eq 0 ]
}

@test "--envelope-fd: a closed or low descriptor, or with --json, is a usage error" {
	run -64 sbx exec --envelope-fd 9 -- true
	run -64 sbx exec --envelope-fd 1 -- true
	run -64 sbx exec --envelope-fd x -- true
	run -64 sbx exec --json --envelope-fd 3 -- true 3>/dev/null
	[ "$(printf '%s\n' "$output" | head -1 | jq -r .reason)" = envelope_fd_with_json ]
}
