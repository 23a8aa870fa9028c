#!/bin/bash
# bench-provision.sh: the cost of images and environments.
#
#   RUNS=11 scripts/bench-provision.sh
#
# 1. `sbx provision image add` of a ~5 MiB rootfs tarball (busybox plus
#    incompressible filler) against a plain `tar -xf` of the same file;
#    median of RUNS each, and the ratio (target <= 1.5).  add also hashes
#    the file before unpacking and again while unpacking, hashes every
#    file for the manifest and seals the template read-only.
# 2. `sbx provision --agent A --own-rootfs` of that image: the clone itself (as
#    the envelope reports it) and the whole command; medians (target for
#    the clone <= 100 ms).
# 3. `sbx exec -- /bin/true` on that image, on the environment, and in
#    host mode; medians and the ratios to host mode.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
B=${B:-build}
RUNS=${RUNS:-11}
BIN=$(cd "$B" && pwd)
SBX="$BIN/bin/sbx"
export SBX_EXEC_PATH="$BIN/libexec/sbx"
[ -x /bin/busybox ] || { echo "bench-provision: /bin/busybox is missing"; exit 69; }
command -v jq >/dev/null || { echo "bench-provision: jq is missing"; exit 69; }

tmp=$(mktemp -d /tmp/sbx-bench.XXXXXX)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
chmod 0755 "$tmp"
export SBX_HOME="$tmp/state"
# As root, `sbx provision` would create the system user sbx: not for a bench.
export SBX_NO_CREATE_USER=1

now() { date +%s%N; }
# Medians of nanoseconds (one a line), in milliseconds.
median() { bench_median 1e-6; }

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

# 1. image add against tar -xf, alternating.
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

# 2. the environment: removed and made again, RUNS times.
"$SBX" provision --agent benv --image bench -q
: > "$tmp/clone"; : > "$tmp/envcmd"
clone_kind=""
for _ in $(seq 1 "$RUNS"); do
	"$SBX" provision --agent benv --no-own-rootfs -q
	t0=$(now)
	out=$("$SBX" provision --agent benv --own-rootfs --json)
	t1=$(now)
	echo $((t1 - t0)) >> "$tmp/envcmd"
	printf '%s\n' "$out" | jq -r '.result.env.clone_us * 1000' >> "$tmp/clone"
	clone_kind=$(printf '%s\n' "$out" | jq -r .result.env.clone)
done
clone=$(median < "$tmp/clone"); envcmd=$(median < "$tmp/envcmd")

# 3. sbx exec on the image, on the environment, and on the host.
"$SBX" provision --agent bimg --image bench -q
"$SBX" provision --agent bhost -q
for a in bimg benv bhost; do "$SBX" exec -q --agent "$a" -- /bin/true; done
: > "$tmp/eimg"; : > "$tmp/eenv"; : > "$tmp/ehost"
for _ in $(seq 1 "$RUNS"); do
	t0=$(now); "$SBX" exec -q --agent bimg -- /bin/true; t1=$(now)
	echo $((t1 - t0)) >> "$tmp/eimg"
	t0=$(now); "$SBX" exec -q --agent benv -- /bin/true; t1=$(now)
	echo $((t1 - t0)) >> "$tmp/eenv"
	t0=$(now); "$SBX" exec -q --agent bhost -- /bin/true; t1=$(now)
	echo $((t1 - t0)) >> "$tmp/ehost"
done
ei=$(median < "$tmp/eimg"); ee=$(median < "$tmp/eenv"); eh=$(median < "$tmp/ehost")

row() { printf '%-34s %10s   %-28s %10s   %s\n' "$@"; }
printf 'archive: %d bytes, median of %d runs (ms)\n' "$size" "$RUNS"
row "sbx provision image add" "$add" "tar -xf" "$tx" \
    "ratio $(bench_ratio "$add" "$tx") (target <= 1.50)"
row "env clone ($clone_kind)" "$clone" "sbx provision --own-rootfs (all)" "$envcmd" \
    "(target: clone <= 100 ms)"
row "sbx exec -- /bin/true (image)" "$ei" "sbx exec -- /bin/true (host)" "$eh" \
    "ratio $(bench_ratio "$ei" "$eh")"
row "sbx exec -- /bin/true (env)" "$ee" "sbx exec -- /bin/true (host)" "$eh" \
    "ratio $(bench_ratio "$ee" "$eh")"
bench_verdict "image add / tar -xf" "$(bench_ratio "$add" "$tx")" "<=" 1.5
bench_done
