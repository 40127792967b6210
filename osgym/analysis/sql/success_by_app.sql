-- Success rate by application: an episode counts once for each application its task names (OSWorld's
-- related_apps), or under its domain when it names none (the figures and that rule are defined once, in
-- _success_groups.sql).
SELECT group_key AS app, * EXCLUDE (grouped_by, group_key, task_domain)
FROM success_groups WHERE grouped_by = 'app' ORDER BY app
