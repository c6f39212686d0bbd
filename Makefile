# agent-harness: build, test, install.
# Plain make; see README.md.  `make check` runs the whole suite, first on the
# normal build, then on an AddressSanitizer + UBSan build (build/san).

PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man
DATADIR ?= $(PREFIX)/share/agent-harness

VERSION = 0.2
CC      ?= cc
CFLAGS  ?= -O2 -g
override CFLAGS += -DAH_VERSION='"$(VERSION)"' -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow \
	-Wstrict-prototypes -Wmissing-prototypes -Wvla -Ilib -MD -MP
LDLIBS  ?=
override LDLIBS += -ljq -lonig -lcjson -lz -lm -ldl
override LDFLAGS += -Wl,--as-needed

# prove shows the failing tests and their logs (TAP comments).  The shell
# tests run PROVEJOBS scripts at a time: most of their time is spent
# waiting on processes, and each script keeps to its own scratch
# directory, ports and processes.
PROVEFLAGS ?= --failures --comments
PROVEJOBS  ?= 2

# Where objects and programs go; the sanitizer build sets another one.
BUILD   ?= build

PROGS   = todo-write tool-exec agent-step hook-perm hook-audit agent-compact agent-session agent-snap mcp-bridge hook-cc
LIBSRC  = $(wildcard lib/*.c)
# share/NAME.json and share/NAME.jq compiled in as the string data_NAME
# (lib/priv.h).
DATA    = policy tools task moretools prelude modes prices
GENSRC  = $(DATA:%=$(BUILD)/gen/%.c)
LIBOBJ  = $(LIBSRC:lib/%.c=$(BUILD)/lib/%.o) $(GENSRC:.c=.o)
CLIOBJ  = $(BUILD)/cmd/cli.o
UNITSRC = $(wildcard tests/unit/*.c)
UNITS   = $(UNITSRC:tests/unit/%.c=$(BUILD)/tests/%)
BINS    = $(PROGS:%=$(BUILD)/bin/%) $(BUILD)/bin/agent-run
# Fuzz targets: tests/fuzz/NAME.c, its kept inputs in tests/corpus/NAME.
FUZZERS = $(filter-out replay,$(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/*.c)))
REPLAYS = $(FUZZERS:%=$(BUILD)/fuzz/replay-%)
MAN1    = $(wildcard man/*.1)
MAN5    = $(wildcard man/*.5)
MAN7    = $(wildcard man/*.7)
SCRIPTS = .ci/run tools/deps.sh tools/mutate.sh tools/mcp-servers.sh cmd/agent-run bench/peers.sh tests/lib.sh \
	tests/suite-probe.sh $(wildcard tests/*.t) \
	$(wildcard examples/*.sh)

SANFLAGS = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=all

.PHONY: all bench bench-peers check-peers demo deps check check-plain check-san check-valgrind \
	test-units test-shell test-corpus fuzz fuzz-shell install uninstall clean lint

all: $(BINS) $(UNITS) $(REPLAYS)

# The demo: agent-run on a copy of examples/blog against a scripted model
# (or a real one: set AGENT_BASE_URL and AGENT_MODEL).
demo: $(BINS)
	PATH="$(abspath $(BUILD)/bin):$$PATH" sh examples/demo.sh

# The loop's own cost, against the scripted server (bench/README.md).
# BENCH_FILES: the files of the workspace in which checkpoints are timed.
BENCH_FILES ?= 20000
bench: $(BINS)
	python3 bench/bench.py --bin $(abspath $(BUILD)/bin) $(BENCHFLAGS)
	python3 bench/bench.py --bin $(abspath $(BUILD)/bin) --checkpoints $(BENCH_FILES)
	python3 bench/bench.py --bin $(abspath $(BUILD)/bin) --mcp 300

# agent-run beside Claude Code, Codex CLI and pi-coding-agent (installed
# with npm into a cache outside the tree; bench/README.md, "Peers").
bench-peers: $(BINS)
	sh bench/peers.sh --bin $(abspath $(BUILD)/bin) $(PEERSFLAGS)

# hook-perm --format as the PreToolUse hook of the real Claude Code and
# Codex CLI (installed as for bench-peers; a peer npm cannot install is
# skipped, saying so).  Not in `make check`: it needs the npm registry.
check-peers: $(BINS)
	sh bench/peers.sh --hooks-check --bin $(abspath $(BUILD)/bin) --timeout 180 $(PEERSFLAGS)

# Missing headers are installed (as root) or the command to install them is
# printed: a fresh machine gets from nothing to green with `make check`;
# the MCP servers of tests/t0870 come from npm into a cache outside the
# tree (tools/mcp-servers.sh; without npm those tests skip).
deps:
	@sh tools/deps.sh
	@sh tools/mcp-servers.sh

$(BUILD)/.deps:
	@sh tools/deps.sh
	@sh tools/mcp-servers.sh
	@mkdir -p $(@D) && touch $@

$(BUILD)/lib/%.o: lib/%.c | $(BUILD)/.deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

# The bytes of the file as od prints them, in an array that ends in a NUL.
define gen-data
	@mkdir -p $(@D)
	{ printf '/* Made by the Makefile from %s: edit that. */\n' '$<' && \
	  printf 'extern const char data_%s[];\nconst char data_%s[] = {\n' \
		'$*' '$*' && \
	  od -An -v -tx1 $< | sed -e 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g' && \
	  printf '0 };\n'; } >$@.tmp && mv $@.tmp $@
endef
$(BUILD)/gen/%.c: share/%.json
	$(gen-data)
$(BUILD)/gen/%.c: share/%.jq
	$(gen-data)

$(BUILD)/gen/%.o: $(BUILD)/gen/%.c
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/cmd/%.o: cmd/%.c | $(BUILD)/.deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/tests/%.o: tests/unit/%.c | $(BUILD)/.deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests/unit -c -o $@ $<

$(BUILD)/lib/libharness.a: $(LIBOBJ)
	$(AR) rcs $@ $^

$(BUILD)/bin/%: $(BUILD)/cmd/%.o $(CLIOBJ) $(BUILD)/lib/libharness.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The driver in the build finds its data in the source tree; installed,
# in DATADIR.
$(BUILD)/bin/agent-run: cmd/agent-run
	@mkdir -p $(@D)
	sed -e 's|@DATADIR@|$(abspath share)|' -e 's|@VERSION@|$(VERSION)|' \
		cmd/agent-run >$@ && chmod 755 $@

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(BUILD)/lib/libharness.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Each fuzz target, driven by tests/fuzz/replay.c instead of libFuzzer, so
# that the corpus is replayed by every build, the sanitizer one included.
$(BUILD)/fuzz/%.o: tests/fuzz/%.c | $(BUILD)/.deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests/fuzz -c -o $@ $<

$(BUILD)/fuzz/replay-%: $(BUILD)/fuzz/%.o $(BUILD)/fuzz/replay.o \
		$(BUILD)/lib/libharness.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

test-corpus: $(REPLAYS)
	@for f in $(FUZZERS); do \
		$(BUILD)/fuzz/replay-$$f tests/corpus/$$f || exit 1; done

# libFuzzer (clang) on each target for FUZZTIME seconds.  New inputs go to
# build/fuzz/corpus; crashes are kept in tests/corpus/NAME (crash-*), where
# test-corpus replays them from then on.  FUZZERS=name picks one.
FUZZCC   ?= clang
FUZZTIME ?= 60
FUZZFLAGS = -O1 -g -std=c11 -D_GNU_SOURCE -Ilib -Itests/fuzz \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
fuzz: $(DATA:%=build/gen/%.c) | build/.deps
	@mkdir -p build/fuzz/libfuzzer
	@for f in $(FUZZERS); do \
		$(FUZZCC) $(FUZZFLAGS) -o build/fuzz/libfuzzer/$$f tests/fuzz/$$f.c \
			$(LIBSRC) $(DATA:%=build/gen/%.c) $(LDLIBS) || exit 1; \
		mkdir -p build/fuzz/corpus/$$f tests/corpus/$$f; \
		echo "fuzz: $$f for $(FUZZTIME) s"; \
		build/fuzz/libfuzzer/$$f -max_total_time=$(FUZZTIME) \
			-max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
			-artifact_prefix=tests/corpus/$$f/ build/fuzz/corpus/$$f \
			tests/corpus/$$f 2>build/fuzz/$$f.log; rc=$$?; \
		grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+.*DONE)" \
			build/fuzz/$$f.log; \
		[ $$rc = 0 ] || { tail -40 build/fuzz/$$f.log; exit 1; }; \
	done

# The splitter against real bash (tests/shdiff.py, run by t0455 with a
# fixed seed): SHELL_LINES lines from a random seed (SEED=n repeats one),
# each finding minimised.
SHELL_LINES ?= 100000
fuzz-shell: $(BUILD)/tests/shsplit
	python3 tests/shdiff.py --split $(BUILD)/tests/shsplit \
		--lines $(SHELL_LINES) --minimise $(if $(SEED),--seed $(SEED))

# The tests run the programs of $(BUILD)/bin first in PATH (tests/lib.sh).
test-units: $(UNITS)
	prove $(PROVEFLAGS) $(UNITS)

test-shell: $(BINS)
	AH_BIN=$(abspath $(BUILD)/bin) prove -j$(PROVEJOBS) $(PROVEFLAGS) tests/*.t

check-plain: all
	$(MAKE) --no-print-directory test-units test-corpus test-shell

check-san:
	$(MAKE) --no-print-directory BUILD=build/san CFLAGS="$(SANFLAGS)" \
		LDFLAGS="-fsanitize=address,undefined" all
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=99 \
	$(MAKE) --no-print-directory BUILD=build/san CFLAGS="$(SANFLAGS)" \
		LDFLAGS="-fsanitize=address,undefined" test-units test-corpus test-shell

# Last, the real peers with hook-perm as their hook, where the npm
# registry can be reached (make check-peers says which it had to skip).
check: check-plain check-san
	@if command -v npm >/dev/null 2>&1 && npm ping >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory check-peers; \
	else echo "check: the npm registry cannot be reached: check-peers skipped"; fi

# Every program run by the shell tests goes through valgrind (tests/lib.sh
# wraps them when AH_VALGRIND is set); slow, so not part of `make check`.
check-valgrind: all
	AH_VALGRIND=1 $(MAKE) --no-print-directory test-shell
	for t in $(UNITS); do valgrind -q --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite,indirect $$t >/dev/null || exit 1; done

# Mutation testing: each mutant of tests/mutants/*.txt on a copy of the
# tree, against the tests that cover it; the score.  Slow (an hour), so
# not part of `make check`, which only reads the list (t0970).
# MUTANTS="id ..." picks some; MUTATEFLAGS=-B skips the baseline run.
.PHONY: mutate
mutate:
	sh tools/mutate.sh $(MUTATEFLAGS) $(MUTANTS)

lint:
	shellcheck -s sh $(SCRIPTS)
	mandoc -Tlint -Wwarning $(MAN1) $(MAN5) $(MAN7)

install: $(BINS)
	mkdir -p $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(DATADIR)
	install -m 755 $(PROGS:%=$(BUILD)/bin/%) $(DESTDIR)$(BINDIR)/
	sed -e 's|@DATADIR@|$(DATADIR)|' -e 's|@VERSION@|$(VERSION)|' \
		cmd/agent-run >$(DESTDIR)$(BINDIR)/agent-run
	chmod 755 $(DESTDIR)$(BINDIR)/agent-run
	install -m 644 share/system-prompt.txt share/mode-plan.txt $(DESTDIR)$(DATADIR)/
	mkdir -p $(DESTDIR)$(DATADIR)/examples
	install -m 755 $(wildcard examples/*.sh) $(DESTDIR)$(DATADIR)/examples/
	install -m 644 $(MAN1) $(DESTDIR)$(MANDIR)/man1/
	install -m 644 $(MAN5) $(DESTDIR)$(MANDIR)/man5/
	install -m 644 $(MAN7) $(DESTDIR)$(MANDIR)/man7/

uninstall:
	rm -f $(PROGS:%=$(DESTDIR)$(BINDIR)/%) $(DESTDIR)$(BINDIR)/agent-run
	rm -f $(MAN1:man/%=$(DESTDIR)$(MANDIR)/man1/%) \
		$(MAN5:man/%=$(DESTDIR)$(MANDIR)/man5/%) \
		$(MAN7:man/%=$(DESTDIR)$(MANDIR)/man7/%)
	rm -rf $(DESTDIR)$(DATADIR)

clean:
	rm -rf build

.SECONDARY:
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
