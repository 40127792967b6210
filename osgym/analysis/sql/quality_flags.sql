-- Quality flags over the dataset: how many steps and episodes show blank frames, duplicate frames,
-- no-op actions, and how many episodes are stuck on one frame (at least stuck_min_steps steps, all the same).
-- steps counts flagged steps (for stuck_episode: the steps of stuck episodes); episodes counts episodes
-- with at least one. Blank frames are found as described in osgym.analysis.analytics (Pillow, frame_stats).
-- @param stuck_min_steps = 2: fewest steps for an episode to count as stuck
WITH per_episode AS (
    SELECT
        e.episode_id,
        count(f.step) AS steps,
        count(*) FILTER (WHERE f.blank) AS blank,
        count(*) FILTER (WHERE f.duplicate) AS duplicate,
        count(*) FILTER (WHERE f.noop) AS noop,
        (count(f.step) >= $stuck_min_steps AND count(DISTINCT f.screenshot_sha256) = 1) AS stuck
    FROM episodes AS e
    LEFT JOIN step_flags AS f USING (episode_id)
    GROUP BY e.episode_id
),
totals AS (
    SELECT count(*) AS episodes, sum(steps) AS steps FROM per_episode
),
flags AS (
    SELECT 1 AS ord, 'blank_frame' AS flag, sum(blank) AS steps, count(*) FILTER (WHERE blank > 0) AS episodes
    FROM per_episode
    UNION ALL
    SELECT 2, 'duplicate_frame', sum(duplicate), count(*) FILTER (WHERE duplicate > 0) FROM per_episode
    UNION ALL
    SELECT 3, 'noop_action', sum(noop), count(*) FILTER (WHERE noop > 0) FROM per_episode
    UNION ALL
    SELECT 4, 'stuck_episode', sum(steps) FILTER (WHERE stuck), count(*) FILTER (WHERE stuck) FROM per_episode
)
SELECT
    flag,
    coalesce(flags.steps, 0)::BIGINT AS steps,
    flags.episodes,
    coalesce(flags.steps, 0) / nullif(totals.steps, 0) AS step_share,
    flags.episodes / nullif(totals.episodes, 0) AS episode_share
FROM flags, totals
ORDER BY ord
