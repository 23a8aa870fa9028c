#!/usr/bin/env bats
# sbx install (issue 15), second part (split from 1000-install.bats, the
# suite's longest file): transient failures (one cleanup, one retry),
# failure classes, the registries' network policy, locks, the manifest,
# image mode.
#
# The registry (install.bash) is a python3 server on the host's 127.0.0.1,
# run as uid 65533, reached from the sandbox through sbx-proxy under names the
# agent's `resolve` overrides map to it.  No test needs the internet.
# As uid 65534 (the unprivileged pass) the registry runs as that uid too.
# sbx-test: unprivileged

load lib
load proxy
load install
bats_require_minimum_version 1.5.0

setup_file() { :; }
setup() { proxy_setup; }
teardown() { proxy_teardown; }

# --- failures: transient, persistent, classified ------------------------------

@test "a transient npm failure (ELOCKED on the first request): one cleanup, one retry, success" {
	need_install_tools
	install_world npm-locked:1
	run -0 sbx install --json --agent alice --manager npm sbx-hello
	echo "$output"
	cat "$REG_LOG"
	[ "$(json_get "$output" .result.retried)" = true ]
	[ "$(npm_requests sbx-hello)" -eq 2 ]
	run -0 sbx exec --agent alice -- sbx-hello
}

@test "a persistent transient failure: retried exactly once, then classified" {
	need_install_tools
	install_world npm-locked:100
	run sbx install --json --agent alice --manager npm sbx-hello
	echo "$output"
	status_is_kind
	[ "$(json_get "$output" .kind)" = execution_error ]
	[ "$(json_get "$output" .reason)" = lock ]
	[ "$(json_get "$output" .class)" = lock ]
	[ "$(json_get "$output" .retryable)" = true ]
	[ "$(json_get "$output" .retried)" = true ]
	[[ $(json_get "$output" .result.log_tail) == *ELOCKED* ]]
	[ "$(npm_requests sbx-hello)" -eq 2 ]
	[ ! -e "$SBX_HOME/agents/alice/installed-packages.json" ]
}

@test "a package the registry does not have: package_not_found, no retry" {
	need_install_tools
	install_world npm-404:100
	run sbx install --json --agent alice --manager npm sbx-hello
	echo "$output"
	status_is_kind
	[ "$(json_get "$output" .reason)" = package_not_found ]
	[ "$(json_get "$output" .retryable)" = false ]
	[ "$(json_get "$output" .result.retried)" = false ]
	[ "$(npm_requests sbx-hello)" -eq 1 ]
}

# --- the network: registries for the install run only -------------------------

@test "a registry the policy refuses: rejected before anything runs, with the fix" {
	need_install_tools
	install_world
	# A private address without allow_private (no resolve override
	# either: the stub name would not resolve, so keep it and drop only
	# the port).
	install_agent alice '{"allowed_ports": [80, 443]}'
	run sbx install --json --agent alice --manager npm sbx-hello
	echo "$output"
	status_is_kind
	[ "$(json_get "$output" .reason)" = port_not_allowed ]
	[[ $(json_get "$output" .hint) == *allowed_ports* ]]
	[ "$(npm_requests sbx-hello)" -eq 0 ]
	# The run's allowance is for the install alone: sbx exec of the
	# agent does not reach the registry.
	install_agent alice '{"network": "proxy"}'
	run -0 sbx install -q --agent alice --manager npm sbx-hello
	run sbx exec --agent alice -- node -e '
	    require("http").get("http://npm.sbx.test:'"$REG_PORT"'/sbx-hello",
	        r => { console.log(r.statusCode); process.exit(0) })
	        .on("error", e => { console.log("error"); process.exit(0) })'
	echo "$output"
	[[ $output != 200* ]]
}

@test "mirrors on private and reserved addresses: every refused host at once, the exact command; proxy check --install answers the same" {
	# Nothing is ever dialled: the names resolve (through the test DNS
	# stub) to addresses that are refused, and once they are allowed
	# only sbx proxy check is asked.
	start_dns_stub m1.sbx.test=10.20.0.7 m2.sbx.test=198.18.0.9 \
	    npm.sbx.test=10.20.0.8
	mkdir -p "$SBX_HOME/config"
	jq -n --arg dns "127.0.0.1:$DNS_PORT" '{proxy: {dns_server: $dns},
	    install: {registries: {
	        pip: ["http://m1.sbx.test/simple/", "http://m2.sbx.test/"],
	        npm: "http://npm.sbx.test:4873/"}}}' \
	    >"$SBX_HOME/config/sandbox.json"
	sbx provision -q --agent alice
	# Both pip hosts are named in one refusal, with one command for both.
	run sbx install --json --agent alice --manager pip sbxpy-hello
	echo "$output"
	status_is_kind
	[ "$(json_get "$output" .kind)" = rejected ]
	[ "$(json_get "$output" .reason)" = private_address ]
	[[ $(json_get "$output" .message) == *"refuses 2 registries: m1.sbx.test:80 (its address 10.20.0.7 is private_address), m2.sbx.test:80 (its address 198.18.0.9 is reserved_address)"* ]]
	hint=$(json_get "$output" .hint)
	[ "$hint" = "sbx config add allow_private_domains m1.sbx.test m2.sbx.test --agent alice" ]
	# sbx proxy check: not allowlisted for sbx exec; as the install run
	# (its registries allowed), the install's own answer.
	run -1 sbx proxy check --agent alice --resolve --json m1.sbx.test:80
	[ "$(json_get "$output" .result.reason)" = not_allowlisted ]
	run -1 sbx proxy check --agent alice --install pip --resolve --json m1.sbx.test:80
	[ "$(json_get "$output" .result.reason)" = private_address ]
	[ "$(json_get "$output" .result.install)" = pip ]
	run -1 sbx proxy check --agent alice --install pip --resolve m2.sbx.test
	[[ $output == *"deny m2.sbx.test:443 (reserved_address 198.18.0.9"* ]]
	# The hint, run as it is written, allows them both.
	eval "$hint"
	run -0 sbx proxy check --agent alice --install pip --resolve m1.sbx.test:80
	[[ $output == *"allow m1.sbx.test:80"* ]]
	[[ $output == *"allowed by allow_private_domains m1.sbx.test"* ]]
	run -0 sbx proxy check --agent alice --install pip --resolve m2.sbx.test:80
	# npm's registry given as one string, as npm's own `registry` is:
	# the install judges it (a port and an address to allow), it is not
	# a configuration error.
	run sbx install --json --agent alice --manager npm sbx-hello
	echo "$output"
	[ "$(json_get "$output" .reason)" = port_not_allowed ]
	[[ $(json_get "$output" .message) == *"npm.sbx.test:4873 (port_not_allowed; its address 10.20.0.8 is private_address)"* ]]
	[ "$(json_get "$output" .hint)" = "sbx config add allow_private_domains npm.sbx.test --agent alice; sbx config add allowed_ports 4873 --agent alice" ]
	# An agent without allowed_ports has 80 and 443, which a list
	# replaces: the command keeps them.
	run -0 sbx config unset allowed_ports --agent alice
	run sbx install --json --agent alice --manager npm sbx-hello
	[[ $(json_get "$output" .hint) == *"; sbx config add allowed_ports 80 443 4873 --agent alice" ]]
	run -0 sbx config add install.registries.npm http://npm2.sbx.test/ --global
	[ "$(jq -c .install.registries.npm "$SBX_HOME/config/sandbox.json")" = '["http://npm.sbx.test:4873/","http://npm2.sbx.test/"]' ]
	# A manager that is none is a usage error.
	run -64 sbx proxy check --install gem x.example
	[[ $output == *"--install: \`gem\` is not a package manager"* ]]
	# Nothing reached a registry: only the stub was asked.
	[ ! -s "$TEST_ROOT/requests.log" ]
}

# --- locks ---------------------------------------------------------------------

@test "two agents install at once; the same agent twice at once is serialised" {
	need_install_tools
	install_world "" alice bob
	sbx install -q --agent alice --manager npm sbx-hello > "$TEST_ROOT/a1" 2>&1 &
	p1=$!
	sbx install -q --agent bob --manager npm sbx-hello > "$TEST_ROOT/b1" 2>&1 &
	p2=$!
	sbx install -q --agent alice --manager pip sbxpy-hello > "$TEST_ROOT/a2" 2>&1 &
	p3=$!
	wait "$p1" || { cat "$TEST_ROOT/a1"; false; }
	wait "$p2" || { cat "$TEST_ROOT/b1"; false; }
	wait "$p3" || { cat "$TEST_ROOT/a2"; false; }
	[ "$(manifest alice | jq -c .)" = '{"apt":[],"npm":["sbx-hello"],"pip":["sbxpy-hello"]}' ]
	[ "$(manifest bob | jq -c .npm)" = '["sbx-hello"]' ]
	run -0 sbx exec --agent bob -- sbx-hello
	run -0 sbx exec --agent alice -- sbxpy_hello-hello
}

@test "kill -9 during an install: the lock goes with it, the next install works" {
	need_install_tools
	install_world stall:1
	sbx install -q --agent alice --manager npm sbx-hello > "$TEST_ROOT/k" 2>&1 &
	p=$!
	for _ in $(seq 100); do
		[ -s "$REG_LOG" ] && break
		sleep 0.1
	done
	[ -s "$REG_LOG" ]
	kill -KILL "$p"
	wait "$p" || true
	run -0 sbx install --json --agent alice --manager npm sbx-hello
	echo "$output"
	run -0 sbx exec --agent alice -- sbx-hello
}

@test "a transient pip failure (ReadTimeoutError): one cache purge, one retry, success" {
	need_install_tools
	install_world pip-timeout:1
	# pip's own retries off and a short read timeout, so that the first
	# (stalled, 15 s) request fails soon with the signature; 3 s, not 1:
	# the requests that are not stalled must not time out on a machine
	# busy with other tests.
	h=$(ahome alice)
	mkdir -p "$h/.config/pip"
	printf '[global]\ntimeout = 3\nretries = 0\n' > "$h/.config/pip/pip.conf"
	chmod -R a+rX "$h/.config"
	run sbx install --json --agent alice --manager pip sbxpy-hello
	echo "$output"
	cat "$REG_LOG"
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.retried)" = true ]
	run -0 sbx exec --agent alice -- sbxpy_hello-hello
}

@test "sbx status counts the manifest; sbx provision unprovision clears it" {
	run -0 sbx provision --agent alice -q
	run -0 sbx status --agent alice --json
	[ "$(json_get "$output" .result.packages)" = null ]
	mkdir -p "$SBX_HOME/agents/alice"
	echo '{"apt":[],"npm":["a","B","b"],"pip":["x"]}' > "$SBX_HOME/agents/alice/installed-packages.json"
	run -0 sbx status --agent alice --json
	[ "$(json_get "$output" .result.packages | jq -c .)" = '{"apt":0,"npm":2,"pip":1}' ]
	run -0 sbx status --agent alice
	[[ $output == *"packages (sbx install): apt 0, npm 2, pip 1"* ]]
	run -0 sbx install list --agent alice --json
	[ "$(json_get "$output" .result.packages.npm | jq -c .)" = '["a","B"]' ]
	run -0 sbx provision unprovision --agent alice -q
	[ ! -e "$SBX_HOME/agents/alice/installed-packages.json" ]
}

@test "image mode: the image's /var read-only (dpkg's status visible), /var/tmp and /var/cache private" {
	[ -x /bin/busybox ] || skip "busybox is not installed"
	r=$TEST_ROOT/rootfs
	mkdir -p "$r/bin" "$r/etc" "$r/var/lib/dpkg" "$r/var/tmp" "$r/var/cache/apt"
	cp /bin/busybox "$r/bin/busybox"
	for a in sh cat touch echo; do ln -s busybox "$r/bin/$a"; done
	echo 'root:x:0:0:root:/root:/bin/sh' > "$r/etc/passwd"
	printf 'Package: img-pkg\nStatus: install ok installed\n' > "$r/var/lib/dpkg/status"
	echo cached > "$r/var/cache/apt/pkgcache.bin"
	tar -C "$r" -cf "$TEST_ROOT/img.tar" .
	run -0 sbx provision image add "$TEST_ROOT/img.tar" \
	    --sha256 "$(sha256sum "$TEST_ROOT/img.tar" | cut -d' ' -f1)" --name img -q
	run -0 sbx provision --agent alice --image img -q
	run -0 sbx exec --agent alice -- cat /var/lib/dpkg/status
	[[ $output == *"Package: img-pkg"* ]]
	run sbx exec --agent alice -- touch /var/lib/dpkg/new
	[ "$status" -ne 0 ]
	run -0 sbx exec --agent alice -- sh -c 'echo x > /var/tmp/t && echo y > /var/cache/c && cat /var/tmp/t /var/cache/c'
	[ "$output" = "$(printf 'x\ny')" ]
	# Private: the template is untouched, and its cache is not shown.
	run sbx exec --agent alice -- cat /var/cache/apt/pkgcache.bin
	[ "$status" -ne 0 ]
	d=$(sha256sum "$TEST_ROOT/img.tar" | cut -d' ' -f1)
	[ ! -e "$SBX_HOME/images/$d/rootfs/var/tmp/t" ]
	[ ! -e "$SBX_HOME/images/$d/rootfs/var/cache/c" ]
	[ -f "$SBX_HOME/images/$d/rootfs/var/cache/apt/pkgcache.bin" ]
	[ ! -e "$SBX_HOME/images/$d/rootfs/var/lib/dpkg/new" ]
}

@test "a cleanup that fails: cleanup_failed, and no retry over it" {
	need_install_tools
	install_world npm-locked:100
	# npm's cache, in a directory the agent cannot empty (root's, 0755;
	# as anyone else, the agent's own at 0555): `npm cache clean
	# --force` fails.
	h=$(ahome alice)
	mkdir -p "$h/.npm/_cacache/index-v5"
	echo x > "$h/.npm/_cacache/index-v5/x"
	if is_root; then
		chown -R 0:0 "$h/.npm/_cacache"
		chmod 0755 "$h/.npm/_cacache" "$h/.npm/_cacache/index-v5"
		chown "$(sandbox_uid)" "$h/.npm"
	else
		chmod 0555 "$h/.npm/_cacache/index-v5" "$h/.npm/_cacache"
	fi
	run sbx install --json --agent alice --manager npm sbx-hello
	echo "$output"
	status_is_kind
	[ "$(json_get "$output" .reason)" = lock ]
	[ "$(json_get "$output" .cleanup_failed)" = true ]
	[ "$(json_get "$output" .result.cleanup_failed)" = true ]
	[ "$(json_get "$output" .result.retried)" = false ]
	[ "$(npm_requests sbx-hello)" -eq 1 ]
}

# --- a damaged manifest (issue 30) ---------------------------------------------

@test "a damaged manifest: install refuses before running, naming it; reconcile rebuilds it; status reports it" {
	need_install_tools
	install_world
	run -0 sbx install -q --agent alice --manager pip sbxpy-hello
	m=$SBX_HOME/agents/alice/installed-packages.json
	head -c 7 "$m" > "$m.tmp" && mv "$m.tmp" "$m"
	run sbx status --agent alice
	echo "$output"
	[[ $output == *"agents/alice/installed-packages.json"* ]]
	: > "$REG_LOG"
	run sbx install --json --agent alice --manager npm sbx-hello
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$(json_get "$output" .ok)" = false ]
	[[ $(json_get "$output" .message) == *"agents/alice/installed-packages.json"* ]]
	[[ $(json_get "$output" .hint) == *"sbx install reconcile"* ]]
	# Refused before anything ran: the registry saw no request.
	[ ! -s "$REG_LOG" ]
	run -0 sbx install reconcile --json --agent alice
	echo "$output"
	[[ $(json_get "$output" '.warnings[0]') == *"was damaged: rebuilt"* ]]
	[ "$(manifest alice | jq -c .pip)" = '["sbxpy-hello"]' ]
	[ -f "$m.damaged" ]
	run -0 sbx install list --agent alice
}
