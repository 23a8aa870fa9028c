#!/usr/bin/env bats
# sbx provision image: verified rootfs templates, and sbx exec on them.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	sbx_setup
	FX="$TEST_ROOT/fx"
	mkdir -p "$FX"
	BG=""
	MNT=""
}

teardown() {
	# A background run left by a failed test goes too, and so does a
	# file system mounted for a test.
	if [ -n "${BG:-}" ]; then
		kill "$BG" 2>/dev/null
		wait "$BG" 2>/dev/null
	fi
	if [ -n "${MNT:-}" ] && mountpoint -q "$MNT"; then
		umount "$MNT" || umount -l "$MNT"
	fi
	sbx_teardown
}

# A small rootfs from busybox: bin/busybox and a few applet symlinks, an
# /etc without os-release, a marker in /usr that the host does not have.
make_rootfs() {
	local r="$FX/rootfs"
	mkdir -p "$r/bin" "$r/etc" "$r/usr/share/fixture"
	cp /bin/busybox "$r/bin/busybox"
	for a in sh ls cat echo id sleep; do ln -s busybox "$r/bin/$a"; done
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
    elif kind == "rewrites":
        # The same path twice; a hard link to a file later replaced;
        # a hard link that carries data of its own (pax allows it).
        reg(t, "a", b"first a\n")
        reg(t, "a", b"second a, longer\n")
        reg(t, "b", b"bbbb\n")
        hard(t, "c", "b")
        reg(t, "b", b"new b\n")
        reg(t, "e", b"e before\n")
        data = b"e after!\n"	# the size of e: only content tells
        ti = tarfile.TarInfo("f"); ti.type = tarfile.LNKTYPE
        ti.linkname = "e"; ti.pax_headers = {"size": str(len(data))}
        buf = ti.tobuf(t.format, t.encoding, t.errors)
        t.fileobj.write(buf + data + b"\0" * (512 - len(data)))
        t.offset += len(buf) + 512
        reg(t, "g", b"after the raw entry\n")
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

@test "the manifest describes the tree: rewritten paths, hard links, sparse files" {
	craft rewrites "$FX/rw.tar"
	d=$(sha "$FX/rw.tar")
	run -0 add "$FX/rw.tar" --sha256 "$d" --json
	t="$SBX_HOME/images/$d/rootfs"
	[ "$(cat "$t/a")" = "second a, longer" ]
	[ "$(cat "$t/b")" = "new b" ]
	[ "$(cat "$t/c")" = bbbb ]
	# the manifest (sha256 taken while unpacking) matches a full walk
	run -0 sbx provision image verify "$d" --json
	[ "$(json_get "$output" .result.ok)" = true ]
	m="$SBX_HOME/images/$d/manifest.json"
	for f in a b c e f g; do
		[ -e "$t/$f" ] || continue
		[ "$(jq -r --arg p "$f" '.entries[] | select(.path == $p) | .sha256' "$m")" = "$(sha "$t/$f")" ]
	done
	# a sparse file (GNU tar), whose holes the walk reads back as zeros
	mkdir -p "$FX/sp"
	truncate -s 3M "$FX/sp/holes"
	printf 'end' >>"$FX/sp/holes"
	printf 'start' | dd of="$FX/sp/holes" conv=notrunc status=none
	tar -C "$FX/sp" --sparse -cf "$FX/sp.tar" .
	d=$(sha "$FX/sp.tar")
	run -0 add "$FX/sp.tar" --sha256 "$d" -q
	cmp "$SBX_HOME/images/$d/rootfs/holes" "$FX/sp/holes"
	run -0 sbx provision image verify "$d"
	[ "$(jq -r '.entries[] | select(.path == "holes") | .sha256' "$SBX_HOME/images/$d/manifest.json")" = "$(sha "$FX/sp/holes")" ]
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
	# the binding is sbx's record, not a key of the file users edit
	[ "$(jq -r .digest "$SBX_HOME/agents/img/image.json")" = "$d" ]
	[ "$(jq -r '.image // "unset"' "$SBX_HOME/config/agents/img.json")" = unset ]
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
	# The last name goes, the template stays: agent img is bound to it.
	run -0 sbx provision image rm bb --json
	[ "$(json_get "$output" .result.template)" = kept ]
	[ "$(json_get "$output" '.result.agents_bound | join(",")')" = img ]
	[ -d "$SBX_HOME/images/$d" ]
	run -0 --separate-stderr sbx exec --agent img -- echo ok
	# By digest it is refused while bound; --force says what it breaks.
	run -77 sbx provision image rm "$d" --json
	[ "$(json_get "$output" .kind)" = rejected ]
	[ "$(json_get "$output" .reason)" = image_in_use ]
	[ -d "$SBX_HOME/images/$d" ]
	run -0 --separate-stderr sbx provision image rm "$d" --force
	[[ "$stderr" == *"agent img was bound to the removed image"* ]]
	[ ! -e "$SBX_HOME/images/$d" ]
	run sbx exec --agent img --json -- echo ok
	[ "$(json_get "$output" .reason)" = image_missing ]
	run -1 sbx provision image rm bb --json
	[ "$(json_get "$output" .kind)" = not_found ]
}

@test "image rm NAME removes that name only; the template goes with the last name" {
	make_rootfs
	tar -C "$FX/rootfs" -cf "$FX/bb.tar" .
	d=$(sha "$FX/bb.tar")
	run -0 add "$FX/bb.tar" --sha256 "$d" --name one -q
	run -0 add "$FX/bb.tar" --sha256 "$d" --name two -q
	run -0 sbx provision image rm one --json
	[ "$(json_get "$output" .result.template)" = kept ]
	[ "$(json_get "$output" '.result.names_removed | join(",")')" = one ]
	[ "$(json_get "$output" '.result.names_left | join(",")')" = two ]
	[ -d "$SBX_HOME/images/$d/rootfs" ]
	run -0 sbx provision image list --json
	[ "$(json_get "$output" '.result.images[0].names | join(",")')" = two ]
	run -0 sbx provision image rm two --json
	[ "$(json_get "$output" .result.template)" = removed ]
	[ "$(json_get "$output" '.result.removed[0]')" = "images/$d" ]
	[ "$(json_get "$output" '.result.broken_agents | length')" = 0 ]
	[ ! -e "$SBX_HOME/images/$d" ]
	# --force goes only with image rm
	run -64 sbx provision image list --force
	run -64 sbx provision --force
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

# ---- per-agent environments (--own-rootfs) --------------------------------------

# An image named bb (and, with an argument, a second one named NAME whose
# marker says so); prints nothing.
add_bb() {
	make_rootfs
	tar -C "$FX/rootfs" -cf "$FX/bb.tar" .
	BB=$(sha "$FX/bb.tar")
	run -0 add "$FX/bb.tar" --sha256 "$BB" --name bb -q
}

envrec() { jq -r ".$2" "$SBX_HOME/envs/$1/env.json"; }

@test "--env: a writable copy of the template; the template is untouched; exec runs on it" {
	add_bb
	run -0 sbx provision --agent e --image bb --own-rootfs --json
	[ "$(json_get "$output" .result.image)" = "$BB" ]
	[ "$(json_get "$output" .result.env.path)" = envs/e/rootfs ]
	[ "$(json_get "$output" .result.env.present)" = false ]
	clone=$(json_get "$output" .result.env.clone)
	[ "$clone" = reflink ] || [ "$clone" = copy ]
	[ "$(json_get "$output" .result.env.files)" -ge 2 ]
	[ "$(json_get "$output" '.result.evicted | length')" = 0 ]
	[ "$(jq -r .env "$SBX_HOME/agents/e/image.json")" = true ]
	[ "$(envrec e digest)" = "$BB" ]
	[ "$(envrec e clone)" = "$clone" ]
	t="$SBX_HOME/images/$BB/rootfs"
	r="$SBX_HOME/envs/e/rootfs"
	cmp "$r/bin/busybox" /bin/busybox
	[ "$(readlink "$r/bin/sh")" = busybox ]
	# modes kept, plus the owner's write bit the template lost
	[ "$(stat -c %a "$t/bin/busybox")" = 555 ]
	[ "$(stat -c %a "$r/bin/busybox")" = 755 ]
	[ "$(stat -c %a "$r/usr/share/fixture/marker")" = 644 ]
	[ "$(stat -c %Y "$r/bin/busybox")" = "$(stat -c %Y "$t/bin/busybox")" ]
	# written from the host side: the template does not change
	echo 'changed in the env' >"$r/usr/share/fixture/marker"
	[ "$(cat "$t/usr/share/fixture/marker")" = "hello from the image" ]
	run -0 sbx provision image verify bb
	# exec runs on the env (read-only, as a template is), and notes the use
	before=$(envrec e last_used)
	sleep 0.01
	run -0 --separate-stderr sbx exec --agent e -- cat /usr/share/fixture/marker
	[ "$output" = "changed in the env" ]
	[ "$(envrec e last_used)" \> "$before" ]
	run -1 sbx exec --agent e -- sh -c 'echo x >/usr/share/fixture/marker'
	# asked again: kept as it is (it may hold what the agent installed)
	run -0 sbx provision --agent e --own-rootfs --json
	[ "$(json_get "$output" .result.env.present)" = true ]
	[ "$(cat "$r/usr/share/fixture/marker")" = "changed in the env" ]
	# another agent on the same image still sees the template
	run -0 sbx provision --agent plain --image bb -q
	run -0 --separate-stderr sbx exec --agent plain -- cat /usr/share/fixture/marker
	[ "$output" = "hello from the image" ]
	[ -z "$(ls -A "$SBX_HOME/envs" | grep '^\.tmp-')" ]
}

@test "at most max_envs environments: the least recently used goes, homes stay" {
	add_bb
	for a in a b c; do
		run -0 sbx provision --agent "$a" --image bb --own-rootfs -q
		sleep 0.01
	done
	echo keep >"$SBX_HOME/workspace/agents/b/mine"
	# a was made first but used last: b is now the least recently used
	run -0 --separate-stderr sbx exec --agent a -- echo used
	sleep 0.01
	run -0 sbx provision --agent d --image bb --own-rootfs --json
	[ "$(json_get "$output" '.result.evicted | length')" = 1 ]
	[ "$(json_get "$output" '.result.evicted[0].agent')" = b ]
	[ "$(json_get "$output" '.result.evicted[0].path')" = envs/b ]
	[ ! -e "$SBX_HOME/envs/b" ]
	[ -d "$SBX_HOME/envs/a" ] && [ -d "$SBX_HOME/envs/c" ] && [ -d "$SBX_HOME/envs/d" ]
	[ "$(cat "$SBX_HOME/workspace/agents/b/mine")" = keep ]
	# fewer allowed: asking for one that exists trims the others
	echo '{"max_envs":2}' >"$SBX_HOME/config/sandbox.json"
	run -0 sbx provision --agent a --own-rootfs --json
	[ "$(json_get "$output" .result.env.present)" = true ]
	[ "$(json_get "$output" '[.result.evicted[].agent] | join(",")')" = c ]
	[ "$(ls "$SBX_HOME/envs")" = "$(printf 'a\nd')" ]
	# the evicted agent falls back to the template, with a warning
	run -0 sbx exec --agent b --json -- cat /usr/share/fixture/marker
	[ "$(json_get "$output" .result.stdout)" = "hello from the image" ]
	[[ "$(json_get "$output" '.warnings[0]')" == *"does not exist"* ]]
	echo '{"max_envs":0}' >"$SBX_HOME/config/sandbox.json"
	run -78 sbx provision --agent a --own-rootfs --json
	[ "$(json_get "$output" .reason)" = config_invalid ]
}

@test "--no-own-rootfs, --image none and reset take the environment away" {
	add_bb
	run -0 sbx provision --agent e --image bb --own-rootfs -q
	run -0 sbx provision --agent e --no-own-rootfs --json
	[ "$(json_get "$output" '.result.removed[0]')" = envs/e ]
	[ "$(json_get "$output" .result.env)" = null ]
	[ ! -e "$SBX_HOME/envs/e" ]
	[ "$(jq -r .env "$SBX_HOME/agents/e/image.json")" = false ]
	[ "$(jq -r .digest "$SBX_HOME/agents/e/image.json")" = "$BB" ]
	run -0 sbx provision --agent e --own-rootfs -q
	[ -d "$SBX_HOME/envs/e/rootfs" ]
	run -0 sbx provision reset --json
	[ ! -e "$SBX_HOME/envs/e" ]
	[ -d "$SBX_HOME/images/$BB/rootfs" ]
	run -0 sbx provision --agent e --own-rootfs -q
	run -0 sbx provision --agent e --image none --json
	[ "$(json_get "$output" .result.image)" = null ]
	[ ! -e "$SBX_HOME/envs/e" ]
	[ "$(jq -r .digest "$SBX_HOME/agents/e/image.json")" = null ]
	[ "$(jq -r .env "$SBX_HOME/agents/e/image.json")" = false ]
}

@test "rebinding remakes the environment from the new image; --own-rootfs needs an image" {
	add_bb
	echo 'the second image' >"$FX/rootfs/usr/share/fixture/marker"
	tar -C "$FX/rootfs" -cf "$FX/bb2.tar" .
	run -0 add "$FX/bb2.tar" --sha256 "$(sha "$FX/bb2.tar")" --name bb2 -q
	run -0 sbx provision --agent e --image bb --own-rootfs -q
	run -0 sbx provision --agent e --image bb2 --json
	[ "$(json_get "$output" .result.env.replaced)" = true ]
	[ "$(envrec e digest)" = "$(sha "$FX/bb2.tar")" ]
	run -0 --separate-stderr sbx exec --agent e -- cat /usr/share/fixture/marker
	[ "$output" = "the second image" ]
	[ -z "$(ls -A "$SBX_HOME/envs" | grep '^\.tmp-')" ]
	run -65 sbx provision --agent z --own-rootfs --json
	[ "$(json_get "$output" .kind)" = invalid_args ]
	[ "$(json_get "$output" .reason)" = no_image ]
	run -64 sbx provision --agent e --own-rootfs --no-own-rootfs
	run -64 sbx provision status --own-rootfs
	run -64 sbx provision image list --own-rootfs
}

@test "--env and --no-env, the deprecated names, still work and say so" {
	add_bb
	run -0 --separate-stderr sbx provision --agent e --image bb --env --json
	[ "$(json_get "$output" .result.env.path)" = envs/e/rootfs ]
	[ -d "$SBX_HOME/envs/e/rootfs" ]
	[[ "$stderr" == *"warning: --env is deprecated; use --own-rootfs"* ]]
	run -0 --separate-stderr sbx provision --agent e --no-env --json
	[ ! -e "$SBX_HOME/envs/e" ]
	[[ "$stderr" == *"warning: --no-env is deprecated; use --no-own-rootfs"* ]]
	# -q: errors only.
	run -0 --separate-stderr sbx provision --agent e --env -q
	[ -z "$stderr" ]
	run -64 sbx provision --agent e --env --no-own-rootfs
}

@test "a symlink planted as envs/ or envs/<agent> is refused or replaced, never followed" {
	add_bb
	run -0 sbx provision --agent e --image bb -q
	mkdir -p "$FX/elsewhere"
	rmdir "$SBX_HOME/envs"
	ln -s "$FX/elsewhere" "$SBX_HOME/envs"
	run -77 sbx provision --agent e --own-rootfs --json
	[ "$(json_get "$output" .reason)" = symlink_in_path ]
	[ -z "$(ls -A "$FX/elsewhere")" ]
	rm "$SBX_HOME/envs"
	run -0 sbx provision --agent e --own-rootfs -q
	# envs/e swapped for a link to a tree that looks like an env
	mkdir -p "$FX/fake"
	cp -a "$SBX_HOME/envs/e/." "$FX/fake/"
	echo 'from the planted tree' >"$FX/fake/rootfs/usr/share/fixture/marker"
	chmod -R u+w "$SBX_HOME/envs/e"
	rm -rf "$SBX_HOME/envs/e"
	ln -s "$FX/fake" "$SBX_HOME/envs/e"
	run -77 sbx exec --agent e --json -- cat /usr/share/fixture/marker
	[ "$(json_get "$output" .kind)" = rejected ]
	[ "$(json_get "$output" .reason)" = symlink_in_path ]
	[[ "$output" != *"from the planted tree"* ]]
	# provisioning replaces the link (the link itself, not its target)
	run -0 sbx provision --agent e --own-rootfs --json
	[ "$(json_get "$output" .result.env.replaced)" = true ]
	[ -d "$SBX_HOME/envs/e" ] && [ ! -L "$SBX_HOME/envs/e" ]
	[ "$(cat "$FX/fake/rootfs/usr/share/fixture/marker")" = "from the planted tree" ]
	run -0 --separate-stderr sbx exec --agent e -- cat /usr/share/fixture/marker
	[ "$output" = "hello from the image" ]
	# a link as the rootfs inside a real env dir: refused as well
	chmod u+w "$SBX_HOME/envs/e"
	mv "$SBX_HOME/envs/e/rootfs" "$FX/moved"
	ln -s "$FX/fake/rootfs" "$SBX_HOME/envs/e/rootfs"
	run -77 sbx exec --agent e --json -- echo x
	[ "$(json_get "$output" .reason)" = symlink_in_path ]
}

@test "an environment in use by a running sbx exec is not evicted" {
	add_bb
	run -0 sbx provision --agent a --image bb --own-rootfs -q
	echo '{"max_envs":1}' >"$SBX_HOME/config/sandbox.json"
	# a run on a's environment holds it (a shared lock) while it lasts
	"$SBX" exec --agent a -- sh -c 'echo up >$HOME/up; i=0
	    while [ ! -e $HOME/stop ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done' \
	    </dev/null >/dev/null 2>&1 &
	BG=$!
	for _ in $(seq 100); do
		[ -e "$SBX_HOME/workspace/agents/a/up" ] && break
		sleep 0.05
	done
	run -0 sbx provision --agent b --image bb --own-rootfs --json
	touch "$SBX_HOME/workspace/agents/a/stop"
	wait "$BG"
	BG=""
	[ "$(json_get "$output" '.result.evicted | length')" = 0 ]
	[[ "$(json_get "$output" '.warnings[0]')" == *"in use"* ]]
	[ -d "$SBX_HOME/envs/a/rootfs" ]
	# once it is over, the next provision evicts it
	run -0 sbx provision --agent b --own-rootfs --json
	[ "$(json_get "$output" '.result.evicted[0].agent')" = a ]
	[ ! -e "$SBX_HOME/envs/a" ]
}

@test "--own-rootfs on a file system with reflinks (XFS): clones, not copies" {
	is_root || skip "needs root (a loop-mounted XFS)"
	command -v mkfs.xfs >/dev/null || skip "mkfs.xfs is not installed"
	truncate -s 300M "$TEST_ROOT/xfs.img"
	mkfs.xfs -q -m reflink=1 "$TEST_ROOT/xfs.img" || skip "mkfs.xfs failed"
	MNT="$TEST_ROOT/mnt"
	mkdir -p "$MNT"
	mount -o loop "$TEST_ROOT/xfs.img" "$MNT" || skip "cannot mount a loop device here"
	chmod 0755 "$MNT"
	export SBX_HOME="$MNT/state"
	add_bb
	run -0 sbx provision --agent r --image bb --own-rootfs --json
	[ "$(json_get "$output" .result.env.clone)" = reflink ]
	[ "$(envrec r clone)" = reflink ]
	r="$SBX_HOME/envs/r/rootfs"
	cmp "$r/bin/busybox" /bin/busybox
	echo 'changed in the env' >"$r/usr/share/fixture/marker"
	[ "$(cat "$SBX_HOME/images/$BB/rootfs/usr/share/fixture/marker")" = "hello from the image" ]
	run -0 sbx provision image verify bb
	run -0 --separate-stderr sbx exec --agent r -- cat /usr/share/fixture/marker
	[ "$output" = "changed in the env" ]
}
