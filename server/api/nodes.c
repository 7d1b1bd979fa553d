/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /v1/nodes: what a node must clean up, and its drain mark.
 *
 * A node's agent reads its own record after a crash or reboot to learn
 * which services it may still hold; an admin, or the status page with a
 * monitor token, reads it to see why a node was drained and which jobs'
 * services it still holds; an admin clears the mark once the node is
 * clean.
 */
#include <errno.h>
#include <string.h>

#include "server/http/http.h"
#include "server/api/nodes.h"
#include "server/http/params.h"
#include "server/inventory.h"
#include "server/store/store_nodes.h"

/* The node in the path, which a node token may only name itself. */
static const char *path_node(struct request *req, vnib_error_t *errp)
{
    const char *node = route_param(&req->params, "node");
    if (params_node(req, "node", node, errp) < 0)
        return NULL;
    if (req->who.role == ROLE_NODE && strcmp(req->who.node, node) != 0) {
        request_fail(req,
                     EPERM,
                     ERRCODE_FORBIDDEN,
                     errp,
                     "a node may read only its own record");
        return NULL;
    }
    return node;
}

/* The node view gains whether cluster.topology_file lists the node (null
 * without a file): a name no reservation, drain or report ever used may
 * be a typo or a node of the cluster.
 */
static int add_inventory(struct request *req,
                         const char *node,
                         json_t **out,
                         vnib_error_t *errp)
{
    int listed = inventory_lists(req->broker->inv, node);
    if (json_object_set_new(*out,
                            "in_inventory",
                            listed < 0 ? json_null() : json_boolean(listed))
        < 0) {
        json_decref(*out);
        *out = NULL;
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    return 0;
}

int nodes_view(struct request *req,
               const char *node,
               json_t **out,
               vnib_error_t *errp)
{
    if (store_node(req->broker->store, node, out, errp) < 0)
        return -1;
    return add_inventory(req, node, out, errp);
}

int nodes_get(struct request *req, json_t **out, vnib_error_t *errp)
{
    const char *node = path_node(req, errp);
    if (!node || nodes_view(req, node, out, errp) < 0)
        return -1;
    return 200;
}

int nodes_undrain(struct request *req, json_t **out, vnib_error_t *errp)
{
    const char *node = path_node(req, errp);
    if (!node
        || store_undrain(req->broker->store, node, req->who.name, out, errp) < 0
        || add_inventory(req, node, out, errp) < 0)
        return -1;
    return 200;
}
