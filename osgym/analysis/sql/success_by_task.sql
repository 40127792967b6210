-- Success rate by task (with its domain).
-- infra_errors are episodes lost to the environment (is_infra_error, defined in _infra_error.sql);
-- success_rate_excl_infra leaves them out of the denominator.
SELECT
    task_id,
    min(domain) AS domain,
    count(*) AS episodes,
    count(*) FILTER (WHERE success) AS successes,
    count(*) FILTER (WHERE success) / count(*) AS success_rate,
    count(*) FILTER (WHERE is_infra_error(error_class)) AS infra_errors,
    count(*) FILTER (WHERE success) / nullif(count(*) FILTER (WHERE NOT is_infra_error(error_class)), 0)
        AS success_rate_excl_infra,
    avg(score ORDER BY score) AS mean_score,  -- in value order: the same digits whatever the scan order
    avg(num_steps) AS mean_steps
FROM episodes
GROUP BY task_id
ORDER BY task_id
