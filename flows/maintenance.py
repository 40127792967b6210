"""Maintenance flows: ``reap_replicas`` removes what interrupted runs left on each Docker host.

Schedule it (e.g. hourly) next to the collect deployment. It touches only
osgym-labelled containers and, unless ``all_owners``, only those whose owning
process is gone, so pools in use on a shared host survive.
"""

from __future__ import annotations

from prefect import flow, task

from osgym.replicas.pool import reap


@task(name="reap-host", retries=1, retry_delay_seconds=5)
def reap_host(url: str | None, pool: str | None = None, all_owners: bool = False) -> int:
    """Reap one Docker host (``None``: the environment's DOCKER_HOST or the local socket)."""
    import docker

    client = docker.DockerClient(base_url=url) if url else docker.from_env()
    try:
        return reap(client, pool=pool, all_owners=all_owners)
    finally:
        client.close()


@flow(name="reap-replicas", log_prints=True)
def reap_replicas(hosts: list[str] | None = None, pool: str | None = None, all_owners: bool = False) -> dict[str, int]:
    """Reap every host; returns the containers removed per host."""
    urls: list[str | None] = list(hosts) if hosts else [None]
    removed = {url or "local": reap_host(url, pool, all_owners) for url in urls}
    print(f"reaped {sum(removed.values())} container(s): {removed}")
    return removed


if __name__ == "__main__":
    reap_replicas()
