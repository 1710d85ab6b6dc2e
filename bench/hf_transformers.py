#!/usr/bin/env python3
"""HF transformers' side of bench/hf.ts (PyTorch on CPU, fp32, SDPA attention).

Three commands, each answering on stdout in JSON:

    make OUT TOKENIZER_DIR
        Once: a randomly initialised LlamaForCausalLM of ~100 M parameters (hidden 768, 12
        layers, 12 heads, 4 KV heads, MLP 2048, vocabulary 8192, untied, window 2048; seed 0),
        saved as OUT/llama-100m-fp32 and OUT/llama-100m-bf16 (the same weights rounded to bf16),
        each with TOKENIZER_DIR's tokenizer.json and tokenizer_config.json. A directory that
        holds its `.complete` marker is left alone.

    worker DIR THREADS
        Loads DIR in fp32 and answers one JSON request per stdin line, one JSON line each:
        {"op": "score", "items": [{"context", "continuation"}]}: lm-evaluation-harness's split
          (trailing whitespace of the context moves to the continuation; context + continuation
          tokenised once, no special tokens, split at the context's own token count), one
          forward pass per item over (context + continuation)[:-1] under torch.inference_mode,
          logits kept for the continuation's positions only (logits_to_keep), log-softmax and
          gather. Answers seconds (tokenising included), tokens fed, per-item nats and tokens.
        {"op": "sample", "prompts", "n", "maxTokens", "seed"}: model.generate per prompt,
          do_sample, num_return_sequences n, temperature 1, top-p 1, top-k 0 (off: transformers'
          default is 50), KV cache on. Tokens counted per sequence up to and including EOS.
        Its first line reports the load: from_pretrained seconds, and the imports' before it.

    rss DIR THREADS CONTEXT_JSON
        Loads DIR in fp32, scores the one {"context", "continuation"} of CONTEXT_JSON as `score`
        does, and reports peak RSS after it: VmHWM of /proc/self/status (the peak of this
        process's own memory since exec), and resource.getrusage's ru_maxrss, which on Linux
        also holds the RSS of the process it was forked from (node, here) at the fork.

THREADS goes to torch.set_num_threads: the bench passes onnxruntime's intra-op thread count.
"""

from __future__ import annotations

import json
import resource
import shutil
import sys
import time
from pathlib import Path

STARTED = time.perf_counter()

import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

hf_logging.set_verbosity_error()
hf_logging.disable_progress_bar()

ATTENTION = "sdpa"


def make(out: Path, tokenizer_dir: Path) -> dict:
    dirs = {"fp32": out / "llama-100m-fp32", "bf16": out / "llama-100m-bf16"}
    if all((d / ".complete").exists() for d in dirs.values()):
        return {"made": False, **{k: str(v) for k, v in dirs.items()}}
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=8192,
        hidden_size=768,
        intermediate_size=2048,
        num_hidden_layers=12,
        num_attention_heads=12,
        num_key_value_heads=4,
        max_position_embeddings=2048,
        tie_word_embeddings=False,
        bos_token_id=0,
        eos_token_id=0,
        rms_norm_eps=1e-6,
    )
    model = LlamaForCausalLM(config).eval()
    params = sum(p.numel() for p in model.parameters())
    for dtype, d in dirs.items():
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        (model if dtype == "fp32" else model.to(torch.bfloat16)).save_pretrained(d)
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(tokenizer_dir / name, d / name)
        (d / ".complete").write_text("")
    return {"made": True, "params": params, **{k: str(v) for k, v in dirs.items()}}


def load(directory: str, threads: int):
    """Tokenizer and model in fp32; seconds of from_pretrained (the imports before it not counted)."""
    torch.set_num_threads(threads)
    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(directory)
    model = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32, attn_implementation=ATTENTION).eval()
    return tokenizer, model, time.perf_counter() - started


def split(tokenizer, context: str, continuation: str) -> tuple[list[int], list[int]]:
    """lm-evaluation-harness's split: trailing whitespace to the continuation, one encoding of the whole."""
    stripped = context.rstrip()
    continuation = context[len(stripped) :] + continuation
    whole = tokenizer(stripped + continuation, add_special_tokens=False)["input_ids"]
    ctx = tokenizer(stripped, add_special_tokens=False)["input_ids"]
    return whole[: len(ctx)], whole[len(ctx) :]


def score_one(tokenizer, model, context: str, continuation: str) -> tuple[float, int, int]:
    ctx, cont = split(tokenizer, context, continuation)
    ids = torch.tensor([(ctx + cont)[:-1]])
    with torch.inference_mode():
        logits = model(input_ids=ids, logits_to_keep=len(cont)).logits[0]
        rows = torch.log_softmax(logits.float(), dim=-1)
        nats = rows.gather(1, torch.tensor(cont).unsqueeze(1)).sum().item()
    return nats, len(cont), ids.shape[1] + 1


def score(tokenizer, model, items: list[dict]) -> dict:
    started = time.perf_counter()
    nats, tokens, fed = [], [], 0
    for item in items:
        n, t, f = score_one(tokenizer, model, item["context"], item["continuation"])
        nats.append(n)
        tokens.append(t)
        fed += f
    return {"seconds": time.perf_counter() - started, "fed": fed, "nats": nats, "tokens": tokens}


def sample(tokenizer, model, prompts: list[str], n: int, max_tokens: int, seed: int) -> dict:
    eos = model.config.eos_token_id
    generated = 0
    started = time.perf_counter()
    for i, prompt in enumerate(prompts):
        ids = torch.tensor([tokenizer(prompt, add_special_tokens=False)["input_ids"]])
        torch.manual_seed(seed + i)
        with torch.inference_mode():
            out = model.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                do_sample=True,
                num_return_sequences=n,
                max_new_tokens=max_tokens,
                temperature=1.0,
                top_p=1.0,
                top_k=0,
                use_cache=True,
                pad_token_id=eos,
                eos_token_id=eos,
            )
        for row in out[:, ids.shape[1] :].tolist():
            generated += row.index(eos) + 1 if eos in row else len(row)
    return {"seconds": time.perf_counter() - started, "tokens": generated}


def main() -> None:
    command, *args = sys.argv[1:]
    if command == "make":
        print(json.dumps(make(Path(args[0]), Path(args[1]))), flush=True)
    elif command == "worker":
        tokenizer, model, seconds = load(args[0], int(args[1]))
        ready = {"loadSeconds": seconds, "importSeconds": time.perf_counter() - STARTED - seconds}
        print(json.dumps({**ready, "attention": ATTENTION, "threads": torch.get_num_threads()}), flush=True)
        for line in sys.stdin:
            request = json.loads(line)
            if request["op"] == "score":
                answer = score(tokenizer, model, request["items"])
            else:
                answer = sample(tokenizer, model, request["prompts"], request["n"], request["maxTokens"], request["seed"])
            print(json.dumps(answer), flush=True)
    elif command == "rss":
        tokenizer, model, seconds = load(args[0], int(args[1]))
        item = json.loads(Path(args[2]).read_text())
        started = time.perf_counter()
        _, _, fed = score_one(tokenizer, model, item["context"], item["continuation"])  # as `score` does it
        ms = (time.perf_counter() - started) * 1000
        # VmHWM: this process's own peak since exec. ru_maxrss also counts the RSS of the parent it was
        # forked from (Linux keeps the forked copy's high-water mark across exec), so it is only reported.
        maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        status = Path("/proc/self/status").read_text()
        peak = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))) / 1024
        print(json.dumps({"peakRssMb": peak, "maxrssMb": maxrss, "tokens": fed, "loadSeconds": seconds, "ms": ms}), flush=True)
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    main()
