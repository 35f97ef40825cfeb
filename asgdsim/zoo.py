"""The model zoo: every catalog network as a layer description.

Each builder returns the list of layer mappings that :mod:`asgdsim.layers`
compiles. They follow the published definitions (torchvision where it has
the network, the Caffe prototxts and convnet-benchmarks otherwise), so the
parameter counts equal the published ones; ``vgg_like`` writes the VGG-like
family of Oyama et al. compactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

__all__ = ["BUILDERS", "vgg_like"]

RELU = {"act": "relu"}


def _conv_bn(out: int, kernel: int, stride: int = 1, pad: int = 0) -> list[dict]:
    """torchvision's BasicConv2d / ResNet conv: no bias, batch norm."""
    return [{"conv": out, "kernel": kernel, "stride": stride, "pad": pad, "bias": False},
            {"norm": "batch"}]


def alexnet() -> list[dict]:
    """torchvision AlexNet: the one-weird-trick widths 64-192-384-256-256."""
    return [
        {"conv": 64, "kernel": 11, "stride": 4, "pad": 2}, RELU,
        {"pool": "max", "kernel": 3, "stride": 2},
        {"conv": 192, "kernel": 5, "pad": 2}, RELU,
        {"pool": "max", "kernel": 3, "stride": 2},
        {"conv": 384, "kernel": 3, "pad": 1}, RELU,
        {"conv": 256, "kernel": 3, "pad": 1}, RELU,
        {"conv": 256, "kernel": 3, "pad": 1}, RELU,
        {"pool": "max", "kernel": 3, "stride": 2},
        {"dropout": 0.5}, {"fc": 4096}, RELU,
        {"dropout": 0.5}, {"fc": 4096}, RELU,
        {"fc": 1000},
    ]


def caffenet() -> list[dict]:
    """BVLC AlexNet (227 input, 96-256-384-384-256, two groups on conv2/4/5, LRN)."""
    return [
        {"conv": 96, "kernel": 11, "stride": 4}, RELU, {"norm": "lrn"},
        {"pool": "max", "kernel": 3, "stride": 2, "ceil": True},
        {"conv": 256, "kernel": 5, "pad": 2, "groups": 2}, RELU, {"norm": "lrn"},
        {"pool": "max", "kernel": 3, "stride": 2, "ceil": True},
        {"conv": 384, "kernel": 3, "pad": 1}, RELU,
        {"conv": 384, "kernel": 3, "pad": 1, "groups": 2}, RELU,
        {"conv": 256, "kernel": 3, "pad": 1, "groups": 2}, RELU,
        {"pool": "max", "kernel": 3, "stride": 2, "ceil": True},
        {"fc": 4096}, RELU, {"dropout": 0.5}, {"fc": 4096}, RELU, {"dropout": 0.5},
        {"fc": 1000},
    ]


def overfeat() -> list[dict]:
    """OverFeat 'fast' as in convnet-benchmarks (231 input)."""
    return [
        {"conv": 96, "kernel": 11, "stride": 4}, RELU, {"pool": "max", "kernel": 2, "stride": 2},
        {"conv": 256, "kernel": 5}, RELU, {"pool": "max", "kernel": 2, "stride": 2},
        {"conv": 512, "kernel": 3, "pad": 1}, RELU,
        {"conv": 1024, "kernel": 3, "pad": 1}, RELU,
        {"conv": 1024, "kernel": 3, "pad": 1}, RELU,
        {"pool": "max", "kernel": 2, "stride": 2},
        {"fc": 3072}, RELU, {"fc": 4096}, RELU, {"fc": 1000},
    ]


def vgg_like(convs_per_block: Sequence[int], channels: Sequence[int], pool_stride: int = 2,
             fc: Sequence[int] = (4096, 4096), classes: int = 1000, kernel: int = 3) -> list[dict]:
    """The VGG-like family: blocks of 3x3 convolutions, each block ending in a
    max pool, then fully connected layers."""
    layers: list[dict] = []
    for count, width in zip(convs_per_block, channels, strict=True):
        for _ in range(count):
            layers += [{"conv": width, "kernel": kernel, "pad": kernel // 2}, RELU]
        layers.append({"pool": "max", "kernel": pool_stride, "stride": pool_stride})
    for width in fc:
        layers += [{"fc": width}, RELU, {"dropout": 0.5}]
    return layers + [{"fc": classes}]


def _vgg(convs_per_block: Sequence[int]) -> Callable[[], list[dict]]:
    return lambda: vgg_like(convs_per_block, (64, 128, 256, 512, 512))


def _inception(c1: int, c3r: int, c3: int, c5r: int, c5: int, proj: int) -> dict:
    # torchvision's GoogLeNet uses a 3x3 kernel in the "5x5" branch
    return {"concat": [
        _conv_bn(c1, 1) + [RELU],
        _conv_bn(c3r, 1) + [RELU] + _conv_bn(c3, 3, pad=1) + [RELU],
        _conv_bn(c5r, 1) + [RELU] + _conv_bn(c5, 3, pad=1) + [RELU],
        [{"pool": "max", "kernel": 3, "stride": 1, "pad": 1, "ceil": True}] + _conv_bn(proj, 1) + [RELU],
    ]}


def googlenet() -> list[dict]:
    """torchvision GoogLeNet (Inception v1 with batch norm, no auxiliary heads)."""
    pool = {"pool": "max", "kernel": 3, "stride": 2, "ceil": True}
    return (_conv_bn(64, 7, 2, 3) + [RELU, pool] + _conv_bn(64, 1) + [RELU]
            + _conv_bn(192, 3, pad=1) + [RELU, pool,
            _inception(64, 96, 128, 16, 32, 32), _inception(128, 128, 192, 32, 96, 64), pool,
            _inception(192, 96, 208, 16, 48, 64), _inception(160, 112, 224, 24, 64, 64),
            _inception(128, 128, 256, 24, 64, 64), _inception(112, 144, 288, 32, 64, 64),
            _inception(256, 160, 320, 32, 128, 128),
            {"pool": "max", "kernel": 2, "stride": 2, "ceil": True},
            _inception(256, 160, 320, 32, 128, 128), _inception(384, 192, 384, 48, 128, 128),
            {"pool": "avg", "global": True}, {"dropout": 0.2}, {"fc": 1000}])


def _resnet(blocks: Sequence[int], bottleneck: bool) -> Callable[[], list[dict]]:
    """torchvision ResNet (v1.5: a bottleneck's stride sits on its 3x3)."""
    def build() -> list[dict]:
        layers = _conv_bn(64, 7, 2, 3) + [RELU, {"pool": "max", "kernel": 3, "stride": 2, "pad": 1}]
        expansion = 4 if bottleneck else 1
        in_channels = 64
        for stage, (count, width) in enumerate(zip(blocks, (64, 128, 256, 512))):
            for b in range(count):
                stride = 2 if stage > 0 and b == 0 else 1
                out = width * expansion
                if bottleneck:
                    branch = (_conv_bn(width, 1) + [RELU] + _conv_bn(width, 3, stride, 1) + [RELU]
                              + _conv_bn(out, 1))
                else:
                    branch = _conv_bn(width, 3, stride, 1) + [RELU] + _conv_bn(width, 3, 1, 1)
                shortcut = _conv_bn(out, 1, stride) if stride != 1 or in_channels != out else []
                layers += [{"residual": branch, "shortcut": shortcut}, RELU]
                in_channels = out
        return layers + [{"pool": "avg", "global": True}, {"fc": 1000}]
    return build


def _cbr(out: int, kernel, stride: int = 1, pad=0) -> list[dict]:
    """A BasicConv2d of torchvision's Inception v3: convolution, batch norm, ReLU."""
    return [{"conv": out, "kernel": kernel, "stride": stride, "pad": pad, "bias": False},
            {"norm": "batch"}, RELU]


def _avg_then(out: int) -> list[dict]:
    return [{"pool": "avg", "kernel": 3, "stride": 1, "pad": 1}] + _cbr(out, 1)


def inception_v3() -> list[dict]:
    """torchvision Inception3 at 299x299 without its auxiliary head (the head
    only trains, and tf_cnn_benchmarks' inception3 is timed without it)."""
    def a(pool_features: int) -> dict:
        return {"concat": [_cbr(64, 1), _cbr(48, 1) + _cbr(64, 5, pad=2),
                           _cbr(64, 1) + _cbr(96, 3, pad=1) + _cbr(96, 3, pad=1),
                           _avg_then(pool_features)]}

    def c(c7: int) -> dict:
        return {"concat": [
            _cbr(192, 1),
            _cbr(c7, 1) + _cbr(c7, (1, 7), pad=(0, 3)) + _cbr(192, (7, 1), pad=(3, 0)),
            _cbr(c7, 1) + _cbr(c7, (7, 1), pad=(3, 0)) + _cbr(c7, (1, 7), pad=(0, 3))
            + _cbr(c7, (7, 1), pad=(3, 0)) + _cbr(192, (1, 7), pad=(0, 3)),
            _avg_then(192)]}

    def split() -> dict:
        return {"concat": [_cbr(384, (1, 3), pad=(0, 1)), _cbr(384, (3, 1), pad=(1, 0))]}

    def e() -> dict:
        return {"concat": [_cbr(320, 1), _cbr(384, 1) + [split()],
                           _cbr(448, 1) + _cbr(384, 3, pad=1) + [split()], _avg_then(192)]}

    max3 = {"pool": "max", "kernel": 3, "stride": 2}
    b = {"concat": [_cbr(384, 3, 2), _cbr(64, 1) + _cbr(96, 3, pad=1) + _cbr(96, 3, 2), [max3]]}
    d = {"concat": [_cbr(192, 1) + _cbr(320, 3, 2),
                    _cbr(192, 1) + _cbr(192, (1, 7), pad=(0, 3)) + _cbr(192, (7, 1), pad=(3, 0))
                    + _cbr(192, 3, 2), [max3]]}
    return (_cbr(32, 3, 2) + _cbr(32, 3) + _cbr(64, 3, pad=1) + [max3] + _cbr(80, 1)
            + _cbr(192, 3) + [max3, a(32), a(64), a(64), b, c(128), c(160), c(160), c(192), d,
                              e(), e(), {"pool": "avg", "global": True}, {"dropout": 0.5},
                              {"fc": 1000}])


#: catalog model name -> builder of its layer description
BUILDERS: dict[str, Callable[[], list[dict]]] = {
    "alexnet": alexnet,
    "caffenet": caffenet,
    "overfeat": overfeat,
    "vgg11": _vgg((1, 1, 2, 2, 2)),
    "vgg16": _vgg((2, 2, 3, 3, 3)),
    "vgg19": _vgg((2, 2, 4, 4, 4)),
    "googlenet": googlenet,
    "inception3": inception_v3,
    "resnet18": _resnet((2, 2, 2, 2), bottleneck=False),
    "resnet34": _resnet((3, 4, 6, 3), bottleneck=False),
    "resnet50": _resnet((3, 4, 6, 3), bottleneck=True),
    "resnet101": _resnet((3, 4, 23, 3), bottleneck=True),
    "resnet152": _resnet((3, 8, 36, 3), bottleneck=True),
}
