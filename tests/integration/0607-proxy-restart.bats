#!/usr/bin/env bats
# sbx-proxy killed during a run (issue 30): sbx exec holds the session and
# relays sbx-init's connections, so it starts the proxy again and re-opens
# the same session; the sandbox's next request works, filtered as before,
# and the envelope says what happened.  A proxy that cannot be started
# again: the next request fails cleanly (never unfiltered), with a warning.
# Only loopback servers (see proxy.bash).
# sbx-test: unprivileged

load lib
load proxy
bats_require_minimum_version 1.5.0

# setup_file, setup and teardown: proxy.bash's.

# run_waiting: an sbx exec --json in the background whose sandbox makes
# one request, says ready, waits for go, then runs AFTER (shell text).
run_waiting() {
	local after=$1 url="https://allowed.sbx.test:$TLS_PORT/index.txt"
	"$SBX" exec --json --network proxy --agent alice -- sh -c '
		c="'"$CURL"' -sS -m 10 --cacert /workspace/agents/alice/ca.pem"
		$c "'"$url"'" || exit 9
		touch /workspace/agents/alice/ready
		while [ ! -e /workspace/agents/alice/go ]; do sleep 0.05; done
		'"$after" >"$TEST_ROOT/out" 2>"$TEST_ROOT/err" 3>&- &
	EPID=$!
	BG_PIDS+=("$EPID")
	for i in $(seq 600); do
		[ -e "$AH/ready" ] && break
		kill -0 "$EPID" 2>/dev/null || break
		sleep 0.1
	done
	[ -e "$AH/ready" ]
}

kill_proxy() {
	OLD=$(proxy_pid)
	[ -n "$OLD" ]
	kill -9 "$OLD"
	for i in $(seq 100); do
		kill -0 "$OLD" 2>/dev/null || break
		sleep 0.05
	done
}

@test "the proxy killed mid-run: restarted, the same session, the next request works, a warning" {
	proxy_world
	run_waiting '$c "https://allowed.sbx.test:'"$TLS_PORT"'/index.txt"; echo "rc=$?"
		$c -s -o /dev/null -w "%{http_connect}\n" \
		    "https://evil.sbx.test:'"$TLS_PORT"'/"; echo "rc2=$?"'
	kill_proxy
	touch "$AH/go"
	wait "$EPID" || true
	cat "$TEST_ROOT/out" "$TEST_ROOT/err"
	env=$(cat "$TEST_ROOT/out")
	[ "$(json_get "$env" .ok)" = true ]
	out=$(json_get "$env" .result.stdout)
	[[ "$out" == *hello-over-tls*rc=0* ]]
	# Still filtered: the agent's allowlist came with the session.
	[[ "$out" == *403*rc2=* ]]
	json_get "$env" '.warnings[]' |
	    grep -q 'sbx-proxy died during the run and was restarted'
	# The denial after the restart is the run's, for the new session.
	[ "$(jc "$env" '[.result.violations[] | .host]')" = '["evil.sbx.test"]' ]
	# A new proxy serves this root, and logs the request as alice's.
	new=$(proxy_pid)
	[ -n "$new" ] && [ "$new" != "$OLD" ]
	proxy_alive "$new"
	wait_plog 3
	[ "$(jq -r 'select(.host == "allowed.sbx.test") | .agent' "$PLOG" |
	    sort -u)" = alice ]
}

@test "the proxy killed mid-run and not restartable: the next request fails cleanly, a warning" {
	proxy_world
	run_waiting '$c "https://allowed.sbx.test:'"$TLS_PORT"'/index.txt"; echo "rc=$?"'
	# The next proxy cannot start: its socket's place is a directory
	# (the running one keeps listening on the socket it has).
	mv "$SBX_HOME/run/proxy.sock" "$SBX_HOME/run/proxy.sock.old"
	mkdir "$SBX_HOME/run/proxy.sock"
	kill_proxy
	touch "$AH/go"
	wait "$EPID" || true
	rmdir "$SBX_HOME/run/proxy.sock"
	rm -f "$SBX_HOME/run/proxy.sock.old"
	cat "$TEST_ROOT/out" "$TEST_ROOT/err"
	env=$(cat "$TEST_ROOT/out")
	out=$(json_get "$env" .result.stdout)
	# The request before the kill only.
	[ "$(grep -c hello-over-tls <<<"$out")" -eq 1 ]
	[[ "$out" == *rc=* ]]
	[[ "$out" != *rc=0* ]]
	json_get "$env" '.warnings[]' |
	    grep -q 'sbx-proxy died during the run and could not be restarted'
	[ "$(canary_hits)" -eq 0 ]
}

@test "a background job: the proxy killed mid-run is restarted; poll and wait carry the warning" {
	proxy_world
	url="https://allowed.sbx.test:$TLS_PORT/index.txt"
	run sbx exec --json --background --network proxy --agent alice -- sh -c '
		c="'"$CURL"' -sS -m 10 --cacert /workspace/agents/alice/ca.pem"
		$c "'"$url"'" || exit 9
		touch /workspace/agents/alice/ready
		while [ ! -e /workspace/agents/alice/go ]; do sleep 0.05; done
		$c "'"$url"'"; echo "rc=$?"'
	echo "$output"
	[ "$status" -eq 0 ]
	JOB=$(json_get "$output" .result.job)
	for i in $(seq 600); do
		[ -e "$AH/ready" ] && break
		sleep 0.1
	done
	[ -e "$AH/ready" ]
	kill_proxy
	touch "$AH/go"
	run sbx exec wait --agent alice --json "$JOB" --timeout 120
	echo "$output"
	[ "$(json_get "$output" .result.state)" = exited ]
	[ "$(json_get "$output" .result.exit_code)" = 0 ]
	[[ "$(json_get "$output" .result.log_tail)" == *hello-over-tls*rc=0* ]]
	json_get "$output" '.result.warnings[]' |
	    grep -q 'sbx-proxy died during the run and was restarted'
	run sbx exec poll --agent alice --json "$JOB"
	json_get "$output" '.result.warnings[]' |
	    grep -q 'sbx-proxy died during the run and was restarted'
}

@test "sbx proxy stop mid-run is not a crash: no restart, the next request fails, a warning" {
	proxy_world
	run_waiting '$c "https://allowed.sbx.test:'"$TLS_PORT"'/index.txt"; echo "rc=$?"'
	OLD=$(proxy_pid)
	run sbx proxy stop
	[ "$status" -eq 0 ]
	touch "$AH/go"
	wait "$EPID" || true
	cat "$TEST_ROOT/out" "$TEST_ROOT/err"
	env=$(cat "$TEST_ROOT/out")
	out=$(json_get "$env" .result.stdout)
	[ "$(grep -c hello-over-tls <<<"$out")" -eq 1 ]
	[[ "$out" == *rc=* ]]
	[[ "$out" != *rc=0* ]]
	json_get "$env" '.warnings[]' |
	    grep -q 'sbx-proxy was stopped (sbx proxy stop) during the run'
	! json_get "$env" '.warnings[]' | grep -q 'restarted'
	# Nothing started it again.
	[ -z "$(proxy_pid)" ] || ! proxy_alive "$(proxy_pid)"
}

@test "a proxy that keeps dying is restarted at most 8 times a run, then connections are closed" {
	proxy_world
	url="https://allowed.sbx.test:$TLS_PORT/index.txt"
	"$SBX" exec --json --network proxy --agent alice -- sh -c '
		c="'"$CURL"' -sS -m 10 --cacert /workspace/agents/alice/ca.pem"
		for i in 1 2 3 4 5 6 7 8 9 10; do
			$c "'"$url"'" >/dev/null 2>&1; echo "rc$i=$?"
			touch /workspace/agents/alice/ready$i
			while [ ! -e /workspace/agents/alice/go$i ]; do
				sleep 0.05
			done
		done' >"$TEST_ROOT/out" 2>"$TEST_ROOT/err" 3>&- &
	EPID=$!
	BG_PIDS+=("$EPID")
	for n in 1 2 3 4 5 6 7 8 9 10; do
		for i in $(seq 600); do
			[ -e "$AH/ready$n" ] && break
			kill -0 "$EPID" 2>/dev/null || break
			sleep 0.1
		done
		[ -e "$AH/ready$n" ]
		if [ "$n" -le 9 ]; then
			kill_proxy
			# The restart (or not) happens at once, on the end of
			# the session: wait for it before the next request.
			for i in $(seq 100); do
				p=$(proxy_pid)
				[ -n "$p" ] && [ "$p" != "$OLD" ] && proxy_alive "$p" &&
				    break
				[ "$n" -eq 9 ] && break
				sleep 0.1
			done
		fi
		touch "$AH/go$n"
	done
	wait "$EPID" || true
	cat "$TEST_ROOT/out" "$TEST_ROOT/err"
	env=$(cat "$TEST_ROOT/out")
	out=$(json_get "$env" .result.stdout)
	# Requests 1 to 9 went through (8 restarts), the 10th did not.
	for n in 1 2 3 4 5 6 7 8 9; do
		[[ "$out" == *"rc$n=0"* ]]
	done
	[[ "$out" != *"rc10=0"* ]]
	[ "$(json_get "$env" '.warnings[]' | grep -c 'was restarted')" -eq 8 ]
	json_get "$env" '.warnings[]' | grep -q 'was not restarted (at most 8'
}

@test "--fail-on-violation: a run whose proxy was restarted is not called clean (its earlier denials are lost)" {
	proxy_world
	url="https://allowed.sbx.test:$TLS_PORT/index.txt"
	"$SBX" exec --json --fail-on-violation --network proxy --agent alice -- sh -c '
		c="'"$CURL"' -sS -m 10 --cacert /workspace/agents/alice/ca.pem"
		$c -s -o /dev/null "https://evil.sbx.test:'"$TLS_PORT"'/"
		touch /workspace/agents/alice/ready
		while [ ! -e /workspace/agents/alice/go ]; do sleep 0.05; done
		$c "'"$url"'"' >"$TEST_ROOT/out" 2>"$TEST_ROOT/err" 3>&- &
	EPID=$!
	BG_PIDS+=("$EPID")
	for i in $(seq 600); do
		[ -e "$AH/ready" ] && break
		kill -0 "$EPID" 2>/dev/null || break
		sleep 0.1
	done
	[ -e "$AH/ready" ]
	kill_proxy
	touch "$AH/go"
	rc=0
	wait "$EPID" || rc=$?
	cat "$TEST_ROOT/out" "$TEST_ROOT/err"
	env=$(cat "$TEST_ROOT/out")
	[ "$rc" -eq 77 ]
	[ "$(json_get "$env" .ok)" = false ]
	[ "$(json_get "$env" .reason)" = violations_unknown ]
	[[ "$(json_get "$env" .result.stdout)" == *hello-over-tls* ]]
}
