-- Success rate by task (with its domain; the figures are defined once, in _success_groups.sql).
SELECT group_key AS task_id, task_domain AS domain, * EXCLUDE (grouped_by, group_key, task_domain)
FROM success_groups WHERE grouped_by = 'task' ORDER BY task_id
