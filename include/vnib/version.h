/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The vnibroker release, reported by --version, /healthz and /metrics,
 * and the git revision built, reported by /metrics.
 */
#ifndef VNIB_VERSION_H
#define VNIB_VERSION_H

#define VNIB_VERSION "0.1.0"

/* The git revision built (`git describe --always --dirty`), which the
 * Makefile passes as -DVNIB_REVISION; "unknown" outside a git checkout.
 */
#ifndef VNIB_REVISION
#define VNIB_REVISION "unknown"
#endif

#endif /* !VNIB_VERSION_H */
