#!/bin/sh
# Install the Debian packages vnibroker needs to build, test and run.
#
#   sh deploy/tools/deps.sh          build, test and `make run` packages
#   sh deploy/tools/deps.sh fuzz     plus clang and libFuzzer for `make fuzz`
#   sh deploy/tools/deps.sh ci       plus what .ci/run needs beyond `make
#                                    check`: clang, scan-build (`make scan`)
#                                    and clang-format (`make format-check`)
#
# Only missing packages are installed, so a second run is quick and quiet.
# As root it runs apt-get; otherwise it prints the exact command to run.
#
# Then it fetches and configures the Slurm source tree the switch plugin
# (switch_vnib.so) is built against, into build/slurm-src
# (deploy/tools/slurm-src.sh: a private apt configuration, never the
# system's; a no-op once done).  With SLURM_SRC set (a site's own
# configured tree) it fetches nothing.
set -eu

PKGS="build-essential pkg-config libmicrohttpd-dev libcurl4-openssl-dev
      libjansson-dev libpq-dev libssl-dev libcmocka-dev postgresql
      postgresql-contrib curl jq openssl util-linux procps iproute2 python3
      python3-yaml
      slurmctld slurmd slurm-client libslurm-dev dpkg-dev
      debian-archive-keyring
      chromium prometheus debhelper fakeroot lintian"
case "${1:-}" in
    "") ;;
    fuzz) PKGS="$PKGS clang libclang-rt-14-dev" ;;
    # clang-tools, not clang-tools-14, is the package of /usr/bin/scan-build.
    ci) PKGS="$PKGS clang clang-tools clang-format" ;;
    *)
        echo "deps: unknown argument '$1' (want none, fuzz or ci)" >&2
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
