"""The private PostgreSQL cluster of the production test: unprivileged, loopback only, its role's password
enforced, and gone afterwards."""

from __future__ import annotations

import asyncio
import os

import asyncpg
import pytest

from tests.deploy.postgres import running_postgres


def test_the_private_cluster_is_loopback_only_unprivileged_and_removed() -> None:
    with running_postgres() as pg:
        assert pg.sql("show listen_addresses") == "127.0.0.1\n"
        assert pg.sql("show unix_socket_directories") == f"{pg.base}\n"
        assert os.stat(pg.data).st_uid != 0 and os.stat(pg.base).st_mode & 0o077 == 0
        dsn = pg.url.replace("postgresql+asyncpg://", "postgresql://")

        async def whoami(url: str) -> str:
            conn = await asyncpg.connect(url, timeout=10)
            try:
                return str(await conn.fetchval("select current_user || '@' || current_database()"))
            finally:
                await conn.close()

        assert asyncio.run(whoami(dsn)) == "prefect@prefect"
        with pytest.raises(asyncpg.InvalidPasswordError):
            asyncio.run(whoami(dsn.replace(pg.password, "wrong-password")))
        base = pg.base
    assert not base.exists()
