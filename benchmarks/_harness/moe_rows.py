"""Rows of the MoE latency measurement (`latency.py --rows moe`): Mixtral at a mid size, whose
expert dispatch GM501 rewrites, for prefill (a batch of 128 tokens) and decode (1 token, no
cache) and sizes between, for 4, 8 and 16 experts, top-2.

    ROWS["moe:e8-t128"]   # ModelSpec: MixtralForCausalLM, 8 experts, input_ids (1, 128)

Size: hidden 256, 2 layers, 4 heads, intermediate 512 per expert, vocab 128; random weights
after torch.manual_seed(0) (the arms do that), eval mode, use_cache=False.
"""
from __future__ import annotations

from .models import VOCAB, ModelSpec

PREFIX = "moe:"
HIDDEN, LAYERS, HEADS, EXPERT_FFN, TOP_K = 256, 2, 4, 512, 2
# (experts, tokens): decode (1 token) and prefill (128) at 8 experts, 16 experts decoding, and
# sizes between, two of them with experts x top-k x tokens = 64 (the sweep's MoE rows: 4 experts,
# top-2, 8 tokens).
GRID = ((8, 1), (16, 1), (4, 8), (8, 4), (8, 16), (8, 128), (4, 128))


def _spec(experts, tokens):
    def build():
        from transformers import MixtralConfig, MixtralForCausalLM

        config = MixtralConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=EXPERT_FFN,
                               num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=HEADS,
                               num_local_experts=experts, num_experts_per_tok=TOP_K, max_position_embeddings=256,
                               use_cache=False, pad_token_id=0, bos_token_id=1, eos_token_id=2)
        return MixtralForCausalLM(config).eval()

    def inputs(dtype):
        import torch

        return {"input_ids": torch.randint(3, VOCAB, (1, tokens)), "use_cache": False}

    kind = "prefill" if tokens > 1 else "decode"
    return ModelSpec(f"{PREFIX}e{experts}-t{tokens}", build, inputs,
                     description=f"MixtralForCausalLM, {experts} experts, top-{TOP_K}, hidden {HIDDEN}, "
                                 f"{LAYERS} layers, {HEADS} heads, expert ffn {EXPERT_FFN}, vocab {VOCAB}; "
                                 f"{kind}: input_ids (1, {tokens}), no cache")


ROWS = {spec.name: spec for spec in (_spec(e, t) for e, t in GRID)}
