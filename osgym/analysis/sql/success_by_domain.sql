-- Success rate by domain (the figures are defined once, in _success_groups.sql).
SELECT group_key AS domain, * EXCLUDE (grouped_by, group_key, task_domain)
FROM success_groups WHERE grouped_by = 'domain' ORDER BY domain
