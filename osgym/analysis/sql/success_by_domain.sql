-- Success rate by domain.
-- infra_errors are episodes lost to the environment (replica_fault, setup_error, evaluator_error);
-- success_rate_excl_infra leaves them out of the denominator.
SELECT
    domain,
    count(*) AS episodes,
    count(*) FILTER (WHERE success) AS successes,
    count(*) FILTER (WHERE success) / count(*) AS success_rate,
    count(*) FILTER (WHERE error_class IN ('replica_fault', 'setup_error', 'evaluator_error')) AS infra_errors,
    count(*) FILTER (WHERE success)
        / nullif(count(*) FILTER (WHERE error_class IS NULL
                                     OR error_class NOT IN ('replica_fault', 'setup_error', 'evaluator_error')), 0)
        AS success_rate_excl_infra,
    avg(score) AS mean_score,
    avg(num_steps) AS mean_steps
FROM episodes
GROUP BY domain
ORDER BY domain
