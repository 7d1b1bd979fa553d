#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Install the Debian packages vnibroker needs to build, test and run.
#
#   sh deploy/tools/deps.sh          build and test packages (`make deps`,
#                                    `make check`, `make bench`), Slurm's
#                                    source tree and Slurm 24.11 (below)
#   sh deploy/tools/deps.sh run      only what `make run` builds and runs:
#                                    the broker's -dev packages, the
#                                    compiler, PostgreSQL, openssl, curl
#   sh deploy/tools/deps.sh demo     `make demo`: run's, plus jq and python3
#   sh deploy/tools/deps.sh fuzz     the first, plus clang and libFuzzer for
#                                    `make fuzz`
#   sh deploy/tools/deps.sh ci       the first, plus what .ci/run needs
#                                    beyond `make check`: clang, scan-build
#                                    (`make scan`) and clang-format
#                                    (`make format-check`)
#
# Only missing packages are installed, so a second run is quick and quiet.
# As root it runs apt-get; otherwise it prints the exact command to run.
#
# Then, except for run and demo (the broker needs nothing of Slurm), it
# fetches and configures the Slurm source tree the switch plugin
# (switch_vnib.so) is built against, into build/slurm-src
# (deploy/tools/slurm-src.sh: a private apt configuration, never the
# system's; a no-op once done).  With SLURM_SRC set (a site's own
# configured tree) it fetches nothing.  And it builds Slurm 24.11 from
# Debian 13's verified upstream tarball into the cache outside the
# checkout (deploy/tools/slurm-build.sh: 8-10 minutes once, then a no-op),
# so that the plugins are built and tested against a current Slurm too;
# VNIB_SKIP_SLURM_BUILD=1 leaves it out.  With FLUX_SRC=DIR (a flux-core
# source tree) it builds flux-core into the same cache
# (deploy/tools/flux-build.sh, about 10 minutes once), for the Flux
# plugins; without it the Flux tests are listed as skipped unless a build
# is already there.
set -eu

# What the broker, vnibctl and fmsim need to build, and `make run` to
# run them: a private PostgreSQL cluster (initdb, pg_ctl, psql), openssl
# (the FM password), runuser as root (util-linux), and curl for the
# examples it prints.
# What flux-core needs to build (deploy/tools/flux-build.sh; Debian has
# no flux-core package): the Flux plugins are built and tested against it.
FLUX_BUILD_PKGS="autoconf automake libtool libzmq3-dev liblz4-dev
                 libhwloc-dev libsqlite3-dev uuid-dev libarchive-dev
                 libncurses-dev python3-dev python3-cffi python3-ply lua5.1
                 liblua5.1-0-dev lua-posix libsodium-dev"
# What the high-availability tests start themselves, as unprivileged
# processes on loopback ports they pick: three PostgreSQL members managed
# by Patroni, with etcd as its store.  Like postgresql and prometheus,
# etcd-server may start a system service on install where systemd runs;
# the tests never use it nor its ports.
HA_PKGS="patroni python3-etcd etcd-server etcd-client"
RUN_PKGS="build-essential pkg-config libmicrohttpd-dev libcurl4-openssl-dev
          libjansson-dev libpq-dev libssl-dev postgresql curl openssl
          util-linux"
PKGS="$RUN_PKGS libcmocka-dev postgresql-contrib jq procps iproute2 python3
      python3-yaml
      slurmctld slurmd slurm-client libslurm-dev dpkg-dev libmunge-dev
      debian-archive-keyring
      chromium prometheus prometheus-alertmanager debhelper fakeroot lintian
      $HA_PKGS $FLUX_BUILD_PKGS"
fetch_slurm=1
case "${1:-}" in
    "") ;;
    run)
        PKGS=$RUN_PKGS
        fetch_slurm=0
        ;;
    # The demo's job stream is Python; jq marks its faulty nodes' NICs.
    demo)
        PKGS="$RUN_PKGS jq python3"
        fetch_slurm=0
        ;;
    fuzz) PKGS="$PKGS clang libclang-rt-14-dev" ;;
    # clang-tools, not clang-tools-14, is the package of /usr/bin/scan-build.
    ci) PKGS="$PKGS clang clang-tools clang-format" ;;
    *)
        echo "deps: unknown argument '$1' (want none, run, demo, fuzz or ci)" >&2
        exit 2
        ;;
esac

missing=""
for p in $PKGS; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    case "$status" in
        *"install ok installed"*) ;;
        *) missing="$missing $p" ;;
    esac
done
slurm_src () {
    [ "$fetch_slurm" -eq 1 ] || return 0
    # flux-core, when the caller brings its source (FLUX_SRC=DIR: the
    # public repository's v0.88.0 tag, exported); once, into the cache.
    if [ -n "${FLUX_SRC:-}" ]; then
        sh "$(dirname "$0")/flux-build.sh" --src "$FLUX_SRC"
    fi
    if [ "${VNIB_SKIP_SLURM_BUILD:-0}" != 1 ]; then
        sh "$(dirname "$0")/slurm-build.sh" 24.11
    fi
    [ -n "${SLURM_SRC:-}" ] && return 0
    sh "$(dirname "$0")/slurm-src.sh" build
}

if [ -z "$missing" ]; then
    slurm_src
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "deps: missing Debian packages:$missing" >&2
    echo "deps: run as root:  apt-get update && apt-get install -y$missing" >&2
    exit 1
fi

echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# The postgresql package starts a system cluster on install where it can;
# vnibroker never uses it (tests and `make run` start private clusters).
apt-get install -y -qq --no-install-recommends $missing >/dev/null
slurm_src
