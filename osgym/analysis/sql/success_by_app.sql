-- Success rate by application: an episode counts once for each application its task names (OSWorld's
-- related_apps, stored per episode since schema 3), so a multi-app task counts for every app it uses.
-- A task that names none, or an episode written before schema 3, counts under its domain. The figures
-- are those of _success_groups.sql.
WITH per_app AS (
    SELECT unnest(CASE WHEN coalesce(len(related_apps), 0) = 0 THEN [domain]
                       ELSE list_distinct(related_apps) END) AS app,
           success, error_class, score, num_steps
    FROM episodes
)
SELECT
    app,
    count(*) AS episodes,
    count(*) FILTER (WHERE success) AS successes,
    count(*) FILTER (WHERE success) / count(*) AS success_rate,
    count(*) FILTER (WHERE is_infra_error(error_class)) AS infra_errors,
    count(*) FILTER (WHERE success) / nullif(count(*) FILTER (WHERE NOT is_infra_error(error_class)), 0)
        AS success_rate_excl_infra,
    avg(score ORDER BY score) AS mean_score,
    avg(num_steps) AS mean_steps
FROM per_app
GROUP BY app
ORDER BY app
