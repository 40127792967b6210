-- Success rate by domain (the figures are defined once, in _success_groups.sql).
SELECT domain, * EXCLUDE (grouped_by, domain, task_id, policy, task_domain)
FROM success_groups WHERE grouped_by = 'domain' ORDER BY domain
