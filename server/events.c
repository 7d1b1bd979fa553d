/* /v1/events: every state change, who made it and when, oldest first.
 *
 * The trail is written by the store in the same transaction as the change
 * it records, so it can be trusted to be complete.
 */
#include <stdint.h>

#include "server/events.h"
#include "server/http.h"
#include "server/params.h"
#include "server/store.h"

int events_list(struct request *req, json_t **out, vnib_error_t *errp)
{
    const char *job_id = request_query(req, "job_id");
    long long after = 0, limit = 100;

    if (job_id && params_job_id(req, job_id, errp) < 0)
        return -1;
    if (params_query_ll(req, "after", 0, INT64_MAX, &after, errp) < 0
        || params_query_ll(req, "limit", 1, 1000, &limit, errp) < 0)
        return -1;
    if (store_events(req->broker->store, job_id, after, (int)limit, out, errp)
        < 0)
        return -1;
    return 200;
}
