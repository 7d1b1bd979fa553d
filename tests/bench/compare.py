#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The table of tests/bench/compare.sh: for every figure row of run.sh's
output, its median and range over the rounds, before and after, and the
ratio of the medians.  Usage: compare.py DIR, where DIR holds
before.N.txt and after.N.txt."""
import collections
import glob
import os
import re
import statistics
import sys

ROW = re.compile(r"^(\S.{50,}?)\s+(-?[0-9.]+) (\S+)\s+(<=|>=|-)\s")


def main():
    runs = collections.defaultdict(lambda: collections.defaultdict(list))
    units = {}
    order = []
    for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.*.txt"))):
        which = os.path.basename(path).split(".")[0]
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = ROW.match(line)
                if not m or line.startswith(("#", "==")):
                    continue
                name = m.group(1).strip()
                if name not in order:
                    order.append(name)
                runs[name][which].append(float(m.group(2)))
                units[name] = m.group(3)
    print("%-56s %7s  %-30s %-30s %s" % ("scenario", "unit", "before: median (range)",
                                        "after: median (range)", "after/before"))
    for name in order:
        b, a = runs[name]["before"], runs[name]["after"]
        if not b or not a:
            continue
        mb, ma = statistics.median(b), statistics.median(a)
        print("%-56s %7s  %-30s %-30s %s" % (
            name[:56], units[name],
            "%.3f (%.3f-%.3f)" % (mb, min(b), max(b)),
            "%.3f (%.3f-%.3f)" % (ma, min(a), max(a)),
            "%.3f" % (ma / mb) if mb else "n/a"))


if __name__ == "__main__":
    main()
