# nectar build. Targets:
#   make            library, the `nectar` command and the test binaries (build/)
#   make test       run every test (build/)
#   make check      install what the build and the tests need (scripts/install-deps.sh
#                   --test), build with gcc and clang, run every test, then run them
#                   again under ASan/UBSan
#   make demo       install missing packages, build, run the bundled demo model
#   make fuzz       coverage-instrumented libFuzzer builds of the fuzz targets (clang)
#   make fuzz-run SECONDS=N   run each fuzz target N seconds, print what it found
#   make tools-venv build/venv with the Python packages of tools/requirements.txt
#   make install    PREFIX=/usr/local [DESTDIR=]: nectar, nectar.h, libnectar.a/.so,
#                   nectar.pc, the Qwen3 tokenizer data; make uninstall removes them
# Sources are found by wildcard: adding a file under src/ adds it to the build.
# Files named *_avx2.c / *_avx512.c / *_amx.c (x86-64) and *_neon.c (arm64) are the
# per-ISA kernels; they are compiled with their ISA flags, only on that
# architecture, and dispatched at run time (src/cpu).

UNAME_S := $(shell uname -s)
UNAME_M := $(shell uname -m)
CC ?= cc
BUILD ?= build
OPT ?= -O2
SAN ?=
# Sanitizer flags of the per-ISA kernel objects (*_avx2/_avx512/_amx/_neon.c);
# the fuzz build sets them without the coverage instrumentation (see fuzz:).
ISA_SAN ?= $(SAN)

PKGS := libpcre2-8 libutf8proc jansson libmicrohttpd
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

CPPFLAGS := -Iinclude -Isrc -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -D_DARWIN_C_SOURCE
CFLAGS_ALL := -std=c11 -Wall -Wextra -Werror -g $(OPT) $(PKG_CFLAGS) -MMD -MP $(CFLAGS)
LDLIBS := $(PKG_LIBS) -lm -lpthread
# gcc's -Wformat-truncation flags every bounded snprintf of a message; the
# truncation is intended there (one-line error records), so it is off for gcc.
IS_CLANG := $(shell $(CC) -dM -E - </dev/null 2>/dev/null | grep -c __clang__)
ifeq ($(IS_CLANG),0)
CFLAGS_ALL += -Wno-format-truncation
endif
ifeq ($(UNAME_S),Darwin)
# src/ane: the Objective-C runtime, CoreFoundation and IOSurface C APIs
LDLIBS += -framework Foundation -framework CoreFoundation -framework IOSurface -lobjc
endif

SRC := $(shell find src -name '*.c' | LC_ALL=C sort)
ifneq ($(UNAME_S),Darwin)
SRC := $(filter-out src/ane/%,$(SRC))
endif
ifeq ($(filter x86_64 amd64,$(UNAME_M)),)
SRC := $(filter-out %_avx2.c %_avx512.c %_amx.c,$(SRC))
endif
ifeq ($(filter arm64 aarch64,$(UNAME_M)),)
SRC := $(filter-out %_neon.c,$(SRC))
endif
OBJ := $(SRC:%.c=$(BUILD)/obj/%.o)
ifeq ($(UNAME_S),Darwin)
# the one Objective-C file: @try around the bridge's calls (src/ane/ane_try.m)
OBJ += $(BUILD)/obj/src/ane/ane_try.o
endif
LIB := $(BUILD)/libnectar.a

CLI_SRC := $(shell find tools/nectar -name '*.c' | LC_ALL=C sort)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
NECTAR := $(BUILD)/nectar

TEST_COMMON_SRC := $(wildcard tests/common/*.c)
TEST_COMMON_OBJ := $(TEST_COMMON_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC := $(shell find tests -name 'test_*.c' -not -path 'tests/common/*' | LC_ALL=C sort)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN := $(FUZZ_SRC:tests/%.c=$(BUILD)/tests/%)
FUZZ_DRIVER_OBJ := $(BUILD)/obj/tests/fuzz/driver.o

all: $(NECTAR) $(TEST_BIN) $(FUZZ_BIN)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "CC $<"
	@$(CC) $(CPPFLAGS) $(CFLAGS_ALL) $(OBJ_SAN) $(ISA_FLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.m
	@mkdir -p $(dir $@)
	@echo "CC $<"
	@$(CC) $(CPPFLAGS) $(CFLAGS_ALL) $(SAN) -x objective-c -fobjc-exceptions -c $< -o $@

OBJ_SAN = $(SAN)
$(BUILD)/obj/%_avx2.o $(BUILD)/obj/%_avx512.o $(BUILD)/obj/%_amx.o $(BUILD)/obj/%_neon.o: OBJ_SAN = $(ISA_SAN)
$(BUILD)/obj/%_avx2.o: ISA_FLAGS = -mavx2 -mfma -mf16c
$(BUILD)/obj/%_avx512.o: ISA_FLAGS = -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx512bf16 -mfma -mf16c
$(BUILD)/obj/%_amx.o: ISA_FLAGS = -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 -mfma -mf16c -mamx-tile -mamx-bf16
# AVX-VNNI (the VEX vpdpbusd) on top of AVX2: *_vnni_avx2.c (the shorter stem wins)
$(BUILD)/obj/%_vnni_avx2.o: ISA_FLAGS = -mavx2 -mfma -mf16c -mavxvnni
# arm64 extensions, one file each, used where the CPU reports them (the rest
# of the build stays armv8.0); tests/cpu/test_neon_qemu.sh uses the same flags
$(BUILD)/obj/%_dotprod_neon.o: ISA_FLAGS = -march=armv8.2-a+dotprod
$(BUILD)/obj/%_i8mm_neon.o: ISA_FLAGS = -march=armv8.2-a+dotprod+i8mm
$(BUILD)/obj/%_bf16_neon.o: ISA_FLAGS = -march=armv8.2-a+bf16
$(BUILD)/obj/src/ane/%.o: CFLAGS_ALL += -fobjc-arc -Wno-unused-parameter

$(LIB): $(OBJ)
	@mkdir -p $(dir $@)
	@rm -f $@
	@echo "AR $@"
	@ar rcs $@ $(OBJ)

$(NECTAR): $(CLI_OBJ) $(LIB)
	@echo "LD $@"
	@$(CC) $(SAN) -o $@ $(CLI_OBJ) $(LIB) $(LDLIBS)

$(BUILD)/tests/fuzz/%: $(BUILD)/obj/tests/fuzz/%.o $(FUZZ_DRIVER_OBJ) $(TEST_COMMON_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	@echo "LD $@"
	@$(CC) $(SAN) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TEST_COMMON_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	@echo "LD $@"
	@$(CC) $(SAN) -o $@ $^ $(LDLIBS)

test: all
	@sh tests/run_tests.sh $(BUILD)

deps:
	@sh scripts/install-deps.sh

# What the tests use beyond the build (browser, qemu + cross compiler, the
# openai client in build/venv): only hardware-gated tests skip after it.
deps-test:
	@sh scripts/install-deps.sh --test

# Sanitizer build in its own folder; -O1 keeps it quick to run.
asan:
	@$(MAKE) --no-print-directory BUILD=build/asan OPT=-O1 \
	    SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" all

test-asan: asan
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	    NECTAR_SANITIZED=1 sh tests/run_tests.sh build/asan

# Warning check with clang (the other compiler CI promises to stay quiet on).
clang-build:
	@if command -v clang >/dev/null 2>&1; then \
	    $(MAKE) --no-print-directory CC=clang BUILD=build/clang all; \
	else echo "clang not found: skipping the clang build"; fi

JOBS ?= $(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
check: deps-test
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@$(MAKE) --no-print-directory -j$(JOBS) clang-build
	@$(MAKE) --no-print-directory test
	@$(MAKE) --no-print-directory -j$(JOBS) asan
	@$(MAKE) --no-print-directory test-asan

DEMO_PROMPT ?= In the beginning
demo: deps
	@$(MAKE) --no-print-directory $(NECTAR)
	$(NECTAR) run -m models/demo -p "$(DEMO_PROMPT)" -n 64

# Long fuzzing runs with libFuzzer (needs clang and its runtime libraries:
# `sh scripts/install-deps.sh fuzz`); the test suite runs each target briefly
# through tests/fuzz/driver.c instead. Every library object of the fuzz build
# carries the coverage instrumentation (fuzzer-no-link) as well as ASan/UBSan,
# so libFuzzer sees the edges of the parsers, not only of the target file.
# UBSan findings abort, so libFuzzer records them as crashes. The per-ISA
# kernels are not input parsers: they get ASan only (bad shapes a parser let
# through still fault there), since clang 14 takes minutes of CPU per kernel
# file with UBSan on top of the AVX-512 intrinsics.
FUZZ_SAN := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_ISA_SAN := -fsanitize=address -fno-omit-frame-pointer
FUZZ_OUT := build/fuzz/bin
fuzz:
	@sh scripts/install-deps.sh fuzz-check
	@$(MAKE) --no-print-directory BUILD=build/fuzz CC=clang OPT=-O1 SAN="$(FUZZ_SAN)" \
	    ISA_SAN="$(FUZZ_ISA_SAN)" fuzz-bins

# Only reached through the sub-make above (BUILD=build/fuzz, CC=clang).
fuzz-bins: $(FUZZ_SRC:tests/fuzz/%.c=$(FUZZ_OUT)/%)
	@:
$(FUZZ_OUT)/%: tests/fuzz/%.c $(LIB)
	@mkdir -p $(dir $@) $(BUILD)/obj/tests/fuzz
	@echo "FUZZ $@"
	@$(CC) $(CPPFLAGS) -std=c11 -Wall -Wextra -Werror -g $(OPT) $(PKG_CFLAGS) -MMD -MP -MF $(BUILD)/obj/tests/fuzz/$*.fuzz.d \
	    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
	    $< $(LIB) $(LDLIBS) -o $@

# Runs every fuzz target for SECONDS seconds each from its committed seeds
# (tests/fuzz/corpus/<target>, dictionaries in tests/fuzz/dict) and prints per
# target: executions, edges covered, corpus size, crashes. TARGETS=... picks some.
SECONDS ?= 60
TARGETS ?=
fuzz-run: fuzz
	@sh scripts/fuzz-run.sh -t $(SECONDS) $(TARGETS)

# ---- The installable library: shared library, pkg-config file, install ------
# Library objects are position-independent and hide every symbol that the
# public header does not mark NC_API, so libnectar.so exports only nc_*
# (the static library and the .so are made from the same objects).
LIB_CFLAGS := -fPIC -fvisibility=hidden
$(OBJ): CFLAGS_ALL += $(LIB_CFLAGS)
# Objects compiled before these flags existed are rebuilt once: they depend
# on a stamp whose content is the flags, rewritten only when they change.
LIB_CFLAGS_STAMP := $(BUILD)/lib-cflags.txt
$(shell mkdir -p $(BUILD) && (echo '$(LIB_CFLAGS)' | cmp -s - $(LIB_CFLAGS_STAMP) || \
    echo '$(LIB_CFLAGS)' >$(LIB_CFLAGS_STAMP)))
$(OBJ): $(LIB_CFLAGS_STAMP)
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR ?= $(PREFIX)/share/nectar
NC_VERSION := $(shell sed -n 's/^\#define NECTAR_VERSION "\(.*\)"/\1/p' include/nectar.h)
NC_MAJOR := $(firstword $(subst ., ,$(NC_VERSION)))
ifeq ($(UNAME_S),Darwin)
SHLIB_NAME := libnectar.$(NC_MAJOR).dylib
SHLIB_LINK := libnectar.dylib
SHLIB_FLAGS = -dynamiclib -install_name $(LIBDIR)/$(SHLIB_NAME) \
    -compatibility_version $(NC_MAJOR) -current_version $(NC_VERSION)
else
SHLIB_NAME := libnectar.so.$(NC_MAJOR)
SHLIB_LINK := libnectar.so
SHLIB_FLAGS = -shared -Wl,-soname,$(SHLIB_NAME)
endif
SHLIB := $(BUILD)/$(SHLIB_NAME)
all: $(SHLIB)
# the nectar binary finds the Qwen3 tokenizer it copies into random
# folders here when installed (tools/nectar/cmd_gen_random.c)
$(BUILD)/obj/tools/nectar/%.o: CPPFLAGS += -DNECTAR_DATADIR='"$(DATADIR)"'

$(SHLIB): $(OBJ)
	@echo "LD $@"
	@$(CC) $(SAN) $(SHLIB_FLAGS) -o $@ $(OBJ) $(LDLIBS)
	@ln -sf $(SHLIB_NAME) $(BUILD)/$(SHLIB_LINK)

# nectar.pc is written at install time: it names the PREFIX given then.
# libmicrohttpd's TLS stack (gnutls, libidn2) needs libunistring in a static
# link, and not every distribution's .pc files say so (libunistring-dev:
# scripts/install-deps.sh).
PC_LIBS_PRIVATE := $(if $(shell pkg-config --static --libs libmicrohttpd 2>/dev/null | grep -e -lgnutls -e -lidn2),-lunistring)
NC_PC = 'prefix=$(PREFIX)' 'libdir=$(LIBDIR)' 'includedir=$(INCLUDEDIR)' '' 'Name: nectar' \
    'Description: transformers in C: Qwen3 and ModernBERT on the CPU, lowered to Apple Neural Engine programs' \
    'Version: $(NC_VERSION)' 'Requires.private: $(PKGS)' \
    'Libs: -L$${libdir} -Wl,-rpath,$${libdir} -lnectar' \
    'Libs.private: -lm -lpthread $(PC_LIBS_PRIVATE)' 'Cflags: -I$${includedir}'

shared: $(SHLIB)

install: $(NECTAR) $(LIB) $(SHLIB)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR) \
	    $(DESTDIR)$(DATADIR)/qwen3-tokenizer $(DESTDIR)$(DATADIR)/small-tokenizer \
	    $(DESTDIR)$(DATADIR)/encoder-tokenizer
	install -m 755 $(NECTAR) $(DESTDIR)$(BINDIR)/nectar
	install -m 644 include/nectar.h $(DESTDIR)$(INCLUDEDIR)/nectar.h
	install -m 644 $(LIB) $(DESTDIR)$(LIBDIR)/libnectar.a
	install -m 755 $(SHLIB) $(DESTDIR)$(LIBDIR)/$(SHLIB_NAME)
	ln -sf $(SHLIB_NAME) $(DESTDIR)$(LIBDIR)/$(SHLIB_LINK)
	printf '%s\n' $(NC_PC) >$(DESTDIR)$(LIBDIR)/pkgconfig/nectar.pc
	install -m 644 tests/fixtures/qwen3-tokenizer/* $(DESTDIR)$(DATADIR)/qwen3-tokenizer/
	install -m 644 tests/fixtures/small-tokenizer/* $(DESTDIR)$(DATADIR)/small-tokenizer/
	install -m 644 tests/fixtures/encoder-tokenizer/* $(DESTDIR)$(DATADIR)/encoder-tokenizer/
	@sh scripts/pc-hint.sh '$(DESTDIR)' '$(LIBDIR)/pkgconfig'

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/nectar $(DESTDIR)$(INCLUDEDIR)/nectar.h \
	    $(DESTDIR)$(LIBDIR)/libnectar.a $(DESTDIR)$(LIBDIR)/$(SHLIB_NAME) \
	    $(DESTDIR)$(LIBDIR)/$(SHLIB_LINK) $(DESTDIR)$(LIBDIR)/pkgconfig/nectar.pc
	rm -rf $(DESTDIR)$(DATADIR)
.PHONY: shared install uninstall

# ---- Python for tools/ (the fixture scripts) -------------------------------
# build/venv: a venv with tools/requirements.txt; run the scripts as
# build/venv/bin/python tools/<script>.py. `make check` puts only what the
# tests need there (scripts/install-deps.sh --test).
tools-venv:
	@[ -x build/venv/bin/python ] || python3 -m venv build/venv
	build/venv/bin/pip install -r tools/requirements.txt
.PHONY: tools-venv

clean:
	rm -rf build

.PHONY: all test deps deps-test asan test-asan clang-build check demo fuzz fuzz-bins fuzz-run clean
.SECONDARY:

# Test and fuzz objects too: a header change must rebuild the tests that
# include it (a stale test object sees old struct sizes).
-include $(OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_COMMON_OBJ:.o=.d) \
    $(TEST_SRC:%.c=$(BUILD)/obj/%.d) $(FUZZ_SRC:%.c=$(BUILD)/obj/%.d) $(FUZZ_DRIVER_OBJ:.o=.d) \
    $(wildcard build/fuzz/obj/tests/fuzz/*.fuzz.d)
