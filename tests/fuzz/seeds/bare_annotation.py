import torch
from torch import nn

class M(nn.Module):
    def forward(self, x):
        y: torch.Tensor
        if x.sum() > 0:
            y = x
        else:
            y = -x
        return y
