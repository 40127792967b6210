"""``osgym images``, ``osgym pool`` and ``osgym host``: replica images, pools and the host's settings."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from osgym.cli._app import _docker, _fail, _plan_profile, app, command_group, console, images_app, pool_app
from osgym.errors import ConfigError, OsgymError


@images_app.command("build")
def images_build(tier: Annotated[str, typer.Option(help="desktop or apps")] = "desktop") -> None:
    """Build the base image (debootstrap) and the replica image, unless they are up to date."""
    from osgym.replicas import images

    try:
        res = images.build(tier, client=_docker(), log=lambda m: console.print(m, markup=False, highlight=False))
    except OsgymError as exc:
        raise _fail(exc) from exc
    console.print(f"{res.tag} {'built' if res.built else 'up to date'}")


@images_app.command("tag")
def images_tag(tier: Annotated[str, typer.Option(help="desktop or apps")] = "desktop") -> None:
    """Print the tag the current inputs build to."""
    from osgym.replicas import images

    try:
        tag = images.image_tag(tier)
    except OsgymError as exc:
        raise _fail(exc) from exc
    console.print(tag)


@pool_app.command("reap")
def pool_reap(
    pool: Annotated[str | None, typer.Option(help="only this pool (whoever started it)")] = None,
    host: Annotated[list[str] | None, typer.Option(help="Docker endpoint(s); default: DOCKER_HOST or local")] = None,
    all_owners: Annotated[bool, typer.Option("--all", help="also pools whose owning process is alive")] = False,
) -> None:
    """Remove replicas, networks and run directories left by interrupted runs.

    Touches only osgym-labelled containers; without --pool or --all, only those whose owning process is gone.
    """
    import docker

    from osgym.replicas.pool import reap

    clients = [docker.DockerClient(base_url=h) for h in host] if host else [_docker()]
    for client in clients:
        try:
            n = reap(client, pool=pool, all_owners=all_owners)
        except docker.errors.DockerException as exc:
            raise _fail(OsgymError(f"reap on {client.api.base_url}: {exc}")) from exc
        console.print(f"removed {n} container(s)" + (f" of pool {pool}" if pool else "")
                      + (f" on {client.api.base_url}" if host else ""))


@pool_app.command("list")
def pool_list(
    host: Annotated[list[str] | None, typer.Option(help="a replica host's Docker URL (unix://, ssh://user@host, "
                                                        "tcp://host:2376); repeat it for each host")] = None,
    hosts_file: Annotated[Path | None, typer.Option(help="a file of Docker URLs, one a line (# comments)")] = None,
    replicas: Annotated[bool, typer.Option("--replicas", help="also each replica: name, tier, image, age, "
                                                              "leased or idle, run id")] = False,
    timeout: Annotated[float, typer.Option(help="seconds a host may take to answer")] = 10.0,
) -> None:
    """The replicas of every host: per host, how many by state, tier and lease. Reads only osgym's containers.

    Without --host or --hosts-file, the hosts of OSGYM_HOSTS, else DOCKER_HOST or the local daemon. Exits 1 if a
    host did not answer (each is still listed, the unreachable ones with the reason)."""
    import os

    from osgym.replicas.fleet import read_hosts
    from osgym.replicas.hosts import DEFAULT_DOCKER_HOST
    from osgym.settings import settings

    urls = list(host or [])
    if hosts_file is not None:
        try:
            lines = hosts_file.read_text().splitlines()
        except OSError as exc:
            raise _fail(OsgymError(f"--hosts-file: {exc}")) from exc
        urls += [u for u in (line.split("#", 1)[0].strip() for line in lines) if u]
    if not urls:
        urls = settings().hosts or [os.environ.get("DOCKER_HOST") or DEFAULT_DOCKER_HOST]
    bad = [u for u in urls if u.split("://", 1)[0] not in ("unix", "ssh", "tcp", "http", "https")]
    if bad:
        raise _fail(OsgymError(f"host: expected a Docker URL (unix://, ssh://, tcp://), actual {bad[0]!r:.200}"))
    now = time.time()
    found = read_hosts(urls, timeout)
    for h in found:
        if h.error is not None:
            console.print(f"{h.url}: unreachable ({h.error})", markup=False, highlight=False, soft_wrap=True)
            continue
        parts = [f"{len(h.replicas)} replica(s)"] + [
            ", ".join(f"{k} {v}" for k, v in h.counts(key).items()) for key in ("state", "tier", "lease")
            if h.replicas]
        console.print(f"{h.url}: " + "; ".join(parts), markup=False, highlight=False, soft_wrap=True)
        if replicas:
            for r in h.replicas:
                console.print(f"  {r.name}  {r.tier}  {r.image}  {_age(r.age_s(now))}  {r.state}  {r.lease}  "
                              f"run {r.run_id or '-'}", markup=False, highlight=False, soft_wrap=True)
    down = sum(h.error is not None for h in found)
    console.print(f"{len(found)} host(s), {sum(len(h.replicas) for h in found)} replica(s)"
                  + (f", {down} unreachable" if down else ""), markup=False, highlight=False)
    if down:
        raise typer.Exit(1)


def _age(seconds: float) -> str:
    """A short age: ``42s``, ``17m``, ``5h03m``, ``3d04h``."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def _host_size(value: str) -> tuple[float, float]:
    cpus, sep, gib = value.partition(",")
    try:
        return float(cpus), float(gib)
    except ValueError:
        raise _fail(OsgymError(f"--host-size: expected CPUS,GIB (e.g. 16,64), actual {value!r}")) from None


@pool_app.command("plan")
def pool_plan(
    replicas: Annotated[int | None, typer.Option(help="size a fleet for this many replicas")] = None,
    from_run: Annotated[str | None, typer.Option(help="plan from the profile this run measured")] = None,
    dataset: Annotated[str | None, typer.Option(help="plan from the profile of a whole dataset (or the "
                                                     "dataset that holds --from-run)")] = None,
    store: Annotated[str, typer.Option(help="store root of --from-run or --dataset")] = "./data",
    prices: Annotated[Path | None, typer.Option(help="a price table (YAML) merged into osgym's own; default "
                                                     "OSGYM_PRICES")] = None,
    host: Annotated[str | None, typer.Option(help="the price table's host to size the fleet on")] = None,
    host_size: Annotated[str | None, typer.Option(
        help="a host not in the price table: CPUS,GIB (with --price)")] = None,
    price: Annotated[float | None, typer.Option(help="that host's price, USD per hour")] = None,
    mem_limit: Annotated[int, typer.Option(help="per-replica memory limit, MiB")] = 512,
    footprint: Annotated[float | None, typer.Option(help="per-replica memory, MiB (overrides the profile)")] = None,
    cpu_per_replica: Annotated[float | None, typer.Option(help="cores per replica (overrides the profile)")] = None,
    think_time: Annotated[float | None, typer.Option(
        help="seconds the model thinks between steps (0: nonstop); prices the replica at that pace from a "
             "measured step profile")] = None,
    step_every: Annotated[float | None, typer.Option(
        help="instead of --think-time: one step every SECONDS, start to start (think = this - the step time)")] = None,
    tier: Annotated[str, typer.Option(help="with --think-time: the tier whose measured step profile to use")] = (
        "desktop"),
    step_profile: Annotated[Path | None, typer.Option(
        help="with --think-time: a step profile measured by bench/bench_pool.py active --profile-out")] = None,
) -> None:
    """How many replicas this host holds, and with --replicas the fleet and its cost, from one cost model.

    The profile (cores and memory per replica, replica-seconds, tokens and bytes per episode) is measured
    by a run (--from-run) or a dataset (--dataset); without either, the benchmark's figure is assumed.
    With --think-time, the cores come from a measured step profile at that pace instead: the idle floor
    plus the CPU per step over (step time + think time)."""
    from osgym.replicas import capacity, cost

    try:
        table = cost.load_prices(prices)
        if step_every is not None:
            if think_time is not None:
                raise OsgymError("give --think-time or --step-every, not both")
            think_time = capacity.think_time_for(capacity.step_profile(tier, step_profile), step_every)
        if think_time is not None:
            if from_run is not None or dataset is not None or cpu_per_replica is not None:
                raise OsgymError("--think-time prices a measured step profile (--tier or --step-profile); it does "
                                 "not combine with --from-run, --dataset or --cpu-per-replica")
            profile = capacity.at_pace(capacity.step_profile(tier, step_profile), think_time)
        elif step_profile is not None:
            raise OsgymError("--step-profile needs --think-time")
        else:
            profile = _plan_profile(store, from_run, dataset)
        overrides = {k: v for k, v in (("mem_mib", footprint), ("cores", cpu_per_replica)) if v is not None}
        profile = cost.Profile.model_validate({**profile.model_dump(), **overrides}) if overrides else profile
        p = capacity.plan(capacity.local_resources(), profile, mem_limit_mib=mem_limit)
    except (OsgymError, ValueError) as exc:
        raise _fail(exc if isinstance(exc, OsgymError) else OsgymError(str(exc))) from exc
    console.print(f"profile: {profile.cores:.3g} cores, {profile.mem_mib:.0f} MiB per replica "
                  f"({profile.source})", highlight=False, markup=False)
    console.print(f"this host: {p.cpus:g} cores, {p.mem_available_mib:,.0f} MiB available -> [bold]{p.replicas:,}"
                  f"[/bold] replicas ({p.binding} binds; cpu {p.by_cpu:,}, memory {p.by_memory:,}, "
                  f"limits {p.by_limits:,})", highlight=False)
    if replicas is None:
        if host_size is not None or price is not None:
            raise _fail(OsgymError("fleet sizing needs --replicas"))
        if think_time is not None:  # the price of a replica-day at this pace, on a packed host
            try:
                h = table.host(host)
            except OsgymError as exc:
                raise _fail(exc) from exc
            d = cost.density(h.vcpus, h.memory_gib, profile)
            day = cost.usd(cost.replica_day_usd(h, d.replicas)) if d.replicas else "no replica fits"
            console.print(f"at this pace: {day} per replica-day on {h.instance} ({cost.usd(h.usd_per_hour)}/h, "
                          f"{d.replicas:,} per host, {d.binding} binds)", highlight=False, markup=False)
        return
    try:
        if host_size is not None or price is not None:
            if host_size is None or price is None:
                raise OsgymError("a custom host needs --host-size and --price together")
            cpus, gib = _host_size(host_size)
            h = cost.HostPrice(instance=f"{cpus:g}vCPU-{gib:g}GiB", vcpus=cpus, memory_gib=gib, usd_per_hour=price)
            table = table.model_copy(update={"hosts": [*table.hosts, h], "default_host": h.instance})
        else:
            h = table.host(host)
        f = cost.fleet(replicas, h, profile)
        run = cost.cost_of(table, profile, host=h.instance)
    except (OsgymError, ValueError) as exc:
        raise _fail(exc if isinstance(exc, OsgymError) else OsgymError(str(exc))) from exc
    console.print(f"fleet: {f.replicas:,} replicas on {f.hosts:,} x {h.instance} ({h.vcpus:g} vCPU, "
                  f"{h.memory_gib:g} GiB, {cost.usd(h.usd_per_hour)}/h), {f.replicas_per_host:,} per host "
                  f"({f.binding} binds)", highlight=False, markup=False)
    console.print(f"cost: {cost.usd(f.usd_per_replica_day)} per replica-day, {cost.usd(f.usd_per_day)} per day",
                  highlight=False, markup=False)
    if profile.replica_s:
        per_success = (f", {cost.usd(run.total_usd / profile.success_rate)} per success"
                       if profile.success_rate else "")
        console.print(f"episode: {cost.usd(run.total_usd)} ({cost.usd(run.compute_usd)} replica, "
                      f"{cost.usd(run.tokens_usd)} tokens, {cost.usd(run.storage_usd)} storage){per_success}",
                      highlight=False, markup=False)


host_app = command_group("Machine-wide settings for replicas (the operator's; needs root).")
app.add_typer(host_app, name="host")


@host_app.command("tune")
def host_tune(
    ksm: Annotated[bool, typer.Option("--ksm", help="run the kernel's samepage merging (ksmd) with its "
                                      "scan-time advisor")] = False,
    max_cpu: Annotated[int, typer.Option(help="ksmd's CPU bound, percent of one core")] = 20,
    scan_time: Annotated[int, typer.Option(help="seconds the advisor aims to take per full scan")] = 60,
    zram: Annotated[str | None, typer.Option("--zram", metavar="SIZE",
                                             help="turn /dev/zram0 on as compressed swap of SIZE (e.g. 16G); "
                                                  "replicas use it with OSGYM_REPLICA_SWAP_MIB")] = None,
    zram_algorithm: Annotated[str, typer.Option(help="zram's compressor")] = "lz4",
    undo: Annotated[bool, typer.Option("--undo", help="put back the settings found before the first tune")] = False,
) -> None:
    """Turn on (or, with --undo, back off) KSM, which merges the identical pages of replicas, and zram,
    compressed swap for their cold pages."""
    from osgym.replicas import ksm as ksm_host
    from osgym.replicas import zram as zram_host

    if (ksm or zram is not None) == undo:
        raise _fail(ConfigError("say what to do: --ksm and/or --zram SIZE, or --undo"))
    def knobs(changes: list[ksm_host.Change]) -> list[str]:
        return [f"{ksm_host.KSM_DIR / c.knob}: {c.before} -> {c.after}" for c in changes]

    lines: list[str] = []
    failed: OsgymError | None = None
    try:
        if undo:
            lines += knobs(ksm_host.undo())
            lines += zram_host.undo()
        if ksm:
            lines += knobs(ksm_host.tune(max_cpu, scan_time))
        if zram is not None:
            lines += zram_host.tune(zram_host.parse_size(zram), zram_algorithm)
    except OsgymError as exc:
        failed = exc  # what was done before the failure stays done: it is printed all the same
    for line in lines:
        console.print(line, markup=False, highlight=False)
    if failed is not None:
        raise _fail(failed) from failed
    if not lines:
        console.print("nothing to undo" if undo else "already set so; nothing changed")
    elif not undo:
        console.print(f"earlier values kept in {ksm_host.STATE_FILE.parent}; `osgym host tune --undo` restores them",
                      markup=False, highlight=False, soft_wrap=True)


@host_app.command("status")
def host_status() -> None:
    """What ksmd is doing and the memory it saves; what zram holds."""
    from osgym.replicas import ksm as ksm_host
    from osgym.replicas import zram as zram_host

    try:
        s = ksm_host.status()
    except OsgymError as exc:
        raise _fail(exc) from exc
    cpu = ksm_host.ksmd_cpu_seconds()
    console.print(f"ksmd {'running' if s.run else 'stopped'} (advisor {s.advisor}); {s.pages_sharing} pages "
                  f"merged into {s.pages_shared} ({s.saved_mib:.1f} MiB saved), {s.full_scans} full scans, "
                  f"ksmd CPU {'?' if cpu is None else f'{cpu:.1f} s'} since boot", highlight=False)
    try:
        z = zram_host.status()
    except OsgymError as exc:
        console.print(f"zram: {exc}", markup=False, highlight=False)
        return
    if not z.active:
        console.print("zram swap off", highlight=False)
        return
    ratio = f", {z.ratio:.1f}x" if z.ratio else ""
    console.print(f"zram swap on ({z.disksize_bytes / 2**30:.1f} GiB, {z.algorithm}): holds "
                  f"{z.stored_bytes / 2**20:.1f} MiB in {z.memory_bytes / 2**20:.1f} MiB{ratio}", highlight=False)
