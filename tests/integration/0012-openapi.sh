#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# server/api/openapi.yaml is the API's promise to clients written from it: it
# must parse as YAML (a plain scalar with ": " inside once broke it), and
# every METHOD and path of the one route table (server/api/routes.c) must be
# in it, and nothing else.
. "$(dirname "$0")/lib.sh"

if ! python3 -c 'import yaml' 2>/dev/null; then
    not_ok "python3-yaml is installed (make deps installs it)"
    finish
fi
out=$(python3 - "$TOP/server/api/openapi.yaml" <<'PY' 2>&1
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
for path, ops in doc["paths"].items():
    for method in ops:
        if method in ("get", "post", "put", "delete", "patch"):
            print(method.upper(), path)
PY
)
rc=$?
expect_eq "openapi.yaml parses as YAML" "$rc" 0
documented=$(printf '%s\n' "$out" | sort)
routes=$(sed -n 's/^ *{ *"\([A-Z]*\)", *"\(\/[^"]*\)".*/\1 \2/p' "$TOP/server/api/routes.c" | sort)
expect_match "the route table has routes to compare ($(printf '%s\n' "$routes" | wc -l))" \
    "$(printf '%s\n' "$routes" | wc -l)" '^[1-9][0-9]+$'
expect_eq "openapi.yaml documents exactly the routes of server/api/routes.c" \
    "$documented" "$routes"
finish
