/**
 * The SWE-bench harness's log parsers that one of probe's parsers (src/verify/log-parsers.ts)
 * reads the same way, and where they differ. A harness parser missing here has no
 * equivalent: a row of its repository must name `test_cmd` and `log_parser` itself.
 */
import type { LogParserName } from '../schema/task.ts';

export interface ParserEquivalent {
  parser: LogParserName;
  /** What the harness's parser does that probe's does not. */
  differs?: string;
}

export const PARSER_EQUIVALENTS: Record<string, ParserEquivalent> = {
  // "STATUS test-id" summary lines of `pytest -rA`.
  parse_log_pytest: { parser: 'pytest' },
  parse_log_pytest_options: {
    parser: 'pytest',
    differs:
      'the harness shortens a parametrized id whose option is an absolute path to "[/<basename>]"; probe keeps the id as pytest prints it',
  },
  parse_log_pytest_v2: {
    parser: 'pytest',
    differs: 'the harness also reads old pytest\'s "test-id STATUS" lines',
  },
  parse_log_matplotlib: {
    parser: 'pytest',
    differs: 'the harness rewrites "MouseButton.LEFT"/"MouseButton.RIGHT" in test ids to 1/3',
  },
  parse_log_seaborn: {
    parser: 'pytest',
    differs: 'the harness also reads "test-id PASSED" progress lines',
  },
  // unittest's verbose "test_x (module.Class) ... ok" lines, as django's runner prints them.
  parse_log_django: {
    parser: 'unittest',
    differs: 'the harness also handles django\'s multi-line and "--- ok" special cases',
  },
  // sympy's bin/test: "test_x ok" lines and "____ file.py:test_x ____" failure headers.
  parse_log_sympy: { parser: 'sympy' },
  // `node --test`'s TAP.
  parse_log_tap: { parser: 'node-test' },
};
