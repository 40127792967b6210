"""The osgym exception tree.

    OsgymError
    ├── ConfigError            bad recipe, settings or command-line input
    ├── ImageError             a replica image cannot be built or found
    ├── ReplicaError           a replica misbehaved; the episode may be retried on a fresh one
    │   ├── ReplicaStartTimeout
    │   ├── ReplicaUnreachable
    │   ├── ResponseTooLarge
    │   ├── ActionFailed
    │   └── ReplicaOomKilled   a process in it was OOM-killed during a lease
    ├── RequestRejected        the replica refused a request as invalid (4xx): retrying won't help
    ├── PoolError              the pool cannot hand out a replica
    │   ├── CapacityError
    │   └── LeaseTimeout       no replica was free in time (also a ReplicaError: retried)
    ├── TaskError              a task file or task step is wrong
    │   ├── TaskLoadError
    │   ├── SetupError
    │   └── EvaluatorError
    ├── PolicyError            the policy failed or answered something unusable
    │   └── Unrenderable       an action has no form in the chosen action format (exports)
    ├── StoreError             the dataset store failed
    ├── ServerLost             an ``osgym serve`` server stopped answering: its sessions are gone
    └── HollowDataRefused      an export met hollow (load-test) episodes it was not allowed to take

Lower-level errors (docker, httpx, botocore) are re-raised as the most specific
class here, with ``raise ... from exc``.
"""

from __future__ import annotations


class OsgymError(Exception):
    """Base class of every error osgym raises on purpose."""


class ConfigError(OsgymError):
    """Raised when a recipe, setting or argument is invalid."""


class ImageError(OsgymError):
    """Raised when a replica image cannot be built, imported or found."""


class ReplicaError(OsgymError):
    """Raised when a replica fails; the episode is retried on a fresh replica."""

    error_class = "replica_fault"


class ReplicaStartTimeout(ReplicaError):
    """Raised when a replica does not become ready before its deadline."""


class ReplicaUnreachable(ReplicaError):
    """Raised when a replica's control API does not answer (dead, hung or gone)."""


class ResponseTooLarge(ReplicaError):
    """Raised when a replica's answer is larger than the client reads for that request (or encoded)."""


class ActionFailed(ReplicaError):
    """Raised when the replica rejects or fails to perform a request."""


class ReplicaOomKilled(ReplicaError):
    """Raised when a process inside a leased replica was killed at the replica's memory limit during the lease.

    The replica keeps running, but an app or command the episode relied on may be gone: what the lease
    produced does not stand, and the episode is retried on a fresh replica like any other replica fault.
    """


class RequestRejected(OsgymError):
    """Raised when a replica answers 4xx: the request itself is wrong, so a fresh replica won't help."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class PoolError(OsgymError):
    """Raised when the pool cannot provide a replica."""


class CapacityError(PoolError):
    """Raised when a pool would exceed what its hosts can hold."""


class LeaseTimeout(PoolError, ReplicaError):
    """Raised when no replica became ready for a lease in time.

    Also a :class:`ReplicaError`: replicas being replaced, restarted or all busy is a passing
    state of the pool, so the episode is retried like one a replica fault ended (and, if every
    attempt times out, recorded as a ``replica_fault``).
    """


class TaskError(OsgymError):
    """Raised when a task is malformed or one of its steps fails."""

    error_class = "setup_error"


class TaskLoadError(TaskError):
    """Raised when a task file cannot be parsed or uses unsupported features."""


class SetupError(TaskError):
    """Raised when a task's setup step fails on the replica."""


class EvaluatorError(TaskError):
    """Raised when a task's evaluator cannot compute a score."""

    error_class = "evaluator_error"


class PolicyError(OsgymError):
    """Raised when a policy fails or returns something that is not an action."""

    error_class = "policy_error"


class Unrenderable(PolicyError):
    """Raised when an action cannot be written in an action format (UI-TARS has no mouse-down, ...)."""


class EpisodeTimeout(OsgymError):
    """Raised when an episode passes its wall-clock deadline."""

    error_class = "timeout"


class StoreError(OsgymError):
    """Raised when the dataset store cannot read or write."""


class ServerLost(OsgymError):
    """Raised when an ``osgym serve`` server a client uses stops answering (or restarts): its sessions are gone.

    ``url`` names the server (all of them, comma-separated, when none can take a new session); a new session
    goes to another server of the client's list (:class:`osgym.serving.servers.ServerSet`), and this one is
    probed again later.
    """

    def __init__(self, url: str, message: str) -> None:
        super().__init__(f"server {url}: {message}")
        self.url = url


ERROR_CLASSES = (*(e.error_class for e in (ReplicaError, TaskError, PolicyError, EvaluatorError, EpisodeTimeout)),
                 "error")
"""Every ``error_class`` a dataset row may carry: the errors' own and the catch-all ``error``.

>>> ERROR_CLASSES
('replica_fault', 'setup_error', 'policy_error', 'evaluator_error', 'timeout', 'error')
"""

INFRA_ERROR_CLASSES = (ReplicaError.error_class, TaskError.error_class, EvaluatorError.error_class)
"""The ``error_class`` values of episodes lost to the environment, not the policy: a replica fault, a failed
task setup, an evaluator that could not score. Analytics counts them as ``infra_errors`` (``is_infra_error``).

>>> INFRA_ERROR_CLASSES
('replica_fault', 'setup_error', 'evaluator_error')
>>> set(INFRA_ERROR_CLASSES) <= set(ERROR_CLASSES)
True
"""


def error_class_of(exc: BaseException) -> str:
    """Map an exception to a dataset ``error_class``.

    >>> error_class_of(ReplicaUnreachable("gone"))
    'replica_fault'
    >>> error_class_of(ValueError("x"))
    'error'
    """
    return getattr(exc, "error_class", "error")


class HollowDataRefused(OsgymError):
    """Raised when an export meets episodes of hollow replicas (synthetic screens, not agent data) unasked."""
