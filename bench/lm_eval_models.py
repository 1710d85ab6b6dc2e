"""One lm-evaluation-harness run over the serve-clients tasks (a loglikelihood task and a
generate_until task), with lm-eval's own `hf` model or its `local-completions` model against
a server — what bench/serve-lm-eval.ts times side by side.

argv: hf|local-completions, checkpoint directory, items JSONL, batch size[, completions URL].
Prints JSON: wall seconds of simple_evaluate, and each document's answer."""
import json
import os
import sys
import tempfile
import time

from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager

kind, ckpt, items, batch = sys.argv[1:5]
templates = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "fixtures", "serve-clients", "lm-eval-tasks")
tasks = tempfile.mkdtemp()
for name in os.listdir(templates):
    with open(os.path.join(templates, name)) as source, open(os.path.join(tasks, name), "w") as target:
        target.write(source.read().replace("ITEMS_JSONL", json.dumps(items)))
if kind == "hf":
    model_args = f"pretrained={ckpt},dtype=float32,device=cpu"
else:
    model_args = f"model={os.path.basename(ckpt)},base_url={sys.argv[5]},tokenizer_backend=huggingface,tokenizer={ckpt},num_concurrent=1"
started = time.perf_counter()
results = simple_evaluate(
    model=kind,
    model_args=model_args,
    tasks=["probe_decisive", "probe_generate"],
    task_manager=TaskManager(include_path=tasks),
    batch_size=int(batch),
    log_samples=True,
    bootstrap_iters=0,
)
wall = time.perf_counter() - started
print(json.dumps({
    "wall_s": wall,
    "answers": {task: {s["doc"]["id"]: s["filtered_resps"][0] for s in samples} for task, samples in results["samples"].items()},
}))
