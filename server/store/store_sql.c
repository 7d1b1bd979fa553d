/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Every SQL statement the store runs, by enum stmt_id (store_int.h): the
 * text, the name it is prepared under on each connection, and its number
 * of parameters.  The statements that name tables are prepared lazily, on
 * each connection the first time it runs them (a statement cannot be
 * prepared before the migration that creates its table).
 */
#include "server/store/store_int.h"

/* Key of the advisory lock that serialises migrations ("vnibmigr"). */
#define MIGRATE_LOCK_KEY "8534447410148076146"

static const char sql_schema_table_exists[] =
    "SELECT to_regclass('schema_version') IS NOT NULL";

static const char sql_schema_version[] =
    "SELECT coalesce(max(version), 0) FROM schema_version";

static const char sql_schema_record[] =
    "INSERT INTO schema_version (version, name) VALUES ($1::integer, $2)";

static const char sql_migrate_lock[] =
    "SELECT pg_advisory_xact_lock(" MIGRATE_LOCK_KEY ")";

/* Migration digests (schema/0013). */
static const char sql_schema_digests[] =
    "SELECT version, name, sha256 FROM schema_version "
    "WHERE sha256 IS NOT NULL ORDER BY version";

static const char sql_schema_digest_set[] =
    "UPDATE schema_version SET sha256 = $2 "
    "WHERE version = $1::integer AND sha256 IS NULL";

/* The SQL functions applied (schema/0020): the newest record's schema
 * version, SHA-256 and time (NULLs when there is none), and whether
 * SHA-256 $2 was ever applied at version $1.
 */
static const char sql_functions_state[] =
    "SELECT l.schema_version, l.sha256, "
    "to_char(l.applied_at AT TIME ZONE 'UTC', "
    "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), "
    "EXISTS (SELECT 1 FROM schema_functions f "
    "WHERE f.schema_version = $1::integer AND f.sha256 = $2) "
    "FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT * FROM schema_functions "
    "ORDER BY id DESC LIMIT 1) l ON true";

static const char sql_functions_record[] =
    "INSERT INTO schema_functions (schema_version, sha256) "
    "VALUES ($1::integer, $2)";

/* The server ends a statement at the timeout the client gives up at, and
 * (PostgreSQL 14 and later) checks every second whether the client is
 * still there while a statement runs: a broker killed in the middle of a
 * reserve must not leave its transaction to commit behind the retry.
 */
static const char sql_set_timeout[] =
    "SELECT set_config('statement_timeout', $1, false), "
    "CASE WHEN current_setting('server_version_num')::integer >= 140000 "
    "THEN set_config('client_connection_check_interval', '1000', false) END";

/* Reserves and releases store_run in groups (schema/0008): one row per item, in
 * item order, a vnib_row with the item's detail at ROW_NCOLS.  A reserve's
 * leases (schema/0021): whether each is presumed, its lease's expiry (Unix
 * seconds, NULL: none) and the clock skew allowed.
 */
static const char sql_reserve[] =
    "SELECT * FROM vnib_reserve_batch($1::text[], $2::bigint[], $3::text[], "
    "$4::text[], $5::integer[], $6::integer[], $7::smallint[], $8::text[], "
    "$9::text[], $10::integer[], $11::integer[], $12::integer[], "
    "$13::text[], $14::text[], $15::smallint[], $16::bigint[], "
    "$17::bigint[], $18::text[], $19::text[], $20::text[], $21::text[], "
    "$22::integer[], $23::bigint[], $24::boolean, $25::boolean[], "
    "ARRAY(SELECT to_timestamp(u) FROM unnest($26::bigint[]) "
    "WITH ORDINALITY x(u, k) ORDER BY k), $27::integer[])";

/* A reservation a transition answers with existed before it (it is not
 * a reserve's new one), so this statement's snapshot reads whether it is
 * presumed (schema/0021), which never changes: the column "presumed".
 */
#define PRESUMED_OF(v) \
    "(SELECT presumed FROM reservations WHERE id = " v ".id) AS presumed "

static const char sql_hwcoll_set_many[] =
    "SELECT b.*, " PRESUMED_OF("b") "FROM vnib_hwcoll_set_many($1::bigint[], "
    "$2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) b";

/* Fabric Manager work: releases to make, and reserves that timed out
 * (by their cause, schema/0016), which the Fabric Manager may have
 * completed late.  Deferred reserves
 * (hwcoll_due set) are the claim's (schema/0005), not this check's.
 */
static const char sql_hwcoll_work[] =
    "SELECT id, fm_job_id, hwcoll_state, state = 'active', "
    "coalesce(extract(epoch FROM now() - hwcoll_updated_at), 1e9) "
    "FROM reservations "
    "WHERE ((hwcoll_state = 'unavailable' "
    "AND hwcoll_cause = 'timeout') OR (hwcoll_state = 'pending' "
    "AND hwcoll_due IS NULL AND created_at < now() - interval '1 minute')) "
    "ORDER BY id LIMIT $1::integer";

static const char sql_hwcoll_defer[] =
    "SELECT v.*, " PRESUMED_OF("v") "FROM vnib_hwcoll_defer($1::bigint, $2, "
    "$3) v";

static const char sql_hwcoll_claim[] =
    "SELECT id, fm_job_id, active, attempts "
    "FROM vnib_hwcoll_claim($1::integer, $2::integer)";

static const char sql_fm_next[] =
    "SELECT * FROM vnib_fm_next($1::bigint[], $2, $3::integer, $4::integer)";

static const char sql_fm_retry[] =
    "SELECT vnib_fm_retry($1::bigint, $2, $3::double precision)";

static const char sql_step_release[] = "SELECT vnib_step_release($1, $2, $3)";

static const char sql_reconcile[] =
    "SELECT * FROM vnib_reconcile($1::text[], $2::timestamptz, $3)";

static const char sql_fm_queue_stats[] =
    "SELECT count(*), coalesce(extract(epoch FROM now() - min(created_at)), 0) "
    "FROM fm_queue";

static const char sql_db_now[] = "SELECT now()";

/* /readyz's write while writes are failing for lack of a resource. */
static const char sql_write_probe[] = "SELECT vnib_write_probe()";

/* Key of the advisory lock whose holder leads ("vnibfmld"). */
static const char sql_leader_try[] =
    "SELECT pg_try_advisory_lock(8534447410148076652)";

static const char sql_leader_set[] =
    "INSERT INTO fm_leader (id, replica) VALUES (1, $1) "
    "ON CONFLICT (id) DO UPDATE SET replica = excluded.replica, since = now()";

static const char sql_leader_get[] =
    "SELECT replica, vnib_ts(since) FROM fm_leader WHERE id = 1";

static const char sql_ping[] = "SELECT 1";

static const char sql_hwcoll_counts[] =
    "SELECT hwcoll_state, count(*) FROM reservations "
    "WHERE state <> 'released' OR hwcoll_state IN ('releasing', 'pending') "
    "GROUP BY hwcoll_state";

/* Whether node $2-$5 (prefix, suffix, width, number) is in reservation
 * r.id: a LATERAL probe of its own ranges (written as EXISTS, the planner
 * may hash the whole ranges table instead, on every request), read
 * backwards from the node's number, so that for a member the first index
 * entry read is its range whatever the number of ranges (as vnib_report
 * does, schema/0019).
 */
/* clang-format off */
#define MEMBER_JOIN(p, s, w, n)                                         \
    "LEFT JOIN LATERAL (SELECT 1 AS hit FROM reservation_ranges g "     \
    "WHERE g.reservation_id = r.id AND g.prefix = " p " "               \
    "AND g.suffix = " s " AND g.width = " w "::smallint "               \
    "AND g.lo <= " n "::bigint AND g.hi >= " n "::bigint "              \
    "ORDER BY g.lo DESC LIMIT 1) m ON true"
/* clang-format on */

/* The job's current reservation (its active one, else its newest: see
 * vnib_job_current in schema/0004); counts only when $6, and whether node
 * $2-$5 is in it (ROW_NCOLS).  Whether it is presumed (schema/0021) is the
 * column "presumed", which store_row_fields() finds by its name, in every
 * query that reads reservations.
 */
static const char sql_res_get[] =
    "SELECT v.*, $2::text IS NULL OR m.hit IS NOT NULL, r.presumed "
    "FROM (SELECT id, presumed FROM reservations WHERE job_id = $1 "
    "ORDER BY state = 'active' DESC, id DESC LIMIT 1) r "
    "CROSS JOIN LATERAL vnib_row(NULL, r.id, $6::boolean) v " MEMBER_JOIN(
        "$2", "$3", "$4", "$5");

/* A step's row carries its job's reservation as the step shows it
 * (schema/0017: vnib_step_row's parent_* columns, in that order, which
 * store_row_fields() finds by the name of the first); a job's row NULLs.
 */
#define PARENT_COLS                                                       \
    "p.parent_id, p.parent_vnis, p.parent_hwcoll_mode, "                  \
    "p.parent_hwcoll_state, p.parent_hwcoll_reason, p.parent_fm_job_id, " \
    "p.parent_addrs_per_job "
#define PARENT_JOIN(r)                                             \
    "LEFT JOIN LATERAL (SELECT x.id AS parent_id, "                \
    "array_to_string(x.vnis, ',') AS parent_vnis, "                \
    "x.hwcoll_mode AS parent_hwcoll_mode, "                        \
    "x.hwcoll_state AS parent_hwcoll_state, "                      \
    "x.hwcoll_reason AS parent_hwcoll_reason, "                    \
    "x.fm_job_id AS parent_fm_job_id, "                            \
    "x.addrs_per_job AS parent_addrs_per_job FROM reservations x " \
    "WHERE x.id = " r ".parent_id LIMIT 1) p ON true "

/* Filtered pages; a node filter finds the node's ranges through the GiST
 * index once, not per reservation.
 */
static const char sql_res_list[] =
    "SELECT v.*, r.presumed, " PARENT_COLS
    "FROM (SELECT id, parent_id, presumed FROM reservations r "
    "WHERE ($1::text IS NULL OR r.state = $1) "
    "AND ($2::bigint IS NULL OR r.uid = $2) AND r.id > $3::bigint "
    "AND ($4::text IS NULL OR r.id IN (SELECT g.reservation_id "
    "FROM reservation_ranges g WHERE int8range(g.lo, g.hi, '[]') @> "
    "$7::bigint AND g.prefix = $4 AND g.suffix = $5 "
    "AND g.width = $6::smallint)) "
    "ORDER BY r.id LIMIT $8::integer) r "
    "CROSS JOIN LATERAL vnib_row(NULL, r.id, true) v " PARENT_JOIN(
        "r") "ORDER BY v.id";

static const char sql_release[] =
    "SELECT b.*, " PRESUMED_OF("b") "FROM vnib_release_batch($1::text[], "
    "$2::bigint[], $3, $4::boolean, $5::boolean) b";

/* A group of node reports (schema/functions/nodes.sql): item k is the
 * k-th of each array.
 */
static const char sql_report_batch[] =
    "SELECT b.*, " PRESUMED_OF("b") "FROM vnib_report_batch($1::text[], "
    "$2::text[], $3::text[], $4::text[], $5::jsonb[], $6::text[], $7::text[], "
    "$8::text[], $9::text[], $10::smallint[], $11::bigint[], $12::bigint[]) b";

/* The live reservations that include node $1 (key $2-$5), with the node's
 * own report (ROW_NCOLS, +1): none when it sent none, pending when it sent
 * none to a presumed reservation, whose every node holds until it reports
 * destroyed (schema/0021).
 */
static const char sql_node_view[] =
    "SELECT v.*, coalesce(nr.cxi, CASE WHEN r.presumed THEN 'pending' "
    "ELSE 'none' END), coalesce(nr.services::text, '[]'), "
    "r.presumed, " PARENT_COLS
    "FROM (SELECT DISTINCT g.reservation_id AS id FROM reservation_ranges g "
    "WHERE int8range(g.lo, g.hi, '[]') @> $5::bigint AND g.prefix = $2 "
    "AND g.suffix = $3 AND g.width = $4::smallint) m "
    "JOIN reservations r ON r.id = m.id AND r.state <> 'released' "
    "CROSS JOIN LATERAL vnib_row(NULL, r.id, false) v "
    "LEFT JOIN node_reports nr ON nr.reservation_id = r.id AND nr.node = "
    "$1 " PARENT_JOIN("r") "ORDER BY r.id";

static const char sql_node_get[] =
    "SELECT drained, drained_reason, vnib_ts(drained_at) FROM nodes "
    "WHERE name = $1";

static const char sql_undrain[] =
    "WITH u AS (UPDATE nodes SET drained = false, drained_reason = NULL, "
    "drained_at = NULL, updated_by = $2 WHERE name = $1 AND drained "
    "RETURNING name) INSERT INTO events (node, actor, action) "
    "SELECT name, $2, 'undrain' FROM u RETURNING id";

/* The held VNIs by their reservation's state, those outside the pool (all
 * held less those in its ranges, which an idset keeps disjoint), the last
 * VNI handed out, and the free VNIs of the pool still cooling down until
 * the leases that named them expire (schema/0021: through the partial
 * index vni_free_cooling, which holds only VNIs a lease named).  Each hold
 * finds its reservation by primary key (the LIMIT keeps the planner from making
 * it a join over the whole table), so the cost follows the VNIs held, not the
 * history kept: as a hash join it read every reservation, a million of them in
 * the bench's history scenario, for every /metrics refresh and GET /v1/pool.
 */
static const char sql_pool[] =
    "SELECT count(*) FILTER (WHERE r.state = 'active'), "
    "count(*) FILTER (WHERE r.state = 'releasing'), "
    "count(*) - (SELECT coalesce(sum((SELECT count(*) FROM vni_holds x "
    "WHERE x.vni BETWEEN p.lo AND p.hi)), 0) "
    "FROM unnest($1::integer[], $2::integer[]) p(lo, hi)), "
    "(SELECT vnis[cardinality(vnis)] FROM reservations "
    "WHERE cardinality(vnis) > 0 ORDER BY id DESC LIMIT 1), "
    "(SELECT count(*) FROM vni_free f WHERE f.usable_at > '-infinity' "
    "AND f.usable_at > now() AND EXISTS (SELECT 1 FROM unnest($1::integer[], "
    "$2::integer[]) p(lo, hi) WHERE f.vni BETWEEN p.lo AND p.hi)) "
    "FROM vni_holds h JOIN LATERAL (SELECT state FROM reservations "
    "WHERE id = h.reservation_id LIMIT 1) r ON true";

static const char sql_pool_sync[] =
    "SELECT * FROM vnib_pool_sync($1::integer[], $2::integer[])";

/* The reservation holding VNI $1, or the last one that did (see
 * vnib_vni_reservation in schema/0007); whether it still holds it
 * (ROW_NCOLS); when it is free but cooling down, until when (usable_at,
 * schema/0021).
 */
static const char sql_vni[] =
    "SELECT v.*, EXISTS (SELECT 1 FROM vni_holds WHERE vni = $1::integer "
    "AND reservation_id = r.id), q.presumed, (SELECT vnib_ts(f.usable_at) "
    "FROM vni_free f WHERE f.vni = $1::integer AND f.usable_at > now()) "
    "AS usable_at, " PARENT_COLS
    "FROM (SELECT vnib_vni_reservation($1::integer) AS id OFFSET 0) r "
    "CROSS JOIN LATERAL vnib_row(NULL, r.id, true) v "
    "LEFT JOIN LATERAL (SELECT parent_id, presumed FROM reservations "
    "WHERE id = r.id LIMIT 1) q ON true " PARENT_JOIN(
        "q") "WHERE r.id IS NOT NULL";

/* Events in id order, each with the time it was recorded; a job's are
 * its own and its steps' (vnib_job_keys, schema/0017), $4 an action, $5 a
 * node (events_node, schema/0018).  Two transactions recording at once
 * may take their ids in one order and read the clock in the other; the
 * time shown is therefore the latest recorded at or before the event,
 * over the page and the 64 matching events before it, so that time never
 * goes backwards along the id order.  The newest-first page (events_desc)
 * starts below the cursor $2 (0: at the newest).
 */
#define EVENTS_FILTER                                                    \
    "($1::text IS NULL OR job_id = ANY ((SELECT k FROM keys)::text[])) " \
    "AND ($4::text IS NULL OR action = $4) "                             \
    "AND ($5::text IS NULL OR node = $5) "
#define EVENTS_SELECT                                                 \
    "SELECT id, vnib_ts(greatest(max(at) OVER (ORDER BY id), "        \
    "(SELECT at FROM prior))), reservation_id, job_id, node, actor, " \
    "action, detail::text FROM page "

static const char sql_events[] =
    "WITH keys AS (SELECT vnib_job_keys($1) AS k), "
    "page AS (SELECT * FROM events WHERE " EVENTS_FILTER
    "AND id > $2::bigint ORDER BY id LIMIT $3::integer), "
    "prior AS (SELECT max(at) AS at FROM (SELECT at FROM events "
    "WHERE " EVENTS_FILTER
    "AND id <= $2::bigint "
    "ORDER BY id DESC LIMIT 64) p) " EVENTS_SELECT "ORDER BY id";

static const char sql_events_desc[] =
    "WITH keys AS (SELECT vnib_job_keys($1) AS k), "
    "page AS (SELECT * FROM events WHERE " EVENTS_FILTER
    "AND ($2::bigint = 0 OR id < $2::bigint) "
    "ORDER BY id DESC LIMIT $3::integer), "
    "prior AS (SELECT max(at) AS at FROM (SELECT at FROM events "
    "WHERE " EVENTS_FILTER
    "AND id < (SELECT min(id) FROM page) "
    "ORDER BY id DESC LIMIT 64) p) " EVENTS_SELECT "ORDER BY id DESC";

/* The figures of GET /v1/status and /metrics (store_status.c), one
 * set-based read: quarantined reservations (releasing with VNIs still
 * held) and their VNIs, the oldest quarantine's start and age, and the
 * drained nodes.  Each releasing reservation is found through
 * reservations_live, its holds through vni_holds_reservation.
 */
static const char sql_status_figures[] =
    "WITH q AS (SELECT r.release_requested_at AS since, "
    "(SELECT count(*) FROM vni_holds h WHERE h.reservation_id = r.id) AS n "
    "FROM reservations r WHERE r.state = 'releasing') "
    "SELECT count(*) FILTER (WHERE n > 0), coalesce(sum(n), 0), "
    "vnib_ts(min(since) FILTER (WHERE n > 0)), "
    "coalesce(extract(epoch FROM now() - min(since) FILTER (WHERE n > 0)), "
    "0), (SELECT count(*) FROM nodes WHERE drained) FROM q";

/* The oldest $1 quarantined reservations: id, key, since, the VNIs held,
 * and the nodes whose last report says they hold CXI services (through
 * node_reports_holding).  A presumed one (schema/0021) waits for every
 * node of its list that has not reported destroyed: its count, its node
 * list and the nodes that did report destroyed, from which the caller
 * makes the list of the others.
 */
static const char sql_quarantine_items[] =
    "SELECT r.id, r.job_id, vnib_ts(r.release_requested_at), "
    "array_to_json(h.vnis)::text, "
    "CASE WHEN r.presumed THEN greatest(r.node_count - r.destroyed_count, 0) "
    "ELSE coalesce(w.n, 0) END, w.nodes, r.presumed, r.nodes, r.node_count, "
    "d.nodes "
    "FROM reservations r "
    "CROSS JOIN LATERAL (SELECT array_agg(vni ORDER BY vni) AS vnis "
    "FROM vni_holds WHERE reservation_id = r.id) h "
    "LEFT JOIN LATERAL (SELECT count(*) AS n, string_agg(node, ',') AS nodes "
    "FROM node_reports WHERE reservation_id = r.id "
    "AND cxi IN ('creating', 'created', 'failed')) w ON true "
    "LEFT JOIN LATERAL (SELECT string_agg(node, ',') AS nodes "
    "FROM node_reports WHERE r.presumed AND reservation_id = r.id "
    "AND cxi = 'destroyed') d ON true "
    "WHERE r.state = 'releasing' AND h.vnis IS NOT NULL "
    "ORDER BY r.release_requested_at, r.id LIMIT $1::integer";

/* Drained nodes: how many, all their names, and the $1 newest (a row
 * with null name when there is none).
 */
static const char sql_drained[] =
    "WITH d AS (SELECT name, drained_reason, drained_at FROM nodes "
    "WHERE drained) "
    "SELECT (SELECT count(*) FROM d), (SELECT string_agg(name, ',') FROM d), "
    "i.name, i.drained_reason, vnib_ts(i.drained_at) "
    "FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT * FROM d "
    "ORDER BY drained_at DESC NULLS LAST, name LIMIT $1::integer) i ON true";

/* Job steps (schema/0017).  A step's GET finds the step among the
 * steps of the job's current reservation; membership as sql_res_get's.
 */
static const char sql_step_reserve[] =
    "SELECT * FROM vnib_step_reserve($1, $2, $3::bigint, $4, $5::integer, "
    "$6::integer, $7, $8, $9::integer[], $10::integer[], $11::text[], "
    "$12::text[], $13::smallint[], $14::bigint[], $15::bigint[], "
    "$16::boolean, to_timestamp($17::bigint), $18::integer)";

static const char sql_step_get[] =
    "SELECT v.*, $3::text IS NULL OR m.hit IS NOT NULL AS member, "
    "r.presumed "
    "FROM (SELECT id, presumed FROM reservations WHERE job_id = $1 || '#' "
    "|| $2 "
    "AND parent_id = vnib_job_current($1) "
    "ORDER BY state = 'active' DESC, id DESC LIMIT 1) r "
    "CROSS JOIN LATERAL vnib_step_row(NULL, r.id, NULL) v " MEMBER_JOIN(
        "$3", "$4", "$5", "$6");

static const char sql_step_free[] =
    "SELECT v.*, " PRESUMED_OF("v") "FROM vnib_step_free($1, $2, $3, "
    "$4::boolean, $5::bigint) v";

/* The job's current reservation (as sql_res_get picks it) with each
 * node's last report, the reports that need an admin first: failed, then
 * creating, created, destroyed; one row with NULL reports when there is
 * none.  Whether it is presumed last.
 */
static const char sql_job_reports[] =
    "SELECT r.id, r.state, r.nodes, r.node_count, nr.node, nr.cxi, "
    "nr.services::text, nr.message, vnib_ts(nr.updated_at), r.presumed "
    "FROM (SELECT id, state, nodes, node_count, presumed FROM reservations "
    "WHERE job_id = $1 "
    "ORDER BY state = 'active' DESC, id DESC LIMIT 1) r "
    "LEFT JOIN node_reports nr ON nr.reservation_id = r.id "
    "ORDER BY array_position(ARRAY['failed', 'creating', 'created', "
    "'destroyed'], nr.cxi), nr.node";

/* Whether reservation $2 is job $1's active one (a job token's check):
 * the primary key's row, and its job and state.
 */
static const char sql_job_active_is[] =
    "SELECT EXISTS (SELECT 1 FROM reservations WHERE id = $2::bigint "
    "AND job_id = $1 AND state = 'active')";

static const char sql_sweep[] = "SELECT vnib_sweep($1)";

static const char sql_purge[] = "SELECT vnib_purge($1::integer, $2::integer)";

const struct store_stmt store_stmts[STMT_COUNT] = {
    [STMT_SCHEMA_TABLE_EXISTS] = {"schema_table_exists",
                                  sql_schema_table_exists,
                                  0},
    [STMT_SCHEMA_VERSION] = {"schema_version", sql_schema_version, 0},
    [STMT_SCHEMA_RECORD] = {"schema_record", sql_schema_record, 2},
    [STMT_MIGRATE_LOCK] = {"migrate_lock", sql_migrate_lock, 0},
    [STMT_SCHEMA_DIGESTS] = {"schema_digests", sql_schema_digests, 0},
    [STMT_SCHEMA_DIGEST_SET] = {"schema_digest_set", sql_schema_digest_set, 2},
    [STMT_FUNCTIONS_STATE] = {"functions_state", sql_functions_state, 2},
    [STMT_FUNCTIONS_RECORD] = {"functions_record", sql_functions_record, 2},
    [STMT_SET_TIMEOUT] = {"set_timeout", sql_set_timeout, 1},
    [STMT_RESERVE] = {"reserve", sql_reserve, 27},
    [STMT_RES_GET] = {"res_get", sql_res_get, 6},
    [STMT_RES_LIST] = {"res_list", sql_res_list, 8},
    [STMT_RELEASE] = {"release", sql_release, 5},
    [STMT_REPORT_BATCH] = {"report_batch", sql_report_batch, 12},
    [STMT_NODE_VIEW] = {"node_view", sql_node_view, 5},
    [STMT_NODE_GET] = {"node_get", sql_node_get, 1},
    [STMT_UNDRAIN] = {"undrain", sql_undrain, 2},
    [STMT_POOL] = {"pool", sql_pool, 2},
    [STMT_POOL_SYNC] = {"pool_sync", sql_pool_sync, 2},
    [STMT_VNI] = {"vni", sql_vni, 1},
    [STMT_EVENTS] = {"events", sql_events, 5},
    [STMT_EVENTS_DESC] = {"events_desc", sql_events_desc, 5},
    [STMT_SWEEP] = {"sweep", sql_sweep, 1},
    [STMT_PURGE] = {"purge", sql_purge, 2},
    [STMT_HWCOLL_SET_MANY] = {"hwcoll_set_many", sql_hwcoll_set_many, 6},
    [STMT_HWCOLL_WORK] = {"hwcoll_work", sql_hwcoll_work, 1},
    [STMT_HWCOLL_DEFER] = {"hwcoll_defer", sql_hwcoll_defer, 3},
    [STMT_HWCOLL_CLAIM] = {"hwcoll_claim", sql_hwcoll_claim, 2},
    [STMT_HWCOLL_COUNTS] = {"hwcoll_counts", sql_hwcoll_counts, 0},
    [STMT_FM_NEXT] = {"fm_next", sql_fm_next, 4},
    [STMT_FM_RETRY] = {"fm_retry", sql_fm_retry, 3},
    [STMT_STEP_RELEASE] = {"step_release", sql_step_release, 3},
    [STMT_RECONCILE] = {"reconcile", sql_reconcile, 3},
    [STMT_FM_QUEUE_STATS] = {"fm_queue_stats", sql_fm_queue_stats, 0},
    [STMT_DB_NOW] = {"db_now", sql_db_now, 0},
    [STMT_LEADER_TRY] = {"leader_try", sql_leader_try, 0},
    [STMT_LEADER_SET] = {"leader_set", sql_leader_set, 1},
    [STMT_LEADER_GET] = {"leader_get", sql_leader_get, 0},
    [STMT_PING] = {"ping", sql_ping, 0},
    [STMT_WRITE_PROBE] = {"write_probe", sql_write_probe, 0},
    [STMT_STEP_RESERVE] = {"step_reserve", sql_step_reserve, 18},
    [STMT_STEP_GET] = {"step_get", sql_step_get, 6},
    [STMT_STEP_FREE] = {"step_free", sql_step_free, 5},
    [STMT_STATUS_FIGURES] = {"status_figures", sql_status_figures, 0},
    [STMT_QUARANTINE_ITEMS] = {"quarantine_items", sql_quarantine_items, 1},
    [STMT_DRAINED] = {"drained", sql_drained, 1},
    [STMT_JOB_ACTIVE_IS] = {"job_active_is", sql_job_active_is, 2},
    [STMT_JOB_REPORTS] = {"job_reports", sql_job_reports, 1},
};
