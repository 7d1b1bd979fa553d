/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The REST API's one route table: every endpoint of vnibrokerd, its
 * handler (one file per resource in this folder), the roles that may
 * call it, its body limit and where it runs.  main.c hands the table to
 * the pipeline (server/http/http.h) and to the request metrics.
 */
#ifndef VNIB_SERVER_API_ROUTES_H
#define VNIB_SERVER_API_ROUTES_H

#include "server/http/route.h"

extern const struct route_table api_routes;

#endif /* !VNIB_SERVER_API_ROUTES_H */
