"""Registry of the transformers models `graph_breaks.py --model NAME` can measure.

Each entry is a ModelSpec:
    build()        -> an nn.Module in eval mode with random weights from a small
                      config (called after torch.manual_seed(0); no download);
                      the arm converts it with .to(dtype) afterwards;
    inputs(dtype)  -> dict of keyword arguments for one forward (called after
                      torch.manual_seed(0)); floating inputs come in `dtype`
                      (a torch.dtype, the model's), integer ids stay int64.
Builders import transformers lazily: the arm installs its message capture first.
To add a model, write the two functions and add an entry to MODELS. A build() that finds
the model missing from the installed package raises NotAvailable (the arm records the row as
"not available at this version" instead of failing).
get_spec(name) also knows the sweep's architectures ("sweep:gpt2", see sweep.py). A spec with
inputs_at(dtype, shape) can also make its inputs at another (batch, tokens) than SEQ (the sweep's
rows: `graph_breaks.py --batch 2 --tokens 16`); make_inputs(spec, dtype, shape) picks the one.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

# The reference measurement's size: hidden 64, 2 layers, 2 heads, ffn 128,
# vocab 128, inputs of shape (1, 8).
VOCAB = 128
SEQ = (1, 8)
HIDDEN, LAYERS, HEADS, FFN = 64, 2, 2, 128
# BART-family (BART, Marian, Whisper) config fields for that size.
ENCODER_DECODER = dict(
    vocab_size=VOCAB, d_model=HIDDEN, encoder_layers=LAYERS, decoder_layers=LAYERS,
    encoder_attention_heads=HEADS, decoder_attention_heads=HEADS,
    encoder_ffn_dim=FFN, decoder_ffn_dim=FFN,
)
# Whisper: 8 mel bins, 16 encoder positions -> input_features (1, 8, 32).
MEL_BINS, SOURCE_POSITIONS = 8, 16
# Phi-3 longrope: pretraining length 16, inputs of 24 tokens use the long factors.
PHI3_ORIGINAL_MAX, PHI3_SEQ = 16, (1, 24)
# Grounding DINO: a 64x64 image, 10 queries, text ids framed by [CLS] (101) and [SEP] (102),
# two of the special tokens the model splits its text attention on.
GDINO_IMAGE, GDINO_QUERIES, CLS, SEP = 64, 10, 101, 102
# Longformer: a sliding window of 4 tokens (2 each side); SEQ[1] is a multiple of it. The
# padded variant's window of 16 pads the 8 tokens to 16, as longformer-base-4096's 512 does.
LONGFORMER_WINDOW, LONGFORMER_PADDED_WINDOW = 4, 16
# CLAP audio (HTSAT, fused as in clap-htsat-fused): spec 32 over 8 mel bins (freq ratio 4),
# so input_features are (1, 4, 128, 8): the global mel plus 3 local crops, 128 frames.
CLAP_SPEC, CLAP_MEL_BINS = 32, 8
CLAP_FRAMES = CLAP_SPEC * (CLAP_SPEC // CLAP_MEL_BINS)


class NotAvailable(Exception):
    """build(): the installed package has no such model, or its config no longer builds it."""


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    name: str
    build: Callable[[], object]
    inputs: Callable[[object], dict]
    package: str = "transformers"
    description: str = ""
    config_overrides: dict | None = None  # sweep only: the architecture's own config overrides
    # sweep only: inputs_at(dtype, (batch, tokens)), the inputs at another shape than SEQ
    inputs_at: Callable[[object, tuple], dict] | None = None


def input_shape(batch=None, tokens=None):
    """(batch, tokens) for --batch/--tokens, each defaulting to SEQ's; None when neither is given
    (the spec's own inputs). Raises ValueError for a size below 1."""
    if batch is None and tokens is None:
        return None
    shape = (SEQ[0] if batch is None else batch, SEQ[1] if tokens is None else tokens)
    if min(shape) < 1:
        raise ValueError(f"--batch and --tokens must be at least 1, not {shape}")
    return shape


def make_inputs(spec, dtype, shape=None):
    """spec.inputs(dtype), or, for a (batch, tokens) shape, spec.inputs_at(dtype, shape); raises
    ValueError for a shape given to a spec that makes its inputs at one shape only."""
    if shape is None:
        return spec.inputs(dtype)
    if spec.inputs_at is None:
        raise ValueError(f"{spec.name} makes its inputs at one shape only: --batch and --tokens apply to "
                         "the sweep's rows (sweep:ARCH)")
    return spec.inputs_at(dtype, tuple(shape))


def _build_t5():
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(
        vocab_size=VOCAB, d_model=HIDDEN, d_kv=32, d_ff=FFN, num_layers=LAYERS, num_heads=HEADS,
        decoder_start_token_id=0,
    )
    return T5ForConditionalGeneration(config).eval()


def _build_bart():
    from transformers import BartConfig, BartForConditionalGeneration

    return BartForConditionalGeneration(BartConfig(**ENCODER_DECODER, max_position_embeddings=64)).eval()


def _build_marian():
    from transformers import MarianConfig, MarianMTModel

    # Marian's default pad/decoder-start id (58100) lies outside the small vocabulary.
    config = MarianConfig(**ENCODER_DECODER, max_position_embeddings=64,
                          pad_token_id=0, decoder_start_token_id=0)
    return MarianMTModel(config).eval()


def _build_whisper():
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    # Whisper's default special ids (50256, 50257) lie outside the small vocabulary.
    config = WhisperConfig(
        **ENCODER_DECODER, num_mel_bins=MEL_BINS, max_source_positions=SOURCE_POSITIONS,
        max_target_positions=64, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        decoder_start_token_id=1,
    )
    return WhisperForConditionalGeneration(config).eval()


def _build_phi3():
    from transformers import Phi3Config, Phi3ForCausalLM

    half_head = HIDDEN // HEADS // 2
    config = Phi3Config(
        vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=FFN, num_hidden_layers=LAYERS,
        num_attention_heads=HEADS, max_position_embeddings=64,
        original_max_position_embeddings=PHI3_ORIGINAL_MAX,
        rope_scaling={"type": "longrope", "short_factor": [1.0] * half_head,
                      "long_factor": [2.0] * half_head},
        pad_token_id=0,
    )
    return Phi3ForCausalLM(config).eval()


def _build_grounding_dino():
    from transformers import BertConfig, GroundingDinoConfig, GroundingDinoForObjectDetection, SwinConfig

    # A tiny Swin (as in grounding-dino-tiny/base): 64x64 -> stages of 16, 8, 4, 2 patches;
    # stages 2..4 feed the encoder, a strided conv adds the 4th feature level.
    backbone = SwinConfig(image_size=GDINO_IMAGE, embed_dim=16, depths=[1, 1, 1, 1], num_heads=[1, 1, 2, 2],
                          window_size=4, out_indices=[2, 3, 4])
    text = BertConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                      num_attention_heads=HEADS, intermediate_size=FFN, max_position_embeddings=64)
    config = GroundingDinoConfig(
        backbone_config=backbone, use_timm_backbone=False, use_pretrained_backbone=False,
        text_config=text, d_model=HIDDEN, num_queries=GDINO_QUERIES,
        encoder_layers=LAYERS, decoder_layers=LAYERS, encoder_attention_heads=HEADS,
        decoder_attention_heads=HEADS, encoder_ffn_dim=FFN, decoder_ffn_dim=FFN,
    )
    return GroundingDinoForObjectDetection(config).eval()


def _build_biogpt():
    from transformers import BioGptConfig, BioGptForCausalLM

    config = BioGptConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                          num_attention_heads=HEADS, intermediate_size=FFN, max_position_embeddings=64)
    return BioGptForCausalLM(config).eval()


def _build_blenderbot():
    from transformers import BlenderbotConfig, BlenderbotForConditionalGeneration

    return BlenderbotForConditionalGeneration(BlenderbotConfig(**ENCODER_DECODER, max_position_embeddings=64)).eval()


def _build_pegasus():
    from transformers import PegasusConfig, PegasusForCausalLM

    return PegasusForCausalLM(PegasusConfig(**ENCODER_DECODER, max_position_embeddings=64)).eval()


def _build_layoutlmv3():
    from transformers import LayoutLMv3Config, LayoutLMv3Model

    # The text embedding concatenates 4 coordinate and 2 shape embeddings: 4 * 12 + 2 * 8 = 64.
    config = LayoutLMv3Config(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                              num_attention_heads=HEADS, intermediate_size=FFN, max_position_embeddings=64,
                              coordinate_size=12, shape_size=8)
    return LayoutLMv3Model(config).eval()


def _build_longformer(window=LONGFORMER_WINDOW):
    from transformers import LongformerConfig, LongformerModel

    config = LongformerConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                              num_attention_heads=HEADS, intermediate_size=FFN, max_position_embeddings=64,
                              attention_window=window)
    return LongformerModel(config).eval()


def _build_longformer_padded():
    return _build_longformer(LONGFORMER_PADDED_WINDOW)


def _build_clap():
    from transformers import ClapConfig, ClapModel

    text = dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                intermediate_size=FFN, max_position_embeddings=64)
    # Two Swin stages of 2 blocks (window 4: the first stage's second block shifts), patch
    # embeddings of 32 channels doubled by the merge to hidden 64.
    audio = dict(spec_size=CLAP_SPEC, num_mel_bins=CLAP_MEL_BINS, window_size=4, depths=[LAYERS, LAYERS],
                 num_attention_heads=[HEADS, HEADS], patch_embeds_hidden_size=HIDDEN // 2, hidden_size=HIDDEN,
                 enable_fusion=True)
    return ClapModel(ClapConfig(text_config=text, audio_config=audio, projection_dim=HIDDEN)).eval()


def _seq2seq_inputs(dtype):
    import torch

    input_ids = torch.randint(0, VOCAB, SEQ)
    decoder_input_ids = torch.randint(0, VOCAB, SEQ)
    return {"input_ids": input_ids, "decoder_input_ids": decoder_input_ids}


def _whisper_inputs(dtype):
    import torch

    input_features = torch.randn(1, MEL_BINS, 2 * SOURCE_POSITIONS).to(dtype)
    decoder_input_ids = torch.randint(0, VOCAB, SEQ)
    return {"input_features": input_features, "decoder_input_ids": decoder_input_ids}


def _causal_inputs(dtype):
    import torch

    return {"input_ids": torch.randint(0, VOCAB, SEQ)}


def _layoutlmv3_inputs(dtype):
    import torch

    # Text only (no pixel_values): one valid box per token, 0 <= x0 < x1 <= 1000, same for y.
    corners = torch.randint(0, 500, (*SEQ, 2))
    bbox = torch.cat([corners, corners + torch.randint(1, 500, (*SEQ, 2))], dim=-1)
    return {"input_ids": torch.randint(0, VOCAB, SEQ), "bbox": bbox}


def _clap_inputs(dtype):
    import torch

    input_features = torch.randn(1, 4, CLAP_FRAMES, CLAP_MEL_BINS).to(dtype)
    return {"input_ids": torch.randint(0, VOCAB, SEQ), "input_features": input_features,
            "is_longer": torch.tensor([[True]])}


def _phi3_inputs(dtype):
    import torch

    return {"input_ids": torch.randint(0, VOCAB, PHI3_SEQ)}


def _grounding_dino_inputs(dtype):
    import torch

    input_ids = torch.randint(0, VOCAB, SEQ)
    input_ids[:, 0], input_ids[:, -1] = CLS, SEP
    pixel_values = torch.randn(1, 3, GDINO_IMAGE, GDINO_IMAGE).to(dtype)
    return {"pixel_values": pixel_values, "input_ids": input_ids,
            "attention_mask": torch.ones_like(input_ids)}


_SIZE = "hidden 64, 2+2 layers, 2 heads, ffn 128, vocab 128"
MODELS = {spec.name: spec for spec in (
    ModelSpec("t5", _build_t5, _seq2seq_inputs,
              description="T5ForConditionalGeneration, d_model 64, 2+2 layers, 2 heads, ffn 128, vocab 128"),
    ModelSpec("bart", _build_bart, _seq2seq_inputs,
              description=f"BartForConditionalGeneration, {_SIZE}"),
    ModelSpec("marian", _build_marian, _seq2seq_inputs,
              description=f"MarianMTModel, {_SIZE}"),
    ModelSpec("whisper", _build_whisper, _whisper_inputs,
              description=f"WhisperForConditionalGeneration, {_SIZE}, "
                          f"input_features (1, {MEL_BINS}, {2 * SOURCE_POSITIONS})"),
    ModelSpec("phi3", _build_phi3, _phi3_inputs,
              description="Phi3ForCausalLM with longrope (original max 16, max 64), hidden 64, "
                          "2 layers, 2 heads, intermediate 128, vocab 128, input_ids (1, 24)"),
    ModelSpec("grounding-dino", _build_grounding_dino, _grounding_dino_inputs,
              description="GroundingDinoForObjectDetection, d_model 64, 2+2 layers, 2 heads, ffn 128, "
                          "10 queries; Swin backbone (embed 16, depths 1-1-1-1, window 4); BERT text encoder "
                          "(hidden 64, 2 layers, 2 heads, ffn 128, vocab 128); "
                          f"pixel_values (1, 3, {GDINO_IMAGE}, {GDINO_IMAGE}), input_ids (1, 8)"),
    ModelSpec("biogpt", _build_biogpt, _causal_inputs,
              description="BioGptForCausalLM, hidden 64, 2 layers, 2 heads, ffn 128, vocab 128"),
    ModelSpec("blenderbot", _build_blenderbot, _seq2seq_inputs,
              description=f"BlenderbotForConditionalGeneration, {_SIZE}"),
    ModelSpec("pegasus", _build_pegasus, _causal_inputs,
              description="PegasusForCausalLM (the decoder), d_model 64, 2 layers, 2 heads, ffn 128, vocab 128"),
    ModelSpec("layoutlmv3", _build_layoutlmv3, _layoutlmv3_inputs,
              description="LayoutLMv3Model, hidden 64, 2 layers, 2 heads, ffn 128, vocab 128; text only: "
                          "input_ids (1, 8), bbox (1, 8, 4), no pixel_values"),
    ModelSpec("longformer", _build_longformer, _causal_inputs,
              description=f"LongformerModel, attention_window {LONGFORMER_WINDOW}, hidden 64, 2 layers, "
                          "2 heads, ffn 128, vocab 128, input_ids (1, 8), no global attention"),
    ModelSpec("longformer-padded", _build_longformer_padded, _causal_inputs,
              description=f"LongformerModel as 'longformer' but attention_window {LONGFORMER_PADDED_WINDOW}: "
                          "the model pads input_ids (1, 8) to 16 (and logs that it does)"),
    ModelSpec("clap", _build_clap, _clap_inputs,
              description="ClapModel; text: hidden 64, 2 layers, 2 heads, ffn 128, vocab 128, input_ids (1, 8); "
                          f"audio: fused HTSAT, spec {CLAP_SPEC}, {CLAP_MEL_BINS} mel bins, 2 stages of 2 blocks, "
                          f"2 heads, window 4, hidden 64, input_features (1, 4, {CLAP_FRAMES}, {CLAP_MEL_BINS}), "
                          "is_longer [[True]]; projection 64"),
)}


def get_spec(name):
    """The ModelSpec of a MODELS entry, a sweep architecture ("sweep:gpt2") or an MoE latency row
    ("moe:e8-t128"); KeyError if unknown."""
    if name in MODELS:
        return MODELS[name]
    from . import sweep

    if name.startswith(sweep.PREFIX) and name[len(sweep.PREFIX):] in sweep.ARCHS:
        return sweep.spec(name[len(sweep.PREFIX):])
    from . import moe_rows

    if name in moe_rows.ROWS:
        return moe_rows.ROWS[name]
    raise KeyError(name)
