"""diffusers schedulers: `torch.compile(scheduler.step)` over a few timesteps.

Each scheduler is built from its default config (no download), set to 8 inference steps;
a fixed random latent and random "model outputs" go through 4 steps of the compiled `step`.
PATH for verify: the installed diffusers/schedulers folder.
"""
import sys

import torch

import _common
import diffusers

NAMES = [
    "EulerDiscreteScheduler",
    "EulerAncestralDiscreteScheduler",
    "DPMSolverMultistepScheduler",
    "DDIMScheduler",
    "DDPMScheduler",
    "PNDMScheduler",
    "LMSDiscreteScheduler",  # needs scipy
    "UniPCMultistepScheduler",
    "HeunDiscreteScheduler",
    "DEISMultistepScheduler",
    "FlowMatchEulerDiscreteScheduler",
]
STEPS = 4


def run(name):
    _common.seed(0)
    cls = getattr(diffusers, name)
    scheduler = cls()
    scheduler.set_timesteps(8)
    step = _common.compile(scheduler.step)
    sample = torch.randn(1, 4, 8, 8) * getattr(scheduler, "init_noise_sigma", 1.0)
    outs = []
    for t in scheduler.timesteps[:STEPS]:
        scale = getattr(scheduler, "scale_model_input", None)
        model_input = scale(sample, t) if scale is not None else sample
        model_output = torch.randn_like(model_input) * 0.1 + 0.01 * model_input
        out = step(model_output, t, sample)
        sample = out.prev_sample
        outs.append(sample)
    _common.checksum(name, outs)


if __name__ == "__main__":
    for n in sys.argv[1:] or NAMES:
        run(n)
