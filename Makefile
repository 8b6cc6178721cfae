# tdebug: follow a Python program down into PyTorch's C/C++ core and back.
#
# Targets:
#   make             build build/tdebug, its helpers, the preloaded library,
#                    the Python extension and the samples
#   make deps        install missing Debian packages (apt-get; sudo when not root)
#   make test        deps + build + every test (C unit tests, end-to-end tests)
#   make vsix        build/tdebug-vscode.vsix, the VS Code extension packaged
#                    (Microsoft's vsce from npm, pinned by tools/vsce/)
#   make test-vscode the extension used through a real VS Code's UI (code-server
#                    in headless chromium, tests/vscode-ui/): installs them into
#                    VSCODE_UI_CACHE once, keeps screenshots in build/test-vscode
#   make unit        C unit tests only (cmocka);  make e2e  pytest only
#   make e2e-loaded  pytest with stress-ng keeping both cores busy (races show)
#   make demo        the guided tour of 'import torch' (tdebug tour --batch)
#   make bench       benchmarks against plain python/gdb, printing ratios
#   make install     PREFIX=/usr/local (DESTDIR for staging)
#   make asan        AddressSanitizer + UBSan build in build-asan/: unit tests,
#                    then every fuzz target for FUZZ_SECONDS each (make fuzz)
#   make pyhook-all  the Python breakpoint library for every CPython minor
#                    version pyenv has (3.8+), besides the one 'make' builds
#                    for $(PYTHON): build/pyhook/libtdebug-pyhook-cpython-3X.so,
#                    one per minor version (built with the headers of the
#                    first 3.X.Y found; it serves every 3.X.Y)
#
# Knobs (make VAR=value):
#   PYTHON=/usr/bin/python3  the interpreter tdebug targets and builds its
#                            Python extension for (the pyenv python3 on PATH
#                            has no torch, so it is never picked implicitly)
#   PREFIX=/usr/local        install prefix
#   V=1                      print full compiler command lines
#   WERROR=1                 treat warnings as errors (.ci/run sets it)
#   B=build                  build directory
#   PYTEST_ARGS=...          extra pytest arguments, e.g. -k attach
#   FUZZ_SECONDS=20          how long each fuzz target runs (make fuzz, asan)
#   VSCODE_UI_CACHE=DIR      where make test-vscode installs code-server and
#                            puppeteer-core (default ~/.cache/tdebug/vscode-ui;
#                            also $TDEBUG_VSCODE_UI_CACHE)

PYTHON   ?= /usr/bin/python3
PREFIX   ?= /usr/local
DESTDIR  ?=
B        ?= build
CC       ?= cc
CFLAGS   ?= -O2 -g
PYTEST_ARGS ?=

BINDIR   = $(PREFIX)/bin
LIBDIR   = $(PREFIX)/lib/tdebug
MANDIR   = $(PREFIX)/share/man/man1

ifeq ($(V),1)
Q =
quiet = @:
else
Q = @
quiet = @printf '  %-7s %s\n'
endif

# --- Python: everything is asked of $(PYTHON) itself, so the build never mixes
# the pyenv interpreter's headers with Debian's interpreter.
PY_INFO := $(shell $(PYTHON) -c 'import sys, sysconfig as s; \
  print("%d.%d" % sys.version_info[:2], s.get_config_var("LIBPC") or "", \
        s.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
# On a fresh machine Python may not be there yet: 'make deps', 'make test'
# and 'make demo' install it first and build in a second make.
ifeq ($(PY_INFO),)
ifneq ($(filter-out deps test test-vscode demo clean,$(or $(MAKECMDGOALS),all)),)
$(error PYTHON=$(PYTHON) does not run: run 'make deps' first, or pass PYTHON=/path/to/python3)
endif
endif
PY_VERSION   := $(word 1,$(PY_INFO))
PY_LIBPC     := $(word 2,$(PY_INFO))
PY_EXT       := $(word 3,$(PY_INFO))
PY_PC        := PKG_CONFIG_PATH=$(PY_LIBPC) pkg-config
PY_CFLAGS    := $(shell $(PY_PC) --cflags python-$(PY_VERSION) 2>/dev/null)
# CPython's internal headers: only the Python breakpoint library, which runs
# inside the interpreter, compiles against them (lib/pyhook/).
PY_INCDIR    := $(patsubst -I%,%,$(firstword $(filter -I%,$(PY_CFLAGS))))

JANSSON_CFLAGS := $(shell pkg-config --cflags jansson 2>/dev/null)
JANSSON_LIBS   := $(shell pkg-config --libs jansson 2>/dev/null)
CMOCKA_CFLAGS  := $(shell pkg-config --cflags cmocka 2>/dev/null)
CMOCKA_LIBS    := $(shell pkg-config --libs cmocka 2>/dev/null)
DW_CFLAGS      := $(shell pkg-config --cflags libdw 2>/dev/null)
DW_LIBS        := $(shell pkg-config --libs libdw 2>/dev/null)
# libbfd has no pkg-config file and no stable ABI: link the system one.
BFD_LIBS       := -lbfd
READLINE_LIBS  := -lreadline

WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            -Wno-unused-parameter
ifeq ($(WERROR),1)
WARN     += -Werror
endif
# Project headers are named by their layer ("session/session.h"), from src/
# for "..." includes only; lib/'s public contracts (tdebug_preload.h,
# tdebug_pyhook.h) by their own names.
BASE_CFLAGS := -std=gnu11 $(WARN) -MMD -MP -D_GNU_SOURCE \
            -iquote src -Ilib $(JANSSON_CFLAGS) \
            -DTDB_LIBDIR='"$(LIBDIR)"' -DTDB_PYTHON='"$(PYTHON)"' \
            -DTDB_VERSION='"$(shell cat VERSION 2>/dev/null || echo 0.0)"'
ALL_CFLAGS  = $(BASE_CFLAGS) $(CFLAGS) $(SAN_CFLAGS)
ALL_LDFLAGS = $(LDFLAGS) $(SAN_CFLAGS)

# --- Sources.  Layers are the folders of src/ (doc/HACKING.md), each
# layer an archive linked above the ones it may call, so a call upwards
# cannot link (the layer check below links each archive whole against only
# the layers under it):
#   readers    src/{base,gdb,process,native,cpython,torch,stacks,targets,
#              checks,vscode}/ and lib/preload_config.c ('tdebug env' checks
#              settings with the very rules the preloaded library applies)
#   session    src/session/: the debugging session core (never prints)
#   commands   src/commands/: the command language at a stop, and stops
#              and stacks as text, over the core's data functions
#   frontends  src/cli/ (the terminal; readline), src/dap/, src/tour/
#   cmd        src/cmd/: one file a subcommand, over everything; with
#              src/main.c (the command table) it makes build/tdebug
# src/exec/ is the tiny exec wrapper, a program of its own.
EXEC_SRC := src/exec/tdebug_exec.c
MAIN_SRC := src/main.c
READERS_SRC  := $(sort lib/preload_config.c $(foreach d,base gdb process native cpython torch \
                  stacks targets checks vscode,$(wildcard src/$(d)/*.c)))
SESSION_SRC  := $(sort $(wildcard src/session/*.c))
COMMANDS_SRC := $(sort $(wildcard src/commands/*.c))
FRONTENDS_SRC := $(sort $(wildcard src/cli/*.c src/dap/*.c src/tour/*.c))
CMD_SRC := $(sort $(wildcard src/cmd/*.c))
LAYERS := readers session commands frontends cmd
# What each layer's archive may call besides itself: the layers below it.
LOWER_readers   :=
LOWER_session   := readers
LOWER_commands  := session readers
LOWER_frontends := commands session readers
LOWER_cmd       := frontends commands session readers
PRELOAD_SRC := $(sort $(wildcard lib/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN := $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRC))
# Test drivers the end-to-end tests run (tests/tools/NAME.c -> $(B)/tests/tools/NAME).
TOOL_SRC := $(sort $(wildcard tests/tools/*.c))
TOOL_BIN := $(patsubst tests/tools/%.c,$(B)/tests/tools/%,$(TOOL_SRC))

obj = $(patsubst %.c,$(B)/obj/%.o,$(1))
layer_src = $($(shell echo $(1) | tr a-z A-Z)_SRC)
archive = $(patsubst %,$(B)/libtdebug-%.a,$(1))
# Everything under cmd (unit tests and test drivers): no readline, which
# only cli/cli.o needs; a test that pulled it in would not link.
BELOW_MAIN := $(call archive,cmd frontends commands session readers)

LIBS     := $(JANSSON_LIBS) $(BFD_LIBS) $(DW_LIBS)

TDEBUG   := $(B)/tdebug
PRELOAD  := $(B)/libtdebug-preload.so
EXECHELP := $(B)/tdebug-exec
PYEXT    := $(B)/python/tdebug/_tdebug$(PY_EXT)
PYPKG_SRC := $(wildcard python/tdebug/*.py) python/tdebug-children/sitecustomize.py
PYPKG    := $(patsubst python/%,$(B)/python/%,$(PYPKG_SRC))
# The library tdebug loads into a Python process for Python breakpoints and
# stepping (lib/pyhook/, contract lib/tdebug_pyhook.h): one per CPython
# version, built against that version's internal headers, linked against no
# libpython (its Py* symbols resolve in the process).
PYHOOK   := $(B)/pyhook/libtdebug-pyhook-cpython-$(subst .,,$(PY_VERSION)).so
PYHOOK_SRC := lib/pyhook/pyhook.c lib/pyhook/exceptions.c lib/pyhook/evaltrace.c lib/pyhook/monitoring.c lib/untraced_trap.c
PYHOOK_DEPS := $(PYHOOK_SRC) lib/pyhook/pyhook.h lib/tdebug_pyhook.h lib/untraced_trap.h
PYHOOK_CFLAGS = -std=gnu11 $(WARN) -Wno-missing-prototypes -D_GNU_SOURCE -Ilib -O2 -g \
            -fPIC -fvisibility=hidden -fno-strict-aliasing
PYENV_ROOT ?= $(shell pyenv root 2>/dev/null || echo $$HOME/.pyenv)

# gdb's own pretty-printers for torch's values (lib/gdb/): the Python
# printers gdb loads, and the decoder they call through ctypes: tdebug's
# tensor reader (src/torch/tensor.c and what it calls) built -fPIC, its
# unused sections dropped, exporting two functions.
PRINTERS_LIB := $(B)/gdb/libtdebug-printers.so
PRINTERS_PY  := $(B)/gdb/tdebug_printers.py
PRINTERS_SRC := lib/gdb/printers.c src/torch/tensor.c src/native/cxxabi.c src/native/unwind.c \
                src/process/procfs.c src/base/common.c

VSCODE_EXT_SRC := $(sort $(shell find vscode/extension -type f))
VSCODE_EXT := $(patsubst vscode/extension/%,$(B)/vscode-extension/%,$(VSCODE_EXT_SRC))
# The extension packaged for "Install from VSIX..." and the editors'
# --install-extension (make vsix), by Microsoft's vsce from npm, pinned by
# tools/vsce/package-lock.json and installed into $(B)/vsce.
VSIX     := $(B)/tdebug-vscode.vsix
VSCE     := $(B)/vsce/node_modules/@vscode/vsce/vsce

.PHONY: all deps test unit e2e e2e-loaded demo bench install uninstall asan fuzz clean samples myop pyhook-all \
        vsix test-vscode FORCE

all: $(TDEBUG) $(EXECHELP) $(if $(PRELOAD_SRC),$(PRELOAD)) \
     $(if $(wildcard python/_tdebug.c),$(PYEXT)) $(PYPKG) $(PYHOOK) samples $(VSCODE_EXT) \
     $(PRINTERS_LIB) $(PRINTERS_PY)

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(quiet) CC $<
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

# No CPython header is needed to read CPython: src/cpython/frames.c takes
# every layout from src/cpython/offsets_table.c (tools/pyoffsets/generate.sh).
$(B)/obj/src/native/unwind.o $(B)/obj/src/native/core.o: ALL_CFLAGS += $(DW_CFLAGS)

# An archive is remade when its list of objects changes too (a file moved
# away must not linger in it).
define layer_archive
$(B)/layers/$(1).list: FORCE
	@mkdir -p $$(dir $$@)
	@echo '$(call obj,$(call layer_src,$(1)))' | cmp -s - $$@ || \
	    echo '$(call obj,$(call layer_src,$(1)))' > $$@
$(call archive,$(1)): $(call obj,$(call layer_src,$(1))) $(B)/layers/$(1).list
	$$(quiet) AR $$@
	$$(Q)rm -f $$@ && ar rcs $$@ $$(filter %.o,$$^)
endef
$(foreach l,$(LAYERS),$(eval $(call layer_archive,$(l))))

# The layer check: each archive linked whole with only the layers below it
# (and the system's libraries; readline for the front-ends'); an upward call
# is an undefined reference.  src/cmd/ calls main.c's helpers: the link of
# tdebug itself checks it.
define layer_check
$(B)/layers/$(1).ok: $(call archive,$(1) $(LOWER_$(1)))
	@mkdir -p $$(dir $$@)
	$$(quiet) LAYER $(1)
	$$(Q)printf 'int main(void) { return 0; }\n' > $$(@:.ok=.c)
	$$(Q)$$(CC) $$(ALL_LDFLAGS) -o $$(@:.ok=) $$(@:.ok=.c) -Wl,--whole-archive \
	    $(call archive,$(1)) -Wl,--no-whole-archive $(call archive,$(LOWER_$(1))) $$(LIBS) \
	    $(if $(filter frontends,$(1)),$$(READLINE_LIBS)) || \
	    { echo "layer $(1) calls a layer above it: see the undefined references"; exit 1; }
	$$(Q)rm -f $$(@:.ok=) $$(@:.ok=.c) && touch $$@
endef
$(foreach l,$(filter-out cmd,$(LAYERS)),$(eval $(call layer_check,$(l))))
LAYER_CHECKS := $(patsubst %,$(B)/layers/%.ok,$(filter-out cmd,$(LAYERS)))

$(TDEBUG): $(call obj,$(MAIN_SRC)) $(call archive,$(LAYERS)) $(LAYER_CHECKS)
	$(quiet) LINK $@
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(call obj,$(MAIN_SRC)) $(call archive,cmd frontends commands \
	    session readers) $(LIBS) $(READLINE_LIBS)

# The exec wrapper gdb starts the program through: tiny, no libraries.
$(EXECHELP): $(call obj,$(EXEC_SRC))
	$(quiet) LINK $@
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^

# The preloaded (rtld-audit) library: hidden visibility, a version script
# exporting only what the loader and the handshake need, debug info kept so
# 'set var' works in a hand-driven gdb.
PRELOAD_CFLAGS = $(BASE_CFLAGS) -O2 -g -fPIC -fvisibility=hidden $(SAN_CFLAGS)
$(B)/obj/lib/%.o: lib/%.c
	@mkdir -p $(dir $@)
	$(quiet) CC $<
	$(Q)$(CC) $(PRELOAD_CFLAGS) -c $< -o $@

$(PRELOAD): $(call obj,$(PRELOAD_SRC)) lib/preload.map
	$(quiet) LINK $@
	$(Q)$(CC) -shared -g -Wl,--version-script=lib/preload.map -Wl,-z,nodelete \
	    -o $@ $(call obj,$(PRELOAD_SRC)) -lpthread

# The Python extension, built for $(PYTHON) and importable from $(B)/python.
# It shares the announcement writer with the preloaded library.
$(PYEXT): python/_tdebug.c lib/preload_announce.c
	@mkdir -p $(dir $@) $(B)/obj/python
	$(quiet) PYEXT $@
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) $(PY_CFLAGS) -fPIC -fvisibility=hidden -shared \
	    -MF $(B)/obj/python/_tdebug.d -o $@ $(filter %.c,$^)

$(PRINTERS_LIB): $(PRINTERS_SRC)
	@mkdir -p $(dir $@) $(B)/obj/lib/gdb
	$(quiet) SHLIB $@
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) $(DW_CFLAGS) -fPIC -fvisibility=hidden -ffunction-sections \
	    -fdata-sections -shared -Wl,--gc-sections -Wl,-z,defs -MF $(B)/obj/lib/gdb/printers.d \
	    -o $@ $(PRINTERS_SRC) $(LIBS)

$(PRINTERS_PY): lib/gdb/tdebug_printers.py
	@mkdir -p $(dir $@)
	$(Q)cp $< $@

$(PYHOOK): $(PYHOOK_DEPS)
	@mkdir -p $(dir $@)
	$(quiet) PYHOOK $@
	$(Q)$(CC) $(PYHOOK_CFLAGS) $(PY_CFLAGS) -I$(PY_INCDIR)/internal -DPy_BUILD_CORE -shared \
	    -o $@ $(PYHOOK_SRC)

# Every other minor version pyenv has, 3.8+ with headers, into the same
# flat directory the session looks in (pyhook/ beside tdebug, or
# $(LIBDIR)/pyhook): $(PYTHON)'s minor version is $(PYHOOK)'s.
pyhook-all: $(PYHOOK)
	$(Q)done=" $(subst .,,$(PY_VERSION)) "; \
	for v in $(wildcard $(PYENV_ROOT)/versions/3.*); do \
	    inc=$$(ls -d $$v/include/python3.* 2>/dev/null | head -1); \
	    [ -n "$$inc" ] || continue; \
	    x=$${inc##*/python}; case $$x in 3.[0-7]|3.[0-7]m) continue;; esac; \
	    xy=$$(echo $$x | tr -d .); \
	    case "$$done" in *" $$xy "*) continue;; esac; done="$$done$$xy "; \
	    out=$(B)/pyhook/libtdebug-pyhook-cpython-$$xy.so; \
	    if [ ! -e $$out ] || [ -n "$$(find $(PYHOOK_DEPS) -newer $$out)" ]; then \
	        mkdir -p $$(dirname $$out); printf '  %-7s %s\n' PYHOOK $$out; \
	        $(CC) $(PYHOOK_CFLAGS) -I$$inc -I$$inc/internal -DPy_BUILD_CORE -shared \
	            -o $$out $(PYHOOK_SRC) || exit 1; \
	    fi; \
	done

# The VS Code extension ('tdebug vscode --install-extension' finds it beside
# tdebug, or in LIBDIR once installed).
$(B)/vscode-extension/%: vscode/extension/%
	@mkdir -p $(dir $@)
	$(Q)cp $< $@ && chmod --reference=$< $@

# vsce runs in the staged copy: it packs every file of the folder it runs in,
# and nothing there is anyone's but the build's.  The project has no license
# file yet (--skip-license) nor a public repository to name
# (--allow-missing-repository); without them vsce would ask on the terminal.
vsix: $(VSIX)
$(VSIX): $(VSCODE_EXT) $(VSCE)
	$(quiet) VSIX $@
	$(Q)cd $(B)/vscode-extension && node $(abspath $(VSCE)) package --no-dependencies \
	    --skip-license --allow-missing-repository --out $(abspath $@) >/dev/null

$(VSCE): tools/vsce/package.json tools/vsce/package-lock.json
	@mkdir -p $(B)/vsce
	$(quiet) NPM $(B)/vsce
	$(Q)cp $^ $(B)/vsce/ && cd $(B)/vsce && \
	    npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
	$(Q)touch $@

$(B)/python/%.py: python/%.py
	@mkdir -p $(dir $@)
	$(Q)cp $< $@

# samples/myop, one's own torch op (torch.utils.cpp_extension), built by its
# setup.py into $(B)/samples/myop for 'tdebug tour extension'; not part of
# 'all': it needs libtorch-dev and pybind11-dev, and ~40 s of CPU.
myop:
	$(quiet) SETUP $(B)/samples/myop
	$(Q)rm -rf $(B)/samples/myop && mkdir -p $(B)/samples && cp -R samples/myop $(B)/samples/myop
	$(Q)cd $(B)/samples/myop && $(PYTHON) setup.py -q build_ext --inplace

# Sample extensions (samples/*/Makefile), built with the debug-build profile.
samples:
	$(Q)for d in $(wildcard samples/*/Makefile); do \
	    $(MAKE) --no-print-directory -C $$(dirname $$d) PYTHON=$(PYTHON) \
	        OUT=$(abspath $(B))/samples/$$(basename $$(dirname $$d)) || exit 1; \
	done

# --- Tests
$(B)/tests/%: tests/unit/%.c $(BELOW_MAIN)
	@mkdir -p $(dir $@)
	$(quiet) TEST $@
	$(Q)$(CC) $(ALL_CFLAGS) $(CMOCKA_CFLAGS) -Itests/unit -o $@ $< \
	    $(BELOW_MAIN) $(LIBS) $(CMOCKA_LIBS) $(ALL_LDFLAGS)

# The session core's own front-end (tests/e2e/test_session_core.py): the
# core and the readers only, so the core runs a session with no front-end
# linked at all.
$(B)/tests/tools/session_core: tests/tools/session_core.c $(call archive,session readers)
	@mkdir -p $(dir $@)
	$(quiet) TOOL $@
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(call archive,session readers) $(LIBS) $(ALL_LDFLAGS)

$(B)/tests/tools/%: tests/tools/%.c $(BELOW_MAIN)
	@mkdir -p $(dir $@)
	$(quiet) TOOL $@
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(BELOW_MAIN) $(LIBS) $(ALL_LDFLAGS)

deps:
	$(Q)tools/deps.sh

unit: $(UNIT_BIN)
	$(Q)B=$(B) tests/run-unit $(UNIT_BIN)

e2e: all pyhook-all $(TOOL_BIN)
	$(Q)B=$(abspath $(B)) TDEBUG_PYTHON=$(PYTHON) $(PYTHON) -m pytest -ra \
	    -p no:cacheprovider tests/e2e $(PYTEST_ARGS)

# The end-to-end tests while stress-ng keeps both cores busy (as a machine
# shared with other work is): what finds a test's partial read, fixed sleep
# or timeout sized for an idle machine.  stress-ng stops with the tests.
e2e-loaded: all pyhook-all $(TOOL_BIN)
	$(Q)stress-ng --cpu 2 --timeout 4h --quiet & load=$$!; \
	    B=$(abspath $(B)) TDEBUG_PYTHON=$(PYTHON) $(PYTHON) -m pytest -ra \
	    -p no:cacheprovider tests/e2e $(PYTEST_ARGS); rc=$$?; kill $$load; wait $$load; exit $$rc

# 'make test' is what CI runs: install what is missing, build with -Werror,
# run everything, and end with one summary line.
test: deps
	$(Q)$(MAKE) --no-print-directory all pyhook-all $(UNIT_BIN) $(TOOL_BIN) $(VSIX)
	$(Q)B=$(B) PYTHON=$(PYTHON) PYTEST_ARGS="$(PYTEST_ARGS)" tests/run-all $(UNIT_BIN)

# A real VS Code (code-server 4.100.3 from npm, in Debian's chromium driven
# by puppeteer-core) used through its UI with the .vsix installed by 'tdebug
# vscode --install-extension': tests/vscode-ui/run.js.  The editor is
# installed once into the cache (tests/vscode-ui/setup.sh), outside the
# checkout; screenshots of each step and the adapter's transcript go to
# $(B)/test-vscode.  Not part of 'make test' (it installs a browser).
test-vscode:
	$(Q)tools/deps.sh --vscode-ui
	$(Q)$(MAKE) --no-print-directory all $(VSIX)
	$(Q)$(if $(VSCODE_UI_CACHE),TDEBUG_VSCODE_UI_CACHE=$(abspath $(VSCODE_UI_CACHE))) tests/vscode-ui/setup.sh
	$(Q)$(if $(VSCODE_UI_CACHE),TDEBUG_VSCODE_UI_CACHE=$(abspath $(VSCODE_UI_CACHE))) \
	    B=$(abspath $(B)) TDEBUG_PYTHON=$(PYTHON) node tests/vscode-ui/run.js

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(TDEBUG) tour --batch

bench: all $(TOOL_BIN)
	$(Q)for s in $(sort $(wildcard bench/*.py)); do case $$s in */benchlib.py) continue;; esac; B=$(abspath $(B)) PYTHON=$(PYTHON) $(PYTHON) $$s || exit 1; done
	$(Q)for s in $(sort $(wildcard bench/*.sh)); do B=$(abspath $(B)) PYTHON=$(PYTHON) $$s || exit 1; done

asan:
	$(MAKE) B=build-asan CFLAGS="-O1 -g" unit \
	    SAN_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
	$(MAKE) --no-print-directory B=build-asan fuzz

# Fuzz targets: tests/fuzz/fuzz_NAME.c, each naming its own sources and
# seeds (tests/fuzz/fuzz.h), built with sanitizers and run for FUZZ_SECONDS
# by tests/run-fuzz: under clang's libFuzzer when it is installed, else a
# deterministic loop of mutations.
FUZZ_SRC     := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_SECONDS ?= 20
FUZZ_CC      ?= $(firstword $(shell command -v clang-14 clang 2>/dev/null))
fuzz:
	$(Q)B=$(B) CC="$(CC)" FUZZ_CC="$(FUZZ_CC)" FUZZ_SECONDS=$(FUZZ_SECONDS) \
	    FUZZ_CFLAGS="-std=gnu11 -D_GNU_SOURCE -iquote src -Ilib $(JANSSON_CFLAGS)" \
	    FUZZ_LIBS="$(JANSSON_LIBS)" tests/run-fuzz $(FUZZ_SRC)

install: all pyhook-all
	install -d "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(LIBDIR)" "$(DESTDIR)$(MANDIR)"
	install -m 755 $(TDEBUG) "$(DESTDIR)$(BINDIR)/tdebug"
	install -m 755 $(EXECHELP) "$(DESTDIR)$(LIBDIR)/tdebug-exec"
	install -m 644 $(PRELOAD) "$(DESTDIR)$(LIBDIR)/libtdebug-preload.so"
	install -d "$(DESTDIR)$(LIBDIR)/pyhook"
	install -m 644 $(B)/pyhook/libtdebug-pyhook-cpython-*.so "$(DESTDIR)$(LIBDIR)/pyhook/"
	install -m 644 doc/tdebug.1 "$(DESTDIR)$(MANDIR)/tdebug.1"
	install -d "$(DESTDIR)$(LIBDIR)/gdb"
	install -m 644 $(PRINTERS_LIB) $(PRINTERS_PY) "$(DESTDIR)$(LIBDIR)/gdb/"
	install -d "$(DESTDIR)$(LIBDIR)/vscode-extension"
	cp -R $(B)/vscode-extension/. "$(DESTDIR)$(LIBDIR)/vscode-extension/"
	$(if $(wildcard $(VSIX)),install -m 644 $(VSIX) "$(DESTDIR)$(LIBDIR)/")
	$(if $(wildcard $(B)/python/tdebug),mkdir -p "$(DESTDIR)$(LIBDIR)/tdebug" && \
	    cp $(B)/python/tdebug/*.py $(B)/python/tdebug/*.so "$(DESTDIR)$(LIBDIR)/tdebug/" && \
	    install -d "$(DESTDIR)$(LIBDIR)/tdebug-children" && \
	    install -m 644 $(B)/python/tdebug-children/sitecustomize.py "$(DESTDIR)$(LIBDIR)/tdebug-children/" && \
	    $(PYTHON) -m compileall -q "$(DESTDIR)$(LIBDIR)/tdebug-children" && \
	    install -d "$(DESTDIR)$(PY_SITE)" && \
	    echo "$(LIBDIR)" > "$(DESTDIR)$(PY_SITE)/tdebug.pth")

PY_SITE = $(shell $(PYTHON) -c 'import sysconfig as s; \
  print(s.get_path("platlib", "posix_local" if "posix_local" in s.get_scheme_names() else "posix_prefix", \
        vars={"base": "$(PREFIX)", "platbase": "$(PREFIX)"}))')

uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/tdebug" "$(DESTDIR)$(MANDIR)/tdebug.1" "$(DESTDIR)$(PY_SITE)/tdebug.pth"
	rm -rf "$(DESTDIR)$(LIBDIR)"

clean:
	rm -rf $(B) build-asan
	$(Q)for d in $(wildcard samples/*/Makefile); do $(MAKE) -s -C $$(dirname $$d) clean; done

-include $(shell find $(B)/obj $(B)/tests -name '*.d' 2>/dev/null)
