#!/bin/sh
# (.bash, not .sh: tests/run.sh runs every *.sh as a test; this is a
# POSIX sh helper, run with sh.)
# shellcheck shell=sh
# install-aptroot.bash DIR: a small Debian root file system in DIR, made of
# the host's own apt, dpkg and the tools they call (with their libraries,
# found by ldd), an empty dpkg database and the host's /etc/apt defaults
# without its sources.  For 1010-install-apt.bats; the host is Debian.
set -eu
d=$1
mkdir -p "$d/usr/bin" "$d/usr/sbin" "$d/usr/lib" "$d/etc/apt/apt.conf.d" \
    "$d/etc/apt/sources.list.d" "$d/etc/apt/preferences.d" \
    "$d/etc/apt/trusted.gpg.d" "$d/etc/dpkg/dpkg.cfg.d" \
    "$d/var/lib/dpkg/info" "$d/var/lib/dpkg/updates" \
    "$d/var/lib/dpkg/triggers" "$d/var/lib/apt/lists/partial" \
    "$d/var/cache/apt/archives/partial" "$d/var/log/apt" "$d/tmp" \
    "$d/root" "$d/run" "$d/proc" "$d/dev"
for l in bin sbin lib lib64; do
	[ -L "/$l" ] && mkdir -p "$d/usr/$l" && ln -sfn "usr/$l" "$d/$l"
done
copy() {
	# the file, and every library ldd names for it
	[ -e "$1" ] || return 0
	mkdir -p "$d$(dirname "$1")"
	cp -a "$1" "$d$1"
	ldd "$1" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 }
	    $1 ~ /^\// { print $1 }' | while read -r lib; do
		real=$(readlink -f "$lib")
		mkdir -p "$d$(dirname "$lib")" "$d$(dirname "$real")"
		[ -e "$d$real" ] || cp -a "$real" "$d$real"
		[ -e "$d$lib" ] || [ -L "$d$lib" ] || ln -s "$real" "$d$lib"
	done
}
for b in sh dash bash apt-get apt-cache apt-config apt-mark dpkg dpkg-deb \
    dpkg-query dpkg-split dpkg-divert dpkg-trigger dpkg-maintscript-helper \
    tar gzip xz zstd awk mawk sed grep rm mkdir rmdir cat ls cp mv ln \
    chmod chown touch readlink dirname basename env id head tail tr \
    find diff cmp sort true false test printf echo stat uname sleep \
    expr wc cut tee mktemp sync; do
	p=$(command -v "$b" 2>/dev/null) || continue
	case $p in /*) ;; *) continue ;; esac
	copy "$(readlink -f "$p")"
	[ "$(readlink -f "$p")" = "/usr${p#/usr}" ] ||
	    { mkdir -p "$d/usr/bin"; [ -e "$d/usr/bin/$b" ] ||
	    ln -s "$(readlink -f "$p")" "$d/usr/bin/$b"; }
done
for b in /usr/sbin/ldconfig /sbin/ldconfig /usr/sbin/start-stop-daemon \
    /usr/lib/apt/methods/http /usr/lib/apt/methods/https \
    /usr/lib/apt/methods/file /usr/lib/apt/methods/store \
    /usr/lib/apt/methods/copy /usr/lib/apt/methods/gpgv \
    /usr/lib/apt/apt-helper; do
	copy "$b"
done
ln -sfn mawk "$d/usr/bin/awk" 2>/dev/null || true
# dpkg and apt read its architecture tables
mkdir -p "$d/usr/share"
cp -a /usr/share/dpkg "$d/usr/share/"
cp -a /etc/ld.so.conf "$d/etc/" 2>/dev/null || true
cp -a /etc/ld.so.conf.d "$d/etc/" 2>/dev/null || true
cp -a /etc/dpkg/dpkg.cfg "$d/etc/dpkg/" 2>/dev/null || true
cp -a /etc/os-release /etc/debian_version "$d/etc/" 2>/dev/null || true
printf 'root:x:0:0:root:/root:/bin/sh\nman:x:6:12:man:/var/cache/man:/usr/sbin/nologin\n_apt:x:42:65534::/nonexistent:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' \
    > "$d/etc/passwd"
printf 'root:x:0:\nman:x:12:\nnogroup:x:65534:\n' > "$d/etc/group"
: > "$d/etc/hosts"
: > "$d/etc/resolv.conf"
: > "$d/var/lib/dpkg/status"
: > "$d/var/lib/dpkg/available"
printf 'Package: sbx-base\nStatus: install ok installed\nPriority: required\nVersion: 1.0\nArchitecture: all\nMaintainer: sbx tests <t@sbx.test>\nDescription: the test image\n\n' \
    > "$d/var/lib/dpkg/status"
echo amd64 > "$d/var/lib/dpkg/arch" 2>/dev/null || true
dpkg --print-architecture > "$d/var/lib/dpkg/arch"
