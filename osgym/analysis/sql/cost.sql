-- Cost per episode, per successful trajectory and per replica-day: replica time at a price per replica-second
-- (osgym.replicas.cost: host $/s divided by the replicas per host at the measured density), plus model tokens
-- and stored bytes at the price table's rates. recorded_usd sums the cost_usd column as the collector wrote it.
-- Sums and means of doubles take their inputs in value order (ORDER BY inside the aggregate): a parallel
-- scan adds them in a varying order, and the last digits would change from one run to the next.
-- @param usd_per_replica_s (required): US dollars per replica-second
-- @param usd_per_input_token = 0: US dollars per model input token
-- @param usd_per_output_token = 0: US dollars per model output token
-- @param usd_per_byte = 0: US dollars per stored byte (for the whole retention)
WITH c AS (
    SELECT
        success, replica_s, cost_usd,
        replica_s * $usd_per_replica_s AS compute_usd,
        coalesce(input_tokens, 0) * $usd_per_input_token
            + coalesce(output_tokens, 0) * $usd_per_output_token AS tokens_usd,
        coalesce(bytes_written, 0) * $usd_per_byte AS storage_usd
    FROM episodes
), t AS (
    SELECT
        count(*) AS episodes,
        count(*) FILTER (WHERE success) AS successes,
        sum(replica_s ORDER BY replica_s) AS replica_s,
        sum(compute_usd ORDER BY compute_usd) AS compute_usd,
        sum(tokens_usd ORDER BY tokens_usd) AS tokens_usd,
        sum(storage_usd ORDER BY storage_usd) AS storage_usd,
        sum(cost_usd ORDER BY cost_usd) AS recorded_usd
    FROM c
)
SELECT
    episodes,
    successes,
    replica_s / 3600 AS replica_hours,
    compute_usd,
    tokens_usd,
    storage_usd,
    compute_usd + tokens_usd + storage_usd AS total_usd,
    (compute_usd + tokens_usd + storage_usd) / nullif(episodes, 0) AS usd_per_episode,
    (compute_usd + tokens_usd + storage_usd) / nullif(successes, 0) AS usd_per_success,
    86400 * $usd_per_replica_s AS usd_per_replica_day,
    86400 / nullif(replica_s / nullif(episodes, 0), 0) AS episodes_per_replica_day,
    recorded_usd
FROM t
