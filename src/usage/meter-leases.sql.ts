/*
 * The statements of leased charging (USAGE_CHARGING=leased): the functions the migration
 * MeterLeases1766000000050 defines, what gives a block back, and the reclaiming of lapsed rows.
 */

export const LEASE_METERS_SQL =
  'SELECT idx, r_granted, r_live, r_counted, r_held FROM kui_lease_meters($1, $2, $3, $4, $5, $6, $7, $8, $9)';

export const COUNT_METERS_SQL =
  "SELECT r_org, to_char(r_day, 'YYYY-MM-DD') AS r_day, r_meter, r_used FROM kui_count_meters($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)";

/**
 * Gives back what an instance ($5) leased and did not spend, to its live blocks only (a lapsed
 * block already counts for nothing); rows locked in the key order kui_lease_meters takes them.
 */
export const RETURN_BLOCKS_SQL = `
  WITH r AS (SELECT * FROM unnest($1::uuid[], $2::date[], $3::text[], $4::int[]) AS r(org, day, meter, n)),
  l AS (
    SELECT x.org_id, x.day, x.meter FROM usage_leases x JOIN r ON x.org_id = r.org AND x.day = r.day AND x.meter = r.meter
     WHERE x.holder = $5::uuid AND x.expires_at > clock_timestamp()
     ORDER BY x.org_id, x.day, x.meter
       FOR UPDATE OF x)
  UPDATE usage_leases x SET held = GREATEST(x.held - r.n, 0)
    FROM r, l
   WHERE x.org_id = l.org_id AND x.day = l.day AND x.meter = l.meter AND x.holder = $5::uuid
     AND r.org = l.org_id AND r.day = l.day AND r.meter = l.meter`;

/** Deletes at most $1 rows that hold nothing: lapsed blocks (their instance died or lost the database) and spent ones. */
export const RECLAIM_BLOCKS_SQL = `
  DELETE FROM usage_leases WHERE ctid IN (
    SELECT ctid FROM usage_leases WHERE expires_at <= clock_timestamp() OR held = 0 LIMIT $1)`;
