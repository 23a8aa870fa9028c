#!/usr/bin/env bats
# Issue 27 (hostile review) §5, the proxy's half: a secret used as a host
# name comes back lowercased (the proxy normalises names), in the run's
# violations, in the "proxy denied" line and in run/proxy.log.  What the
# proxy reports is scrubbed before it enters an envelope or a log, and the
# scrubber ignores ASCII case.  Each test fails on the tree before the fix.
# The bridge's half is 0853-bridge-identity.bats.
#
# Only loopback is contacted: the secret's host name is never allowlisted
# and is refused before any lookup.
# sbx-test: unprivileged

load lib
load proxy
bats_require_minimum_version 1.5.0

# setup_file, setup and teardown: proxy.bash's.

HOSTY=Sup3rS3cretLabel0853

@test "a secret as a host name: the denied line, the envelope's violations and run/proxy.log are scrubbed in its lowercased form" {
	proxy_world
	printf '%s' "$HOSTY" | sbx secret set HOSTY --agent alice -q
	# The sandbox has the secret in its environment and spells it as a
	# host name (never in our argv: a job's record keeps the command).
	run --separate-stderr sbx exec --network proxy --agent alice -- \
	    sh -c "$CURL -sS -m 10 https://\$HOSTY.sbx.test:$TLS_PORT/"
	echo "stdout: $output"
	echo "stderr: $stderr"
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"sbx: proxy denied 1 request"*"[REDACTED:HOSTY].sbx.test:$TLS_PORT (not_allowlisted)"* ]]
	! grep -qiF "$HOSTY" <<<"$stderr$output"
	run sbx exec --json --network proxy --agent alice -- \
	    sh -c "$CURL -s -m 10 -o /dev/null -w '%{http_connect}' https://\$HOSTY.sbx.test:$TLS_PORT/"
	echo "$output"
	[ "$(json_get "$output" .result.stdout)" = 403 ]
	[ "$(json_get "$output" '.result.violations[0].host')" = "[REDACTED:HOSTY].sbx.test" ]
	! grep -qiF "$HOSTY" <<<"$output"
	wait_plog 2
	cat "$PLOG"
	[ "$(jq -r 'select(.verdict == "deny") | .host' "$PLOG" | sort -u)" = "[REDACTED:HOSTY].sbx.test" ]
	! grep -qiF "$HOSTY" "$PLOG"
	# A background job's record and its poll: the same envelope.
	JOB=$("$SBX" exec --background --network proxy --agent alice -- \
	    sh -c "$CURL -s -m 10 -o /dev/null https://\$HOSTY.sbx.test:$TLS_PORT/")
	run sbx exec wait "$JOB" --json --timeout 30 --agent alice
	echo "$output"
	! grep -qiF "$HOSTY" <<<"$output"
	run sbx exec poll "$JOB" --json --agent alice
	! grep -qiF "$HOSTY" <<<"$output"
	! grep -rqiF "$HOSTY" "$SBX_HOME/agents/alice/jobs"
}

@test "a store the proxy cannot open (sealed with a passphrase): what the sandbox spelled is withheld from run/proxy.log, never written raw" {
	proxy_world
	printf '%s' "$HOSTY" | SBX_SECRET_PASSPHRASE=pass-0603 \
	    sbx secret set HOSTY --agent alice --passphrase -q
	run env SBX_SECRET_PASSPHRASE=pass-0603 "$SBX" exec --json --network proxy \
	    --agent alice -- sh -c "$CURL -s -m 10 -o /dev/null https://\$HOSTY.sbx.test:$TLS_PORT/"
	echo "$output"
	! grep -qiF "$HOSTY" <<<"$output"
	wait_plog 1
	cat "$PLOG"
	! grep -qiF "$HOSTY" "$PLOG"
	[ "$(jq -r 'select(.verdict == "deny") | .host' "$PLOG")" = "[REDACTED:unscrubbed]" ]
	[ "$(jq -r 'select(.verdict == "deny") | .agent' "$PLOG")" = alice ]
}

@test "an agent without secrets: run/proxy.log names the host as before" {
	proxy_world
	run pcurl alice "https://Plain-Name.sbx.test:$TLS_PORT/"
	wait_plog 1
	[ "$(jq -r 'select(.verdict == "deny") | .host' "$PLOG")" = plain-name.sbx.test ]
}
