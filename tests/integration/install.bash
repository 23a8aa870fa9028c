# install.bash: fixtures for the sbx install tests (1000-install.bats),
# loaded after lib.bash and proxy.bash (whose teardown stops the proxy
# and every server in SERVER_PIDS).
#
# One loopback registry (install-registry.py, run as uid 65533 with
# /usr/bin/python3) serves both a static npm registry (packuments and
# tarballs made at test time with tar) and a PEP 503 simple index (wheels
# made with zipfile by install-wheel.py).  The sandbox reaches it as
# npm.sbx.test and pypi.sbx.test: names only the agent's `resolve`
# overrides (with allow_private) map to 127.0.0.1.  Nothing else is ever
# contacted.
#
#   install_world [FAIL_SPEC] [AGENT...]   registry, agents (default alice)
#   start_registry [FAIL_SPEC]             the server alone -> REG_PORT
#   npm_requests NAME                      GETs of NAME's packument so far
# shellcheck shell=bash
# shellcheck disable=SC2034,SC2154  # variables shared with bats and the .bats file

INSTALL_DIR=$BATS_TEST_DIRNAME
# The registry's uid: not root, and not nobody either, whose listening
# sockets the unprivileged pass of 0600-proxy.bats counts as its own.
REG_UID=65533

need_install_tools() {
	[ -x "$PY" ] || skip "/usr/bin/python3 is not installed"
	command -v npm >/dev/null 2>&1 || skip "npm is not installed"
	! is_root || command -v setpriv >/dev/null 2>&1 ||
	    skip "setpriv is not installed"
}

# as_server CMD... &: a test server, as uid 65533 when we are root (never
# root, nor nobody: see REG_UID), else as ourselves.  Run in the
# background only: it execs, so that $! is the server (which teardown
# kills), not a subshell around it.
as_server() {
	if is_root; then
		exec setpriv --reuid "$REG_UID" --regid "$REG_UID" \
		    --clear-groups "$@"
	fi
	exec "$@"
}

# server_script DIR: a copy of install-registry.py in DIR (which the
# server's uid can traverse), printed.  The server never runs the
# checkout's own file: a clone in root's home or in a `mktemp -d`
# directory is closed to uid 65533, and python3 could not even open it.
server_script() {
	install -m 0644 "$INSTALL_DIR/install-registry.py" \
	    "$1/install-registry.py" || return 1
	printf '%s\n' "$1/install-registry.py"
}

# An npm package sbx-hello (a module and a bin) and its tarball.
make_npm_package() {
	local d=$1 name=$2 ver=$3
	mkdir -p "$d/package"
	printf '{"name":"%s","version":"%s","main":"index.js","bin":{"%s":"bin.js"}}\n' \
	    "$name" "$ver" "$name" > "$d/package/package.json"
	printf 'module.exports = () => "hello from %s";\n' "$name" \
	    > "$d/package/index.js"
	printf '#!/usr/bin/env node\nconsole.log(require("./index.js")());\n' \
	    > "$d/package/bin.js"
	chmod 0755 "$d/package/bin.js"
	tar -czf "$d/$name-$ver.tgz" -C "$d" package
	rm -rf "$d/package"
}

# start_registry [FAIL_SPEC]: the server on a free port (REG_PORT), its
# files under $REG, its requests in $REG_LOG.
start_registry() {
	local spec=${1:-} script
	REG=$TEST_ROOT/reg
	REG_LOG=$TEST_ROOT/requests.log
	# The packages are the same for every test of a file: made once
	# (two python3 starts and a tar), copied for each test.
	local tpl=${BATS_FILE_TMPDIR:-$TEST_ROOT}/reg-template
	if [ ! -d "$tpl" ]; then
		mkdir -p "$tpl.new/tarballs"
		make_npm_package "$tpl.new/tarballs" sbx-hello 1.0.0
		"$PY" "$INSTALL_DIR/install-wheel.py" "$tpl.new" sbxpy-hello 1.0
		"$PY" "$INSTALL_DIR/install-wheel.py" "$tpl.new" sbxpy-dep 2.0
		mv "$tpl.new" "$tpl"
	fi
	mkdir -p "$REG"
	cp -a "$tpl/." "$REG/"
	: > "$REG_LOG"
	chmod 0666 "$REG_LOG"
	chmod -R a+rX "$REG"
	script=$(server_script "$TEST_ROOT") || return 1
	as_server "$PY" "$script" "$REG" "$REG_LOG" $spec \
	    > "$TEST_ROOT/reg.port" 2> "$TEST_ROOT/reg.err" 3>&- &
	SERVER_PIDS+=("$!")
	REG_PORT=$(wait_line "$TEST_ROOT/reg.port") ||
	    { cat "$TEST_ROOT/reg.err" >&2; return 1; }
	# The packument names its tarball by URL: written once the port is
	# known.
	"$PY" - "$REG" "$REG_PORT" <<'EOF'
import base64, hashlib, json, sys
reg, port = sys.argv[1], sys.argv[2]
d = open(reg + "/tarballs/sbx-hello-1.0.0.tgz", "rb").read()
v = {"name": "sbx-hello", "version": "1.0.0", "bin": {"sbx-hello": "bin.js"},
     "dist": {"tarball": "http://npm.sbx.test:%s/tarballs/sbx-hello-1.0.0.tgz" % port,
              "shasum": hashlib.sha1(d).hexdigest(),
              "integrity": "sha512-" + base64.b64encode(hashlib.sha512(d).digest()).decode()}}
json.dump({"name": "sbx-hello", "dist-tags": {"latest": "1.0.0"},
           "versions": {"1.0.0": v}}, open(reg + "/sbx-hello", "w"))
EOF
	chmod -R a+rX "$REG"
}

# install_agent A [JSON]: provisioned, its registries resolved to the
# loopback server, the server's port allowed (JSON replaces keys).
install_agent() {
	local a=$1 extra=${2:-"{}"}
	"$SBX" provision --agent "$a" -q || return 1
	mkdir -p "$SBX_HOME/config/agents"
	json_merge '{"allow_private":true,
	    "allowed_ports":[80,443,'"$((REG_PORT))"'],
	    "resolve":{"npm.sbx.test":"127.0.0.1",
	        "pypi.sbx.test":"127.0.0.1"}}' "$extra" \
	    > "$SBX_HOME/config/agents/$a.json"
}

# install_world [FAIL_SPEC] [AGENT...]
install_world() {
	local spec=${1:-} a
	shift || true
	start_registry "$spec" || return 1
	mkdir -p "$SBX_HOME/config"
	printf '%s\n' '{"proxy":{"idle_exit_s":120},
	    "install":{"registries":{
	        "npm":["http://npm.sbx.test:'"$((REG_PORT))"'/"],
	        "pip":["http://pypi.sbx.test:'"$((REG_PORT))"'/simple/"]}}}' \
	    > "$SBX_HOME/config/sandbox.json"
	[ $# -gt 0 ] || set -- alice
	for a in "$@"; do
		install_agent "$a" || return 1
	done
}

# npm_requests NAME: how many times the packument of NAME was fetched.
npm_requests() {
	grep -c "^GET /$1\$" "$REG_LOG" || true
}

manifest() { cat "$SBX_HOME/agents/$1/installed-packages.json"; }
