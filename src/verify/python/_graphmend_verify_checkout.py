"""`graphmend verify CHECKOUT/`'s driver: build a Hub-style checkout's model, compile it, call it.

    python -m _graphmend_verify_checkout CHECKOUT [--tiny] [--device D] [--dtype float32] [--calls N]

The model comes from CHECKOUT/config.json with random weights (nothing is downloaded:
HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE are set unless the environment sets them):

- the config: the class `auto_map["AutoConfig"]` names, imported from the checkout (below), else
  transformers' own class of the config's `model_type` (`AutoConfig.from_pretrained(CHECKOUT)`);
- `--tiny` shrinks it the way benchmarks/_harness/sweep.py shrinks an architecture: every size
  field the config class takes as an argument and whose value is an int (hidden sizes, layers,
  heads, feed-forward sizes, vocabulary, positions, experts) set to the sweep's small value,
  special token ids moved into the small vocabulary, then the sweep's own overrides for that
  model_type. A config.json that holds only `{"model_type": "gpt2"}` thus builds, with --tiny,
  the same model as the sweep's row `sweep:gpt2`, with the same weights;
- the model class: `auto_map["AutoModel"]` (else the first other `auto_map` model entry) from
  the checkout; else the first of the config's `architectures` that transformers has; else the
  sweep's Auto class for the model_type (AutoModelForCausalLM for gpt2, AutoModelForMaskedLM for
  bert, ...); else `transformers.AutoModel`. Built with `_from_config(config)` (what
  `AutoModel.from_config` does), or `Class(config)` for a plain nn.Module, after
  `torch.manual_seed(0)`, with memory left uninitialised filled with NaN (deterministic
  algorithms on, while it is built); a floating parameter that then holds NaN (the model's code
  never initialised it: `skip_init`, `torch.empty`, no `post_init`, as in ChatGLM2's remote
  code) gets random values: a bias 0, another 1-D parameter 1, else normal(0,
  initializer_range or 0.02), from a generator of its own seeded 0; then `.to(dtype)`,
  `.to(device)`, `eval()`.
- the inputs (made after `torch.manual_seed(0)`, as the harness does), from the names the
  model's `forward` takes, the harness's shapes (batch 1, 8 tokens):
  `input_ids` (1, 8) over the vocabulary, plus `decoder_input_ids` (1, 8) for an
  encoder-decoder; else `pixel_values` (1, num_channels, image_size, image_size); else
  `input_values` (1, 400); else `input_features` (1, num_mel_bins, 2 * max_source_positions)
  (plus `decoder_input_ids`); else the first argument as a float tensor (1, 8, hidden_size)
  (`hidden_states`, `x`: the checkouts whose model takes embeddings). With `--attention-mask`,
  an all-ones `attention_mask` beside the token ids (off by default, as in the harness, whose
  graph counts these then agree with).
- `torch.compile(model, dynamic=False)` and N calls (default 1) under `torch.no_grad()`.

Exit 0 on success; on failure the traceback goes to stderr and the exit code is 1. Nothing is
printed to stdout but what the model prints (verify compares the two runs' stdout).

How the checkout's own files are imported. With `trust_remote_code=True`, transformers copies the
remote code into HF_MODULES_CACHE and imports the copy; verify's second run redirects modules
whose files lie under the checkout to a fixed copy, and a cache copy lies outside the checkout,
so the fixed files would never run. This driver therefore never lets transformers load remote
code: it makes a package named `graphmend_checkout` whose `__path__` is `[CHECKOUT]` (no
`__init__.py` is needed or run) and imports `graphmend_checkout.configuration_x` /
`graphmend_checkout.modeling_x` by `importlib.import_module`, i.e. through `sys.meta_path`,
where verify's redirecting finder sits first. The checkout's relative imports
(`from .configuration_alpha import AlphaConfig`) resolve inside that package, and the module
files are the checkout's own (`__file__` under CHECKOUT, or under the fixed copy when redirected).
Logger names are `graphmend_checkout.modeling_x` (transformers would say
`transformers_modules.<folder>.modeling_x`); both of verify's runs use the same name.
An `auto_map` entry that names another repository (`org/repo--module.Class`) is refused.

GRAPHMEND_VERIFY_DRIVER_COUNT=PATH (for tests, undocumented in verify's help): compile with a
counting backend that runs each FX graph as traced, and write `{"graphs": total, "per_call":
[graphs made by each call]}` to PATH.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.machinery
import importlib.util
import inspect
import json
import os
import sys
from _graphmend_verify_driver import COUNT_ENV, compile_and_call, run_main  # noqa: F401  (COUNT_ENV: tests)

PACKAGE = "graphmend_checkout"

# --- the sweep's sizes (benchmarks/_harness/models.py, sweep.py; copied: this file stands alone) ---
VOCAB, SEQ = 128, (1, 8)
HIDDEN, LAYERS, HEADS, FFN = 64, 2, 2, 128
POSITIONS = 64
EXPERTS, EXPERTS_PER_TOKEN = 4, 2
IMAGE = 32
AUDIO_SAMPLES = 400
MEL_BINS, SOURCE_POSITIONS = 8, 16

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
SPECIAL_IDS = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, "decoder_start_token_id": 0,
               "forced_eos_token_id": 2, "forced_bos_token_id": 1, "sep_token_id": 2, "cls_token_id": 1}
TASK_AUTO = {"causal-lm": "AutoModelForCausalLM", "masked-lm": "AutoModelForMaskedLM",
             "seq2seq-lm": "AutoModelForSeq2SeqLM", "image-classification": "AutoModelForImageClassification",
             "ctc": "AutoModelForCTC", "speech-seq2seq": "AutoModelForSpeechSeq2Seq"}
_IMAGE = dict(image_size=IMAGE, patch_size=8, encoder_stride=8)
# model_type -> (task, overrides): sweep.py's ARCHS.
ARCHS = {
    **dict.fromkeys(("gpt2", "gptj", "gpt_neox", "gpt_bigcode", "llama", "mistral", "mixtral", "qwen2", "qwen2_moe",
                     "qwen3", "qwen3_moe", "phimoe", "olmoe", "granitemoe", "phi", "phi3", "gemma", "falcon",
                     "bloom", "opt", "mpt", "stablelm", "olmo", "olmo2", "starcoder2", "cohere", "granite",
                     "xglm", "ctrl", "open-llama"), ("causal-lm", {})),
    "gpt_neo": ("causal-lm", dict(attention_types=[[["global", "local"], 1]], window_size=4)),
    "dbrx": ("causal-lm", dict(attn_config=dict(kv_n_heads=HEADS, clip_qkv=8.0, rope_theta=10000.0),
                               ffn_config=dict(ffn_hidden_size=FFN, moe_num_experts=EXPERTS,
                                               moe_top_k=EXPERTS_PER_TOKEN))),
    "jamba": ("causal-lm", dict(use_mamba_kernels=False, attn_layer_period=2, attn_layer_offset=1,
                                expert_layer_period=1, expert_layer_offset=0)),
    "deepseek_v3": ("causal-lm", dict(n_routed_experts=EXPERTS, n_group=1, topk_group=1, first_k_dense_replace=0,
                                      q_lora_rank=32, kv_lora_rank=16, qk_rope_head_dim=16,
                                      qk_nope_head_dim=16, v_head_dim=HIDDEN // HEADS)),
    "gemma2": ("causal-lm", dict(use_cache=False)),
    "gemma3_text": ("causal-lm", dict(use_cache=False)),
    "codegen": ("causal-lm", dict(n_head=4, rotary_dim=8)),
    **dict.fromkeys(("bert", "roberta", "albert", "distilbert", "electra", "deberta", "deberta-v2", "xlm-roberta",
                     "camembert", "mpnet", "convbert", "roformer", "megatron-bert", "ernie", "data2vec-text",
                     "nezha"), ("masked-lm", {})),
    **dict.fromkeys(("t5", "mt5", "umt5", "bart", "mbart", "marian", "pegasus", "blenderbot", "blenderbot-small",
                     "longt5", "m2m_100", "plbart"), ("seq2seq-lm", {})),
    "switch_transformers": ("seq2seq-lm", dict(num_sparse_encoder_layers=LAYERS, num_sparse_decoder_layers=LAYERS)),
    "nllb-moe": ("seq2seq-lm", dict(encoder_sparse_step=1, decoder_sparse_step=1)),
    "led": ("seq2seq-lm", dict(attention_window=4)),
    "vit": ("image-classification", _IMAGE),
    "deit": ("image-classification", dict(_IMAGE, architectures=["DeiTForImageClassification"])),
    "swin": ("image-classification", dict(image_size=IMAGE, patch_size=4, embed_dim=16, depths=[2, 2],
                                          num_heads=[2, 2], window_size=4)),
    "convnext": ("image-classification", dict(image_size=IMAGE, num_stages=2, hidden_sizes=[16, 32], depths=[1, 1])),
    "wav2vec2": ("ctc", dict(conv_dim=[32, 32], conv_stride=[5, 2], conv_kernel=[10, 3],
                             num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2)),
    "whisper": ("speech-seq2seq", dict(num_mel_bins=MEL_BINS, max_source_positions=SOURCE_POSITIONS)),
}
# auto_map keys tried for the model when there is no "AutoModel", in this order.
AUTO_MAP_MODELS = ("AutoModel", "AutoModelForCausalLM", "AutoModelForSeq2SeqLM", "AutoModelForMaskedLM",
                   "AutoModelForSequenceClassification", "AutoModelForImageClassification",
                   "AutoModelForSpeechSeq2Seq", "AutoModelForCTC")


class CheckoutError(Exception):
    """The checkout cannot be built as asked (no config.json, an auto_map entry of another repo)."""


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m _graphmend_verify_checkout",
                                description="Build CHECKOUT/config.json's model with random weights, "
                                            "torch.compile it and call it on dummy inputs.")
    p.add_argument("checkout")
    p.add_argument("--tiny", action="store_true", help="shrink the config as benchmarks/_harness/sweep.py does")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="float32", choices=("float32", "float16", "bfloat16"))
    p.add_argument("--calls", type=int, default=1, help="compiled calls on the same inputs (default 1)")
    p.add_argument("--attention-mask", action="store_true",
                   help="also pass an all-ones attention_mask beside input_ids")
    args = p.parse_args(argv)
    if args.calls < 1:
        p.error("--calls must be at least 1")
    return args


# --- importing the checkout ------------------------------------------------------------------

def checkout_package(checkout):
    """The package PACKAGE with __path__ [checkout] (made once; no __init__.py is run)."""
    module = sys.modules.get(PACKAGE)
    if module is not None:
        return module
    spec = importlib.machinery.ModuleSpec(PACKAGE, None, is_package=True)
    spec.submodule_search_locations = [checkout]
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = module
    return module


def checkout_class(checkout, reference):
    """The class an auto_map entry names ("modeling_alpha.AlphaModel"), imported from the checkout."""
    if isinstance(reference, (list, tuple)):  # AutoTokenizer-style [slow, fast]
        reference = next(r for r in reference if r)
    if "--" in reference:
        raise CheckoutError(f"auto_map entry {reference!r} names code in another repository; "
                            "only the checkout's own files can be built (no download)")
    module_name, _, class_name = reference.rpartition(".")
    checkout_package(checkout)
    module = importlib.import_module(f"{PACKAGE}.{module_name}")
    return getattr(module, class_name)


# --- the config ------------------------------------------------------------------------------

def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def tiny_kwargs(config_class, values, model_type):
    """The sweep's shrinking: {field: small value} for config_class whose current values are `values`."""
    try:
        takes = set(inspect.signature(config_class.__init__).parameters)
    except (TypeError, ValueError):
        takes = set()
    kwargs = {k: v for k, v in SHRINK.items() if k in takes and _is_int(values.get(k))}
    for key, small in SPECIAL_IDS.items():
        value = values.get(key)
        if key in takes and _is_int(value) and value >= VOCAB:
            kwargs[key] = small
    kwargs.update(ARCHS.get(model_type, (None, {}))[1])
    return kwargs


def load_config(checkout, raw, tiny):
    """(config, config class from the checkout or None)."""
    auto_map = raw.get("auto_map") or {}
    if "AutoConfig" in auto_map:
        config_class = checkout_class(checkout, auto_map["AutoConfig"])
    else:
        from transformers import CONFIG_MAPPING

        model_type = raw.get("model_type")
        if model_type not in CONFIG_MAPPING:
            raise CheckoutError(f"config.json: model_type {model_type!r} is not a transformers model type and "
                                "auto_map has no AutoConfig")
        config_class = CONFIG_MAPPING[model_type]
    config_dict, _ = config_class.get_config_dict(checkout)
    if tiny:
        # The values the class sees: its defaults, then what config.json sets (attribute names
        # such as hidden_size for gpt2's n_embd are read through the config).
        defaults = config_class.from_dict(dict(config_dict))
        values = {k: getattr(defaults, k, None) for k in list(SHRINK) + list(SPECIAL_IDS)}
        model_type = raw.get("model_type") or getattr(config_class, "model_type", None)
        config_dict = {**config_dict, **tiny_kwargs(config_class, values, model_type)}
    return config_class.from_dict(config_dict)


# --- the model -------------------------------------------------------------------------------

def model_class(checkout, raw, config):
    """(class, how to build: "from_config" for an Auto class, else "class")."""
    import transformers

    auto_map = raw.get("auto_map") or {}
    for key in AUTO_MAP_MODELS + tuple(k for k in auto_map if k.startswith("AutoModel")):
        if key in auto_map:
            return checkout_class(checkout, auto_map[key]), "class"
    for name in raw.get("architectures") or getattr(config, "architectures", None) or ():
        cls = getattr(transformers, name, None)
        if cls is not None:
            return cls, "class"
    task = ARCHS.get(getattr(config, "model_type", None), (None,))[0]
    return getattr(transformers, TASK_AUTO[task] if task else "AutoModel"), "from_config"


def build_model(checkout, raw, config):
    import torch

    cls, how = model_class(checkout, raw, config)
    # Memory the model's code leaves uninitialised (torch.empty parameters, skip_init, no
    # post_init: remote code that counts on from_pretrained loading every weight) is filled with
    # NaN while the model is built, and then given random values: else it holds whatever the
    # allocator had, different from run to run, NaN often, and the outputs prove nothing.
    deterministic = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        torch.manual_seed(0)
        if how == "from_config":
            model = cls.from_config(config)
        elif hasattr(cls, "_from_config"):
            model = cls._from_config(config)
        else:
            model = cls(config)
    finally:
        torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
    init_uninitialized(model, config)
    return model


def init_uninitialized(model, config):
    """Give random values to the floating parameters that hold NaN after building; their names.

    What transformers' own _init_weights does: a bias 0, another 1-D parameter (a norm's weight) 1,
    anything else normal(0, config.initializer_range or 0.02); from a generator seeded 0, so the
    global RNG the inputs come from is left as it was."""
    import torch

    std = getattr(config, "initializer_range", None)
    std = std if isinstance(std, float) and std > 0 else 0.02
    generator = torch.Generator().manual_seed(0)
    names = []
    with torch.no_grad():
        for name, param in model.named_parameters():
            if not param.is_floating_point() or not bool(torch.isnan(param).any()):
                continue
            names.append(name)
            if name.rpartition(".")[2] == "bias":
                param.zero_()
            elif param.dim() == 1:
                param.fill_(1.0)
            else:
                param.copy_(torch.empty(param.shape, dtype=torch.float32).normal_(0.0, std, generator=generator))
    return names


# --- the inputs ------------------------------------------------------------------------------

def _size(value, default):
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    return value if _is_int(value) else default


def make_inputs(model, config, dtype, attention_mask=False):
    """The forward's keyword arguments (called after torch.manual_seed(0))."""
    import torch

    params = inspect.signature(model.forward).parameters
    batch = SEQ[0]
    encoder_decoder = bool(getattr(config, "is_encoder_decoder", False)) and "decoder_input_ids" in params
    vocab = _size(getattr(config, "vocab_size", None), VOCAB)
    out = {}
    if "input_ids" in params:
        out["input_ids"] = torch.randint(0, vocab, SEQ)
        if attention_mask and "attention_mask" in params:
            out["attention_mask"] = torch.ones(SEQ, dtype=torch.long)
    elif "pixel_values" in params:
        image = _size(getattr(config, "image_size", None), IMAGE)
        channels = _size(getattr(config, "num_channels", None), 3)
        out["pixel_values"] = torch.randn(batch, channels, image, image).to(dtype)
    elif "input_values" in params:
        out["input_values"] = torch.randn(batch, AUDIO_SAMPLES).to(dtype)
    elif "input_features" in params:
        mel = _size(getattr(config, "num_mel_bins", None), MEL_BINS)
        positions = _size(getattr(config, "max_source_positions", None), SOURCE_POSITIONS)
        out["input_features"] = torch.randn(batch, mel, 2 * positions).to(dtype)
    else:
        first = next((p for p in params.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)), None)
        if first is None:
            raise CheckoutError(f"{type(model).__name__}.forward takes no named argument to give inputs to")
        hidden = _size(getattr(config, "hidden_size", None), HIDDEN)
        out[first.name] = torch.randn(*SEQ, hidden).to(dtype)
    if encoder_decoder:
        out["decoder_input_ids"] = torch.randint(0, vocab, SEQ)
    return out


# --- running ---------------------------------------------------------------------------------

def run(args):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    checkout = os.path.abspath(args.checkout)
    config_path = os.path.join(checkout, "config.json")
    if not os.path.isfile(config_path):
        raise CheckoutError(f"{checkout} has no config.json: verify a script with "
                            "`graphmend verify PATH -- python SCRIPT`")
    with open(config_path, encoding="utf-8") as f:
        raw = json.load(f)

    import torch

    dtype = getattr(torch, args.dtype)
    config = load_config(checkout, raw, args.tiny)
    model = build_model(checkout, raw, config).to(dtype).to(args.device).eval()
    torch.manual_seed(0)
    inputs = {k: v.to(args.device) for k, v in make_inputs(model, config, dtype, args.attention_mask).items()}

    compile_and_call(torch, model, args.calls, lambda compiled: compiled(**inputs))


def main(argv=None):
    return run_main(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
