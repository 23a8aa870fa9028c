#!/usr/bin/env bats
# sbx exec: the sandbox trusts what the host trusts (issue 11 item 8).
# Runtimes with a CA store of their own are pointed at the system bundle:
# SSL_CERT_FILE, NODE_EXTRA_CA_CERTS and REQUESTS_CA_BUNDLE; --env
# overrides them; in image mode the image's own bundle is named.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

# The host's bundle, as sandbox.c looks for it.
host_bundle() {
	local f
	for f in /etc/ssl/certs/ca-certificates.crt \
	    /etc/pki/tls/certs/ca-bundle.crt /etc/ssl/ca-bundle.pem \
	    /etc/ssl/cert.pem; do
		[ -f "$f" ] && { echo "$f"; return 0; }
	done
	return 1
}

@test "the three variables name a readable file equal to the host bundle" {
	hb=$(host_bundle) || skip "the host has no system CA bundle"
	run --separate-stderr sbx exec -- sh -c \
	    'for v in "$SSL_CERT_FILE" "$NODE_EXTRA_CA_CERTS" "$REQUESTS_CA_BUNDLE"; do echo "$v"; done'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$hb" ]
	[ "${lines[1]}" = "$hb" ]
	[ "${lines[2]}" = "$hb" ]
	# Readable inside, and the very content the host trusts.
	run --separate-stderr sbx exec -- cat "$hb"
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat "$hb")" ]
}

@test "--env overrides the CA variables" {
	host_bundle >/dev/null || skip "the host has no system CA bundle"
	run --separate-stderr sbx exec --env SSL_CERT_FILE=/x \
	    --env NODE_EXTRA_CA_CERTS= -- sh -c \
	    'echo "$SSL_CERT_FILE|$NODE_EXTRA_CA_CERTS|$REQUESTS_CA_BUNDLE"'
	[ "$status" -eq 0 ]
	[ "$output" = "/x||$(host_bundle)" ]
}

@test "image mode: the image's own bundle is named, not the host's" {
	[ -x /bin/busybox ] || skip "busybox is not installed"
	r="$TEST_ROOT/rootfs"
	mkdir -p "$r/bin" "$r/etc/pki/tls/certs"
	cp /bin/busybox "$r/bin/busybox"
	for a in sh cat echo; do ln -s busybox "$r/bin/$a"; done
	echo 'root:x:0:0:root:/root:/bin/sh' >"$r/etc/passwd"
	echo 'the image trusts this' >"$r/etc/pki/tls/certs/ca-bundle.crt"
	tar -C "$r" -cf "$TEST_ROOT/img.tar" .
	sha=$(sha256sum "$TEST_ROOT/img.tar" | cut -d' ' -f1)
	run -0 sbx provision image add "$TEST_ROOT/img.tar" --sha256 "$sha" \
	    --name ca -q
	run -0 sbx provision --agent i --image ca -q
	run --separate-stderr sbx exec --agent i -- sh -c \
	    'echo "$SSL_CERT_FILE"; cat "$REQUESTS_CA_BUNDLE"'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = /etc/pki/tls/certs/ca-bundle.crt ]
	[ "${lines[1]}" = "the image trusts this" ]
}
