# tdebug: follow a Python program down into PyTorch's C/C++ core and back.
#
# Targets:
#   make             build build/tdebug, its helpers, the preloaded library,
#                    the Python extension and the samples
#   make deps        install missing Debian packages (apt-get; sudo when not root)
#   make test        deps + build + every test (C unit tests, end-to-end tests)
#   make unit        C unit tests only (cmocka);  make e2e  pytest only
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
ifneq ($(filter-out deps test demo clean,$(or $(MAKECMDGOALS),all)),)
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

# --- Sources.  Layers are the folders of src/ (doc/HACKING.md): the
# commands (src/cmd/*.c) and main (src/main.c) over the front-ends, the
# session core and the readers; src/exec/ is the tiny exec wrapper.
CLI_SRC  := src/main.c $(sort $(wildcard src/cmd/*.c))
EXEC_SRC := src/exec/tdebug_exec.c
# lib/preload_config.c is also in the core: 'tdebug env' checks settings with
# the very rules the preloaded library applies.
CORE_SRC := $(sort lib/preload_config.c \
              $(filter-out $(CLI_SRC) $(EXEC_SRC),$(wildcard src/*/*.c)))
PRELOAD_SRC := $(sort $(wildcard lib/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN := $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRC))
# Test drivers the end-to-end tests run (tests/tools/NAME.c -> $(B)/tests/tools/NAME).
TOOL_SRC := $(sort $(wildcard tests/tools/*.c))
TOOL_BIN := $(patsubst tests/tools/%.c,$(B)/tests/tools/%,$(TOOL_SRC))

obj = $(patsubst %.c,$(B)/obj/%.o,$(1))
CORE_OBJ := $(call obj,$(CORE_SRC))
CLI_OBJ  := $(call obj,$(CLI_SRC))

LIBS     := $(JANSSON_LIBS) $(BFD_LIBS) $(DW_LIBS)

TDEBUG   := $(B)/tdebug
PRELOAD  := $(B)/libtdebug-preload.so
EXECHELP := $(B)/tdebug-exec
PYEXT    := $(B)/python/tdebug/_tdebug$(PY_EXT)
PYPKG_SRC := $(wildcard python/tdebug/*.py)
PYPKG    := $(patsubst python/%,$(B)/python/%,$(PYPKG_SRC))
# The library tdebug loads into a Python process for Python breakpoints and
# stepping (lib/pyhook/, contract lib/tdebug_pyhook.h): one per CPython
# version, built against that version's internal headers, linked against no
# libpython (its Py* symbols resolve in the process).
PYHOOK   := $(B)/pyhook/libtdebug-pyhook-cpython-$(subst .,,$(PY_VERSION)).so
PYHOOK_SRC := lib/pyhook/pyhook.c lib/pyhook/evaltrace.c lib/pyhook/monitoring.c
PYHOOK_DEPS := $(PYHOOK_SRC) lib/pyhook/pyhook.h lib/tdebug_pyhook.h
PYHOOK_CFLAGS = -std=gnu11 $(WARN) -Wno-missing-prototypes -D_GNU_SOURCE -Ilib -O2 -g \
            -fPIC -fvisibility=hidden -fno-strict-aliasing
PYENV_ROOT ?= $(shell pyenv root 2>/dev/null || echo $$HOME/.pyenv)

VSCODE_EXT := $(patsubst vscode/extension/%,$(B)/vscode-extension/%,$(wildcard vscode/extension/*))

.PHONY: all deps test unit e2e demo bench install uninstall asan fuzz clean samples pyhook-all

all: $(TDEBUG) $(EXECHELP) $(if $(PRELOAD_SRC),$(PRELOAD)) \
     $(if $(wildcard python/_tdebug.c),$(PYEXT)) $(PYPKG) $(PYHOOK) samples $(VSCODE_EXT)

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(quiet) CC $<
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

# No CPython header is needed to read CPython: src/cpython/frames.c takes
# every layout from src/cpython/offsets_table.c (tools/pyoffsets/generate.sh).
$(B)/obj/src/native/unwind.o $(B)/obj/src/native/core.o: ALL_CFLAGS += $(DW_CFLAGS)

$(B)/libtdebug.a: $(CORE_OBJ)
	$(quiet) AR $@
	$(Q)rm -f $@ && ar rcs $@ $^

$(TDEBUG): $(CLI_OBJ) $(B)/libtdebug.a
	$(quiet) LINK $@
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(CLI_OBJ) $(B)/libtdebug.a $(LIBS) $(READLINE_LIBS)

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
	$(Q)cp $< $@

$(B)/python/%.py: python/%.py
	@mkdir -p $(dir $@)
	$(Q)cp $< $@

# Sample extensions (samples/*/Makefile), built with the debug-build profile.
samples:
	$(Q)for d in $(wildcard samples/*/Makefile); do \
	    $(MAKE) --no-print-directory -C $$(dirname $$d) PYTHON=$(PYTHON) \
	        OUT=$(abspath $(B))/samples/$$(basename $$(dirname $$d)) || exit 1; \
	done

# --- Tests
$(B)/tests/%: tests/unit/%.c $(B)/libtdebug.a
	@mkdir -p $(dir $@)
	$(quiet) TEST $@
	$(Q)$(CC) $(ALL_CFLAGS) $(CMOCKA_CFLAGS) -Itests/unit -o $@ $< \
	    $(B)/libtdebug.a $(LIBS) $(READLINE_LIBS) $(CMOCKA_LIBS) $(ALL_LDFLAGS)

$(B)/tests/tools/%: tests/tools/%.c $(B)/libtdebug.a
	@mkdir -p $(dir $@)
	$(quiet) TOOL $@
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(B)/libtdebug.a $(LIBS) $(ALL_LDFLAGS)

deps:
	$(Q)tools/deps.sh

unit: $(UNIT_BIN)
	$(Q)B=$(B) tests/run-unit $(UNIT_BIN)

e2e: all pyhook-all $(TOOL_BIN)
	$(Q)B=$(abspath $(B)) TDEBUG_PYTHON=$(PYTHON) $(PYTHON) -m pytest -ra \
	    -p no:cacheprovider tests/e2e $(PYTEST_ARGS)

# 'make test' is what CI runs: install what is missing, build with -Werror,
# run everything, and end with one summary line.
test: deps
	$(Q)$(MAKE) --no-print-directory all pyhook-all $(UNIT_BIN) $(TOOL_BIN)
	$(Q)B=$(B) PYTHON=$(PYTHON) PYTEST_ARGS="$(PYTEST_ARGS)" tests/run-all $(UNIT_BIN)

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
	install -d "$(DESTDIR)$(LIBDIR)/vscode-extension"
	install -m 644 $(VSCODE_EXT) "$(DESTDIR)$(LIBDIR)/vscode-extension/"
	$(if $(wildcard $(B)/python/tdebug),mkdir -p "$(DESTDIR)$(LIBDIR)/tdebug" && \
	    cp $(B)/python/tdebug/*.py $(B)/python/tdebug/*.so "$(DESTDIR)$(LIBDIR)/tdebug/" && \
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
