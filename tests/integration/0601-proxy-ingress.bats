#!/usr/bin/env bats
# sbx-proxy, part 2 of 3: identity (tokens), other ingress paths and modes,
# and the request-shape cases NP-04, NP-06, NP-08, NP-10..NP-12, NP-19.
# Part 1 is 0600-proxy.bats, part 3 0602-proxy-limits.bats: one file took
# 62-78 s, the critical path of a parallel run.  The servers and helpers
# are proxy.bash's (see 0600-proxy.bats for the setting).
# sbx-test: unprivileged

load lib
load proxy
bats_require_minimum_version 1.5.0

# setup_file, setup and teardown: proxy.bash's.

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
