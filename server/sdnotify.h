/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Readiness notification for systemd (Type=notify), without libsystemd.
 *
 * The unit file in deploy/systemd uses Type=notify so that units ordered
 * after vnibrokerd start only once it listens.  The protocol is one
 * datagram to the socket named by $NOTIFY_SOCKET; with no such variable
 * (not under systemd) the calls do nothing.
 */
#ifndef VNIB_SERVER_SDNOTIFY_H
#define VNIB_SERVER_SDNOTIFY_H

/* Send a state string such as "READY=1" or "STOPPING=1".
 * Returns 0 (also when not under systemd) or -1 with errno set.
 */
int sdnotify_send(const char *state);

#endif /* !VNIB_SERVER_SDNOTIFY_H */
