"""A select whose branches bind a tuple, and a data read of what it selects (`not lo`): the
fuzz input on which a second fix changed the fixed text (the select read as an unknown call)."""
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        lo, hi = self.bounds(x)
        return self.route(x,  not lo, hi)

    def bounds(self, x):
        if x.mean() > 0:
            lo, hi = x.min(), x.max()
        else:
            lo, hi = -x.abs().max(), x.abs().max()
        return lo, hi

    def route(self, x, lo, hi):
        if (hi - lo).item() > 4:
            return x / 2
        # the common case
        y = x * 2
        z = y + lo
        return z - hi


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(3, 4) * 0.5 + 1,)


def other_inputs():
    torch.manual_seed(0)
    return (torch.randn(3, 4) * 5 - 1,)
