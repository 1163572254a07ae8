"""timm models with unusual inputs, random weights (pretrained=False), eval.

- resnet18 on a non-square image (1x3x96x160),
- resnet18 features_only=True (a list of feature maps),
- vit_tiny_patch16_224 with dynamic_img_size=True on two image sizes,
- efficientnet_b0 on a non-square image,
- convnext_atto features_only=True, out_indices=(1, 3),
- eva02_tiny (rotary position embedding) with dynamic_img_size=True on a non-square image,
- swin_tiny features_only=True, strict_img_size=False.
PATH for verify: the installed timm folder (models/ and layers/).
"""
import sys

import torch
import timm

import _common

CASES = {
    "resnet18_nonsquare": ("resnet18", {}, [(1, 3, 96, 160)]),
    "resnet18_features": ("resnet18", {"features_only": True}, [(1, 3, 64, 96)]),
    "vit_tiny_dynamic_img_size": ("vit_tiny_patch16_224", {"dynamic_img_size": True}, [(1, 3, 64, 96), (1, 3, 80, 48)]),
    "efficientnet_b0_nonsquare": ("efficientnet_b0", {}, [(1, 3, 64, 128)]),
    "convnext_atto_features": ("convnext_atto", {"features_only": True, "out_indices": (1, 3)}, [(1, 3, 64, 96)]),
    "eva02_tiny_rope_dynamic_img_size": ("eva02_tiny_patch14_224", {"dynamic_img_size": True}, [(1, 3, 112, 168)]),
    "swin_tiny_features_nonstrict": ("swin_tiny_patch4_window7_224", {"features_only": True, "strict_img_size": False},
                                     [(1, 3, 224, 224)]),
}


def run(case):
    arch, kwargs, shapes = CASES[case]
    _common.seed(0)
    model = timm.create_model(arch, pretrained=False, **kwargs).eval()
    compiled = _common.compile(model)
    _common.seed(1)
    outs = []
    with torch.no_grad():
        for shape in shapes:
            x = torch.rand(*shape)
            outs.append(compiled(x))
            outs.append(compiled(x))
    _common.checksum(case, outs)


if __name__ == "__main__":
    for n in sys.argv[1:] or CASES:
        run(n)
