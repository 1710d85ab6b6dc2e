/**
 * Bad Hugging Face checkpoint directories, as a user meets them: `probe bpb --ckpt <dir>`
 * on a corrupted copy of one of the tiny real checkpoints in test/fixtures/hf/. Each is
 * exit 2 with one line on stderr naming the file (config.json, the shard, the index,
 * model.safetensors) and the field or tensor, and saying what is wrong — found when the
 * checkpoint is resolved, before any work. Beside a good checkpoint, a bad one costs no
 * result already computed: refused at resolve time, it stops the run before anything is
 * scored or the run directory touched; found only when opened, it is reported and the
 * others are scored and kept, on resume too. (The reader's own cases, byte by byte:
 * attack-hf-safetensors.)
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { type CliRun, expectOneLineError, runProbeAsync } from './helpers/cli.ts';
import { DEMO_PROBES, tempDir } from './helpers/paths.ts';

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'hf');
const INDEX = 'model.safetensors.index.json';
const SINGLE = 'model.safetensors';

/** `probe bpb` on the directories, in process, one probe item, nothing cached; a refusal takes about a second. */
const bpb = (ckpts: string[], ...args: string[]): Promise<CliRun> => bpbWithin(60_000, ckpts, ...args);

/** The same, killed after `timeoutMs` (its exit code then null). */
const bpbWithin = (timeoutMs: number, ckpts: string[], ...args: string[]): Promise<CliRun> =>
  runProbeAsync(
    ['bpb', '--ckpt', ...ckpts, '--engine', 'in-process', '--probes', DEMO_PROBES, '--limit', '1', '--no-cache', ...args],
    {},
    timeoutMs,
  );

/** A FIFO with no writer: a reader that opens it blocks until one comes, which never does here. */
const FIFO_WAIT_MS = 30_000;

/** A path as a regular expression matches it literally. */
const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A writable copy of a fixture checkpoint (test/fixtures is never written). */
function copyOf(fixture: string): string {
  const dir = join(tempDir('probe-hf-attack-'), fixture);
  cpSync(join(FIXTURES, fixture), dir, { recursive: true });
  return dir;
}

interface TensorHeader {
  dtype: string;
  shape: number[];
  data_offsets: [number, number];
}
type Header = Record<string, TensorHeader | Record<string, string>>;

/** A safetensors file's parsed header and its data section (offsets in the header are relative to it). */
function readSafetensorsFile(file: string): { header: Header; data: Buffer } {
  const bytes = readFileSync(file);
  const length = Number(bytes.readBigUInt64LE(0));
  return { header: JSON.parse(bytes.subarray(8, 8 + length).toString('utf8')) as Header, data: bytes.subarray(8 + length) };
}

/** Rewrites a safetensors file's header (re-serialised, its 8-byte length the new header's), keeping the data section. */
function editHeader(file: string, edit: (header: Header) => void): void {
  const { header, data } = readSafetensorsFile(file);
  edit(header);
  const text = Buffer.from(JSON.stringify(header), 'utf8');
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(text.length));
  writeFileSync(file, Buffer.concat([length, text, data]));
}

function editJson(file: string, edit: (json: Record<string, unknown>) => void): void {
  const json = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  edit(json);
  writeFileSync(file, JSON.stringify(json, null, 2));
}

const tensorOf = (header: Header, name: string) => header[name] as TensorHeader;

/** `probe: <file>: field "<field>": ` as InputError writes it. */
const at = (file: string, field: string) => `^probe: ${literal(file)}: field "${literal(field)}": `;

describe.concurrent('a damaged safetensors file is refused by name, before any work', () => {
  it('the last shard of a sharded checkpoint cut in half: names that shard and a tensor past its end', async () => {
    const dir = copyOf('qwen2-sharded');
    const shard = join(dir, 'model-00003-of-00003.safetensors');
    const { header } = readSafetensorsFile(shard);
    truncateSync(shard, Math.floor(readFileSync(shard).length / 2));
    const tensors = Object.keys(header).filter((name) => name !== '__metadata__');
    const run = await bpb([dir]);
    expectOneLineError(
      run,
      new RegExp(
        `^probe: ${literal(shard)}: field "(${tensors.map(literal).join('|')})": file is \\d+ bytes, tensor ".+" needs up to \\d+: the file is truncated, or its header is wrong$`,
      ),
    );
  });

  it('a header whose data_offsets point past the end of model.safetensors: names the file and the tensor', async () => {
    const dir = copyOf('olmo2');
    const file = join(dir, SINGLE);
    const size = readFileSync(file).length;
    const name = 'model.layers.1.mlp.down_proj.weight';
    editHeader(file, (header) => {
      const t = tensorOf(header, name);
      const bytes = t.data_offsets[1] - t.data_offsets[0];
      // The same length, so the shape still agrees with it: only where the bytes are is a lie.
      t.data_offsets = [size, size + bytes];
    });
    const run = await bpb([dir]);
    expectOneLineError(
      run,
      new RegExp(
        `${at(file, name)}file is \\d+ bytes, tensor "${literal(name)}" needs up to \\d+: the file is truncated, or its header is wrong$`,
      ),
    );
  });

  it('an F32 tensor relabelled F16 (same offsets): names the file and the tensor, and the bytes its shape needs', async () => {
    const dir = copyOf('olmo2');
    const file = join(dir, SINGLE);
    const name = 'model.layers.0.self_attn.k_proj.weight';
    editHeader(file, (header) => {
      expect(tensorOf(header, name).dtype).toBe('F32');
      tensorOf(header, name).dtype = 'F16';
    });
    // k_proj: [kv heads 2 × head_dim 16, hidden 64] = 2048 elements, 8192 bytes as F32, 4096 as F16.
    const run = await bpb([dir]);
    expectOneLineError(
      run,
      new RegExp(`${at(file, name)}data_offsets \\[\\d+, \\d+\\] hold 8192 bytes, but shape \\[32, 64\\] of F16 needs 4096$`),
    );
  });

  it('layer 0’s q_proj dropped from the header: names model.safetensors and the tensor, and that it is missing', async () => {
    const dir = copyOf('olmo2');
    const file = join(dir, SINGLE);
    const name = 'model.layers.0.self_attn.q_proj.weight';
    editHeader(file, (header) => {
      expect(header[name]).toBeDefined();
      delete header[name];
    });
    const run = await bpb([dir]);
    expectOneLineError(run, new RegExp(`${at(file, name)}missing: the checkpoint has no such tensor \\(the layer 0 q projection\\)$`));
  });

  it('a FIFO in model.safetensors’ place is refused, not waited on', async () => {
    const dir = copyOf('olmo2');
    const file = join(dir, SINGLE);
    rmSync(file);
    execFileSync('mkfifo', [file]);
    const run = await bpbWithin(FIFO_WAIT_MS, [dir]);
    expect(run.code, 'killed: the run waited on the FIFO').not.toBeNull();
    expectOneLineError(run, new RegExp(`^probe: ${literal(file)}: .*FIFO`));
  });

  it('a FIFO in a shard’s place is refused, not waited on', async () => {
    const dir = copyOf('qwen2-sharded');
    const file = join(dir, 'model-00002-of-00003.safetensors');
    rmSync(file);
    execFileSync('mkfifo', [file]);
    const run = await bpbWithin(FIFO_WAIT_MS, [dir]);
    expect(run.code, 'killed: the run waited on the FIFO').not.toBeNull();
    expectOneLineError(run, new RegExp(`^probe: ${literal(file)}: .*FIFO`));
  });
});

describe.concurrent('an index naming a shard outside the directory is refused, not read', () => {
  /** The sharded fixture with its first shard moved to `target` (made absolute from the directory) and the index saying so. */
  function indexPointingAt(target: (dir: string) => { named: string; path: string }): { dir: string; index: string; tensor: string } {
    const dir = copyOf('qwen2-sharded');
    const index = join(dir, INDEX);
    const { named, path } = target(dir);
    // The shard really is there: with the check gone, the run would read it and score (exit 0).
    mkdirSync(dirname(path), { recursive: true });
    renameSync(join(dir, 'model-00001-of-00003.safetensors'), path);
    let tensor = '';
    editJson(index, (json) => {
      const map = json.weight_map as Record<string, string>;
      for (const [name, shard] of Object.entries(map))
        if (shard === 'model-00001-of-00003.safetensors') {
          map[name] = named;
          tensor ||= name;
        }
    });
    return { dir, index, tensor };
  }

  it('../elsewhere.safetensors: names the index and a tensor', async () => {
    const { dir, index, tensor } = indexPointingAt((d) => ({
      named: '../elsewhere.safetensors',
      path: join(d, '..', 'elsewhere.safetensors'),
    }));
    const run = await bpb([dir]);
    expectOneLineError(
      run,
      new RegExp(`${at(index, tensor)}shard "\\.\\./elsewhere\\.safetensors" is not a plain file name in the checkpoint directory$`),
    );
  });

  it('an absolute path: names the index and a tensor', async () => {
    let absolute = '';
    const { dir, index, tensor } = indexPointingAt((d) => {
      absolute = join(d, '..', 'abs', 'shard.safetensors');
      return { named: absolute, path: absolute };
    });
    const run = await bpb([dir]);
    expectOneLineError(
      run,
      new RegExp(`${at(index, tensor)}shard "${literal(absolute)}" is not a plain file name in the checkpoint directory$`),
    );
  });
});

describe.concurrent('config.json that the weights or probe do not support is refused by field', () => {
  /** A copy of the olmo2 fixture with config.json edited; the run's one stderr line. */
  async function withConfig(edit: (config: Record<string, unknown>) => void): Promise<{ run: CliRun; dir: string; config: string }> {
    const dir = copyOf('olmo2');
    const config = join(dir, 'config.json');
    editJson(config, edit);
    return { run: await bpb([dir]), dir, config };
  }

  it('hidden_size 32 where the weights are 64 wide: names model.safetensors and the first tensor of the wrong shape', async () => {
    const { run, dir } = await withConfig((c) => {
      c.hidden_size = 32;
    });
    expectOneLineError(
      run,
      new RegExp(
        `${at(join(dir, SINGLE), 'model.layers.0.self_attn.q_proj.weight')}the layer 0 q projection is \\[64, 64\\], where config\\.json makes it \\[32, 32\\]$`,
      ),
    );
  });

  it('model_type "mamba": lists the families probe runs and says to serve it instead', async () => {
    const { run, config } = await withConfig((c) => {
      c.model_type = 'mamba';
    });
    expectOneLineError(
      run,
      new RegExp(
        `${at(config, 'model_type')}"mamba" is not a family probe runs in process \\(llama, mistral, qwen2, qwen3, olmo2, gemma2, phi3, gpt_neox\\); serve it instead \\(a server URL, or --engine vllm\\)$`,
      ),
    );
  });

  it('a set field probe does not implement (quantization_config): names it and says to serve it', async () => {
    const { run, config } = await withConfig((c) => {
      c.quantization_config = { quant_method: 'gptq' };
    });
    expectOneLineError(
      run,
      new RegExp(
        `${at(config, 'quantization_config')}a OLMo 2 config field probe does not implement \\(\\{"quant_method":"gptq"\\}\\);.* serve it instead`,
      ),
    );
  });

  it('rope type "longrope": names rope_parameters.rope_type and the types probe builds', async () => {
    const { run, config } = await withConfig((c) => {
      c.rope_parameters = { rope_theta: 10000, rope_type: 'longrope', short_factor: [1], long_factor: [1] };
    });
    expectOneLineError(
      run,
      new RegExp(
        `${at(config, 'rope_parameters.rope_type')}RoPE type "longrope" is not built in process \\(probe builds default, linear, dynamic, llama3, yarn\\)`,
      ),
    );
  });

  it('hidden_act "relu": names hidden_act and the activations probe builds', async () => {
    const { run, config } = await withConfig((c) => {
      c.hidden_act = 'relu';
    });
    expectOneLineError(run, new RegExp(`${at(config, 'hidden_act')}activation "relu" is not built \\(probe builds silu, swish, gelu,`));
  });

  it('layer_types with an unknown attention type: names the layer’s entry', async () => {
    const { run, config } = await withConfig((c) => {
      c.layer_types = ['full_attention', 'chunked_attention'];
    });
    expectOneLineError(run, new RegExp(`${at(config, 'layer_types.1')}attention type "chunked_attention" is not built`));
  });

  it('numbers that would make NaNs (ε ≤ 0, a RoPE θ of 0, a sliding window of 0): each names its field', async () => {
    const eps = await withConfig((c) => {
      c.rms_norm_eps = -1e-6;
    });
    expectOneLineError(eps.run, new RegExp(`${at(eps.config, 'rms_norm_eps')}must be a positive number \\(got -0\\.000001\\)`));
    const theta = await withConfig((c) => {
      c.rope_parameters = { rope_type: 'default', rope_theta: 0 };
    });
    expectOneLineError(theta.run, new RegExp(`${at(theta.config, 'rope_parameters.rope_theta')}must be a positive number`));
    const dir = copyOf('mistral');
    const config = join(dir, 'config.json');
    editJson(config, (c) => {
      c.sliding_window = 0;
    });
    expectOneLineError(await bpb([dir]), new RegExp(`${at(config, 'sliding_window')}must be a positive integer \\(got 0\\)`));
  });

  it('--dtype fp16 on a Hugging Face directory: names the directory and --dtype', async () => {
    const dir = join(FIXTURES, 'mistral');
    const run = await bpb([dir], '--dtype', 'fp16');
    expectOneLineError(run, new RegExp(`${at(dir, '--dtype')}a Hugging Face directory runs in fp32`));
  });
});

describe('a bad checkpoint beside a good one loses no result already computed', () => {
  const good = join(FIXTURES, 'olmo2');
  type Results = { results: Array<{ checkpoint: string; bpb: number }>; errors?: Array<{ file: string; field: string }> };

  /** The checkpoint of each line of (part of) a samples.jsonl. */
  const sampleCheckpoints = (text: string) =>
    text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => (JSON.parse(line) as { checkpoint: string }).checkpoint);

  /** A copy of the sharded fixture with its last shard cut in half: refused when resolved. */
  function truncatedSharded(): string {
    const dir = copyOf('qwen2-sharded');
    const shard = join(dir, 'model-00003-of-00003.safetensors');
    truncateSync(shard, Math.floor(readFileSync(shard).length / 2));
    return dir;
  }

  it('found when the checkpoints are resolved, it stops the run before anything is computed or written', async () => {
    const bad = truncatedSharded();
    const out = join(tempDir(), 'run');
    const run = await bpb([good, bad], '--out', out, '--json');
    expectOneLineError(run, new RegExp(`^probe: ${literal(join(bad, 'model-00003-of-00003.safetensors'))}: field ".+": .*truncated`));
    expect(run.stdout).toBe('');
    // Nothing was scored: no samples, no results (the run directory, if made at all, holds no work).
    const written = existsSync(out) ? readdirSync(out, { recursive: true }).map(String) : [];
    expect(written.filter((f) => /samples|results/.test(f))).toEqual([]);
  });

  it('a resumed run whose good checkpoint had finished keeps its results when a bad one is added, and reads them back once it is fixed', async () => {
    const out = join(tempDir(), 'run');
    const first = await bpb([good], '--out', out, '--json');
    expect(first.code, first.stderr).toBe(0);
    const firstResult = (JSON.parse(first.stdout) as Results).results;
    expect(firstResult).toHaveLength(1);
    const samples = join(out, 'bpb', 'samples.jsonl');
    const before = readFileSync(samples, 'utf8');
    const results = readFileSync(join(out, 'results.json'), 'utf8');

    // The bad checkpoint added on resume: refused before the run directory is touched.
    const bad = truncatedSharded();
    const refused = await bpb([good, bad], '--out', out, '--resume', '--json');
    expectOneLineError(refused, new RegExp(`^probe: ${literal(join(bad, 'model-00003-of-00003.safetensors'))}: field ".+": .*truncated`));
    expect(readFileSync(samples, 'utf8')).toBe(before);
    expect(readFileSync(join(out, 'results.json'), 'utf8')).toBe(results);

    // Fixed (the shard restored), the resumed run scores only it: the good checkpoint's items are read back, not recomputed.
    cpSync(join(FIXTURES, 'qwen2-sharded', 'model-00003-of-00003.safetensors'), join(bad, 'model-00003-of-00003.safetensors'));
    const resumed = await bpb([good, bad], '--out', out, '--resume', '--json');
    expect(resumed.code, resumed.stderr).toBe(0);
    const after = readFileSync(samples, 'utf8');
    expect(after.startsWith(before)).toBe(true);
    expect(sampleCheckpoints(after.slice(before.length))).toEqual([bad]);
    const byCheckpoint = (JSON.parse(resumed.stdout) as Results).results;
    expect(byCheckpoint.map((r) => r.checkpoint)).toEqual([good, bad]);
    expect(byCheckpoint[0]!.bpb).toBe(firstResult[0]!.bpb);
  });

  it('found only when opened (config.json’s BOS not a special token of its tokenizer), it is reported and the other’s result kept, also on resume', async () => {
    const bad = copyOf('olmo2');
    const config = join(bad, 'config.json');
    editJson(config, (c) => {
      c.bos_token_id = 5;
    });
    const other = join(FIXTURES, 'mistral');
    const out = join(tempDir(), 'run');
    // The bad one first: its failure must not stop the run before the good one is scored.
    const first = await bpb([bad, other], '--out', out, '--json');
    expectOneLineError(first, new RegExp(`${at(config, 'bos_token_id')}is 5, but id 5 is not a special token`));
    const document = JSON.parse(first.stdout) as Results;
    expect(document.results.map((r) => r.checkpoint)).toEqual([other]);
    expect(document.errors).toMatchObject([{ file: config, field: 'bos_token_id' }]);
    expect((JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as Results).results.map((r) => r.checkpoint)).toEqual([other]);
    const samples = join(out, 'bpb', 'samples.jsonl');
    const before = readFileSync(samples, 'utf8');
    expect(sampleCheckpoints(before)).toEqual([other]);

    // Resumed as it was: the finished checkpoint is read back (no new sample), the bad one reported again.
    const resumed = await bpb([bad, other], '--out', out, '--resume', '--json');
    expectOneLineError(resumed, new RegExp(`${at(config, 'bos_token_id')}is 5`));
    expect(readFileSync(samples, 'utf8')).toBe(before);
    const again = JSON.parse(resumed.stdout) as Results;
    expect(again.results).toEqual(document.results);
  });
});
