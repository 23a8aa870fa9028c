#!/usr/bin/env bats
# sbx provision image: verified rootfs templates, and sbx exec on them.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	sbx_setup
	FX="$TEST_ROOT/fx"
	mkdir -p "$FX"
}

# A small rootfs from busybox: bin/busybox and a few applet symlinks, an
# /etc without os-release, a marker in /usr that the host does not have.
make_rootfs() {
	local r="$FX/rootfs"
	mkdir -p "$r/bin" "$r/etc" "$r/usr/share/fixture"
	cp /bin/busybox "$r/bin/busybox"
	for a in sh ls cat echo id; do ln -s busybox "$r/bin/$a"; done
	echo 'root:x:0:0:root:/root:/bin/sh' >"$r/etc/passwd"
	echo 'hello from the image' >"$r/usr/share/fixture/marker"
}

sha() { sha256sum "$1" | cut -d' ' -f1; }

# The images directory holds nothing but (perhaps) names.json.
images_clean() {
	[ ! -e "$SBX_HOME/images" ] && return 0
	[ -z "$(ls -A "$SBX_HOME/images" | grep -v '^names.json$')" ]
}

# craft KIND OUT: a hostile tarball, written with python3's tarfile.
craft() {
	python3 - "$1" "$2" "$FX/outside" <<'EOF'
import io, sys, tarfile
kind, out, outside = sys.argv[1:4]
def reg(t, name, data=b"x", mode=0o644):
    ti = tarfile.TarInfo(name); ti.size = len(data); ti.mode = mode
    t.addfile(ti, io.BytesIO(data))
def sym(t, name, target):
    ti = tarfile.TarInfo(name); ti.type = tarfile.SYMTYPE; ti.linkname = target
    t.addfile(ti)
def hard(t, name, target):
    ti = tarfile.TarInfo(name); ti.type = tarfile.LNKTYPE; ti.linkname = target
    t.addfile(ti)
if kind == "huge":
    # A 10 GB file declared in the header, no data behind it: the
    # declared size alone must refuse it.
    ti = tarfile.TarInfo("big"); ti.size = 10 * 2**30
    with open(out, "wb") as f:
        f.write(ti.tobuf(format=tarfile.GNU_FORMAT)); f.write(b"\0" * 4096)
    sys.exit(0)
with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
    reg(t, "etc/hostname", b"img\n")
    if kind == "dotdot":
        reg(t, "../escaped")
    elif kind == "absolute":
        reg(t, outside + "/abs")
    elif kind == "symlink":
        sym(t, "link", outside)
        reg(t, "link/through")
    elif kind == "hardlink":
        hard(t, "hl", "../../../../../../etc/passwd")
    elif kind == "hardlink-abs":
        hard(t, "hl", "/etc/passwd")
    elif kind == "hardlink-sym":
        sym(t, "d", "/etc")
        hard(t, "hl", "d/passwd")
    elif kind == "device":
        ti = tarfile.TarInfo("dev-null"); ti.type = tarfile.CHRTYPE
        ti.devmajor, ti.devminor = 1, 3; t.addfile(ti)
        ti = tarfile.TarInfo("fifo"); ti.type = tarfile.FIFOTYPE; t.addfile(ti)
    elif kind == "setuid":
        reg(t, "bin/su", b"#!/bin/sh\n", 0o4755)
        reg(t, "bin/sg", b"#!/bin/sh\n", 0o2755)
        ti = tarfile.TarInfo("tmpdir"); ti.type = tarfile.DIRTYPE
        ti.mode = 0o1777; t.addfile(ti)
    elif kind == "newline":
        reg(t, "etc/bad\nname")
EOF
}

add() { sbx provision image add "$@"; }

# make_oci DIR KIND: an OCI image layout of two layers (the busybox rootfs,
# then whiteouts and a change); prints the manifest's sha256.
make_oci() {
	python3 - "$1" "$2" "$FX/rootfs" <<'EOF'
import gzip, hashlib, io, json, os, sys, tarfile
out, kind, rootfs = sys.argv[1:4]
os.makedirs(out + "/blobs/sha256")
def blob(data):
    h = hashlib.sha256(data).hexdigest()
    open(out + "/blobs/sha256/" + h, "wb").write(data)
    return h
def layer(build, gz):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=tarfile.PAX_FORMAT) as t:
        build(t)
    data = b.getvalue()
    if gz:
        data = gzip.compress(data)
    return data
def reg(t, name, data=b""):
    ti = tarfile.TarInfo(name); ti.size = len(data); ti.mode = 0o644
    t.addfile(ti, io.BytesIO(data))
def l1(t):
    t.add(rootfs, arcname=".")
    reg(t, "usr/share/gone", b"gone\n")
    reg(t, "usr/share/opq/old", b"old\n")
def l2(t):
    reg(t, "usr/share/.wh.gone")
    reg(t, "usr/share/opq/.wh..wh..opq")
    reg(t, "usr/share/opq/new", b"new\n")
    reg(t, "usr/share/fixture/marker", b"layer two\n")
    if kind == "dotdot-whiteout":
        reg(t, "usr/.wh..")
layers = []
for data, mt in ((layer(l1, True), "application/vnd.oci.image.layer.v1.tar+gzip"),
                 (layer(l2, False), "application/vnd.oci.image.layer.v1.tar")):
    layers.append({"mediaType": mt, "digest": "sha256:" + blob(data), "size": len(data)})
cfg = blob(b"{}")
man = json.dumps({"schemaVersion": 2,
    "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
               "digest": "sha256:" + cfg, "size": 2},
    "layers": layers}).encode()
mh = blob(man)
json.dump({"schemaVersion": 2, "manifests": [{"mediaType":
    "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:" + mh,
    "size": len(man)}]}, open(out + "/index.json", "w"))
open(out + "/oci-layout", "w").write('{"imageLayoutVersion":"1.0.0"}')
if kind == "tampered":
    p = out + "/blobs/sha256/" + layers[1]["digest"][7:]
    open(p, "ab").write(b"\0" * 512)
print(mh)
EOF
}

@test "add a .tar, .tar.gz, .tar.xz and .tar.zst rootfs; list and verify" {
	make_rootfs
	tar -C "$FX/rootfs" -cf "$FX/bb.tar" .
	tar -C "$FX/rootfs" -czf "$FX/bb.tar.gz" .
	tar -C "$FX/rootfs" -cJf "$FX/bb.tar.xz" .
	exts="tar tar.gz tar.xz"
	if command -v zstd >/dev/null; then
		tar -C "$FX/rootfs" --zstd -cf "$FX/bb.tar.zst" .
		exts="$exts tar.zst"
	fi
	for x in $exts; do
		d=$(sha "$FX/bb.$x")
		run -0 add "$FX/bb.$x" --sha256 "$d" --name "bb-${x//./-}" --json
		[ "$(json_get "$output" .ok)" = true ]
		[ "$(json_get "$output" .tool)" = provision.image.add ]
		[ "$(json_get "$output" .result.digest)" = "$d" ]
		[ "$(json_get "$output" .result.present)" = false ]
		t="$SBX_HOME/images/$d/rootfs"
		cmp "$t/bin/busybox" /bin/busybox
		[ "$(readlink "$t/bin/sh")" = busybox ]
		[ -f "$SBX_HOME/images/$d/manifest.json" ]
		# read-only: no write bit anywhere
		[ -z "$(find "$t" ! -type l -perm /222)" ]
	done
	# the same digest again: present, nothing unpacked
	run -0 add "$FX/bb.tar" --sha256 "$(sha "$FX/bb.tar")" --json
	[ "$(json_get "$output" .result.present)" = true ]
	run -0 sbx provision image list --json
	[ "$(json_get "$output" '.result.images | length')" = "$(echo $exts | wc -w)" ]
	[ "$(json_get "$output" '[.result.images[] | .complete] | all')" = true ]
	run -0 sbx provision image verify --json
	[ "$(json_get "$output" .result.ok)" = true ]
	[ -z "$(ls -A "$SBX_HOME/images" | grep '^\.tmp-')" ]
}

@test "a malformed digest is refused before anything is read" {
	make_rootfs
	tar -C "$FX/rootfs" -cf "$FX/bb.tar" .
	for bad in abc "$(sha "$FX/bb.tar" | tr a-f A-F)" "$(sha "$FX/bb.tar")0"; do
		run -65 add "$FX/bb.tar" --sha256 "$bad" --json
		[ "$(json_get "$output" .kind)" = invalid_args ]
		[ "$(json_get "$output" .field)" = sha256 ]
		[ "$(json_get "$output" .reason)" = invalid_digest ]
	done
	[ ! -e "$SBX_HOME" ]
}

@test "a digest mismatch is rejected and leaves nothing in images/" {
	make_rootfs
	tar -C "$FX/rootfs" -cf "$FX/bb.tar" .
	run -77 add "$FX/bb.tar" --sha256 "$(printf x | sha256sum | cut -d' ' -f1)" --json
	[ "$(json_get "$output" .kind)" = rejected ]
	[ "$(json_get "$output" .reason)" = integrity_check_failed ]
	images_clean
}

@test "a truncated archive is refused and cleaned up" {
	make_rootfs
	tar -C "$FX/rootfs" -czf "$FX/bb.tar.gz" .
	head -c 300000 "$FX/bb.tar.gz" >"$FX/trunc.tar.gz"
	run -65 add "$FX/trunc.tar.gz" --sha256 "$(sha "$FX/trunc.tar.gz")" --json
	[ "$(json_get "$output" .reason)" = malformed_archive ]
	images_clean
}

@test "the size cap (images.max_bytes) refuses a large archive" {
	make_rootfs
	tar -C "$FX/rootfs" -cf "$FX/bb.tar" .
	run -0 sbx provision -q
	echo '{"images":{"max_bytes":100000}}' >"$SBX_HOME/config/sandbox.json"
	run -77 add "$FX/bb.tar" --sha256 "$(sha "$FX/bb.tar")" --json
	[ "$(json_get "$output" .reason)" = too_large ]
	images_clean
}

@test "a 10 GB declared file is refused by the unpacked size cap" {
	craft huge "$FX/huge.tar"
	run -77 add "$FX/huge.tar" --sha256 "$(sha "$FX/huge.tar")" --json
	[ "$(json_get "$output" .reason)" = too_large ]
	images_clean
}

@test "unsafe entries refuse the whole image; nothing is written outside" {
	mkdir -p "$FX/outside"
	for k in dotdot absolute symlink hardlink hardlink-abs hardlink-sym newline; do
		craft "$k" "$FX/$k.tar"
		run -77 add "$FX/$k.tar" --sha256 "$(sha "$FX/$k.tar")" --json
		echo "$k: $output"
		[ "$(json_get "$output" .kind)" = rejected ]
		[ "$(json_get "$output" .reason)" = unsafe_entry ]
		images_clean
		[ -z "$(ls -A "$FX/outside")" ]
		[ ! -e "$FX/escaped" ] && [ ! -e "$SBX_HOME/escaped" ]
	done
}

@test "device nodes and FIFOs are dropped, setuid/setgid/sticky bits stripped" {
	craft device "$FX/dev.tar"
	d=$(sha "$FX/dev.tar")
	run -0 add "$FX/dev.tar" --sha256 "$d" --json
	[ "$(json_get "$output" .result.dropped)" = 2 ]
	[[ "$output" == *"FIFOs or sockets"* ]]
	[ ! -e "$SBX_HOME/images/$d/rootfs/dev-null" ]
	[ ! -e "$SBX_HOME/images/$d/rootfs/fifo" ]
	craft setuid "$FX/suid.tar"
	d=$(sha "$FX/suid.tar")
	run -0 add "$FX/suid.tar" --sha256 "$d" --json
	[ "$(json_get "$output" .result.stripped)" = 3 ]
	t="$SBX_HOME/images/$d/rootfs"
	[ "$(stat -c %a "$t/bin/su")" = 555 ]
	[ "$(stat -c %a "$t/bin/sg")" = 555 ]
	[ "$(stat -c %a "$t/tmpdir")" = 555 ]
	[ -z "$(find "$t" -perm /7000)" ]
}

@test "a symlink planted as images/ is refused, nothing written there" {
	make_rootfs
	tar -C "$FX/rootfs" -cf "$FX/bb.tar" .
	run -0 sbx provision -q
	rmdir "$SBX_HOME/images"
	mkdir "$FX/elsewhere"
	ln -s "$FX/elsewhere" "$SBX_HOME/images"
	run -77 add "$FX/bb.tar" --sha256 "$(sha "$FX/bb.tar")" --json
	[ "$(json_get "$output" .reason)" = symlink_in_path ]
	[ -z "$(ls -A "$FX/elsewhere")" ]
}

@test "sbx exec --agent A runs on the agent's image, not the host" {
	make_rootfs
	tar -C "$FX/rootfs" -cf "$FX/bb.tar" .
	d=$(sha "$FX/bb.tar")
	run -0 add "$FX/bb.tar" --sha256 "$d" --name bb -q
	run -0 sbx provision --agent img --image bb --json
	[ "$(json_get "$output" .result.image)" = "$d" ]
	[ "$(jq -r .image "$SBX_HOME/config/agents/img.json")" = "$d" ]
	run -0 --separate-stderr sbx exec --agent img -- ls /usr/share/fixture
	[ "$output" = marker ]
	run -0 --separate-stderr sbx exec --agent img -- cat /usr/share/fixture/marker
	[ "$output" = "hello from the image" ]
	run -0 --separate-stderr sbx exec --agent img -- ls /usr
	[ "$output" = share ]
	# busybox has no os-release; the host does
	run -1 sbx exec --agent img -- cat /etc/os-release
	[ -e /etc/os-release ] && run -0 sbx exec -- cat /etc/os-release
	# the agent's own passwd entry, still synthesized
	run -0 --separate-stderr sbx exec --agent img -- cat /etc/passwd
	[[ "${lines[0]}" == img:x:* ]]
	run -0 --separate-stderr sbx exec --agent img -- sh -c 'id -un; echo $HOME'
	[ "${lines[0]}" = img ]
	[ "${lines[1]}" = /workspace/agents/img ]
	# the template stays read-only inside
	run -1 sbx exec --agent img -- sh -c 'echo x >/usr/share/fixture/marker'
	# unbinding returns to the host's system directories
	run -0 sbx provision --agent img --image none -q
	run -0 --separate-stderr sbx exec --agent img -- test -e /etc/os-release
}

@test "a missing or damaged template refuses the run" {
	make_rootfs
	tar -C "$FX/rootfs" -cf "$FX/bb.tar" .
	d=$(sha "$FX/bb.tar")
	run -0 add "$FX/bb.tar" --sha256 "$d" --name bb -q
	run -0 sbx provision --agent img --image "$d" -q
	chmod u+w "$SBX_HOME/images/$d"
	mv "$SBX_HOME/images/$d/manifest.json" "$FX/m.json"
	run -125 sbx exec --agent img -- echo ok
	[[ "$output" == *"image add"* ]]
	run sbx exec --agent img --json -- echo ok
	[ "$(json_get "$output" .kind)" = rejected ]
	[ "$(json_get "$output" .reason)" = image_damaged ]
	run -1 sbx provision image verify bb --json
	[ "$(json_get "$output" '.result.images[0].differences[0].change')" = manifest ]
	mv "$FX/m.json" "$SBX_HOME/images/$d/manifest.json"
	run -0 --separate-stderr sbx exec --agent img -- echo ok
	run -0 sbx provision image rm bb --json
	[ "$(json_get "$output" '.result.removed[0]')" = "images/$d" ]
	[ ! -e "$SBX_HOME/images/$d" ]
	run sbx exec --agent img --json -- echo ok
	[ "$(json_get "$output" .reason)" = image_missing ]
	run -1 sbx provision image rm bb --json
	[ "$(json_get "$output" .kind)" = not_found ]
}

@test "verify reports a modified, an added and a missing file (exit 1)" {
	make_rootfs
	tar -C "$FX/rootfs" -cf "$FX/bb.tar" .
	d=$(sha "$FX/bb.tar")
	run -0 add "$FX/bb.tar" --sha256 "$d" --name bb -q
	run -0 sbx provision image verify bb
	t="$SBX_HOME/images/$d/rootfs"
	chmod u+w "$t/usr/share/fixture/marker" "$t/usr/share/fixture" "$t/etc"
	echo tampered >"$t/usr/share/fixture/marker"
	chmod u-w "$t/usr/share/fixture/marker"
	touch "$t/usr/share/fixture/new"
	rm "$t/etc/passwd"
	run -1 sbx provision image verify bb --json
	[ "$(json_get "$output" .result.ok)" = false ]
	diffs=$(json_get "$output" '.result.images[0].differences')
	[ "$(json_get "$diffs" '[.[] | select(.path == "usr/share/fixture/marker") | .change] | sort | join(",")')" = "sha256,size" ]
	[ "$(json_get "$diffs" '[.[] | select(.path == "usr/share/fixture/new") | .change] | join(",")')" = added ]
	[ "$(json_get "$diffs" '[.[] | select(.path == "etc/passwd") | .change] | join(",")')" = missing ]
	run -1 sbx provision image verify
	[[ "$output" == *"damaged"* ]]
	[[ "$output" == *"usr/share/fixture/new"* ]]
}

@test "an OCI image layout: layers applied in order, whiteouts honoured" {
	make_rootfs
	d=$(make_oci "$FX/oci" good)
	run -0 add "$FX/oci" --sha256 "$d" --name oci --json
	[ "$(json_get "$output" .result.layers)" = 2 ]
	t="$SBX_HOME/images/$d/rootfs"
	cmp "$t/bin/busybox" /bin/busybox
	[ ! -e "$t/usr/share/gone" ]
	[ ! -e "$t/usr/share/opq/old" ]
	[ "$(cat "$t/usr/share/opq/new")" = new ]
	[ "$(cat "$t/usr/share/fixture/marker")" = "layer two" ]
	[ -z "$(find "$t" -name '.wh.*')" ]
	run -0 sbx provision image verify oci
	run -0 sbx provision --agent o --image oci -q
	run -0 --separate-stderr sbx exec --agent o -- cat /usr/share/fixture/marker
	[ "$output" = "layer two" ]
}

@test "an OCI layout: a wrong manifest digest, a tampered layer, a whiteout of .." {
	make_rootfs
	d=$(make_oci "$FX/oci" good)
	run -77 add "$FX/oci" --sha256 "$(printf x | sha256sum | cut -c1-64)" --json
	[ "$(json_get "$output" .reason)" = integrity_check_failed ]
	d=$(make_oci "$FX/oci2" tampered)
	run -77 add "$FX/oci2" --sha256 "$d" --json
	[ "$(json_get "$output" .reason)" = integrity_check_failed ]
	images_clean
	d=$(make_oci "$FX/oci3" dotdot-whiteout)
	run -77 add "$FX/oci3" --sha256 "$d" --json
	[ "$(json_get "$output" .reason)" = unsafe_entry ]
	images_clean
}

@test "what a killed add left in images/.tmp-* is swept by the next add" {
	make_rootfs
	tar -C "$FX/rootfs" -cf "$FX/bb.tar" .
	mkdir -p "$SBX_HOME/images/.tmp-dead/rootfs/usr"
	touch "$SBX_HOME/images/.tmp-dead/rootfs/usr/x"
	chmod -R a-w "$SBX_HOME/images/.tmp-dead"
	run -0 add "$FX/bb.tar" --sha256 "$(sha "$FX/bb.tar")" -q
	[ ! -e "$SBX_HOME/images/.tmp-dead" ]
}

@test "the source must be a regular file" {
	mkfifo "$FX/fifo"
	run -65 add "$FX/fifo" --sha256 "$(printf x | sha256sum | cut -c1-64)" --json
	[ "$(json_get "$output" .reason)" = not_regular ]
	run -1 add "$FX/nosuch" --sha256 "$(printf x | sha256sum | cut -c1-64)" --json
	[ "$(json_get "$output" .kind)" = not_found ]
}

@test "usage errors" {
	run -64 sbx provision image
	run -64 sbx provision image frob
	run -64 sbx provision image add
	run -64 sbx provision image add x
	run -64 sbx provision image list --sha256 x
	run -64 sbx provision image add x --sha256 y --agent a
	run -1 sbx provision --image nosuch --json
	[ "$(json_get "$output" .reason)" = image_missing ]
}
