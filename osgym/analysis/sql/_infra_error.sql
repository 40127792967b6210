-- Macro `is_infra_error(cls)`: whether an episode's error_class means the environment lost it
-- (a replica fault, a failed task setup, an evaluator that could not score), not the policy.
-- The one definition of that rule: the success_by_* queries count such episodes as infra_errors and
-- leave them out of success_rate_excl_infra. The classes are the rows of the table infra_error_classes,
-- which analytics fills from osgym.errors.INFRA_ERROR_CLASSES; a NULL error_class is not an infra error.
CREATE OR REPLACE MACRO is_infra_error(cls) AS
    coalesce(cls IN (SELECT error_class FROM infra_error_classes), false)
