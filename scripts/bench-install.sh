#!/bin/bash
# bench-install.sh: what sbx install costs.
#
#   RUNS=5 scripts/bench-install.sh
#
# A loopback npm registry (tests/integration/install-registry.py, run as
# uid 65533) serves one small package, sbx-hello.  Each figure is the median
# of RUNS runs, alternating, each from an empty workspace and an empty npm
# cache:
#
# 1. `sbx install --manager npm sbx-hello` against `npm install sbx-hello`
#    on the host (no sandbox, no proxy): the ratio.
# 2. The fixed overhead of sbx install over the bare manager in the same
#    sandbox: `sbx install` against `sbx exec --network proxy
#    --allow-domain ... -- npm install ...` (what sbx install adds:
#    validation, the registry check, the lock, the manifest).
#
# Only 127.0.0.1 is contacted (npm.sbx.test is mapped to it by the agent's
# `resolve` override); everything runs under a fresh state root in a
# temporary directory, bounded in count, and is removed at the end.
# Needs root (the registry runs as uid 65533), npm and /usr/bin/python3.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${B:-build}
RUNS=${RUNS:-5}
PY=/usr/bin/python3
# The registry's uid: not root (nor nobody, the unprivileged tests' user).
REG_UID=65533
[ "$(id -u)" -eq 0 ] || { echo "bench-install: needs root (the registry runs as uid 65533)"; exit 69; }
command -v npm >/dev/null || { echo "bench-install: npm is not installed"; exit 69; }
command -v jq >/dev/null || { echo "bench-install: jq is not installed"; exit 69; }
[ -x "$PY" ] || { echo "bench-install: $PY is missing"; exit 69; }
BIN=$(cd "$B" && pwd)
SBX=$BIN/bin/sbx
[ -x "$BIN/libexec/sbx/sbx-install" ] || { echo "bench-install: sbx-install is not built (make)"; exit 69; }

tmp=$(mktemp -d /tmp/sbx-bench.XXXXXX)
chmod 0755 "$tmp"
export SBX_HOME="$tmp/state" SBX_EXEC_PATH="$BIN/libexec/sbx" SBX_NO_CREATE_USER=1
server=
cleanup() {
	[ -n "$server" ] && { kill -TERM "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }
	timeout 10 "$SBX" proxy stop >/dev/null 2>&1 || true
	chmod -R u+rwX "$tmp" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The package and the registry.
reg=$tmp/reg
mkdir -p "$reg/tarballs" "$tmp/pkg/package"
printf '{"name":"sbx-hello","version":"1.0.0","main":"index.js"}\n' > "$tmp/pkg/package/package.json"
echo 'module.exports = () => "hello";' > "$tmp/pkg/package/index.js"
tar -czf "$reg/tarballs/sbx-hello-1.0.0.tgz" -C "$tmp/pkg" package
: > "$tmp/requests.log"
chmod 0666 "$tmp/requests.log"
chmod -R a+rX "$reg"
setpriv --reuid "$REG_UID" --regid "$REG_UID" --clear-groups "$PY" \
    tests/integration/install-registry.py "$reg" "$tmp/requests.log" > "$tmp/port" &
server=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
port=$(head -n 1 "$tmp/port")
"$PY" - "$reg" "$port" <<'EOF'
import base64, hashlib, json, sys
reg, port = sys.argv[1], sys.argv[2]
d = open(reg + "/tarballs/sbx-hello-1.0.0.tgz", "rb").read()
v = {"name": "sbx-hello", "version": "1.0.0",
     "dist": {"tarball": "http://npm.sbx.test:%s/tarballs/sbx-hello-1.0.0.tgz" % port,
              "shasum": hashlib.sha1(d).hexdigest(),
              "integrity": "sha512-" + base64.b64encode(hashlib.sha512(d).digest()).decode()}}
json.dump({"name": "sbx-hello", "dist-tags": {"latest": "1.0.0"},
           "versions": {"1.0.0": v}}, open(reg + "/sbx-hello", "w"))
EOF
chmod -R a+rX "$reg"

"$SBX" provision --agent bench -q
mkdir -p "$SBX_HOME/config/agents"
jq -n --argjson port "$port" '{allow_private: true, allowed_ports: [80, 443, $port],
    resolve: {"npm.sbx.test": "127.0.0.1"}}' > "$SBX_HOME/config/agents/bench.json"
jq -n --argjson port "$port" '{install: {registries: {npm: ["http://npm.sbx.test:\($port)/"]}}}' \
    > "$SBX_HOME/config/sandbox.json"
home=$SBX_HOME/workspace/agents/bench

# The host's npm reaches the registry directly (127.0.0.1: no proxy;
# the tarball URL's host is replaced by the registry's).
host_npm() {
	rm -rf "$tmp/host" && mkdir -p "$tmp/host/ws" && cd "$tmp/host/ws" &&
	    printf '{"name":"w","private":true}\n' > package.json &&
	    HOME=$tmp/host npm install --no-audit --no-fund --no-update-notifier \
	    --registry "http://127.0.0.1:$port/" --replace-registry-host=always \
	    --cache "$tmp/host/cache" \
	    sbx-hello >/dev/null 2>&1
	cd - >/dev/null
}
fresh_agent() { rm -rf "$home/.sbx" "$home/.npm"; }
sbx_install() { fresh_agent; "$SBX" install -q --agent bench --manager npm sbx-hello >/dev/null 2>&1; }
bare_in_sandbox() {
	fresh_agent
	# shellcheck disable=SC2016 # $HOME is the sandbox's
	"$SBX" exec -q --agent bench --network proxy --allow-domain npm.sbx.test \
	    --env "npm_config_registry=http://npm.sbx.test:$port/" -- sh -c '
	    mkdir -p "$HOME/.sbx/node_workspace" && cd "$HOME/.sbx/node_workspace" &&
	    printf "{\"name\":\"w\",\"private\":true}\n" > package.json &&
	    exec npm install --no-audit --no-fund --no-update-notifier -- sbx-hello' >/dev/null 2>&1
}
now() { date +%s.%N; }
time_of() { local t0; t0=$(now); "$@"; awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.4f\n", b - a }'; }
median() { sort -g | awk '{a[NR]=$1} END {printf "%.0f", a[int((NR+1)/2)]*1000}'; }

sbx_install	# warm: the proxy starts, caches fill
: > "$tmp/t.host"; : > "$tmp/t.sbx"; : > "$tmp/t.bare"
for _ in $(seq "$RUNS"); do
	time_of host_npm >> "$tmp/t.host"
	time_of sbx_install >> "$tmp/t.sbx"
	time_of bare_in_sandbox >> "$tmp/t.bare"
done
h=$(median < "$tmp/t.host")
s=$(median < "$tmp/t.sbx")
b=$(median < "$tmp/t.bare")
printf '%-44s %8s\n' "npm install sbx-hello, median of $RUNS" "ms"
printf '%-44s %8s\n' "host npm (no sandbox, no proxy)" "$h"
printf '%-44s %8s\n' "sbx exec -- npm install (bare, proxy)" "$b"
printf '%-44s %8s\n' "sbx install --manager npm" "$s"
awk -v s="$s" -v h="$h" -v b="$b" 'BEGIN {
	printf "%-44s %8.2fx\n", "sbx install / host npm", s / h
	printf "%-44s %8d\n", "sbx install overhead over bare (ms)", s - b }'
