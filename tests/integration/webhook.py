#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A webhook receiver for the Alertmanager of the monitoring tests.

Listens on 127.0.0.1:PORT (one request at a time) and appends the body of each POST, re-encoded as
one line of JSON, to OUTFILE (flushed at once, so that the test can read
it while the receiver runs); answers 200 to every POST, 400 to a body that
is not JSON.  Usage: webhook.py PORT OUTFILE.  Prints "listening" on
stdout once it accepts connections.
"""
import http.server
import json
import sys


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        try:
            doc = json.loads(body)
        except ValueError:
            self.send_response(400)
            self.end_headers()
            return
        with open(self.server.outfile, "a", encoding="utf-8") as out:
            out.write(json.dumps(doc, sort_keys=True) + "\n")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, fmt, *args):
        sys.stderr.write("webhook: " + (fmt % args) + "\n")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: webhook.py PORT OUTFILE")
    server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Receiver)
    server.outfile = sys.argv[2]
    print("listening", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
