"""The S3 backend against a real SeaweedFS server: SigV4, multipart, DuckDB counts, and a server outage."""

from __future__ import annotations

import hashlib
import logging
from collections import Counter

import botocore.exceptions
import duckdb
import pytest
from store_support import ACCESS_KEY, BUCKET, SECRET_KEY, SeaweedS3
from store_synth import make_episode

from osgym.dataset import DatasetWriter, open_dataset
from osgym.errors import StoreError
from osgym.storage import S3Options
from osgym.storage.s3 import duckdb_s3_route
from osgym.storage.s3_faults import is_transient

SMALL_SHARD = 24 * 1024


def test_sigv4_is_enforced(seaweed: SeaweedS3) -> None:
    with pytest.raises(botocore.exceptions.ClientError, match="SignatureDoesNotMatch"):
        seaweed.client(secret="not-the-secret").list_objects_v2(Bucket=BUCKET)  # type: ignore[attr-defined]
    wrong = seaweed.options(secret_key="not-the-secret")
    with pytest.raises(StoreError, match="refused the credentials"):
        DatasetWriter(f"s3://{BUCKET}/sig", "ds", "r", s3=wrong)
    with pytest.raises(StoreError, match="refused the credentials"):
        open_dataset(f"s3://{BUCKET}/sig", "ds", s3=wrong)


def test_missing_bucket_says_to_create_it(seaweed: SeaweedS3) -> None:
    with pytest.raises(StoreError, match="bucket 'no-such-bucket' was not found: create it"):
        DatasetWriter("s3://no-such-bucket/x", "ds", "r", s3=seaweed.options())


def test_options_mask_secrets_and_resolve_endpoint() -> None:
    opts = S3Options(endpoint_url="http://127.0.0.1:9/", access_key=ACCESS_KEY, secret_key=SECRET_KEY)
    assert SECRET_KEY not in repr(opts) and SECRET_KEY not in str(opts.model_dump())
    assert opts.endpoint_url == "http://127.0.0.1:9"
    assert opts.pyarrow_filesystem().region == "us-east-1"
    with pytest.raises(ValueError, match="give both, or neither"):
        S3Options(access_key="only-half")
    with pytest.raises(ValueError, match=r"expected http\(s\)://host"):
        S3Options(endpoint_url="127.0.0.1:9000")
    assert is_transient(botocore.exceptions.EndpointConnectionError(endpoint_url="http://x"))

    def client_error(code: str, status: int) -> botocore.exceptions.ClientError:
        return botocore.exceptions.ClientError(
            {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, "PutObject"
        )

    assert not is_transient(client_error("AccessDenied", 403))
    assert is_transient(client_error("SlowDown", 503))
    assert is_transient(OSError("AWS Error NETWORK_CONNECTION during GetObject operation: refused"))
    assert not is_transient(OSError("AWS Error ACCESS_DENIED during GetObject operation"))


@pytest.mark.slow
def test_200_episodes_then_duckdb_counts_over_s3_match_the_manifest(seaweed: SeaweedS3) -> None:
    uri, opts = f"s3://{BUCKET}/two-hundred", seaweed.options()
    with DatasetWriter(uri, "ds", "r200", s3=opts, shard_max_bytes=128 * 1024) as w:
        for i in range(200):
            w.add(make_episode("r200", i))
    manifest = w.finalize()
    assert manifest.episodes == 200 and len(manifest.tables["episodes"]) > 1

    view = open_dataset(uri, "ds", s3=opts)
    con = duckdb.connect()
    assert duckdb_s3_route(con) in ("httpfs", "pyarrow")
    con.register("episodes", view.episodes)
    con.register("steps", view.steps)
    ep = con.execute("SELECT count(*), count(DISTINCT episode_id), sum(num_steps) FROM episodes").fetchone()
    st = con.execute("SELECT count(*), count(DISTINCT episode_id) FROM steps").fetchone()
    with_steps = con.execute("SELECT count(*) FROM episodes WHERE num_steps > 0").fetchone()
    assert ep == (manifest.episodes, manifest.episodes, manifest.steps)
    assert st == (manifest.steps, with_steps[0] if with_steps else None)
    per_table = {t: sum(e.rows for e in entries) for t, entries in manifest.tables.items()}
    assert per_table == {"episodes": 200, "steps": manifest.steps}
    runs = con.execute("SELECT run, count(*) FROM steps GROUP BY run").fetchall()
    assert runs == [("r200", manifest.steps)]


def test_a_large_shard_goes_up_as_one_multipart_upload(seaweed: SeaweedS3) -> None:
    uri = f"s3://{BUCKET}/multipart"
    opts = seaweed.options(multipart_threshold=5 * 2**20, multipart_chunksize=5 * 2**20)
    with DatasetWriter(uri, "ds", "big", s3=opts) as w:
        for i in range(3):
            w.add(make_episode("big", i, steps=3, size=(640, 480), noise=True))
    entry = w.finalize().tables["steps"][0]
    assert entry.bytes > 6 * 2**20
    key = f"multipart/ds/{entry.path}"
    client = seaweed.client()
    head = client.head_object(Bucket=BUCKET, Key=key)  # type: ignore[attr-defined]
    assert "-" in head["ETag"], "uploaded in parts"
    body = client.get_object(Bucket=BUCKET, Key=key)["Body"].read()  # type: ignore[attr-defined]
    assert hashlib.sha256(body).hexdigest() == entry.sha256 == head["Metadata"]["sha256"]


@pytest.mark.slow
def test_endpoint_outage_fails_loudly_then_the_rerun_completes_once_each(
    fresh_seaweed: SeaweedS3, caplog: pytest.LogCaptureFixture
) -> None:
    server, uri, n = fresh_seaweed, f"s3://{BUCKET}/fault", 40
    opts = server.options(retries=2, backoff_s=0.05, max_attempts=1, connect_timeout_s=1)
    caplog.set_level(logging.WARNING, logger="osgym.storage.s3")

    writer = DatasetWriter(uri, "ds", "rf", s3=opts, shard_max_bytes=SMALL_SHARD)
    with pytest.raises(StoreError, match="after 3 attempts") as failure:
        with writer:
            for i in range(n):
                writer.add(make_episode("rf", i))
                if i == 15:
                    assert writer.bytes["steps"] > 0, "some shards were committed before the outage"
                    server.stop()
    assert "re-run the same run_id to resume" in str(failure.value)
    assert sum("retry" in r.getMessage() for r in caplog.records) >= 2, "the writer retried before giving up"
    assert writer.state == "aborted"

    server.start()
    listed = server.client().list_objects_v2(Bucket=BUCKET, Prefix="fault/ds/_manifests/")  # type: ignore[attr-defined]
    assert listed.get("KeyCount", 0) == 0, "no manifest was committed"
    assert open_dataset(uri, "ds", s3=opts).manifests == []

    rerun = DatasetWriter(uri, "ds", "rf", s3=opts, shard_max_bytes=SMALL_SHARD)
    kept = rerun.committed_episode_ids()
    assert 0 < len(kept) < n
    for i in range(n):
        rerun.add(make_episode("rf", i))
    manifest = rerun.finalize()
    assert rerun.episodes_written == n - len(kept)

    view = open_dataset(uri, "ds", s3=opts)
    ids = Counter(view.episodes.to_table(columns=["episode_id"]).column(0).to_pylist())
    assert len(ids) == n and set(ids.values()) == {1}, "every episode exactly once"
    expected_steps = sum(len(make_episode("rf", i).trajectory.steps) for i in range(n))
    assert manifest.steps == view.steps.count_rows() == expected_steps
    con = duckdb.connect()
    con.register("steps", view.steps)
    assert con.execute("SELECT count(*), count(DISTINCT (episode_id, step)) FROM steps").fetchone() == (
        expected_steps,
        expected_steps,
    )


def test_resume_reads_shards_uploaded_without_metadata(seaweed: SeaweedS3) -> None:
    uri, opts = f"s3://{BUCKET}/no-metadata", seaweed.options()
    with DatasetWriter(uri, "ds", "nm", s3=opts, shard_max_bytes=SMALL_SHARD) as w:
        for i in range(10):
            w.add(make_episode("nm", i))
    first = w.finalize()
    client = seaweed.client()
    for entry in first.tables["steps"]:  # as if another tool had copied the shards
        key = f"no-metadata/ds/{entry.path}"
        client.copy_object(  # type: ignore[attr-defined]
            Bucket=BUCKET, Key=key, CopySource={"Bucket": BUCKET, "Key": key}, MetadataDirective="REPLACE", Metadata={}
        )
        assert "sha256" not in client.head_object(Bucket=BUCKET, Key=key)["Metadata"]  # type: ignore[attr-defined]
    again = DatasetWriter(uri, "ds", "nm", s3=opts).finalize()
    assert again.tables == first.tables
