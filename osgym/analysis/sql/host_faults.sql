-- Replica fault and retry rates per host (the host of each episode's final attempt).
-- Only replica faults are retried, so every attempt but the last was a replica fault:
-- faulted_attempts = (attempts - 1) + 1 if the final attempt also ended in replica_fault.
-- Earlier attempts may have run on another host; the table records only the last one.
SELECT
    coalesce(host, '(unknown)') AS host,
    count(*) AS episodes,
    sum(attempts)::BIGINT AS attempts,
    count(*) FILTER (WHERE attempts > 1) AS retried_episodes,
    count(*) FILTER (WHERE attempts > 1) / count(*) AS retry_rate,
    count(*) FILTER (WHERE error_class = 'replica_fault') AS replica_faults,
    (sum(attempts - 1) + count(*) FILTER (WHERE error_class = 'replica_fault'))::BIGINT AS faulted_attempts,
    (sum(attempts - 1) + count(*) FILTER (WHERE error_class = 'replica_fault')) / nullif(sum(attempts), 0)
        AS fault_rate
FROM episodes
GROUP BY coalesce(host, '(unknown)')
ORDER BY fault_rate DESC, retry_rate DESC, host
