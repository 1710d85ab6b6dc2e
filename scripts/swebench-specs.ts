/**
 * Regenerates src/swebench/harness-specs.json: the SWE-bench harness's per-repository,
 * per-version facts (MAP_REPO_VERSION_TO_SPECS: test command, eval commands, install and
 * pre-install steps) and each repository's log parser (MAP_REPO_TO_PARSER), read from the
 * harness source at a pinned commit.
 *
 * The constants files are Python (dict comprehensions, `.update` calls), so Python itself
 * evaluates them, each in a namespace of its own (they import nothing of SWE-bench's); the
 * parser maps are read from the log-parser modules' source, aliases resolved.
 *
 * Usage: npx tsx scripts/swebench-specs.ts [--repo GIT_DIR] [--commit SHA]
 * (default: the mirror fetched into /work/.mirror/SWE-bench+SWE-bench/repo, at the last
 * commit before SWE-bench 5's restructure moved these facts out of the harness into per-task
 * files — the published datasets' rows are graded with these).
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PARSER_EQUIVALENTS } from '../src/swebench/parser-equivalents.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1]! : fallback;
};
const gitDir = arg('--repo', '/work/.mirror/SWE-bench+SWE-bench/repo');
const commit = execFileSync(
  'git',
  ['--git-dir', gitDir, 'rev-parse', `${arg('--commit', 'b8d53321b98c1193f9df999ff11d57ac5f5f551d')}^{commit}`],
  { encoding: 'utf8' },
).trim();
const show = (path: string) =>
  execFileSync('git', ['--git-dir', gitDir, 'show', `${commit}:${path}`], { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });

const LANGUAGES = ['c', 'go', 'java', 'javascript', 'php', 'python', 'ruby', 'rust'];

/** Evaluates each constants file and prints its MAP_REPO_VERSION_TO_SPECS_* as JSON. */
const EVALUATE = `
import json, sys
sources = json.load(sys.stdin)
out = {}
for language, source in sources.items():
    namespace = {}
    exec(compile(source, f"swebench/harness/constants/{language}.py", "exec"), namespace)
    [name] = [k for k in namespace if k.startswith("MAP_REPO_VERSION_TO_SPECS_")]
    out[language] = namespace[name]
json.dump(out, sys.stdout, sort_keys=True, default=str)
`;
const sources = Object.fromEntries(LANGUAGES.map((l) => [l, show(`swebench/harness/constants/${l}.py`)]));
const specsByLanguage = JSON.parse(
  execFileSync('python3', ['-c', EVALUATE], { input: JSON.stringify(sources), encoding: 'utf8', maxBuffer: 64 * 2 ** 20 }),
) as Record<string, Record<string, Record<string, Record<string, unknown>>>>;

/** `MAP_REPO_TO_PARSER_XX = { "owner/name": parse_log_x, ... }`, with `parse_log_y = parse_log_x` aliases resolved. */
function parserMap(source: string): Map<string, string> {
  const aliases = new Map([...source.matchAll(/^(parse_log_\w+) = (parse_log_\w+)\s*$/gm)].map((m) => [m[1]!, m[2]!]));
  const resolveAlias = (name: string): string => (aliases.has(name) ? resolveAlias(aliases.get(name)!) : name);
  const block = /^MAP_REPO_TO_PARSER_\w+ = \{([\s\S]*?)^\}/m.exec(source);
  if (!block) throw new Error('no MAP_REPO_TO_PARSER_* block');
  return new Map([...block[1]!.matchAll(/"([^"]+)":\s*(parse_log_\w+)/g)].map((m) => [m[1]!, resolveAlias(m[2]!)]));
}

/** What a spec carries that matters once the image exists (the rest built the image). */
function versionFacts(spec: Record<string, unknown>) {
  const list = (v: unknown) => (Array.isArray(v) ? v.map(String) : v === undefined ? undefined : [String(v)]);
  return {
    test_cmd: Array.isArray(spec.test_cmd) ? spec.test_cmd.map(String) : String(spec.test_cmd),
    ...(spec.eval_commands ? { eval_commands: list(spec.eval_commands) } : {}),
    ...(spec.install ? { install: String(spec.install) } : {}),
    ...(spec.pre_install ? { pre_install: list(spec.pre_install) } : {}),
    ...(spec.python ? { python: String(spec.python) } : {}),
  };
}

const repos: Record<string, unknown> = {};
for (const language of LANGUAGES) {
  const parsers = parserMap(show(`swebench/harness/log_parsers/${language}.py`));
  for (const [repo, versions] of Object.entries(specsByLanguage[language]!).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const harnessParser = parsers.get(repo) ?? null;
    repos[repo] = {
      language,
      harness_parser: harnessParser,
      log_parser: harnessParser ? (PARSER_EQUIVALENTS[harnessParser]?.parser ?? null) : null,
      // get_test_directives: django names test modules, everyone else test files.
      directives: repo === 'django/django' ? 'django-modules' : repo === 'swe-bench/humaneval' ? 'humaneval' : 'paths',
      versions: Object.fromEntries(Object.entries(versions).map(([v, spec]) => [v, versionFacts(spec)])),
    };
  }
}

const out = join(root, 'src', 'swebench', 'harness-specs.json');
writeFileSync(
  out,
  `${JSON.stringify(
    {
      source: {
        repository: 'https://github.com/SWE-bench/SWE-bench',
        commit,
        license: 'MIT (src/swebench/LICENSE.SWE-bench)',
        generator: 'scripts/swebench-specs.ts',
      },
      repos,
    },
    null,
    1,
  )}\n`,
);
console.error(`${Object.keys(repos).length} repositories from SWE-bench ${commit.slice(0, 10)} → ${out}`);
