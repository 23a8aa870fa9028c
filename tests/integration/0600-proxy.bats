#!/usr/bin/env bats
# sbx-proxy and sbx exec --network proxy (issue 6; HOSTILE-CASES NP-01,
# NP-04, NP-06, NP-08, NP-10..NP-17, NP-19, NP-22).
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
	for v in HTTP_PROXY HTTPS_PROXY http_proxy https_proxy ALL_PROXY; do
		grep -qx "$v $want_sum" <<<"$output"
	done
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

@test "the relay on 127.0.0.1:3128 accepts before the command's first instruction, and is the only listener" {
	proxy_world
	# cat is the first thing to run: the listener is already in the table.
	run pexec alice cat /proc/net/tcp
	echo "$output"
	[ "$status" -eq 0 ]
	listeners=$(awk '$4 == "0A" { print $2 }' <<<"$output")
	[ "$listeners" = "0100007F:0C38" ]
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

# --- identity: tokens ----------------------------------------------------------

@test "407 with Proxy-Authenticate for a missing, malformed or wrong token" {
	proxy_world
	tok=$(proxy_token alice)
	t="allowed.sbx.test:$CANARY_PORT"
	u="http://allowed.sbx.test:$CANARY_PORT/"
	c() { printf 'CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n%s\\r\\n' "$t" "$t" "$1"; }
	run raw_requests alice \
	    none="$(c '')" \
	    noneget="$(printf 'GET %s HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n' "$u" "$t")" \
	    wrongpw="$(c "Proxy-Authorization: Basic $(basic_auth alice wrong)\\r\\n")" \
	    wronguser="$(c "Proxy-Authorization: Basic $(basic_auth mallory "$tok")\\r\\n")" \
	    notb64="$(c 'Proxy-Authorization: Basic %%%not-base64%%%\r\n')" \
	    nocolon="$(c "Proxy-Authorization: Basic $(printf '%s' "$tok" | base64 -w0)\\r\\n")" \
	    digest="$(c 'Proxy-Authorization: Digest username="alice"\r\n')" \
	    badbearer="$(c 'Proxy-Authorization: Bearer 0000\r\n')" \
	    bearer="$(c "Proxy-Authorization: Bearer $tok\\r\\n")" \
	    basic="$(c "Proxy-Authorization: Basic $(basic_auth alice "$tok")\\r\\n")"
	echo "$output"
	expect none 407 missing_token
	expect noneget 407 missing_token
	for n in wrongpw wronguser notb64 nocolon digest badbearer; do
		expect "$n" 407
		[ "$(jf "$n" .authenticate)" = 'Basic realm="sbx"' ]
	done
	[ "$(jf none .authenticate)" = 'Basic realm="sbx"' ]
	expect wrongpw 407 bad_token
	expect bearer 200
	expect basic 200
	[ "$(canary_hits)" -eq 2 ]
	# curl with a wrong password in its proxy URL.
	run pexec alice "$CURL" -s -m 10 -o /dev/null -w '%{http_connect}' \
	    -x "http://alice:wrong@127.0.0.1:3128" "https://allowed.sbx.test:$TLS_PORT/"
	[ "$output" = 407 ]
}

@test "NP-19: another agent's token cannot use this agent's allowlist; identity is the channel" {
	proxy_world
	write_agent_config bob '{"allowed_domains": ["only-b.sbx.test"],
	    "resolve": {"only-b.sbx.test": "127.0.0.1"}}'
	agent_ready bob
	btok=$(proxy_token bob)
	bauth="Proxy-Authorization: Basic $(basic_auth bob "$btok")"
	b_only="only-b.sbx.test:$CANARY_PORT"
	run raw_requests alice \
	    bobcred="$(printf 'CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n%s\\r\\nX-Sbx-Agent: bob\\r\\n\\r\\n' "$b_only" "$b_only" "$bauth")" \
	    bobcred2="$(printf 'CONNECT allowed.sbx.test:%s HTTP/1.1\\r\\nHost: allowed.sbx.test:%s\\r\\n%s\\r\\n\\r\\n' "$CANARY_PORT" "$CANARY_PORT" "$bauth")" \
	    header="$(connect_req "$b_only" 'X-Sbx-Agent: bob\r\n')"
	echo "$output"
	expect bobcred 407 bad_token
	expect bobcred2 407 bad_token
	expect header 403 not_allowlisted
	[ "$(canary_hits)" -eq 0 ]
	wait_plog 1
	[ "$(jq -r .agent "$PLOG" | sort -u)" = alice ]
	# bob's own sandbox may.
	run pcurl bob "http://only-b.sbx.test:$CANARY_PORT/"
	[ "$output" = canary ]
}

# --- other ingress paths and modes --------------------------------------------

@test "--network none: the same curl fails and the proxy sees nothing" {
	proxy_world
	tok=$(proxy_token alice)
	run pcurl alice "https://allowed.sbx.test:$TLS_PORT/index.txt"
	[ "$output" = hello-over-tls ]
	wait_plog 1
	n=$(plog_lines)
	run sbx exec -q --network none --agent alice -- "$CURL" -sS -m 5 \
	    --cacert /workspace/agents/alice/ca.pem \
	    -x "http://alice:$tok@127.0.0.1:3128" \
	    "https://allowed.sbx.test:$TLS_PORT/index.txt"
	echo "$output"
	[ "$status" -ne 0 ]
	run sbx exec -q --network none --agent alice -- "$CURL" -sS -m 5 \
	    --cacert /workspace/agents/alice/ca.pem \
	    "https://allowed.sbx.test:$TLS_PORT/index.txt"
	[ "$status" -ne 0 ]
	sleep 0.3
	[ "$(plog_lines)" -eq "$n" ]
}

@test "NP-08: the same policy on every ingress path; no self-connection" {
	proxy_world
	run raw_requests alice \
	    connect="$(connect_req "evil.sbx.test:443")" \
	    get="$(get_req "http://evil.sbx.test/" "evil.sbx.test")" \
	    self="$(connect_req "127.0.0.1:3128")" \
	    selfname="$(connect_req "localhost:3128")" \
	    selfget="$(get_req "http://127.0.0.1:3128/" "127.0.0.1:3128")" \
	    socks5='\x05\x01\x00\x05\x01\x00\x03\x0devil.sbx.test\x01\xbb' \
	    socks4='\x04\x01\x01\xbb\x7f\x00\x00\x01\x00'
	echo "$output"
	expect connect 403 not_allowlisted
	expect get 403 not_allowlisted
	expect self 403 ip_literal
	expect selfname 403
	expect selfget 403 ip_literal
	# Not HTTP: refused, or left to the header timeout; never a tunnel.
	for n in socks5 socks4; do
		[ "$(jf "$n" .status)" != 200 ]
		[ "$(jf "$n" .body)" != canary-ok ]
	done
	# A relay inside the sandbox: the same session, the same policy.
	run pexec alice sh -c '
		socat TCP-LISTEN:9999,bind=127.0.0.1,fork,reuseaddr TCP:127.0.0.1:3128 &
		r=$!
		sleep 0.3
		x=${HTTPS_PROXY%:3128}:9999
		curl -s -m 5 -o /dev/null -w "%{http_connect}\n" -x "$x" https://evil.sbx.test/
		curl -s -m 5 --cacert /workspace/agents/alice/ca.pem -x "$x" \
		    "https://allowed.sbx.test:$1/index.txt"
		kill $r' sh "$TLS_PORT"
	echo "$output"
	[ "${lines[0]}" = 403 ]
	[ "${lines[1]}" = hello-over-tls ]
	[ "$(canary_hits)" -eq 0 ]
}

@test "NP-04: allowlist matching matrix" {
	proxy_world
	write_agent_config alice '{"resolve": {"allowed.sbx.test": "127.0.0.1",
	    "www.wild.sbx.test": "127.0.0.1", "a.b.wild.sbx.test": "127.0.0.1",
	    "blocked.wild.sbx.test": "127.0.0.1"}}'
	p=$CANARY_PORT
	reqs=()
	add() { reqs+=("$1=$(connect_req "$2:$p")"); }
	add exact allowed.sbx.test
	add upper ALLOWED.SBX.TEST
	add dot allowed.sbx.test.
	add wild www.wild.sbx.test
	add wildmixed WWW.Wild.Sbx.Test.
	add deep a.b.wild.sbx.test
	add sub www.allowed.sbx.test
	add dash evil-allowed.sbx.test
	add suffix allowed.sbx.test.evil.net
	add prefix notallowed.sbx.test
	add apex wild.sbx.test
	add xwild xwild.sbx.test
	add denied blocked.wild.sbx.test
	add lead .wild.sbx.test
	add double ..wild.sbx.test
	add star '*.wild.sbx.test'
	add inner allowed..sbx.test
	add dots allowed.sbx.test..
	add hyphen -allowed.sbx.test
	add under allowed_x.sbx.test
	add pct 'allowed%2esbx.test'
	run raw_requests alice "${reqs[@]}"
	echo "$output"
	for n in exact upper dot wild wildmixed deep; do
		expect "$n" 200
	done
	for n in sub dash suffix prefix apex xwild; do
		expect "$n" 403 not_allowlisted
	done
	expect denied 403 denied_domain
	for n in lead double star inner dots hyphen under pct; do
		expect "$n" 400
	done
	[ "$(canary_hits)" -eq 6 ]
}

@test "NP-06: IP literals in every spelling are refused, and nothing is dialled" {
	proxy_world
	p=$CANARY_PORT
	reqs=()
	for t in "127.0.0.1:$p" "127.1:$p" "0x7f.1:$p" "0177.0.0.1:$p" \
	    "2130706433:$p" "017700000001:$p" "0x7f000001:$p" "0:$p" \
	    "0.0.0.0:$p" "[::1]:$p" "[::ffff:127.0.0.1]:$p" "[::ffff:7f00:1]:$p" \
	    "[::127.0.0.1]:$p" "[64:ff9b::7f00:1]:$p" "[2002:7f00:1::]:$p" \
	    "169.254.169.254:80" "[fd00:ec2::254]:80" "[::ffff:a9fe:a9fe]:80" \
	    "100.100.100.200:80" "127.0.0.1.:$p" "[0:0:0:0:0:0:0:1]:$p"; do
		reqs+=("lit-$t=$(connect_req "$t")")
	done
	for t in "localhost:$p" "LOCALHOST.:$p" "foo.localhost:$p" \
	    "ip6-localhost:$p" "metadata.google.internal:80"; do
		reqs+=("name-$t=$(connect_req "$t")")
	done
	reqs+=("get-v4=$(get_req "http://127.0.0.1:$p/" "127.0.0.1:$p")")
	reqs+=("get-v6=$(get_req "http://[::1]:$p/" "[::1]:$p")")
	reqs+=("get-dec=$(get_req "http://2130706433:$p/" "2130706433:$p")")
	run raw_requests alice "${reqs[@]}"
	echo "$output"
	bad=$(printf '%s\n' "$output" | jq -r 'select(.status != 403) |
	    "\(.name): \(.status) \(.reason)"')
	[ -z "$bad" ] || { echo "not 403: $bad"; false; }
	bad=$(printf '%s\n' "$output" | jq -r 'select((.name | test("^[0-9]+-(lit|get)-")) and
	    .reason != "ip_literal") | "\(.name): \(.reason)"')
	[ -z "$bad" ] || { echo "not ip_literal: $bad"; false; }
	[ "$(printf '%s\n' "$output" | wc -l)" -eq "${#reqs[@]}" ]
	[ "$(canary_hits)" -eq 0 ]
}

@test "NP-10: absolute-form, Host mismatch and userinfo; plain HTTP filtered like CONNECT" {
	proxy_world
	p=$CANARY_PORT
	a="allowed.sbx.test:$p"
	e="evil.sbx.test:$p"
	run raw_requests alice \
	    evilhost="$(get_req "http://$e/" "$a")" \
	    hostevil="$(get_req "http://$a/" "$e")" \
	    userinfo="$(get_req "http://allowed.sbx.test@$e/" "$e")" \
	    userport="$(get_req "http://allowed.sbx.test:80@$e/" "$e")" \
	    userok="$(get_req "http://u:p@$a/" "$a")" \
	    originevil="$(printf 'GET / HTTP/1.1\\r\\nHost: %s\\r\\n@AUTH@\\r\\n\\r\\n' "$e")" \
	    originok="$(printf 'GET / HTTP/1.1\\r\\nHost: %s\\r\\n@AUTH@\\r\\n\\r\\n' "$a")" \
	    https="$(get_req "https://$a/" "$a")" \
	    nohost11="$(printf 'GET http://%s/ HTTP/1.1\\r\\n@AUTH@\\r\\n\\r\\n' "$a")" \
	    twohosts="$(get_req "http://$a/" "$a" "Host: $a\\r\\n")" \
	    backslash="$(get_req "http://$a\\\\@$e/" "$a")" \
	    fragment="$(get_req "http://$e#@$a/" "$a")" \
	    http10="$(printf 'GET http://%s/ HTTP/1.0\\r\\n@AUTH@\\r\\n\\r\\n' "$e")" \
	    method="$(printf 'FOO http://%s/ HTTP/1.1\\r\\nHost: %s\\r\\n@AUTH@\\r\\n\\r\\n' "$a" "$a")" \
	    version="$(printf 'GET http://%s/ HTTP/2.0\\r\\nHost: %s\\r\\n@AUTH@\\r\\n\\r\\n' "$a" "$a")"
	echo "$output"
	for n in evilhost hostevil userinfo userport userok originevil originok \
	    https nohost11 twohosts backslash fragment; do
		expect "$n" "400|403"
	done
	expect evilhost 400 host_mismatch
	expect hostevil 400 host_mismatch
	expect userinfo 400 userinfo
	expect originevil 400 origin_form
	expect https 400 bad_scheme
	expect http10 403 not_allowlisted
	expect method 405 bad_method
	expect version 400 bad_version
	[ "$(canary_hits)" -eq 0 ]
}

@test "NP-11: request smuggling shapes are refused with 400 and nothing reaches upstream" {
	proxy_world
	a="allowed.sbx.test:$CANARY_PORT"
	s="GET http://evil.sbx.test:$CANARY_PORT/ HTTP/1.1\\r\\nHost: evil.sbx.test:$CANARY_PORT\\r\\n\\r\\n"
	post() { printf 'POST http://%s/ HTTP/1.1\\r\\nHost: %s\\r\\n@AUTH@\\r\\n%s\\r\\n%s' "$a" "$a" "$1" "$2"; }
	run raw_requests alice \
	    clte="$(post 'Content-Length: 6\r\nTransfer-Encoding: chunked\r\n' "0\\r\\n\\r\\n$s")" \
	    te="$(post 'Transfer-Encoding: chunked\r\n' "0\\r\\n\\r\\n$s")" \
	    xchunked="$(post 'Transfer-Encoding: xchunked\r\n' "0\\r\\n\\r\\n$s")" \
	    tespace="$(post 'Transfer-Encoding : chunked\r\n' "0\\r\\n\\r\\n$s")" \
	    tetab="$(post 'Transfer-Encoding:\tchunked\r\n' "0\\r\\n\\r\\n$s")" \
	    telist="$(post 'Transfer-Encoding: chunked, identity\r\n' "0\\r\\n\\r\\n$s")" \
	    tetwice="$(post 'Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n' "0\\r\\n\\r\\n$s")" \
	    obsfold="$(post 'X: y\r\n Transfer-Encoding: chunked\r\n' "0\\r\\n\\r\\n$s")" \
	    chunkext="$(post 'Transfer-Encoding: chunked\r\n' "1;a=\"b\\r\\nX\\r\\n0\\r\\n\\r\\n$s")" \
	    cltwice="$(post 'Content-Length: 5\r\nContent-Length: 6\r\n' "hello!$s")" \
	    clsame="$(post 'Content-Length: 5\r\nContent-Length: 5\r\n' "hello$s")" \
	    cllist="$(post 'Content-Length: 5, 5\r\n' "hello$s")" \
	    clneg="$(post 'Content-Length: -1\r\n' "$s")" \
	    clplus="$(post 'Content-Length: +5\r\n' "hello$s")" \
	    clhex="$(post 'Content-Length: 0x5\r\n' "hello$s")" \
	    clhuge="$(post 'Content-Length: 99999999999999999999999\r\n' "hello$s")" \
	    barelf="$(printf 'GET http://%s/ HTTP/1.1\\nHost: %s\\n@AUTH@\\n\\n' "$a" "$a")" \
	    barecr="$(printf 'GET http://%s/ HTTP/1.1\\r\\nHost: %s\\rX: y\\r\\n@AUTH@\\r\\n\\r\\n' "$a" "$a")" \
	    nul="$(printf 'GET http://%s/ HTTP/1.1\\r\\nHost: %s\\r\\nX: a\\x00b\\r\\n@AUTH@\\r\\n\\r\\n' "$a" "$a")"
	echo "$output"
	bad=$(printf '%s\n' "$output" | jq -r 'select(.status != 400 or .closed != true) |
	    "\(.name): \(.status) \(.reason) closed=\(.closed)"')
	[ -z "$bad" ] || { echo "not 400 and closed: $bad"; false; }
	expect te 400 transfer_encoding
	expect cltwice 400 bad_content_length
	expect obsfold 400 obs_fold
	expect barelf 400 bare_lf
	[ "$(canary_hits)" -eq 0 ]
	# The control: a plain POST with a body goes through with exactly
	# Content-Length bytes; what follows the body is not a request.
	run raw_requests alice ok="$(post 'Content-Length: 5\r\n' "hello$s")"
	echo "$output"
	expect ok 200
	[ "$(jf ok .responses)" -eq 1 ]
	[ "$(canary_hits)" -eq 1 ]
	up=$(canary_data 1 | tr -d '\r')
	echo "upstream saw: $up"
	[[ "$up" == *$'\n\n'hello ]]
	[[ "$up" != *evil* ]]
}

@test "NP-12: one request per connection; pipelined requests are not handled" {
	proxy_world
	a="allowed.sbx.test:$CANARY_PORT"
	e="evil.sbx.test:$CANARY_PORT"
	g="GET http://$a/ HTTP/1.1\\r\\nHost: $a\\r\\n@AUTH@\\r\\n\\r\\n"
	ge="GET http://$e/ HTTP/1.1\\r\\nHost: $e\\r\\n@AUTH@\\r\\n\\r\\n"
	run raw_requests alice pipelined="$g$ge"
	echo "$output"
	expect pipelined 200
	[ "$(jf pipelined .responses)" -eq 1 ]
	[ "$(jf pipelined .closed)" = true ]
	[ "$(canary_hits)" -eq 1 ]
	[ "$(canary_data 1 | grep -c '^GET ')" -eq 1 ]
	[[ "$(canary_data 1)" != *evil* ]]
	run raw_requests alice \
	    deniedfirst="$(connect_req "$e")CONNECT $a HTTP/1.1\\r\\nHost: $a\\r\\n@AUTH@\\r\\n\\r\\n" \
	    twoallowed="$g$g"
	echo "$output"
	expect deniedfirst 403 not_allowlisted
	[ "$(jf deniedfirst .responses)" -eq 1 ]
	[ "$(jf deniedfirst .closed)" = true ]
	expect twoallowed 200
	[ "$(jf twoallowed .responses)" -eq 1 ]
	[ "$(canary_hits)" -eq 2 ]
	[ "$(canary_data 2 | grep -c '^GET ')" -eq 1 ]
}

@test "NP-13: Upgrade and h2c are refused; no 101, no opaque stream" {
	proxy_world
	a="allowed.sbx.test:$CANARY_PORT"
	run raw_requests alice \
	    h2c="$(get_req "http://$a/" "$a" 'Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n')" \
	    ws="$(get_req "http://$a/" "$a" 'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n')" \
	    upgradeonly="$(get_req "http://$a/" "$a" 'Upgrade: h2c\r\n')" \
	    settingsonly="$(get_req "http://$a/" "$a" 'HTTP2-Settings: AAMAAABkAAQAAP__\r\n')" \
	    connupgrade="$(get_req "http://$a/" "$a" 'Connection: upgrade\r\n')" \
	    preface='PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'
	echo "$output"
	for n in h2c ws upgradeonly settingsonly connupgrade; do
		expect "$n" "400|403" upgrade
	done
	expect preface "400|405"
	[ -z "$(printf '%s\n' "$output" | jq -r 'select(.status == 101) | .name')" ]
	[ "$(canary_hits)" -eq 0 ]
}

@test "NP-14: oversized heads get 414/431/400 quickly; the proxy stays small and alive" {
	proxy_world
	a="allowed.sbx.test:$CANARY_PORT"
	long=$(head -c 1048576 /dev/zero | tr '\0' a)
	many=$(for i in $(seq 10000); do printf 'X-H%d: v\\r\\n' "$i"; done)
	big=$(head -c 262144 /dev/zero | tr '\0' b)
	host300=$(printf 'a%.0s' $(seq 60)).$(printf 'b%.0s' $(seq 60)).$(printf 'c%.0s' $(seq 60)).$(printf 'd%.0s' $(seq 60)).$(printf 'e%.0s' $(seq 50)).sbx.test
	label64=$(printf 'a%.0s' $(seq 64)).sbx.test
	label63=$(printf 'a%.0s' $(seq 63)).sbx.test
	RAW_WAIT=5 run raw_requests alice \
	    line="GET http://$a/$long HTTP/1.1\\r\\nHost: $a\\r\\n@AUTH@\\r\\n\\r\\n" \
	    headers="$(get_req "http://$a/" "$a" "$many")" \
	    header="$(get_req "http://$a/" "$a" "X-Big: $big\\r\\n")" \
	    host300="$(connect_req "$host300:443")" \
	    label64="$(connect_req "$label64:443")" \
	    label63="$(connect_req "$label63:443")"
	printf '%s\n' "$output" | jq -c 'del(.head, .body)'
	expect line "414|431|400"
	expect headers "431|400"
	expect header "431|400"
	expect host300 400 invalid_host
	expect label64 400 invalid_host
	expect label63 403 not_allowlisted
	bad=$(printf '%s\n' "$output" | jq -r 'select(.ms > 5000) | .name')
	[ -z "$bad" ]
	[ "$(canary_hits)" -eq 0 ]
	pid=$(proxy_pid)
	proxy_alive "$pid"
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
	echo "proxy RSS: $rss kB"
	[ "$rss" -lt 65536 ]
	run pcurl alice "https://allowed.sbx.test:$TLS_PORT/index.txt"
	[ "$output" = hello-over-tls ]
}

@test "NP-16: ports outside the allowed set are 403, invalid ports 400" {
	proxy_world
	h=allowed.sbx.test
	reqs=()
	for p in 22 25 8080; do
		reqs+=("p$p=$(connect_req "$h:$p")")
	done
	reqs+=("get22=$(get_req "http://$h:22/" "$h:22")")
	for p in 0 65536 -1 443x +443 0443 99999999999 '' ' 443' 443.0 0x1bb; do
		reqs+=("bad[$p]=$(connect_req "$h:$p")")
	done
	reqs+=("noport=$(printf 'CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n@AUTH@\\r\\n\\r\\n' "$h" "$h")")
	run raw_requests alice "${reqs[@]}"
	echo "$output"
	for n in p22 p25 p8080 get22; do
		expect "$n" 403 port_not_allowed
	done
	bad=$(printf '%s\n' "$output" | jq -r 'select((.name | test("-(bad\\[|noport)")) and
	    .status != 400) | "\(.name): \(.status) \(.reason)"')
	[ -z "$bad" ] || { echo "not 400: $bad"; false; }
	[ "$(canary_hits)" -eq 0 ]
}

@test "NP-17: IDN: punycode matches, raw Unicode and look-alikes are 400, Unicode entries refused" {
	proxy_world
	p=$CANARY_PORT
	run raw_requests alice \
	    puny="$(connect_req "xn--bcher-kva.sbx.test:$p")" \
	    punyupper="$(connect_req "XN--BCHER-KVA.SBX.TEST:$p")" \
	    unicode="$(connect_req "bücher.sbx.test:$p")" \
	    cyrillic="$(connect_req "аllowed.sbx.test:$p")" \
	    zerowidth="$(connect_req "allo\\xe2\\x80\\x8bwed.sbx.test:$p")" \
	    fullwidth="$(connect_req "ａｌｌｏｗｅｄ.sbx.test:$p")" \
	    latin1="$(connect_req "b\\xfccher.sbx.test:$p")"
	echo "$output"
	expect puny 200
	expect punyupper 200
	for n in unicode cyrillic zerowidth fullwidth latin1; do
		expect "$n" 400 invalid_host
	done
	[ "$(canary_hits)" -eq 2 ]
	# An entry that is not normalised is refused when the config loads.
	write_agent_config dave '{"allowed_domains": ["bücher.sbx.test"], "resolve": {}}'
	run sbx proxy check --agent dave xn--bcher-kva.sbx.test:443
	echo "$output"
	[ "$status" -eq 78 ]
	run sbx exec --json --network proxy --agent alice --allow-domain 'bücher.sbx.test' -- true
	echo "$output"
	[ "$(json_get "$output" .kind)" = invalid_args ]
	[ "$(json_get "$output" .reason)" = invalid_domain ]
}

# --- limits ----------------------------------------------------------------------

@test "NP-15: a client sending one byte per second is cut at the header timeout" {
	proxy_world '{"header_timeout_ms": 2000}'
	run pc alice slow "allowed.sbx.test:$CANARY_PORT" 1 12
	echo "$output"
	[ "$status" -eq 0 ]
	ms=$(jq -r .ms <<<"$output")
	[ "$ms" -ge 1500 ]
	[ "$ms" -le 5000 ]
	[ "$(jq -r .status <<<"$output")" = 408 ]
	[ "$(jq -r .reason <<<"$output")" = header_timeout ]
	[ "$(canary_hits)" -eq 0 ]
	# The proxy is still there for the next one.
	run pcurl alice "https://allowed.sbx.test:$TLS_PORT/index.txt"
	[ "$output" = hello-over-tls ]
}

@test "NP-15: 1,000 idle connections from one sandbox do not starve a new request" {
	proxy_world '{"max_connections_per_agent": 2000, "header_timeout_ms": 30000}'
	run pc alice hold 1000 -- "$CURL" -sS -m 5 \
	    --cacert /workspace/agents/alice/ca.pem \
	    "https://allowed.sbx.test:$TLS_PORT/index.txt"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(jq -r .opened <<<"$output")" -eq 1000 ]
	[ "$(jq -r .cmd_status <<<"$output")" -eq 0 ]
	[ "$(jq -r .cmd_out <<<"$output")" = hello-over-tls ]
	[ "$(jq -r .cmd_ms <<<"$output")" -lt 5000 ]
	# They were held, not dropped.
	[ "$(jq -r .closed <<<"$output")" -eq 0 ]
	[ "$(jq -r .refused503 <<<"$output")" -eq 0 ]
}

@test "NP-15: an agent over its connection cap gets 503; another agent is not starved" {
	proxy_world '{"max_connections_per_agent": 50, "header_timeout_ms": 30000}'
	write_agent_config bob
	agent_ready bob
	pexec alice "$PY" /workspace/agents/alice/pc.py hold 300 \
	    --send 'CONNECT a' --ready /workspace/agents/alice/ready \
	    --until /workspace/agents/alice/stop --max 20 \
	    > "$TEST_ROOT/hold.out" 2>&1 3>&- &
	BG_PIDS+=("$!")
	for i in $(seq 200); do
		[ -f "$AH/ready" ] && break
		sleep 0.05
	done
	[ -f "$AH/ready" ]
	run sbx proxy status --json
	echo "$output"
	[ "$(json_get "$output" .result.running)" = true ]
	[ "$(json_get "$output" .result.sessions)" -ge 1 ]
	[ "$(json_get "$output" .result.connections)" -ge 50 ]
	t0=$(date +%s%N)
	run pcurl bob "https://allowed.sbx.test:$TLS_PORT/index.txt"
	t1=$(date +%s%N)
	echo "bob: $output in $(((t1 - t0) / 1000000)) ms"
	[ "$output" = hello-over-tls ]
	[ $(((t1 - t0) / 1000000)) -lt 5000 ]
	touch "$AH/stop"
	wait "${BG_PIDS[0]}"
	cat "$TEST_ROOT/hold.out"
	out=$(tail -n 1 "$TEST_ROOT/hold.out")
	[ "$(jq -r .opened <<<"$out")" -eq 300 ]
	[ "$(jq -r '.refused503' <<<"$out")" -ge 1 ]
	[ "$(jq -r '.refused503 + .closed' <<<"$out")" -ge 250 ]
	grep -q '"reason":"too_many_connections"' "$PLOG"
}

@test "limits: 413 over max_request_bytes, response_too_large, idle_timeout" {
	proxy_world '{"max_request_bytes": 1000, "max_response_bytes": 100000, "idle_timeout_ms": 1500}'
	a="allowed.sbx.test:$CANARY_PORT"
	body=$(head -c 5000 /dev/zero | tr '\0' z)
	run raw_requests alice \
	    large="POST http://$a/ HTTP/1.1\\r\\nHost: $a\\r\\n@AUTH@\\r\\nContent-Length: 5000\\r\\n\\r\\n$body"
	echo "$output" | jq -c 'del(.head, .body)'
	expect large 413 request_too_large
	run pexec alice "$CURL" -s -m 10 -o /dev/null -w '%{size_download}' \
	    "http://$a/big"
	echo "downloaded: $output"
	[ "$output" -lt 1048576 ]
	# An idle tunnel: the port is opaque, so that "idle" is relayed.
	write_agent_config alice "{\"opaque_ports\": [$CANARY_PORT]}"
	run pc alice --wait=6 tunnel "$a" plain idle
	echo "$output"
	[ "$(jq -r .tunnel <<<"$output")" = open ]
	[ "$(jq -r .end <<<"$output")" != timeout ]
	ms=$(jq -r .ms <<<"$output")
	[ "$ms" -ge 1200 ]
	[ "$ms" -le 5000 ]
	wait_plog 3
	cat "$PLOG"
	grep -q '"reason":"response_too_large"' "$PLOG"
	grep -q '"reason":"idle_timeout"' "$PLOG"
}

@test "garbage, half-closed and reset connections do not kill the proxy" {
	proxy_world
	pexec alice true
	pid=$(proxy_pid)
	proxy_alive "$pid"
	run pc alice abuse "allowed.sbx.test:$CANARY_PORT"
	echo "$output"
	[ "$status" -eq 0 ]
	run sbx proxy status
	echo "status: $status $output"
	[ "$status" -eq 0 ]
	[ "$(proxy_pid)" = "$pid" ]
	proxy_alive "$pid"
	run pcurl alice "https://allowed.sbx.test:$TLS_PORT/index.txt"
	[ "$output" = hello-over-tls ]
}

# --- per-run additions ----------------------------------------------------------

@test "--allow-domain adds to the allowlist for that run only" {
	proxy_world
	write_agent_config alice '{"resolve": {"extra.sbx.test": "127.0.0.1",
	    "a.extra.sbx.test": "127.0.0.1"}}'
	u="http://extra.sbx.test:$CANARY_PORT/"
	run pexec alice "$CURL" -s -m 10 -w ' %{http_code}' "$u"
	[[ "$output" == *" 403" ]]
	run sbx exec -q --network proxy --agent alice --allow-domain extra.sbx.test \
	    -- "$CURL" -s -m 10 "$u"
	[ "$output" = canary ]
	run sbx exec -q --network proxy --agent alice --allow-domain '*.extra.sbx.test' \
	    --allow-domain other.example.test \
	    -- "$CURL" -s -m 10 "http://a.extra.sbx.test:$CANARY_PORT/"
	[ "$output" = canary ]
	# The next run has the agent's list only.
	run pexec alice "$CURL" -s -m 10 -w ' %{http_code}' "$u"
	[[ "$output" == *" 403" ]]
	[ "$(canary_hits)" -eq 2 ]
	# The same through sbx proxy check.
	run sbx proxy check --agent alice --allow-domain extra.sbx.test extra.sbx.test:80
	[ "$status" -eq 0 ]
	run sbx proxy check --agent alice extra.sbx.test:80
	[ "$status" -eq 1 ]
}

@test "--allow-domain: invalid entries and --network none are invalid_args" {
	need_proxy_tools
	write_sandbox_config
	write_agent_config alice
	for d in '*' '*.com' 127.0.0.1 '[::1]' 'a..b' 'ex ample.com' '' 'a.*.b.test'; do
		run sbx exec --json --network proxy --agent alice --allow-domain "$d" -- true
		echo "$d: $output"
		[ "$status" -ne 0 ]
		[ "$(json_get "$output" .kind)" = invalid_args ]
		[ "$(json_get "$output" .field)" = allow_domain ]
		[ "$(json_get "$output" .reason)" = invalid_domain ]
	done
	run sbx exec --json --network none --agent alice --allow-domain ok.sbx.test -- true
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$(json_get "$output" .kind)" = invalid_args ]
	run sbx exec -q --network none --agent alice --allow-domain ok.sbx.test -- true
	[ "$status" -eq 125 ]
	# Nothing was started for that.
	[ ! -e "$SBX_HOME/run/proxy.sock" ]
}

# --- sbx proxy check / status / stop / serve -------------------------------------

@test "sbx proxy check: the name decision, without DNS and without connecting" {
	start_dns_stub viadns.sbx.test=127.0.0.1
	proxy_world
	run sbx proxy check --agent alice allowed.sbx.test:443
	[ "$status" -eq 0 ]
	run sbx proxy check --json --agent alice ALLOWED.sbx.test.:443
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .tool)" = proxy.check ]
	[ "$(jc "$output" '.result | [.agent, .host, .port, .verdict, .status, has("reason")]')" = \
	    '["alice","allowed.sbx.test",443,"allow",200,false]' ]
	chk() {	# HOST:PORT EXIT VERDICT REASON STATUS
		run sbx proxy check --json --agent alice "$1"
		echo "$1: $status $output"
		[ "$status" -eq "$2" ] || return 1
		[ "$(jc "$output" '.result | [.verdict, .reason, .status]')" = \
		    "[\"$3\",\"$4\",$5]" ]
	}
	chk evil.sbx.test:443 1 deny not_allowlisted 403
	chk 127.0.0.1:80 1 deny ip_literal 403
	chk allowed.sbx.test:22 1 deny port_not_allowed 403
	chk blocked.wild.sbx.test:443 1 deny denied_domain 403
	run sbx proxy check --agent alice evil.sbx.test
	[ "$status" -eq 1 ]
	run sbx proxy check --json --agent alice 'bad_host!:443'
	echo "$output"
	[ "$status" -eq 65 ]
	jq -e . <<<"$output" >/dev/null
	run sbx proxy check --agent alice allowed.sbx.test:99999
	[ "$status" -eq 65 ]
	# An allowed name without an override: no DNS, no connection.
	run sbx proxy check --agent alice "viadns.sbx.test:$CANARY_PORT"
	[ "$status" -eq 0 ]
	[ ! -s "$DNS_LOG" ]
	[ "$(canary_hits)" -eq 0 ]
	# check needs no proxy and starts none.
	run sbx proxy status
	[ "$status" -eq 1 ]
}

@test "sbx proxy status, stop and serve; exec starts one proxy on demand" {
	proxy_world
	run sbx proxy status
	[ "$status" -eq 1 ]
	run sbx proxy status --json
	[ "$status" -eq 1 ]
	[ "$(json_get "$output" .result.running)" = false ]
	run sbx proxy stop --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.running)" = false ]
	# Four first runs at once: each one works, and one proxy serves them.
	kids=()
	for i in 1 2 3 4; do
		pexec alice "$CURL" -s -m 10 --cacert /workspace/agents/alice/ca.pem \
		    -o "/workspace/agents/alice/out.$i" \
		    "https://allowed.sbx.test:$TLS_PORT/index.txt" 3>&- &
		kids+=("$!")
	done
	for k in "${kids[@]}"; do
		wait "$k"
	done
	for i in 1 2 3 4; do
		[ "$(cat "$AH/out.$i")" = hello-over-tls ]
	done
	pid=$(proxy_pid)
	proxy_alive "$pid"
	wait_plog 4
	[ "$(jq -r .run "$PLOG" | sort -u | wc -l)" -eq 4 ]
	run sbx proxy status --json
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .tool)" = proxy.status ]
	[ "$(json_get "$output" .result.running)" = true ]
	[ "$(json_get "$output" .result.pid)" = "$pid" ]
	[[ "$(json_get "$output" .result.socket)" == *run/proxy.sock ]]
	[ "$(json_get "$output" .result.sessions)" -eq 0 ]
	[ "$(json_get "$output" .result.connections)" -eq 0 ]
	[ "$(json_get "$output" '.result.uptime_s | type')" = number ]
	run sbx proxy serve
	[ "$status" -eq 0 ]
	[ "$(proxy_pid)" = "$pid" ]
	run sbx proxy stop
	[ "$status" -eq 0 ]
	for i in $(seq 30); do
		proxy_alive "$pid" || break
		sleep 0.1
	done
	! proxy_alive "$pid"
	run sbx proxy status
	[ "$status" -eq 1 ]
	run sbx proxy serve
	[ "$status" -eq 0 ]
	run sbx proxy status --json
	[ "$(json_get "$output" .result.running)" = true ]
	[ "$(json_get "$output" .result.pid)" != "$pid" ]
}

@test "NP-22: no TCP listener on the host; run/proxy.sock 0600 in a 0711 run/" {
	proxy_world
	pexec alice true
	pid=$(proxy_pid)
	proxy_alive "$pid"
	[ -S "$SBX_HOME/run/proxy.sock" ]
	[ "$(stat -c %a "$SBX_HOME/run/proxy.sock")" = 600 ]
	[ "$(stat -c %u "$SBX_HOME/run/proxy.sock")" = "$(id -u)" ]
	[ "$(stat -c %a "$SBX_HOME/run")" = 711 ]
	[ "$(stat -c %a "$SBX_HOME/run/tokens/alice")" = 600 ]
	# The proxy's sockets against the host's listening TCP sockets.
	socks=$(find "/proc/$pid/fd" -type l -printf '%l\n' 2>/dev/null |
	    sed -n 's/^socket:\[\([0-9]*\)\]$/\1/p' | sort -u)
	if [ -n "$socks" ]; then
		listen=$(awk '$4 == "0A" { print $10 }' /proc/net/tcp /proc/net/tcp6 | sort -u)
		both=$(comm -12 <(printf '%s\n' "$socks") <(printf '%s\n' "$listen"))
		[ -z "$both" ] || { echo "proxy listens on TCP: $both"; false; }
	else
		# Not root, and the proxy is not dumpable (its fds are not
		# ours to read): no listening TCP socket of our uid but the
		# test's own servers.
		ports=$(printf '%04X\n' "$TLS_PORT" "$CANARY_PORT")
		extra=$(awk -v u="$(id -u)" '$4 == "0A" && $8 == u { split($2, a, ":"); print a[2] }' \
		    /proc/net/tcp /proc/net/tcp6 | grep -vxF "$ports" || true)
		[ -z "$extra" ] || { echo "listening ports of uid $(id -u): $extra"; false; }
	fi
	if command -v ss >/dev/null; then
		run ss -ltnupH
		! grep -q 'sbx-proxy' <<<"$output"
	fi
}

@test "the proxy daemon holds no capability and cannot gain one" {
	proxy_world
	pexec alice true
	pid=$(proxy_pid)
	proxy_alive "$pid"
	st=$(cat "/proc/$pid/status")
	echo "$st" | grep -E '^(Cap|NoNewPrivs)'
	grep -qx 'NoNewPrivs:	1' <<<"$st"
	grep -qx 'CapEff:	0000000000000000' <<<"$st"
	grep -qx 'CapPrm:	0000000000000000' <<<"$st"
	# Started by root, it also empties its bounding set (a plain user
	# has no capability to drop).
	if [ "$(id -u)" = 0 ]; then
		grep -qx 'CapBnd:	0000000000000000' <<<"$st"
	fi
	# Not dumpable: another process of the same uid cannot read its
	# memory (and so the tokens of the sessions it holds).
	[ "$(stat -c %u "/proc/$pid/mem")" = 0 ] || [ "$(id -u)" = 0 ]
}
