/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_load: switch_vnib.so loading its helper (swv_helper.h).
 *
 * The helper is loaded from vnib_helper (SwitchParameters) or, without
 * it, from beside switch_vnib.so (where make install puts both, in
 * PREFIX/lib/vnibroker/), else from SWV_HELPER_DEFAULT (PKGLIBDIR of the
 * PREFIX the plugin was built with: /usr/lib/vnibroker/ in the Debian
 * packages, whose plugin is in Slurm's own folder), by the trusted loader
 * every vnibroker object is loaded with (vnib/trustload.h: a file of
 * root or of the daemon's user that nobody else may write), at the first
 * call in a process, and kept until the process ends.  A load that fails
 * is tried again at the next call, so that a helper installed late needs
 * no restart; every failure names the file and why.
 */
#ifndef SWV_LOAD_H
#define SWV_LOAD_H

#include "swv_helper.h"

#ifndef SWV_HELPER_DEFAULT
#define SWV_HELPER_DEFAULT "/usr/local/lib/vnibroker/" SWV_HELPER_NAME
#endif

/* The helper's table, or NULL with errp (and errno) set. */
const struct swv_helper *swv_load(const struct swv_config *cfg,
                                  vnib_error_t *errp);

/* The table if loaded already, else NULL (never loads). */
const struct swv_helper *swv_loaded(void);

#endif /* !SWV_LOAD_H */
