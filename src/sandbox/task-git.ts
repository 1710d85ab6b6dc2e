/**
 * Where a task repository's git data lies, when the task set wrote its `.git`. A repository
 * names other directories five ways, and git follows each: `.git` itself (a link, or a
 * gitfile `gitdir: PATH`), `commondir` (a worktree's shared repository),
 * `objects/info/alternates` (object stores borrowed from other repositories, which may
 * borrow again), and links inside any of them. A `.git` holding `gitdir:
 * /home/me/private/.git` handed every branch of a host repository to the model. So each
 * of these must lead inside the directories the repository itself may lie in (the task
 * set's directory and PROBE_REPO_ROOTS: verify/repo-path.ts), and the directories git
 * reads hold only regular files, directories and links inside them (no FIFO to hang git,
 * no pack linked from elsewhere): else an InputError names the task file and `repo_path`.
 *
 * Of a task's repository probe reads the object store and `shallow` (repo-checkout.ts),
 * and for `probe task` HEAD and the ref it names (read here as text), never its config,
 * hooks, index or work tree: no setting of the task set's runs on the host.
 */
import { lstatSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { describeCause, InputError, type InputLocation } from '../errors.ts';
import { COMMIT_ID } from '../schema/task.ts';
import { checkTree, isInside, readTextFile, TEXT_FILE_BYTES, UNCAPPED, walkTree } from '../util/safe-tree.ts';

export interface TaskGit {
  /** The repository's `.git`, as found (what messages name). */
  dotGit: string;
  /** Real paths: the repository's git directory and the one holding its objects and refs (a worktree's main repository). */
  gitDir: string;
  commonDir: string;
  /** The object store, then every store its alternates borrow: real paths, each checked. */
  objectDirs: string[];
  /** The commits a shallow repository's history stops at (its `shallow` file), when it has one. */
  shallow?: string;
}

export interface GitConfinement {
  /** Real directories the git data may lie in. */
  roots: string[];
  /** Where a refusal is reported: the task file and its repo_path, or the `.git` of a task source directory. */
  at: InputLocation;
  /** What the roots are, for the message ("the task set's directory"). */
  rootsName: string;
}

/** A task record's repository: its git data may lie only where its repo_path may (verify/repo-path.ts); a refusal names the record's repo_path. */
export function taskSetConfinement(roots: string[], at: InputLocation): GitConfinement {
  return { roots, at: { ...at, field: 'repo_path' }, rootsName: "the task set's directory" };
}

/** git follows alternates five levels deep and no further. */
const ALTERNATES_DEPTH = 5;
/** A gitfile or `commondir` holds one path. */
const POINTER_BYTES = 64 * 1024;

function refuse(confinement: GitConfinement, problem: string): never {
  throw new InputError(confinement.at, problem);
}

/** The real directory a pointer of the repository leads to, or a refusal naming `what` and where it leads. */
function confined(path: string, what: string, confinement: GitConfinement): string {
  let real: string;
  try {
    real = realpathSync(path);
  } catch (error) {
    return refuse(confinement, `${what} leads to ${path}, which does not resolve (${describeCause(error)})`);
  }
  if (!confinement.roots.some((root) => isInside(real, root)))
    refuse(
      confinement,
      `${what} leads to ${real}, outside ${confinement.rootsName} (${confinement.roots.join(', ')}): a task repository's git data must lie inside it`,
    );
  if (!statSync(real).isDirectory()) refuse(confinement, `${what} leads to ${real}, which is not a directory`);
  return real;
}

/** A file of the repository's git data read as text: a FIFO, a device or a link out of `root` is refused. */
function pointerText(path: string, root: string, confinement: GitConfinement, maxBytes = POINTER_BYTES): string {
  try {
    return readTextFile(path, { root, maxBytes, what: "the repository's git directory" });
  } catch (error) {
    return refuse(confinement, describeCause(error));
  }
}

function exists(path: string): boolean {
  return lstatSync(path, { throwIfNoEntry: false }) !== undefined;
}

/** The git directory `.git` names: itself (a directory or a link to one) or the gitfile's `gitdir:`. */
function gitDirOf(dotGit: string, confinement: GitConfinement): string {
  const st = lstatSync(dotGit);
  if (st.isDirectory()) return confined(dotGit, `the repository's .git (${dotGit})`, confinement);
  if (st.isSymbolicLink()) return confined(dotGit, `the repository's .git (${dotGit}), a symbolic link,`, confinement);
  if (!st.isFile()) refuse(confinement, `the repository's .git (${dotGit}) is neither a directory nor a gitfile`);
  const text = pointerText(dotGit, dirname(dotGit), confinement);
  // As git reads it: the first line, after "gitdir: ", relative to the directory holding the file.
  const target = /^gitdir: (.*)/.exec(text.split('\n')[0]!.replace(/\r$/, ''))?.[1];
  if (!target) return refuse(confinement, `the repository's .git (${dotGit}) is a file but not a gitfile ("gitdir: PATH")`);
  return confined(resolve(dirname(dotGit), target), `the repository's .git (${dotGit}), a gitfile,`, confinement);
}

/** The object stores `objects` borrows through `info/alternates`, recursively, in git's order. */
function alternatesOf(objects: string, confinement: GitConfinement, found: string[], depth: number): void {
  const file = join(objects, 'info', 'alternates');
  if (!exists(file)) return;
  if (depth >= ALTERNATES_DEPTH) refuse(confinement, `${file} borrows objects more than ${ALTERNATES_DEPTH} levels deep`);
  for (const line of pointerText(file, objects, confinement).split('\n')) {
    const entry = line.replace(/\r$/, '');
    if (entry.trim() === '' || entry.startsWith('#')) continue;
    if (entry.startsWith('"'))
      refuse(confinement, `${file} names a quoted path (${entry}): a task repository's alternates are plain paths`);
    // Relative entries are relative to the object store that names them.
    const store = confined(resolve(objects, entry), `${file} (${entry})`, confinement);
    if (found.includes(store)) continue;
    found.push(store);
    alternatesOf(store, confinement, found, depth + 1);
  }
}

/** Every directory git reads checked by safe-tree: regular files, directories and links inside each, nothing else. */
function checkGitTrees(dirs: string[], confinement: GitConfinement): void {
  const walked: string[] = [];
  for (const dir of dirs) {
    if (walked.some((done) => isInside(dir, done))) continue;
    try {
      checkTree(dir, { links: 'inside', limits: UNCAPPED, what: `the git directory ${dir}` });
    } catch (error) {
      refuse(confinement, describeCause(error));
    }
    walked.push(dir);
  }
}

/**
 * The git data of the repository at `repoDir`, every pointer checked (and with `walk`,
 * every directory git reads); undefined when it has no `.git`. Without `walk` only the
 * pointers are followed: cheap enough for every task at load.
 */
export function taskGit(repoDir: string, confinement: GitConfinement, options: { walk: boolean }): TaskGit | undefined {
  const dotGit = join(repoDir, '.git');
  if (!exists(dotGit)) return undefined;
  const gitDir = gitDirOf(dotGit, confinement);
  const commondir = join(gitDir, 'commondir');
  const commonDir = exists(commondir)
    ? confined(resolve(gitDir, pointerText(commondir, gitDir, confinement).split('\n')[0]!.trim()), `${commondir}`, confinement)
    : gitDir;
  const objectsPath = join(commonDir, 'objects');
  const objectDirs = exists(objectsPath) ? [confined(objectsPath, `${objectsPath}`, confinement)] : [];
  if (objectDirs.length > 0) alternatesOf(objectDirs[0]!, confinement, objectDirs, 0);
  if (options.walk) checkGitTrees([gitDir, commonDir, ...objectDirs], confinement);
  const shallowFile = join(commonDir, 'shallow');
  let shallow: string | undefined;
  if (exists(shallowFile)) {
    shallow = pointerText(shallowFile, commonDir, confinement, TEXT_FILE_BYTES);
    if (!shallow.split('\n').every((line) => line === '' || COMMIT_ID.test(line)))
      refuse(confinement, `${shallowFile} holds something other than commit ids`);
  }
  return { dotGit, gitDir, commonDir, objectDirs, ...(shallow ? { shallow } : {}) };
}

/**
 * The commit HEAD names, read as git stores it (a commit id, or `ref: refs/…` followed
 * through the loose ref or `packed-refs`, a few hops at most), without running git in the
 * repository. Whether the commit exists is the caller's to check.
 */
export function headCommit(git: TaskGit, confinement: GitConfinement): string {
  let value = pointerText(join(git.gitDir, 'HEAD'), git.gitDir, confinement).trim();
  for (let hop = 0; hop < 5; hop++) {
    if (COMMIT_ID.test(value)) return value;
    const ref = /^ref: (refs\/[^\s]+)$/.exec(value)?.[1];
    if (!ref || ref.split('/').includes('..'))
      return refuse(confinement, `HEAD of ${git.dotGit} is neither a commit id nor a ref ("${value}")`);
    const loose = join(git.commonDir, ref);
    if (exists(loose)) {
      value = pointerText(loose, git.commonDir, confinement).trim();
      continue;
    }
    const packed = join(git.commonDir, 'packed-refs');
    const line = exists(packed)
      ? pointerText(packed, git.commonDir, confinement, TEXT_FILE_BYTES)
          .split('\n')
          .find((l) => l.endsWith(` ${ref}`))
      : undefined;
    if (!line) return refuse(confinement, `HEAD of ${git.dotGit} names ${ref}, which does not exist (a repository without a commit?)`);
    value = line.slice(0, line.indexOf(' '));
  }
  return refuse(confinement, `HEAD of ${git.dotGit} is a chain of more than 5 refs`);
}

/**
 * Every `.git` below the top of a plain tree checked as above: `git add` of the tree on the
 * host reads a nested repository's HEAD and refs wherever its `.git` leads.
 */
export function checkNestedGit(treeRoot: string, confinement: GitConfinement, what: string): void {
  for (const entry of walkTree(treeRoot, { links: 'keep', what }))
    if (basename(entry.rel) === '.git') taskGit(dirname(entry.path), confinement, { walk: true });
}
