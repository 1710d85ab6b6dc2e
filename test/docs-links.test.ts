/**
 * The front door and the manual hold together: every relative link in README.md and docs/
 * reaches a file (and its #anchor a heading there), and every command in the README's shell
 * blocks is a real verb with real flags.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { commandProblem, probeCommandsIn } from './helpers/command-lines.ts';

const DOCS = join(REPO_ROOT, 'docs');
const pages = [
  join(REPO_ROOT, 'README.md'),
  ...readdirSync(DOCS)
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(DOCS, f)),
];

/** The page without its fenced blocks (a fence is a line that starts with three backticks; inline code may hold them too). */
function outsideFences(markdown: string): string {
  let fenced = false;
  return markdown
    .split('\n')
    .map((line) => {
      if (line.startsWith('```')) {
        fenced = !fenced;
        return '';
      }
      return fenced ? '' : line;
    })
    .join('\n');
}

/** GitHub's heading anchors: lower case, punctuation dropped, each space a hyphen, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, text] of outsideFences(markdown).matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const plain = text!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[`*_]/g, (c) => (c === '_' ? '_' : ''));
    const slug = plain
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
    seen.set(slug, n + 1);
  }
  return anchors;
}

/** Relative links of a page (inline `[text](target)`, outside code), as [target, line]. */
function linksOf(markdown: string): Array<[string, number]> {
  const links: Array<[string, number]> = [];
  outsideFences(markdown)
    .split('\n')
    .forEach((line, i) => {
      for (const [, target] of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)(?: "[^"]*")?\)/g)) {
        if (!/^[a-z]+:/i.test(target!)) links.push([target!, i + 1]);
      }
    });
  return links;
}

describe('README.md and docs/', () => {
  it('every relative link resolves, anchors included', () => {
    const problems: string[] = [];
    let checked = 0;
    for (const page of pages) {
      const text = readFileSync(page, 'utf8');
      for (const [target, line] of linksOf(text)) {
        checked++;
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const file = path === '' ? page : join(dirname(page), decodeURIComponent(path));
        const where = `${relative(REPO_ROOT, page)}:${line}: ${target}`;
        if (!existsSync(file)) problems.push(`${where} (no such file)`);
        else if (anchor && file.endsWith('.md') && !anchorsOf(readFileSync(file, 'utf8')).has(anchor))
          problems.push(`${where} (no such heading)`);
      }
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(30); // the pages do link to each other: a parser that found none would pass nothing
  });

  it('the anchor rule reads headings as GitHub does', () => {
    const anchors = anchorsOf("# The demo's wall time\n## `probe mcq` and T*\n## Repeat\n## Repeat\n```sh\n# not a heading\n```\n");
    expect([...anchors]).toEqual(['the-demos-wall-time', 'probe-mcq-and-t', 'repeat', 'repeat-1']);
  });

  it("every command in the README's shell blocks is a real verb with real flags", async () => {
    const commands = probeCommandsIn(readFileSync(join(REPO_ROOT, 'README.md'), 'utf8'));
    expect(commands.length).toBeGreaterThanOrEqual(8);
    const problems = (await Promise.all(commands.map(commandProblem))).filter(Boolean);
    expect(problems).toEqual([]);
  });

  it('README.md stays a front door (at most 300 lines)', () => {
    expect(readFileSync(join(REPO_ROOT, 'README.md'), 'utf8').split('\n').length).toBeLessThanOrEqual(300);
  });
});
