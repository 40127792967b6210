"""The one cost model: a price table, a measured profile, a density, and what things cost (design.md §8).

Every cost osgym prints comes from here: ``osgym pool plan``, the report, each episode's
``cost_usd`` and the pool's admission limit. Two inputs:

* a **price table** (:class:`PriceTable`): hosts, model tokens and storage, read from the packaged
  ``prices.yaml`` plus the user's file (``OSGYM_PRICES`` or ``--prices``; :func:`load_prices`);
* a **profile** (:class:`Profile`): what one replica uses while it runs an episode (cores, memory),
  and what an episode takes (replica-seconds, tokens, bytes). Measured: from a run or a dataset
  (:mod:`osgym.analysis.profile`, from the cgroup accounting of :mod:`osgym.replicas.accounting`),
  or for a single episode from its own accounting. :data:`DEFAULT_PROFILE` is the benchmark's figure
  for a replica stepped every 5 s, used only when nothing was measured.

The model::

    replicas per host  = min(cpus * CPU_TARGET / cores, (memory - reserve) / mem_mib)
    $ per replica-s    = host $ per s / replicas per host
    episode            = replica_s * $ per replica-s + tokens * $ per token + bytes * $ per byte-month * months
    per success        = run total / successful episodes

The CPU bound plans to ``CPU_TARGET`` of the cores, not all of them: on a 2-core host, 200 replicas
stepped every 5 s (a nominal 100 % of the cores at 0.01 each) saw a p95 step latency of 297 ms, and
300 saw 2.4 s; latency degrades before the cores run out.

>>> host = HostPrice(instance="example", vcpus=4, memory_gib=16, usd_per_hour=3.6)
>>> d = density(host.vcpus, host.memory_gib, Profile(cores=0.3, mem_mib=100))
>>> d.replicas, d.binding
(10, 'cpu')
>>> round(replica_day_usd(host, d.replicas), 2)
8.64
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from osgym.errors import ConfigError

SECONDS_PER_DAY = 86_400
GIB = 1024**3

CPU_TARGET = 0.75
"""Share of a host's cores a plan fills (see the module docstring for why not all of them)."""

RESERVE_GIB = 2.0
"""Memory kept back for the host OS, Docker and the collector."""


class _Value(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class HostPrice(_Value):
    """The price of one replica host.

    Attributes:
        instance: the host's name, e.g. an EC2 instance type.
        provider: who sells it ("aws", "on-prem", ...).
        region: where the price applies.
        vcpus: vCPUs of the host.
        memory_gib: memory of the host in GiB.
        usd_per_hour: on-demand price of the whole host, US dollars per hour.
        source: where the price was read (a URL), so a report can cite it.
        retrieved: the day the price was read.
    """

    instance: str
    provider: str = "custom"
    region: str = ""
    vcpus: float = Field(gt=0)
    memory_gib: float = Field(gt=0)
    usd_per_hour: float = Field(ge=0)
    source: str = ""
    retrieved: date | None = None

    @property
    def usd_per_second(self) -> float:
        return self.usd_per_hour / 3600.0


class ModelPrice(_Value):
    """A model's list price per million tokens."""

    name: str
    usd_per_million_input: float = Field(ge=0)
    usd_per_million_output: float = Field(ge=0)
    source: str = ""
    retrieved: date | None = None


class StoragePrice(_Value):
    """What stored bytes cost: per GiB-month, kept for ``months``."""

    name: str = "storage"
    usd_per_gib_month: float = Field(ge=0)
    months: float = Field(1.0, ge=0)
    source: str = ""
    retrieved: date | None = None

    @property
    def usd_per_byte(self) -> float:
        return self.usd_per_gib_month * self.months / GIB


class PriceTable(_Value):
    """Hosts, models and storage, as read from ``prices.yaml`` files (:func:`load_prices`)."""

    default_host: str
    hosts: list[HostPrice]
    models: list[ModelPrice] = []
    storage: StoragePrice | None = None

    def host(self, name: str | None = None) -> HostPrice:
        """The host called ``name`` (default: ``default_host``).

        Raises:
            ConfigError: if the table has no such host.
        """
        want = name or self.default_host
        for h in self.hosts:
            if h.instance == want:
                return h
        raise ConfigError(f"price table: no host {want!r}; it has {[h.instance for h in self.hosts]}")

    def model(self, name: str | None) -> ModelPrice | None:
        """The price of model ``name``, or None if the table has none (its tokens are then not costed)."""
        return next((m for m in self.models if m.name == name), None) if name else None


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"price table {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"price table {path}: expected a mapping, actual {type(data).__name__}")
    return data


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """``extra``'s entries added to ``base``'s; an entry of the same name replaces the base one."""
    out = dict(base)
    for key, value in extra.items():
        if key in ("hosts", "models") and isinstance(value, list):
            name = "instance" if key == "hosts" else "name"
            theirs = {e.get(name) for e in value if isinstance(e, dict)}
            out[key] = [e for e in base.get(key, []) if e.get(name) not in theirs] + value
        else:
            out[key] = value
    return out


def load_prices(path: str | Path | None = None) -> PriceTable:
    """The packaged price table, with the user's file (``path``, else ``OSGYM_PRICES``) merged in.

    Raises:
        ConfigError: if a file cannot be read or does not describe prices.
    """
    if path is None:
        from osgym.settings import settings

        path = settings().prices
    data = yaml.safe_load(resources.files("osgym.replicas").joinpath("prices.yaml").read_text())
    if path is not None:
        data = _merge(data, _read_yaml(Path(path)))
    try:
        table = PriceTable.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"price table {path or 'prices.yaml'}: {exc}") from exc
    table.host()  # the default host must exist
    return table


class Profile(_Value):
    """What a replica and an episode use, measured (or :data:`DEFAULT_PROFILE`).

    Attributes:
        cores: cores one replica uses while leased (CPU seconds / replica-seconds).
        mem_mib: memory one replica holds (mean PSS, else working set), MiB.
        mem_peak_mib: the largest peak of any replica, MiB.
        replica_s: replica-seconds per episode (mean).
        input_tokens: model input tokens per episode (mean).
        output_tokens: model output tokens per episode (mean).
        bytes: bytes written to the store per episode (mean).
        success_rate: successful episodes / episodes, if known.
        episodes: how many episodes were measured.
        model: the policy's model, to price its tokens.
        source: where the figures come from, for a report to cite.
    """

    cores: float = Field(gt=0)
    mem_mib: float = Field(gt=0)
    mem_peak_mib: float | None = None
    replica_s: float = Field(0.0, ge=0)
    input_tokens: float = Field(0.0, ge=0)
    output_tokens: float = Field(0.0, ge=0)
    bytes: float = Field(0.0, ge=0)
    success_rate: float | None = None
    episodes: int = 0
    model: str | None = None
    source: str = ""


MIN_CORES = 1e-4
"""Floor of a measured ``cores``: an episode that used no CPU time still holds its slot."""

DEFAULT_PROFILE = Profile(
    cores=0.01, mem_mib=59.0,
    source="assumed, not measured here: bench/results/pool.md (2026-11-30), one idle 1920x1080 desktop replica "
           "stepped every 5 s: 0.01 cores, 59 MiB PSS with its containerd shim")
"""Used only when nothing was measured: the benchmark's replica at a model's pace."""


@dataclass(frozen=True)
class Density:
    """How many replicas of a profile fit on a host, and which resource binds."""

    replicas: int
    by_cpu: int
    by_memory: int
    binding: str


def density(cpus: float, mem_gib: float, profile: Profile, *, cpu_target: float = CPU_TARGET,
            reserve_gib: float = RESERVE_GIB) -> Density:
    """Replicas of ``profile`` per host: the smaller of the CPU bound and the memory bound.

    >>> density(16, 64, Profile(cores=0.5, mem_mib=59))
    Density(replicas=24, by_cpu=24, by_memory=1076, binding='cpu')
    """
    by_cpu = math.floor(cpus * cpu_target / max(profile.cores, MIN_CORES) + 1e-9)
    by_memory = math.floor(max(0.0, mem_gib - reserve_gib) * 1024 / profile.mem_mib + 1e-9)
    return Density(min(by_cpu, by_memory), by_cpu, by_memory, "cpu" if by_cpu <= by_memory else "memory")


def _check(replicas: float) -> None:
    if not replicas > 0:
        raise ValueError(f"replicas per host: expected > 0, actual {replicas}")


def usd_per_replica_second(host: HostPrice, replicas: float) -> float:
    """One replica's share of a fully packed host, per second.

    Raises:
        ValueError: if ``replicas`` is not positive.
    """
    _check(replicas)
    return host.usd_per_second / replicas


def replica_day_usd(host: HostPrice, replicas: float) -> float:
    """Keeping one replica for 24 hours on a host packed with ``replicas``.

    Raises:
        ValueError: if ``replicas`` is not positive.
    """
    return SECONDS_PER_DAY * usd_per_replica_second(host, replicas)


@dataclass(frozen=True)
class Cost:
    """What some episodes cost, by part, in US dollars."""

    compute_usd: float
    tokens_usd: float
    storage_usd: float

    @property
    def total_usd(self) -> float:
        return self.compute_usd + self.tokens_usd + self.storage_usd


def cost_of(prices: PriceTable, profile: Profile, *, episodes: float = 1, host: str | None = None,
            replica_s: float | None = None, input_tokens: float | None = None,
            output_tokens: float | None = None, bytes_written: float | None = None) -> Cost:
    """The cost of ``episodes`` episodes of ``profile`` (or of the given totals) on a host of ``prices``.

    Totals default to ``episodes`` times the profile's per-episode means; the density is always the
    profile's. A replica that needs more than a whole host pays the whole host (density 1). A profile
    whose model has no price costs no tokens.

    Raises:
        ConfigError: if the table has no host ``host``.

    >>> prices = PriceTable(default_host="h", hosts=[HostPrice(instance="h", vcpus=4, memory_gib=16,
    ...                     usd_per_hour=3.6)])
    >>> cost_of(prices, Profile(cores=0.3, mem_mib=100, replica_s=100)).total_usd
    0.01
    """
    h = prices.host(host)
    d = density(h.vcpus, h.memory_gib, profile)
    rs = episodes * profile.replica_s if replica_s is None else replica_s
    tin = episodes * profile.input_tokens if input_tokens is None else input_tokens
    tout = episodes * profile.output_tokens if output_tokens is None else output_tokens
    nbytes = episodes * profile.bytes if bytes_written is None else bytes_written
    model = prices.model(profile.model)
    tokens = (tin * model.usd_per_million_input + tout * model.usd_per_million_output) / 1e6 if model else 0.0
    storage = nbytes * prices.storage.usd_per_byte if prices.storage else 0.0
    return Cost(rs * usd_per_replica_second(h, max(d.replicas, 1)), tokens, storage)


def episode_profile(cpu_s: float | None, replica_s: float, mem_mib: float | None,
                    base: Profile = DEFAULT_PROFILE) -> Profile:
    """One episode's own profile from its accounting; ``base``'s figures where it has none.

    >>> episode_profile(5.0, 10.0, 80.0).cores, episode_profile(None, 10.0, None).cores
    (0.5, 0.01)
    """
    cores = base.cores if cpu_s is None or replica_s <= 0 else max(cpu_s / replica_s, MIN_CORES)
    mem = base.mem_mib if not mem_mib else mem_mib
    return base.model_copy(update={"cores": cores, "mem_mib": mem, "replica_s": replica_s,
                                   "source": "this episode's accounting" if cpu_s is not None else base.source})


@dataclass(frozen=True)
class FleetPlan:
    """A fleet sized for a number of replicas: hosts, packing and cost."""

    replicas: int
    host: str
    replicas_per_host: int
    hosts: int
    binding: str
    usd_per_replica_day: float
    usd_per_day: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def fleet(replicas: int, host: HostPrice, profile: Profile) -> FleetPlan:
    """Hosts for ``replicas`` replicas of ``profile``; every host is paid for, so the last one's spare
    slots are charged to the replicas that run.

    Raises:
        ValueError: if ``replicas`` < 1 or a host holds no replica.

    >>> f = fleet(1000, HostPrice(instance="h", vcpus=16, memory_gib=64, usd_per_hour=0.8064), DEFAULT_PROFILE)
    >>> f.replicas_per_host, f.hosts, f.binding, round(f.usd_per_replica_day, 4)
    (1076, 1, 'memory', 0.0194)
    """
    if replicas < 1:
        raise ValueError(f"replicas: expected >= 1, actual {replicas}")
    d = density(host.vcpus, host.memory_gib, profile)
    if d.replicas < 1:
        raise ValueError(f"a {host.vcpus:g} vCPU, {host.memory_gib:g} GiB host holds no replica "
                         f"({profile.mem_mib:.0f} MiB, {profile.cores:.3g} cores each)")
    hosts = math.ceil(replicas / d.replicas)
    day = replica_day_usd(host, replicas / hosts)
    return FleetPlan(replicas, host.instance, d.replicas, hosts, d.binding, day, day * replicas)


def _cited(source: str, retrieved: date | None) -> str:
    return (source or "source not given") + (f", read {retrieved.isoformat()}" if retrieved else "")


def assumptions(prices: PriceTable, profile: Profile, host: str | None = None) -> list[str]:
    """The model's inputs as sentences, for a report to print.

    Raises:
        ConfigError: if the table has no host ``host``.
    """
    h = prices.host(host)
    d = density(h.vcpus, h.memory_gib, profile)
    where = ", ".join(p for p in (h.provider, h.region) if p)
    lines = [
        f"Host: {h.instance} ({where}): {h.vcpus:g} vCPU, {h.memory_gib:g} GiB, {usd(h.usd_per_hour)}/hour "
        f"({_cited(h.source, h.retrieved)}).",
        f"Replica: {profile.cores:.3g} cores while leased, {profile.mem_mib:.0f} MiB "
        f"({profile.source or 'no source'}).",
        f"Density: {d.replicas:,} replicas per host ({d.binding} binds; CPU planned to {CPU_TARGET:.0%} of the "
        f"cores, {RESERVE_GIB:g} GiB kept for the host): {usd(replica_day_usd(h, d.replicas)) if d.replicas else '–'}"
        " per replica-day.",
    ]
    model = prices.model(profile.model)
    if model:
        lines.append(f"Model {model.name}: {usd(model.usd_per_million_input)} / {usd(model.usd_per_million_output)} "
                     f"per million input / output tokens ({_cited(model.source, model.retrieved)}).")
    elif profile.input_tokens or profile.output_tokens:
        lines.append(f"Model tokens not costed: the price table has no entry for model {profile.model!r}.")
    if prices.storage:
        s = prices.storage
        lines.append(f"Storage: {usd(s.usd_per_gib_month)} per GiB-month for {s.months:g} month(s) "
                     f"({_cited(s.source, s.retrieved)}).")
    lines.append("Hosts are assumed fully packed; warm spares, network transfer and the model's own hardware are "
                 "not included.")
    return lines


def usd(value: float) -> str:
    """Dollars for people: cents from a dollar up, 4 significant digits below, never exponent notation.

    >>> usd(1234.5), usd(0.8064), usd(0.0193536), usd(0.0000667), usd(0.5), usd(0)
    ('$1,234.50', '$0.8064', '$0.01935', '$0.0000667', '$0.50', '$0')
    """
    if value == 0:
        return "$0"
    if abs(value) >= 1:
        return f"${value:,.2f}"
    digits = max(2, 3 - math.floor(math.log10(abs(value))))
    text = f"{value:.{digits}f}"
    while text.endswith("0") and len(text.partition(".")[2]) > 2:
        text = text[:-1]
    return f"${text}"
