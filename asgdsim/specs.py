"""The parts a scenario is built from: quantities, GPUs, links, models and
time laws, each an immutable spec validated once.

Catalog entries and a scenario's inline specs go through the same types, so
they are checked the same way. The cost model (:mod:`asgdsim.compute`,
:mod:`asgdsim.costs`) reads these specs and nothing of the scenario loader;
:mod:`asgdsim.scenario` assembles them into a :class:`~asgdsim.scenario.Scenario`.
"""

from __future__ import annotations

import math
from functools import cache, cached_property
from typing import Annotated, Any, Literal

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag, field_validator,
                      model_validator)

from . import catalog, zoo
from .layers import Layer, LayerError, compile_layers
from .units import parse_quantity

__all__ = ["Bytes", "BytesPerSecond", "Count", "Flop", "FlopPerSecond", "GpuSpec", "JitterSpec",
           "LAWS", "LawSpec", "Link", "LinkSpec", "ModelSpec", "Seconds", "SecondsOrZero", "VggFamily",
           "catalog_model"]


def _quantity(dimension: str):
    # a scenario asgdsim resolved (validated with context {"resolved": True})
    # holds plain base units, however small
    return BeforeValidator(lambda v, info: parse_quantity(
        v, dimension, resolved=bool((info.context or {}).get("resolved"))))


def _not_bool(value: Any) -> Any:
    # YAML's true is 1 to pydantic's float: a number written as a word is a mistake
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {str(value).lower()}")
    return value


#: on a plain number: refuses true and false
NOT_BOOL = BeforeValidator(_not_bool)

Seconds = Annotated[float, _quantity("time"), Field(gt=0, allow_inf_nan=False)]
SecondsOrZero = Annotated[float, _quantity("time"), Field(ge=0, allow_inf_nan=False)]
Bytes = Annotated[float, _quantity("bytes"), Field(gt=0, allow_inf_nan=False)]
BytesPerSecond = Annotated[float, _quantity("bandwidth"), Field(gt=0, allow_inf_nan=False)]
FlopPerSecond = Annotated[float, _quantity("flop_rate"), Field(gt=0, allow_inf_nan=False)]
Flop = Annotated[float, _quantity("flops"), Field(gt=0, allow_inf_nan=False)]
#: a whole number of things, up to 2^53 (past it a float no longer holds
#: it, and integers of hundreds of digits overflowed the arithmetic)
Count = Annotated[int, Field(gt=0, le=2**53, strict=True)]
#: steps between two exchanges (local SGD's period, Downpour's n_fetch and
#: n_push) or parts of a thing (shards, a block's convolutions): bounded,
#: as each is walked or held one by one (a period of 10^8 took 9 GB)
MAX_STEPS_BETWEEN, MAX_PARTS = 1_000, 4_096
StepsBetween = Annotated[int, Field(gt=0, le=MAX_STEPS_BETWEEN, strict=True)]
Parts = Annotated[int, Field(gt=0, le=MAX_PARTS, strict=True)]
#: an input's channels or side: at most a million (a side of 10^200 overflowed)
Extent = Annotated[int, Field(gt=0, le=1_000_000, strict=True)]


class _Spec(BaseModel):
    """Immutable, and a misspelt key is an error rather than ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _from_catalog(kind: str):
    def resolve(value: Any) -> Any:
        if isinstance(value, str):
            return catalog.lookup(kind, value)
        return value
    return BeforeValidator(resolve)


class LinkSpec(_Spec):
    """A link: data rate per direction and one-way latency.

    GPU collectives (NCCL rings) reach only part of a link's rate, and their
    per-step latency is not a message's: ``collective_efficiency`` and
    ``collective_latency``, fitted to public NCCL measurements where there
    are some, describe the link as a collective sees it
    (:meth:`for_collectives`). Point-to-point transfers never read them."""

    name: str
    bandwidth: BytesPerSecond
    latency: SecondsOrZero = 0.0
    #: the fraction of ``bandwidth`` a GPU collective achieves on this link
    collective_efficiency: Annotated[float, NOT_BOOL, Field(gt=0, le=1, allow_inf_nan=False)] = 1.0
    #: one step of a GPU collective over this link (default: ``latency``)
    collective_latency: SecondsOrZero | None = None
    source: str = "inline"

    def for_collectives(self, ports: int = 1) -> LinkSpec:
        """The link as a GPU collective sees it, over ``ports`` of them
        striped together: the achieved rate and the per-step latency."""
        latency = self.latency if self.collective_latency is None else self.collective_latency
        return self.model_copy(update={
            "name": self.name if ports == 1 else f"{self.name} x {ports}",
            "bandwidth": ports * self.collective_efficiency * self.bandwidth,
            "latency": latency, "collective_efficiency": 1.0, "collective_latency": None})


Link = Annotated[LinkSpec, _from_catalog("networks")]


class GpuSpec(_Spec):
    """One learner device's peaks (FP32 unless named) and its host link."""

    name: str
    #: what its kernels are priced like (compute.py); left out: like Pascal
    architecture: Annotated[Literal["kepler", "maxwell", "pascal", "volta", "ampere", "ada",
                                    "hopper", "blackwell", "unknown"],
                            BeforeValidator(lambda v: v.lower() if isinstance(v, str) else v)
                            ] = "unknown"
    peak_flops: FlopPerSecond
    peak_fp16_flops: FlopPerSecond | None = None
    peak_tensor_flops: FlopPerSecond | None = None
    memory_bandwidth: BytesPerSecond
    #: what a STREAM triad reaches in its memory, where one was measured
    stream_bandwidth: BytesPerSecond | None = None
    stream_source: str | None = None
    memory: Bytes | None = None
    host_link: Link
    #: the GPU whose kernel tables and fits price this one: the same die
    #: with more memory (V100 32 GB is a V100) or other clocks (the PCIe
    #: P100), its measured kernels carried over by the roofline's ratio
    #: between the two (their peaks and STREAM rates); none: its own name
    priced_as: str | None = None
    source: str = "inline"

    @model_validator(mode="after")
    def _triad_within_peak(self) -> GpuSpec:
        if self.stream_bandwidth is not None and self.stream_bandwidth > self.memory_bandwidth:
            raise ValueError(f"stream_bandwidth ({self.stream_bandwidth / 1e9:.4g} GB/s) is what a "
                             "STREAM triad reaches: it cannot exceed memory_bandwidth "
                             f"({self.memory_bandwidth / 1e9:.4g} GB/s)")
        return self

    @property
    def kernels_of(self) -> str:
        """The name the kernel tables know this GPU's kernels under."""
        return self.priced_as or self.name


class VggFamily(_Spec):
    """The VGG-like networks of Oyama et al., written compactly."""

    convs_per_block: tuple[Parts, ...]
    channels: tuple[Count, ...]
    pool_stride: Count = 2
    fc: tuple[Count, ...] = (4096, 4096)
    classes: Count = 1000
    kernel: Count = 3

    @model_validator(mode="after")
    def _one_width_per_block(self) -> VggFamily:
        if len(self.convs_per_block) != len(self.channels):
            raise ValueError("convs_per_block and channels need one entry per block")
        return self


class ModelSpec(_Spec):
    """A network: its layers (from which size and FLOPs follow), or only its
    totals when the layers are unknown (the cost model then prices the whole
    network at once)."""

    name: str
    input_shape: tuple[Extent, Extent, Extent] = (3, 224, 224)
    layers: tuple[dict, ...] | None = None
    parameters: Annotated[int, Field(gt=0, le=10**15, strict=True)] | None = None
    forward_flops: Flop | None = None
    source: str = "inline"

    @model_validator(mode="before")
    @classmethod
    def _expand_family(cls, data: Any) -> Any:
        if isinstance(data, dict) and "vgg" in data:
            data = dict(data)
            family = VggFamily.model_validate(data.pop("vgg"))
            if "layers" in data:
                raise ValueError("give either vgg or layers, not both")
            data["layers"] = zoo.vgg_like(**family.model_dump())
            # a member of the family is named by its blocks unless the user names it
            data.setdefault("name", "vgg-" + "-".join(map(str, family.convs_per_block)))
        return data

    @model_validator(mode="after")
    def _totals_follow_from_layers(self) -> ModelSpec:
        if self.layers is None:
            if self.parameters is None or self.forward_flops is None:
                raise ValueError("a model needs layers, vgg, or parameters and forward_flops")
            return self
        try:
            graph = compile_layers(list(self.layers), self.input_shape)
        except LayerError as exc:
            raise ValueError(str(exc)) from None
        parameters = sum(layer.params for layer in graph)
        if self.parameters is not None and self.parameters != parameters:
            raise ValueError(f"parameters {self.parameters} differ from the {parameters} "
                             "of the layers")
        # frozen model: fill the totals once, here, where they are derived
        object.__setattr__(self, "parameters", parameters)
        object.__setattr__(self, "forward_flops", sum(layer.flops for layer in graph))
        return self

    @cached_property
    def graph(self) -> list[Layer] | None:
        """The compiled layers, or None for a model given by its totals."""
        return None if self.layers is None else compile_layers(list(self.layers), self.input_shape)


def catalog_model(name: str) -> ModelSpec:
    """A catalog network, with its layers from the zoo if it is a shipped one."""
    return _catalog_model(name, catalog.fingerprint())


@cache
def _catalog_model(name: str, fingerprint: tuple[str, int]) -> ModelSpec:
    entry = catalog.lookup("models", name)
    builder = zoo.BUILDERS.get(entry["name"])
    if builder is not None and "layers" not in entry:
        entry["layers"] = builder()
    return ModelSpec.model_validate(entry)


def _model(value: Any) -> Any:
    return catalog_model(value) if isinstance(value, str) else value


#: the compute-time laws a scenario may name, and the parameters each one takes
LAWS: dict[str, tuple[set[str], set[str]]] = {
    # name: (required besides mean, optional)
    "deterministic": (set(), set()),
    "exponential": (set(), set()),
    "shifted-exponential": ({"shift"}, set()),
    "uniform": ({"cv"}, set()),
    "gamma": (set(), {"cv", "shape"}),
    "lognormal": (set(), {"cv", "shape"}),
}


#: the widest lognormal law a step may take (cv about 2,980: a draw in a
#: million is then 10^8 means)
MAX_LOGNORMAL_SIGMA = 4.0
#: the widest gamma law a step may take (shape 0.04; at cv 10 one draw in 1,400 is 0 s)
MAX_GAMMA_CV = 5.0


class LawSpec(_Spec):
    """A distribution given by its mean plus cv, shape or shift as fits."""

    distribution: str
    mean: Seconds
    cv: Annotated[float, NOT_BOOL, Field(ge=0, allow_inf_nan=False)] | None = None
    shape: Annotated[float, NOT_BOOL, Field(gt=0, allow_inf_nan=False)] | None = None
    shift: SecondsOrZero | None = None

    @field_validator("distribution")
    @classmethod
    def _known(cls, name: str) -> str:
        if name not in LAWS:
            raise ValueError(f"unknown distribution {name!r}; expected one of {', '.join(LAWS)}")
        return name

    @model_validator(mode="after")
    def _parameters_fit(self) -> LawSpec:
        required, optional = LAWS[self.distribution]
        given = {k for k in ("cv", "shape", "shift") if getattr(self, k) is not None}
        if missing := required - given:
            raise ValueError(f"{self.distribution} needs {', '.join(sorted(missing))} besides mean")
        if extra := given - required - optional:
            raise ValueError(f"{self.distribution} takes no {', '.join(sorted(extra))}")
        if self.distribution in ("gamma", "lognormal") and len(given) != 1:
            raise ValueError(f"{self.distribution} needs exactly one of cv or shape besides mean")
        if self.distribution in ("gamma", "lognormal") and self.cv == 0:
            raise ValueError(f"{self.distribution} needs cv > 0 (use deterministic for cv 0)")
        if self.distribution == "lognormal" and (
                self.shape if self.shape is not None else math.sqrt(math.log1p(self.cv**2))) \
                > MAX_LOGNORMAL_SIGMA:
            # its variance is e^(sigma^2): sigma 1000 overflowed
            raise ValueError(f"lognormal shape (sigma) must be at most {MAX_LOGNORMAL_SIGMA:g} "
                             f"(cv {math.sqrt(math.expm1(MAX_LOGNORMAL_SIGMA**2)):,.0f})")
        if self.shift is not None and self.shift >= self.mean:
            raise ValueError("shift must be smaller than mean")
        if self.distribution == "gamma" and (self.cv or 0) > MAX_GAMMA_CV or \
                self.distribution == "gamma" and self.shape is not None and \
                self.shape < 1 / MAX_GAMMA_CV**2:
            # shape 1 / cv^2: at cv 50 every draw underflows to a step of 0 s
            raise ValueError(f"gamma cv must be at most {MAX_GAMMA_CV:g} (shape at least "
                             f"{1 / MAX_GAMMA_CV**2:g}): wider, steps come out 0 s")
        if self.distribution == "uniform" and self.cv > 1 / math.sqrt(3):
            raise ValueError("uniform cv must be at most 1/sqrt(3) = 0.577 for non-negative times")
        return self


class EmpiricalSpec(_Spec):
    """Measured step times replayed: a CSV with a column ``step_s``
    (``asgdsim profile --steps`` writes one); see :mod:`asgdsim.measured`."""

    empirical: str

    @field_validator("empirical")
    @classmethod
    def _readable(cls, path: str) -> str:
        from .measured import read_steps

        read_steps(path)
        return path


#: a step law: a distribution, or measured steps replayed
StepLawSpec = Annotated[
    Annotated[LawSpec, Tag("law")] | Annotated[EmpiricalSpec, Tag("empirical")],
    Discriminator(lambda v: "empirical" if isinstance(v, EmpiricalSpec)
                  or (isinstance(v, dict) and "empirical" in v) else "law"),
]


class JitterSpec(LawSpec):
    """A multiplicative noise law on a modelled step time, of mean 1: it
    spreads the step the kernel model prices, never scales it."""

    mean: Annotated[float, NOT_BOOL, Field(gt=0, allow_inf_nan=False)] = 1.0

    @field_validator("mean")
    @classmethod
    def _one(cls, mean: float) -> float:
        if mean != 1.0:
            raise ValueError(
                f"a jitter multiplies each modelled step and has mean 1, got {mean:g}; leave "
                "mean out, and slow the steps with faults.slow_learners (or give "
                "timing.compute a law of its own mean)")
        return mean
