/**
 * APTBench-format items through the same backends, scored the way APTBench scores them:
 * multiple choice by the letter the model generates greedily (≤ 10 tokens, regex
 * `\b([A-Za-z])[\)\n]`) and, beside it, by the likelihood of each letter; completion
 * items (`target_cmd`) by exact match of the first generated line; free-text targets by
 * ROUGE-L. Prompts are the items' few-shot templates with `$FIELD$` placeholders.
 */
import { sampleOne } from '../backends/single.ts';
import type { CompletionBackend } from '../backends/types.ts';
import { describeCause, InputError } from '../errors.ts';
import { LETTER_REGEX } from './mcq.ts';
import { memoized, type ItemHooks } from './memo.ts';
import { readInputText } from '../util/safe-tree.ts';

export type AptItem = Record<string, unknown> & { uuid?: string };
export type AptKind = 'choice' | 'completion' | 'free-text';

/** Placeholders whose item field is not simply their lower-cased name. */
const FIELD_OF: Record<string, string> = { ISSUE: 'issue_statement', EXE_PLAN: 'execution_plan', EXE_CMDS: 'executed_cmds' };

export function loadAptItems(file: string): AptItem[] {
  const text = readInputText(file, 'the APTBench items', 'items');
  const items = text.split('\n').flatMap((line, i) => {
    if (!line.trim()) return [];
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new InputError({ file, line: i + 1 }, `not valid JSON: ${describeCause(error)}`, { cause: error });
    }
    return [checkAptItem(value, { file, line: i + 1 })];
  });
  // An empty file would be a run that scores nothing and reports success.
  if (items.length === 0) throw new InputError({ file }, 'holds no items');
  return items;
}

/**
 * An item scores only if what it is scored against is there and well formed: a choice item's
 * `answer` is an option letter (an `answer: 7` would never match and read as a wrong answer),
 * a completion's `target_cmd` and a free-text target are strings.
 */
function checkAptItem(value: unknown, at: { file: string; line: number }): AptItem {
  const fail = (field: string | undefined, problem: string) => new InputError({ ...at, ...(field ? { field } : {}) }, problem);
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw fail(undefined, 'expected a JSON object (one item per line)');
  const item = value as AptItem;
  const text = (field: string) => {
    const v = item[field];
    if (v === undefined || v === null) return undefined; // APTBench writes `"answer": null` on completion items
    if (typeof v !== 'string') throw fail(field, `expected a string, got ${JSON.stringify(v)}`);
    return v;
  };
  text('uuid');
  const choices = text('choices');
  const answer = text('answer');
  const target = text('target_cmd') ?? text('target') ?? text('reference');
  if (choices !== undefined) {
    const letters = choiceLetters(choices);
    if (letters.length === 0) throw fail('choices', 'lists no options as "(A) …" lines');
    if (answer === undefined) throw fail('answer', 'missing: a choice item needs the letter of its correct option');
    // Not checked against the offered letters: shipped APTBench items have choices cut short (answer D, options A and B shown).
    if (!/^[A-Za-z]$/.test(answer.trim())) throw fail('answer', `${JSON.stringify(answer)} is not an option letter (A, B, …)`);
  } else if (target === undefined && answer === undefined) {
    throw fail(
      undefined,
      'nothing to score against: give choices + answer, target_cmd, or a free-text target (target, reference or answer)',
    );
  }
  return item;
}

export function fillTemplate(template: string, item: AptItem, file: string): string {
  return template.replace(/\$([A-Z_]+)\$/g, (_, name: string) => {
    const field = FIELD_OF[name] ?? name.toLowerCase();
    const value = item[field];
    if (value === undefined)
      throw new InputError({ file, field }, `the template's $${name}$ has no "${field}" in item ${item.uuid ?? '?'}`);
    return String(value);
  });
}

export function kindOf(item: AptItem): AptKind {
  if (typeof item.choices === 'string' && typeof item.answer === 'string') return 'choice';
  if (typeof item.target_cmd === 'string') return 'completion';
  return 'free-text';
}

/** Letters offered in "(A) …\n(B) …" choices. */
export function choiceLetters(choices: string): string[] {
  return [...new Set([...choices.matchAll(/(?:^|\n)\(([A-Z])\)/g)].map((m) => m[1]!))];
}

/** ROUGE-L F1 over whitespace tokens. */
export function rougeL(candidate: string, reference: string): number {
  const a = candidate.split(/\s+/).filter(Boolean);
  const b = reference.split(/\s+/).filter(Boolean);
  if (a.length === 0 || b.length === 0) return 0;
  let prev = new Array<number>(b.length + 1).fill(0);
  for (let i = 1; i <= a.length; i++) {
    const row = new Array<number>(b.length + 1).fill(0);
    for (let j = 1; j <= b.length; j++) row[j] = a[i - 1] === b[j - 1] ? prev[j - 1]! + 1 : Math.max(prev[j]!, row[j - 1]!);
    prev = row;
  }
  const lcs = prev[b.length]!;
  if (lcs === 0) return 0;
  const precision = lcs / a.length;
  const recall = lcs / b.length;
  return (2 * precision * recall) / (precision + recall);
}

export interface AptItemResult {
  uuid: string;
  kind: AptKind;
  generated: string;
  /** choice: the generated letter (null if none matched); completion: the first generated line. */
  answer: string | null;
  correct: boolean;
  /** choice: the letter with the highest likelihood and whether it is the answer. */
  likelihood_answer?: string;
  likelihood_correct?: boolean;
  rouge_l?: number;
  truncated: boolean;
}

export interface AptResult {
  checkpoint: string;
  backend: string;
  items: AptItemResult[];
  /** choice items: accuracy of the generated letter and of the likelihood pick. */
  letter_acc: number | null;
  likelihood_acc: number | null;
  /** completion items: exact match of the first line. */
  exact_match: number | null;
  /** completion and free-text items: mean ROUGE-L against the target. */
  rouge_l: number | null;
}

async function scoreItem(backend: CompletionBackend, item: AptItem, prompt: string): Promise<AptItemResult> {
  const kind = kindOf(item);
  const uuid = String(item.uuid ?? '');
  const label = `APTBench item ${uuid}`;
  if (kind === 'choice') {
    const [sample] = await sampleOne(backend, { prompt, n: 1, temperature: 0, topP: 1, maxTokens: 10, stop: [], seed: 0, label });
    const generated = sample?.text ?? '';
    // The prompt may end with "(": the generated text then starts with the letter.
    const letter = LETTER_REGEX.exec(generated)?.[1]?.toUpperCase() ?? null;
    const letters = choiceLetters(String(item.choices));
    const [scores] = await backend.score([{ context: prompt, continuations: letters, label }]);
    const lls = (scores ?? []).map((r) => r.tokenLogprobs.reduce((a, b) => a + b, 0));
    const best = letters[lls.indexOf(Math.max(...lls))]!;
    const answer = String(item.answer).trim().toUpperCase();
    return {
      uuid,
      kind,
      generated,
      answer: letter,
      correct: letter === answer,
      likelihood_answer: best,
      likelihood_correct: best === answer,
      truncated: Boolean(sample?.truncated),
    };
  }
  const target = String(kind === 'completion' ? item.target_cmd : (item.target ?? item.reference ?? item.answer ?? ''));
  const [sample] = await sampleOne(backend, {
    prompt,
    n: 1,
    temperature: 0,
    topP: 1,
    maxTokens: 128,
    stop: kind === 'completion' ? ['\n'] : [],
    seed: 0,
    label,
  });
  const generated = sample?.text ?? '';
  const firstLine = generated.split('\n')[0]!.trim();
  return {
    uuid,
    kind,
    generated,
    answer: kind === 'completion' ? firstLine : generated.trim(),
    correct: kind === 'completion' ? firstLine === target.trim() : false,
    rouge_l: rougeL(kind === 'completion' ? firstLine : generated, target),
    truncated: Boolean(sample?.truncated),
  };
}

export async function scoreAptbench(
  checkpoint: string,
  backend: CompletionBackend,
  items: AptItem[],
  template: string,
  file: string,
  hooks: ItemHooks<AptItemResult> = {},
): Promise<AptResult> {
  const results: AptItemResult[] = [];
  for (const [i, item] of items.entries()) {
    // Keyed by position and uuid: uuids are not checked to be unique, and a file edited under a resumed run changes the key.
    const id = `${i}:${item.uuid ?? ''}`;
    results.push(await memoized(hooks.memo, id, () => scoreItem(backend, item, fillTemplate(template, item, file))));
    hooks.onItem?.(id);
  }
  const rate = (list: AptItemResult[], f: (r: AptItemResult) => boolean) => (list.length ? list.filter(f).length / list.length : null);
  const choice = results.filter((r) => r.kind === 'choice');
  const completion = results.filter((r) => r.kind === 'completion');
  const texts = results.filter((r) => r.rouge_l !== undefined);
  return {
    checkpoint,
    backend: backend.id,
    items: results,
    letter_acc: rate(choice, (r) => r.correct),
    likelihood_acc: rate(choice, (r) => r.likelihood_correct === true),
    exact_match: rate(completion, (r) => r.correct),
    rouge_l: texts.length ? texts.reduce((a, r) => a + r.rouge_l!, 0) / texts.length : null,
  };
}
