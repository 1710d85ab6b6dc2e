/**
 * The arrows between src/'s folders that must never exist (docs/architecture.md), read
 * from the imports themselves: a change that adds one fails here, naming the file.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';

const SRC = join(REPO_ROOT, 'src');

interface Import {
  from: string;
  to: string;
  specifier: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Every import of every source file (static, re-exports and dynamic), as paths relative to src/ (`node:fs` and packages as written). */
const IMPORTS: Import[] = sourceFiles(SRC).flatMap((file) => {
  const text = readFileSync(file, 'utf8');
  const from = relative(SRC, file);
  return [
    ...text.matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s+'([^']+)'|import\(\s*'([^']+)'\s*\)|(?:^|\n)import\s+'([^']+)'/g),
  ].map((m) => {
    const specifier = (m[1] ?? m[2] ?? m[3])!;
    return { from, specifier, to: specifier.startsWith('.') ? relative(SRC, resolve(dirname(file), specifier)) : specifier };
  });
});

/** The folder under src/ a path is in; files directly in src/ (errors.ts, embedded.ts) are `.`. */
const folder = (path: string) => (path.includes('/') ? path.slice(0, path.indexOf('/')) : '.');
const local = IMPORTS.filter((i) => i.specifier.startsWith('.'));
const arrows = (fromFolder: string, toFolder: string) =>
  local.filter((i) => folder(i.from) === fromFolder && folder(i.to) === toFolder).map((i) => `${i.from} → ${i.to}`);

/** Folder cycles there still are, to be taken out; a cycle not listed fails. */
const KNOWN_CYCLES: string[][] = [];

describe('src/ imports', () => {
  it('reads the imports (the parser sees the files it must)', () => {
    expect(local.some((i) => i.from === 'cli/main.ts')).toBe(true);
    expect(IMPORTS.some((i) => i.specifier === 'node:fs')).toBe(true);
    expect(local.every((i) => i.to.endsWith('.ts') || i.to.endsWith('.json'))).toBe(true);
  });

  it('nothing below cli/ imports cli/ (verbs parse flags and call the pipeline, never the other way)', () => {
    expect(local.filter((i) => folder(i.from) !== 'cli' && folder(i.to) === 'cli').map((i) => `${i.from} → ${i.to}`)).toEqual([]);
  });

  it('verbs only parse: cli/ opens no sandbox and no run directory (it calls the stage that does)', () => {
    expect([...arrows('cli', 'sandbox'), ...arrows('cli', 'store')]).toEqual([]);
  });

  it('backends (and the engines they start) and sandboxes know nothing of each other', () => {
    expect([
      ...arrows('backends', 'sandbox'),
      ...arrows('sandbox', 'backends'),
      ...arrows('engines', 'sandbox'),
      ...arrows('sandbox', 'engines'),
    ]).toEqual([]);
  });

  it('stats/ is pure: no I/O, no other folder but util/rng', () => {
    const outside = IMPORTS.filter((i) => folder(i.from) === 'stats' && folder(i.to) !== 'stats' && i.to !== 'util/rng.ts');
    expect(outside.map((i) => `${i.from} → ${i.specifier}`)).toEqual([]);
  });

  it('the layers below the pipeline (backends, engines, sandbox, slurm, settings, formats, stats, util, schema, tensorboard) import none above it', () => {
    const above = new Set([
      'cli',
      'pipeline',
      'validate',
      'report',
      'serve',
      'asap',
      'swe',
      'environments',
      'research',
      'terminal',
      'probes',
      'replay',
      'trajectories',
      'watch',
    ]);
    const low = new Set(['backends', 'engines', 'sandbox', 'slurm', 'settings', 'formats', 'stats', 'util', 'schema', 'tensorboard']);
    expect(local.filter((i) => low.has(folder(i.from)) && above.has(folder(i.to))).map((i) => `${i.from} → ${i.to}`)).toEqual([]);
  });

  it('no folder cycles but the known ones (index.ts, the public API, aside)', () => {
    const edges = new Map<string, Set<string>>();
    for (const i of local) {
      const [a, b] = [folder(i.from), folder(i.to)];
      if (a !== b && i.from !== 'index.ts') edges.set(a, (edges.get(a) ?? new Set()).add(b));
    }
    const reaches = (a: string, b: string, seen = new Set<string>()): boolean =>
      [...(edges.get(a) ?? [])].some((n) => {
        if (n === b) return true;
        if (seen.has(n)) return false;
        seen.add(n);
        return reaches(n, b, seen);
      });
    const cycles = [...edges.keys()].sort().flatMap((a) => [...edges.get(a)!].filter((b) => a < b && reaches(b, a)).map((b) => [a, b]));
    expect(cycles).toEqual(KNOWN_CYCLES);
  });
});
