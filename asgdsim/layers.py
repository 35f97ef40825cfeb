"""Networks as layer graphs: shapes, parameters and FLOPs from a description.

A network is described as a list of plain mappings, one per layer, the same
whether it comes from the model zoo or from a user's scenario::

    {conv: 64, kernel: 3, pad: 1}            # out channels, kernel, stride, pad, groups, bias
    {pool: max, kernel: 2, stride: 2}        # max or avg; ceil: true for Caffe rounding
    {pool: avg, global: true}                # global average pool
    {fc: 4096}                               # fully connected (flattens its input)
    {norm: batch} / {norm: lrn}              # batch normalisation, local response norm.
    {act: relu}                              # activation
    {dropout: 0.5}
    {concat: [[...layers...], [...]]}        # Inception: branches on one input, channels joined
    {residual: [...layers...], shortcut: [...layers...]}   # ResNet: branch + shortcut, added

:func:`compile_layers` walks the description from the input shape and returns
flat :class:`Layer` records (branches in order: on one GPU they run one after
another), each with its input and output shape, parameters and forward FLOPs
per sample. The cost model prices these records one by one.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any

__all__ = ["Layer", "LayerError", "compile_layers"]

Shape = tuple[int, int, int]


class LayerError(ValueError):
    """A layer description that does not fit its input or is malformed."""


@dataclass(frozen=True)
class Layer:
    name: str
    op: str                      # conv, fc, pool, norm, lrn, act, dropout, add, concat
    in_shape: Shape
    out_shape: Shape
    params: int
    flops: float                 # forward, per sample (a multiply-add is 2)
    kernel: tuple[int, int] = (1, 1)
    stride: int = 1
    pad: tuple[int, int] = (0, 0)
    groups: int = 1

    @property
    def in_values(self) -> int:
        return math.prod(self.in_shape)

    @property
    def out_values(self) -> int:
        return math.prod(self.out_shape)

    @property
    def tensors(self) -> tuple[int, ...]:
        """Its parameters as a framework keeps them: a convolution's or fully
        connected layer's weights, then its bias where it has one; a
        normalisation's as one."""
        if self.op == "conv":
            weights = self.out_shape[0] * (self.in_shape[0] // self.groups) * math.prod(self.kernel)
        elif self.op == "fc":
            weights = self.in_values * self.out_values
        else:
            return (self.params,) if self.params else ()
        return (weights, self.params - weights) if self.params > weights else (weights,)


def _pair(value: Any, what: str, least: int = 0) -> tuple[int, int]:
    """An integer or a pair of them, each at least ``least`` (a kernel's
    side 1: a kernel of 0 is a convolution without weights)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= least:
        return value, value
    if (isinstance(value, (list, tuple)) and len(value) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= least for v in value)):
        return int(value[0]), int(value[1])
    kind = "non-negative" if least == 0 else "positive" if least == 1 else f"at least {least}"
    raise LayerError(f"{what} must be a {kind} integer or a pair of them, got {value!r}")


def _flag(spec: dict, key: str, default: bool) -> bool:
    """A yes-or-no key: true or false, not a word ('no' is a true string)."""
    value = spec.get(key, default)
    if not isinstance(value, bool):
        raise LayerError(f"{key} must be true or false, got {value!r}")
    return value


#: the activations a layer may name (PyTorch's and Keras's): each is one pass
#: over its tensor, priced alike, so the name only catches a typo
ACTIVATIONS = ("relu", "relu6", "leaky_relu", "prelu", "rrelu", "elu", "selu", "celu", "gelu",
               "silu", "swish", "hardswish", "mish", "sigmoid", "hardsigmoid", "logsigmoid",
               "tanh", "hardtanh", "tanhshrink", "softplus", "softsign", "softmax",
               "log_softmax", "softmin", "glu", "exponential", "linear", "identity")


def _positive(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise LayerError(f"{what} must be a positive integer, got {value!r}")
    return value


_KEYS = {
    "conv": {"conv", "kernel", "stride", "pad", "groups", "bias", "name"},
    "pool": {"pool", "kernel", "stride", "pad", "ceil", "global", "name"},
    "fc": {"fc", "bias", "name"},
    "norm": {"norm", "name"},
    "act": {"act", "name"},
    "dropout": {"dropout", "name"},
    "concat": {"concat", "name"},
    "residual": {"residual", "shortcut", "name"},
}


class _Compiler:
    def __init__(self) -> None:
        self.layers: list[Layer] = []
        self._counts: dict[str, int] = {}

    def add(self, name: str, op: str, x: Shape, y: Shape, params: int = 0, flops: float = 0.0,
            **geometry: Any) -> Shape:
        self.layers.append(Layer(name, op, x, y, params, float(flops), **geometry))
        return y

    def run(self, description: list, x: Shape, prefix: str) -> Shape:
        if not isinstance(description, (list, tuple)):
            raise LayerError(f"{prefix or 'layers'}: expected a list of layers")
        for i, spec in enumerate(description):
            where = f"{prefix}{i}"
            if not isinstance(spec, dict):
                raise LayerError(f"layer {where}: expected a mapping such as {{conv: 64, kernel: 3}}")
            kinds = [k for k in _KEYS if k in spec]
            if len(kinds) != 1:
                raise LayerError(f"layer {where}: expected exactly one of {', '.join(_KEYS)}")
            kind = kinds[0]
            if extra := set(spec) - _KEYS[kind]:
                raise LayerError(f"layer {where} ({kind}): unknown keys {', '.join(sorted(extra))}; "
                                 f"expected {', '.join(sorted(_KEYS[kind]))}")
            self._counts[kind] = self._counts.get(kind, 0) + 1
            name = str(spec.get("name", f"{kind}{self._counts[kind]}"))
            try:
                x = getattr(self, "_" + kind)(spec, x, name, where)
            except LayerError as exc:
                raise LayerError(f"layer {where} ({kind}): {exc}") from None
            if min(x) <= 0:
                raise LayerError(f"layer {where} ({kind}): output shape {x} is empty; "
                                 "the input is too small for it")
        return x

    def _conv(self, s: dict, x: Shape, name: str, where: str) -> Shape:
        c, h, w = x
        k = _positive(s["conv"], "conv (output channels)")
        kh, kw = _pair(s.get("kernel", 1), "kernel", least=1)
        sh = _positive(s.get("stride", 1), "stride")
        ph, pw = _pair(s.get("pad", 0), "pad")
        g = _positive(s.get("groups", 1), "groups")
        if c % g or k % g:
            raise LayerError(f"groups {g} must divide input channels {c} and output channels {k}")
        ho, wo = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sh + 1
        weights = k * (c // g) * kh * kw
        params = weights + (k if _flag(s, "bias", True) else 0)
        return self.add(name, "conv", x, (k, ho, wo), params, 2.0 * weights * ho * wo,
                        kernel=(kh, kw), stride=sh, pad=(ph, pw), groups=g)

    def _pool(self, s: dict, x: Shape, name: str, where: str) -> Shape:
        c, h, w = x
        if s["pool"] not in ("max", "avg"):
            raise LayerError(f"pool must be max or avg, got {s['pool']!r}")
        if _flag(s, "global", False):
            return self.add(name, "pool", x, (c, 1, 1), 0, c * h * w, kernel=(h, w), stride=h)
        kh, kw = _pair(s.get("kernel", 2), "kernel", least=1)
        sh = _positive(s.get("stride", kh), "stride")
        ph, pw = _pair(s.get("pad", 0), "pad")
        rounding = math.ceil if _flag(s, "ceil", False) else math.floor
        ho = rounding((h + 2 * ph - kh) / sh) + 1
        wo = rounding((w + 2 * pw - kw) / sh) + 1
        if _flag(s, "ceil", False):
            # a window that would start in the padding is dropped (Caffe, PyTorch)
            ho -= (ho - 1) * sh >= h + ph
            wo -= (wo - 1) * sh >= w + pw
        return self.add(name, "pool", x, (c, ho, wo), 0, c * ho * wo * kh * kw,
                        kernel=(kh, kw), stride=sh, pad=(ph, pw))

    def _fc(self, s: dict, x: Shape, name: str, where: str) -> Shape:
        n_in, n_out = math.prod(x), _positive(s["fc"], "fc (outputs)")
        params = n_in * n_out + (n_out if _flag(s, "bias", True) else 0)
        return self.add(name, "fc", x, (n_out, 1, 1), params, 2.0 * n_in * n_out)

    def _norm(self, s: dict, x: Shape, name: str, where: str) -> Shape:
        if s["norm"] == "batch":
            return self.add(name, "norm", x, x, 2 * x[0], 4.0 * math.prod(x))
        if s["norm"] == "lrn":
            return self.add(name, "lrn", x, x, 0, 10.0 * math.prod(x))
        raise LayerError(f"norm must be batch or lrn, got {s['norm']!r}")

    def _act(self, s: dict, x: Shape, name: str, where: str) -> Shape:
        if s["act"] not in ACTIVATIONS:
            near = difflib.get_close_matches(str(s["act"]).lower(), ACTIVATIONS, n=2)
            hint = f" (did you mean {' or '.join(near)}?)" if near else ""
            raise LayerError(f"act {s['act']!r} is no activation asgdsim knows{hint}; expected "
                             f"one of {', '.join(ACTIVATIONS)}")
        return self.add(name, "act", x, x, 0, float(math.prod(x)))

    def _dropout(self, s: dict, x: Shape, name: str, where: str) -> Shape:
        rate = s["dropout"]
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate < 1:
            raise LayerError(f"dropout must be a rate from 0 up to (not including) 1, got {rate!r}")
        return self.add(name, "dropout", x, x, 0, float(math.prod(x)))

    def _concat(self, s: dict, x: Shape, name: str, where: str) -> Shape:
        branches = s["concat"]
        if not isinstance(branches, (list, tuple)) or not branches:
            raise LayerError("concat needs a list of branches, each a list of layers")
        outs = [self.run(branch, x, f"{where}.{b}.") for b, branch in enumerate(branches)]
        if len({o[1:] for o in outs}) != 1:
            raise LayerError(f"branches end in different spatial sizes {[o[1:] for o in outs]}")
        y = (sum(o[0] for o in outs), *outs[0][1:])
        return self.add(name, "concat", x, y, 0, 0.0)

    def _residual(self, s: dict, x: Shape, name: str, where: str) -> Shape:
        y = self.run(s["residual"], x, f"{where}.r.")
        shortcut = self.run(s.get("shortcut", []), x, f"{where}.s.")
        if y != shortcut:
            raise LayerError(f"residual branch ends in {y} but the shortcut in {shortcut}")
        return self.add(name, "add", y, y, 0, float(math.prod(y)))


def compile_layers(description: list, input_shape: Shape) -> list[Layer]:
    """Flat layer records of a described network on ``input_shape`` (C, H, W)."""
    if isinstance(description, (list, tuple)) and not description:
        raise LayerError("layers: expected at least one layer, got an empty list")
    compiler = _Compiler()
    compiler.run(description, tuple(input_shape), "")
    if not any(layer.params for layer in compiler.layers):
        # nothing to train: no gradient to send, and a step of no FLOPs divides by zero
        raise LayerError("layers: expected at least one layer with weights (conv, fc or norm)")
    return compiler.layers
