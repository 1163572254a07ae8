"""torchdiffeq: `torch.compile` of a function of the script that integrates an ODE with odeint.

Fixed-grid (euler, rk4, step 0.25) and adaptive (dopri5, bosh3) solvers, a small MLP as the
vector field (its parameters require grad, as in training), two calls each.
PATH for verify: the installed torchdiffeq folder (the compile call is in this script).
"""
import sys

import torch
from torch import nn
from torchdiffeq import odeint

import _common


class Func(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 4))

    def forward(self, t, y):
        return self.net(y) * torch.cos(t)


def run(method):
    _common.seed(0)
    func = Func()
    t = torch.linspace(0.0, 1.0, 5)
    y0 = torch.randn(3, 4)
    options = {"step_size": 0.25} if method in ("euler", "rk4", "midpoint") else None

    def solve(y0, t):
        return odeint(func, y0, t, method=method, options=options, rtol=1e-4, atol=1e-5)

    solve = _common.compile(solve)
    outs = [solve(y0, t), solve(y0 * 0.5, t)]
    _common.checksum(method, outs)


if __name__ == "__main__":
    for m in sys.argv[1:] or ["euler", "rk4", "dopri5", "bosh3"]:
        run(m)
