#!/usr/bin/env bats
# sbx-proxy and sbx exec --network proxy (issue 6; HOSTILE-CASES NP-01,
# NP-04, NP-06, NP-08, NP-10..NP-17, NP-19, NP-22), part 1 of 3: the
# allowed paths, inside the sandbox, denials and the log, DNS, TLS (SNI).
# Part 2 is 0601-proxy-ingress.bats, part 3 0602-proxy-limits.bats: the
# one file took 62-78 s, the critical path of a parallel run (issue 12).
#
# Real curl inside the sandbox, real servers on the host's 127.0.0.1 (an
# openssl s_server with a throwaway CA, a counting "canary", a logging DNS
# stub; see proxy.bash).  Only loopback is ever contacted: test names map
# to 127.0.0.1 through the agent's `resolve` overrides or the DNS stub, and
# every name that is not mapped is one the proxy must refuse before any
# lookup.  Every test has its own state root, hence its own proxy, stopped
# in teardown with every server the test started.
# sbx-test: unprivileged

load lib
load proxy
bats_require_minimum_version 1.5.0

# setup_file, setup and teardown: proxy.bash's.

# --- the allowed paths ------------------------------------------------------

@test "allowed HTTPS through CONNECT: curl inside, a loopback TLS server, the test CA" {
	proxy_world
	run pcurl alice "https://allowed.sbx.test:$TLS_PORT/index.txt"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = hello-over-tls ]
	# A wildcard entry, and a deeper name under it.
	run pcurl alice "https://www.wild.sbx.test:$TLS_PORT/index.txt"
	[ "$status" -eq 0 ]
	[ "$output" = hello-over-tls ]
	# Logged when the connection ends, with its bytes.
	wait_plog 2
	line=$(jq -c 'select(.host == "allowed.sbx.test")' "$PLOG" | head -n 1)
	echo "log: $line"
	[ "$(jq -r .verdict <<<"$line")" = allow ]
	[ "$(jq -r .method <<<"$line")" = CONNECT ]
	[ "$(jq -r .port <<<"$line")" = "$TLS_PORT" ]
	[ "$(jq -r .agent <<<"$line")" = alice ]
	[ "$(jq -r .status <<<"$line")" = 200 ]
	[ "$(jq -r '.bytes_in > 0 and .bytes_out > 0' <<<"$line")" = true ]
	[ "$(jq -r 'has("reason")' <<<"$line")" = false ]
}

@test "allowed plain HTTP: absolute-form rewritten to origin-form, Proxy-* stripped, Connection: close" {
	proxy_world
	run pcurl alice -H 'Proxy-Connection: keep-alive' \
	    "http://allowed.sbx.test:$CANARY_PORT/path?q=1"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = canary ]
	[ "$(canary_hits)" -eq 1 ]
	req=$(canary_data 1 | tr -d '\r')
	echo "upstream saw: $req"
	[[ "$req" == "GET /path?q=1 HTTP/1.1"$'\n'* ]]
	! grep -qi '^proxy-' <<<"$req"
	grep -qix 'connection: close' <<<"$req"
	grep -qix "host: allowed.sbx.test:$CANARY_PORT" <<<"$req"
	wait_plog 1
	line=$(tail -n 1 "$PLOG")
	[ "$(jq -r '[.method, .verdict, .status, .host] | join(" ")' <<<"$line")" = \
	    "GET allow 200 allowed.sbx.test" ]
}

@test "plain HTTP: the client hears Connection: close (the server's keep-alive replaced, an interim 100 passed on), and a keep-alive client opens a new connection" {
	proxy_world
	# One request per connection: a client told keep-alive would send
	# its next request on the closing connection and get a reset.
	run pcurl alice -D - "http://allowed.sbx.test:$CANARY_PORT/keepalive"
	echo "$output"
	[ "$status" -eq 0 ]
	out=$(tr -d '\r' <<<"$output")
	[[ "$out" == "HTTP/1.1 100 Continue"$'\n\n'"HTTP/1.1 200 OK"$'\n'* ]]
	[ "$(grep -ci '^connection:' <<<"$out")" -eq 1 ]
	grep -qx 'Connection: close' <<<"$out"
	! grep -qi '^keep-alive:\|^ max=' <<<"$out"
	grep -qx 'Content-Length: 7' <<<"$out"
	[ "$(tail -n 1 <<<"$out")" = canary ]
	# Two URLs, one curl: the second on a connection of its own.
	run pcurl alice "http://allowed.sbx.test:$CANARY_PORT/keepalive" \
	    "http://allowed.sbx.test:$CANARY_PORT/keepalive"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = $'canary\ncanary' ]
	[ "$(canary_hits)" -eq 3 ]
}

@test "CONNECT to an allowed port in opaque_ports carries any bytes (a plain TCP tunnel)" {
	proxy_world
	# Without opaque_ports such bytes are refused (0610-proxy-tunnel).
	write_agent_config alice "{\"opaque_ports\": [$CANARY_PORT]}"
	run pc alice --wait=1 tunnel "allowed.sbx.test:$CANARY_PORT" plain 'hello tunnel'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(jq -r .status <<<"$output")" = 200 ]
	[ "$(jq -r .tunnel <<<"$output")" = open ]
	[ "$(jq -r .reply <<<"$output")" = canary-ok ]
	[ "$(canary_data 1)" = "hello tunnel" ]
}

# --- inside the sandbox -----------------------------------------------------

@test "--network proxy: the proxy variables inside name this agent and its token" {
	proxy_world
	tok=$(proxy_token alice)
	[ -n "$tok" ]
	want="http://alice:$tok@127.0.0.1:3128"
	# Compared by digest: the token itself never needs to be printed.
	want_sum=$(printf '%s' "$want" | sha256sum | cut -d' ' -f1)
	run pexec alice sh -c '
		for v in HTTP_PROXY HTTPS_PROXY http_proxy https_proxy ALL_PROXY all_proxy; do
			eval "x=\${$v-}"
			printf "%s %s\n" "$v" "$(printf %s "$x" | sha256sum | cut -d" " -f1)"
		done
		echo "NO_PROXY=${NO_PROXY-unset}"
		echo "no_proxy=${no_proxy-unset}"'
	echo "$output"
	[ "$status" -eq 0 ]
	for v in HTTP_PROXY HTTPS_PROXY http_proxy https_proxy; do
		grep -qx "$v $want_sum" <<<"$output"
	done
	# ALL_PROXY: the SOCKS5 listener, names only (issue 20).
	want_sum=$(printf '%s' "socks5h://alice:$tok@127.0.0.1:1080" | sha256sum | cut -d' ' -f1)
	grep -qx "ALL_PROXY $want_sum" <<<"$output"
	grep -qx "all_proxy $want_sum" <<<"$output"
	grep -qx 'NO_PROXY=localhost,127.0.0.1,::1' <<<"$output"
	grep -qx 'no_proxy=localhost,127.0.0.1,::1' <<<"$output"
	run sbx exec --json --network proxy --agent alice -- true
	[ "$(json_get "$output" .result.network)" = proxy ]
	# The agent's own default (network: proxy in its config).
	run sbx exec --json --agent alice -- true
	[ "$(json_get "$output" .result.network)" = proxy ]
}

@test "--network proxy: no DNS inside; the proxy resolves names" {
	start_dns_stub viadns.sbx.test=127.0.0.1
	proxy_world
	run -2 pexec alice getent hosts viadns.sbx.test
	run pexec alice sh -c 'cat /etc/resolv.conf 2>/dev/null; true'
	[ -z "$output" ]
	# Nothing of the sandbox reached a resolver.
	[ ! -s "$DNS_LOG" ]
	run pcurl alice "http://viadns.sbx.test:$CANARY_PORT/"
	[ "$status" -eq 0 ]
	[ "$output" = canary ]
	grep -qx viadns.sbx.test "$DNS_LOG"
}

@test "NP-01: proxy mode has no direct egress; unsetting the variables opens no path" {
	proxy_world
	run pexec alice cat /proc/net/dev
	[ "$status" -eq 0 ]
	ifaces=$(printf '%s\n' "$output" | sed -n 's/^ *\([^ :]*\):.*/\1/p' |
	    sort | tr '\n' ' ')
	[ "$ifaces" = "lo " ]
	# The host's loopback servers are not the sandbox's loopback.
	run pexec alice "$CURL" -sS -m 5 --noproxy '*' \
	    "http://127.0.0.1:$CANARY_PORT/"
	[ "$status" -ne 0 ]
	run pexec alice env -u HTTP_PROXY -u http_proxy -u HTTPS_PROXY \
	    -u https_proxy -u ALL_PROXY -u all_proxy \
	    "$CURL" -sS -m 5 "http://allowed.sbx.test:$CANARY_PORT/"
	[ "$status" -ne 0 ]
	run pexec alice "$CURL" -sS -m 5 --noproxy '*' \
	    --cacert "/workspace/agents/alice/ca.pem" \
	    "https://127.0.0.1:$TLS_PORT/index.txt"
	[ "$status" -ne 0 ]
	[ "$(canary_hits)" -eq 0 ]
}

@test "the relays on 127.0.0.1:3128 and :1080 (SOCKS5) accept before the command's first instruction, and are the only listeners" {
	proxy_world
	# cat is the first thing to run: the listeners are already in the table.
	run pexec alice cat /proc/net/tcp
	echo "$output"
	[ "$status" -eq 0 ]
	listeners=$(awk '$4 == "0A" { print $2 }' <<<"$output" | sort | tr '\n' ' ')
	[ "$listeners" = "0100007F:0438 0100007F:0C38 " ]
	run pexec alice "$PY" -c '
import socket
s = socket.create_connection(("127.0.0.1", 3128), 2)
print("CONNECTED")'
	[ "$output" = CONNECTED ]
}

# --- denials, the log and the envelope ---------------------------------------

@test "a name not on the allowlist: 403 not_allowlisted, summary on stderr, violations in the envelope" {
	proxy_world
	run --separate-stderr sbx exec --network proxy --agent alice -- \
	    "$CURL" -sS -m 10 --cacert /workspace/agents/alice/ca.pem \
	    "https://evil.sbx.test:$TLS_PORT/"
	echo "stdout: $output"
	echo "stderr: $stderr"
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"sbx: proxy denied 1 request"*"evil.sbx.test:$TLS_PORT (not_allowlisted)"* ]]
	run sbx exec --json --network proxy --agent alice -- \
	    "$CURL" -s -m 10 -o /dev/null -w '%{http_connect}' \
	    "https://evil.sbx.test:$TLS_PORT/"
	echo "$output"
	[ "$(json_get "$output" .ok)" = true ]
	[ "$(json_get "$output" .result.network)" = proxy ]
	[ "$(json_get "$output" .result.stdout)" = 403 ]
	[ "$(jc "$output" .result.violations)" = \
	    "[{\"host\":\"evil.sbx.test\",\"port\":$TLS_PORT,\"reason\":\"not_allowlisted\",\"type\":\"network\"}]" ]
	line=$(tail -n 1 "$PLOG")
	[ "$(jq -r '[.verdict, .reason, .status, .host, .method, .agent] | join(" ")' <<<"$line")" = \
	    "deny not_allowlisted 403 evil.sbx.test CONNECT alice" ]
}

@test "sbx exec --json: the run's denials in order, at most 100; a clean run has none" {
	proxy_world
	write_requests alice \
	    one="$(connect_req "evil.sbx.test:443")" \
	    ok="$(get_req "http://allowed.sbx.test:$CANARY_PORT/" "allowed.sbx.test:$CANARY_PORT")" \
	    two="$(connect_req "127.0.0.1:$CANARY_PORT")" \
	    three="$(connect_req "allowed.sbx.test:22")"
	run sbx exec --json --network proxy --agent alice -- \
	    "$PY" /workspace/agents/alice/pc.py raw "${REQ_FILES[@]}"
	echo "$output"
	[ "$(json_get "$output" .ok)" = true ]
	[ "$(jc "$output" '[.result.violations[] | [.type, .host, .port, .reason]]')" = \
	    '[["network","evil.sbx.test",443,"not_allowlisted"],["network","127.0.0.1",'"$CANARY_PORT"',"ip_literal"],["network","allowed.sbx.test",22,"port_not_allowed"]]' ]
	# 120 denials: the first 100 are kept.
	reqs=()
	for i in $(seq 120); do
		reqs+=("d$i=$(connect_req "evil$i.sbx.test:443")")
	done
	write_requests alice "${reqs[@]}"
	run sbx exec --json --network proxy --agent alice -- \
	    "$PY" /workspace/agents/alice/pc.py --wait=2 raw "${REQ_FILES[@]}"
	[ "$(json_get "$output" '.result.violations | length')" -eq 100 ]
	[ "$(json_get "$output" '.result.violations[0].host')" = evil1.sbx.test ]
	[ "$(json_get "$output" '.result.violations[99].host')" = evil100.sbx.test ]
	run sbx exec --json --network proxy --agent alice -- true
	[ "$(json_get "$output" '.result.violations // [] | length')" -eq 0 ]
}

@test "run/proxy.log: one JSON object per decision, keys sorted, mode 0600" {
	proxy_world
	run raw_requests alice \
	    deny="$(connect_req "evil.sbx.test:443")" \
	    ok="$(get_req "http://allowed.sbx.test:$CANARY_PORT/" "allowed.sbx.test:$CANARY_PORT")" \
	    lit="$(connect_req "127.0.0.1:$CANARY_PORT")"
	echo "$output"
	expect deny 403 not_allowlisted
	expect ok 200
	expect lit 403 ip_literal
	wait_plog 3
	cat "$PLOG"
	[ "$(plog_lines)" -eq 3 ]
	[ "$(stat -c %a "$PLOG")" = 600 ]
	while IFS= read -r line; do
		# Valid JSON, one object, keys sorted as written.
		jq -e 'type == "object"' <<<"$line" >/dev/null
		[ "$(jq -c 'keys_unsorted == keys' <<<"$line")" = true ]
		[ "$(jq -r '[has("agent", "bytes_in", "bytes_out", "duration_ms",
		    "host", "method", "port", "run", "status", "time",
		    "verdict")] | all' <<<"$line")" = true ]
		jq -r .time <<<"$line" |
		    grep -Eqx '[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z'
		[ -n "$(jq -r .run <<<"$line")" ]
	done < "$PLOG"
	# The run id is one per sbx exec.
	[ "$(jq -r .run "$PLOG" | sort -u | wc -l)" -eq 1 ]
	[ "$(jq -r 'select(.verdict == "deny") | .reason' "$PLOG" | sort | tr '\n' ' ')" = \
	    "ip_literal not_allowlisted " ]
}

@test "run/proxy.log rotates to run/proxy.log.1 at log_max_bytes" {
	proxy_world '{"log_max_bytes": 4096}'
	reqs=()
	for i in $(seq 40); do
		reqs+=("d$i=$(connect_req "evil$i.sbx.test:443")")
	done
	run raw_requests alice "${reqs[@]}"
	[ "$status" -eq 0 ]
	[ -f "$PLOG.1" ]
	[ "$(stat -c %s "$PLOG")" -le 4700 ]
	[ "$(stat -c %a "$PLOG.1")" = 600 ]
	cat "$PLOG.1" "$PLOG" | jq -e -s 'length >= 1 and all(type == "object")' >/dev/null
}

# --- DNS: a denied name is never resolved -----------------------------------

@test "a denied name causes no DNS query; an allowed name without an override does" {
	start_dns_stub viadns.sbx.test=127.0.0.1 evil.sbx.test=127.0.0.1 \
	    blocked.wild.sbx.test=127.0.0.1
	proxy_world
	write_agent_config alice '{"resolve": {}}'
	run raw_requests alice \
	    evil="$(connect_req "evil.sbx.test:$CANARY_PORT")" \
	    evilget="$(get_req "http://evil.sbx.test:$CANARY_PORT/" "evil.sbx.test:$CANARY_PORT")" \
	    denied="$(connect_req "blocked.wild.sbx.test:$CANARY_PORT")" \
	    port="$(connect_req "viadns.sbx.test:22")" \
	    lit="$(connect_req "127.0.0.1:$CANARY_PORT")"
	echo "$output"
	expect evil 403 not_allowlisted
	expect evilget 403 not_allowlisted
	expect denied 403 denied_domain
	expect port 403 port_not_allowed
	expect lit 403 ip_literal
	echo "dns log: $(cat "$DNS_LOG")"
	[ ! -s "$DNS_LOG" ]
	[ "$(canary_hits)" -eq 0 ]
	run pcurl alice "http://viadns.sbx.test:$CANARY_PORT/"
	[ "$status" -eq 0 ]
	[ "$output" = canary ]
	grep -qx viadns.sbx.test "$DNS_LOG"
	! grep -q evil "$DNS_LOG"
	! grep -q blocked "$DNS_LOG"
}

@test "a resolve override is used instead of DNS" {
	start_dns_stub
	proxy_world
	run pcurl alice "https://allowed.sbx.test:$TLS_PORT/index.txt"
	[ "$output" = hello-over-tls ]
	[ ! -s "$DNS_LOG" ]
}

@test "without allow_private, a name resolving to 127.0.0.1 is refused (loopback_address)" {
	start_dns_stub viadns.sbx.test=127.0.0.1
	proxy_world
	write_agent_config bob '{"allow_private": false, "resolve": {}}'
	agent_ready bob
	run raw_requests bob \
	    https="$(connect_req "viadns.sbx.test:$CANARY_PORT")" \
	    http="$(get_req "http://viadns.sbx.test:$CANARY_PORT/" "viadns.sbx.test:$CANARY_PORT")"
	echo "$output"
	expect https 403 loopback_address
	expect http 403 loopback_address
	# It was resolved (an allowed name), then refused on its address.
	grep -qx viadns.sbx.test "$DNS_LOG"
	[ "$(canary_hits)" -eq 0 ]
	run pcurl bob "http://viadns.sbx.test:$CANARY_PORT/"
	[ "$output" != canary ]
	[ "$(canary_hits)" -eq 0 ]
}

@test "resolve overrides without allow_private are refused when the config loads" {
	need_proxy_tools
	write_sandbox_config
	write_agent_config carol '{"allow_private": false}'
	run sbx proxy check --agent carol allowed.sbx.test:443
	echo "$output"
	[ "$status" -eq 78 ]
	run sbx exec --json --network proxy --agent carol -- true
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$(json_get "$output" .ok)" = false ]
	[ "$(json_get "$output" .reason)" = config_invalid ]
}

@test "a name that does not resolve: 502 resolve_failed; a closed port: 502 upstream_unreachable" {
	start_dns_stub
	need_proxy_tools
	closed=$(free_port)
	proxy_world
	write_agent_config alice "{\"allowed_ports\": [$CANARY_PORT, $closed]}"
	run raw_requests alice \
	    nx="$(connect_req "viadns.sbx.test:$CANARY_PORT")" \
	    closed="$(connect_req "allowed.sbx.test:$closed")" \
	    closedget="$(get_req "http://allowed.sbx.test:$closed/" "allowed.sbx.test:$closed")"
	echo "$output"
	expect nx 502 resolve_failed
	expect closed 502 upstream_unreachable
	expect closedget 502 upstream_unreachable
	grep -qx viadns.sbx.test "$DNS_LOG"
	wait_plog 3
	[ "$(jq -r 'select(.reason == "resolve_failed") | .verdict' "$PLOG")" = error ]
}

# --- TLS: SNI must equal the CONNECT host -----------------------------------

@test "CONNECT: the ClientHello's SNI must equal the CONNECT host (whole record, also split)" {
	proxy_world
	t="allowed.sbx.test:$CANARY_PORT"
	check_tunnel() {	# MODE ARG SPLIT EXPECT [HOST:PORT]
		local h0 n
		h0=$(canary_hits)
		run pc alice --wait=1 tunnel "${5:-$t}" "$1" "$2" "$3"
		echo "$1 $2 split $3: $output"
		[ "$(jq -r .status <<<"$output")" = 200 ] || return 1
		[ "$(jq -r .tunnel <<<"$output")" = "$4" ] || return 1
		n=$((h0 + 1))
		if [ "$4" = closed ]; then
			# The upstream got not one byte of the refused hello.
			[ -z "$(canary_data "$n")" ] || return 1
		else
			[ "$(canary_data "$n" | head -c 1 | od -An -tx1 | tr -d ' ')" = 16 ] ||
			    return 1
		fi
	}
	check_tunnel sni allowed.sbx.test 0 open
	check_tunnel sni other.sbx.test 0 closed
	check_tunnel sni evil.sbx.test 0 closed
	check_tunnel nosni - 0 closed
	# The record split inside its header and inside its body.
	check_tunnel sni allowed.sbx.test 3 open
	check_tunnel sni allowed.sbx.test 60 open
	check_tunnel sni other.sbx.test 3 closed
	# The CONNECT host is compared normalised.
	check_tunnel sni allowed.sbx.test 0 open "ALLOWED.sbx.test.:$CANARY_PORT"
	wait_plog 8
	grep -q '"reason":"sni_mismatch"' "$PLOG"
	grep -q '"reason":"no_sni"' "$PLOG"
}

@test "SNI mismatch against a real TLS server (openssl s_client through the proxy)" {
	proxy_world
	sc() {	# SERVERNAME
		pexec alice sh -c '
			p=${HTTP_PROXY#http://*:}; P=${p%@*}; export P
			openssl s_client -proxy 127.0.0.1:3128 -proxy_user alice \
			    -proxy_pass env:P -connect "$1" -servername "$2" \
			    -CAfile /workspace/agents/alice/ca.pem \
			    -verify_return_error </dev/null 2>&1' sh \
		    "allowed.sbx.test:$TLS_PORT" "$1"
	}
	run sc allowed.sbx.test
	echo "$output"
	[[ "$output" == *"Verify return code: 0 (ok)"* ]]
	[[ "$output" == *"BEGIN CERTIFICATE"* ]]
	run sc other.sbx.test
	echo "$output"
	# The tunnel was closed on the ClientHello: no server certificate.
	[[ "$output" == *"no peer certificate available"* ]]
	[[ "$output" != *"BEGIN CERTIFICATE"* ]]
}

@test "CONNECT to port 443: anything that is not TLS is refused (not_tls)" {
	proxy_world
	is_root || skip "needs root to bind 127.0.0.1:443"
	"$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 443))' 2>/dev/null ||
	    skip "127.0.0.1:443 is in use"
	export CANARY_DIR
	"$SOCAT" TCP-LISTEN:443,bind=127.0.0.1,reuseaddr,fork \
	    SYSTEM:'echo hit >> "$CANARY_DIR/h443"; cat' 3>&- &
	SERVER_PIDS+=("$!")
	sleep 0.3
	run pc alice tunnel allowed.sbx.test:443 plain 'GET / HTTP/1.0\r\n\r\n'
	echo "$output"
	[ "$(jq -r .status <<<"$output")" = 200 ]
	[ "$(jq -r .tunnel <<<"$output")" = closed ]
	wait_plog 1
	grep -q '"reason":"not_tls"' "$PLOG"
}
