/**
 * Which of a candidate's changed paths may change how the tests run or what they report,
 * rather than the code under test. Such changes are dropped from the graded state (the
 * path is put back as the base has it) and reported as tampering:
 *
 * - hooks that run inside the test process: `conftest.py`, `sitecustomize`/`usercustomize`,
 *   `*.pth`, compiled bytecode, `node_modules/`, and packaging metadata (`*.dist-info/`,
 *   `*.egg-info`, `*.egg-link`) anywhere in the tree: importlib.metadata finds it in any
 *   directory on `sys.path` (the repository root is one), and pytest loads every `pytest11`
 *   entry point it names as a plugin before the first test;
 * - runner configuration: pytest/coverage/npm/yarn/mocha/jest/vitest/… config files, and the
 *   test sections of `setup.cfg`, `tox.ini`, `pyproject.toml`, `package.json` (decided from
 *   both versions' text, runner-settings.ts);
 * - shadows: a new top-level module at the repository root (first on `sys.path` for
 *   `python -m …`) named like one the run imports — pytest, unittest, their dependencies,
 *   any module of the standard library or the environment (the sandbox says which); and a
 *   new module or package in a directory of tests (pytest puts it on `sys.path`) named like
 *   the repository's own, the runner's or the environment's;
 * - the tests themselves: files of the test patch (as SWE-bench resets them), files of the
 *   graded tests and their package's `__init__.py`, and any existing test file (named as
 *   pytest, Django, `node --test` or jest find them).
 *
 * New test files of the candidate's own are dropped too (only the task's tests grade; a test
 * module could patch the code under test at import, or report a graded test's name), but
 * they are not tampering. Other files under `tests/` stay: a repository may keep code there
 * (SWE-agent's test repository does).
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
  /** Dropped if its test-runner settings differ from the base's. */
  | { kind: 'settings'; format: SettingsFormat }
  /** A new top-level module: dropped if the name is importable outside the repository. */
  | { kind: 'shadow'; module: string };

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
  /** Directories holding test files (the base's, the graded ones, the test patch's): pytest puts them on sys.path. */
  testDirs: Set<string>;
  /** The repository's own top-level modules and packages (what the tests import the code under test by). */
  rootModules: Set<string>;
  /** Paths (files and their directories) of the base commit, as exact-byte keys. */
  base: Set<string>;
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

export function harnessContext(task: LoadedTask, base: Set<string>): HarnessContext {
  const testPatchFiles = new Set(patchPaths(task.test_patch).map((p) => p.key));
  // Only ids that name a real file count (a unittest id's prefixes are guesses).
  const gradedFiles = new Set(
    gradedTestFiles(task)
      .map((f) => repoPathFromText(f).key)
      .filter((k) => base.has(k) || testPatchFiles.has(k)),
  );
  const testPackageInits = new Set([...gradedFiles, ...testPatchFiles].map((k) => [...k.split('/').slice(0, -1), '__init__.py'].join('/')));
  const testFiles = [...gradedFiles, ...testPatchFiles, ...[...base].filter((k) => TEST_FILE.test(k.split('/').at(-1)!))];
  const testDirs = new Set(testFiles.map((k) => k.split('/').slice(0, -1).join('/')).filter(Boolean));
  const rootModules = new Set<string>();
  for (const key of base) {
    const [top, ...rest] = key.split('/');
    if (rest.length > 0 || MODULE_FILE.test(top!)) rootModules.add(moduleName(top!));
  }
  return { testPatchFiles, gradedFiles, testPackageInits, testDirs, rootModules, base };
}

/**
 * pytest's default import mode puts a test file's directory (the first above it that is not
 * a package) first on sys.path, so a new module or package in a directory of tests is
 * imported in place of one of the same name: named like the repository's own (a fixed copy
 * that only the test run sees) or the runner's, it is tampering; named like anything else,
 * a shadow when the environment has that module.
 */
function testDirShadow(path: RepoPath, ctx: HarnessContext): PathVerdict | null {
  const parts = path.key.split('/');
  for (let i = 1; i < parts.length; i++) {
    if (!ctx.testDirs.has(parts.slice(0, i).join('/')) || ctx.base.has(parts.slice(0, i + 1).join('/'))) continue;
    // The entry at depth i is new: a module file, or a directory (a package, or a namespace package).
    if (i === parts.length - 1 && !MODULE_FILE.test(parts[i]!)) continue;
    const module = moduleName(parts[i]!);
    if (!IDENTIFIER.test(module)) continue;
    if (ctx.rootModules.has(module) || RUNNER_MODULES.has(module) || /^_?pytest/i.test(module))
      return { kind: 'tampering', reason: TAMPERING.shadow(module) };
    return { kind: 'shadow', module };
  }
  return null;
}

export function classifyPath(path: RepoPath, ctx: HarnessContext): PathVerdict {
  const segments = path.text.split('/');
  const name = segments.at(-1)!;
  const lower = name.toLowerCase();
  const tampering = (reason: string): PathVerdict => ({ kind: 'tampering', reason });
  if (segments.includes('node_modules')) return tampering(TAMPERING.nodeModules);
  if (lower === 'conftest.py') return tampering(TAMPERING.conftest);
  if (lower.endsWith('.pth')) return tampering(TAMPERING.pth);
  if (segments.some(isPackagingMetadata)) return tampering(TAMPERING.metadata);
  if (segments.some((s) => ['sitecustomize', 'usercustomize'].includes(moduleName(s).toLowerCase()))) return tampering(TAMPERING.startup);
  if (segments.includes('__pycache__') || /\.py[co]$/.test(lower)) return tampering(TAMPERING.bytecode);
  if (RUNNER_CONFIG.test(lower)) return tampering(TAMPERING.runnerConfig);
  const settings = SETTINGS_FILES[name];
  if (settings) return { kind: 'settings', format: settings };
  if (ctx.testPatchFiles.has(path.key)) return tampering(TAMPERING.testPatchFile);
  const testScript = SCRIPT.test(name) && segments.slice(0, -1).some((s) => SCRIPT_TEST_DIRS.includes(s));
  if (ctx.gradedFiles.has(path.key) || ctx.testPackageInits.has(path.key) || TEST_FILE.test(name) || testScript) {
    return ctx.base.has(path.key) ? tampering(TAMPERING.testFile) : { kind: 'own-test' };
  }
  const inTestDir = testDirShadow(path, ctx);
  if (inTestDir) return inTestDir;
  // A new top-level module: `name.py` (or compiled) at the root, or a new root package's `__init__`.
  const top = segments[0]!;
  const module = moduleName(top);
  const isModule = segments.length === 1 ? MODULE_FILE.test(top) : segments.length === 2 && moduleName(name) === '__init__';
  if (isModule && IDENTIFIER.test(module) && !ctx.base.has(repoPathFromText(top).key)) {
    return RUNNER_MODULES.has(module) || /^_?pytest/i.test(module) ? tampering(TAMPERING.shadow(module)) : { kind: 'shadow', module };
  }
  return { kind: 'keep' };
}
