#!/bin/sh
# deps.sh: install what sbx needs to build, run and test; idempotent.
# `deps.sh --mcp-client`: the test-only MCP client from npm instead.
#
# On Debian/Ubuntu the missing packages are installed with apt-get (as root,
# or through sudo).  Elsewhere the script prints what it would need and
# exits 69 when something is missing.
set -eu

# Build dependencies (pkg-config names) and the Debian packages that carry them.
BUILD_PKGS="build-essential pkg-config libjansson-dev libsodium-dev libseccomp-dev libcurl4-openssl-dev libarchive-dev"
# Runtime tools.
RUN_PKGS="bubblewrap socat ripgrep"
# Tests, lint and benchmarks.
TEST_PKGS="bats perl iproute2 curl python3 python3-jsonschema mandoc jq shellcheck libxml2-utils hyperfine util-linux procps busybox-static openssl clang-format zsh time zstd xz-utils cppcheck"
# Images: nettle's SHA-256 (image.c; libarchive's own dependency);
# script(1) gives the download progress test a terminal; mkfs.xfs a file
# system with reflinks for the environment clone test.
BUILD_PKGS="$BUILD_PKGS nettle-dev"
# sbx-proxy's asynchronous resolver (proxy.c; the proxy alone links it).
BUILD_PKGS="$BUILD_PKGS libc-ares-dev"
# The proxy's CA and the TLS it terminates for credential rules (issue 34):
# OpenSSL, the library the host's libcurl already uses.
BUILD_PKGS="$BUILD_PKGS libssl-dev"
# sbx-bridge: HTTP (libmicrohttpd), memory (SQLite with FTS5, which
# Debian's libsqlite3 has built in); inference uses libcurl (above).
BUILD_PKGS="$BUILD_PKGS libmicrohttpd-dev libsqlite3-dev"
TEST_PKGS="$TEST_PKGS bsdutils xfsprogs"
# The Public Suffix List (lib/net/psl.c reads its .dat: `*.co.uk` is not a
# wildcard an allowlist may hold); sshd and ssh for the git-over-SSH test.
RUN_PKGS="$RUN_PKGS publicsuffix"
TEST_PKGS="$TEST_PKGS openssh-server openssh-client uidmap"
# newuidmap and newgidmap: an unprivileged user's subordinate id range for
# sbx install --manager apt (1010-install-apt.bats checks that path).
# The libFuzzer targets that make check builds and runs briefly
# (tests/integration/0004-fuzz.sh): clang, and its runtime libraries
# (libFuzzer, ASan, UBSan), which clang only recommends.
TEST_PKGS="$TEST_PKGS clang libclang-rt-dev"
# Slurm: the SPANK plugin sbx.so builds against Slurm's headers
# (libslurm-dev: slurm/spank.h); tests/integration/0930-slurm.sh and
# scripts/bench-slurm.sh start a one-node cluster of their own (munge,
# slurmctld, slurmd, the client commands) in a temp dir.
BUILD_PKGS="$BUILD_PKGS libslurm-dev"
TEST_PKGS="$TEST_PKGS munge slurmctld slurmd slurm-client"

# The reference MCP client (the TypeScript SDK) that drives sbx mcp in
# tests/integration/1150-mcp.bats and scripts/bench-mcp.sh: test-only, and
# only with --mcp-client (make check and make bench ask for it when their
# tests use it; make demo never does, so it works offline once the Debian
# packages are here).  Into tests/mcp-client/node_modules (git-ignored,
# never installed), from the committed package-lock.json, when node and
# npm are here.  A failure (no registry reachable) is said and leaves the
# tests to skip.
if [ "${1:-}" = --mcp-client ]; then
	mcp_client=$(dirname "$0")/../tests/mcp-client
	if ! command -v npm >/dev/null 2>&1; then
		echo "deps.sh: no npm; the MCP client tests will skip" >&2
	elif ! cmp -s "$mcp_client/package-lock.json" \
	    "$mcp_client/node_modules/.sbx-installed-lock" 2>/dev/null; then
		(cd "$mcp_client" && npm ci --no-audit --no-fund --loglevel=error &&
		    cp package-lock.json node_modules/.sbx-installed-lock) ||
		    echo "deps.sh: npm ci in tests/mcp-client failed; the MCP client tests will skip" >&2
	fi
	exit 0
fi
if [ $# -gt 0 ]; then
	echo "usage: sh scripts/deps.sh [--mcp-client]" >&2
	exit 64
fi

missing=""
for p in $BUILD_PKGS $RUN_PKGS $TEST_PKGS; do
	if command -v dpkg-query >/dev/null 2>&1; then
		st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
		case "$st" in
		*"install ok installed"*) ;;
		*) missing="$missing $p" ;;
		esac
	else
		missing="$missing $p"
	fi
done

if [ -z "$missing" ]; then
	echo "deps.sh: all dependencies present"
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "deps.sh: not a Debian-like system; please install:$missing" >&2
	echo "deps.sh: (pkg-config: jansson libsodium libseccomp libcurl libarchive libcares;" \
	    "tools: bwrap socat rg bats prove)" >&2
	exit 69
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO="sudo"
	else
		echo "deps.sh: need root to install:$missing" >&2
		exit 77
	fi
fi

echo "deps.sh: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
