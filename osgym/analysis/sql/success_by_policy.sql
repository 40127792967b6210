-- Success rate by policy (the figures are defined once, in _success_groups.sql).
SELECT policy, * EXCLUDE (grouped_by, domain, task_id, policy, task_domain)
FROM success_groups WHERE grouped_by = 'policy' ORDER BY policy
