-- Why episodes did not succeed: counts by termination and error_class, with one example message and episode.
-- @param message_chars = 200: the example message is cut to this many characters
SELECT
    termination,
    coalesce(error_class, '(none)') AS error_class,
    count(*) AS episodes,
    count(*) / (SELECT count(*) FROM episodes) AS share_of_episodes,
    left(arg_min(error_message, episode_id) FILTER (WHERE error_message IS NOT NULL), $message_chars)
        AS example_message,
    coalesce(min(episode_id) FILTER (WHERE error_message IS NOT NULL), min(episode_id)) AS example_episode
FROM episodes
WHERE NOT coalesce(success, false)
GROUP BY termination, coalesce(error_class, '(none)')
ORDER BY episodes DESC, termination, error_class
