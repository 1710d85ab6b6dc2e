/** sympy's test-runner log, read as SWE-bench's parse_log_sympy reads it. */
import { describe, expect, it } from 'vitest';
import { parseSympyLog } from '../src/verify/sympy-log.ts';

/** The shape `bin/test -C --verbose` prints: a verdict per test, then a header per failure. */
const LOG = [
  '============================= test process starts ==============================',
  'executable:         /opt/miniconda3/envs/testbed/bin/python  (3.9.19-final-0) [CPython]',
  'random seed:        58000538',
  '',
  'sympy/core/tests/test_basic.py[4] ',
  'test__aresame ok',
  'test_structure ok',
  'test_equality F',
  'test_atoms E',
  '',
  '________________________________________________________________________________',
  '________________ sympy/core/tests/test_basic.py:test_equality _________________',
  'Traceback (most recent call last):',
  '  File "/testbed/sympy/core/tests/test_basic.py", line 40, in test_equality',
  '    assert b1 != b2',
  'AssertionError',
  '',
  '====== tests finished: 2 passed, 1 failed, 1 exceptions, in 0.05 seconds =======',
].join('\n');

describe('sympy log parser', () => {
  it("reads each test's verdict and each failure header, as the harness does", () => {
    expect(Object.fromEntries(parseSympyLog(LOG))).toEqual({
      test__aresame: 'PASSED',
      test_structure: 'PASSED',
      test_equality: 'FAILED',
      test_atoms: 'ERROR',
      'sympy/core/tests/test_basic.py:test_equality': 'FAILED',
    });
  });

  it('a test reported passing after failing stays failed', () => {
    expect(parseSympyLog('test_x F\ntest_x ok\n').get('test_x')).toBe('FAILED');
  });
});
