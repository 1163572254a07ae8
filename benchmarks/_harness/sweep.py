"""The architecture sweep (`graph_breaks.py --suite sweep`): many transformers classes, one builder.

Every architecture is built the same way: the config class of its model_type
(`AutoConfig.for_model`), shrunk to the reference measurement's size (models.HIDDEN,
LAYERS, HEADS, FFN, VOCAB: every size field the config class takes as an argument and
whose default is an int), special token ids moved into the small vocabulary, then the
architecture's own overrides; the model is the task's Auto class `from_config` (random
weights after torch.manual_seed(0), eval mode). The inputs are the task's main input.

    ARCHS["gpt2"]                      # Arch(model_type, task, overrides, note)
    MOE                                # the mixture-of-experts model types among them
    config_kwargs("gpt2")              # the keyword arguments of the config (imports transformers)
    build_config("gpt2"), build("gpt2") / inputs("gpt2", torch.float32[, (batch, tokens)])
    spec("gpt2")                       # the models.ModelSpec named "sweep:gpt2" (what the arms run)

To add an architecture, add an Arch to ARCHS (with overrides only where the generic
shrinking does not give a working small model). build() raises models.NotAvailable when the
installed transformers lacks the model type or no longer builds it from the config: the row
then reads "not available at this version: <reason>" (transformers 5 has no open-llama or nezha).
"""
from __future__ import annotations

import dataclasses
import inspect

from .models import FFN, HEADS, HIDDEN, LAYERS, SEQ, VOCAB, ModelSpec, NotAvailable

PREFIX = "sweep:"
POSITIONS = 64
EXPERTS, EXPERTS_PER_TOKEN = 4, 2
# Image models: (1, 3, 32, 32); wav2vec2: 400 samples; Whisper: 8 mel bins, 16 encoder positions.
IMAGE = 32
AUDIO_SAMPLES = 400
MEL_BINS, SOURCE_POSITIONS = 8, 16

# Size fields shrunk when the config class takes them as arguments and their default is an int.
SHRINK = {
    **dict.fromkeys(("hidden_size", "d_model", "n_embd", "dim", "embedding_size", "word_embed_proj_dim",
                     "pooler_output_size", "output_hidden_size"), HIDDEN),
    **dict.fromkeys(("num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers",
                     "decoder_layers", "num_decoder_layers"), LAYERS),
    **dict.fromkeys(("num_attention_heads", "num_heads", "n_head", "n_heads", "attention_heads",
                     "encoder_attention_heads", "decoder_attention_heads", "num_key_value_heads",
                     "num_kv_heads"), HEADS),
    **dict.fromkeys(("intermediate_size", "d_ff", "ffn_dim", "encoder_ffn_dim", "decoder_ffn_dim",
                     "hidden_dim", "dff", "ffn_hidden_size", "n_inner"), FFN),
    **dict.fromkeys(("vocab_size", "decoder_vocab_size"), VOCAB),
    **dict.fromkeys(("max_position_embeddings", "n_positions", "n_ctx", "max_seq_len", "max_target_positions",
                     "max_encoder_position_embeddings", "max_decoder_position_embeddings"), POSITIONS),
    **dict.fromkeys(("head_dim", "d_kv"), HIDDEN // HEADS),
    "rotary_dim": HIDDEN // HEADS // 2,
    **dict.fromkeys(("num_experts", "num_local_experts"), EXPERTS),
    "num_experts_per_tok": EXPERTS_PER_TOKEN,
    **dict.fromkeys(("moe_intermediate_size", "shared_expert_intermediate_size"), FFN // 2),
}
# Special token ids that must lie in the small vocabulary, and where they go when they do not.
SPECIAL_IDS = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, "decoder_start_token_id": 0,
               "forced_eos_token_id": 2, "forced_bos_token_id": 1, "sep_token_id": 2, "cls_token_id": 1}

# task -> (Auto class, inputs kind)
TASKS = {
    "causal-lm": ("AutoModelForCausalLM", "input_ids"),
    "masked-lm": ("AutoModelForMaskedLM", "input_ids"),
    "seq2seq-lm": ("AutoModelForSeq2SeqLM", "input_ids+decoder_input_ids"),
    "image-classification": ("AutoModelForImageClassification", "pixel_values"),
    "ctc": ("AutoModelForCTC", "input_values"),
    "speech-seq2seq": ("AutoModelForSpeechSeq2Seq", "input_features+decoder_input_ids"),
}


@dataclasses.dataclass(frozen=True)
class Arch:
    model_type: str
    task: str
    overrides: dict = dataclasses.field(default_factory=dict)
    note: str = ""


# With a cache, Gemma 2/3 make a HybridCache, whose mark_static_address Dynamo refuses to trace
# (AssertionError "Attempt to trace forbidden callable"): no graph at all, in either arm.
_NO_HYBRID_CACHE = "use_cache=False: the HybridCache fails under torch.compile at these pins"
# Deprecated in transformers 4.x and removed in 5: rows "not available at this version" at the latest pins.
_REMOVED_IN_5 = "deprecated in transformers 4, removed in 5"
_IMAGE = dict(image_size=IMAGE, patch_size=8, encoder_stride=8)
_ARCHS = (
    # decoder-only language models
    Arch("gpt2", "causal-lm"),
    Arch("gpt_neo", "causal-lm", dict(attention_types=[[["global", "local"], 1]], window_size=4)),
    Arch("gptj", "causal-lm"),
    Arch("gpt_neox", "causal-lm"),
    Arch("gpt_bigcode", "causal-lm"),
    Arch("llama", "causal-lm"),
    Arch("mistral", "causal-lm"),
    Arch("mixtral", "causal-lm"),
    Arch("qwen2", "causal-lm"),
    Arch("qwen2_moe", "causal-lm"),
    Arch("qwen3", "causal-lm"),
    Arch("qwen3_moe", "causal-lm"),
    Arch("phimoe", "causal-lm"),
    Arch("olmoe", "causal-lm"),
    Arch("granitemoe", "causal-lm"),
    Arch("dbrx", "causal-lm", dict(attn_config=dict(kv_n_heads=HEADS, clip_qkv=8.0, rope_theta=10000.0),
                                   ffn_config=dict(ffn_hidden_size=FFN, moe_num_experts=EXPERTS,
                                                   moe_top_k=EXPERTS_PER_TOKEN)),
         note="attention and experts set in attn_config and ffn_config; clip_qkv 8 as in dbrx-base and "
              "rope_theta 10000 (4.52's default) given: transformers 5.24 needs both"),
    Arch("jamba", "causal-lm", dict(use_mamba_kernels=False, attn_layer_period=2, attn_layer_offset=1,
                                    expert_layer_period=1, expert_layer_offset=0),
         note="a Mamba layer then an attention layer, both with experts; no Mamba kernels (CPU)"),
    Arch("deepseek_v3", "causal-lm", dict(n_routed_experts=EXPERTS, n_group=1, topk_group=1, first_k_dense_replace=0,
                                          q_lora_rank=32, kv_lora_rank=16, qk_rope_head_dim=16,
                                          qk_nope_head_dim=16, v_head_dim=HIDDEN // HEADS),
         note="every layer with experts, one expert group; small low-rank attention"),
    Arch("phi", "causal-lm"),
    Arch("phi3", "causal-lm"),
    Arch("gemma", "causal-lm"),
    Arch("gemma2", "causal-lm", dict(use_cache=False), note=_NO_HYBRID_CACHE),
    Arch("gemma3_text", "causal-lm", dict(use_cache=False), note=_NO_HYBRID_CACHE),
    Arch("falcon", "causal-lm"),
    Arch("bloom", "causal-lm"),
    Arch("opt", "causal-lm"),
    Arch("mpt", "causal-lm"),
    Arch("codegen", "causal-lm", dict(n_head=4, rotary_dim=8),
         note="4 heads: CodeGen splits its qkv projection in 4"),
    Arch("stablelm", "causal-lm"),
    Arch("olmo", "causal-lm"),
    Arch("olmo2", "causal-lm"),
    Arch("starcoder2", "causal-lm"),
    Arch("cohere", "causal-lm"),
    Arch("granite", "causal-lm"),
    Arch("xglm", "causal-lm"),
    Arch("ctrl", "causal-lm"),
    Arch("open-llama", "causal-lm", note=_REMOVED_IN_5),
    # encoders
    Arch("bert", "masked-lm"),
    Arch("roberta", "masked-lm"),
    Arch("albert", "masked-lm"),
    Arch("distilbert", "masked-lm"),
    Arch("electra", "masked-lm"),
    Arch("deberta", "masked-lm"),
    Arch("deberta-v2", "masked-lm"),
    Arch("xlm-roberta", "masked-lm"),
    Arch("camembert", "masked-lm"),
    Arch("mpnet", "masked-lm"),
    Arch("convbert", "masked-lm"),
    Arch("roformer", "masked-lm"),
    Arch("megatron-bert", "masked-lm"),
    Arch("ernie", "masked-lm"),
    Arch("data2vec-text", "masked-lm"),
    Arch("nezha", "masked-lm", note=_REMOVED_IN_5),
    # encoder-decoders
    Arch("t5", "seq2seq-lm"),
    Arch("mt5", "seq2seq-lm"),
    Arch("umt5", "seq2seq-lm"),
    Arch("bart", "seq2seq-lm"),
    Arch("mbart", "seq2seq-lm"),
    Arch("marian", "seq2seq-lm"),
    Arch("pegasus", "seq2seq-lm"),
    Arch("blenderbot", "seq2seq-lm"),
    Arch("blenderbot-small", "seq2seq-lm"),
    Arch("switch_transformers", "seq2seq-lm", dict(num_sparse_encoder_layers=LAYERS, num_sparse_decoder_layers=LAYERS),
         note="every layer sparse (4 experts)"),
    Arch("nllb-moe", "seq2seq-lm", dict(encoder_sparse_step=1, decoder_sparse_step=1),
         note="every layer sparse (4 experts)"),
    Arch("longt5", "seq2seq-lm"),
    Arch("m2m_100", "seq2seq-lm"),
    Arch("plbart", "seq2seq-lm"),
    Arch("led", "seq2seq-lm", dict(attention_window=4)),
    # vision and audio
    Arch("vit", "image-classification", _IMAGE),
    Arch("deit", "image-classification", dict(_IMAGE, architectures=["DeiTForImageClassification"]),
         note="`architectures` picks the class: the Auto mapping has two for deit"),
    Arch("swin", "image-classification",
         dict(image_size=IMAGE, patch_size=4, embed_dim=16, depths=[2, 2], num_heads=[2, 2], window_size=4)),
    Arch("convnext", "image-classification",
         dict(image_size=IMAGE, num_stages=2, hidden_sizes=[16, 32], depths=[1, 1])),
    Arch("wav2vec2", "ctc", dict(conv_dim=[32, 32], conv_stride=[5, 2], conv_kernel=[10, 3],
                                  num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2)),
    Arch("whisper", "speech-seq2seq", dict(num_mel_bins=MEL_BINS, max_source_positions=SOURCE_POSITIONS)),
)
ARCHS = {a.model_type: a for a in _ARCHS}
# The mixture-of-experts architectures (the report gives their breaks on a line of their own).
MOE = ("mixtral", "qwen2_moe", "qwen3_moe", "phimoe", "olmoe", "granitemoe", "dbrx", "jamba", "deepseek_v3",
       "nllb-moe", "switch_transformers")


def config_kwargs(model_type):
    """The keyword arguments the sweep gives `model_type`'s config class (imports transformers)."""
    from transformers import AutoConfig

    arch = ARCHS[model_type]
    defaults = AutoConfig.for_model(model_type)
    takes = set(inspect.signature(type(defaults).__init__).parameters)

    def is_int(value):
        return isinstance(value, int) and not isinstance(value, bool)

    kwargs = {k: v for k, v in SHRINK.items() if k in takes and is_int(getattr(defaults, k, None))}
    for key, small in SPECIAL_IDS.items():
        value = getattr(defaults, key, None)
        if key in takes and is_int(value) and value >= VOCAB:
            kwargs[key] = small
    kwargs.update(arch.overrides)
    return kwargs


def build_config(model_type):
    from transformers import AutoConfig

    return AutoConfig.for_model(model_type, **config_kwargs(model_type))


def build(model_type):
    """The model in eval mode; raises NotAvailable (with the reason) when the installed transformers
    has no `model_type`, or its config or the task's Auto class no longer builds it."""
    import transformers
    from transformers import CONFIG_MAPPING

    version = f"transformers {transformers.__version__}"
    if model_type not in CONFIG_MAPPING:
        raise NotAvailable(f"{version} has no model type {model_type!r}")
    try:
        config = build_config(model_type)
    except Exception as exc:  # a config field renamed, removed or checked differently
        raise NotAvailable(f"{version} does not build its config: {_first_line(exc)}") from exc
    auto_name = TASKS[ARCHS[model_type].task][0]
    try:
        return getattr(transformers, auto_name).from_config(config).eval()
    except Exception as exc:  # no class for the task, or the model code no longer fits its config
        raise NotAvailable(f"{version} does not build {auto_name} from it: {_first_line(exc)}") from exc


def _first_line(exc):
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:200] if lines else ''}"


def inputs(model_type, dtype, shape=SEQ):
    """The forward's keyword arguments (called after torch.manual_seed(0)). shape is (batch,
    tokens) of the token ids (input_ids, decoder_input_ids); image and audio inputs take its
    batch and keep their size."""
    import torch

    kind = TASKS[ARCHS[model_type].task][1]
    batch = shape[0]
    out = {}
    if kind.startswith("input_ids"):
        out["input_ids"] = torch.randint(0, VOCAB, shape)
    elif kind == "pixel_values":
        out["pixel_values"] = torch.randn(batch, 3, IMAGE, IMAGE).to(dtype)
    elif kind == "input_values":
        out["input_values"] = torch.randn(batch, AUDIO_SAMPLES).to(dtype)
    elif kind.startswith("input_features"):
        out["input_features"] = torch.randn(batch, MEL_BINS, 2 * SOURCE_POSITIONS).to(dtype)
    if kind.endswith("decoder_input_ids"):
        out["decoder_input_ids"] = torch.randint(0, VOCAB, shape)
    return out


def describe(model_type):
    """One line: the Auto class, the inputs, the architecture's own overrides (no import)."""
    arch = ARCHS[model_type]
    auto, kind = TASKS[arch.task]
    text = (f"{auto}.from_config(AutoConfig.for_model({model_type!r})), shrunk to hidden {HIDDEN}, "
            f"{LAYERS} layers, {HEADS} heads, ffn {FFN}, vocab {VOCAB}; inputs {kind}")
    if arch.overrides:
        text += "; overrides " + ", ".join(f"{k}={v}" for k, v in arch.overrides.items())
    return text + (f" ({arch.note})" if arch.note else "")


def spec(model_type):
    """The ModelSpec of one sweep architecture; raises KeyError for an unknown one."""
    arch = ARCHS[model_type]
    return ModelSpec(PREFIX + model_type, lambda: build(model_type), lambda dtype: inputs(model_type, dtype),
                     description=describe(model_type), config_overrides=dict(arch.overrides),
                     inputs_at=lambda dtype, shape: inputs(model_type, dtype, shape))
