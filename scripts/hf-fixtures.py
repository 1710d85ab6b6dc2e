#!/usr/bin/env python3
"""Regenerate the tiny Hugging Face checkpoints under test/fixtures/hf/.

What it makes
-------------
One directory per decoder family (Llama with biases / llama3 / yarn / linear / dynamic RoPE,
Mistral, sharded Qwen2, Qwen3, OLMo-2, GPT-NeoX parallel and sequential, Gemma-2, Phi-3), each
a real `save_pretrained` checkpoint of transformers' own model class:

    config.json, model.safetensors (or model-0000k-of-0000n.safetensors + model.safetensors.index.json),
    tokenizer.json, tokenizer_config.json, reference.json

and test/fixtures/hf/README.md (what each fixture exercises, and the measured sensitivity table).

Why
---
The in-process runner for safetensors checkpoints builds its own ONNX graph from config.json and
the weights. These fixtures are what it is checked against: `reference.json` holds the log-probs
of lm-evaluation-harness-style (context, continuation) pairs and 16-token greedy continuations,
all computed here by transformers itself in fp32 on CPU with eager attention, on the weights as
stored (bf16/fp16 fixtures are reloaded from disk and upcast to fp32 before the reference runs).

The default 0.02 init makes every family compute nearly the same thing (tiny activations, flat
logits), so a runner could skip a bias, a norm or a RoPE variant and still match. Every weight is
therefore re-drawn "wide" (std 1.5/sqrt(fan_in), biases N(0, 0.3), norm weights U[0.5, 1.5]),
and for each fixture the reference nats are recomputed with one feature perturbed; the script
asserts that each perturbation moves the summed nats by far more than 1e-3 (except the ones that
are meant to be no-ops, e.g. dynamic RoPE inside its window) and writes the numbers into README.md.

All checkpoints share one tiny byte-level BPE tokenizer (384 tokens, `<|endoftext|>` = id 0, no
BOS added on encode) trained here on a fixed, sorted set of Python sources of the installed
transformers package.

Deterministic: fixed seeds, fixed files; rerun with

    python3 scripts/hf-fixtures.py

(needs torch, transformers 5.x, tokenizers, safetensors; CPU only; well under a minute on 2 cores).
"""

from __future__ import annotations

import copy
import json
import math
import re
import shutil
import sys
from pathlib import Path

import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    Gemma2Config,
    Gemma2ForCausalLM,
    GPTNeoXConfig,
    GPTNeoXForCausalLM,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    Olmo2Config,
    Olmo2ForCausalLM,
    Phi3Config,
    Phi3ForCausalLM,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)

torch.set_num_threads(1)  # tiny matrices: one thread is ~40x faster than two on a busy 2-core box, and reproducible
torch.use_deterministic_algorithms(True)
transformers.logging.set_verbosity_error()

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "test" / "fixtures" / "hf"
EOT = "<|endoftext|>"
VOCAB = 384
NEW_TOKENS = 16
MIN_GAP = 1e-3  # top-1 minus top-2 log-prob at every greedy step
SENSITIVE = 1e-2  # a perturbation must move the summed nats by more than this (README shows the real numbers)

# ---------------------------------------------------------------------------------------------
# Tokenizer


TOKENIZER_SOURCES = sorted(
    [
        "activations.py",
        "modeling_rope_utils.py",
        "models/gpt2/modeling_gpt2.py",
        "models/llama/modeling_llama.py",
        "models/mistral/modeling_mistral.py",
    ]
)


def make_tokenizer() -> PreTrainedTokenizerFast:
    root = Path(transformers.__file__).parent
    texts = [(root / f).read_text(encoding="utf-8") for f in TOKENIZER_SOURCES]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=[EOT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    assert tok.token_to_id(EOT) == 0, tok.token_to_id(EOT)
    assert tok.get_vocab_size() == VOCAB, tok.get_vocab_size()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=EOT, eos_token=EOT, add_bos_token=False, add_eos_token=False)
    probe = "def f(x):\n    return x"
    assert fast(probe, add_special_tokens=True).input_ids == fast(probe, add_special_tokens=False).input_ids
    assert 0 not in fast(probe).input_ids
    return fast


# ---------------------------------------------------------------------------------------------
# Probe text: (context, continuation) pairs and generation prompts, Python-code-like.

ITEMS = [
    (
        "def apply_rotary(q, k, cos, sin):\n    q_embed = (q * cos) + (rotate_half(q) * sin)\n    k_embed = (k * cos) + (rotate_half(k) * sin)\n    return",
        " q_embed, k_embed",
    ),
    (
        "class Counter:\n    def __init__(self):\n        self.count = 0\n\n    def increment(self):\n        self.count +=",
        " 1\n        return self.count",
    ),
    (
        "import os\nimport sys\n\n\ndef main(argv):\n    if len(argv) < 2:\n        print(\"usage: tool FILE\")\n        return 1\n    path = argv[1]\n    with open(path) as f:\n        data = f.read()\n    ",
        "print(len(data))",
    ),
    (
        "def softmax(x, dim=-1):\n    x = x - x.max(dim=dim, keepdim=True).values\n    e = x.exp()\n    return e /",
        " e.sum(dim=dim)",
    ),
    (
        "for i in range(10):\n    if i % 2 == 0:\n        continue\n    total",
        " += i",
    ),
    (
        "    def forward(self, hidden_states):\n        residual = hidden_states\n        hidden_states = self.input_layernorm(hidden_states)\n        hidden_states = self.self_attn(hidden_states)\n        hidden_states = residual +",
        " hidden_states",
    ),
    (
        "try:\n    value = int(text)\nexcept ValueError:\n    value = None\nif value is None:\n    raise",
        " ValueError(text)",
    ),
    (
        "def read_config(path):\n    with open(path, encoding=\"utf-8\") as f:\n        config = json.load(f)\n    return config\n\n\nconfig = read_config(\"config.json\")\nhidden_size = config[",
        "\"hidden_size\"]",
    ),
    (
        "x = [1, 2, 3]\ny = [a * a for a in x]\nassert y ==",
        " [1, 4, 9]",
    ),
    (
        "    @property\n    def num_heads(self):\n        return self.config.num_attention_heads\n\n    @property\n    def head_dim(self):\n        return self.config.hidden_size //",
        " self.num_heads",
    ),
]

PROMPTS = [
    "def forward(self, x):\n    x = self.norm(x)\n",
    "import torch\nfrom torch import nn\n\n\nclass",
    "    if attention_mask is not None:\n        attn_weights =",
    "def main():\n    args = parse_args()\n    ",
    "for key, value in state_dict.items():\n",
    "        return hidden_states, attn_weights\n\n\ndef",
    "logger = logging.get_logger(__name__)\n\n\n",
    "    def __init__(self, config):\n        super().__init__()\n",
]


def lm_eval_split(tok, context: str, continuation: str):
    """lm-evaluation-harness `_encode_pair`: trailing whitespace of the context moves to the
    continuation; the joint text is encoded once and split at the token count of the context."""
    n_spaces = len(context) - len(context.rstrip())
    if n_spaces > 0:
        continuation = context[-n_spaces:] + continuation
        context = context[:-n_spaces]
    whole = tok(context + continuation, add_special_tokens=False).input_ids
    ctx = tok(context, add_special_tokens=False).input_ids
    return context, continuation, ctx, whole[len(ctx) :], whole[: len(ctx)] == ctx


def make_items(tok):
    items = []
    for context, continuation in ITEMS:
        context, continuation, ctx, cont, is_prefix = lm_eval_split(tok, context, continuation)
        if not is_prefix:
            print(f"  skip item (context ids not a prefix of the joint encoding): {context[-20:]!r}")
            continue
        assert 30 <= len(ctx) <= 120, (len(ctx), context)
        assert 3 <= len(cont) <= 20, (len(cont), continuation)
        items.append({"context": context, "continuation": continuation, "context_ids": ctx, "continuation_ids": cont})
    assert len(items) >= 8, len(items)
    for i, it in enumerate(items):
        it["id"] = f"i{i}"
    return items


# ---------------------------------------------------------------------------------------------
# Fixture specs

COMMON = dict(
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=4,
    max_position_embeddings=256,
    bos_token_id=0,
    eos_token_id=0,
    pad_token_id=None,
    vocab_size=VOCAB,
)


def spec(name, cls, cfg_cls, dtype, cfg, perturb, check, shard=None, one_plus_norm=False):
    return dict(
        name=name,
        cls=cls,
        cfg_cls=cfg_cls,
        dtype=dtype,
        cfg={**COMMON, **cfg},
        perturb=perturb,
        check=check,
        shard=shard,
        one_plus_norm=one_plus_norm,
    )


# Perturbations: (label, fn(config, state_dict) -> None, expect_change). They mutate copies.


def zero_biases(match=lambda k: True):
    def fn(cfg, sd):
        for k in sd:
            if k.endswith(".bias") and match(k):
                sd[k].zero_()

    return fn


def ones(*suffixes):
    def fn(cfg, sd):
        hit = [k for k in sd if any(k.endswith(s) for s in suffixes)]
        assert hit, suffixes
        for k in hit:
            sd[k].fill_(1.0)

    return fn


def fill(value, *suffixes):
    def fn(cfg, sd):
        hit = [k for k in sd if any(k.endswith(s) for s in suffixes)]
        assert hit, suffixes
        for k in hit:
            sd[k].fill_(value)

    return fn


def set_cfg(**kw):
    def fn(cfg, sd):
        for k, v in kw.items():
            setattr(cfg, k, v)

    return fn


def set_rope(**kw):
    def fn(cfg, sd):
        cfg.rope_parameters = {**cfg.rope_parameters, **kw}

    return fn


def default_rope(cfg, sd):
    rp = cfg.rope_parameters
    cfg.rope_parameters = {"rope_type": "default", "rope_theta": rp["rope_theta"], "partial_rotary_factor": rp.get("partial_rotary_factor", 1.0)}


def all_full(cfg, sd):
    cfg.layer_types = ["full_attention"] * cfg.num_hidden_layers


SPECS = [
    spec(
        "llama-bias-untied",
        LlamaForCausalLM,
        LlamaConfig,
        torch.float32,
        dict(
            num_key_value_heads=2,
            head_dim=24,
            attention_bias=True,
            mlp_bias=True,
            tie_word_embeddings=False,
            rope_parameters=dict(
                rope_type="llama3",
                rope_theta=10000.0,
                factor=4.0,
                low_freq_factor=1.0,
                high_freq_factor=4.0,
                original_max_position_embeddings=64,
            ),
        ),
        perturb=[
            ("attention biases zeroed", zero_biases(lambda k: ".self_attn." in k), True),
            ("MLP biases zeroed", zero_biases(lambda k: ".mlp." in k), True),
            ("rope llama3 → default", default_rope, True),
            ("final norm weight → ones", ones("model.norm.weight"), True),
        ],
        check=lambda c: c["attention_bias"] is True
        and c["mlp_bias"] is True
        and c["head_dim"] == 24
        and c["tie_word_embeddings"] is False
        and c["num_key_value_heads"] == 2
        and c["rope_parameters"]["rope_type"] == "llama3"
        and c["rope_parameters"]["factor"] == 4.0
        and c["rope_parameters"]["low_freq_factor"] == 1.0
        and c["rope_parameters"]["high_freq_factor"] == 4.0
        and c["rope_parameters"]["original_max_position_embeddings"] == 64,
    ),
    spec(
        "llama-yarn-bf16",
        LlamaForCausalLM,
        LlamaConfig,
        torch.bfloat16,
        dict(
            num_key_value_heads=2,
            tie_word_embeddings=True,
            rope_parameters=dict(rope_type="yarn", rope_theta=10000.0, factor=4.0, original_max_position_embeddings=64),
        ),
        perturb=[
            ("rope yarn → default", default_rope, True),
            ("input norms → ones", ones("input_layernorm.weight"), True),
        ],
        check=lambda c: c["tie_word_embeddings"] is True
        and c["rope_parameters"]["rope_type"] == "yarn"
        and c["rope_parameters"]["factor"] == 4.0
        and c["rope_parameters"]["original_max_position_embeddings"] == 64
        and c["dtype"] == "bfloat16",
    ),
    spec(
        "llama-linear-fp16",
        LlamaForCausalLM,
        LlamaConfig,
        torch.float16,
        dict(
            num_key_value_heads=2,
            tie_word_embeddings=False,
            rope_parameters=dict(rope_type="linear", rope_theta=10000.0, factor=2.0),
        ),
        perturb=[
            ("rope linear → default", default_rope, True),
            ("post-attention norms → ones", ones("post_attention_layernorm.weight"), True),
        ],
        check=lambda c: c["rope_parameters"]["rope_type"] == "linear" and c["rope_parameters"]["factor"] == 2.0 and c["dtype"] == "float16",
    ),
    spec(
        "llama-dynamic",
        LlamaForCausalLM,
        LlamaConfig,
        torch.float32,
        dict(
            num_key_value_heads=2,
            tie_word_embeddings=True,
            rope_parameters=dict(rope_type="dynamic", rope_theta=10000.0, factor=2.0, original_max_position_embeddings=256),
        ),
        perturb=[
            ("rope dynamic → default (no-op inside the 256 window)", default_rope, False),
            ("rope_theta 10000 → 500", set_rope(rope_theta=500.0), True),
        ],
        check=lambda c: c["rope_parameters"]["rope_type"] == "dynamic"
        and c["rope_parameters"]["factor"] == 2.0
        and c["rope_parameters"]["original_max_position_embeddings"] == 256,
    ),
    spec(
        "mistral",
        MistralForCausalLM,
        MistralConfig,
        torch.bfloat16,
        dict(num_key_value_heads=2, sliding_window=8, tie_word_embeddings=False),
        perturb=[
            ("sliding_window 8 → None", set_cfg(sliding_window=None), True),
            ("sliding_window 8 → 9", set_cfg(sliding_window=9), True),
        ],
        check=lambda c: c["sliding_window"] == 8 and c["num_key_value_heads"] == 2 and c["dtype"] == "bfloat16",
    ),
    spec(
        "qwen2-sharded",
        Qwen2ForCausalLM,
        Qwen2Config,
        torch.float32,
        dict(num_key_value_heads=2, use_sliding_window=True, sliding_window=8, max_window_layers=1, tie_word_embeddings=False),
        perturb=[
            ("layer_types → all full_attention", all_full, True),
            ("q/k/v biases zeroed", zero_biases(), True),
        ],
        check=lambda c: c["use_sliding_window"] is True
        and c["sliding_window"] == 8
        and c["max_window_layers"] == 1
        and c["layer_types"] == ["full_attention", "sliding_attention"],
        shard="150KB",
    ),
    spec(
        "qwen3",
        Qwen3ForCausalLM,
        Qwen3Config,
        torch.float16,
        dict(num_key_value_heads=2, head_dim=32, tie_word_embeddings=True),
        perturb=[
            ("q_norm/k_norm weights → ones", ones("q_norm.weight", "k_norm.weight"), True),
        ],
        check=lambda c: c["head_dim"] == 32 and c["num_key_value_heads"] == 2 and c["tie_word_embeddings"] is True and c["dtype"] == "float16",
    ),
    spec(
        "olmo2",
        Olmo2ForCausalLM,
        Olmo2Config,
        torch.float32,
        dict(num_key_value_heads=2, tie_word_embeddings=False),
        perturb=[
            ("q_norm/k_norm weights → ones", ones("q_norm.weight", "k_norm.weight"), True),
            ("post-attention norms → ones", ones("post_attention_layernorm.weight"), True),
        ],
        check=lambda c: c["model_type"] == "olmo2" and c["num_key_value_heads"] == 2,
    ),
    spec(
        "gpt-neox-parallel",
        GPTNeoXForCausalLM,
        GPTNeoXConfig,
        torch.float32,
        dict(rotary_pct=0.25, use_parallel_residual=True, tie_word_embeddings=False),
        perturb=[
            ("rotary_pct 0.25 → 1.0", set_rope(partial_rotary_factor=1.0), True),
            ("use_parallel_residual → false", set_cfg(use_parallel_residual=False), True),
            ("LayerNorm biases zeroed", zero_biases(lambda k: "layernorm" in k or "layer_norm" in k), True),
        ],
        check=lambda c: c["use_parallel_residual"] is True
        and c["rope_parameters"]["partial_rotary_factor"] == 0.25
        and c["tie_word_embeddings"] is False,
    ),
    spec(
        "gpt-neox-sequential",
        GPTNeoXForCausalLM,
        GPTNeoXConfig,
        torch.bfloat16,
        dict(rotary_pct=0.25, use_parallel_residual=False, tie_word_embeddings=False),
        perturb=[
            ("use_parallel_residual → true", set_cfg(use_parallel_residual=True), True),
            ("attention dense bias zeroed", zero_biases(lambda k: "attention.dense" in k), True),
        ],
        check=lambda c: c["use_parallel_residual"] is False
        and c["rope_parameters"]["partial_rotary_factor"] == 0.25
        and c["dtype"] == "bfloat16",
    ),
    spec(
        "gemma2",
        Gemma2ForCausalLM,
        Gemma2Config,
        torch.float32,
        dict(
            num_hidden_layers=4,
            num_key_value_heads=2,
            head_dim=16,
            sliding_window=8,
            attn_logit_softcapping=3.0,
            final_logit_softcapping=5.0,
            query_pre_attn_scalar=20,
            tie_word_embeddings=True,
        ),
        perturb=[
            ("attn_logit_softcapping 3 → None", set_cfg(attn_logit_softcapping=None), True),
            ("final_logit_softcapping 5 → None", set_cfg(final_logit_softcapping=None), True),
            ("layer_types → all full_attention", all_full, True),
            ("query_pre_attn_scalar 20 → 16 (= head_dim)", set_cfg(query_pre_attn_scalar=16), True),
            ("norm weights w → 0 (scale 1+w = 1)", fill(0.0, "layernorm.weight", "norm.weight"), True),
        ],
        check=lambda c: c["sliding_window"] == 8
        and c["attn_logit_softcapping"] == 3.0
        and c["final_logit_softcapping"] == 5.0
        and c["query_pre_attn_scalar"] == 20
        and c["head_dim"] == 16
        and c["num_hidden_layers"] == 4
        and c["layer_types"] == ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
        one_plus_norm=True,
    ),
    spec(
        "phi3",
        Phi3ForCausalLM,
        Phi3Config,
        torch.float32,
        dict(num_key_value_heads=2, partial_rotary_factor=0.5, original_max_position_embeddings=256, tie_word_embeddings=False),
        perturb=[
            ("partial_rotary_factor 0.5 → 1.0", set_rope(partial_rotary_factor=1.0), True),
            ("input norms → ones", ones("input_layernorm.weight"), True),
        ],
        check=lambda c: c["rope_parameters"]["partial_rotary_factor"] == 0.5 and c["num_key_value_heads"] == 2,
    ),
]


# ---------------------------------------------------------------------------------------------
# Wide re-initialisation


@torch.no_grad()
def widen(model, seed: int, one_plus_norm: bool):
    g = torch.Generator().manual_seed(seed)
    norm_types = tuple(
        m for m in {type(mod) for mod in model.modules()} if "Norm" in m.__name__
    )  # LlamaRMSNorm, nn.LayerNorm, Gemma2RMSNorm, ...
    seen = set()
    for mod_name, mod in model.named_modules():
        for p_name, p in mod.named_parameters(recurse=False):
            if id(p) in seen:
                continue
            seen.add(id(p))
            is_norm = isinstance(mod, norm_types)
            if is_norm and p_name == "weight":
                if one_plus_norm:
                    p.copy_(torch.rand(p.shape, generator=g) - 0.5)  # Gemma: scale is (1 + w)
                else:
                    p.copy_(torch.rand(p.shape, generator=g) + 0.5)
            elif is_norm and p_name == "bias":
                p.copy_(torch.randn(p.shape, generator=g) * 0.2)
            elif p_name == "bias":
                p.copy_(torch.randn(p.shape, generator=g) * 0.3)
            elif p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=g) * (1.5 / math.sqrt(p.shape[1])))
            else:
                raise RuntimeError(f"unhandled parameter {mod_name}.{p_name} {tuple(p.shape)}")


# ---------------------------------------------------------------------------------------------
# Reference computations (fp32, eager)


def load_fp32(d: Path):
    m = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation="eager")
    m.eval()
    return m


@torch.no_grad()
def score_items(model, items):
    out = []
    for it in items:
        ids = it["context_ids"] + it["continuation_ids"]
        logits = model(torch.tensor([ids])).logits[0].float()
        lp = torch.log_softmax(logits, dim=-1)
        n = len(it["context_ids"])
        toks, greedy = [], True
        for j, t in enumerate(it["continuation_ids"]):
            row = lp[n + j - 1]
            toks.append(row[t].item())
            greedy = greedy and int(row.argmax()) == t
        out.append((toks, -sum(toks), greedy, lp[n - 1 : n - 1 + len(it["continuation_ids"])]))
    return out


@torch.no_grad()
def greedy_manual(model, prompt_ids, n=NEW_TOKENS):
    ids = list(prompt_ids)
    gaps = []
    for _ in range(n):
        lp = torch.log_softmax(model(torch.tensor([ids])).logits[0, -1].float(), dim=-1)
        top = torch.topk(lp, 2)
        gaps.append((top.values[0] - top.values[1]).item())
        ids.append(int(top.indices[0]))
    return ids[len(prompt_ids) :], min(gaps)


@torch.no_grad()
def greedy_generate(model, prompt_ids):
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    out = model.generate(
        torch.tensor([prompt_ids]),
        attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long),
        do_sample=False,
        max_new_tokens=NEW_TOKENS,
        min_new_tokens=NEW_TOKENS,
        eos_token_id=None,
    )
    return out[0, len(prompt_ids) :].tolist()


def greedy_item(model, tok, items):
    """One extra item per fixture whose continuation is the model's own greedy pick (so `greedy` is
    true somewhere): 5 (else 4, else 3) greedy tokens after an item's context, kept only if the
    decoded text splits back into the same ids and no step is a near-tie."""
    for n, it in [(n, it) for n in (5, 4, 3) for it in items]:
        ids, gap = greedy_manual(model, it["context_ids"], n=n)
        if gap <= MIN_GAP:
            continue
        context, continuation, ctx, cont, is_prefix = lm_eval_split(tok, it["context"], tok.decode(ids))
        if is_prefix and ctx == it["context_ids"] and cont == ids:
            return {
                "id": f"i{len(items)}",
                "context": context,
                "continuation": continuation,
                "context_ids": ctx,
                "continuation_ids": cont,
            }
    raise RuntimeError("no context gives a clean greedy item")


# ---------------------------------------------------------------------------------------------


def build(s, seed, tok, items, prompts):
    name = s["name"]
    d = OUT / name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    torch.manual_seed(seed)
    config = s["cfg_cls"](**s["cfg"])
    model = s["cls"](config).eval()
    widen(model, seed, s["one_plus_norm"])
    model = model.to(s["dtype"])
    kw = {"max_shard_size": s["shard"]} if s["shard"] else {}
    model.save_pretrained(d, **kw)
    tok.save_pretrained(d)
    # The saved tokenizer.json must reproduce every item's ids and carry no BOS-adding post-processor.
    reloaded = PreTrainedTokenizerFast.from_pretrained(d)
    for it in items:
        assert reloaded(it["context"] + it["continuation"]).input_ids == it["context_ids"] + it["continuation_ids"], name
    # AutoTokenizer may substitute a model-specific class (transformers 5 does so for qwen2) that
    # rebuilds the pre-tokenizer; record it, the fixture's truth is tokenizer.json.
    auto = AutoTokenizer.from_pretrained(d)
    auto_diff = [it["id"] for it in items if auto(it["context"] + it["continuation"]).input_ids != it["context_ids"] + it["continuation_ids"]]
    if auto_diff:
        print(f"  NOTE: AutoTokenizer gives {type(auto).__name__}, which tokenizes items {auto_diff} differently from tokenizer.json")

    saved = json.loads((d / "config.json").read_text())
    print(f"\n=== {name}: config.json")
    print(json.dumps(saved, indent=1, sort_keys=True))
    assert s["check"](saved), f"{name}: config.json lacks the intended fields"
    assert saved["bos_token_id"] == 0 and saved["eos_token_id"] == 0 and saved["vocab_size"] == VOCAB
    if s["shard"]:
        shards = sorted(p.name for p in d.glob("model-*.safetensors"))
        assert len(shards) >= 2 and (d / "model.safetensors.index.json").exists(), shards
        print(f"  shards: {shards}")

    model = load_fp32(d)
    items = items + [greedy_item(model, tok, items)]
    scored = score_items(model, items)
    assert scored[-1][2], f"{name}: the greedy item is not greedy"
    all_lp = [x for toks, _, _, _ in scored for x in toks]
    frac_sane = sum(-15 <= x <= 0 for x in all_lp) / len(all_lp)
    print(f"  items: nats {sum(n for _, n, _, _ in scored):.4f}; log-probs in [{min(all_lp):.2f}, {max(all_lp):.2f}], {frac_sane:.0%} within [-15, 0]")
    assert frac_sane >= 0.9 and all(math.isfinite(x) for x in all_lp), name

    gens = []
    for p in prompts:
        ids, gap = greedy_manual(model, p)
        if gap <= MIN_GAP:
            print(f"  skip prompt (near-tie, gap {gap:.2e})")
            continue
        via_generate = greedy_generate(model, p)
        assert via_generate == ids, f"{name}: generate() {via_generate} != manual greedy {ids}"
        gens.append({"prompt_ids": p, "greedy_ids": ids, "min_gap": gap})
        if len(gens) == 3:
            break
    assert len(gens) == 3, name
    print(f"  generate: min top1-top2 gap per prompt {[round(g['min_gap'], 4) for g in gens]}")

    base_nats = sum(n for _, n, _, _ in scored)
    sens = []
    sd0 = {k: v.detach().clone() for k, v in model.state_dict().items()}
    for label, fn, expect in s["perturb"]:
        cfg = copy.deepcopy(model.config)
        sd = {k: v.clone() for k, v in sd0.items()}
        fn(cfg, sd)
        pm = type(model)(cfg).eval()
        pm.load_state_dict(sd, strict=True)
        pnats = sum(n for _, n, _, _ in score_items(pm, items))
        delta = pnats - base_nats
        print(f"  perturb {label!r}: Δ nats {delta:+.4f}")
        if expect:
            assert abs(delta) > SENSITIVE, f"{name}: {label} moved nats by only {delta}"
        else:
            assert abs(delta) < 1e-4, f"{name}: {label} was meant to be a no-op, moved {delta}"
        sens.append((label, delta))

    ref = {
        "made_by": "scripts/hf-fixtures.py",
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "dtype_stored": str(s["dtype"]).removeprefix("torch."),
        "items": [
            {
                "id": it["id"],
                "context": it["context"],
                "continuation": it["continuation"],
                "context_ids": it["context_ids"],
                "continuation_ids": it["continuation_ids"],
                "token_logprobs": toks,
                "nats": nats,
                "greedy": greedy,
            }
            for it, (toks, nats, greedy, _) in zip(items, scored)
        ],
        "generate": [{"prompt_ids": g["prompt_ids"], "greedy_ids": g["greedy_ids"]} for g in gens],
    }
    (d / "reference.json").write_text(compact_json(ref))
    return dict(name=name, saved=saved, auto_tok=(type(auto).__name__, len(auto_diff)), nats=base_nats, sens=sens, gaps=[g["min_gap"] for g in gens], lp_range=(min(all_lp), max(all_lp)))


def compact_json(obj) -> str:
    """Indented JSON with every list of numbers on one line (a third of the bytes of indent=1)."""
    text = json.dumps(obj, indent=1)
    return re.sub(r"\[\s*([-+0-9.eE,\s]*?)\s*\]", lambda m: "[" + re.sub(r",\s+", ", ", m.group(1)) + "]", text) + "\n"


def highlights(s, saved) -> str:
    keys = [
        "head_dim",
        "num_hidden_layers",
        "num_key_value_heads",
        "attention_bias",
        "mlp_bias",
        "tie_word_embeddings",
        "sliding_window",
        "use_sliding_window",
        "max_window_layers",
        "layer_types",
        "use_parallel_residual",
        "attn_logit_softcapping",
        "final_logit_softcapping",
        "query_pre_attn_scalar",
        "rope_parameters",
    ]
    parts = [f"{saved['architectures'][0]}", f"dtype {saved.get('dtype')}"]
    for k in keys:
        if k in saved and saved[k] is not None:
            v = saved[k]
            if k == "rope_parameters":
                v = {kk: vv for kk, vv in v.items() if not (kk == "partial_rotary_factor" and vv == 1.0)}
            parts.append(f"`{k}` {json.dumps(v)}")
    if s["shard"]:
        parts.append("sharded (model.safetensors.index.json)")
    return "; ".join(parts)


def write_readme(results):
    lines = [
        "# Tiny Hugging Face checkpoints",
        "",
        "Generated by `python3 scripts/hf-fixtures.py` (see its docstring) with transformers "
        f"{transformers.__version__} and torch {torch.__version__}; do not edit by hand.",
        "",
        "Each directory is a `save_pretrained` checkpoint of transformers' own class (hidden 64, heads 4, "
        "intermediate 96, vocab 384, max positions 256), with the shared byte-level BPE tokenizer "
        "(`<|endoftext|>` = id 0 = bos = eos, no BOS added on encode) and `reference.json`:",
        "",
        "- `items`: (context, continuation) pairs split as lm-evaluation-harness does (the context's trailing "
        "whitespace moves to the continuation; context + continuation encoded once, split at the context's "
        "own token count; no BOS). `token_logprobs` are log-softmax of transformers' fp32 logits (eager "
        "attention, CPU) at each continuation position, `nats` = −their sum, `greedy` = every continuation "
        "token is the argmax. bf16/fp16 checkpoints are scored on the stored weights upcast to fp32. "
        "The last item of each fixture continues its context with that model's own 3–5 greedy tokens, so "
        "`greedy` is true there (false elsewhere: the weights are random).",
        "- `generate`: 16 greedy tokens (`generate(do_sample=False)`, no EOS stop) after each of 3 prompts; "
        f"every step's top-1 vs top-2 log-prob gap is > {MIN_GAP:g} (the smallest per fixture is below).",
        "",
        "Weights are drawn wide (matrices N(0, (1.5/√fan_in)²), biases N(0, 0.3²), norm weights U[0.5, 1.5] — "
        "Gemma-2's (1+w) norms U[−0.5, 0.5] —, LayerNorm biases N(0, 0.2²)) so each family's particulars "
        "change the numbers.",
        "",
        "## Fixtures",
        "",
        "| fixture | highlights | reference nats (sum over items) | smallest greedy gap |",
        "| --- | --- | ---: | ---: |",
    ]
    by_name = {s["name"]: s for s in SPECS}
    for r in results:
        lines.append(f"| `{r['name']}` | {highlights(by_name[r['name']], r['saved'])} | {r['nats']:.3f} | {min(r['gaps']):.4f} |")
    lines += [
        "",
        "## Sensitivity",
        "",
        "The summed reference nats recomputed with one thing perturbed (same weights otherwise). A runner "
        "that ignored that feature would be off by about this much.",
        "",
        "| fixture | perturbed | Δ nats (sum over items) |",
        "| --- | --- | ---: |",
    ]
    for r in results:
        for label, delta in r["sens"]:
            lines.append(f"| `{r['name']}` | {label} | {delta:+.4f} |")
    auto = [f"`{r['name']}` ({r['auto_tok'][0]}: {r['auto_tok'][1]} of the items differ)" for r in results if r["auto_tok"][1]]
    lines += [
        "",
        f"## What transformers {transformers.__version__} writes and does",
        "",
        "- RoPE settings are in `rope_parameters` (`rope_type`, `rope_theta`, `factor`, …); no top-level "
        "`rope_scaling` or `rope_theta` is written. Even `default` RoPE gets `{rope_type: default, rope_theta}`.",
        "- GPT-NeoX: `rotary_pct` is accepted but written as `rope_parameters.partial_rotary_factor` (0.25); no "
        "`rotary_pct`/`rotary_emb_base` in config.json (older checkpoints have them top-level).",
        "- Phi-3: `partial_rotary_factor` is written both top-level and in `rope_parameters`.",
        "- Dynamic RoPE: `original_max_position_embeddings` is kept in `rope_parameters` but transformers ignores "
        "it (it warns \"Unrecognized keys\"); the dynamic rescale starts past `max_position_embeddings` (256 here), "
        "so inside the window it equals default RoPE (Δ 0 above).",
        "- Sliding window W: query i sees keys j with i − W < j ≤ i (W keys, itself included).",
        "- Qwen2/Qwen3: `sliding_window` is set to null unless `use_sliding_window`; `layer_types[i]` is "
        "`sliding_attention` iff `sliding_window` is set and i ≥ `max_window_layers`, else `full_attention` "
        "(qwen2-sharded: `[full_attention, sliding_attention]`). The explicit `layer_types` is what the model reads.",
        "- Mistral: no `layer_types`; `sliding_window` applies to every layer.",
        "- Gemma-2: `layer_types[i]` = `sliding_attention` for even i, `full_attention` for odd i; attention "
        "scale is `query_pre_attn_scalar`^−½; scores are soft-capped (`c·tanh(s/c)`) after scaling and before the "
        "mask; logits are soft-capped by `final_logit_softcapping`; embeddings are multiplied by √hidden; every "
        "RMSNorm scales by (1 + w); each block has pre/post attention and pre/post feed-forward norms. "
        "transformers' sdpa path drops the attention soft-cap, so these references need eager attention.",
        "- `save_pretrained` also writes `generation_config.json` (bos/eos 0).",
    ]
    if auto:
        lines.append(
            "- AutoTokenizer does not always load tokenizer.json as it is: for "
            + ", ".join(auto)
            + " it substitutes a model-specific class that rebuilds the pre-tokenizer, so it tokenizes "
            "differently. The ids in reference.json are those of tokenizer.json (PreTrainedTokenizerFast / "
            "TokenizersBackend)."
        )
    lines.append("")
    (OUT / "README.md").write_text("\n".join(lines))


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    tok = make_tokenizer()
    items = make_items(tok)
    print(f"tokenizer: {len(tok)} tokens; items: {[(len(i['context_ids']), len(i['continuation_ids'])) for i in items]}")
    prompts = []
    for p in PROMPTS:
        ids = tok(p, add_special_tokens=False).input_ids
        assert 10 <= len(ids) <= 40, (len(ids), p)
        prompts.append(ids)
    results = []
    for i, s in enumerate(SPECS):
        results.append(build(s, 1000 + i, tok, items, prompts))
    write_readme(results)
    print("\nsensitivity (Δ nats summed over items):")
    for r in results:
        for label, delta in r["sens"]:
            print(f"  {r['name']:22s} {label:50s} {delta:+10.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
