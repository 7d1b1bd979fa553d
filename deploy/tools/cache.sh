# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by slurm-build.sh and flux-build.sh: where the builds of the
# heavy dependencies live, outside the checkout and reused by every later
# `make check` on the machine.  $VNIB_CACHE when set; for root
# /var/tmp/vnibroker-cache (the tests run Slurm's commands as an
# unprivileged user, who must reach them and their libraries: root's home
# is closed to others); else ${XDG_CACHE_HOME:-$HOME/.cache}/vnibroker.
# JOBS is make's parallelism (the CPU count).
if [ -n "${VNIB_CACHE:-}" ]; then
    CACHE=$VNIB_CACHE
elif [ "$(id -u)" -eq 0 ]; then
    CACHE=/var/tmp/vnibroker-cache
else
    CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/vnibroker
fi
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
