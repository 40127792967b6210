-- View `success_groups`: the success figures of every success_by_* query, computed once, with one row
-- per domain, per task and per policy (`grouped_by` says which). infra_errors are episodes lost to the
-- environment (is_infra_error, defined in _infra_error.sql); success_rate_excl_infra leaves them out
-- of the denominator.
CREATE OR REPLACE VIEW success_groups AS
SELECT
    CASE WHEN grouping(domain) = 0 THEN 'domain' WHEN grouping(task_id) = 0 THEN 'task' ELSE 'policy' END
        AS grouped_by,
    domain,
    task_id,
    policy,
    min(domain) AS task_domain,
    count(*) AS episodes,
    count(*) FILTER (WHERE success) AS successes,
    count(*) FILTER (WHERE success) / count(*) AS success_rate,
    count(*) FILTER (WHERE is_infra_error(error_class)) AS infra_errors,
    count(*) FILTER (WHERE success) / nullif(count(*) FILTER (WHERE NOT is_infra_error(error_class)), 0)
        AS success_rate_excl_infra,
    avg(score ORDER BY score) AS mean_score,  -- in value order: the same digits whatever the scan order
    avg(num_steps) AS mean_steps
FROM episodes
GROUP BY GROUPING SETS ((domain), (task_id), (policy))
