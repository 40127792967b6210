-- Quality flags per episode: blank frames, duplicate frames, no-op actions, and whether it is stuck on one frame.
-- An episode is stuck when it has at least stuck_min_steps steps and all show the same frame.
-- See _step_flags.sql for the per-step definitions.
-- @param stuck_min_steps = 2: fewest steps for an episode to count as stuck
SELECT
    e.episode_id,
    e.task_id,
    count(f.step) AS steps,
    count(DISTINCT f.screenshot_sha256) AS distinct_frames,
    count(*) FILTER (WHERE f.blank) AS blank_frames,
    count(*) FILTER (WHERE f.duplicate) AS duplicate_frames,
    count(*) FILTER (WHERE f.noop) AS noop_actions,
    (count(f.step) >= $stuck_min_steps AND count(DISTINCT f.screenshot_sha256) = 1) AS stuck
FROM episodes AS e
LEFT JOIN step_flags AS f USING (episode_id)
GROUP BY e.episode_id, e.task_id
ORDER BY e.episode_id
