/**
 * Reading a directory tree or a file someone else wrote (a task set, a corpus, a run
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
 *   followed, for a tar that stores links as links: a git checkout may hold any link.)
 * - Every file has a size cap and the tree a total cap (a 3 GiB sparse file costs nothing
 *   on disk but all of it to read), checked from `lstat` before reading and again while
 *   reading, in chunks: a hash never holds a file in memory.
 * - A file is opened with O_NOFOLLOW and O_NONBLOCK and checked again on its descriptor
 *   (`fstat`), so a path swapped for a FIFO or a link after the walk is refused, not
 *   followed or waited on.
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
import { dirname, join, relative, resolve, sep } from 'node:path';
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
  /** 'inside' (the default): a link must resolve inside the root. 'keep': every link is listed as a link, never followed. */
  links?: 'inside' | 'keep';
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

function realRoot(root: string): string {
  try {
    return realpathSync(root);
  } catch (error) {
    throw new InputError({ file: root }, `cannot be read: ${describeCause(error)}`, { cause: error });
  }
}

/**
 * Where a link inside `root` really points, or an InputError: out of the root, dangling,
 * or at something that is neither a regular file nor a directory.
 */
function resolveLink(path: string, root: string, what: string): { real: string; st: Stats } {
  let real: string;
  try {
    real = realpathSync(path);
  } catch (error) {
    throw new InputError({ file: path }, `is a symbolic link that does not resolve (${describeCause(error)})`, { cause: error });
  }
  if (!isInside(real, root))
    throw new InputError({ file: path }, `is a symbolic link to ${real}, outside ${what} (${root}): a link may point only inside it`);
  const st = lstatSync(real);
  if (!st.isFile() && !st.isDirectory())
    throw new InputError({ file: path }, `is a symbolic link to ${kindOf(st)} (${real}): only regular files and directories are read`);
  return { real, st };
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
  const top = realRoot(root);
  const rootStat = statSync(top);
  if (!rootStat.isDirectory()) throw new InputError({ file: root }, `is ${kindOf(rootStat)}, not a directory`);
  const entries: TreeEntry[] = [];
  let total = 0;
  const pending: Array<{ path: string; rel: string }> = [];
  // Children pushed one by one (a spread of a huge directory would overflow the stack), reversed so they pop in order.
  const pushChildren = (dir: string, rel: string) => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch (error) {
      throw new InputError({ file: dir }, `cannot be read: ${describeCause(error)}`, { cause: error });
    }
    names.sort();
    for (let i = names.length - 1; i >= 0; i--) pending.push({ path: join(dir, names[i]!), rel: rel ? `${rel}/${names[i]}` : names[i]! });
  };
  pushChildren(root, '');
  while (pending.length > 0) {
    const { path, rel } = pending.pop()!;
    if (entries.length >= limits.entries)
      throw new InputError({ file: root }, `holds more than ${limits.entries} files, directories and links, over the cap on ${what}`);
    const st = lstatOf(path);
    if (!st) throw new InputError({ file: path }, 'vanished while being read');
    if (st.isDirectory()) {
      entries.push({ kind: 'dir', rel, path });
      pushChildren(path, rel);
    } else if (st.isFile()) {
      checkFileSize(path, st.size, limits.fileBytes, what);
      total += st.size;
      if (total > limits.totalBytes)
        throw new InputError({ file: root }, `holds more than ${size(limits.totalBytes)} of files, over the cap on ${what}`);
      entries.push({ kind: 'file', rel, path, size: st.size, executable: (st.mode & 0o111) !== 0 });
    } else if (st.isSymbolicLink()) {
      if (options.links === 'keep') {
        entries.push({ kind: 'link', rel, path, target: readlinkSync(path) });
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

/**
 * Opens a file the walk (or `lstat`) found regular, refusing it if it is no longer a
 * regular file: O_NOFOLLOW refuses a link put in its place, O_NONBLOCK keeps a FIFO put
 * in its place from blocking the open, and `fstat` checks what was opened.
 */
function openRegular(path: string): number {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    throw new InputError({ file: path }, `cannot be read: ${describeCause(error)}`, { cause: error });
  }
  const st = fstatSync(fd);
  if (!st.isFile()) {
    closeSync(fd);
    throw new InputError({ file: path }, `changed while being read (now ${kindOf(st)}): only regular files are read`);
  }
  return fd;
}

const CHUNK = 1 * MiB;

/** Feeds a file to `sink` in chunks, never more than `cap` bytes (a file that grows past it is refused). */
function streamFile(path: string, cap: number, what: string, sink: (chunk: Buffer) => void): number {
  const fd = openRegular(path);
  try {
    const buffer = Buffer.allocUnsafe(CHUNK);
    let read = 0;
    for (;;) {
      const n = readSync(fd, buffer, 0, CHUNK, null);
      if (n === 0) return read;
      read += n;
      checkFileSize(path, read, cap, what);
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
  if (st.isSymbolicLink()) {
    if (options.root !== undefined) ({ real, st: target } = resolveLink(path, realRoot(options.root), what));
    else {
      const followed = statSync(path, { throwIfNoEntry: false });
      if (!followed) throw new InputError({ file: path }, 'is a symbolic link that does not resolve');
      real = realpathSync(path);
      target = followed;
    }
  } else if (options.root !== undefined && !isInside(realpathSync(path), realRoot(options.root)))
    throw new InputError({ file: path }, `is outside ${what} (${realRoot(options.root)})`);
  if (!target.isFile()) throw new InputError({ file: path }, `is ${kindOf(target)}: only a regular file is read here`);
  checkFileSize(path, target.size, options.maxBytes ?? TEXT_FILE_BYTES, what);
  return real;
}

/** A regular file's bytes (see `regularFile`), read in chunks up to its cap; an InputError names the path when it is missing. */
export function readRegularFile(path: string, options: FileOptions = {}): Buffer {
  const real = regularFile(path, options);
  if (real === undefined) throw new InputError({ file: path }, 'missing');
  const chunks: Buffer[] = [];
  streamFile(real, options.maxBytes ?? TEXT_FILE_BYTES, options.what ?? 'the directory', (chunk) => chunks.push(Buffer.from(chunk)));
  return Buffer.concat(chunks);
}

/** `readRegularFile` as UTF-8 text. */
export function readTextFile(path: string, options: FileOptions = {}): string {
  return readRegularFile(path, { maxBytes: TEXT_FILE_BYTES, ...options }).toString('utf8');
}

/** Every file and link of a tree checked against the rules above, nothing read (for a tree read later, by a build or a tar). */
export function checkTree(root: string, options: TreeOptions = {}): void {
  walkTree(root, options);
}
