"""torchvision detection models, random weights, eval, two small images of different sizes.

weights=None, weights_backbone=None (no download); the compiled module is called twice on a
list of two images (the detection API takes a list of 3xHxW tensors of any size).
PATH for verify: the installed torchvision/models/detection folder (or torchvision/ as a
whole, to place the breaks in torchvision/ops too).
"""
import sys

import torch
import torchvision.models.detection as det

import _common

MODELS = {
    "fasterrcnn_mobilenet_v3_large_320_fpn": dict(),
    "retinanet_resnet50_fpn": dict(min_size=160, max_size=224),
    "maskrcnn_resnet50_fpn": dict(min_size=160, max_size=224),
}


def run(name):
    _common.seed(0)
    model = getattr(det, name)(weights=None, weights_backbone=None, **MODELS[name]).eval()
    compiled = _common.compile(model)
    _common.seed(1)
    images = [torch.rand(3, 120, 160), torch.rand(3, 96, 128)]
    with torch.no_grad():
        outs = [compiled(images) for _ in range(2)]
    _common.checksum(name, outs)


if __name__ == "__main__":
    for n in sys.argv[1:] or MODELS:
        run(n)
