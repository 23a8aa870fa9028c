#!/bin/bash
# 0020-readme.sh: the README's commands work as written.  TAP.
# sbx-test: unprivileged
#
# Every fenced block of README.md is one test, in order, against one fresh
# state root and a scratch working directory with the files the examples
# name (a Makefile, a project, a root file system tarball):
#
#   ```sh       run as a bash script with `set -e`: every command must
#               succeed (a comment on the line is fine);
#   ```console  a transcript: each `$ COMMAND` line is run, and each line
#               printed below it in the README must appear in what the
#               command printed (stdout and stderr);
#   ```yaml     the `run:` commands of a CI step, run as an sh block;
#               the files an upload step's `path:` names must then exist
#               (the artifacts the pipeline keeps);
#   ```json     an example of output, not a command: skipped, and said so.
#
# A line `<!-- readme-test: skip REASON -->` right before a block marks it
# illustrative only: it is skipped with that reason printed.  A line
# `<!-- readme-test: root REASON -->` runs it only as root (skipped with
# the reason otherwise); `<!-- readme-test: network REASON -->` only where
# the network world below could be made (root, a mount namespace);
# `<!-- readme-test: dns REASON -->` wherever the test's DNS stub runs.  The network examples reach README names such as
# example.org only through the proxy's test DNS stub, which maps every
# name to a loopback server of this test; nothing else is ever dialled.
set -u
cd "$(dirname "$0")/../.." || exit 1
top=$PWD
SBX_TEST_BUILD=${SBX_TEST_BUILD:-$top/build}

# As root the whole file runs in a mount namespace of its own, where the
# test CA is added to the system bundle (a bind mount over it, gone with
# the namespace): the README's https examples then work as written, as
# they do for a user whose host trusts the server, and the host's bundle
# is never touched.
# A network namespace of its own too: its loopback's port 443 is ours,
# whatever other tests bind on the host's.
if [ "$(id -u)" -eq 0 ] && [ -z "${SBX_README_NS:-}" ] &&
    command -v unshare >/dev/null 2>&1 &&
    unshare -m -n --propagation private true 2>/dev/null; then
	SBX_README_NS=1 exec unshare -m -n --propagation private bash "$0" "$@"
fi
[ -n "${SBX_README_NS:-}" ] && ip link set lo up 2>/dev/null

tmp=$(mktemp -d "${SBX_TEST_TMPDIR:-/tmp}/0020-readme.XXXXXX") || exit 1
chmod 0755 "$tmp"
pids=""
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	SBX_HOME="$tmp/state" "$SBX_TEST_BUILD/bin/sbx" proxy stop >/dev/null 2>&1
	chmod -R u+rwX "$tmp" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# The blocks, one file each: N.kind, and N.mark for a marker.
python3 - "$top/README.md" "$tmp/blocks" <<'EOF'
import os, re, sys
src, out = sys.argv[1], sys.argv[2]
os.makedirs(out)
lines = open(src).read().split("\n")
n, i, mark, heading = 0, 0, None, ""
while i < len(lines):
    l = lines[i]
    if l.startswith("#"):
        heading = l.lstrip("#").strip()
    m = re.match(r"<!-- readme-test: (skip|root|network|dns) (.*?) -->$", l)
    if m:
        mark = (m.group(1), m.group(2))
    f = re.match(r"```(\w*)$", l)
    if f:
        kind = f.group(1) or "text"
        body = []
        i += 1
        while i < len(lines) and lines[i] != "```":
            body.append(lines[i])
            i += 1
        n += 1
        base = os.path.join(out, "%02d" % n)
        open(base + "." + kind, "w").write("\n".join(body) + "\n")
        open(base + ".where", "w").write("%s (line %d)" % (heading, i - len(body)))
        if mark:
            open(base + ".mark", "w").write("%s %s" % mark)
        mark = None
    elif l.strip() and not l.startswith("<!--"):
        mark = None if not m else mark
    i += 1
EOF

# The scratch world the examples run in.
work=$tmp/work
export HOME=$tmp/home
export SBX_HOME=$tmp/state
# The per-agent uids example: a registry of the run's own, never the
# host's /var/lib/sbx-identities.
export SBX_IDENTITY_REGISTRY=$tmp/identities
export SBX_EXEC_PATH=$SBX_TEST_BUILD/libexec/sbx
unset SBX_AGENT SBX_JSON
# As root, `sbx provision` would create the system user sbx on this machine.
export SBX_NO_CREATE_USER=1
mkdir -p "$work" "$HOME/project" "$tmp/bin"
chmod 0755 "$HOME" "$HOME/project" "$work"
ln -s "$SBX_TEST_BUILD/bin/sbx" "$tmp/bin/sbx"
export PATH="$tmp/bin:$PATH"
printf 'test:\n\t@echo tests passed\n' >"$work/Makefile"
# shellcheck disable=SC2016 # make's variable, not the shell's
printf 'all:\n\t@echo built in $(CURDIR)\n' >"$HOME/project/Makefile"
# A tiny root file system: busybox and the /etc files sbx binds over.
if [ -x /bin/busybox ]; then
	r=$tmp/rootfs
	mkdir -p "$r/bin" "$r/etc" "$r/tmp" "$r/usr"
	cp /bin/busybox "$r/bin/"
	for c in sh ls cat echo true; do ln -s busybox "$r/bin/$c"; done
	for f in passwd group hosts resolv.conf nsswitch.conf; do : >"$r/etc/$f"; done
	tar -C "$r" -cf - . | zstd -q -o "$work/rootfs.tar.zst" 2>/dev/null ||
	    tar -C "$r" -cf "$work/rootfs.tar" .
fi

# The network world: every name the README's network examples use resolves,
# through the proxy's test DNS stub, to this machine's loopback servers
# (an https server on 127.0.0.1:443), except registry.npmjs.org and
# npm.corp.example, which resolve to private addresses that are never
# dialled (the examples show their refusal).  Loopback is allowed for the README names only through
# proxy.allowed_cidrs of config/sandbox.json, as a company allows its mirror.
net_ready=""
dns_ready=""
# The DNS stub and config/sandbox.json: enough for `sbx proxy check`.
dns_world() {
	local d=$tmp/net
	mkdir -p "$d"
	"$SBX_TEST_BUILD/tests/helpers/dns-stub" -l 127.0.0.1:0 -o "$d/dns.log" \
	    -a www.example.org=127.0.0.1 -a example.org=127.0.0.1 \
	    -a example.com=127.0.0.1 -a registry.npmjs.org=10.20.0.7 \
	    -a npm.corp.example=10.30.0.9 \
	    >"$d/dns.port" 2>"$d/dns.err" 3>&- &
	pids="$pids $!"
	for _ in $(seq 100); do
		[ -s "$d/dns.port" ] && break
		sleep 0.05
	done
	[ -s "$d/dns.port" ] || return 1
	mkdir -p "$SBX_HOME/config"
	jq -n --arg dns "127.0.0.1:$(head -1 "$d/dns.port")" \
	    '{proxy: {dns_server: $dns, allowed_cidrs: ["127.0.0.1/32"]}}' \
	    >"$SBX_HOME/config/sandbox.json"
}
# The https server on 127.0.0.1:443 and the test CA in the system bundle:
# root, in the file's own namespaces.
net_world() {
	local d=$tmp/net o
	[ -n "${SBX_README_NS:-}" ] || return 1
	o=$(command -v openssl) || return 1
	mkdir -p "$d/www"
	"$o" req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	    -keyout "$d/ca.key" -out "$d/ca.pem" -days 2 -subj "/CN=sbx readme CA" \
	    -addext "basicConstraints=critical,CA:TRUE" \
	    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null || return 1
	"$o" req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	    -keyout "$d/srv.key" -out "$d/srv.csr" -subj "/CN=www.example.org" \
	    2>/dev/null || return 1
	printf '%s\n' "basicConstraints=CA:FALSE" "extendedKeyUsage=serverAuth" \
	    "subjectAltName=DNS:www.example.org,DNS:example.org,DNS:example.com" >"$d/ext"
	"$o" x509 -req -in "$d/srv.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" \
	    -CAcreateserial -out "$d/srv.pem" -days 2 -extfile "$d/ext" \
	    2>/dev/null || return 1
	cat /etc/ssl/certs/ca-certificates.crt "$d/ca.pem" >"$d/bundle.crt" || return 1
	mount --bind "$d/bundle.crt" /etc/ssl/certs/ca-certificates.crt || return 1
	head -c 4096 /dev/urandom >"$d/www/x.tar.gz"
	chmod -R a+rX "$d"
	(cd "$d/www" && exec "$o" s_server -accept 127.0.0.1:443 -cert "$d/srv.pem" \
	    -key "$d/srv.key" -WWW) >"$d/tls.out" 2>&1 3>&- &
	pids="$pids $!"
	for _ in $(seq 100); do
		grep -q ACCEPT "$d/tls.out" 2>/dev/null && break
		sleep 0.05
	done
	grep -q ACCEPT "$d/tls.out"
}
if dns_world; then
	dns_ready=1
	net_world && net_ready=1
fi
chmod -R a+rX "$tmp"

n=0
failures=0
total=$(find "$tmp/blocks" -name '*.where' | wc -l)
echo "1..$total"
for where in "$tmp"/blocks/*.where; do
	base=${where%.where}
	n=$((n + 1))
	w=$(cat "$where")
	body=""
	for f in "$base".*; do
		case "$f" in *.where|*.mark) ;; *) body=$f; break ;; esac
	done
	kind=${body##*.}
	mark=""
	[ -e "$base.mark" ] && mark=$(cat "$base.mark")
	case "$mark" in
	skip\ *) echo "ok $n - $w # skip ${mark#skip }"; continue ;;
	root\ *)
		if [ "$(id -u)" -ne 0 ]; then
			echo "ok $n - $w # skip ${mark#root } (needs root)"
			continue
		fi ;;
	dns\ *)
		if [ -z "$dns_ready" ]; then
			echo "ok $n - $w # skip ${mark#dns } (the DNS stub did not start)"
			continue
		fi ;;
	network\ *)
		if [ -z "$net_ready" ]; then
			echo "ok $n - $w # skip ${mark#network } (needs root and a mount namespace for port 443 and the test CA)"
			continue
		fi ;;
	esac
	out=$tmp/out.$n
	case "$kind" in
	json|text)
		echo "ok $n - $w # skip an example of output, not a command"
		continue ;;
	sh)
		(cd "$work" && bash -e -o pipefail "$body") >"$out" 2>&1
		rc=$? ;;
	yaml)
		# Each `run:` of the steps: `run: CMD`, or `run: |` and the
		# lines indented below it.  A block that yields no command is
		# a failure, not an empty script that passes.
		python3 - "$body" "$body.paths" >"$body.sh" <<'EOF'
import re, sys
out, paths, lines = [], [], open(sys.argv[1]).read().split("\n")
i = 0
while i < len(lines):
    m = re.match(r"^(\s*)(?:- )?(run|path):\s*(.*)$", lines[i])
    i += 1
    if not m:
        continue
    dest = out if m.group(2) == "run" else paths
    if m.group(3) not in ("|", "|-", ">"):
        dest.append(m.group(3))
        continue
    ind = len(m.group(1))
    while i < len(lines) and (not lines[i].strip() or
            len(lines[i]) - len(lines[i].lstrip()) > ind):
        if lines[i].strip():
            dest.append(lines[i].strip())
        i += 1
print("\n".join(out))
open(sys.argv[2], "w").write("".join(p + "\n" for p in paths))
EOF
		if grep -q . "$body.sh"; then
			(cd "$work" && bash -e -o pipefail "$body.sh") >"$out" 2>&1
			rc=$?
			while IFS= read -r f; do
				[ -e "$work/$f" ] && continue
				echo "# the step's artifact $f was not written" >>"$out"
				rc=1
			done <"$body.paths"
		else
			echo "no run: command found in the block" >"$out"
			rc=1
		fi ;;
	console)
		rc=0
		: >"$out"
		# Commands and the lines each must print.
		python3 - "$body" "$tmp/steps.$n" <<'EOF'
import json, sys
steps, cur = [], None
for l in open(sys.argv[1]).read().split("\n"):
    if l.startswith("$ "):
        cur = {"cmd": l[2:], "want": []}
        steps.append(cur)
    elif cur is not None and l.strip():
        cur["want"].append(l.rstrip())
json.dump(steps, open(sys.argv[2], "w"))
EOF
		nsteps=$(jq length "$tmp/steps.$n")
		for ((s = 0; s < nsteps; s++)); do
			cmd=$(jq -r ".[$s].cmd" "$tmp/steps.$n")
			got=$(cd "$work" && bash -c "$cmd" 2>&1)
			printf '$ %s\n%s\n' "$cmd" "$got" >>"$out"
			while IFS= read -r want; do
				[ -z "$want" ] && continue
				if ! printf '%s\n' "$got" | grep -qF -- "$want"; then
					printf '# missing: %s\n' "$want" >>"$out"
					rc=1
				fi
			done < <(jq -r ".[$s].want[]" "$tmp/steps.$n")
		done ;;
	*)
		echo "ok $n - $w # skip a block of kind $kind"
		continue ;;
	esac
	if [ "$rc" -eq 0 ]; then
		echo "ok $n - $w"
	else
		failures=$((failures + 1))
		echo "not ok $n - $w (exit $rc)"
		sed 's/^/#   /' "$out" | tail -40
	fi
done
exit $((failures > 0))
