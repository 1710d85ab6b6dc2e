/**
 * General code BPB, the plain-code rung the papers compare against (their HumanEval BPB):
 * bits per byte of held-out source code, with no agent transcript around it. A file or a
 * directory of code becomes scoring units: each file from its first byte, cut at line ends
 * into pieces that fit a checkpoint's window, every piece scored after the file's text
 * before it (the backend keeps the tail that fits) — so every byte is scored once, with
 * as much of its own file in view as fits.
 */
import { readdirSync, realpathSync, type Stats, statSync } from 'node:fs';
import { extname, join, relative } from 'node:path';
import { InputError } from '../errors.ts';
import { MAX_STRING_BYTES, readTextFile } from '../util/safe-tree.ts';

/** What counts as code in a directory: source files by extension (tests included; they are code too). */
export const CODE_EXTENSIONS = new Set([
  '.py',
  '.js',
  '.mjs',
  '.cjs',
  '.ts',
  '.go',
  '.rs',
  '.java',
  '.c',
  '.h',
  '.cc',
  '.cpp',
  '.rb',
  '.sh',
]);

/** Directories that hold no one's source: version control, dependencies, caches. */
const SKIPPED_DIRS = new Set(['.git', 'node_modules', '__pycache__', '.venv', 'venv', 'dist', 'build']);

/**
 * Bytes per piece: far below the 4,096-token windows of the real checkpoints even at one
 * token per byte, so a piece always fits with room for its file's text before it.
 */
export const PIECE_BYTES = 2048;

/** One piece of one file, in the shape the BPB rung scores (`task` is the file: the unit a bootstrap resamples). */
export interface CodePiece {
  id: string;
  task: string;
  context: string;
  gold: string;
}

/** What a link leads to; undefined for one that leads nowhere (dangling, or a link to itself): it is no code. */
function linkedStat(path: string): Stats | undefined {
  try {
    return statSync(path, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

function codeFiles(root: string): string[] {
  const stat = statSync(root, { throwIfNoEntry: false });
  if (!stat) throw new InputError({ file: root }, 'no such file or directory of code');
  if (stat.isFile()) return [root];
  const files: string[] = [];
  // `up`: the real directories on the way down, so a linked directory that holds its own link is not walked for ever.
  const walk = (dir: string, up: readonly string[]) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (entry.name.startsWith('.') && entry.name !== '.') continue;
      const path = join(dir, entry.name);
      // Links are followed (a directory of links to the files to score is a natural way to pick them).
      const kind = entry.isSymbolicLink() ? linkedStat(path) : entry;
      if (kind?.isDirectory()) {
        if (SKIPPED_DIRS.has(entry.name)) continue;
        const real = realpathSync(path);
        if (up.includes(real)) throw new InputError({ file: path }, `is a symbolic link to ${real}, a directory it is inside of (a loop)`);
        walk(path, [...up, real]);
      } else if (kind?.isFile() && CODE_EXTENSIONS.has(extname(entry.name))) files.push(path);
    }
  };
  walk(root, [realpathSync(root)]);
  return files;
}

/** Cuts `text` after line ends into pieces of at most `max` bytes (a longer line is cut where it must). */
export function splitAtLines(text: string, max = PIECE_BYTES): string[] {
  const pieces: string[] = [];
  let current = '';
  const bytes = (s: string) => Buffer.byteLength(s, 'utf8');
  for (const line of text.split(/(?<=\n)/)) {
    if (current && bytes(current) + bytes(line) > max) {
      pieces.push(current);
      current = '';
    }
    let rest = line;
    while (bytes(rest) > max) {
      // Cut at a character boundary: Array.from walks code points.
      const chars = Array.from(rest);
      let head = '';
      for (const ch of chars) {
        if (bytes(head) + bytes(ch) > max) break;
        head += ch;
      }
      pieces.push(head);
      rest = rest.slice(head.length);
    }
    current += rest;
  }
  if (current) pieces.push(current);
  return pieces;
}

/** The pieces of every code file under `root`; ids and units are paths relative to it. */
export function codePieces(root: string): CodePiece[] {
  const pieces: CodePiece[] = [];
  for (const file of codeFiles(root)) {
    const name = relative(root, file) || file.split('/').at(-1)!;
    // Through safe-tree: a file swapped for a FIFO or a device after the walk is refused, not waited on.
    const text = readTextFile(file, { maxBytes: MAX_STRING_BYTES, what: 'the code to score' });
    let before = '';
    splitAtLines(text).forEach((piece, i) => {
      pieces.push({ id: `${name}#${i}`, task: name, context: before, gold: piece });
      before += piece;
    });
  }
  if (pieces.length === 0) throw new InputError({ file: root }, `holds no code (files ending ${[...CODE_EXTENSIONS].join(' ')})`);
  return pieces;
}
