/**
 * What of a candidate's changes grading reads: an allow-list, not a list of tricks.
 *
 * The graded tree is the base plus only the changes a fix makes to the code under test:
 *
 * - edits to tracked files (the repository's own), and
 * - new files inside an existing source package: a directory of the base that holds the
 *   repository's code (an `__init__.py`, or tracked source files) or lies below one, and is
 *   not a directory of tests.
 *
 * Everything else the candidate changed is left out of the graded tree (put back as the base
 * has it). What is left out is *tampering* when it is something a test run loads or reads —
 *
 * - hooks that run inside the test process wherever they are: `conftest.py`,
 *   `sitecustomize`/`usercustomize`, `*.pth`, compiled bytecode, `node_modules/`, packaging
 *   metadata (`*.dist-info/`, `*.egg-info`, `*.egg-link`: pytest loads every `pytest11`
 *   entry point it names);
 * - dotfiles and dot-directories (tools read them as configuration; `.git` among them);
 * - runner configuration: pytest/coverage/npm/jest/… config files, and the test sections of
 *   `setup.cfg`, `tox.ini`, `pyproject.toml`, `package.json` (runner-settings.ts);
 * - the tests themselves: files of the test patch (as SWE-bench resets them), files of the
 *   graded tests and their package's `__init__.py`, and any existing test file;
 * - a new module or package named like one Python may import from elsewhere, wherever it
 *   could stand in for it (a directory that is not a package: the root, a directory of
 *   tests, `src/`): a standard-library name of any platform (`msvcrt`, which `subprocess`
 *   tries on Linux), a name the runner tries at start-up (failed attempts included:
 *   `org`, which `copy` tries), an installed module, the runner's, or the repository's own
 *   (a fixed copy only the tests import); the sandbox says which (graded-tree.ts);
 *
 * — and otherwise just *left out*: a reproduction script at the root, notes, a scratch
 * directory. New test files of the candidate's own are dropped too (only the task's tests
 * grade), and reported as such, not as tampering.
 */
import type { LoadedTask } from '../schema/task.ts';
import { SETTINGS_FILES, type SettingsFormat } from './runner-settings.ts';
import { patchPaths, repoPathFromText, type RepoPath } from './patch-paths.ts';

export interface Tampering {
  path: string;
  reason: string;
}

export const TAMPERING = {
  conftest: 'conftest.py: pytest runs its hooks and fixtures inside the test session',
  startup: 'sitecustomize/usercustomize: Python imports it at start-up, before any test',
  pth: '.pth file: Python runs its import lines at start-up',
  metadata: 'packaging metadata (.dist-info/.egg-info): pytest loads the plugins its entry points name',
  bytecode: 'compiled bytecode: Python may run it instead of the source',
  nodeModules: "node_modules/: the tests' imports would resolve to it",
  dotfile: 'a dotfile or dot-directory: tools read them as configuration, and a fix to the code needs none',
  runnerConfig: 'test-runner configuration file',
  settings: (name: string) => `changes the test-runner settings in ${name}`,
  shadow: (name: string) => `shadows the module "${name}" that the test run imports`,
  testFile: 'changes a test file the task grades with (reset to the base, as SWE-bench does)',
  testPatchFile: 'writes a file of the test patch (reset to the base before the test patch is applied, as SWE-bench does)',
} as const;

export type PathVerdict =
  | { kind: 'keep' }
  | { kind: 'tampering'; reason: string }
  /** A new test file of the candidate's own: dropped, not tampering. */
  | { kind: 'own-test' }
  /** Outside the source packages and nothing a test run loads: dropped, not tampering. */
  | { kind: 'left-out' }
  /**
   * Tampering if its test-runner settings differ from the base's; else kept (`graded`: a
   * tracked file, or a new one inside a source package) or left out.
   */
  | { kind: 'settings'; format: SettingsFormat; graded: boolean }
  /**
   * A new module or package where it could be imported as a top-level module: tampering if
   * the name is one the run may import from elsewhere; else kept (`graded`: inside a
   * source package) or left out.
   */
  | { kind: 'named'; module: string; graded: boolean };

/** Modules of the runners and their start-up, shadowed wherever they are installed. */
const RUNNER_MODULES = new Set([
  'pytest',
  '_pytest',
  'py',
  'pluggy',
  'iniconfig',
  'unittest',
  'nose',
  'nose2',
  'doctest',
  'coverage',
  'xdist',
  'tomli',
  'tomllib',
  'packaging',
  'exceptiongroup',
  'colorama',
  'site',
  'runpy',
  'importlib',
  'encodings',
]);

const RUNNER_CONFIG =
  /^(\.?pytest\.(ini|toml)|\.coveragerc|\.npmrc|\.yarnrc(\.ya?ml)?|\.pnpmfile\.c?js|\.mocharc(\.[a-z]+)?|(jest|vitest|vite|ava|karma|babel|playwright)\.config\.[a-z]+|vitest\.workspace\.[a-z]+|karma\.conf\.[a-z]+|\.babelrc(\.[a-z]+)?|\.nycrc(\.[a-z]+)?|\.c8rc(\.[a-z]+)?|\.taprc|node\.config\.json)$/;
/** `name.py`, legacy `name.pyc`, or an extension module `name[.abi-tag].so`. */
const MODULE_FILE = /^(.+)\.(py|pyw|pyc|pyo)$|^([^.]+)(\.[^.]+)?\.(so|pyd)$/;
/** pytest's default `python_files`, Django's `tests.py`, `node --test`'s and jest's names. */
const TEST_FILE = /^(test_.*|.*_test|tests?)\.py$|^(test|test-.+|.+[.\-_]test|.+\.spec)\.[cm]?[jt]sx?$/;
/** `node --test` runs every script under a `test` directory; jest every one under `__tests__`. */
const SCRIPT = /\.[cm]?[jt]sx?$/;
const SCRIPT_TEST_DIRS = ['test', '__tests__'];
/** Directories named for tests, whatever they hold. */
const TEST_DIR_NAMES = new Set(['test', 'tests', 'testing', '__tests__']);
/** A file of code: a directory holding one directly is a source directory. */
const SOURCE_FILE =
  /\.(py|pyx|pxd|pyi|js|mjs|cjs|jsx|ts|mts|cts|tsx|vue|svelte|c|h|cc|cpp|cxx|hh|hpp|hxx|rs|go|java|kt|scala|rb|php|pl|pm|lua|swift|m|mm|cs|fs|r|jl|ex|exs|erl|hs|ml|clj|dart|zig|nim)$/i;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * A distribution's metadata as importlib.metadata looks for it in a `sys.path` directory
 * (`name.dist-info/`, `name.egg-info` as a directory or a PKG-INFO file), and setuptools'
 * `.egg-link` pointers. Compared case-blind, as importlib does.
 */
function isPackagingMetadata(segment: string): boolean {
  return /\.(dist-info|egg-info|egg-link)$/i.test(segment);
}

/** A path segment's module name: the file name without its module extension, or the directory name. */
function moduleName(segment: string): string {
  const m = MODULE_FILE.exec(segment);
  return m ? (m[1] ?? m[3])! : segment;
}

/** What the task itself says about its tests, and the base tree. */
export interface HarnessContext {
  testPatchFiles: Set<string>;
  /** Files holding FAIL_TO_PASS/PASS_TO_PASS tests, where the ids name them (pytest, unittest). */
  gradedFiles: Set<string>;
  /** The `__init__.py` of each graded or test-patch file's package. */
  testPackageInits: Set<string>;
  /** Directories holding test files (the base's, the graded ones, the test patch's), and those named for tests. */
  testDirs: Set<string>;
  /** The repository's own top-level modules and packages (what the tests import the code under test by). */
  rootModules: Set<string>;
  /** Paths (files and their directories) of the base commit, as exact-byte keys. */
  base: Set<string>;
  /** The base's directories. */
  baseDirs: Set<string>;
  /** Base directories whose code makes them a source package: an `__init__.py`, or a tracked source file of their own. */
  sourceRoots: Set<string>;
  /** Base directories that are regular Python packages (an `__init__.py`): what is new in them is `package.name`, never top-level. */
  packages: Set<string>;
}

/** Files the graded test ids name: `tests/test_a.py::test_x`, `test_x (tests.test_a.Case.test_x)`. */
function gradedTestFiles(task: LoadedTask): string[] {
  const ids = [...task.FAIL_TO_PASS, ...task.PASS_TO_PASS];
  if (task.log_parser === 'pytest') return ids.filter((id) => id.includes('::')).map((id) => id.split('::')[0]!);
  if (task.log_parser === 'unittest') {
    return ids.flatMap((id) => {
      const parts = /\(([\w.]+)\)\s*$/.exec(id)?.[1]?.split('.') ?? [];
      // Which dotted prefix is the module is not written down: every one is a candidate.
      return parts.slice(1).map((_, i) => `${parts.slice(0, i + 1).join('/')}.py`);
    });
  }
  return [];
}

/** Every file and directory of a list of base paths. */
export function baseSet(files: readonly RepoPath[]): Set<string> {
  const set = new Set<string>();
  for (const { key } of files) {
    const parts = key.split('/');
    for (let i = 1; i <= parts.length; i++) set.add(parts.slice(0, i).join('/'));
  }
  return set;
}

const parentOf = (key: string) => key.split('/').slice(0, -1).join('/');

export function harnessContext(task: LoadedTask, base: Set<string>): HarnessContext {
  const testPatchFiles = new Set(patchPaths(task.test_patch).map((p) => p.key));
  // Only ids that name a real file count (a unittest id's prefixes are guesses).
  const gradedFiles = new Set(
    gradedTestFiles(task)
      .map((f) => repoPathFromText(f).key)
      .filter((k) => base.has(k) || testPatchFiles.has(k)),
  );
  const testPackageInits = new Set([...gradedFiles, ...testPatchFiles].map((k) => [...k.split('/').slice(0, -1), '__init__.py'].join('/')));
  const baseDirs = new Set([...base].map(parentOf).filter(Boolean));
  const testFiles = [...gradedFiles, ...testPatchFiles, ...[...base].filter((k) => TEST_FILE.test(k.split('/').at(-1)!))];
  const testDirs = new Set(testFiles.map(parentOf).filter(Boolean));
  for (const dir of baseDirs) if (TEST_DIR_NAMES.has(dir.split('/').at(-1)!.toLowerCase())) testDirs.add(dir);
  const rootModules = new Set<string>();
  const sourceRoots = new Set<string>();
  const packages = new Set<string>();
  for (const key of base) {
    const [top, ...rest] = key.split('/');
    if (rest.length > 0 || MODULE_FILE.test(top!)) rootModules.add(moduleName(top!));
    if (baseDirs.has(key)) continue;
    const dir = parentOf(key);
    if (!dir) continue;
    if (key.endsWith('/__init__.py')) packages.add(dir);
    if (SOURCE_FILE.test(key)) sourceRoots.add(dir);
  }
  for (const dir of packages) sourceRoots.add(dir);
  return { testPatchFiles, gradedFiles, testPackageInits, testDirs, rootModules, base, baseDirs, sourceRoots, packages };
}

/**
 * Whether a base directory is inside a source package: it, or a directory above it (not the
 * root), is a source root, and nothing on the way up is a directory of tests.
 */
function inSourcePackage(dir: string, ctx: HarnessContext): boolean {
  for (let d = dir; d !== ''; d = parentOf(d)) {
    if (ctx.testDirs.has(d)) return false;
    if (ctx.sourceRoots.has(d)) return true;
  }
  return false;
}

/** What a candidate's change is to grading: kept, left out, or tampering (and why). */
export function classifyPath(path: RepoPath, ctx: HarnessContext): PathVerdict {
  const segments = path.text.split('/');
  const name = segments.at(-1)!;
  const lower = name.toLowerCase();
  const tampering = (reason: string): PathVerdict => ({ kind: 'tampering', reason });
  // What a test run loads wherever it is.
  if (segments.includes('node_modules')) return tampering(TAMPERING.nodeModules);
  if (lower === 'conftest.py') return tampering(TAMPERING.conftest);
  if (lower.endsWith('.pth')) return tampering(TAMPERING.pth);
  if (segments.some(isPackagingMetadata)) return tampering(TAMPERING.metadata);
  if (segments.some((s) => ['sitecustomize', 'usercustomize'].includes(moduleName(s).toLowerCase()))) return tampering(TAMPERING.startup);
  if (segments.includes('__pycache__') || /\.py[co]$/.test(lower)) return tampering(TAMPERING.bytecode);
  if (RUNNER_CONFIG.test(lower)) return tampering(TAMPERING.runnerConfig);
  if (segments.some((s) => s.startsWith('.'))) return tampering(TAMPERING.dotfile);
  const settings = SETTINGS_FILES[name];
  if (settings) return { kind: 'settings', format: settings, graded: ctx.base.has(path.key) || whereNew(path, ctx).kind === 'keep' };
  // The tests.
  if (ctx.testPatchFiles.has(path.key)) return tampering(TAMPERING.testPatchFile);
  const testScript = SCRIPT.test(name) && segments.slice(0, -1).some((s) => SCRIPT_TEST_DIRS.includes(s));
  if (ctx.gradedFiles.has(path.key) || ctx.testPackageInits.has(path.key) || TEST_FILE.test(name) || testScript) {
    return ctx.base.has(path.key) ? tampering(TAMPERING.testFile) : { kind: 'own-test' };
  }
  // An edit (or deletion) of a tracked file: the repository's own.
  if (ctx.base.has(path.key)) return { kind: 'keep' };
  return whereNew(path, ctx);
}

/** A new file, by where it is: inside a source package or not, and whether it can stand in for a top-level module. */
function whereNew(path: RepoPath, ctx: HarnessContext): PathVerdict {
  const keys = path.key.split('/');
  const segments = path.text.split('/');
  // The deepest directory of the base above it, and the first entry that is new.
  let depth = keys.length - 1;
  while (depth > 0 && !ctx.baseDirs.has(keys.slice(0, depth).join('/'))) depth--;
  const parent = keys.slice(0, depth).join('/');
  const graded = inSourcePackage(parent, ctx);
  const entry = segments[depth]!;
  const isEntryModule = depth === segments.length - 1 ? MODULE_FILE.test(entry) : true;
  const module = moduleName(entry);
  // Inside a regular package the new entry is `package.name`: it cannot stand in for a top-level module.
  if (!isEntryModule || !IDENTIFIER.test(module) || ctx.packages.has(parent)) return graded ? { kind: 'keep' } : { kind: 'left-out' };
  // Named like the runner or the code under test, it is a stand-in wherever it could be imported.
  if (RUNNER_MODULES.has(module) || /^_?pytest/i.test(module) || ctx.rootModules.has(module))
    return { kind: 'tampering', reason: TAMPERING.shadow(module) };
  return { kind: 'named', module, graded };
}
