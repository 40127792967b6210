-- What a replica and an episode used, measured: cores while leased (CPU seconds over the replica-seconds of
-- the episodes whose cgroup was read), mean memory (weighted by replica-seconds), the largest peak, and per
-- episode: replica-seconds, model tokens and bytes stored. The input of osgym.replicas.cost.Profile.
-- @param run_id = "": only this run ("" for every run of the dataset)
WITH e AS (
    SELECT * FROM episodes WHERE $run_id = '' OR run_id = $run_id
), metered AS (
    SELECT * FROM e WHERE cpu_s IS NOT NULL AND mem_avg_mib IS NOT NULL AND replica_s > 0
)
SELECT
    (SELECT count(*) FROM e) AS episodes,
    (SELECT count(*) FROM metered) AS metered_episodes,
    (SELECT sum(cpu_s ORDER BY cpu_s) / nullif(sum(replica_s ORDER BY replica_s), 0) FROM metered) AS cores,
    (SELECT sum(mem_avg_mib * replica_s ORDER BY mem_avg_mib * replica_s)
            / nullif(sum(replica_s ORDER BY replica_s), 0) FROM metered) AS mem_mib,
    (SELECT max(mem_peak_mib) FROM metered) AS mem_peak_mib,
    (SELECT avg(replica_s ORDER BY replica_s) FROM e) AS replica_s,
    (SELECT avg(coalesce(input_tokens, 0)) FROM e) AS input_tokens,
    (SELECT avg(coalesce(output_tokens, 0)) FROM e) AS output_tokens,
    (SELECT avg(coalesce(bytes_written, 0)) FROM e) AS bytes,
    (SELECT avg(CASE WHEN success THEN 1.0 ELSE 0.0 END) FROM e) AS success_rate,
    (SELECT mode(json_extract_string(policy_config, '$.model')) FROM e) AS model,
    (SELECT string_agg(DISTINCT run_id, ',' ORDER BY run_id) FROM e) AS runs
