#!/usr/bin/env bats
# sbx exec with secrets (issue 14): injected through the sealed env memfd,
# never in argv or environ of sbx, bwrap or sbx-init; scrubbed from the
# transparent streams, the --json envelope, job logs and poll/wait tails,
# messages; split, slow, interleaved and encoded output; --secret and
# --no-secrets; a missing secret is invalid_args with the fixing command.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	sbx_setup
	VAL="sekrit-$$-$RANDOM-value"
	printf '%s' "$VAL" | "$SBX" secret set API_TOKEN -q
	printf 'abcdef' | "$SBX" secret set INNER -q
	printf 'abcdefgh' | "$SBX" secret set OUTER -q
	printf '.*[a]+$\\1(x)\nline2' | "$SBX" secret set META -q
}

teardown() {
	"$SBX" exec kill "${JOB:-0000000000000000}" --force >/dev/null 2>&1
	"$SBX" proxy stop >/dev/null 2>&1
	sbx_teardown
}

@test "the command gets its secrets as variables; the transparent output is scrubbed" {
	run --separate-stderr sbx exec -- sh -c 'echo "out $API_TOKEN"; echo "err $API_TOKEN" >&2; [ "$INNER" = abcdef ]'
	[ "$status" -eq 0 ]
	[ "$output" = "out [REDACTED:API_TOKEN]" ]
	[ "$stderr" = "err [REDACTED:API_TOKEN]" ]
}

@test "encoded forms: base64 (std, url, 3 alignments), hex, percent" {
	run sbx exec -- sh -c '
	    printf "%s" "$API_TOKEN" | base64 -w0; echo
	    printf "x%s" "$API_TOKEN" | base64 -w0; echo
	    printf "xy%s" "$API_TOKEN" | base64 -w0 | tr "+/" "-_"; echo
	    printf "%s" "$API_TOKEN" | od -An -tx1 | tr -d " \n"; echo
	    printf "%s" "$API_TOKEN" | od -An -tx1 | tr -d " \n" | tr a-f A-F; echo'
	[ "$status" -eq 0 ]
	[ "$(grep -c 'REDACTED:API_TOKEN' <<<"$output")" -eq 5 ]
	[[ "$output" != *"$VAL"* ]]
}

@test "overlapping and nested values; metacharacters and newlines" {
	run sbx exec -- sh -c 'echo "1 abcdefgh 2 abcdefg 3"; printf "%s\n" "$META"'
	[ "$status" -eq 0 ]
	[ "$(sed -n 1p <<<"$output")" = "1 [REDACTED:OUTER] 2 [REDACTED:INNER]g 3" ]
	[ "$(sed -n 2p <<<"$output")" = "[REDACTED:META]" ]
}

@test "split writes, one byte per write, interleaved stdout and stderr" {
	# Builtins only (one write(2) per printf, no process per byte), so
	# the bytes come well within the 50 ms idle window.
	run --separate-stderr sbx exec -- sh -c '
	    v=$API_TOKEN
	    while [ -n "$v" ]; do
	        r=${v#?}; c=${v%"$r"}
	        printf "%s" "$c"; printf "%s" "$c" >&2
	        v=$r
	    done; echo; echo >&2'
	[ "$status" -eq 0 ]
	[ "$output" = "[REDACTED:API_TOKEN]" ]
	[ "$stderr" = "[REDACTED:API_TOKEN]" ]
}

@test "a prompt without a newline is not held back" {
	# The prompt must reach the reader while the command still waits:
	# it waits for the reader's answer (a file in the workspace), so a
	# prompt held back would time out (20 s), however slow the start.
	run bash -c '"$0" exec -- sh -c "printf \"name? \"; i=0; while [ ! -e answered ] && [ \$i -lt 300 ]; do sleep 0.1; i=\$((i + 1)); done; echo done" | { IFS= read -r -t 20 -n 6 p; printf "[%s]" "$p"; touch "$1/answered"; cat; }' "$SBX" "$WS"
	[ "$output" = "[name? ]done" ]
}

@test "--json: stdout, stderr, the exit message and a failure envelope are scrubbed" {
	run sbx exec --json -- sh -c 'echo "$API_TOKEN"; echo "fatal: bad token $API_TOKEN" >&2; exit 3'
	[ "$status" -eq 3 ]
	[[ "$output" != *"$VAL"* ]]
	[ "$(json_get "$output" .result.stdout)" = "[REDACTED:API_TOKEN]" ]
	[ "$(json_get "$output" .result.stderr)" = "fatal: bad token [REDACTED:API_TOKEN]" ]
	run sbx exec --json --timeout 1 -- sh -c 'echo "$API_TOKEN"; sleep 5'
	[ "$(json_get "$output" .kind)" = timeout ]
	[[ "$output" != *"$VAL"* ]]
	[[ "$output" == *"REDACTED:API_TOKEN"* ]]
}

@test "--secret selects, --no-secrets gives none, a missing one is invalid_args with the fix" {
	run sbx exec --secret INNER -- sh -c 'echo "[${API_TOKEN:-}] [$INNER]"'
	[ "$output" = "[] [[REDACTED:INNER]]" ]
	run sbx exec --no-secrets -- sh -c 'echo "[${API_TOKEN:-}] [${INNER:-}]"'
	[ "$output" = "[] []" ]
	run sbx exec --json --secret NOPE -- touch ran
	[ "$status" -eq 65 ]
	[ "$(json_get "$output" .reason)" = secret_missing ]
	[ "$(json_get "$output" .field)" = secret ]
	[ "$(json_get "$output" .hint)" = "sbx secret set NOPE --agent default" ]
	[ ! -e "$WS/ran" ]
	run sbx exec --json --secret X --no-secrets -- true
	[ "$status" -eq 64 ]
	run sbx exec --json --request - <<<'{"command":["sh","-c","echo ${API_TOKEN:-none} $INNER"],"secrets":["INNER"]}'
	[ "$(json_get "$output" .result.stdout)" = "none [REDACTED:INNER]" ]
	run sbx exec --json --request - <<<'{"command":["sh","-c","echo ${INNER:-none}"],"no_secrets":true}'
	[ "$(json_get "$output" .result.stdout)" = "none" ]
}

@test "background jobs get their secrets; the log and poll/wait tails are scrubbed" {
	JOB=$("$SBX" exec --background -- sh -c 'echo "job $API_TOKEN"; echo "$API_TOKEN" | base64')
	run sbx exec wait "$JOB" --json --timeout 30
	[ "$status" -eq 0 ]
	[[ "$output" != *"$VAL"* ]]
	[[ "$output" == *"job [REDACTED:API_TOKEN]"* ]]
	run sbx exec poll "$JOB" --json
	[[ "$output" != *"$VAL"* ]]
	! grep -rqF "$VAL" "$SBX_HOME/agents/default/jobs"
}

@test "the value is never in /proc/*/cmdline or /proc/*/environ of sbx, bwrap, sbx-init or the proxy" {
	run sbx exec --background -- sh -c 'sleep 3'
	JOB=$output
	sbx exec -- sh -c 'sleep 3' &
	fg=$!
	# Proxy mode: sbx-proxy runs beside the sandbox.
	sbx exec -q --network proxy -- sh -c 'sleep 3' &
	px=$!
	sleep 1.5
	pgrep -f "sbx-proxy serve --home $SBX_HOME" >/dev/null || { echo "no proxy running"; false; }
	found=0 seen=0
	for p in $(pgrep -f 'bin/sbx|sbx-exec|bwrap|sbx-init|/run/sbx/init|sbx-proxy' 2>/dev/null); do
		[ "$p" = $$ ] && continue
		for f in cmdline environ; do
			[ -r "/proc/$p/$f" ] || continue
			if tr '\0' '\n' <"/proc/$p/$f" 2>/dev/null | grep -qF "$VAL"; then
				echo "found in /proc/$p/$f: $(tr '\0' ' ' </proc/$p/cmdline)"
				found=1
			fi
			seen=$((seen + 1))
		done
	done
	wait "$fg"
	wait "$px"
	[ "$seen" -gt 0 ]
	[ "$found" -eq 0 ]
}

@test "an agent without secrets: nothing changes (no filter)" {
	run sbx exec --agent other -- sh -c 'echo "abcdefgh"; env | grep -c -E "^(API_TOKEN|INNER)=" || true'
	[ "$(sed -n 1p <<<"$output")" = abcdefgh ]
	[ "$(sed -n 2p <<<"$output")" = 0 ]
}
