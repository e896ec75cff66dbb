"""The networks of two training studies in plain PyTorch (random weights, nothing downloaded).

* ``resnet34``: the ResNet-34 of He et al. (basic blocks [3, 4, 6, 3], widths 64-512), as
  torchvision builds it (torchvision does not import with CPU-only PyTorch builds here); the ResNet
  study fed it 1×148×197 spectrograms in 9 classes. 21,797,672 parameters with 3 channels and 1,000
  classes (torchvision's count).
* ``cnn``: the TF/Keras study's CNN on 50×50×1 inputs: Conv2D 32 (3×3) → Conv2D 64 (3×3) → MaxPool 2
  → Dropout → Dense 128 → Dropout → Dense 1, "valid" padding as Keras: 4,352,641 parameters.
* ``mlp``: its pyramid of 1-3 hidden Dense layers (ReLU) of widths 50 to 25,600 on 50 inputs, then
  Dense 1: [50] has 2,601 parameters, [6400, 3200, 1664] 26,137,729.

torch is imported inside the builders: importing this module costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

RESNET34_BLOCKS = (3, 4, 6, 3)
RESNET_WIDTHS = (64, 128, 256, 512)


@dataclass(frozen=True)
class ModelSpec:
    """A network and the input it takes: ``input_shape`` per sample (channels, height, width) or
    (features,); ``outputs`` classes (1: a regression/binary output, loss MSE)."""

    name: str
    input_shape: tuple[int, ...]
    outputs: int


def parameters(model: Any) -> int:
    """Trainable parameters (what Keras' summary and torchvision count)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def _residual() -> type:
    import torch

    class BasicBlock(torch.nn.Module):
        """Two 3×3 convolutions with batch norm, the input added back (through a 1×1 projection
        when the shape changes)."""

        def __init__(self, inputs: int, width: int, stride: int) -> None:
            super().__init__()
            nn = torch.nn
            self.body = nn.Sequential(
                nn.Conv2d(inputs, width, 3, stride, 1, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(inplace=True),
                nn.Conv2d(width, width, 3, 1, 1, bias=False),
                nn.BatchNorm2d(width),
            )
            self.shortcut = (
                nn.Sequential(nn.Conv2d(inputs, width, 1, stride, bias=False), nn.BatchNorm2d(width))
                if stride != 1 or inputs != width
                else nn.Identity()
            )
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x: Any) -> Any:
            return self.relu(self.body(x) + self.shortcut(x))

    return BasicBlock


def resnet34(channels: int = 1, classes: int = 9) -> Any:
    """ResNet-34 for ``channels`` input planes and ``classes`` outputs."""
    import torch

    nn, block = torch.nn, _residual()
    layers: list[Any] = [
        nn.Conv2d(channels, 64, 7, 2, 3, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(3, 2, 1),
    ]
    inputs = 64
    for stage, (count, width) in enumerate(zip(RESNET34_BLOCKS, RESNET_WIDTHS)):
        for i in range(count):
            layers.append(block(inputs, width, 2 if i == 0 and stage > 0 else 1))
            inputs = width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes)]
    return nn.Sequential(*layers)


def cnn(size: int = 50, dropout: float = 0.25) -> Any:
    """The Keras study's CNN on ``size``×``size``×1 inputs."""
    import torch

    nn = torch.nn
    flat = 64 * ((size - 4) // 2) ** 2
    return nn.Sequential(
        nn.Conv2d(1, 32, 3),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Dropout(dropout),
        nn.Flatten(),
        nn.Linear(flat, 128),
        nn.ReLU(),
        nn.Dropout(2 * dropout),
        nn.Linear(128, 1),
    )


def mlp(hidden: tuple[int, ...] | list[int], inputs: int = 50) -> Any:
    """The Keras study's MLP: Dense layers of widths ``hidden`` (ReLU) on ``inputs`` features, then Dense 1."""
    import torch

    nn = torch.nn
    layers: list[Any] = []
    for width in hidden:
        layers += [nn.Linear(inputs, width), nn.ReLU()]
        inputs = width
    return nn.Sequential(*layers, nn.Linear(inputs, 1))


def build(name: str, **options: Any) -> tuple[Any, ModelSpec]:
    """A model by name ("resnet34", "cnn", "mlp") and the input it takes."""
    if name == "resnet34":
        channels, classes = options.get("channels", 1), options.get("classes", 9)
        height, width = options.get("height", 148), options.get("width", 197)
        return resnet34(channels, classes), ModelSpec(name, (channels, height, width), classes)
    if name == "cnn":
        size = options.get("size", 50)
        return cnn(size), ModelSpec(name, (1, size, size), 1)
    if name == "mlp":
        hidden = tuple(options.get("hidden", (50,)))
        return mlp(hidden), ModelSpec(f"mlp{list(hidden)}", (50,), 1)
    raise ValueError(f"unknown model {name!r}: choose resnet34, cnn or mlp")
