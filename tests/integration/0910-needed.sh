#!/bin/sh
# 0910-needed.sh: each program links only what it uses.  The NEEDED
# entries of every built program (readelf -d) must be exactly the expected
# list; sbx-preflight must not load libarchive (nor libxml2, ICU and
# libstdc++ behind it), not even for --deep; sbx-exec and the front-end are
# static and load nothing.  Emits TAP.
#
# Environment: SBX_TEST_BUILD or B, the build directory (default "build").
# sbx-test: unprivileged
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${SBX_TEST_BUILD:-${B:-build}}
case $B in
/*) bdir=$B ;;
*) bdir=$PWD/$B ;;
esac

n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; }
skip() { n=$((n + 1)); echo "ok $n # skip $1"; }
diag() { printf '# %s\n' "$@"; }
bail() { echo "1..0 # SKIP $1"; exit 0; }

command -v readelf >/dev/null 2>&1 || bail "readelf (binutils) is not installed"
[ -x "$bdir/bin/sbx" ] || bail "not built: make B=$B all"

# The expected NEEDED of each program, by library stem (libfoo.so.N ->
# libfoo), sorted.  A program not listed here fails: add it.
expected() {
	case $1 in
	sbx | sbx-exec | sbx-init | sbx-host) echo "" ;;
	sbx-bridge) echo "libc libcurl libjansson libmicrohttpd libsodium libsqlite3" ;;
	sbx-preflight) echo "libc libjansson libnettle libsodium" ;;
	sbx-provision) echo "libarchive libc libjansson libnettle libsodium" ;;
	# The proxy terminates TLS for credential rules (issue 34): OpenSSL.
	sbx-proxy) echo "libc libcares libcrypto libjansson libsodium libssl" ;;
	# The settings editor reads the proxy's settings (lib/net/proxycfg.c),
	# never its event loop or resolver: no c-ares.
	sbx-secret | sbx-file | sbx-config) echo "libc libjansson libsodium" ;;
	# sbx install and sbx plugin run sandboxes through the engine, which
	# only opens the CA bundle the proxy made (issue 34): no OpenSSL, in
	# them or in sbx-exec.
	sbx-install) echo "libc libcares libjansson libseccomp libsodium" ;;
	# The MCP server: jansson alone; the engine runs in its children.
	sbx-mcp) echo "libc libjansson" ;;
	# sbx srt maps srt's settings and runs sbx-exec: no engine, no proxy.
	sbx-srt) echo "libc libjansson libsodium" ;;
	# sbx plugin runs tools through the engine (seccomp); recipe URLs
	# load libcurl on demand (lib/image/download.c), never at start-up.
	sbx-plugin) echo "libc libjansson libseccomp libsodium" ;;
	# sbx session start builds the sandbox through the engine, as sbx
	# plugin does.
	sbx-session) echo "libc libjansson libseccomp libsodium" ;;
	*) echo "?" ;;
	esac
}

needed() {
	readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' |
	    sed 's/\.so.*//' | sort | tr '\n' ' ' | sed 's/ $//'
}

progs="$bdir/bin/sbx"
for p in "$bdir"/libexec/sbx/sbx-*; do
	[ -x "$p" ] && progs="$progs $p"
done

# Sanitizer builds link their runtimes into everything: nothing to check.
case " $(needed "$bdir/libexec/sbx/sbx-preflight") " in
*libasan* | *libubsan*) bail "sanitizer build: every program links its runtime" ;;
esac

for p in $progs; do
	name=${p##*/}
	want=$(expected "$name")
	got=$(needed "$p")
	if [ "$got" = "$want" ]; then
		ok "$name needs exactly: ${want:-nothing (static)}"
	else
		notok "$name needs exactly: ${want:-nothing (static)}"
		diag "got:  ${got:-nothing}" "want: $want"
	fi
done

# The libraries behind libarchive come in only through it; ldd shows the
# whole closure the loader would map.
if command -v ldd >/dev/null 2>&1; then
	closure=$(ldd "$bdir/libexec/sbx/sbx-preflight" 2>/dev/null)
	bad=$(printf '%s\n' "$closure" |
	    grep -oE 'lib(archive|xml2|icu[a-z]*|stdc\+\+|curl)[^ ]*' | sort -u |
	    tr '\n' ' ')
	if [ -z "$bad" ]; then
		ok "sbx-preflight maps no libarchive, libxml2, ICU, libstdc++, libcurl"
	else
		notok "sbx-preflight maps no libarchive, libxml2, ICU, libstdc++, libcurl"
		diag "mapped: $bad"
	fi
else
	skip "ldd is not installed"
fi

# libcurl is loaded on demand (dlopen) by sbx provision for a URL only.
case " $(needed "$bdir/libexec/sbx/sbx-provision") " in
*" libcurl "*) notok "sbx-provision does not link libcurl" ;;
*) ok "sbx-provision does not link libcurl (dlopen for a URL)" ;;
esac

# Every program still starts.
for p in $progs; do
	name=${p##*/}
	[ "$name" = sbx-init ] && continue
	if "$p" --version >/dev/null 2>&1; then
		ok "$name --version runs"
	else
		notok "$name --version runs"
	fi
done

# --deep (templates checked against their manifests) needs no libarchive
# either: the loader's own trace of what sbx-preflight maps says so.  The
# state root is a fresh, empty one: nothing is created on the host.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/0910-needed.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
LD_DEBUG=files SBX_HOME=$tmp/root SBX_EXEC_PATH="$bdir/libexec/sbx" \
    "$bdir/libexec/sbx/sbx-preflight" --deep --json >"$tmp/out" \
    2>"$tmp/err"
rc=$?
if [ "$rc" -le 3 ] && grep -q '"tool":"preflight"' "$tmp/out"; then
	if grep -qE 'file=lib(archive|xml2|icu)' "$tmp/err"; then
		notok "sbx-preflight --deep loads no libarchive"
		diag "$(grep -E 'file=lib(archive|xml2|icu)' "$tmp/err" | head -3)"
	else
		ok "sbx-preflight --deep loads no libarchive"
	fi
else
	notok "sbx-preflight --deep ran (exit $rc)"
	diag "$(head -c 500 "$tmp/err")"
fi
if [ -e "$tmp/root" ]; then
	notok "preflight created nothing (a fresh root stays fresh)"
else
	ok "preflight created nothing (a fresh root stays fresh)"
fi

echo "1..$n"
