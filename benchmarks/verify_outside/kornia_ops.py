"""kornia: filters, color, geometry and enhance functions under torch.compile.

Ten functions, each compiled as a user would (a lambda where an argument is fixed), called on
a batch of two 16x16 RGB images and on the same halved. PATH for verify: the installed kornia.
"""
import sys

import torch
import kornia

import _common


def run(name, fn, *args):
    _common.seed(0)
    compiled = _common.compile(fn)
    outs = [compiled(*args), compiled(*[a * 0.5 if torch.is_tensor(a) and a.is_floating_point() else a for a in args])]
    _common.checksum(name, outs)


def main():
    _common.seed(1)
    img = torch.rand(2, 3, 16, 16)
    H = torch.eye(3).expand(2, 3, 3).clone()
    H[:, 0, 2] = 1.5
    cases = {
        "gaussian_blur2d": (lambda x: kornia.filters.gaussian_blur2d(x, (5, 5), (1.5, 1.5)), img),
        "rgb_to_hsv": (kornia.color.rgb_to_hsv, img),
        "rgb_to_lab": (kornia.color.rgb_to_lab, img),
        "warp_perspective": (lambda x, h: kornia.geometry.transform.warp_perspective(x, h, (16, 16)), img, H),
        "equalize": (kornia.enhance.equalize, img),
        "adjust_gamma": (lambda x: kornia.enhance.adjust_gamma(x, 0.8), img),
        "canny": (lambda x: kornia.filters.canny(x)[0], img),
        "normalize_min_max": (kornia.enhance.normalize_min_max, img),
        "sobel": (kornia.filters.sobel, img),
        "total_variation": (kornia.losses.total_variation, img),
    }
    for name in sys.argv[1:] or list(cases):
        fn, *args = cases[name]
        run(name, fn, *args)


if __name__ == "__main__":
    main()
