/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnib-agent-broker.so, the broker's client of the vnib-agent program,
 * loaded when a command first needs the broker (see agent/broker.h): a
 * job's start from a lease never loads it, nor libcurl.
 *
 * The object is looked for beside the program (the build tree), then in
 * ../lib/vnibroker/ from it (an installed PREFIX/sbin/vnib-agent finds
 * PREFIX/lib/vnibroker/vnib-agent-broker.so), and, as the program runs as
 * root, refused unless it is a regular file owned by root or the
 * effective uid that group and others cannot write.
 */
#ifndef VNIB_AGENT_BROKERSO_H
#define VNIB_AGENT_BROKERSO_H

#include "agent/broker.h"

/* The object's file name. */
#define BROKERSO_NAME "vnib-agent-broker.so"

/* broker_open, from the object (loaded, and kept for the process).  A
 * missing or untrusted object is -1 with errno (ENOENT, EPERM, ELIBBAD)
 * and errp naming it.
 */
broker_open_fn brokerso_open;

#endif /* !VNIB_AGENT_BROKERSO_H */
