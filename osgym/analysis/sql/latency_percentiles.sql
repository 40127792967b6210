-- Percentiles (linear interpolation, quantile_cont) of steps per episode, episode wall time and replica time,
-- and of the policy and environment time of each step.
WITH samples AS (
    SELECT 1 AS ord, 'steps_per_episode' AS metric, num_steps::DOUBLE AS v FROM episodes
    UNION ALL SELECT 2, 'episode_wall_s', epoch(ended_at) - epoch(started_at) FROM episodes
    UNION ALL SELECT 3, 'episode_replica_s', replica_s FROM episodes
    UNION ALL SELECT 4, 'step_policy_ms', policy_ms FROM steps
    UNION ALL SELECT 5, 'step_env_ms', env_ms FROM steps
),
metrics AS (
    SELECT * FROM (VALUES
        (1, 'steps_per_episode'), (2, 'episode_wall_s'), (3, 'episode_replica_s'),
        (4, 'step_policy_ms'), (5, 'step_env_ms')
    ) AS m(ord, metric)
)
SELECT
    m.metric,
    count(s.v) AS n,
    quantile_cont(s.v, 0.5) AS p50,
    quantile_cont(s.v, 0.9) AS p90,
    quantile_cont(s.v, 0.99) AS p99,
    avg(s.v ORDER BY s.v) AS mean,  -- in value order: the same digits whatever the scan order
    max(s.v) AS max
FROM metrics AS m
LEFT JOIN samples AS s USING (ord)
GROUP BY m.ord, m.metric
ORDER BY m.ord
