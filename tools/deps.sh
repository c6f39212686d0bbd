#!/bin/sh
# Installs the Debian packages agent-harness builds and tests with, when they
# are missing: as root with apt-get, otherwise it prints the command to run.
set -u

missing=""
cc=${CC:-cc}
need() { # need PACKAGE HEADER: PACKAGE is missing when cc cannot find HEADER
	printf '#include <%s>\n' "$2" | "$cc" -E -o /dev/null - 2>/dev/null ||
		missing="$missing $1"
}
need libcjson-dev cjson/cJSON.h
need libjq-dev jq.h
need libonig-dev oniguruma.h
need libcurl4-openssl-dev curl/curl.h
# agent-snap writes the objects of a checkpoint made from the changes
need zlib1g-dev zlib.h
# Tools the test suite uses: prove (perl), jq, shellcheck, mandoc (man
# lint), pgrep (procps), script (util-linux, for the terminal tests).
command -v prove >/dev/null 2>&1 || missing="$missing perl"
# The scripted model server, the terminal and signal helpers of the tests
command -v python3 >/dev/null 2>&1 || missing="$missing python3"
command -v jq >/dev/null 2>&1 || missing="$missing jq"
command -v shellcheck >/dev/null 2>&1 || missing="$missing shellcheck"
command -v mandoc >/dev/null 2>&1 || missing="$missing mandoc"
command -v pgrep >/dev/null 2>&1 || missing="$missing procps"
command -v script >/dev/null 2>&1 || missing="$missing util-linux"
# The sandbox's escape tests try these against a server on 127.0.0.1.
command -v curl >/dev/null 2>&1 || missing="$missing curl"
command -v wget >/dev/null 2>&1 || missing="$missing wget"
command -v nc >/dev/null 2>&1 || missing="$missing netcat-openbsd"
# agent-snap's shadow repository (checkpoints), and the tests
command -v git >/dev/null 2>&1 || missing="$missing git"
# examples/parallel.sh, tested by t0550
command -v parallel >/dev/null 2>&1 || missing="$missing parallel"
# tool-exec's grep and glob tools run ripgrep, tested by t0205
command -v rg >/dev/null 2>&1 || missing="$missing ripgrep"

[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "agent-harness: missing packages:$missing" >&2
	echo "agent-harness: install them with: sudo apt-get install$missing" >&2
	exit 1
fi
echo "agent-harness: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086
apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing >&2
