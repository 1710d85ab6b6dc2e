/**
 * sympy's own test runner (`bin/test -C --verbose`), read as SWE-bench's `parse_log_sympy`
 * reads it: "test_name ok" / "test_name F" / "test_name E" lines, and failure headers
 * "____ sympy/core/tests/test_x.py:test_name ____" (a failure, under the "file.py:test" name).
 * Log parser `sympy`. As probe's other parsers, a test reported twice keeps its worse status.
 */
import { record, type TestStatus, type TestStatusMap } from './log-parsers.ts';

const VERDICTS: Array<[string, TestStatus]> = [
  [' E', 'ERROR'],
  [' F', 'FAILED'],
  [' ok', 'PASSED'],
];

export function parseSympyLog(log: string): TestStatusMap {
  const map: TestStatusMap = new Map();
  for (const m of log.matchAll(/(_*) (.*)\.py:(.*) (_*)/g)) record(map, `${m[2]}.py:${m[3]}`, 'FAILED');
  for (const raw of log.split('\n')) {
    const line = raw.trim();
    if (!line.startsWith('test_')) continue;
    const verdict = VERDICTS.find(([suffix]) => line.endsWith(suffix));
    if (verdict) record(map, line.split(/\s+/)[0]!, verdict[1]);
  }
  return map;
}
