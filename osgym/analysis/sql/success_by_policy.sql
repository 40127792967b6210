-- Success rate by policy (the figures are defined once, in _success_groups.sql).
SELECT group_key AS policy, * EXCLUDE (grouped_by, group_key, task_domain)
FROM success_groups WHERE grouped_by = 'policy' ORDER BY policy
