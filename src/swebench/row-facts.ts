/**
 * What a published dataset row (SWE-bench, Verified, Lite, Multilingual, SWE-Gym, SWE-smith)
 * leaves for the harness to know: the test command, the log parser and the image. Derived
 * here from the harness's own facts (harness-specs.json); whatever the row gives itself wins.
 * What cannot be derived comes back as problems naming the field and what to set, so that a
 * row's every gap is reported at once.
 */
import { LOG_PARSERS } from '../schema/task.ts';
import { harnessImageName, DEFAULT_IMAGE_NAMESPACE } from './image-name.ts';
import { PARSER_EQUIVALENTS } from './parser-equivalents.ts';
import { repoSpec } from './specs.ts';
import { composeTestCommand, testDirectives } from './test-command.ts';

export interface RowFactsOptions {
  /** Namespace of the harness's images (`swebench` by default; null: images the harness built locally). */
  imageNamespace?: string | null;
}

export interface FieldProblem {
  field: string;
  message: string;
}

export interface RowFacts {
  /** Fields to add to the row (only ones it lacks, or a harness parser name translated). */
  facts: Record<string, unknown>;
  problems: FieldProblem[];
}

const given = (value: unknown) => value !== undefined && value !== null && value !== '';
const SET_BOTH = `set "test_cmd" and "log_parser" (${LOG_PARSERS.join(' | ')}) in the row`;

/** The log parser: the row's own, a SWE-bench 5 row's harness parser name translated, or none. */
function rowParser(value: unknown): { parser?: string; problem?: string } {
  if (typeof value !== 'string' || !value.startsWith('parse_log_')) return given(value) ? { parser: value as string } : {};
  const equivalent = PARSER_EQUIVALENTS[value];
  return equivalent ? { parser: equivalent.parser } : { problem: `SWE-bench's ${value} has no equivalent in probe: ${SET_BOTH}` };
}

export function rowFacts(row: Record<string, unknown>, options: RowFactsOptions = {}): RowFacts {
  const facts: Record<string, unknown> = {};
  const problems: FieldProblem[] = [];
  const { parser, problem: parserProblem } = rowParser(row.log_parser);
  if (parser !== undefined && parser !== row.log_parser) facts.log_parser = parser;
  if (parserProblem) problems.push({ field: 'log_parser', message: parserProblem });

  // Where the repository lives: the row's image (SWE-bench 5's `image`, SWE-smith's `image_name`), else the harness's name for it.
  if (!given(row.image) && !given(row.repo_path)) {
    if (typeof row.image_name === 'string' && row.image_name) facts.image = row.image_name;
    else if (typeof row.instance_id === 'string' && row.instance_id && typeof row.repo === 'string') {
      facts.image = harnessImageName(
        row.instance_id,
        options.imageNamespace === undefined ? DEFAULT_IMAGE_NAMESPACE : options.imageNamespace,
      );
    }
  }
  if (!given(row.base_commit) && given(row.image_name)) {
    problems.push({
      field: 'base_commit',
      message:
        'missing: SWE-smith names a task\'s bug by a branch of the image\'s repository (the instance id), not a commit; set "base_commit" to the commit that branch points at',
    });
  }

  const needCommand = !given(row.test_cmd);
  const needParser = parser === undefined && !parserProblem;
  if (!needCommand && !needParser) return { facts, problems };
  if (typeof row.repo !== 'string') return { facts, problems }; // not a dataset row: the schema names what is missing

  const spec = repoSpec(row.repo);
  const lacking = (message: string) => {
    if (needCommand) problems.push({ field: 'test_cmd', message });
    if (needParser) problems.push({ field: 'log_parser', message });
  };
  if (!spec) {
    lacking(
      `missing, and SWE-bench's harness has no facts for repository "${row.repo}" (SWE-Gym's and SWE-smith's repositories are not among them): ${SET_BOTH}`,
    );
    return { facts, problems };
  }
  if (needParser) {
    if (spec.log_parser) facts.log_parser = spec.log_parser;
    else
      problems.push({
        field: 'log_parser',
        message: `missing, and SWE-bench parses ${row.repo}'s test logs with ${spec.harness_parser ?? 'no parser'}, which probe has no equivalent of: ${SET_BOTH}`,
      });
  }
  if (!needCommand) return { facts, problems };
  if (spec.language !== 'python') {
    problems.push({
      field: 'test_cmd',
      message: `missing, and SWE-bench runs ${spec.language} repositories such as ${row.repo} with per-repository scripts probe does not compose: ${SET_BOTH}`,
    });
    return { facts, problems };
  }
  const version = typeof row.version === 'string' ? spec.versions[row.version] : undefined;
  if (!version) {
    const known = Object.keys(spec.versions);
    const which = given(row.version)
      ? `no version "${String(row.version)}" of ${row.repo}`
      : `no "version" in the row, which picks ${row.repo}'s`;
    problems.push({
      field: 'test_cmd',
      message: `missing, and SWE-bench's harness knows ${which} (known: ${known.join(', ')}): set "version" to one of those, or "test_cmd"`,
    });
    return { facts, problems };
  }
  facts.test_cmd = composeTestCommand(version, testDirectives(spec.directives, typeof row.test_patch === 'string' ? row.test_patch : ''));
  return { facts, problems };
}
