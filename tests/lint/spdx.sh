#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The licence line of every source file: vnibroker is GPL-2.0-or-later
# (COPYING), and each source file says so in its first 3 lines:
#
#   /* SPDX-License-Identifier: GPL-2.0-or-later */     C, CSS: line 1
#   // SPDX-License-Identifier: GPL-2.0-or-later        JavaScript: line 1
#   -- SPDX-License-Identifier: GPL-2.0-or-later        SQL: line 1
#   <!-- SPDX-License-Identifier: GPL-2.0-or-later -->  HTML: after a
#                                                       <!DOCTYPE> line
#   # SPDX-License-Identifier: GPL-2.0-or-later         the rest: after a
#                                                       #! line
#
#   sh tests/lint/spdx.sh [FILE...]        name each source file without
#                                          the line; exit 1 if there is one
#   sh tests/lint/spdx.sh --add [FILE...]  add the line to each of them
#                                          (a second run changes nothing)
#
# Without FILE, the files are those git tracks.  Source files: *.c *.h
# *.sh *.py *.sql *.in *.js *.css *.html, Makefiles, and any other file
# that starts with #!.  Not: documents, data (json, yaml, toml), COPYING,
# the fuzz inputs and the lint checks' fixtures (inputs kept byte for
# byte), and the frozen migrations (frozen below).  A FILE named on the
# command line is classified the same way, but the fixtures' exclusion
# does not apply to it (tests/lint/run.sh checks this script on them).
#
# A *.in template is commented as what it becomes (foo.c.in as C); one
# that becomes no file type above (units, settings) takes # comments.  A
# Python coding line right after #! stays on line 2: the line goes after
# it.
set -eu
cd "$(dirname "$0")/../.."

SPDX="SPDX-License-Identifier: GPL-2.0-or-later"
# While this file exists, tests/lint/run.sh reports the files without the
# line but does not fail (see the file); --add on the whole tree removes it.
PENDING=tests/lint/spdx-pending

# frozen FILE: true for a migration whose bytes may never change.  The
# broker records each applied migration's SHA-256 (schema/0013) and
# refuses to start when a file no longer matches, so a line added to
# 0001-0019, applied at sites before the licence, would stop every
# broker there.  Migrations from 0020 on carry the line like any file.
frozen () {
    case "$1" in
        schema/[0-9][0-9][0-9][0-9]_*.sql) ;;
        *) return 1 ;;
    esac
    n=${1#schema/}
    n=${n%%_*}
    [ "$(expr "$n" + 0)" -le 19 ]
}

# style FILE: the comment style of a source file (c, js, sql, html or
# hash), or nothing for any other file.
style () {
    name=${1##*/}
    case "$name" in
        *.in) name=${name%.in} ;;
    esac
    case "$name" in
        *.c | *.h | *.css) echo c ;;
        *.js) echo js ;;
        *.sql) echo sql ;;
        *.html) echo html ;;
        *.sh | *.py | Makefile) echo hash ;;
        *)
            if [ "$name" != "${1##*/}" ]; then
                echo hash
            elif [ "$(head -c 2 "$1")" = "#!" ]; then
                echo hash
            fi
            ;;
    esac
}

# has_line FILE: true if the file's first 3 lines carry the identifier.
has_line () {
    head -n 3 "$1" | grep -qF "$SPDX"
}

# add_line FILE STYLE: insert the line where STYLE puts it.  GNU sed -i
# writes a new file with the old one's mode.
add_line () {
    first=$(head -n 1 "$1")
    case "$2" in
        c) line="/* $SPDX */" ;;
        js) line="// $SPDX" ;;
        sql) line="-- $SPDX" ;;
        html) line="<!-- $SPDX -->" ;;
        hash) line="# $SPDX" ;;
    esac
    after=0
    case "$2:$first" in
        html:"<!DOCTYPE"* | html:"<!doctype"*) after=1 ;;
        hash:"#!"*)
            after=1
            # PEP 263: a coding line must be line 1 or 2.
            if sed -n 2p "$1" | grep -q '^[ \t\f]*#.*coding[:=]'; then
                after=2
            fi
            ;;
    esac
    if [ ! -s "$1" ]; then
        printf '%s\n' "$line" >"$1"
    elif [ "$after" -eq 0 ]; then
        sed -i "1i\\
$line" "$1"
    else
        sed -i "${after}a\\
$line" "$1"
    fi
}

add=0
if [ "${1:-}" = --add ]; then
    add=1
    shift
fi

if [ $# -gt 0 ]; then
    list=$(printf '%s\n' "$@")
else
    list=$(git ls-files -- . ':!:tests/fuzz/corpus/' ':!:tests/fuzz/regression/' \
        ':!:tests/lint/fixtures/')
fi

missing=0
added=0
# One path per line: no tracked file's name holds a newline.
while IFS= read -r f; do
    [ -f "$f" ] && [ ! -L "$f" ] || continue
    frozen "$f" && continue
    s=$(style "$f")
    [ -n "$s" ] || continue
    has_line "$f" && continue
    if [ "$add" -eq 1 ]; then
        add_line "$f" "$s"
        added=$((added + 1))
    else
        echo "spdx: $f: no '$SPDX' in its first 3 lines"
        missing=$((missing + 1))
    fi
done <<EOF
$list
EOF

if [ "$add" -eq 1 ]; then
    echo "spdx: added the licence line to $added files"
    # Every tracked source file has it now: the check is enforced.
    if [ $# -eq 0 ] && [ -e "$PENDING" ]; then
        rm -f "$PENDING"
        echo "spdx: removed $PENDING: \`make lint\` now fails on a file without the line"
    fi
    exit 0
fi
[ "$missing" -eq 0 ] || exit 1
