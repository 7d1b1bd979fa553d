#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The layers' check: dependencies run one way.  Each folder has a level,
# and a file may include headers of its own level or lower, never higher:
#
#   lib/, include/vnib/ < fmclient/ < server's core (server/*.h: config,
#   broker, inventory, hwstate) < server/store/ < server/hwcoll/ <
#   server/bg/ < server/http/ < server/api/ < server/main.c
#
# and the programs beside the broker (agent/, cli/, fmsim/) use lib/ and
# their own folder only; a scheduler plugin (plugins/NAME/PART/) its own
# folder, lib/, the agent's library API (agent/stepapi.h) and its
# scheduler's headers; the Flux node side (plugins/flux/node/, a program
# that runs the agent's commands in its own process) the agent's commands
# too (agent/commands.h, agentcfg.h, brokerso.h); and switch/vnib's
# helper (the files of plugins/slurm/switch/ that make
# vnib-switch-helper.so, Makefile's SWITCH_HELPER_SRCS: the agent's code
# in slurmctld's and slurmstepd's process) those and agent/broker.h and
# jobstate.h, never the plugin proper, which srun and slurmd load.  An
# include whose first folder is none of the
# tree's is a dependency's (Slurm's src/common/...) and not checked.
#
# Usage: layers.sh ROOT FILE...: FILE's level comes from its path below
# ROOT.  Prints each include that runs
# against the order as FILE:LINE and exits 1 if there is one.
set -u
fail=0
# Scratch files in a private folder (mktemp), never at a name in /tmp
# that another user could have placed first.
scratch=$(mktemp -d) || exit 1
trap 'rm -rf "$scratch"' EXIT

# level PATH: the level of a path relative to the root, or "own:FOLDER"
# for a program that may include only lib/ and itself.
level () {
    case $1 in
        include/vnib/* | lib/*) echo 0 ;;
        fmclient/*) echo 1 ;;
        server/store/*) echo 3 ;;
        server/hwcoll/*) echo 4 ;;
        server/bg/*) echo 5 ;;
        server/http/*) echo 6 ;;
        server/api/*) echo 7 ;;
        server/main.c) echo 8 ;;
        server/*/*) echo "unknown" ;;
        server/*) echo 2 ;;
        agent/* | cli/* | fmsim/*) echo "own:${1%%/*}" ;;
        plugins/*/*) echo "own:$(echo "$1" | cut -d/ -f1-3)" ;;
        *) echo "any" ;;
    esac
}

# link_check BUILD: the calls between the broker's objects, by layer.
link_check () {
    src=$(cd "$2" && pwd)
    objs=$(cd "$1" && find server -name '*.o' | sort |
        while read -r o; do if [ -e "$src/${o%.o}.c" ]; then echo "$o"; fi; done)
    if [ -z "$objs" ]; then
        echo "layers: no objects under $1/server: build first"
        return 1
    fi
    tab="$scratch/link"
    for o in $objs; do
        nm "$1/$o" | awk -v o="$o" -v l="$(level "${o%.o}.c")" \
            '$1 == "U" { print "U", $2, o, l } NF == 3 && $2 ~ /[TDBRC]/ { print "D", $3, o, l }'
    done >"$tab"
    awk '$1 == "D" { def[$2] = $3; dl[$2] = $4 }
         $1 == "U" { use[++n] = $0 }
         END {
             bad = 0
             for (i = 1; i <= n; i++) {
                 split(use[i], f, " ")
                 if ((f[2] in def) && def[f[2]] != f[3] && dl[f[2]] + 0 > f[4] + 0) {
                     print f[3] " -> " f[2] " (" def[f[2]] "), a higher layer"
                     bad = 1
                 }
             }
             exit bad
         }' "$tab"
    rc=$?
    rm -f "$tab"
    return "$rc"
}

if [ "${1:-}" = --link ]; then
    link_check "$2" "${3:-.}"
    exit $?
fi
root=$1
shift

for file in "$@"; do
    rel=${file#"$root"/}
    mine=$(level "$rel")
    if [ "$mine" = unknown ]; then
        echo "$rel: server/ has no such layer; add the folder to tests/lint/layers.sh"
        fail=1
        continue
    fi
    [ "$mine" = any ] && continue
    grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" |
        sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1 \2/' >"$scratch/includes"
    while read -r line inc; do
        # A quoted include without a folder is the file's own neighbour;
        # one outside the tree's folders is a dependency's.
        case $inc in */*) ;; *) continue ;; esac
        case ${inc%%/*} in
            vnib | agent | cli | fmsim | fmclient | server | lib | include | plugins | tests) ;;
            *) continue ;;
        esac
        case $inc in vnib/*) theirs=0 ;; *) theirs=$(level "$inc") ;; esac
        case $mine in
            own:*)
                dir=${mine#own:}
                case $inc in vnib/* | "$dir"/*) continue ;; esac
                case $dir:$inc in
                    plugins/*:agent/stepapi.h) continue ;;
                    plugins/flux/node:agent/commands.h | plugins/flux/node:agent/agentcfg.h | \
                        plugins/flux/node:agent/brokerso.h) continue ;;
                esac
                case $rel:$inc in
                    plugins/slurm/switch/swv_helper.c:agent/* | plugins/slurm/switch/swv_ctld.c:agent/* | \
                        plugins/slurm/switch/swv_node.c:agent/* | plugins/slurm/switch/swv_broker.c:agent/* | \
                        plugins/slurm/switch/swv_conn.c:agent/*)
                        case ${inc#agent/} in
                            commands.h | agentcfg.h | brokerso.h | broker.h | jobstate.h | limits.h) continue ;;
                        esac
                        ;;
                esac
                echo "$rel:$line: includes $inc: $dir uses lib/ and its own folder only"
                fail=1
                ;;
            *)
                case $theirs in
                    "" | any | own:* | unknown)
                        echo "$rel:$line: includes $inc, which is no layer below it"
                        fail=1
                        ;;
                    *)
                        if [ "$theirs" -gt "$mine" ]; then
                            echo "$rel:$line: includes $inc, a higher layer (the order is in tests/lint/layers.sh)"
                            fail=1
                        fi
                        ;;
                esac
                ;;
        esac
    done <"$scratch/includes"
done
exit "$fail"
