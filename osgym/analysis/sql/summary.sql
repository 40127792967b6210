-- Headline numbers: episodes, success rate, steps per episode, mean wall time per episode.
-- Sums and means of doubles take their inputs in value order (ORDER BY inside the aggregate): a parallel
-- scan adds them in a varying order, and the last digits would change from one run to the next.
SELECT
    count(DISTINCT run_id) AS runs,
    count(DISTINCT task_id) AS tasks,
    count(*) AS episodes,
    count(*) FILTER (WHERE success) AS successes,
    count(*) FILTER (WHERE success) / nullif(count(*), 0) AS success_rate,
    (SELECT count(*) FROM steps) AS steps,
    (SELECT count(*) FROM steps) / nullif(count(*), 0) AS steps_per_episode,
    avg(epoch(ended_at) - epoch(started_at) ORDER BY epoch(ended_at) - epoch(started_at)) AS episode_s,
    sum(replica_s ORDER BY replica_s) AS replica_s
FROM episodes
