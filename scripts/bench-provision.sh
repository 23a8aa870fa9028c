#!/bin/bash
# bench-provision.sh: the cost of images.
#
#   RUNS=11 scripts/bench-provision.sh
#
# 1. `sbx provision image add` of a ~5 MiB rootfs tarball (busybox plus
#    incompressible filler) against a plain `tar -xf` of the same file;
#    median of RUNS each, and the ratio (add also hashes the file twice,
#    walks and hashes the tree for the manifest and seals it read-only).
# 2. `sbx exec -- /bin/true` on that image against host mode; medians and
#    the ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${B:-build}
RUNS=${RUNS:-11}
BIN=$(cd "$B" && pwd)
SBX="$BIN/bin/sbx"
export SBX_EXEC_PATH="$BIN/libexec/sbx"
[ -x /bin/busybox ] || { echo "bench-provision: /bin/busybox is missing"; exit 69; }

tmp=$(mktemp -d /tmp/sbx-bench.XXXXXX)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
chmod 0755 "$tmp"
export SBX_HOME="$tmp/state"

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)]/1e6}'; }

# The fixture: ~5 MiB.
r="$tmp/rootfs"
mkdir -p "$r/bin" "$r/etc" "$r/usr/share/filler"
cp /bin/busybox "$r/bin/"
for a in sh ls cat echo id true; do ln -s busybox "$r/bin/$a"; done
for i in $(seq 1 48); do
	head -c 65536 /dev/urandom > "$r/usr/share/filler/f$i"
done
tar -C "$r" -cf "$tmp/img.tar" .
d=$(sha256sum "$tmp/img.tar" | cut -c1-64)
size=$(stat -c %s "$tmp/img.tar")

: > "$tmp/add"; : > "$tmp/tar"
for _ in $(seq 1 "$RUNS"); do
	"$SBX" provision image rm "$d" -q 2>/dev/null || true
	t0=$(now)
	"$SBX" provision image add "$tmp/img.tar" --sha256 "$d" --name bench -q
	t1=$(now)
	echo $((t1 - t0)) >> "$tmp/add"
	rm -rf "$tmp/x"; mkdir "$tmp/x"
	t0=$(now)
	tar -C "$tmp/x" -xf "$tmp/img.tar"
	t1=$(now)
	echo $((t1 - t0)) >> "$tmp/tar"
done
add=$(median < "$tmp/add"); tx=$(median < "$tmp/tar")

"$SBX" provision --agent bimg --image bench -q
"$SBX" provision --agent bhost -q
"$SBX" exec -q --agent bimg -- /bin/true
"$SBX" exec -q --agent bhost -- /bin/true
: > "$tmp/eimg"; : > "$tmp/ehost"
for _ in $(seq 1 "$RUNS"); do
	t0=$(now); "$SBX" exec -q --agent bimg -- /bin/true; t1=$(now)
	echo $((t1 - t0)) >> "$tmp/eimg"
	t0=$(now); "$SBX" exec -q --agent bhost -- /bin/true; t1=$(now)
	echo $((t1 - t0)) >> "$tmp/ehost"
done
ei=$(median < "$tmp/eimg"); eh=$(median < "$tmp/ehost")

printf 'archive: %d bytes, median of %d runs (ms)\n' "$size" "$RUNS"
printf '%-34s %10s   %-26s %10s   %s\n' "sbx provision image add" "$add" \
    "tar -xf" "$tx" "ratio $(awk -v a="$add" -v b="$tx" 'BEGIN {printf "%.2f", a/b}')"
printf '%-34s %10s   %-26s %10s   %s\n' "sbx exec -- /bin/true (image)" "$ei" \
    "sbx exec -- /bin/true (host)" "$eh" "ratio $(awk -v a="$ei" -v b="$eh" 'BEGIN {printf "%.2f", a/b}')"
