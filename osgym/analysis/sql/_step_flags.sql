-- Internal view `step_flags`: one row per step with its quality flags.
-- blank: the frame is a single colour (frame_stats, filled by analytics.frame_stats) or has zero width/height.
-- duplicate: the frame equals the previous step's frame.
-- noop: an action meant to change the screen (not WAIT, DONE or FAIL) was followed by an identical frame;
--       the last step has no next frame and is never a no-op.
SELECT
    s.episode_id,
    s.step,
    s.screenshot_sha256,
    s.action_type,
    (coalesce(s.width, 0) = 0 OR coalesce(s.height, 0) = 0 OR coalesce(f.blank, false)) AS blank,
    coalesce(s.screenshot_sha256 = lag(s.screenshot_sha256) OVER w, false) AS duplicate,
    coalesce(
        coalesce(s.action_type, '') NOT IN ('WAIT', 'DONE', 'FAIL')
        AND s.screenshot_sha256 = lead(s.screenshot_sha256) OVER w,
        false
    ) AS noop
FROM steps AS s
LEFT JOIN frame_stats AS f USING (screenshot_sha256)
WINDOW w AS (PARTITION BY s.episode_id ORDER BY s.step)
