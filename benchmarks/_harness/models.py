"""Registry of the transformers models `graph_breaks.py --model NAME` can measure.

Each entry is a ModelSpec:
    build()  -> an nn.Module in eval mode with random weights from a small config
                (called after torch.manual_seed(0); no download);
    inputs() -> dict of keyword arguments for one forward (called after
                torch.manual_seed(0)).
Builders import transformers lazily: the arm installs its message capture first.
To add a model, write the two functions and add a line to MODELS.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

# The reference measurement's size: hidden 64, 2 layers, 2 heads, ffn 128,
# vocab 128, inputs of shape (1, 8).
VOCAB = 128
SEQ = (1, 8)


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    name: str
    build: Callable[[], object]
    inputs: Callable[[], dict]
    package: str = "transformers"
    description: str = ""


def _build_t5():
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(
        vocab_size=VOCAB, d_model=64, d_kv=32, d_ff=128, num_layers=2, num_heads=2,
        decoder_start_token_id=0,
    )
    return T5ForConditionalGeneration(config).eval()


def _seq2seq_inputs():
    import torch

    input_ids = torch.randint(0, VOCAB, SEQ)
    decoder_input_ids = torch.randint(0, VOCAB, SEQ)
    return {"input_ids": input_ids, "decoder_input_ids": decoder_input_ids}


MODELS = {
    "t5": ModelSpec(
        "t5", _build_t5, _seq2seq_inputs,
        description="T5ForConditionalGeneration, d_model 64, 2+2 layers, 2 heads, ffn 128, vocab 128",
    ),
}
