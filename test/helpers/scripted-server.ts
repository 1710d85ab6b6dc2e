/**
 * A scripted OpenAI-compatible completion server on loopback: what an attacker-controlled
 * model would say, passed to the CLI as `--ckpt http://…`, so `passk` and `asap` run its
 * commands exactly as a model's. Prompts arrive as token ids (the CLI tokenises with
 * `--tokenizer`); the script sees the decoded text and returns the raw continuation, cut at
 * the request's earliest stop string as vLLM does. Echo scoring answers with a flat
 * log-prob per token, so a cache fingerprint or a scoring call gets a well-formed reply.
 */
import { createServer, type Server } from 'node:http';
import { CheckpointTokenizer } from '../../src/backends/onnx/tokenizer.ts';
import { readTokenizerDir } from '../../src/backends/checkpoint-dir.ts';
import { close, listen } from './http.ts';

/** The continuation for one sample: the prompt as text, and how many samples came before. */
export type Script = (prompt: string, index: number) => string | Promise<string>;

export class ScriptedServer {
  readonly prompts: string[] = [];
  url = '';
  private server: Server | undefined;
  private readonly tokenizer: CheckpointTokenizer;

  constructor(
    tokenizerDir: string,
    private readonly script: Script,
  ) {
    this.tokenizer = new CheckpointTokenizer(readTokenizerDir(tokenizerDir));
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        void this.answer(req.url ?? '/', chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {}).then(
          (body) => {
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end(JSON.stringify(body));
          },
          (error: Error) => {
            res.writeHead(500, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ error: { message: error.message } }));
          },
        );
      });
    });
    this.url = `${await listen(this.server)}/v1`;
    return this.url;
  }

  private async answer(path: string, body: any): Promise<unknown> {
    if (path.startsWith('/v1/models'))
      return { object: 'list', data: [{ id: 'scripted', object: 'model', owned_by: 'scripted', max_model_len: 1_000_000 }] };
    if (path.startsWith('/tokenize')) return { tokens: this.tokenizer.encode(String(body.prompt ?? '')) };
    if (!path.startsWith('/v1/completions')) throw new Error(`no route ${path}`);
    const ids = body.prompt as number[];
    if (body.echo) {
      return {
        choices: [
          {
            index: 0,
            text: '',
            finish_reason: 'length',
            logprobs: { tokens: ids.map(String), token_logprobs: [null, ...ids.slice(1).map(() => -1), -1], top_logprobs: null },
          },
        ],
      };
    }
    const prompt = this.tokenizer.decode(ids);
    const stops = (body.stop ?? []) as string[];
    const choices = [];
    for (let i = 0; i < (body.n ?? 1); i++) {
      const raw = await this.script(prompt, this.prompts.length);
      this.prompts.push(prompt);
      let cut = raw.length;
      let matched: string | undefined;
      for (const s of stops) {
        const at = raw.indexOf(s);
        if (at >= 0 && at < cut) [cut, matched] = [at, s];
      }
      choices.push({
        index: i,
        text: raw.slice(0, cut),
        finish_reason: matched ? 'stop' : 'length',
        stop_reason: matched ?? null,
        logprobs: null,
      });
    }
    return { choices };
  }

  async stop(): Promise<void> {
    if (this.server) await close(this.server);
  }
}
