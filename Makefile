# SPDX-License-Identifier: GPL-2.0-or-later
# vnibroker build: one GNU Makefile, no autotools.
#
#   make            build every binary into build/ (without the Slurm
#                   plugin where <slurm/spank.h> is missing)
#   make check      install missing packages, build with ASan+UBSan into
#                   build/san/, run unit, fuzz-regression and integration tests
#   make run        the embedded default: private PostgreSQL + vnibrokerd
#                   (installs and builds only what it runs: no Slurm)
#   make fuzz       run each libFuzzer target for FUZZ_SECONDS (clang)
#   make bench      benchmarks with figures and targets
#   make bench-compare BASE=DIR  the same, alternated against checkout DIR
#   make install    honours PREFIX and DESTDIR
#   make deb        Debian packages into build/deb/ (dpkg-buildpackage)
#   make scan       clang's static analyzer (scan-build) over a fresh build
#   make lint       source checks no compiler makes (jansson references,
#                   the layers' order, licence lines)
#
# CI adds WERROR=1.  Sources are found by wildcard, so a new file in lib/,
# server/'s folders or tests/unit/ needs no edit here.

PREFIX     ?= /usr/local
SYSCONFDIR ?= /etc
DESTDIR    ?=
BUILD      ?= build
CC         ?= cc
SAN        ?= 0
WERROR     ?= 0
FUZZ_SECONDS ?= 60

PKGS := libmicrohttpd jansson libpq libcurl openssl

WARN := -Wall -Wextra -Wstrict-prototypes -Wmissing-prototypes \
        -Wmissing-declarations -Wshadow -Wpointer-arith -Wcast-qual \
        -Wsign-compare -Wtype-limits -Wformat=2 -Wundef -Wvla \
        -fno-common -pedantic
ifeq ($(WERROR),1)
WARN += -Werror
endif

CPPFLAGS_BASE := -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iinclude -I.
CFLAGS_BASE   := -std=c11 -g -O2 -fstack-protector-strong $(WARN)
ifeq ($(SAN),1)
CFLAGS_BASE   += -O1 -fsanitize=address,undefined -fno-omit-frame-pointer \
                 -fno-sanitize-recover=all
LDFLAGS_BASE  := -fsanitize=address,undefined
else
CPPFLAGS_BASE += -D_FORTIFY_SOURCE=2
endif

# The packages' flags are asked of pkg-config once, when a recipe first
# needs them: after `deps` (or deps-run, deps-demo) has run for the goals
# that run it first (check, run, demo, bench, fuzz), and never for deps,
# clean or format.  A missing .pc stops make, naming it.
PKG_MISSING = $(foreach p,$(PKGS),\
                  $(if $(shell pkg-config --exists $(p) && echo y),,$(p).pc))
pkg_config  = $(if $(strip $(PKG_MISSING)),$(error pkg-config finds no \
                  $(strip $(PKG_MISSING)): `make deps` installs the packages),\
                  $(shell pkg-config $(1) $(PKGS)))
PKG_CFLAGS  = $(eval PKG_CFLAGS := $$(call pkg_config,--cflags))$(PKG_CFLAGS)
PKG_LIBS    = $(eval PKG_LIBS := $$(call pkg_config,--libs))$(PKG_LIBS)

ALL_CPPFLAGS = $(CPPFLAGS_BASE) $(PKG_CFLAGS) $(CPPFLAGS)
ALL_CFLAGS   = $(CFLAGS_BASE) $(CFLAGS)
ALL_LDFLAGS  = $(LDFLAGS_BASE) $(LDFLAGS)
LIBS_BASE    = $(PKG_LIBS) -lpthread

# ---- sources ---------------------------------------------------------------

LIB_SRCS     := $(wildcard lib/*.c)
SERVER_SRCS  := $(filter-out server/main.c,$(wildcard server/*.c server/*/*.c))
SCHEMA_SQL   := $(sort $(wildcard schema/*.sql))
SCHEMA_FUNCS := $(sort $(wildcard schema/functions/*.sql))
UNIT_SRCS    := $(wildcard tests/unit/*/test_*.c)
# Any other C file under tests/unit/ is a helper the unit tests link.
UNIT_HELPER_SRCS := $(filter-out $(UNIT_SRCS),$(wildcard tests/unit/*/*.c))
FUZZ_SRCS    := $(wildcard tests/fuzz/fuzz_*.c)
CLI_SRCS     := $(wildcard cli/*.c)
FMSIM_SRCS   := $(wildcard fmsim/*.c)
AGENT_SRCS   := $(filter-out agent/main.c,$(wildcard agent/*.c))

LIB_OBJS     := $(LIB_SRCS:%.c=$(BUILD)/%.o)
SERVER_OBJS  := $(SERVER_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/gen/schema_sql.o
CLI_OBJS     := $(CLI_SRCS:%.c=$(BUILD)/%.o)
FMSIM_OBJS   := $(FMSIM_SRCS:fmsim/%.c=$(BUILD)/fmsim-obj/%.o)
FMCLIENT_SRCS := $(wildcard fmclient/*.c)
FMCLIENT_OBJS := $(FMCLIENT_SRCS:%.c=$(BUILD)/%.o)
AGENT_OBJS   := $(AGENT_SRCS:%.c=$(BUILD)/%.o)
UNIT_BINS    := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/unit/%)
REPLAY_BINS  := $(FUZZ_SRCS:tests/fuzz/fuzz_%.c=$(BUILD)/tests/fuzz/replay_%)
STRESS_SRCS  := tests/stress/history.c tests/stress/hrec.c tests/stress/hcheck.c \
                tests/stress/hnodes.c tests/stress/hview.c tests/stress/hsteps.c \
                tests/stress/hstepcheck.c tests/stress/smap.c \
                tests/stress/hargs.c tests/stress/hdeadline.c
STRESS_BINS  := $(BUILD)/tests/stress/history
# The handlers' in-process tests need a database: 0025-handlers.sh runs them.
INPROC_SRCS  := $(wildcard tests/inproc/*.c)
INPROC_BINS  := $(BUILD)/tests/inproc/test_handlers

LIBVNIB      := $(BUILD)/libvnib.a
LIBSERVER    := $(BUILD)/libserver.a
LIBFMCLIENT  := $(BUILD)/libfmclient.a
LIBAGENT     := $(BUILD)/libagent.a
LIBUNITTEST  := $(BUILD)/libunittest.a
BINS         := $(BUILD)/vnibrokerd $(BUILD)/vnibctl $(BUILD)/fmsim \
                $(BUILD)/vnib-agent
# Where the artifacts built against one Slurm release go: $(BUILD) for the
# installed Slurm, $(BUILD)/slurm-VERSION for each release
# deploy/tools/slurm-build.sh built (see "Other Slurm releases" below).
SLURM_OUT    ?= $(BUILD)
PLUGINS      := $(SLURM_OUT)/vnib_spank.so

# The Slurm-dependent artifacts (the SPANK plugin, and the fuzz target that
# compiles it) are built only where <slurm/spank.h> is found under
# SLURM_INCLUDE, so that a broker-only host can run `make`; `make check`
# requires them (SLURM_REQUIRED=1).
SLURM_INCLUDE  ?= /usr/include
SLURM_REQUIRED ?= 0
HAVE_SLURM     := $(if $(wildcard $(SLURM_INCLUDE)/slurm/spank.h),1,0)
SLURM_CPPFLAGS := $(if $(filter-out /usr/include,$(SLURM_INCLUDE)),-isystem $(SLURM_INCLUDE))
ifeq ($(HAVE_SLURM),0)
ifeq ($(SLURM_REQUIRED),1)
$(error <slurm/spank.h> is not under $(SLURM_INCLUDE): the tests need the Slurm headers; `make deps` installs libslurm-dev (as root))
endif
PLUGINS      :=
REPLAY_BINS  := $(filter-out %/replay_spank_env,$(REPLAY_BINS))
SLURM_SKIPPED := slurm-skipped
endif

.PHONY: all tests check unit integration run deps deps-run deps-demo deps-fuzz \
        fuzz bench bench-bins \
        install clean format format-check scan lint slurm-skipped
.DEFAULT_GOAL := all

all: $(BINS) $(PLUGINS) $(SLURM_SKIPPED)

tests: $(BINS) $(PLUGINS) $(UNIT_BINS) $(INPROC_BINS) $(REPLAY_BINS) \
       $(STRESS_BINS) $(SLURM_SKIPPED)

# One line, however many goals asked for the Slurm artifacts.
slurm-skipped:
	@echo 'make: skipped vnib_spank.so and replay_spank_env (no slurm/spank.h under $(SLURM_INCLUDE)): `make deps` as root, or apt-get install libslurm-dev, builds them'

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

# The git revision built, for vnib_build_info (only server/api/ops.c uses it).
# $(BUILD)/revision is rewritten only when it changes, so that ops.o is
# rebuilt then and only then.
VNIB_REVISION := $(shell [ -e .git ] && git describe --always --dirty 2>/dev/null)
ifeq ($(VNIB_REVISION),)
VNIB_REVISION := unknown
endif

$(BUILD)/server/api/ops.o: ALL_CPPFLAGS += -DVNIB_REVISION='"$(VNIB_REVISION)"'
$(BUILD)/server/api/ops.o: $(BUILD)/revision

$(BUILD)/revision: FORCE
	@mkdir -p $(@D)
	@echo '$(VNIB_REVISION)' | cmp -s - $@ || echo '$(VNIB_REVISION)' > $@

.PHONY: FORCE
FORCE:

# The migrations and the SQL functions are compiled into the binary, so an
# installed vnibrokerd never looks for SQL files on disk.  The folder is a
# prerequisite too: a function file removed or renamed changes only it.
$(BUILD)/gen/schema_sql.c: $(SCHEMA_SQL) $(SCHEMA_FUNCS) schema/functions \
                           deploy/tools/embed-sql.sh
	@mkdir -p $(@D)
	sh deploy/tools/embed-sql.sh $(SCHEMA_SQL) --functions $(SCHEMA_FUNCS) \
	    > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/schema_sql.o: $(BUILD)/gen/schema_sql.c
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -Wno-overlength-strings -c $< -o $@

# The status page (server/api/ui/*) is compiled into the binary too, so that
# /ui/ serves the page this broker was built with (server/api/ui.h).
UI_ASSETS   := $(sort $(wildcard server/api/ui/*))
SERVER_OBJS += $(BUILD)/gen/ui_assets.o

$(BUILD)/gen/ui_assets.c: $(UI_ASSETS) deploy/tools/embed-ui.sh
	@mkdir -p $(@D)
	sh deploy/tools/embed-ui.sh $(UI_ASSETS) > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/ui_assets.o: $(BUILD)/gen/ui_assets.c server/api/ui.h
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -c $< -o $@

$(LIBVNIB): $(LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(LIBSERVER): $(SERVER_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

# The Fabric Manager client (fmclient/*.c; fmsim/ is separate).
$(LIBFMCLIENT): $(FMCLIENT_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

# The node agent's modules (agent/main.c is only the command line).
$(LIBAGENT): $(AGENT_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/vnibrokerd: $(BUILD)/server/main.o $(LIBSERVER) $(LIBFMCLIENT) $(LIBVNIB)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS_BASE)

# The CLI needs only the client library, not the server.
$(BUILD)/vnibctl: $(CLI_OBJS) $(LIBVNIB)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS_BASE)

# The node agent: its commands plus its NIC backends.  libcxi is loaded
# at run time (dlopen), so it is not a build dependency; nor is libcurl:
# the agent's client of the broker is vnib-agent-broker.so (below), which
# it loads beside itself when a command first needs the broker, so that a
# job's start from a lease loads none of libcurl's libraries
# (agent/broker.h).  --as-needed drops what the program does not call.
$(BUILD)/vnib-agent: $(BUILD)/agent/main.o $(LIBAGENT) $(LIBVNIB) \
                     | $(BUILD)/vnib-agent-broker.so
	$(CC) $(ALL_LDFLAGS) -Wl,--as-needed -o $@ $(filter %.o %.a,$^) \
	    $(LIBS_BASE) -ldl

# agent/broker.c and lib/'s client, -fPIC and without the sanitizers (a
# sanitized program loads it as it is), with only broker.o's own symbols
# exported.
LIBVNIB_PIC := $(BUILD)/libvnib_pic.a
$(LIBVNIB_PIC): $(LIB_SRCS:%.c=$(BUILD)/pic/%.o)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

# lib/'s client (client.o) is linked as an object, not from the archive,
# so that its calls (vnib/client.h) are exported too: the Slurm switch
# plugin's helper makes the controller's requests with them
# (plugins/slurm/switch/swv_broker.h).
$(BUILD)/vnib-agent-broker.so: $(BUILD)/pic/agent/broker.o \
                               $(BUILD)/pic/lib/client.o $(LIBVNIB_PIC)
	$(CC) -shared $(LDFLAGS) -Wl,--exclude-libs,ALL -Wl,--as-needed \
	    -o $@ $^ $(LIBS_BASE)

# The agent as a library for the Slurm switch plugin (agent/stepapi.h):
# the agent's modules (without main.c) and lib/, compiled -fPIC into
# $(BUILD)/pic/ for a shared object, and like vnib_spank.so never with the
# sanitizers.  Built when a target asks for it.
AGENT_PIC_OBJS := $(AGENT_SRCS:%.c=$(BUILD)/pic/%.o) \
                  $(LIB_SRCS:%.c=$(BUILD)/pic/%.o)

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(SPANK_CFLAGS) -fPIC -MMD -MP -c $< -o $@

$(BUILD)/libvnibagent_pic.a: $(AGENT_PIC_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

# The Slurm SPANK plugin (srun, sbatch, salloc and slurmstepd dlopen it).
# Always built without the sanitizers, also with SAN=1: a sanitized .so
# cannot be loaded into the unsanitized Slurm binaries.
SPANK_CFLAGS = $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(ALL_CFLAGS))

# It reads the job's env file with lib/envfile.c (which the Flux shell
# plugin shares), linked from a small archive of lib/'s -fPIC objects
# (the agent's archive's, $(BUILD)/pic/) and hidden inside the plugin
# (--exclude-libs): slurmstepd also loads switch_vnib.so, which has its
# own copy of lib/.
SPANK_LIB_OBJS := $(BUILD)/pic/lib/envfile.o $(BUILD)/pic/lib/error.o

$(BUILD)/libvnibspank_pic.a: $(SPANK_LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(SLURM_OUT)/vnib_spank.so: plugins/slurm/spank/vnib_spank.c \
                            $(BUILD)/libvnibspank_pic.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(SLURM_CPPFLAGS) $(SPANK_CFLAGS) -fPIC -shared \
	    $(LDFLAGS) -MMD -MP -o $@ $< $(BUILD)/libvnibspank_pic.a \
	    -Wl,--exclude-libs,ALL

# ---- switch/vnib, the Slurm switch plugin ----------------------------------
# A switch plugin reads slurmctld's and slurmstepd's structures, so it is
# compiled against a configured Slurm source tree of the installed version:
# SLURM_SRC=/path for a site's own, else the one `make deps` fetches
# (deploy/tools/slurm-src.sh) into build/slurm-src/tree, shared by every
# BUILD.  Without either, `make` skips the plugin with a message; `make
# check` (SLURM_REQUIRED=1) requires it.  Built without the sanitizers,
# as vnib_spank.so is.
#
# Slurm loads switch_vnib.so into srun, slurmd, slurmctld and every
# slurmstepd, so it is only the Slurm glue and the step data's wire form,
# with lib/'s error, clock and loader objects: no libcurl, no jansson, no
# agent.  What talks to the broker and the NICs (swv_ctld.c, swv_node.c
# and the agent's code, libvnibagent_pic.a) is vnib-switch-helper.so,
# which the plugin loads only in slurmctld (and a job's stepmgr) and in a
# step's slurmstepd (plugins/slurm/switch/swv_helper.h).  The helper
# includes no Slurm header, so one serves every release; it links no
# libcurl either (its client is vnib-agent-broker.so, loaded beside it at
# the first request).  Each exports only its entry points
# (plugins/slurm/switch/exports.map, swv_helper.map).
#
# Only what needs the tree fetches it: `make deps` (and so `make check`,
# `make bench`), and a goal that names the plugin, such as
# `make build/switch_vnib.so` or `make deb` (the slurm-src target, when
# SLURM_SRC is not given).  `make`, `make run` and `make demo` never do.
# Without SLURM_SRC, make asks slurm-src.sh --print once, which fetches
# nothing: it prints the fetched tree's path if that is configured for
# the installed Slurm version, else nothing (a few milliseconds).
SLURM_SRC_CACHE := build/slurm-src
# SLURM_PREFIX=DIR: a Slurm installed in DIR (a site's own, or a build of
# deploy/tools/slurm-build.sh, whose configured tree is DIR/../src): its
# headers for the SPANK plugin, its tree for the switch plugin.
ifneq ($(SLURM_PREFIX),)
SLURM_INCLUDE := $(SLURM_PREFIX)/include
ifeq ($(SLURM_SRC),)
SLURM_SRC := $(abspath $(SLURM_PREFIX)/../src)
endif
endif
ifeq ($(SLURM_SRC),)
SLURM_SRC       := $(shell sh deploy/tools/slurm-src.sh build --print 2>/dev/null)
SLURM_TREE      := $(SLURM_SRC_CACHE)/tree
SLURM_SRC_FETCH := slurm-src
else
SLURM_TREE      := $(SLURM_SRC)
SLURM_SRC_FETCH :=
endif
HAVE_SLURM_SRC := $(if $(SLURM_SRC),$(if $(wildcard $(SLURM_SRC)/config.h),1,0),0)
SWITCH_HELPER_SRCS := $(addprefix plugins/slurm/switch/,\
                        swv_helper.c swv_ctld.c swv_node.c swv_broker.c \
                        swv_outbox.c swv_conn.c)
SWITCH_SRCS := $(filter-out $(SWITCH_HELPER_SRCS),\
                 $(wildcard plugins/slurm/switch/*.c))
SWITCH_OBJS := $(SWITCH_SRCS:%.c=$(SLURM_OUT)/pic/%.o)
SWITCH_LIB_OBJS := $(addprefix $(BUILD)/pic/lib/,error.o monotime.o trustload.o)
SWITCH_SO   := $(SLURM_OUT)/switch_vnib.so
SWITCH_HELPER := $(BUILD)/vnib-switch-helper.so
ifeq ($(HAVE_SLURM_SRC),1)
PLUGINS     += $(SWITCH_SO)
else
ifeq ($(SLURM_REQUIRED),1)
$(error no configured Slurm source tree (SLURM_SRC=$(SLURM_SRC)): `make deps` (as root) fetches it, or set SLURM_SRC)
endif
SWITCH_SKIPPED := switch-skipped
endif

.PHONY: switch-skipped slurm-src
slurm-src:
	@sh deploy/tools/slurm-src.sh build

switch-skipped:
	@echo 'make: skipped switch_vnib.so (no configured Slurm source tree): `make deps` as root fetches it into $(SLURM_SRC_CACHE), or pass SLURM_SRC=/path'

all tests: $(if $(filter 1,$(HAVE_SLURM_SRC)),$(SWITCH_SO) $(SWITCH_HELPER)) \
           $(SWITCH_SKIPPED)

# Only swv_plugin.c and the entry points (swv_iface*.c, one per switch
# interface: swv_slurm.h) include Slurm's headers (as system headers:
# they are not written for this project's warnings).
SWITCH_SLURM_OBJS := $(SLURM_OUT)/pic/plugins/slurm/switch/swv_plugin.o \
                     $(patsubst %.c,$(SLURM_OUT)/pic/%.o,\
                       $(wildcard plugins/slurm/switch/swv_iface*.c))
$(SWITCH_SLURM_OBJS): \
    SWITCH_SLURM_FLAGS = -isystem $(SLURM_TREE) -Wno-missing-field-initializers
$(SWITCH_SLURM_OBJS): | $(SLURM_SRC_FETCH)
# Where the plugin looks for its helper when it is not beside it (as make
# install puts them): PKGLIBDIR of the PREFIX it was built with (the
# Debian packages build with PREFIX=/usr).
$(SLURM_OUT)/pic/plugins/slurm/switch/swv_load.o: \
    SWITCH_SLURM_FLAGS = -DSWV_HELPER_DEFAULT='"$(PKGLIBDIR)/vnib-switch-helper.so"'

$(SLURM_OUT)/pic/plugins/slurm/switch/%.o: plugins/slurm/switch/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(SWITCH_SLURM_FLAGS) $(SPANK_CFLAGS) -fPIC \
	    -MMD -MP -c $< -o $@

$(SWITCH_SO): $(SWITCH_OBJS) $(SWITCH_LIB_OBJS) plugins/slurm/switch/exports.map
	$(CC) -shared $(LDFLAGS) -o $@ $(SWITCH_OBJS) $(SWITCH_LIB_OBJS) \
	    -Wl,--as-needed \
	    -Wl,--version-script=plugins/slurm/switch/exports.map -lpthread -ldl

# The agent's code comes from libvnibagent_pic.a less its client of the
# broker (agent/broker.o, lib/client.o): swv_broker.c defines the
# broker_open the agent's stepapi.c calls, which loads vnib-agent-broker.so.
# The helper shares the plugin's Slurm-free parsers (swv_opts, swv_jobinfo).
SWITCH_HELPER_OBJS := $(SWITCH_HELPER_SRCS:%.c=$(BUILD)/pic/%.o) \
                      $(BUILD)/pic/plugins/slurm/switch/swv_opts.o \
                      $(BUILD)/pic/plugins/slurm/switch/swv_jobinfo.o
$(SWITCH_HELPER): $(SWITCH_HELPER_OBJS) $(BUILD)/libvnibagent_pic.a \
                  plugins/slurm/switch/swv_helper.map | $(BUILD)/vnib-agent-broker.so
	$(CC) -shared $(LDFLAGS) -Wl,-z,defs -o $@ \
	    $(SWITCH_HELPER_OBJS) $(BUILD)/libvnibagent_pic.a \
	    -Wl,--exclude-libs,ALL -Wl,--as-needed \
	    -Wl,--version-script=plugins/slurm/switch/swv_helper.map \
	    $(PKG_LIBS) -lpthread -ldl

# ---- Other Slurm releases --------------------------------------------------
# A Slurm plugin loads only into the release it was compiled for.  Besides
# the installed Slurm (Debian 12's 22.05), the plugins are built for every
# release deploy/tools/slurm-build.sh has built into its cache outside the
# checkout ($$VNIB_CACHE, default ~/.cache/vnibroker/slurm-VERSION: src/,
# the configured tree, and prefix/, the installed Slurm):
#   make deps-slurm                  build 24.11 from Debian 13's verified
#                                    upstream tarball (make deps does too)
#   make deps-slurm SLURM_SRC=DIR    build the Slurm source tree DIR (26.05:
#                                    SchedMD's release tag, taken outside
#                                    the checkout)
# and `make slurm-versions` (part of `make tests`) compiles both plugins
# for each into $(BUILD)/slurm-VERSION/, by running make again with
# SLURM_SRC, SLURM_INCLUDE and SLURM_OUT set to that release's.  A release
# never built is not an error here; the tests list it as skipped.
SLURM_EXTRA := $(if $(filter $(BUILD),$(SLURM_OUT)),$(shell sh deploy/tools/slurm-build.sh --dirs 2>/dev/null))

.PHONY: slurm-versions deps-slurm
slurm-versions: $(SWITCH_LIB_OBJS) $(BUILD)/libvnibspank_pic.a
	@for d in $(SLURM_EXTRA); do \
	    v=$${d##*/slurm-}; \
	    $(MAKE) --no-print-directory SLURM_SRC=$$d/src \
	        SLURM_INCLUDE=$$d/prefix/include SLURM_OUT=$(BUILD)/slurm-$$v \
	        $(BUILD)/slurm-$$v/switch_vnib.so \
	        $(BUILD)/slurm-$$v/vnib_spank.so || exit 1; \
	done

deps-slurm:
	@sh deploy/tools/slurm-build.sh $(if $(SLURM_SRC),--src '$(SLURM_SRC)',24.11)

tests: slurm-versions

# ---- Flux: the jobtap and shell plugins (plugins/flux/) --------------------
# Compiled against an installed flux-core, found with pkg-config: under
# FLUX_PREFIX (default: the newest build deploy/tools/flux-build.sh made in
# its cache outside the checkout, `make deps-flux FLUX_SRC=DIR`), else on
# the default pkg-config path.  Where none is found the plugins are not
# built (one line says so) and the Flux tests list themselves as skipped.
# Like the Slurm plugins they are never sanitized: flux-broker and
# flux-shell are not.
FLUX_PREFIX  ?= $(shell sh deploy/tools/flux-build.sh --prefix 2>/dev/null)
FLUX_PKG     := PKG_CONFIG_PATH=$(if $(FLUX_PREFIX),$(FLUX_PREFIX)/lib/pkgconfig:)$${PKG_CONFIG_PATH:-} pkg-config
HAVE_FLUX    := $(shell $(FLUX_PKG) --exists flux-core 2>/dev/null && echo 1 || echo 0)
FLUX_OUT     := $(BUILD)/flux
FLUX_PLUGINS := $(FLUX_OUT)/vnib-jobtap.so $(FLUX_OUT)/vnib-shell.so
FLUX_NODE    := $(FLUX_OUT)/vnib-flux-node
ifeq ($(HAVE_FLUX),1)
FLUX_CPPFLAGS := $(patsubst -I%,-isystem %,$(shell $(FLUX_PKG) --cflags flux-core))
FLUX_LIBS     := $(shell $(FLUX_PKG) --libs flux-core)
FLUX_LIBDIR   := $(shell $(FLUX_PKG) --variable=libdir flux-core)
# The prefix the tests run flux from (tests/integration/flux.sh).
$(FLUX_OUT)/prefix: FORCE
	@mkdir -p $(@D)
	@echo '$(shell $(FLUX_PKG) --variable=prefix flux-core)' | cmp -s - $@ || \
	    echo '$(shell $(FLUX_PKG) --variable=prefix flux-core)' > $@
FLUX_TARGETS := $(FLUX_PLUGINS) $(FLUX_NODE) $(FLUX_OUT)/prefix
else
FLUX_TARGETS := flux-skipped
endif
FLUX_JOBTAP_SRCS := $(wildcard plugins/flux/jobtap/*.c)
FLUX_SHELL_SRCS  := $(wildcard plugins/flux/shell/*.c)
FLUX_NODE_SRCS   := $(wildcard plugins/flux/node/*.c)

$(FLUX_OUT)/pic/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(FLUX_CPPFLAGS) $(SPANK_CFLAGS) -fPIC -MMD -MP \
	    -c $< -o $@

# The jobtap plugin calls the broker with lib/'s client (libcurl) from its
# own threads.  flux_jobtap_* are the job-manager's own, resolved at load.
# lib/'s symbols are hidden inside it (--exclude-libs), as in the shell
# plugin below: flux-core's libraries export hostlist_* and others of the
# same names.
$(FLUX_OUT)/vnib-jobtap.so: $(FLUX_JOBTAP_SRCS:%.c=$(FLUX_OUT)/pic/%.o) \
                            $(BUILD)/libvnibagent_pic.a
	$(CC) -shared $(LDFLAGS) -o $@ $^ -Wl,--exclude-libs,ALL \
	    -Wl,--as-needed $(FLUX_LIBS) $(PKG_LIBS) -lpthread

# The shell's own API (flux_shell_*) is exported by the flux-shell program,
# not by a library, so this one is linked without --no-undefined
# (0710-flux-shell-flux.sh checks that flux-shell and the libraries define
# every symbol it needs).  lib/'s symbols are hidden inside it
# (--exclude-libs): flux-shell exports functions of the same names
# (errprintf, hostlist_create, ...) that would otherwise be called in
# their place.
$(FLUX_OUT)/vnib-shell.so: $(FLUX_SHELL_SRCS:%.c=$(FLUX_OUT)/pic/%.o) \
                           $(BUILD)/libvnibagent_pic.a
	$(CC) -shared $(LDFLAGS) -o $@ $^ -Wl,--exclude-libs,ALL \
	    -Wl,--as-needed $(FLUX_LIBS) $(PKG_LIBS) -lpthread

# The node side, vnib-flux-node (plugins/flux/node/): a program of its own,
# run as root by the per-rank prolog and housekeeping, so built like the
# agent (sanitized with SAN=1), with the agent's modules linked in and
# libflux-core (found at run time where pkg-config found it, unless that
# is a system folder).  It loads the agent's client of the broker,
# vnib-agent-broker.so, from beside itself: a link to the one in $(BUILD)
# here, and in PKGLIBDIR when installed.  Like the agent's, its settings
# file's default is /etc/vnibroker's (--config names another).
FLUX_NODE_OBJS := $(FLUX_NODE_SRCS:%.c=$(BUILD)/%.o)
$(FLUX_NODE_OBJS): ALL_CPPFLAGS += $(FLUX_CPPFLAGS)
FLUX_RPATH := $(if $(filter /usr/lib% /lib%,$(FLUX_LIBDIR)),,-Wl,-rpath,$(FLUX_LIBDIR))

$(FLUX_NODE): $(FLUX_NODE_OBJS) $(LIBAGENT) $(LIBVNIB) \
              | $(FLUX_OUT)/vnib-agent-broker.so
	$(CC) $(ALL_LDFLAGS) -Wl,--as-needed -o $@ $(filter %.o %.a,$^) \
	    $(FLUX_LIBS) $(FLUX_RPATH) $(LIBS_BASE) -ldl

$(FLUX_OUT)/vnib-agent-broker.so: | $(BUILD)/vnib-agent-broker.so
	@mkdir -p $(@D)
	ln -sfn ../vnib-agent-broker.so $@

.PHONY: flux flux-skipped deps-flux
flux: $(FLUX_TARGETS)
all: flux
flux-skipped:
	@echo 'make: skipped the Flux plugins and vnib-flux-node (pkg-config finds no flux-core$(if $(FLUX_PREFIX), under $(FLUX_PREFIX))): `make deps-flux FLUX_SRC=DIR` builds flux-core v0.88.0 into the cache'

deps-flux:
	@sh deploy/tools/flux-build.sh $(if $(FLUX_SRC),--src '$(FLUX_SRC)',--git)

tests: flux

# The Fabric Manager simulator, for tests and `make run` (not the client).
# Its objects are not under $(BUILD)/fmsim/: that is the binary's name.
$(BUILD)/fmsim-obj/%.o: fmsim/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/fmsim: $(FMSIM_OBJS) $(LIBVNIB)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS_BASE)

$(BUILD)/tests/bench/%: tests/bench/%.c $(LIBVNIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(LIBVNIB) $(LIBS_BASE)

# A job's start on one node from a lease, against its services alone
# (tests/bench/run.sh, scenario nodeprolog): the agent's modules too.
$(BUILD)/tests/bench/bench_node: tests/bench/bench_node.c $(LIBAGENT) $(LIBVNIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(LIBAGENT) \
	    $(LIBVNIB) $(LIBS_BASE) -ldl

# The API benchmarks drive a running broker with the load generator.
BENCH_API_SRCS := tests/bench/bench_api.c tests/bench/bench_nodes.c \
                  tests/bench/bench_output.c tests/bench/bench_requests.c \
                  tests/bench/loadgen.c tests/bench/loadgen_hist.c
$(BUILD)/tests/bench/bench_api: $(BENCH_API_SRCS) tests/bench/bench_api.h \
                                tests/bench/loadgen.h $(LIBVNIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ \
	    $(BENCH_API_SRCS) $(LIBVNIB) $(LIBS_BASE) -lm

# The history-checking load client of the stress tests and of the bench's
# contention row (tests/stress/history.c).
$(BUILD)/tests/stress/history: $(STRESS_SRCS) tests/stress/hrec.h \
                               tests/stress/hcheck.h tests/stress/hnodes.h \
                               tests/stress/history.h tests/stress/hview.h \
                               tests/stress/hsteps.h tests/stress/hstepcheck.h \
                               tests/stress/smap.h tests/stress/hdeadline.h \
                               $(LIBVNIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ \
	    $(STRESS_SRCS) $(LIBVNIB) $(LIBS_BASE) -lm

$(LIBUNITTEST): $(UNIT_HELPER_SRCS:%.c=$(BUILD)/%.o)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/tests/unit/%: tests/unit/%.c $(LIBUNITTEST) $(LIBSERVER) $(LIBFMCLIENT) \
                       $(LIBAGENT) $(LIBVNIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(LIBUNITTEST) \
	    $(LIBSERVER) $(LIBFMCLIENT) $(LIBAGENT) $(LIBVNIB) $(LIBS_BASE) \
	    -lcmocka -ldl

$(INPROC_BINS): $(INPROC_SRCS) tests/inproc/harness.h $(LIBSERVER) \
                $(LIBFMCLIENT) $(LIBVNIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $(INPROC_SRCS) \
	    $(LIBSERVER) $(LIBFMCLIENT) $(LIBVNIB) $(LIBS_BASE) -lcmocka

# Each fuzz target is also linked with a small driver that replays the
# committed corpus and regression inputs under the sanitizers, so `make
# check` guards against old crashes without needing clang.
#
# A target that compiles a module's .c into itself (for its static
# functions) names what else it links: FUZZ_LIBS_<name> for the replay
# driver, FUZZ_CSRCS_<name> for clang, FUZZ_LDLIBS_<name> for both.
FUZZ_LIBS_request   := $(LIBSERVER) $(LIBFMCLIENT)
FUZZ_CSRCS_request  := $(filter-out server/api/reservations.c,$(SERVER_SRCS)) \
                       $(FMCLIENT_SRCS) $(BUILD)/gen/schema_sql.c \
                       $(BUILD)/gen/ui_assets.c
# The switch plugin's parsers: plain C, no Slurm (plugins/slurm/switch/).
FUZZ_SWITCH_SRCS := plugins/slurm/switch/swv_jobinfo.c \
                    plugins/slurm/switch/swv_opts.c
FUZZ_LIBS_switch  := $(FUZZ_SWITCH_SRCS)
FUZZ_CSRCS_switch := $(FUZZ_SWITCH_SRCS)
FUZZ_CPPFLAGS_switch := -Iplugins/slurm/switch
FUZZ_LDLIBS_spank_env := -lslurm
FUZZ_CPPFLAGS_spank_env := $(SLURM_CPPFLAGS)

$(BUILD)/tests/fuzz/replay_request: $(FUZZ_LIBS_request)
# test_swv compiles the switch plugin's Slurm-free sources into itself,
# test_swv_free its free count.
$(BUILD)/tests/unit/switch/test_swv: $(wildcard plugins/slurm/switch/swv_*)
$(BUILD)/tests/unit/switch/test_swv_free: $(wildcard plugins/slurm/switch/swv_free.*)
# test_fjt compiles the Flux jobtap plugin's Flux-free sources into itself,
# test_fxn the node side's.
$(BUILD)/tests/unit/flux/test_fjt: $(wildcard plugins/flux/jobtap/fjt_*)
$(BUILD)/tests/unit/flux/test_fxn: $(wildcard plugins/flux/node/fxn_conf.* \
                                              plugins/flux/node/fxn_job.*)
$(BUILD)/tests/fuzz/replay_switch: $(FUZZ_SWITCH_SRCS) \
    $(wildcard plugins/slurm/switch/swv_*.h)
# replay_spank_env compiles the SPANK plugin into itself.
$(BUILD)/tests/fuzz/replay_spank_env: $(wildcard plugins/slurm/spank/*.[ch])

$(BUILD)/tests/fuzz/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(LIBVNIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(FUZZ_CPPFLAGS_$*) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ \
	    tests/fuzz/fuzz_$*.c tests/fuzz/replay.c $(FUZZ_LIBS_$*) $(LIBVNIB) \
	    $(LIBS_BASE) $(FUZZ_LDLIBS_$*)

# (not the Slurm source tree's: its debian/*.d are no dependency files;
# nor those of `make deb`'s copies of the tree, DEB_DIR/src)
# A dependency file whose source is gone (moved or deleted since it was
# written) is left out: its stale path would stop make with "No rule to
# make target" instead of rebuilding from the source where it is now.
-include $(shell find $(BUILD) -path '*/slurm-src' -prune -o -path '*/deb*/src' -prune \
              -o -name '*.d' -type f -print 2>/dev/null | \
              xargs -r awk 'FNR == 1 { src = $$0; sub(/^[^:]*: */, "", src); \
                  sub(/[ \\].*$$/, "", src); \
                  if (src == "" || (getline line < src) >= 0) print FILENAME; \
                  close(src) }')

# ---- set-up ----------------------------------------------------------------

deps:
	@sh deploy/tools/deps.sh

deps-fuzz:
	@sh deploy/tools/deps.sh fuzz

# ---- tests -----------------------------------------------------------------

check: deps
	$(MAKE) --no-print-directory SLURM_REQUIRED=1 SAN=1 BUILD=build/san tests
	sh tests/lint/run.sh build/san
	sh tests/run-all.sh build/san

# Source checks no compiler makes (tests/lint/): jansson reference steals,
# includes and calls against the layers' order (calls when $(BUILD)
# holds the broker's objects), and each source file's SPDX licence line
# (tests/lint/spdx.sh).
lint:
	sh tests/lint/run.sh $(if $(wildcard $(BUILD)/server),$(BUILD))

unit: tests
	sh tests/run-all.sh --unit-only $(BUILD)

integration: tests
	sh tests/run-all.sh --integration-only $(BUILD)

FUZZ_FLAGS  = -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined \
              $(CPPFLAGS_BASE) $(PKG_CFLAGS)
# FUZZ_ONLY="request toml" limits `make fuzz` to those targets.
FUZZ_ONLY  ?=
FUZZ_RUN   := $(if $(FUZZ_ONLY),$(FUZZ_ONLY:%=tests/fuzz/fuzz_%.c),$(FUZZ_SRCS))
FUZZ_BINS  := $(FUZZ_RUN:tests/fuzz/%.c=$(BUILD)/fuzz/%)

# Each libFuzzer binary in one clang command; `make fuzz` builds them
# all (installing clang first), then runs each for FUZZ_SECONDS.
.SECONDEXPANSION:
$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(LIB_SRCS) $$(FUZZ_CSRCS_$$*)
	@mkdir -p $(@D)
	clang $(FUZZ_FLAGS) $(FUZZ_CPPFLAGS_$*) -o $@ $< $(LIB_SRCS) $(FUZZ_CSRCS_$*) \
	    $(PKG_LIBS) -lpthread $(FUZZ_LDLIBS_$*)

fuzz: deps-fuzz
	@$(MAKE) --no-print-directory $(FUZZ_BINS)
	@set -e; for src in $(FUZZ_RUN); do \
	    name=$$(basename $$src .c); \
	    corpus=tests/fuzz/corpus/$${name#fuzz_}; \
	    mkdir -p $(BUILD)/fuzz/$$name.corpus; \
	    echo "fuzz: $$name for $(FUZZ_SECONDS)s"; \
	    $(BUILD)/fuzz/$$name -max_total_time=$(FUZZ_SECONDS) \
	        -artifact_prefix=$(BUILD)/fuzz/$$name- \
	        $(BUILD)/fuzz/$$name.corpus $$corpus; \
	done

# What tests/bench/run.sh needs, by a name of this Makefile's own: the
# script passes BUILD as an absolute path, and a file target it spelled
# itself would have to match this Makefile's spelling of $(BUILD)/...
BENCH_BINS := $(BUILD)/tests/bench/bench_lib $(BUILD)/tests/bench/bench_api \
              $(BUILD)/tests/bench/bench_node \
              $(BUILD)/tests/stress/history
bench-bins: $(BINS) $(BENCH_BINS) $(if $(filter 1,$(HAVE_SLURM)),bench-slurm)

# The bench's switch plugin that does nothing (tests/bench/switch_noop.c),
# the floor of the slurmstart scenario: for the installed Slurm into
# $(BUILD)/bench/, and for each release slurm-build.sh built into
# $(BUILD)/slurm-VERSION/bench/ (a plugin loads only into its release).
# Only its version comes from Slurm's headers.  The other releases' own
# plugins (slurm-versions) are rebuilt too: `make all` builds only the
# installed release's.
.PHONY: bench-slurm
bench-slurm: $(SLURM_OUT)/bench/switch_noop.so slurm-versions
	@for d in $(SLURM_EXTRA); do \
	    v=$${d##*/slurm-}; \
	    $(MAKE) --no-print-directory SLURM_INCLUDE=$$d/prefix/include \
	        SLURM_OUT=$(BUILD)/slurm-$$v $(BUILD)/slurm-$$v/bench/switch_noop.so \
	        || exit 1; \
	done

$(SLURM_OUT)/bench/switch_noop.so: tests/bench/switch_noop.c
	@mkdir -p $(@D)
	$(CC) $(SLURM_CPPFLAGS) $(SPANK_CFLAGS) -fPIC -shared $(LDFLAGS) -o $@ $<

bench: deps all bench-bins
	sh tests/bench/run.sh $(BUILD)

# `make bench-compare BASE=DIR [ROUNDS=3]`: the same benchmarks on this tree
# and on the checkout DIR (the tree before a change), alternated, with
# each figure's median and range per tree (tests/bench/compare.sh).
.PHONY: bench-compare
bench-compare: deps all bench-bins
	sh tests/bench/compare.sh '$(BASE)' $(or $(ROUNDS),3)

# ---- the embedded default --------------------------------------------------

# `make run` installs only the packages the broker needs (deps.sh run)
# and builds only the programs deploy/local/run.sh starts: no Slurm
# package, source tree or plugin, no tests.
RUN_BINS := $(BUILD)/vnibrokerd $(BUILD)/vnibctl $(BUILD)/fmsim

deps-run:
	@sh deploy/tools/deps.sh run

run: deps-run $(RUN_BINS)
	sh deploy/local/run.sh $(BUILD)

# `make demo`: the same broker with DEMO_NODES simulated nodes and a job
# stream (deploy/local/demo.sh); DEMO_SECONDS=N stops it after N seconds.
# It adds the node agent (vnib-agent) to run's programs, and jq and
# python3 to its packages (deps.sh demo).
.PHONY: demo
deps-demo:
	@sh deploy/tools/deps.sh demo

demo: deps-demo $(RUN_BINS) $(BUILD)/vnib-agent
	sh deploy/local/demo.sh $(BUILD)

# ---- install ---------------------------------------------------------------

# Where `make install` puts things; every installed file that names a path
# (the units, the Slurm hook, the examples) is written from these, so they
# agree with each other whatever PREFIX and SYSCONFDIR are.  The documents
# keep the source tree's layout under DOCDIR (README.md, deploy/README.md,
# plugins/slurm/README.md, agent/README.md), so the paths they cite hold
# there too.
BINDIR    := $(PREFIX)/bin
SBINDIR   := $(PREFIX)/sbin
PKGLIBDIR := $(PREFIX)/lib/vnibroker
DOCDIR    := $(PREFIX)/share/doc/vnibroker
UNITDIR   := $(PREFIX)/lib/systemd/system
CONFDIR   := $(SYSCONFDIR)/vnibroker
GEN_DIR   := $(BUILD)/install

# The *.in templates name paths as @BINDIR@, @SBINDIR@, @DOCDIR@, @CONFDIR@,
# @HOOK@ and @HOOKS_CONF@.  The TOML examples stay valid files in the tree
# (the tests check them as they are), so in their copies only the default
# /etc/vnibroker/ becomes CONFDIR.
SUBST := sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SBINDIR@|$(SBINDIR)|g' \
             -e 's|@DOCDIR@|$(DOCDIR)|g' -e 's|@CONFDIR@|$(CONFDIR)|g' \
             -e 's|@HOOK@|$(PKGLIBDIR)/vnib-slurm-hook|g' \
             -e 's|@HOOKS_CONF@|$(CONFDIR)/slurm-hooks.conf|g'
SUBST_CONF := sed -e 's|/etc/vnibroker/|$(CONFDIR)/|g'

install: all
	@rm -rf $(GEN_DIR) && mkdir -p $(GEN_DIR)
	$(SUBST) plugins/slurm/hook/vnib-slurm-hook.in > $(GEN_DIR)/vnib-slurm-hook
	$(SUBST) plugins/slurm/hook/hooks.conf.example.in > $(GEN_DIR)/hooks.conf.example
	$(SUBST) deploy/systemd/vnibrokerd.service.in > $(GEN_DIR)/vnibrokerd.service
	$(SUBST) deploy/systemd/vnib-slurm-reconcile.service.in \
	    > $(GEN_DIR)/vnib-slurm-reconcile.service
	$(SUBST) deploy/systemd/vnib-agent-flush.service.in \
	    > $(GEN_DIR)/vnib-agent-flush.service
	$(SUBST) plugins/flux/node/flux-node.conf.example.in \
	    > $(GEN_DIR)/flux-node.conf.example
	$(SUBST_CONF) config.example.toml > $(GEN_DIR)/config.example.toml
	$(SUBST_CONF) agent/agent.example.toml > $(GEN_DIR)/agent.example.toml
	@if grep -n '@[A-Z_]*@' $(GEN_DIR)/*; then \
	    echo "install: a placeholder above has no value" >&2; exit 1; fi
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) $(DESTDIR)$(PKGLIBDIR)
	install -m 0755 $(BUILD)/vnibctl $(DESTDIR)$(BINDIR)/vnibctl
	install -m 0755 $(BUILD)/vnibrokerd $(DESTDIR)$(SBINDIR)/vnibrokerd
	install -m 0755 $(BUILD)/vnib-agent $(DESTDIR)$(SBINDIR)/vnib-agent
	install -m 0755 $(BUILD)/vnib-agent-broker.so \
	    $(DESTDIR)$(PKGLIBDIR)/vnib-agent-broker.so
	$(if $(PLUGINS),install -m 0755 $(PLUGINS) $(DESTDIR)$(PKGLIBDIR)/)
	$(if $(filter 1,$(HAVE_SLURM_SRC)),install -m 0755 $(SWITCH_HELPER) \
	    $(DESTDIR)$(PKGLIBDIR)/vnib-switch-helper.so)
	install -m 0755 $(GEN_DIR)/vnib-slurm-hook $(DESTDIR)$(PKGLIBDIR)/vnib-slurm-hook
	install -d $(DESTDIR)$(PKGLIBDIR)/flux $(DESTDIR)$(DOCDIR)/plugins/flux/node
	$(if $(filter 1,$(HAVE_FLUX)),install -m 0755 $(FLUX_PLUGINS) $(FLUX_NODE) $(DESTDIR)$(PKGLIBDIR)/flux/)
	$(if $(filter 1,$(HAVE_FLUX)),ln -sfn ../vnib-agent-broker.so $(DESTDIR)$(PKGLIBDIR)/flux/vnib-agent-broker.so)
	install -m 0644 plugins/flux/README.md $(DESTDIR)$(DOCDIR)/plugins/flux/README.md
	install -m 0644 $(GEN_DIR)/flux-node.conf.example \
	    $(DESTDIR)$(DOCDIR)/plugins/flux/node/flux-node.conf.example
	install -d $(DESTDIR)$(DOCDIR)/deploy $(DESTDIR)$(DOCDIR)/plugins/slurm/hook \
	    $(DESTDIR)$(DOCDIR)/agent $(DESTDIR)$(DOCDIR)/server/api
	install -m 0644 README.md $(GEN_DIR)/config.example.toml $(DESTDIR)$(DOCDIR)/
	install -m 0644 deploy/README.md $(DESTDIR)$(DOCDIR)/deploy/README.md
	install -m 0644 plugins/slurm/README.md $(DESTDIR)$(DOCDIR)/plugins/slurm/README.md
	install -m 0644 $(GEN_DIR)/hooks.conf.example \
	    $(DESTDIR)$(DOCDIR)/plugins/slurm/hook/hooks.conf.example
	install -m 0644 agent/README.md $(DESTDIR)$(DOCDIR)/agent/README.md
	install -m 0644 $(GEN_DIR)/agent.example.toml \
	    $(DESTDIR)$(DOCDIR)/agent/agent.example.toml
	install -m 0644 server/api/openapi.yaml $(DESTDIR)$(DOCDIR)/server/api/openapi.yaml
	install -d $(DESTDIR)$(DOCDIR)/deploy/monitoring
	install -m 0644 deploy/monitoring/README.md deploy/monitoring/vnibroker-alerts.yml \
	    deploy/monitoring/vnibroker-grafana.json deploy/monitoring/prometheus.example.yml \
	    $(DESTDIR)$(DOCDIR)/deploy/monitoring/
	install -d $(DESTDIR)$(UNITDIR)
	install -m 0644 $(GEN_DIR)/vnibrokerd.service \
	    $(GEN_DIR)/vnib-slurm-reconcile.service \
	    deploy/systemd/vnib-slurm-reconcile.timer \
	    $(GEN_DIR)/vnib-agent-flush.service \
	    deploy/systemd/vnib-agent-flush.timer $(DESTDIR)$(UNITDIR)/

# ---- Debian packages -------------------------------------------------------

# `make deb`: vnibroker, vnibctl, vnib-agent and vnibroker-slurm (.deb) in
# $(BUILD)/deb/, built by dpkg-buildpackage and debhelper from a copy of
# this tree in $(BUILD)/deb/src with deploy/debian as debian/ (the tree
# stays clean).  The packages are `make install`'s layout with PREFIX=/usr
# and SYSCONFDIR=/etc; switch_vnib.so is compiled against SLURM_SRC, which
# it needs (fetched first when not given: deploy/tools/deb.sh,
# deploy/README.md "Debian packages").  `make deb SLURM_PREFIX=DIR` builds
# vnibroker-slurm for the Slurm installed in DIR instead of Debian's: its
# plugins go to DIR/lib/slurm, and it breaks no Debian Slurm package.
DEB_DIR := $(BUILD)/deb

.PHONY: deb
deb: $(SLURM_SRC_FETCH)
	sh deploy/tools/deb.sh $(DEB_DIR) '$(SLURM_TREE)' '$(SLURM_PREFIX)'

# ---- static analysis -------------------------------------------------------

# clang's static analyzer over a fresh build of everything `make tests`
# builds, into build/scan/ (HTML reports in build/scan/report/); any report
# fails the target.
SCAN_BUILD := build/scan

scan:
	rm -rf $(SCAN_BUILD)
	scan-build --status-bugs --use-cc=clang -o $(SCAN_BUILD)/report \
	    $(MAKE) --no-print-directory BUILD=$(SCAN_BUILD) all tests

# ---- housekeeping ----------------------------------------------------------

# The C sources under git, except tests/stress/, which is deliberately
# not clang-formatted.
FORMAT_SRCS = $$(git ls-files '*.c' '*.h' ':!:tests/stress/*')

format:
	clang-format -i $(FORMAT_SRCS)

format-check:
	clang-format --dry-run --Werror $(FORMAT_SRCS)

clean:
	rm -rf build
