# s5tund: a thin layer over CMake.
#
#   make deps    install what is missing (Debian 12, apt-get; root or sudo)
#   make build   configure and build into build/
#   make test    deps + build + every test (unit and end-to-end) with ctest
#   make demo    deps + build + a demonstration in private network namespaces
#   make install build, then cmake --install (DESTDIR honoured)
#   make clean   remove build/
#
# The end-to-end tests and the demo need root (network namespaces, TUN);
# without it they are reported as skipped.

BUILD_DIR  ?= build
CMAKE_ARGS ?=
CTEST_ARGS ?=

# Build tools and libraries, then what the end-to-end tests run: the SOCKS5
# servers, a DNS server (dnsmasq), ip/ss, pgrep, timeout, Debian's python3 (stdlib only).
DEPS := build-essential cmake pkg-config libuv1-dev libinih-dev xz-utils \
        ca-certificates microsocks dante-server dnsmasq-base iproute2 python3 procps coreutils

SHELL := /bin/bash
export DEBIAN_FRONTEND := noninteractive

.PHONY: all deps build test demo clean

all: build

deps:
	@if ! command -v dpkg-query >/dev/null 2>&1; then \
	  echo "make deps: not a Debian system; install by hand: $(DEPS)"; exit 0; \
	fi; \
	missing=""; \
	for p in $(DEPS); do \
	  dpkg-query -W -f='$${Status}\n' "$$p" 2>/dev/null | grep -q '^install ok installed$$' \
	    || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	echo "make deps: installing$$missing"; \
	sudo=""; \
	if [ "$$(id -u)" -ne 0 ]; then \
	  command -v sudo >/dev/null 2>&1 || { echo "make deps: need root to install$$missing" >&2; exit 1; }; \
	  sudo="sudo -E"; \
	fi; \
	log=$$(mktemp); \
	if ! { $$sudo apt-get update -qq && \
	       $$sudo apt-get install -y -qq --no-install-recommends $$missing; } >"$$log" 2>&1; then \
	  cat "$$log" >&2; rm -f "$$log"; echo "make deps: apt-get failed" >&2; exit 1; \
	fi; \
	rm -f "$$log"

build:
	cmake -S . -B $(BUILD_DIR) $(CMAKE_ARGS)
	cmake --build $(BUILD_DIR) -j "$$(nproc)"

test: deps build
	ctest --test-dir $(BUILD_DIR) --output-on-failure $(CTEST_ARGS)

demo: deps build
	bash test/demo.sh $(BUILD_DIR)/s5tund

clean:
	rm -rf $(BUILD_DIR)

# make bench        deps + build + the benchmark (test/bench/; root; several
#                   minutes): direct path vs s5tund thread/process mode,
#                   queues 1 2 4; table, CSV and chart in $(BUILD_DIR)/bench/
# make bench-short  the same, short (CI): asserts only that every case
#                   moved traffic and completed, never a speed
# BENCH_ARGS passes options to test/bench/run.sh (see its --help).
BENCH_ARGS ?=

.PHONY: bench bench-short

bench: deps build
	BUILD_DIR=$(BUILD_DIR) bash test/bench/run.sh --s5tund $(BUILD_DIR)/s5tund $(BENCH_ARGS)

bench-short: deps build
	BUILD_DIR=$(BUILD_DIR) bash test/bench/run.sh --short --s5tund $(BUILD_DIR)/s5tund $(BENCH_ARGS)

# make install      build, then install with CMake: s5tund to sbin, the
#                   systemd unit, the man page, the example configuration
#                   (prefix from CMAKE_INSTALL_PREFIX at configure time,
#                   default /usr/local; DESTDIR=/staging honoured)
.PHONY: install

install: build
	cmake --install $(BUILD_DIR)
