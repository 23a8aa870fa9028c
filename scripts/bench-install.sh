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
# 3. apt, from a loopback apt repository (the same server), into a small
#    Debian root made of the host's own apt and dpkg
#    (tests/integration/install-aptroot.bash): `sbx install --manager apt`
#    into the agent's own copy against the bare apt-get (update, install)
#    in a plain bwrap over another copy of the same root, as uid 0 of a
#    user namespace of uid 65533, with no proxy and no seccomp.  A new
#    package each run (sbx-bN), so neither side finds it installed.
# 4. The copy's ownership walk (handing it to the sandbox uid) on the
#    first apt install, which every apt install paid before the copy's
#    stamp, and on the later ones.
#
# Only 127.0.0.1 is contacted (npm.sbx.test is mapped to it by the agent's
# `resolve` override); everything runs under a fresh state root in a
# temporary directory, bounded in count, and is removed at the end.
# Needs root (the registry runs as uid 65533), npm, /usr/bin/python3, and
# for the apt figures apt-get, dpkg-deb and dpkg-scanpackages (skipped,
# said, without them).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
B=${B:-build}
RUNS=${RUNS:-5}
PY=/usr/bin/python3
# The registry's uid: not root (nor nobody, the unprivileged tests' user).
REG_UID=65533
[ "$(id -u)" -eq 0 ] || { echo "bench-install: needs root (the registry runs as uid 65533)"; exit 69; }
bench_need bench-install npm jq
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
median() { bench_median 1000 %.0f; }

sbx_install	# warm: the proxy starts, caches fill
: > "$tmp/t.host"; : > "$tmp/t.sbx"; : > "$tmp/t.bare"
for _ in $(seq "$RUNS"); do
	time_of host_npm >> "$tmp/t.host"
	time_of sbx_install >> "$tmp/t.sbx"
	time_of bare_in_sandbox >> "$tmp/t.bare"
done

# --- apt -------------------------------------------------------------------
apt_ok=1
for t in apt-get dpkg-deb dpkg-scanpackages bwrap; do
	command -v "$t" >/dev/null || { apt_ok=0; apt_why="$t is not installed"; }
done
if [ "$apt_ok" = 1 ]; then
	repo=$reg/apt
	mkdir -p "$repo/pool"
	for i in $(seq 0 "$RUNS"); do
		d=$tmp/deb/sbx-b$i
		mkdir -p "$d/DEBIAN" "$d/usr/bin"
		printf 'Package: sbx-b%s\nVersion: 1.0\nArchitecture: all\nMaintainer: sbx <b@sbx.test>\nDescription: bench\n' \
		    "$i" > "$d/DEBIAN/control"
		printf '#!/bin/sh\necho b%s\n' "$i" > "$d/usr/bin/sbx-b$i"
		chmod 0755 "$d/usr/bin/sbx-b$i"
		dpkg-deb --root-owner-group --build "$d" "$repo/pool/sbx-b${i}_1.0_all.deb" >/dev/null
	done
	(cd "$repo" && dpkg-scanpackages pool /dev/null 2>/dev/null > Packages &&
	    { printf 'Origin: sbx\nLabel: sbx\nSuite: stable\nCodename: sbx\nArchitectures: all amd64\nSHA256:\n'
	      printf ' %s %s Packages\n' "$(sha256sum Packages | cut -d' ' -f1)" "$(stat -c %s Packages)"; } > Release)
	chmod -R a+rX "$reg"
	sh tests/integration/install-aptroot.bash "$tmp/aroot" >/dev/null
	echo "deb [trusted=yes] http://apt.sbx.test:$port/apt/ ./" > "$tmp/aroot/etc/apt/sources.list"
	tar -C "$tmp/aroot" -cf "$tmp/aroot.tar" .
	"$SBX" provision image add "$tmp/aroot.tar" --name benchdeb -q \
	    --sha256 "$(sha256sum "$tmp/aroot.tar" | cut -d' ' -f1)"
	"$SBX" provision --agent abench --image benchdeb --own-rootfs -q
	jq -n --argjson port "$port" '{allow_private: true, allowed_ports: [80, 443, $port],
	    resolve: {"apt.sbx.test": "127.0.0.1"}}' > "$SBX_HOME/config/agents/abench.json"
	# The bare side: another copy, the registry by address, uid 65533.
	echo "deb [trusted=yes] http://127.0.0.1:$port/apt/ ./" > "$tmp/aroot/etc/apt/sources.list"
	chown -R "$REG_UID:$REG_UID" "$tmp/aroot"
	# shellcheck disable=SC2016 # $1 and $o are the inner shell's
	bare_apt() {
		setpriv --reuid "$REG_UID" --regid "$REG_UID" --clear-groups \
		    bwrap --unshare-user --uid 0 --gid 0 --unshare-pid --die-with-parent \
		    --bind "$tmp/aroot" / --proc /proc --dev /dev --tmpfs /run --tmpfs /tmp \
		    -- /bin/sh -c 'export DEBIAN_FRONTEND=noninteractive
		    o="-o APT::Sandbox::User=root -o quiet=1 -o Dpkg::Use-Pty=0"
		    apt-get $o update && apt-get $o install -y --no-install-recommends -- "$1"' \
		    sh "$1" >/dev/null 2>&1
	}
	sbx_apt() { "$SBX" install -q --agent abench --manager apt "$1" >/dev/null 2>&1; }
	# The first install walks the copy (and warms the proxy): timed.
	walk1=$("$SBX" install -v --agent abench --manager apt sbx-b0 2>&1 >/dev/null |
	    sed -n 's/.*the copy.s owners: walked (\([0-9]*\) ms).*/\1/p')
	bare_apt sbx-b0
	: > "$tmp/t.abare"; : > "$tmp/t.asbx"; : > "$tmp/t.walk"
	for i in $(seq 1 "$RUNS"); do
		time_of bare_apt "sbx-b$i" >> "$tmp/t.abare"
		t0=$(now)
		"$SBX" install -v --agent abench --manager apt "sbx-b$i" 2>"$tmp/v.err" >/dev/null
		awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.4f\n", b - a }' >> "$tmp/t.asbx"
		sed -n 's/.*the copy.s owners: .*(\([0-9]*\) ms).*/\1/p' "$tmp/v.err" |
		    awk '{ printf "%.4f\n", $1 / 1000 }' >> "$tmp/t.walk"
	done
	"$SBX" exec --agent abench -- "sbx-b$RUNS" | grep -qx "b$RUNS" ||
	    { echo "bench-install: sbx-b$RUNS did not run in the next exec"; exit 70; }
	files=$(find "$SBX_HOME/envs/abench/rootfs" | wc -l)
fi

row() { printf '%-44s %8s\n' "$1" "$2"; }
h=$(median < "$tmp/t.host")
s=$(median < "$tmp/t.sbx")
b=$(median < "$tmp/t.bare")
row "npm install sbx-hello, median of $RUNS" "ms"
row "host npm (no sandbox, no proxy)" "$h"
row "sbx exec -- npm install (bare, proxy)" "$b"
row "sbx install --manager npm" "$s"
awk -v s="$s" -v h="$h" -v b="$b" 'BEGIN {
	printf "%-44s %8.2fx\n", "sbx install / host npm", s / h
	printf "%-44s %8d\n", "sbx install overhead over bare (ms)", s - b }'
if [ "$apt_ok" = 1 ]; then
	ab=$(median < "$tmp/t.abare")
	as=$(median < "$tmp/t.asbx")
	aw=$(median < "$tmp/t.walk")
	row "apt-get install sbx-bN (local repo), median" "ms"
	row "bare apt-get in bwrap (no proxy, no seccomp)" "$ab"
	row "sbx install --manager apt" "$as"
	awk -v s="$as" -v b="$ab" 'BEGIN {
		printf "%-44s %8.2fx\n", "sbx install apt / bare apt-get", s / b
		printf "%-44s %8d\n", "sbx install apt overhead over bare (ms)", s - b }'
	row "copy ownership walk, first install ($files files)" "${walk1:-?}"
	row "copy ownership check, later installs (stamp)" "$aw"
else
	echo "apt figures skipped: $apt_why"
fi
