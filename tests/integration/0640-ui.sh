#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The status page's files (server/api/ui/, compiled into vnibrokerd): served
# without a token at /ui/, each with its content type, the same bytes as
# the files in the tree, an ETag (If-None-Match gets 304), and on every
# /ui reply, redirects and errors included, the browser hardening headers
# (Content-Security-Policy, X-Frame-Options, ...); the page has no inline
# script, style or event handler for that policy to block, and app.js
# builds no markup from strings.  / and /ui redirect to /ui/, an unknown
# file is a 404 in the API's JSON error format, HEAD works.
. "$(dirname "$0")/lib.sh"

UI=$TOP/server/api/ui
CSP="default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

pg_start || exit 1
broker_up "$T/b.toml"

# security_headers WHAT: the headers every /ui reply carries, on the last one.
security_headers () {
    expect_eq "$1: Content-Security-Policy" "$(header Content-Security-Policy)" "$CSP"
    expect_eq "$1: X-Frame-Options" "$(header X-Frame-Options)" DENY
    expect_eq "$1: Referrer-Policy" "$(header Referrer-Policy)" no-referrer
    expect_eq "$1: X-Content-Type-Options" "$(header X-Content-Type-Options)" nosniff
    expect_eq "$1: Cross-Origin-Opener-Policy" "$(header Cross-Origin-Opener-Policy)" same-origin
    expect_eq "$1: one Cache-Control, no-cache" \
        "$(grep -ci '^Cache-Control:' "$T/http.headers") $(header Cache-Control)" "1 no-cache"
}

# ---- the files ----------------------------------------------------------------
for f in index.html:/ui/:'text/html; charset=utf-8' \
         app.js:/ui/app.js:'text/javascript; charset=utf-8' \
         app.css:/ui/app.css:'text/css; charset=utf-8' \
         favicon.svg:/ui/favicon.svg:image/svg+xml; do
    file=${f%%:*}; rest=${f#*:}; path=${rest%%:*}; type=${rest#*:}
    http GET "$path"
    expect_status "GET $path without a token" 200
    expect_eq "$path: Content-Type" "$(header Content-Type)" "$type"
    security_headers "$path"
    if cmp -s "$T/http.body" "$UI/$file"; then
        ok "$path is server/api/ui/$file, byte for byte"
    else
        not_ok "$path is server/api/ui/$file, byte for byte"
    fi
    etag=$(header ETag)
    expect_match "$path has a strong ETag" "$etag" '^"[0-9a-f]{16}"$'
    rm -f "$T/http.body" # curl leaves the file alone when no body comes
    http GET "$path" -H "If-None-Match: $etag"
    expect_status "$path with If-None-Match of its ETag: 304" 304
    expect_eq "... without a body" "$(cat "$T/http.body" 2>/dev/null | wc -c)" 0
    expect_eq "... and its ETag" "$(header ETag)" "$etag"
    http GET "$path" -H 'If-None-Match: "0000000000000000"'
    expect_status "$path with another ETag: 200" 200
done

# A page that names a file the broker does not have would break silently.
for ref in $(grep -oE '(src|href)="[^"]*"' "$UI/index.html" | sed -E 's/^[a-z]+="(.*)"$/\1/'); do
    http GET "/ui/$ref"
    expect_status "index.html's reference $ref is served" 200
done

# ---- nothing inline, nothing built from strings -------------------------------
http GET /ui/
html=$HTTP_BODY
expect_no_match "the page has no inline <script> (every <script> has a src)" \
    "$(printf '%s' "$html" | grep -oiE '<script[^>]*>' | grep -viE '<script[^>]* src="[^"]+"')" .
expect_no_match "the page has no <style> element" "$html" '<style'
expect_no_match "the page has no style= attribute" "$html" '[[:space:]]style[[:space:]]*='
expect_no_match "the page has no on*= event handler attribute" "$html" '[[:space:]]on[a-zA-Z]+[[:space:]]*='
expect_no_match "the page has no javascript: URL" "$html" 'javascript:'
expect_no_match "app.js builds no markup from strings and evaluates no text" \
    "$(grep -vE '^[[:space:]]*//' "$UI/app.js" |
       grep -nE 'innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function|setTimeout\(['"'"'"`]')" .
expect_no_match "app.js keeps the token out of localStorage and cookies" \
    "$(grep -vE '^[[:space:]]*//' "$UI/app.js" | grep -nE 'localStorage|document\.cookie')" .

# ---- errors and redirects -----------------------------------------------------
http GET /ui/nope.js
expect_status "an unknown file: 404" 404
expect_json "... with the API's error code" .error.code not_found
expect_eq "... as JSON" "$(header Content-Type)" application/json
security_headers "the 404"
http GET /ui/index.html
expect_status "index.html is only at /ui/" 404
http GET /ui/app.js/x
expect_status "a path below a file: 404" 404
http GET /ui/..%2fhealthz
expect_status "an escaped path does not leave /ui/" 404

http GET /ui
expect_status "GET /ui redirects permanently" 308
expect_eq "... to /ui/" "$(header Location)" /ui/
security_headers "the /ui redirect"
http GET /
expect_status "GET / redirects" 302
expect_eq "... to /ui/" "$(header Location)" /ui/
page=$(curl -sSL --max-time 10 "$BROKER_URL/")
if [ "$page" = "$(cat "$UI/index.html")" ]; then
    ok "following the redirects from / gives the page"
else
    not_ok "following the redirects from / gives the page"
fi

http POST /ui/ -d '{}'
expect_status "POST /ui/: 405" 405
expect_eq "... Allow: GET" "$(header Allow)" GET

# HEAD: curl -I, as -X HEAD would wait for a body.
head=$(curl -sS -I --max-time 10 "$BROKER_URL/ui/app.js" | tr -d '\r')
expect_match "HEAD /ui/app.js: 200" "$head" '^HTTP/1.1 200'
expect_match "... with the file's length" "$head" "^Content-Length: $(wc -c <"$UI/app.js")\$"
expect_match "... and the policy" "$head" "^Content-Security-Policy: default-src 'none'"

# The API's own replies keep their headers: no policy, Cache-Control no-store.
http GET /healthz
expect_eq "/healthz keeps Cache-Control: no-store" "$(header Cache-Control)" no-store
expect_eq "... and has no page policy" "$(header Content-Security-Policy)" ""

finish
