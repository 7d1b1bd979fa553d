/* The vnibroker release, reported by --version, /healthz and /metrics. */
#ifndef VNIB_SERVER_VERSION_H
#define VNIB_SERVER_VERSION_H

#define VNIB_VERSION "0.1.0"

#endif /* !VNIB_SERVER_VERSION_H */
