# sbx: non-recursive Makefile.
#
#   make [all]           build everything into $(B)
#   make check           unit + integration tests (prove), also as an unprivileged user
#   make SANITIZE=address,undefined check   the same, built with sanitizers into build-san/
#   make install PREFIX=/usr/local DESTDIR=
#   make lint            clang-format check, shellcheck, mandoc -Tlint
#   make fuzz            libFuzzer targets, FUZZ_TIME seconds each (clang);
#                        check builds them (fuzz-build) and runs each briefly
#   make bench           scripts/bench-*.sh

VERSION    = 0.1.0
PREFIX    ?= /usr/local
BINDIR    ?= $(PREFIX)/bin
LIBEXECDIR?= $(PREFIX)/libexec
MANDIR    ?= $(PREFIX)/share/man
DATADIR   ?= $(PREFIX)/share
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR  ?= $(DATADIR)/zsh/vendor-completions
DESTDIR   ?=

CC        ?= cc
PKG_CONFIG ?= pkg-config
SANITIZE  ?=

ifneq ($(SANITIZE),)
B         ?= build-san
SANFLAGS   = -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -g
else
B         ?= build
SANFLAGS   =
endif

WARN   = -std=c11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	 -Wformat=2 -Wvla -Wno-unused-parameter
HARDEN = -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE
ifeq ($(DEVELOPER),1)
WARN  += -Werror
endif
OPT   ?= -O2 -g

# lib/ by area, in the order of its layers (lib/README; checked by
# tests/integration/0911-layers.sh): each folder is on the include path, so a
# module includes "foo.h" wherever foo lives.
LIB_DIRS   = base state sandbox image net exec service report
LIB_IQUOTE = $(LIB_DIRS:%=-iquote lib/%)

# openssl: the proxy's CA and the TLS it terminates for credential rules
# (lib/net/tlsca.c, issue 34); --as-needed keeps it out of every program
# that does not call it.
PKGS      = jansson libsodium libseccomp libarchive openssl
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
CPPFLAGS += -D_GNU_SOURCE $(LIB_IQUOTE) -DSBX_VERSION='"$(VERSION)"' \
	    -DSBX_LIBEXECDIR='"$(LIBEXECDIR)/sbx"'
CFLAGS   += $(OPT) $(WARN) $(HARDEN) $(SANFLAGS) $(PKG_CFLAGS)
# --as-needed: a program records only the shared libraries it really uses,
# so sbx-exec never loads libcurl or libarchive at start-up.
LDFLAGS  += -pie -Wl,-z,relro,-z,now -Wl,--as-needed $(SANFLAGS)
LIBS_ALL := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)
LIBS_STATIC := $(shell $(PKG_CONFIG) --static --libs $(filter-out libarchive,$(PKGS)) 2>/dev/null)
# manifest.c hashes with nettle (SHA extensions where the CPU has
# them): sbx-preflight verifies templates with it and no libarchive, which
# only image.c (sbx-provision) uses; tests/integration/0910-needed.sh
# checks what each program links.  download.c (https
# image sources, in sbx-provision only) needs libcurl's headers but loads
# the library with dlopen when a URL is given: linked, it and its two dozen
# libraries would cost every sbx provision ~10 ms at start-up.  sbx-exec
# and the front-end never load it.
NETTLE_LIBS := $(shell $(PKG_CONFIG) --libs nettle 2>/dev/null)
CURL_CFLAGS := $(shell $(PKG_CONFIG) --cflags libcurl 2>/dev/null)
CFLAGS   += $(CURL_CFLAGS)
LIBS_ALL += $(NETTLE_LIBS)
ifneq ($(SANITIZE),)
FRONT_LDFLAGS = $(LDFLAGS)
FRONT_LIBS = $(LIBS_ALL)
else
FRONT_LDFLAGS = -static-pie -Wl,-z,relro,-z,now
FRONT_LIBS = $(LIBS_STATIC)
endif

LIB_SRC  = $(sort $(wildcard $(LIB_DIRS:%=lib/%/*.c)))
LIB_OBJ  = $(LIB_SRC:%.c=$(B)/%.o)
LIBSBX   = $(B)/lib/libsbx.a

# Programs: cmd/sbx.c is the front-end; cmd/sbx-*.c are its commands;
# cmd/sbx-init.c is the in-sandbox pid 1, linked statically because it must
# run inside images that carry no C library of ours.
PROGS    = $(patsubst cmd/%.c,%,$(filter-out cmd/sbx.c cmd/sbx-init.c cmd/sbx-host.c,\
	   $(wildcard cmd/sbx-*.c)))
PROG_BIN = $(PROGS:%=$(B)/libexec/sbx/%)
# What the programs share (usage, emit, fail, warnings, the finish step):
# linked into every program and the front-end.
CMD_COMMON = $(B)/cmd/common.o
FRONT    = $(B)/bin/sbx
INIT     = $(B)/libexec/sbx/sbx-init
HOSTCLI  = $(B)/libexec/sbx/sbx-host

UNIT_SRC = $(sort $(wildcard tests/unit/t-*.c))
UNIT_BIN = $(UNIT_SRC:tests/unit/%.c=$(B)/tests/unit/%)
HELP_SRC = $(sort $(wildcard tests/helpers/*.c))
HELP_BIN = $(HELP_SRC:tests/helpers/%.c=$(B)/tests/helpers/%)

all: $(FRONT) $(PROG_BIN) $(INIT) $(HOSTCLI)

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(LIBSBX): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $(LIB_OBJ)

# The front-end, linked statically (static-pie keeps ASLR): no dynamic
# loading on every `sbx foo`; `exec` is built in (the same cmd/sbx-exec.o
# as sbx-exec's, whose main() is cmd/exec-main.c: the front-end calls
# cmd_exec()), saving one exec(2) per sandbox.
$(B)/cmd/sbx-front.o: cmd/sbx.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -DSBX_WITH_EXEC $(CFLAGS) -MMD -MP -c -o $@ $<

# The install paths compiled into the programs are recorded in a generated
# file (git's GIT-PREFIX): a build for another PREFIX or LIBEXECDIR rebuilds
# what embeds them, so `make install PREFIX=X` after a plain `make` never
# installs a front-end that looks in the old libexec directory.  DESTDIR is
# not recorded: staging an install never rebuilds.
$(B)/SBX-PREFIX: FORCE
	@mkdir -p $(dir $@)
	@printf '%s\n' '$(LIBEXECDIR)' >$@+; \
	if cmp -s $@+ $@; then rm -f $@+; else mv -f $@+ $@; fi

$(B)/cmd/sbx-front.o $(B)/cmd/sbx-exec.o $(B)/cmd/sbx-mcp.o: $(B)/SBX-PREFIX

# The programs, one row each: the cmd/ objects it links (before the
# library, whose members they pull in), then its own libraries after
# libsbx's.  A program without a row is cmd/sbx-NAME.c alone.  Each links
# $(CMD_COMMON) and $(LIBSBX); tests/integration/0910-needed.sh checks
# what each ends up NEEDing.
#   sbx exec: the job subcommands (ps, poll, wait, kill, gc), the terminal
#     prompt of --ask and the option table are files of their own, linked
#     into sbx-exec and the front-end; main() is cmd/exec-main.c.
#   sbx provision: provision, image, status and list, unprovision, reset
#     and remove.
#   sbx proxy: check and the ask subcommands (asks, answer); the daemons'
#     serve, status and stop (cmd/daemon-serve.c, sbx-bridge's too).
#   sbx plugin: install, run and tools run sandboxes through the engine
#     and render runs as sbx exec does (cmd/exec-jobs.c); reading a recipe
#     from a path or an URL is cmd/plugin-source.c.
EXEC_OBJS           = sbx-exec exec-jobs exec-ask exec-opts exec-session
OBJS_sbx-exec       = $(EXEC_OBJS) exec-main
OBJS_sbx-provision  = sbx-provision provision-agent provision-image \
		      provision-status provision-remove provision-disk \
		      provision-identity
OBJS_sbx-proxy      = sbx-proxy proxy-ask proxy-check daemon-serve
OBJS_sbx-bridge     = sbx-bridge daemon-serve
OBJS_sbx-install    = sbx-install install-run
OBJS_sbx-secret     = sbx-secret secret-input
OBJS_sbx-file       = sbx-file file-text
OBJS_sbx-plugin     = sbx-plugin plugin-run plugin-source exec-jobs
# sbx-proxy alone resolves names, asynchronously, with c-ares (see
# CARES_LIBS below); sbx config checks the proxy's settings with the
# proxy's own loader (lib/net/proxycfg.c: no resolver, no c-ares); sbx
# install checks its registries as `sbx proxy check --resolve` does.
# sbx-bridge alone serves HTTP (libmicrohttpd), keeps memory in SQLite
# (FTS5) and forwards inference with libcurl.
LIBS_sbx-proxy      = $(CARES_LIBS)
LIBS_sbx-install    = $(CARES_LIBS)
LIBS_sbx-bridge     = $(BRIDGE_LIBS)
# sbx-exec starts every sandbox: linked statically (static-pie) it pays no
# dynamic loading (about 1.4 ms a run on the reference machine).  It reads
# /etc/passwd itself (lib/base/users.c), so no NSS module is ever needed.
ifeq ($(SANITIZE),)
LINK_sbx-exec       = -static-pie -Wl,-z,relro,-z,now
LINKLIBS_sbx-exec   = $(LIBS_STATIC)
endif

prog_objs = $(patsubst %,$(B)/cmd/%.o,$(or $(OBJS_$(1)),$(1)))
define PROG_RULE
$(B)/libexec/sbx/$(1): $(call prog_objs,$(1)) $$(CMD_COMMON) $$(LIBSBX)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(or $$(LINK_$(1)),$$(LDFLAGS)) -o $$@ $$^ \
	    $$(or $$(LINKLIBS_$(1)),$$(LIBS_ALL) $$(LIBS_$(1)))
endef
$(foreach p,$(PROGS),$(eval $(call PROG_RULE,$(p))))

$(FRONT): $(B)/cmd/sbx-front.o $(EXEC_OBJS:%=$(B)/cmd/%.o) $(CMD_COMMON) \
    $(LIBSBX)
	@mkdir -p $(dir $@)
	$(CC) $(FRONT_LDFLAGS) -o $@ $^ $(FRONT_LIBS)

# The digest of the seccomp program (seccomp.c loads a cached program
# only when its SHA-256 is this one).  A build-only generator, never
# installed, builds the program from seccomp.c compiled without a
# digest, linked the way sbx-exec and the front-end are (statically, or
# dynamically with the sanitizers), and writes the header.  A binary whose
# libseccomp builds other bytes still works: it builds on every run.
GEN_SECCOMP = $(B)/gen/gen-seccomp-digest
$(B)/gen/seccomp-gen.o: lib/sandbox/seccomp.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -DSBX_SECCOMP_GEN $(CFLAGS) -MMD -MP -c -o $@ $<

$(GEN_SECCOMP): $(B)/gen/gen-seccomp-digest.o $(B)/gen/seccomp-gen.o \
    $(B)/lib/base/error.o
	$(CC) $(FRONT_LDFLAGS) -o $@ $^ $(FRONT_LIBS)

$(B)/gen/gen-seccomp-digest.o: cmd/gen-seccomp-digest.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(B)/gen/seccomp-digest.h: $(GEN_SECCOMP)
	$(GEN_SECCOMP) $@+ && mv -f $@+ $@

$(B)/lib/sandbox/seccomp.o: $(B)/gen/seccomp-digest.h
$(B)/lib/sandbox/seccomp.o: CPPFLAGS += -iquote $(B)/gen

# sbx-proxy alone resolves names, asynchronously, with c-ares: only
# lib/net/proxy.c and resolver.c include it and only the programs of the
# table above (LIBS_*) and the proxy's tests link it, so sbx-exec never
# loads it.
CARES_CFLAGS := $(shell $(PKG_CONFIG) --cflags libcares 2>/dev/null)
CARES_LIBS := $(shell $(PKG_CONFIG) --libs libcares 2>/dev/null || echo -lcares)
$(B)/lib/net/proxy.o $(B)/lib/net/resolver.o: CFLAGS += $(CARES_CFLAGS)
$(B)/tests/unit/t-proxy: LIBS_ALL += $(CARES_LIBS)

# sbx-bridge's libraries (LIBS_sbx-bridge above): only it and its test
# link them (tests/integration/0910-needed.sh).
BRIDGE_LIBS := $(shell $(PKG_CONFIG) --libs libmicrohttpd sqlite3 libcurl 2>/dev/null) -lpthread
$(B)/tests/unit/t-bridge: LIBS_ALL += $(BRIDGE_LIBS)

# The init must not depend on anything but libc, statically; no sanitizers
# (their runtimes are not available statically).
INIT_SRC = cmd/sbx-init.c cmd/init-setup.c cmd/init-guard.c cmd/init-guard-path.c \
    cmd/init-guard-serve.c cmd/init-guard-sock.c cmd/init-bridge.c \
    cmd/init-session.c
$(INIT): $(INIT_SRC) cmd/initguard.h cmd/init-int.h cmd/init-guard-int.h \
    lib/sandbox/initproto.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(OPT) $(WARN) -D_FORTIFY_SOURCE=2 -fstack-protector-strong -static -o $@ $(INIT_SRC)

# sbx-host, the bridge's client inside the sandbox, is bound into images
# too: static, libc only, like sbx-init (cmd/sbx-host.c includes no lib/).
HOSTCLI_SRC = cmd/sbx-host.c cmd/host-http.c cmd/host-connect.c
$(HOSTCLI): $(HOSTCLI_SRC) cmd/host-int.h cmd/host-connect.h
	@mkdir -p $(dir $@)
	$(CC) -D_GNU_SOURCE -DSBX_VERSION='"$(VERSION)"' $(OPT) $(WARN) -D_FORTIFY_SOURCE=2 -fstack-protector-strong -static -o $@ $(HOSTCLI_SRC)

# The SPANK plugin sbx.so (cmd/spank-sbx.c; sbx-slurm(7)), built when
# Slurm's headers are here (Debian: libslurm-dev; pkg-config slurm where a
# distribution ships a .pc, else the default include path).  A shared
# object loaded into srun, sbatch and slurmstepd: compiled -fPIC, not PIE;
# its part of lib (lib/exec/slurm.c and the two base modules it uses)
# with hidden symbols; never with the sanitizers (a runtime cannot be
# loaded into a program built without it).  Installed in SPANKDIR, which
# plugstack.conf names.
SLURM_CFLAGS := $(shell $(PKG_CONFIG) --cflags slurm 2>/dev/null)
HAVE_SPANK := $(shell echo 'int x;' | $(CC) $(SLURM_CFLAGS) -include slurm/spank.h \
	-fsyntax-only -x c - >/dev/null 2>&1 && echo 1)
SPANKDIR  ?= $(PREFIX)/lib/sbx/slurm
SPANK_SO   = $(B)/lib/slurm/sbx.so
SPANK_LIB  = lib/exec/slurm.c lib/base/names.c lib/base/error.c
SPANK_OBJ  = $(B)/spank/spank-sbx.o $(SPANK_LIB:lib/%.c=$(B)/spank/%.o)
SPANK_CFLAGS = $(OPT) $(WARN) -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIC

$(B)/spank/%.o: lib/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(SPANK_CFLAGS) -fvisibility=hidden -MMD -MP -c -o $@ $<

$(B)/spank/spank-sbx.o: cmd/spank-sbx.c $(B)/SBX-PREFIX
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -DSBX_BINDIR='"$(BINDIR)"' $(SPANK_CFLAGS) $(SLURM_CFLAGS) \
	    -MMD -MP -c -o $@ $<

$(SPANK_SO): $(SPANK_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-z,relro,-z,now -o $@ $(SPANK_OBJ)

all: $(if $(HAVE_SPANK),$(SPANK_SO))

$(B)/tests/unit/t-%: tests/unit/t-%.c tests/unit/tap.h tests/unit/fixture.h \
    $(LIBSBX)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -iquote tests/unit $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIBSBX) $(LIBS_ALL)

# t-execreq ties sbx exec's option table (cmd/exec-opts.c) to the
# request's fields: it links the table.
$(B)/tests/unit/t-execreq: tests/unit/t-execreq.c tests/unit/tap.h \
    $(B)/cmd/exec-opts.o $(LIBSBX)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -iquote tests/unit -iquote cmd $(CFLAGS) $(LDFLAGS) -o $@ $< $(B)/cmd/exec-opts.o $(LIBSBX) $(LIBS_ALL)

# Test helpers run inside sandboxes (possibly on images): static, plain.
$(B)/tests/helpers/%: tests/helpers/%.c
	@mkdir -p $(dir $@)
	$(CC) -D_GNU_SOURCE -O1 -static -o $@ $<

# The bridge benchmark's floor links libmicrohttpd, dynamically (it runs
# on the host only).
$(B)/tests/helpers/mhd-floor: tests/helpers/mhd-floor.c
	@mkdir -p $(dir $@)
	$(CC) -D_GNU_SOURCE -O2 -o $@ $< $(shell $(PKG_CONFIG) --cflags --libs libmicrohttpd)

# jget answers the tests' plain jq paths (tests/helpers/jget.c); host only,
# with jansson, dynamically.
$(B)/tests/helpers/jget: tests/helpers/jget.c
	@mkdir -p $(dir $@)
	$(CC) -D_GNU_SOURCE $(OPT) $(WARN) -o $@ $< $(shell $(PKG_CONFIG) --cflags --libs jansson)

tests: $(UNIT_BIN) $(HELP_BIN)

# Install what this machine lacks (idempotent; quick when nothing is).
deps:
	@sh scripts/deps.sh

# The builds that check and demo start use the machine's cores, unless
# the caller chose (-j) and its job server is passed on.
NPROC   := $(shell nproc 2>/dev/null || echo 1)
SUBJOBS  = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(NPROC))

# The npm client (test-only) is installed when the tests to run use it:
# all of them, or an SBX_TEST_ONLY that names 1150; never for make demo.
check: deps
	@$(MAKE) --no-print-directory $(SUBJOBS) all tests
	@$(MAKE) --no-print-directory $(SUBJOBS) fuzz-build
	@case "$${SBX_TEST_ONLY:-1150}" in *1150*) sh scripts/deps.sh --mcp-client ;; esac
	@B=$(B) sh tests/run.sh

bench: all tests
	@sh scripts/deps.sh --mcp-client
	@for s in scripts/bench-*.sh; do echo "== $$s"; B=$(B) sh $$s || exit 1; done

# Offline once the Debian packages are here: deps.sh alone, no npm.
demo: deps
	@$(MAKE) --no-print-directory $(SUBJOBS) all
	@B=$(B) sh scripts/demo.sh

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR)/sbx $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man7 \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR)
	install -m 0755 $(FRONT) $(DESTDIR)$(BINDIR)/sbx
	install -m 0755 $(PROG_BIN) $(INIT) $(HOSTCLI) $(DESTDIR)$(LIBEXECDIR)/sbx/
	for m in man/*.1; do install -m 0644 $$m $(DESTDIR)$(MANDIR)/man1/; done
	for m in man/*.5; do [ -e "$$m" ] && install -m 0644 $$m $(DESTDIR)$(MANDIR)/man5/; done; true
	for m in man/*.7; do [ -e "$$m" ] && install -m 0644 $$m $(DESTDIR)$(MANDIR)/man7/; done; true
	install -m 0644 completions/sbx.bash $(DESTDIR)$(BASHCOMPDIR)/sbx
	install -m 0644 completions/_sbx $(DESTDIR)$(ZSHCOMPDIR)/_sbx
	if [ -f $(SPANK_SO) ]; then install -d $(DESTDIR)$(SPANKDIR) && \
	    install -m 0755 $(SPANK_SO) $(DESTDIR)$(SPANKDIR)/sbx.so; fi
	install -m 0755 scripts/slurm-health.sh $(DESTDIR)$(LIBEXECDIR)/sbx/slurm-health

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/sbx $(DESTDIR)$(BASHCOMPDIR)/sbx $(DESTDIR)$(ZSHCOMPDIR)/_sbx
	rm -rf $(DESTDIR)$(LIBEXECDIR)/sbx
	rm -f $(DESTDIR)$(SPANKDIR)/sbx.so
	for m in man/*.[157]; do rm -f $(DESTDIR)$(MANDIR)/man$${m##*.}/$${m##*/}; done

lint:
	@sh scripts/lint.sh

# libFuzzer targets, built with clang straight from the lib sources they
# exercise (libsbx.a is gcc's, without coverage).  `make fuzz` runs each
# FUZZ_TIME seconds from a seed corpus; new inputs go to $(B)/fuzz/corpus-*,
# crashes to $(B)/fuzz/.  `make check` builds every target too (fuzz-build,
# where clang has libFuzzer; it says why not otherwise) and
# tests/integration/0004-fuzz.sh runs each a few seconds, so that a target
# whose link or seeds rot fails the suite, not the next fuzzing campaign.
FUZZ_CC   ?= clang
FUZZ_TIME ?= 30
FUZZ_FLAGS = -g -O1 -fno-omit-frame-pointer \
	     -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_TARGETS = httpreq tls-sni policy socks5 bridge
FUZZ_BIN  = $(FUZZ_TARGETS:%=$(B)/fuzz/fuzz-%)

$(B)/fuzz/fuzz-%: tests/fuzz/fuzz-%.c lib/net/httpreq.c lib/net/httpreq.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -D_GNU_SOURCE $(LIB_IQUOTE) $(FUZZ_FLAGS) -o $@ $< lib/net/httpreq.c

# The whole decision on a request head: the parser, then the policy (which
# reads the Public Suffix List with fsutil's sbx_fs_read_fd).
POLICY_FUZZ_SRC = lib/net/httpreq.c lib/net/netpolicy.c lib/net/psl.c \
	lib/base/buf.c lib/base/error.c lib/base/fsutil.c
$(B)/fuzz/fuzz-policy: tests/fuzz/fuzz-policy.c $(POLICY_FUZZ_SRC)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -D_GNU_SOURCE $(LIB_IQUOTE) $(FUZZ_FLAGS) -o $@ $< \
	    $(POLICY_FUZZ_SRC) $(shell $(PKG_CONFIG) --cflags --libs jansson)

# The SOCKS5 framing of the in-sandbox listener on 1080.
$(B)/fuzz/fuzz-socks5: tests/fuzz/fuzz-socks5.c lib/net/socks5.c lib/net/socks5.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -D_GNU_SOURCE $(LIB_IQUOTE) $(FUZZ_FLAGS) -o $@ $< lib/net/socks5.c

# The bridge's request path past the transport: routing, {name} decoding,
# the body's parse and the handlers, over stub stores.
BRIDGE_FUZZ_SRC = lib/service/bridgeapi.c lib/base/envelope.c lib/base/error.c \
	lib/base/buf.c lib/base/utf8.c
$(B)/fuzz/fuzz-bridge: tests/fuzz/fuzz-bridge.c $(BRIDGE_FUZZ_SRC)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -D_GNU_SOURCE $(LIB_IQUOTE) $(FUZZ_FLAGS) -o $@ $< \
	    $(BRIDGE_FUZZ_SRC) $(shell $(PKG_CONFIG) --cflags --libs jansson)

# Can $(FUZZ_CC) link a libFuzzer program here?  A one-line probe, so that a
# machine without clang (or without its runtime) skips with the reason
# instead of failing check; the reason is kept for 0004-fuzz.sh to print.
$(B)/fuzz/.probe: FORCE
	@mkdir -p $(dir $@)
	@[ -f $@ ] && [ ! -s $@ ] && exit 0; \
	printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
	    'int LLVMFuzzerTestOneInput(const uint8_t *, size_t);' \
	    'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
	    >$(B)/fuzz/probe.c; \
	if ! command -v $(FUZZ_CC) >/dev/null 2>&1; then \
		echo "$(FUZZ_CC) is not installed (scripts/deps.sh installs clang)" >$@; \
	elif ! $(FUZZ_CC) $(FUZZ_FLAGS) -o $(B)/fuzz/probe $(B)/fuzz/probe.c \
	    >$(B)/fuzz/probe.log 2>&1; then \
		echo "$(FUZZ_CC) cannot link -fsanitize=fuzzer,address,undefined: $$(head -c 300 $(B)/fuzz/probe.log | tr '\n' ' ')" >$@; \
	else \
		: >$@; \
	fi; \
	rm -f $(B)/fuzz/probe $(B)/fuzz/probe.c $(B)/fuzz/probe.log
# (A success is kept: only a machine that could not is probed again.)

fuzz-build: $(B)/fuzz/.probe
	@if [ -s $(B)/fuzz/.probe ]; then \
		echo "# skip: fuzz targets: $$(cat $(B)/fuzz/.probe)"; \
	else \
		$(MAKE) --no-print-directory $(FUZZ_BIN); \
	fi

fuzz: $(FUZZ_BIN)
	@set -e; for t in httpreq:httpreq tls-sni:tls policy:httpreq \
	    socks5:socks5 bridge:bridge; do \
		n=$${t%%:*}; c=$${t##*:}; \
		mkdir -p $(B)/fuzz/corpus-$$c; \
		echo "== fuzz-$$n for $(FUZZ_TIME) s"; \
		$(B)/fuzz/fuzz-$$n -max_total_time=$(FUZZ_TIME) -timeout=10 \
		    -max_len=20000 -dict=tests/fuzz/$$n.dict \
		    -print_final_stats=1 -artifact_prefix=$(B)/fuzz/ \
		    $(B)/fuzz/corpus-$$c tests/fuzz/corpus-$$c; \
	done

clean:
	rm -rf build build-san


# Keep the objects of the programs (intermediate files to make): otherwise a
# plain `make` recompiles and relinks them every time.
.SECONDARY:

.PHONY: FORCE deps all tests check bench demo install uninstall lint clean fuzz \
    fuzz-build
-include $(LIB_OBJ:.o=.d) $(B)/cmd/*.d $(B)/gen/*.d $(B)/spank/*.d $(B)/spank/*/*.d
