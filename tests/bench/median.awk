# SPDX-License-Identifier: GPL-2.0-or-later
# median.awk: sorted job times in microseconds, one a line, become
# "# NAME: MEDIAN MIN MAX" in milliseconds (awk -v p=NAME -f median.awk);
# no line at all exits 1.  For tests/bench/slurm-start.sh and
# flux-start.sh.
{ v[NR] = $1 / 1000 }
END {
    if (NR == 0)
        exit 1
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "# %s: %.3f %.3f %.3f\n", p, m, v[1], v[NR]
}
