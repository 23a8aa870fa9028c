#!/usr/bin/env bats
# sbx-proxy: a parent proxy (issue 20): proxy.upstream, credentials from a
# host-side file, the policy applied first, upstream failures as 502
# upstream_*.  The parent is a small CONNECT-capable server on the host's
# 127.0.0.1 that logs what it got (proxy.bash: start_upstream) and sends
# every name to 127.0.0.1.
# sbx-test: unprivileged

load lib
load proxy
bats_require_minimum_version 1.5.0

# upstream_world [MODE] [PROXYJSON]: servers, a parent in MODE, its
# credentials in config/up.auth, the proxy pointed at it.
upstream_world() {
	need_proxy_tools
	start_tls_server
	start_canary
	start_upstream "${1:-ok}"
	mkdir -p "$SBX_HOME/config"
	(umask 077 && printf 'corp:pa55word\n' > "$SBX_HOME/config/up.auth")
	write_sandbox_config "$(jq -n --arg u "http://127.0.0.1:$UPSTREAM_PORT" \
	    --argjson x "${2:-"{}"}" \
	    '{upstream: $u, upstream_auth_file: "up.auth"} + $x')"
	write_agent_config alice
	agent_ready alice
}

# The Basic credentials the parent must see.
CORP_AUTH="Basic $(printf 'corp:pa55word' | base64 -w0)"

@test "upstream: CONNECT goes through the parent with its credentials; the sandbox never sees them" {
	upstream_world
	run pcurl alice "https://allowed.sbx.test:$TLS_PORT/index.txt"
	echo "$output"
	[ "$output" = hello-over-tls ]
	cat "$UPSTREAM_LOG"
	[ "$(upstream_lines)" -eq 1 ]
	[ "$(jq -r '[.method, .target, .auth] | join(" ")' "$UPSTREAM_LOG")" = \
	    "CONNECT allowed.sbx.test:$TLS_PORT $CORP_AUTH" ]
	# The agent's own token never goes up.
	! grep -q "$(proxy_token alice)" "$UPSTREAM_LOG"
	# Nothing of the credentials inside: not in the environment, and the
	# file is not there to read.
	run pexec alice sh -c 'env; cat /proc/self/environ; ls -la "$HOME"/..'
	[[ "$output" != *pa55word* ]]
	[[ "$output" != *"$(printf 'corp:pa55word' | base64 -w0)"* ]]
	run pexec alice cat "$SBX_HOME/config/up.auth"
	[ "$status" -ne 0 ]
	# The log says it went up.
	grep -q '"host":"allowed.sbx.test"' "$PLOG"
}

@test "upstream: plain HTTP goes up in absolute form with the credentials; the origin gets no Proxy-*" {
	upstream_world
	run pcurl alice "http://allowed.sbx.test:$CANARY_PORT/p?q=1"
	echo "$output"
	[ "$output" = canary ]
	cat "$UPSTREAM_LOG"
	[ "$(jq -r '[.method, .target, .auth] | join(" ")' "$UPSTREAM_LOG")" = \
	    "GET http://allowed.sbx.test:$CANARY_PORT/p?q=1 $CORP_AUTH" ]
	req=$(canary_data 1 | tr -d '\r')
	echo "origin saw: $req"
	[[ "$req" == "GET /p?q=1 HTTP/1.1"$'\n'* ]]
	! grep -qi '^proxy-' <<<"$req"
}

@test "upstream: the policy is applied first: denied names, ports and IP literals never reach the parent" {
	upstream_world
	run raw_requests alice \
	    evil="$(connect_req "evil.sbx.test:443")" \
	    denied="$(connect_req "blocked.wild.sbx.test:443")" \
	    port="$(connect_req "allowed.sbx.test:25")" \
	    literal="$(connect_req "127.0.0.1:$CANARY_PORT")" \
	    get="$(get_req "http://evil.sbx.test/" "evil.sbx.test")"
	echo "$output"
	expect evil 403 not_allowlisted
	expect denied 403 denied_domain
	expect port 403 port_not_allowed
	expect literal 403 ip_literal
	expect get 403 not_allowlisted
	[ "$(upstream_lines)" -eq 0 ]
	# A tunnel through the parent is still judged: a ClientHello for
	# another name is refused before a byte goes up the tunnel.
	run pc alice --wait=1 tunnel "allowed.sbx.test:$TLS_PORT" sni evil.sbx.test
	echo "$output"
	grep -q '"reason":"sni_mismatch"' "$PLOG"
}

@test "upstream hostile: garbage, 407, a parent that hangs, one that is not there: 502 upstream_*" {
	need_proxy_tools
	for mode in garbage 407; do
		upstream_world "$mode"
		run raw_requests alice c="$(connect_req "allowed.sbx.test:$TLS_PORT")" \
		    g="$(get_req "http://allowed.sbx.test:$CANARY_PORT/" "allowed.sbx.test:$CANARY_PORT")"
		echo "$mode: $output"
		case $mode in
		garbage) expect c 502 upstream_bad_response ;;
		407) expect c 502 upstream_auth_required ;;
		esac
		# Plain HTTP: the parent's answer is relayed as it is, or
		# refused when it is no answer at all.
		[ -n "$(jf g .status)" ] || [ "$(jf g .closed)" = true ]
		timeout 10 "$SBX" proxy stop >/dev/null 2>&1 || true
		for p in "${SERVER_PIDS[@]}"; do kill "$p" 2>/dev/null; done
		SERVER_PIDS=()
		rm -f "$UPSTREAM_LOG"
	done
	# Hangs: bounded by connect_timeout_ms.
	upstream_world hang '{"connect_timeout_ms": 800}'
	run raw_requests alice c="$(connect_req "allowed.sbx.test:$TLS_PORT")"
	echo "hang: $output"
	expect c 502 upstream_timeout
	[ "$(upstream_lines)" -eq 1 ]
	timeout 10 "$SBX" proxy stop >/dev/null 2>&1 || true
	# Not there.
	port=$(free_port)
	write_sandbox_config "{\"upstream\": \"http://127.0.0.1:$port\"}"
	run raw_requests alice c="$(connect_req "allowed.sbx.test:$TLS_PORT")"
	echo "absent: $output"
	expect c 502 upstream_unreachable
	# None of these is a violation of the run (a failure, not a denial).
	run sbx exec --json --network proxy --agent alice -- \
	    "$PY" /workspace/agents/alice/pc.py raw /dev/null
	[ "$(jc "$output" '.result.violations // [] | length')" = 0 ]
}

@test "upstream hostile: a 200 followed by garbage reaches only that client; the proxy serves the next one" {
	upstream_world 200garbage
	run pc alice --wait=1 tunnel "allowed.sbx.test:$TLS_PORT" sni allowed.sbx.test
	echo "$output"
	[ "$(jq -r .status <<<"$output")" = 200 ]
	pid=$(proxy_pid)
	proxy_alive "$pid"
	run "$SBX" proxy status --json
	[ "$status" -eq 0 ]
}

@test "upstream settings: credentials in the URL, other schemes, a path, a loose credentials file: refused" {
	need_proxy_tools
	mkdir -p "$SBX_HOME/config"
	for u in "http://u:p@127.0.0.1:3128" "https://127.0.0.1:3128" \
	    "socks5://127.0.0.1:1080" "http://127.0.0.1:3128/path" \
	    "http://127.0.0.1" "http://127.0.0.1:0"; do
		write_sandbox_config "{\"upstream\": \"$u\"}"
		run sbx proxy check --json allowed.sbx.test
		echo "$u: $output"
		[ "$status" -eq 78 ] || [ "$status" -eq 65 ]
		[ "$(json_get "$output" .reason)" = config_invalid ]
	done
	write_sandbox_config
	run sbx config set --global proxy.upstream "http://u:p@h:1" --json
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *upstream_auth_file* ]]
	printf 'corp:pw\n' > "$SBX_HOME/config/up.auth"
	chmod 0644 "$SBX_HOME/config/up.auth"
	write_sandbox_config '{"upstream": "http://127.0.0.1:3128", "upstream_auth_file": "up.auth"}'
	run sbx proxy check --json allowed.sbx.test
	echo "$output"
	[ "$(json_get "$output" .reason)" = auth_file_mode ]
	write_sandbox_config '{"upstream": "http://127.0.0.1:3128", "upstream_auth_file": "../up.auth"}'
	run sbx proxy check --json allowed.sbx.test
	[ "$(json_get "$output" .reason)" = config_invalid ]
}
