#!/usr/bin/env bats
# sbx install (issue 15): validation, the npm and pip managers in the
# agent's sandbox against a loopback registry, transient failures (one
# cleanup, one retry), failure classes, locks, the manifest.
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

# --- validation: before anything runs ----------------------------------------

@test "every refused name: invalid_args, field packages[i], a reason; nothing is created" {
	# The state root does not exist: validation comes first.
	while read -r mgr spec reason; do
		run sbx install --json --manager "$mgr" -- jq "$spec"
		echo "$mgr $spec: $output"
		status_is_kind
		[ "$(json_get "$output" .kind)" = invalid_args ]
		[ "$(json_get "$output" .field)" = "packages[1]" ]
		[ "$(json_get "$output" .reason)" = "$reason" ]
	done <<'EOF'
apt -oDpkg::Pre-Invoke=x option_like
apt jq- action_suffix
apt ./x.deb url_not_allowed
apt Jq invalid_name
apt jq=$(id) invalid_version
pip -e option_like
pip git+https://x/y.git url_not_allowed
pip foo;python_version<'3' markers_not_supported
pip foo>= invalid_version
npm --ignore-scripts=false option_like
npm git+ssh://git@x/y.git url_not_allowed
npm file:../x url_not_allowed
npm user/repo url_not_allowed
npm x@$(id) invalid_version
EOF
	run sbx install --json --manager npm -- "$(printf 'a\tb')"
	[ "$(json_get "$output" .reason)" = control_character ]
	run sbx install --json --manager npm -- "$(head -c 257 /dev/zero | tr '\0' a)"
	[ "$(json_get "$output" .reason)" = too_long ]
	# shellcheck disable=SC2046
	run sbx install --json --manager npm -- $(seq -f 'p%g' 33)
	[ "$(json_get "$output" .reason)" = too_many_packages ]
	[ "$(json_get "$output" .field)" = packages ]
	[ ! -e "$SBX_HOME" ]
}

@test "usage: --manager is needed, an unknown manager is bad input" {
	run -64 sbx install jq
	[[ $output == *"--manager"* ]]
	run sbx install --json --manager apk jq
	status_is_kind
	[ "$(json_get "$output" .reason)" = unknown_manager ]
	run -0 sbx install --help
	[[ $output == *"sbx install list"* ]]
}

@test "list and reconcile refuse install's options, by name; --complete-options per subcommand" {
	run -64 sbx install list --json --timeout 5
	[ "$(json_get "$output" .reason)" = not_for_subcommand ]
	[ "$(json_get "$output" .field)" = --timeout ]
	run -64 sbx install reconcile --allow-url
	[[ $output == *"--allow-url"*"does not go with sbx install reconcile"* ]]
	run -0 sbx install --complete-options list
	[[ $output == *"--agent"* && $output != *"--manager"* ]]
	run -0 sbx install --complete-options
	[[ $output == *"--manager"*"apt|pip|npm"* ]]
	[ ! -e "$SBX_HOME/agents" ]
}

@test "an agent that is not provisioned, and one that was unprovisioned" {
	run sbx install --json --manager npm is-number
	status_is_kind
	[ "$(json_get "$output" .reason)" = not_provisioned ]
	run -0 sbx provision --agent alice -q
	run sbx install --json --agent bob --manager npm is-number
	status_is_kind
	[ "$(json_get "$output" .reason)" = agent_not_provisioned ]
	run -0 sbx provision unprovision --agent alice -q
	run sbx install --json --agent alice --manager npm is-number
	status_is_kind
	[ "$(json_get "$output" .reason)" = agent_unprovisioned ]
}

@test "apt without the agent's own root filesystem copy: rejected, with the provision command" {
	run -0 sbx provision --agent alice -q
	run sbx install --json --agent alice --manager apt jq
	echo "$output"
	status_is_kind
	[ "$(json_get "$output" .kind)" = rejected ]
	[ "$(json_get "$output" .reason)" = no_writable_rootfs ]
	[[ $(json_get "$output" .hint) == *"sbx provision --agent alice"*"--own-rootfs"* ]]
}

# --- npm and pip against the loopback registry --------------------------------

@test "npm: installs into ~/.sbx/node_workspace, the next sbx exec runs it, the manifest has it" {
	need_install_tools
	install_world
	run -0 sbx install --json --agent alice --manager npm sbx-hello@1
	echo "$output"
	[ "$(json_get "$output" .result.manager)" = npm ]
	[ "$(json_get "$output" '.result.installed | join(",")')" = sbx-hello ]
	[ "$(json_get "$output" .result.retried)" = false ]
	[ "$(json_get "$output" .result.exit_code)" = 0 ]
	[ "$(json_get "$output" '.result.duration_ms > 0')" = true ]
	[ -f "$(ahome alice)/.sbx/node_workspace/package.json" ]
	run -0 sbx exec --agent alice -- sbx-hello
	[ "$output" = "hello from sbx-hello" ]
	# require() finds it from anywhere (NODE_PATH).
	run -0 sbx exec --agent alice -- node -e 'console.log(require("sbx-hello")())'
	[ "$output" = "hello from sbx-hello" ]
	[ "$(manifest alice | jq -c .)" = '{"apt":[],"npm":["sbx-hello"],"pip":[]}' ]
	# Nothing of the caller's changed: npm ran in the sandbox, as the
	# agent, with the agent's home.
	[ ! -e "$HOME/.npm" ] && [ ! -e "$HOME/.sbx" ]
	[ "$(stat -c %u "$(ahome alice)/.sbx/node_workspace/node_modules")" = "$(sandbox_uid)" ]
	# Installed again: one entry still; list shows it.
	run -0 sbx install -q --agent alice --manager npm sbx-hello
	[ "$(manifest alice | jq -c .npm)" = '["sbx-hello"]' ]
	run -0 sbx install list --agent alice
	[ "$output" = "$(printf 'npm\tsbx-hello')" ]
	# The proxy token never reaches the log tail (nor the envelope).
	tok=$(cat "$SBX_HOME/run/tokens/alice" 2>/dev/null || true)
	if [ -n "$tok" ]; then
		run -0 sbx install --json --agent alice --manager npm sbx-hello
		[[ $output != *"$tok"* ]]
	fi
}

@test "npm in transparent mode: the manager's output streams to stderr, stdout says what was done" {
	need_install_tools
	install_world
	run --separate-stderr -0 sbx install --agent alice --manager npm sbx-hello
	echo "out: $output"
	echo "err: $stderr"
	[ "$output" = "installed with npm: 1 package" ]
	[[ $stderr == *"added 1 package"* ]]
}

@test "pip: a venv in ~/.venv, first on PATH with VIRTUAL_ENV in later runs" {
	need_install_tools
	install_world
	run -0 sbx install --json --agent alice --manager pip sbxpy-hello 'sbxpy-dep>=2'
	echo "$output"
	[ "$(json_get "$output" '.result.installed | join(",")')" = sbxpy-hello,sbxpy-dep ]
	run -0 sbx exec --agent alice -- sbxpy_hello-hello
	[ "$output" = "hello from sbxpy-hello" ]
	run -0 sbx exec --agent alice -- sh -c 'echo "$VIRTUAL_ENV"; command -v python'
	[ "${lines[0]}" = /workspace/agents/alice/.venv ]
	[ "${lines[1]}" = /workspace/agents/alice/.venv/bin/python ]
	[ "$(manifest alice | jq -c .pip)" = '["sbxpy-dep","sbxpy-hello"]' ]
	# reconcile rebuilds it from pip list and npm ls.
	echo '{"apt":[],"npm":["ghost"],"pip":[]}' > "$SBX_HOME/agents/alice/installed-packages.json"
	run -0 sbx install reconcile --json --agent alice
	echo "$output"
	[ "$(manifest alice | jq -c .)" = '{"apt":[],"npm":[],"pip":["sbxpy-dep","sbxpy-hello"]}' ]
	# A package that is not in the index: classified, not retried.
	run sbx install --json --agent alice --manager pip nope-nothing
	status_is_kind
	[ "$(json_get "$output" .reason)" = package_not_found ]
	[ "$(json_get "$output" .retried)" = null ]
}

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
	# (stalled) request fails at once with the signature.
	h=$(ahome alice)
	mkdir -p "$h/.config/pip"
	printf '[global]\ntimeout = 1\nretries = 0\n' > "$h/.config/pip/pip.conf"
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
