/* SPDX-License-Identifier: GPL-2.0-or-later */
/* systemd notification datagrams (see sdnotify.h). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "server/sdnotify.h"

int sdnotify_send(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    size_t plen;
    int fd, rc = -1;

    if (!path || !*path)
        return 0;
    plen = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || plen >= sizeof(sun.sun_path)) {
        errno = EINVAL;
        return -1;
    }
    memcpy(sun.sun_path, path, plen);
    if (sun.sun_path[0] == '@')
        sun.sun_path[0] = '\0'; /* abstract namespace */
    if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
        return -1;
    socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen);
    if (sendto(fd,
               state,
               strlen(state),
               MSG_NOSIGNAL,
               (struct sockaddr *)&sun,
               alen)
        >= 0)
        rc = 0;
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}
