-- Cost per episode, per successful trajectory and per replica-day, from replica time and a price per
-- replica-second (osgym.analysis.cost.usd_per_replica_second: host $/s divided by replicas packed per host).
-- recorded_usd sums the cost_usd column as the collector wrote it, for comparison.
-- Sums and means of doubles take their inputs in value order (ORDER BY inside the aggregate): a parallel
-- scan adds them in a varying order, and the last digits would change from one run to the next.
-- @param usd_per_replica_s (required): US dollars per replica-second
SELECT
    count(*) AS episodes,
    count(*) FILTER (WHERE success) AS successes,
    sum(replica_s ORDER BY replica_s) / 3600 AS replica_hours,
    sum(replica_s ORDER BY replica_s) * $usd_per_replica_s AS total_usd,
    sum(replica_s ORDER BY replica_s) * $usd_per_replica_s / nullif(count(*), 0) AS usd_per_episode,
    sum(replica_s ORDER BY replica_s) * $usd_per_replica_s / nullif(count(*) FILTER (WHERE success), 0) AS usd_per_success,
    86400 * $usd_per_replica_s AS usd_per_replica_day,
    86400 / nullif(avg(replica_s ORDER BY replica_s), 0) AS episodes_per_replica_day,
    sum(cost_usd ORDER BY cost_usd) AS recorded_usd
FROM episodes
