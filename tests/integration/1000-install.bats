#!/usr/bin/env bats
# sbx install (issue 15): validation, the npm and pip managers in the
# agent's sandbox against a loopback registry.  Failures, the network
# policy, locks and the manifest: 1001-install-failures.bats.
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

# --- the fixtures -------------------------------------------------------------

@test "the test registry starts from a checkout that its uid cannot traverse" {
	# make check from a clone in root's home or a `mktemp -d` directory:
	# uid 65533 cannot open the checkout's install-registry.py.
	is_root || skip "the registry runs as uid 65533 only when root"
	need_install_tools
	local priv=$TEST_ROOT/private
	mkdir -p "$priv/tests"
	chmod 0700 "$priv"
	cp "$INSTALL_DIR"/install-*.py "$priv/tests/"
	INSTALL_DIR=$priv/tests
	start_registry
	[ -n "$REG_PORT" ]
	run -0 "$PY" -c 'import sys, urllib.request
print(urllib.request.urlopen("http://127.0.0.1:%s/sbx-hello" % sys.argv[1]).read().decode())' "$REG_PORT"
	[[ "$output" == *'"name": "sbx-hello"'* ]]
}

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
