-- Internal view `episode_quality`: one row per episode, every column of `episodes` plus its quality flags,
-- built from the report's per-step view `step_flags` and macro `is_infra_error`. Exports filter on it
-- (`osgym dataset export --where`). blank_frames counts frames found blank by frame_stats, which the
-- caller runs first when a filter reads it; stuck_episode has the report's default (>= 2 steps, one frame).
CREATE OR REPLACE VIEW episode_quality AS
WITH per_episode AS (
    SELECT
        episode_id,
        count(step) AS steps,
        count(DISTINCT screenshot_sha256) AS distinct_frames,
        count(*) FILTER (WHERE blank) AS blank_frames,
        count(*) FILTER (WHERE duplicate) AS duplicate_frames,
        count(*) FILTER (WHERE noop) AS noop_actions
    FROM step_flags
    GROUP BY episode_id
)
SELECT
    e.*,
    coalesce(q.steps, 0) AS steps,
    coalesce(q.distinct_frames, 0) AS distinct_frames,
    coalesce(q.blank_frames, 0) AS blank_frames,
    coalesce(q.duplicate_frames, 0) AS duplicate_frames,
    coalesce(q.noop_actions, 0) AS noop_actions,
    (coalesce(q.steps, 0) >= 2 AND q.distinct_frames = 1) AS stuck_episode,
    is_infra_error(e.error_class) AS infra_error
FROM episodes AS e
LEFT JOIN per_episode AS q USING (episode_id)
