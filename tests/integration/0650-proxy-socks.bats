#!/usr/bin/env bats
# sbx-proxy: the SOCKS5 listener on 127.0.0.1:1080 inside the sandbox
# (issue 20): served through sbx-init's channel like 3128, names only
# (socks5h), the agent's token as the password, the same policy; RFC 1928
# and 1929 framing parsed strictly.  Servers on the host's 127.0.0.1 only.
# sbx-test: unprivileged

load lib
load proxy
bats_require_minimum_version 1.5.0

# A raw SOCKS5 client for the hostile cases: each case is hex bytes
# (@U@ and @P@ become the agent's name and token, with their lengths);
# prints one JSON line per case with every byte the proxy answered.
SOCKS_PY='
import binascii, json, os, socket, sys, time
u = os.environ["ALL_PROXY"].split("://", 1)[1].rsplit("@", 1)[0]
user, tok = u.split(":", 1)
auth = bytes([1, len(user)]) + user.encode() + bytes([len(tok)]) + tok.encode()
for case in sys.argv[1:]:
    name, _, hexs = case.partition("=")
    data = binascii.unhexlify(hexs.replace("@A@", binascii.hexlify(auth).decode()))
    s = socket.create_connection(("127.0.0.1", 1080), 5)
    s.settimeout(3)
    got, how = b"", "timeout"
    try:
        s.sendall(data)
        while True:
            x = s.recv(4096)
            if not x:
                how = "eof"
                break
            got += x
    except socket.timeout:
        pass
    except OSError:
        how = "reset"
    s.close()
    print(json.dumps({"name": name, "reply": binascii.hexlify(got).decode(), "end": how}), flush=True)
'

socks_world() {
	proxy_world
	printf '%s' "$SOCKS_PY" > "$AH/socks.py"
	chmod 0644 "$AH/socks.py"
}

# hexname NAME: the domain-name address of a request, hex.
hexname() { printf '%02x%s' "${#1}" "$(printf '%s' "$1" | od -v -An -tx1 | tr -d ' \n')"; }
hexport() { printf '%04x' "$1"; }

@test "SOCKS5: curl through ALL_PROXY (socks5h) reaches an allowed name; the log says SOCKS5" {
	socks_world
	run pexec alice sh -c 'exec "$0" -sS -m 10 --cacert "$HOME/ca.pem" -x "$ALL_PROXY" "$1"' \
	    "$CURL" "https://allowed.sbx.test:$TLS_PORT/index.txt"
	echo "$output"
	[ "$output" = hello-over-tls ]
	line=$(grep '"method":"SOCKS5"' "$PLOG" | tail -n 1)
	echo "$line"
	[ "$(jq -r '[.verdict, .host, .port] | join(" ")' <<<"$line")" = \
	    "allow allowed.sbx.test $TLS_PORT" ]
	# A denied name: the client is refused, the run records it.
	run sbx exec --json --network proxy --agent alice -- sh -c \
	    'exec "$0" -sS -m 10 -x "$ALL_PROXY" "https://evil.sbx.test/"' "$CURL"
	echo "$output"
	[ "$(jc "$output" '[.result.violations[] | [.host, .reason]]')" = \
	    '[["evil.sbx.test","not_allowlisted"]]' ]
	# The tunnel is judged as a CONNECT is: another name in the SNI.
	[ "$(canary_hits)" -eq 0 ]
}

@test "SOCKS5 hostile: address types, versions, commands, credentials, truncation: refused, nothing dialled" {
	socks_world
	g=050102	# greeting: user/pass (then the auth, @A@)
	name=$(hexname allowed.sbx.test)
	p=$(hexport "$CANARY_PORT")
	run pexec alice "$PY" /workspace/agents/alice/socks.py \
	    "ipv4=${g}@A@050100017f000001$p" \
	    "ipv6=${g}@A@05010004000000000000000000000000000000010050" \
	    "mapped=${g}@A@0501000400000000000000000000ffff7f000001$p" \
	    "socks4=04010050" \
	    "v4greet=0401" \
	    "noauth=050100" \
	    "badtoken=${g}0105$(printf alice | od -v -An -tx1 | tr -d ' \n')0478787878" \
	    "bind=${g}@A@05020003${name}$p" \
	    "udp=${g}@A@05030003${name}$p" \
	    "rsv=${g}@A@05010103${name}$p" \
	    "atyp5=${g}@A@05010005${name}$p" \
	    "empty=${g}@A@050100030000$p" \
	    "literal=${g}@A@05010003$(hexname 127.0.0.1)$p" \
	    "long=${g}@A@05010003ff$(printf 'a%.0s' $(seq 255) | od -v -An -tx1 | tr -d ' \n')$p" \
	    "denied=${g}@A@05010003$(hexname evil.sbx.test)$p" \
	    "truncated=${g}@A@0501000310616c6c6f"
	echo "$output"
	r() { jq -r --arg n "$1" 'select(.name == $n) | .reply' <<<"$output"; }
	# After the method (05 02) and the credentials (01 00): a reply
	# 05 REP 00 01 0.0.0.0:0.
	hs=05020100
	rp() { printf '05%s000100000000%s' "$1" 0000; }
	for c in ipv4 ipv6 mapped literal denied; do
		[ "$(r "$c")" = "$hs$(rp 02)" ] || { echo "$c: $(r "$c")"; false; }
	done
	# A bad version: no acceptable method, and closed.
	[ "$(r socks4)" = 05ff ]
	[ "$(r v4greet)" = 05ff ]
	[ "$(r noauth)" = 05ff ]
	[ "$(r badtoken)" = 05020101 ]
	[ "$(r bind)" = "$hs$(rp 07)" ]
	[ "$(r udp)" = "$hs$(rp 07)" ]
	[ "$(r atyp5)" = "$hs$(rp 08)" ]
	[ "$(r rsv)" = "$hs$(rp 01)" ]
	[ "$(r empty)" = "$hs$(rp 01)" ]
	[ "$(r long)" = "$hs$(rp 01)" ]
	# Truncated: the handshake so far, then nothing until the header
	# timeout (the client gave up first).
	[ "$(r truncated)" = 05020100 ]
	# Nothing reached the servers; every refusal is in the log.
	[ "$(canary_hits)" -eq 0 ]
	for why in ip_literal socks_bad_version socks_no_acceptable_method \
	    bad_token socks_bad_command socks_bad_reserved \
	    socks_bad_address_type invalid_host not_allowlisted; do
		grep -q "\"reason\":\"$why\"" "$PLOG" || { echo "no $why"; false; }
	done
	# The proxy is still there and serves.
	run pexec alice sh -c 'exec "$0" -sS -m 10 -x "$ALL_PROXY" "$1"' \
	    "$CURL" "http://allowed.sbx.test:$CANARY_PORT/"
	[ "$output" = canary ]
}
