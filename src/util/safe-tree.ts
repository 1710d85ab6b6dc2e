/**
 * Reading a directory tree or a file someone else wrote (a task set, a dataset, a run
 * directory) without letting it choose what probe reads:
 *
 * - Only regular files and directories are read. A FIFO would block the read forever, a
 *   device (`/dev/zero`) never ends, a socket cannot be read: each is refused with an
 *   InputError naming its path, before anything is opened.
 * - A symbolic link is accepted only when its real target (every link on the way
 *   resolved) is inside the tree's root and is itself a regular file or a directory. It is
 *   never read through by the walk: hashed as its target's path relative to it, copied as
 *   a relative link (so the copy points inside the copy), and what it points at is read
 *   once, under its own path. A link out of the root, a dangling one or a link to a
 *   special file is refused. (`links: 'keep'` instead lists every link as a link, never
 *   followed, for a tar that stores links as links: a git checkout may hold any link.
 *   `links: 'follow'`, for a checkpoint directory the user named, follows a link anywhere —
 *   the Hugging Face cache keeps every file of a snapshot as a link into its blobs/ — but
 *   still only to a regular file or a directory, and never into a directory that holds it.)
 * - Every file has a size cap and the tree a total cap (a 3 GiB sparse file costs nothing
 *   on disk but all of it to read), checked from `lstat` before reading and again while
 *   reading, in chunks: a hash never holds a file in memory.
 * - A file is opened with O_NOFOLLOW and O_NONBLOCK and checked again on its descriptor
 *   (`fstat`), so a path swapped for a FIFO or a link after the walk is refused, not
 *   followed or waited on.
 * - A file too big to hold whole (a dataset of JSON Lines, a Parquet file, a run's sample
 *   log) is streamed from the same checked descriptor (`readLines`, `openRegularFile`):
 *   the caps then bound a line, not the file.
 */
import { createHash, type Hash } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  realpathSync,
  type Stats,
  statSync,
  symlinkSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { describeCause, InputError } from '../errors.ts';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

export interface TreeLimits {
  /** Bytes one file may hold. */
  fileBytes: number;
  /** Bytes all files of the tree may hold together. */
  totalBytes: number;
  /** Files, directories and links the tree may hold. */
  entries: number;
}

/** A task directory's caps (a Terminal-Bench build context, a repository tree): far above any real task, far below what hurts the host. */
export const TREE_LIMITS: TreeLimits = { fileBytes: 1 * GiB, totalBytes: 4 * GiB, entries: 200_000 };

/** No size caps, for a tree only checked for special files (a repository checkout of any size). */
export const UNCAPPED: TreeLimits = {
  fileBytes: Number.POSITIVE_INFINITY,
  totalBytes: Number.POSITIVE_INFINITY,
  entries: Number.POSITIVE_INFINITY,
};

/** A text file read whole (task.toml, instruction.md, solve.sh, a Dockerfile). */
export const TEXT_FILE_BYTES = 16 * MiB;

/** The longest string V8 makes (0x1fffffe8 characters): a file of more UTF-8 bytes may not fit in one string. */
export const MAX_STRING_BYTES = 0x1fffffe8;

export type TreeEntry =
  | { kind: 'dir'; rel: string; path: string }
  | { kind: 'file'; rel: string; path: string; size: number; executable: boolean }
  /** `target`: where the link points, relative to the link's own directory (inside the root), or as written with `links: 'keep'`. */
  | { kind: 'link'; rel: string; path: string; target: string };

export interface TreeOptions {
  /** The caps; TREE_LIMITS where not given. */
  limits?: Partial<TreeLimits>;
  /**
   * 'inside' (the default): a link must resolve inside the root. 'keep': every link is
   * listed as a link, never followed. 'follow': a link may lead anywhere, to a regular file
   * (listed as a file at the link's place, its `path` the real one) or a directory (walked
   * at the link's place), never into a directory on its own way down.
   */
  links?: 'inside' | 'keep' | 'follow';
  /** What the tree is, for the error message ("the task's environment/"). */
  what?: string;
}

function kindOf(st: Stats): string {
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  if (st.isSymbolicLink()) return 'a symbolic link';
  if (st.isDirectory()) return 'a directory';
  return 'not a regular file';
}

function size(bytes: number): string {
  return bytes >= GiB ? `${(bytes / GiB).toFixed(1)} GiB` : bytes >= MiB ? `${(bytes / MiB).toFixed(1)} MiB` : `${bytes} bytes`;
}

/** `lstat`, with a failure (permission, a file where a directory was expected) as an InputError naming the path. */
function lstatOf(path: string): Stats | undefined {
  try {
    return lstatSync(path, { throwIfNoEntry: false });
  } catch (error) {
    throw new InputError({ file: path }, `cannot be read: ${describeCause(error)}`, { cause: error });
  }
}

/** Whether `path` is `root` or below it (both real paths). */
export function isInside(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}

/** `realpath`, with a failure (a path that vanished, a loop) as an InputError naming the path. */
function realPathOf(root: string): string {
  try {
    return realpathSync(root);
  } catch (error) {
    throw new InputError({ file: root }, `cannot be read: ${describeCause(error)}`, { cause: error });
  }
}

/** Where a link really points (every link on the way resolved), or an InputError when it does not resolve. */
function linkTarget(path: string): string {
  try {
    return realpathSync(path);
  } catch (error) {
    throw new InputError({ file: path }, `is a symbolic link that does not resolve (${describeCause(error)})`, { cause: error });
  }
}

/** A link's real target with its `lstat`, or an InputError when it is gone or neither a regular file nor a directory. */
function readableTarget(path: string, real: string): { real: string; st: Stats } {
  const st = lstatOf(real);
  if (!st) throw new InputError({ file: path }, 'vanished while being read');
  if (!st.isFile() && !st.isDirectory())
    throw new InputError({ file: path }, `is a symbolic link to ${kindOf(st)} (${real}): only regular files and directories are read`);
  return { real, st };
}

/**
 * Where a link inside `root` really points, or an InputError: out of the root, dangling,
 * or at something that is neither a regular file nor a directory.
 */
function resolveLink(path: string, root: string, what: string): { real: string; st: Stats } {
  const real = linkTarget(path);
  if (!isInside(real, root))
    throw new InputError({ file: path }, `is a symbolic link to ${real}, outside ${what} (${root}): a link may point only inside it`);
  return readableTarget(path, real);
}

/** Where a link leads, wherever that is (`links: 'follow'`): a regular file or a directory, else an InputError. */
function followLink(path: string): { real: string; st: Stats } {
  return readableTarget(path, linkTarget(path));
}

function checkFileSize(path: string, bytes: number, cap: number, what: string): void {
  if (bytes > cap) throw new InputError({ file: path }, `is ${size(bytes)}, over the ${size(cap)} cap on one file of ${what}`);
}

/**
 * Every entry under `root` (not the root itself), in pre-order with names sorted, or an
 * InputError naming the first path that breaks the rules above. Iterative: a deeply
 * nested tree cannot overflow the stack.
 */
export function walkTree(root: string, options: TreeOptions = {}): TreeEntry[] {
  const limits = { ...TREE_LIMITS, ...options.limits };
  const what = options.what ?? 'the directory';
  const top = realPathOf(root);
  const rootStat = statSync(top);
  if (!rootStat.isDirectory()) throw new InputError({ file: root }, `is ${kindOf(rootStat)}, not a directory`);
  const entries: TreeEntry[] = [];
  let total = 0;
  const countFile = (path: string, bytes: number) => {
    checkFileSize(path, bytes, limits.fileBytes, what);
    total += bytes;
    if (total > limits.totalBytes)
      throw new InputError({ file: root }, `holds more than ${size(limits.totalBytes)} of files, over the cap on ${what}`);
  };
  // `up`: the real directories on the way down to this entry (for `links: 'follow'`, which must not walk into a loop).
  const pending: Array<{ path: string; rel: string; up: DirChain }> = [];
  // Children pushed one by one (a spread of a huge directory would overflow the stack), reversed so they pop in order.
  const pushChildren = (dir: string, rel: string, up: DirChain) => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch (error) {
      throw new InputError({ file: dir }, `cannot be read: ${describeCause(error)}`, { cause: error });
    }
    names.sort();
    for (let i = names.length - 1; i >= 0; i--)
      pending.push({ path: join(dir, names[i]!), rel: rel ? `${rel}/${names[i]}` : names[i]!, up });
  };
  pushChildren(root, '', { real: top });
  while (pending.length > 0) {
    const { path, rel, up } = pending.pop()!;
    if (entries.length >= limits.entries)
      throw new InputError({ file: root }, `holds more than ${limits.entries} files, directories and links, over the cap on ${what}`);
    const st = lstatOf(path);
    if (!st) throw new InputError({ file: path }, 'vanished while being read');
    if (st.isDirectory()) {
      entries.push({ kind: 'dir', rel, path });
      pushChildren(path, rel, { real: join(up.real, basename(path)), up });
    } else if (st.isFile()) {
      countFile(path, st.size);
      entries.push({ kind: 'file', rel, path, size: st.size, executable: (st.mode & 0o111) !== 0 });
    } else if (st.isSymbolicLink()) {
      if (options.links === 'keep') {
        entries.push({ kind: 'link', rel, path, target: readlinkSync(path) });
        continue;
      }
      if (options.links === 'follow') {
        const { real, st: target } = followLink(path);
        if (target.isFile()) {
          countFile(path, target.size);
          entries.push({ kind: 'file', rel, path: real, size: target.size, executable: (target.mode & 0o111) !== 0 });
        } else {
          for (let on: DirChain | undefined = up; on; on = on.up)
            if (on.real === real)
              throw new InputError({ file: path }, `is a symbolic link to ${real}, a directory it is inside of (a loop)`);
          entries.push({ kind: 'dir', rel, path: real });
          pushChildren(real, rel, { real, up });
        }
        continue;
      }
      const { real } = resolveLink(path, top, what);
      // Relative to the link's real directory (inside the root: the walk never enters a linked directory).
      entries.push({ kind: 'link', rel, path, target: relative(realpathSync(dirname(path)), real) || '.' });
    } else {
      throw new InputError({ file: path }, `is ${kindOf(st)}: ${what} may hold only regular files, directories and links inside it`);
    }
  }
  return entries;
}

/** The real directories a walk went through to reach an entry, innermost first. */
interface DirChain {
  real: string;
  up?: DirChain;
}

/**
 * Opens a file the walk (or `lstat`) found regular, refusing it if it is no longer a
 * regular file: O_NOFOLLOW refuses a link put in its place, O_NONBLOCK keeps a FIFO put
 * in its place from blocking the open, and `fstat` checks what was opened.
 */
function openRegular(path: string, shown = path): number {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    throw new InputError({ file: shown }, `cannot be read: ${describeCause(error)}`, { cause: error });
  }
  const st = fstatSync(fd);
  if (!st.isFile()) {
    closeSync(fd);
    throw new InputError({ file: shown }, `changed while being read (now ${kindOf(st)}): only regular files are read`);
  }
  return fd;
}

const CHUNK = 1 * MiB;

/** Feeds a file to `sink` in chunks, never more than `cap` bytes (a file that grows past it is refused); `shown` names it in errors. */
function streamFile(path: string, cap: number, what: string, sink: (chunk: Buffer) => void, shown = path): number {
  const fd = openRegular(path, shown);
  try {
    const buffer = Buffer.allocUnsafe(CHUNK);
    let read = 0;
    for (;;) {
      const n = readSync(fd, buffer, 0, CHUNK, null);
      if (n === 0) return read;
      read += n;
      checkFileSize(shown, read, cap, what);
      sink(buffer.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
}

/** Content hash of a tree: each file's path, executable bit and bytes, each link's path and target (streamed). */
export function hashTree(root: string, options: TreeOptions = {}): string {
  const hash: Hash = createHash('sha256');
  const cap = { ...TREE_LIMITS, ...options.limits }.fileBytes;
  const what = options.what ?? 'the directory';
  for (const entry of walkTree(root, options)) {
    if (entry.kind === 'file') {
      // The same bytes as the hash before links were told apart: unchanged trees keep their images.
      hash.update(`${entry.rel}\0${entry.executable ? 'x' : '-'}\0`);
      streamFile(entry.path, cap, what, (chunk) => hash.update(chunk));
      hash.update('\0');
    } else if (entry.kind === 'link') hash.update(`${entry.rel}\0l\0${entry.target}\0`);
  }
  return hash.digest('hex');
}

/**
 * Copies a tree into `dest` (an existing directory): directories, regular files (their
 * executable bit kept) and links recreated as links. What is copied is what the walk
 * accepted, so the copy holds no special file and no link out of it.
 */
export function copyTree(root: string, dest: string, options: TreeOptions = {}): void {
  const cap = { ...TREE_LIMITS, ...options.limits }.fileBytes;
  const what = options.what ?? 'the directory';
  for (const entry of walkTree(root, options)) {
    const to = join(dest, entry.rel);
    if (entry.kind === 'dir') mkdirSync(to, { recursive: true });
    else if (entry.kind === 'link') symlinkSync(entry.target, to);
    else {
      const out = openSync(to, 'wx', entry.executable ? 0o755 : 0o644);
      try {
        streamFile(entry.path, cap, what, (chunk) => {
          writeSync(out, chunk);
        });
      } finally {
        closeSync(out);
      }
    }
  }
}

export interface FileOptions {
  /** The file must really be inside this directory (links resolved); absent for a file the user named. */
  root?: string;
  /** Bytes the file may hold; TEXT_FILE_BYTES where not given. */
  maxBytes?: number;
  /** What the file belongs to, for the error message. */
  what?: string;
}

/**
 * The real path of a regular file, or undefined where there is nothing at `path`; an
 * InputError where there is something else (a directory, a FIFO, a device, a link out of
 * `root`). A link the user named is followed when there is no `root`.
 */
export function regularFile(path: string, options: FileOptions = {}): string | undefined {
  const what = options.what ?? 'the directory';
  const st = lstatOf(path);
  if (!st) return undefined;
  let real = resolve(path);
  let target = st;
  if (st.isSymbolicLink())
    ({ real, st: target } = options.root !== undefined ? resolveLink(path, realPathOf(options.root), what) : followLink(path));
  else if (options.root !== undefined && !isInside(realPathOf(path), realPathOf(options.root)))
    throw new InputError({ file: path }, `is outside ${what} (${realPathOf(options.root)})`);
  if (!target.isFile()) throw new InputError({ file: path }, `is ${kindOf(target)}: only a regular file is read here`);
  checkFileSize(path, target.size, options.maxBytes ?? TEXT_FILE_BYTES, what);
  return real;
}

/** The real path of the regular file at `path` (see `regularFile`), or an InputError naming it when it is missing. */
function existingRegularFile(path: string, options: FileOptions): string {
  const real = regularFile(path, options);
  if (real === undefined) throw new InputError({ file: path }, 'missing');
  return real;
}

/** A regular file's bytes (see `regularFile`), read in chunks up to its cap; an InputError names the path when it is missing. */
export function readRegularFile(path: string, options: FileOptions = {}): Buffer {
  const real = existingRegularFile(path, options);
  const chunks: Buffer[] = [];
  streamFile(real, options.maxBytes ?? TEXT_FILE_BYTES, options.what ?? 'the directory', (chunk) => chunks.push(Buffer.from(chunk)), path);
  return Buffer.concat(chunks);
}

/**
 * `readRegularFile`, or undefined where there is nothing at `path` — also when it vanishes
 * between the look and the read (a lock another process removes, a cache entry replaced).
 */
export function readRegularFileIfPresent(path: string, options: FileOptions = {}): Buffer | undefined {
  try {
    return regularFile(path, options) === undefined ? undefined : readRegularFile(path, options);
  } catch (error) {
    if (error instanceof InputError && lstatOf(path) === undefined) return undefined;
    throw error;
  }
}

/**
 * A user's or a third party's text file (`what` names it in a refusal), at most
 * MAX_STRING_BYTES; any failure to read it is one InputError naming the file ("cannot read NOUN").
 */
export function readInputText(file: string, what: string, noun: string): string {
  try {
    return readTextFile(file, { maxBytes: MAX_STRING_BYTES, what });
  } catch (error) {
    if (error instanceof InputError) throw error;
    throw new InputError({ file }, `cannot read ${noun}: ${describeCause(error)}`, { cause: error });
  }
}

/** `readRegularFile` as UTF-8 text. */
export function readTextFile(path: string, options: FileOptions = {}): string {
  return readRegularFile(path, { maxBytes: TEXT_FILE_BYTES, ...options }).toString('utf8');
}

/** `readTextFile` parsed as JSON; text that does not parse is an InputError naming the file. */
export function readJsonFile(path: string, options: FileOptions = {}): unknown {
  const text = readTextFile(path, options);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InputError({ file: path }, `not valid JSON: ${describeCause(error)}`, { cause: error });
  }
}

/**
 * Opens a file of a directory someone else may have written (a run directory being
 * resumed) to append to it, created if missing: a link in its place is refused rather than
 * followed (O_NOFOLLOW: no append to the file it names), and so is a FIFO or a device
 * (O_NONBLOCK: a FIFO with no reader fails at once instead of blocking the open). The
 * caller closes the descriptor.
 */
export function openAppend(path: string): number {
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o644);
  } catch (error) {
    const st = lstatOf(path);
    throw new InputError(
      { file: path },
      `cannot be written${st && !st.isFile() ? ` (it is ${kindOf(st)})` : ''}: ${describeCause(error)}`,
      {
        cause: error,
      },
    );
  }
  const st = fstatSync(fd);
  if (!st.isFile()) {
    closeSync(fd);
    throw new InputError({ file: path }, `is ${kindOf(st)}: only a regular file is appended to`);
  }
  return fd;
}

/** Feeds a regular file (see `regularFile`) to `sink` in chunks, never holding it whole (a hash of gigabytes of weights); its length. */
export function streamRegularFile(path: string, options: FileOptions, sink: (chunk: Buffer) => void): number {
  return streamFile(existingRegularFile(path, options), options.maxBytes ?? TEXT_FILE_BYTES, options.what ?? 'the directory', sink, path);
}

/** A regular file opened for a reader that takes it a piece at a time (Parquet's footer, then its row groups). */
export interface OpenedFile {
  /** Open read-only, O_NONBLOCK, checked regular on the descriptor: the caller closes it. */
  fd: number;
  /** Its length when opened. */
  size: number;
}

/** Opens a regular file (see `regularFile`; `maxBytes` caps its length, unlimited where not given) for a streaming reader. */
export function openRegularFile(path: string, options: FileOptions = {}): OpenedFile {
  const fd = openRegular(existingRegularFile(path, { ...options, maxBytes: options.maxBytes ?? Number.POSITIVE_INFINITY }), path);
  const bytes = fstatSync(fd).size;
  try {
    checkFileSize(path, bytes, options.maxBytes ?? Number.POSITIVE_INFINITY, options.what ?? 'the directory');
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  return { fd, size: bytes };
}

/** A line of a file read by `readLines`: its text (without the line end) and its 1-based number. */
export interface FileLine {
  text: string;
  line: number;
}

export interface LineOptions extends FileOptions {
  /** Bytes one line may hold; MAX_STRING_BYTES where not given (a longer one could not be one string). */
  maxLineBytes?: number;
}

/**
 * Each line of a regular file (see `regularFile`), read in chunks from one checked
 * descriptor, so a file of any length costs one line of memory: a file with no newline
 * (a 3 GiB sparse file, `/dev/zero` copied out) is refused at `maxLineBytes`, naming the
 * file and line. `maxBytes` caps the whole file (unlimited where not given). A line may
 * end in `\r\n`; the last line needs no line end.
 */
export function* readLines(path: string, options: LineOptions = {}): Generator<FileLine> {
  const what = options.what ?? 'the directory';
  const cap = options.maxBytes ?? Number.POSITIVE_INFINITY;
  const lineCap = options.maxLineBytes ?? MAX_STRING_BYTES;
  const { fd } = openRegularFile(path, options);
  try {
    const buffer = Buffer.allocUnsafe(CHUNK);
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let line = 0;
    let read = 0;
    const lineOf = (tail: Buffer): FileLine => {
      const bytes = pendingBytes === 0 ? tail : Buffer.concat([...pending, tail]);
      pending = [];
      pendingBytes = 0;
      const end = bytes.length > 0 && bytes[bytes.length - 1] === 0x0d ? bytes.length - 1 : bytes.length;
      return { text: bytes.toString('utf8', 0, end), line: ++line };
    };
    const checkLine = (bytes: number) => {
      if (bytes > lineCap)
        throw new InputError({ file: path, line: line + 1 }, `line is longer than ${size(lineCap)}, over the cap on one line of ${what}`);
    };
    for (;;) {
      const n = readSync(fd, buffer, 0, CHUNK, null);
      if (n === 0) break;
      read += n;
      checkFileSize(path, read, cap, what);
      let start = 0;
      for (let end = buffer.indexOf(0x0a, start); end >= 0 && end < n; end = buffer.indexOf(0x0a, start)) {
        checkLine(pendingBytes + end - start);
        yield lineOf(Buffer.from(buffer.subarray(start, end)));
        start = end + 1;
      }
      if (start < n) {
        checkLine(pendingBytes + n - start);
        pending.push(Buffer.from(buffer.subarray(start, n)));
        pendingBytes += n - start;
      }
    }
    if (pendingBytes > 0) yield lineOf(Buffer.alloc(0));
  } finally {
    closeSync(fd);
  }
}

/** Every file and link of a tree checked against the rules above, nothing read (for a tree read later, by a build or a tar). */
export function checkTree(root: string, options: TreeOptions = {}): void {
  walkTree(root, options);
}
