-- View `success_groups`: the success figures of every success_by_* query, computed once, with one row per
-- domain, per task, per policy and per application (`grouped_by` says which, `group_key` names the group).
-- An episode counts once under its domain, its task and its policy, and once under each application its
-- task names (OSWorld's related_apps, stored per episode since schema 3), so a multi-app task counts for
-- every app it uses; a task that names none, or an episode written before schema 3, counts under its
-- domain. infra_errors are episodes lost to the environment (is_infra_error, defined in _infra_error.sql);
-- success_rate_excl_infra leaves them out of the denominator.
CREATE OR REPLACE VIEW success_groups AS
WITH keyed AS (
    SELECT 'domain' AS grouped_by, domain AS group_key, domain, success, error_class, score, num_steps
    FROM episodes
    UNION ALL
    SELECT 'task', task_id, domain, success, error_class, score, num_steps FROM episodes
    UNION ALL
    SELECT 'policy', policy, domain, success, error_class, score, num_steps FROM episodes
    UNION ALL
    SELECT 'app',
           unnest(CASE WHEN coalesce(len(related_apps), 0) = 0 THEN [domain] ELSE list_distinct(related_apps) END),
           domain, success, error_class, score, num_steps
    FROM episodes
)
SELECT
    grouped_by,
    group_key,
    min(domain) AS task_domain,
    count(*) AS episodes,
    count(*) FILTER (WHERE success) AS successes,
    count(*) FILTER (WHERE success) / count(*) AS success_rate,
    count(*) FILTER (WHERE is_infra_error(error_class)) AS infra_errors,
    count(*) FILTER (WHERE success) / nullif(count(*) FILTER (WHERE NOT is_infra_error(error_class)), 0)
        AS success_rate_excl_infra,
    avg(score ORDER BY score) AS mean_score,  -- in value order: the same digits whatever the scan order
    avg(num_steps) AS mean_steps
FROM keyed
GROUP BY grouped_by, group_key
