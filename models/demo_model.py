# expect: graphs-after: 1
# expect: outputs: identical
# expect: stdout: identical
# expect: logs: identical
# expect: warnings: identical
"""graphmend's demo model: a tiny gated classifier whose forward prints, logs and warns.

Sites under torch.compile (the forward of each module and what it calls):
  * print of an f-string of tensor statistics with format specs (Model.forward)
  * a module-level logger call with %-arguments, one of them a tensor
  * warnings.warn with a category, under a static (constructor) condition
  * print with a tensor's .item() among its arguments
  * GatedBlock.forward logs: a submodule frame that Dynamo inlines when the
    whole model is compiled
  * Model._trace prints: a method reached by a call from forward
Outside it, all byte-for-byte as written: the constructor's print, dump_parameters()
and the __main__ block.

Follows the convention of tests/cases: Model, example_inputs(), other_inputs().
"""
import logging
import warnings

import torch
from torch import nn

logger = logging.getLogger(__name__)


class GatedBlock(nn.Module):
    """Pre-norm gated residual block; logs how open its gate is."""

    def __init__(self, dim: int, index: int):
        super().__init__()
        self.index = index
        self.norm = nn.LayerNorm(dim)
        self.value = nn.Linear(dim, dim)
        self.gate = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(x)
        g = torch.sigmoid(self.gate(h))
        logger.warning("block %d: mean gate %.4f", self.index, g.mean())
        return x + g * self.value(h)


class Model(nn.Module):
    """Embedding, `depth` gated blocks, a classification head with a softmax."""

    def __init__(self, dim: int = 16, classes: int = 5, depth: int = 2, legacy_temperature: bool = True):
        super().__init__()
        print(f"building demo model: dim={dim} classes={classes} depth={depth}")
        self.legacy_temperature = legacy_temperature
        self.embed = nn.Linear(8, dim)
        self.blocks = nn.ModuleList(GatedBlock(dim, i) for i in range(depth))
        self.head = nn.Linear(dim, classes)

    def _trace(self, name: str, t: torch.Tensor) -> None:
        print(f"{name}: shape={tuple(t.shape)} norm={t.norm():.3f}")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.embed(x))
        print(f"embedded: mean={h.mean():.4f} std={h.std():+.3e} max={h.max():8.3f}")
        for block in self.blocks:
            h = block(h)
        self._trace("features", h)
        logits = self.head(h)
        if self.legacy_temperature:  # a constructor setting: static under torch.compile
            warnings.warn("legacy_temperature is deprecated; the head now scales by 1/2", FutureWarning)
            logits = logits / 2.0
        logger.warning("logits norm %s over a batch of %d", logits.norm(), x.shape[0])
        probs = torch.softmax(logits, dim=-1)
        print("top probability:", probs.max().item())
        return probs


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(4, 8),)


def other_inputs():
    torch.manual_seed(1)
    return (torch.randn(2, 8) * 3.0,)


def dump_parameters(model: nn.Module) -> None:
    """Not reachable from forward: stays as written."""
    for name, p in model.named_parameters():
        print(f"{name}: {tuple(p.shape)} mean={p.mean():.4f}")


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    model = Model().eval()
    dump_parameters(model)
    with torch.no_grad():
        print(model(*example_inputs()))
