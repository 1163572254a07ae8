"""x-transformers: decoder and encoder models under torch.compile.

Three small TransformerWrapper models (rotary decoder, GLU encoder, residual-attention decoder
with sandwich norm), eval, no_grad, called without and with a padding mask. PATH for verify:
the installed x_transformers.
"""
import sys

import torch
from x_transformers import TransformerWrapper, Decoder, Encoder

import _common


def build(kind):
    _common.seed(0)
    if kind == "decoder":
        return TransformerWrapper(num_tokens=64, max_seq_len=32, attn_layers=Decoder(dim=32, depth=2, heads=4, rotary_pos_emb=True))
    if kind == "encoder":
        return TransformerWrapper(num_tokens=64, max_seq_len=32, attn_layers=Encoder(dim=32, depth=2, heads=4, ff_glu=True))
    return TransformerWrapper(num_tokens=64, max_seq_len=32, attn_layers=Decoder(dim=32, depth=2, heads=4, attn_flash=False, residual_attn=True, sandwich_norm=True))


def run(kind):
    model = build(kind).eval()
    compiled = _common.compile(model)
    x = torch.randint(0, 64, (2, 12))
    mask = torch.ones(2, 12, dtype=torch.bool)
    mask[1, 9:] = False
    with torch.no_grad():
        outs = [compiled(x), compiled(x, mask=mask)]
    _common.checksum(kind, outs)


if __name__ == "__main__":
    for k in sys.argv[1:] or ["decoder", "encoder", "other"]:
        run(k)
