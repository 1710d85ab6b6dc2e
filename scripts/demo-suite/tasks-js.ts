/** JavaScript tasks of the demo suite (node --test, TAP). */
import type { DemoTask } from './record.ts';

const NODE_TEST = 'node --test --test-reporter=tap test/';
const PKG = '{\n  "name": "demo",\n  "version": "1.0.0",\n  "type": "module",\n  "private": true\n}\n';

export const JS_TASKS: DemoTask[] = [
  {
    id: 'cart-js__total-8',
    problem:
      'Cart totals ignore quantities: two mugs at 2.50 each are charged 2.50. `lineTotal` should multiply by `quantity` (1 when absent).',
    repo: {
      'package.json': PKG,
      'src/cart.js':
        'export function lineTotal(item) {\n  return item.price;\n}\n\nexport function cartTotal(items) {\n  return items.reduce((sum, item) => sum + lineTotal(item), 0);\n}\n',
      'test/cart.test.js':
        "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { cartTotal } from '../src/cart.js';\n\ntest('empty cart', () => {\n  assert.equal(cartTotal([]), 0);\n});\n\ntest('single item', () => {\n  assert.equal(cartTotal([{ price: 2, quantity: 1 }]), 2);\n});\n",
    },
    testsAdded: {
      'test/quantity.test.js':
        "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { cartTotal, lineTotal } from '../src/cart.js';\n\ntest('line total uses quantity', () => {\n  assert.equal(lineTotal({ price: 2.5, quantity: 4 }), 10);\n});\n\ntest('cart total uses quantities', () => {\n  assert.equal(cartTotal([{ price: 1, quantity: 3 }, { price: 2, quantity: 2 }]), 7);\n});\n\ntest('missing quantity counts once', () => {\n  assert.equal(lineTotal({ price: 3 }), 3);\n});\n",
    },
    FAIL_TO_PASS: ['line total uses quantity', 'cart total uses quantities'],
    PASS_TO_PASS: ['missing quantity counts once', 'empty cart', 'single item'],
    test_cmd: NODE_TEST,
    log_parser: 'node-test',
    trajectory: {
      format: 'mini-swe-agent-1',
      label: 'mini',
      steps: [
        { thought: 'Look at the project layout.', bash: 'ls -R src test && cat package.json' },
        { thought: 'Read the cart module.', bash: 'cat src/cart.js' },
        { thought: 'Run the existing tests.', bash: 'node --test test/' },
        {
          thought: 'Reproduce the issue.',
          bash: 'node -e "import(\'./src/cart.js\').then(m => console.log(m.cartTotal([{ price: 2.5, quantity: 2 }])))"',
        },
        {
          thought: 'lineTotal ignores the quantity. Multiply by it, defaulting to 1.',
          bash: "sed -i 's/  return item.price;/  return item.price * (item.quantity ?? 1);/' src/cart.js",
        },
        {
          thought: 'Check again.',
          bash: 'node -e "import(\'./src/cart.js\').then(m => console.log(m.cartTotal([{ price: 2.5, quantity: 2 }]), m.lineTotal({ price: 3 })))"',
        },
        { thought: 'Run the tests.', bash: 'node --test test/' },
        { thought: 'Submit the fix.', submit: true },
      ],
    },
  },
  {
    id: 'strings-js__title-case-9',
    problem:
      '`titleCase` crashes with "Cannot read properties of undefined" when the text contains two spaces in a row, and on the empty string.',
    repo: {
      'package.json': PKG,
      'src/titleCase.js':
        "const SMALL_WORDS = new Set(['a', 'an', 'and', 'of', 'the', 'to']);\n\nexport function titleCase(text) {\n  return text\n    .split(' ')\n    .map((word, i) => (i > 0 && SMALL_WORDS.has(word) ? word : word[0].toUpperCase() + word.slice(1)))\n    .join(' ');\n}\n",
      'test/titleCase.test.js':
        "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { titleCase } from '../src/titleCase.js';\n\ntest('capitalises words', () => {\n  assert.equal(titleCase('red tea pot'), 'Red Tea Pot');\n});\n\ntest('keeps small words lower-case', () => {\n  assert.equal(titleCase('the lord of the rings'), 'The Lord of the Rings');\n});\n",
    },
    testsAdded: {
      'test/spaces.test.js':
        "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { titleCase } from '../src/titleCase.js';\n\ntest('double spaces survive', () => {\n  assert.equal(titleCase('the  lord of the rings'), 'The  Lord of the Rings');\n});\n\ntest('empty string', () => {\n  assert.equal(titleCase(''), '');\n});\n",
    },
    FAIL_TO_PASS: ['double spaces survive', 'empty string'],
    PASS_TO_PASS: ['capitalises words', 'keeps small words lower-case'],
    test_cmd: NODE_TEST,
    log_parser: 'node-test',
    trajectory: {
      format: 'openhands',
      label: 'openhands',
      steps: [
        { thought: 'Read the function.', editor: { command: 'view', path: '/testbed/src/titleCase.js' } },
        {
          thought: 'Write a reproduction script.',
          editor: {
            command: 'create',
            path: '/testbed/repro.mjs',
            file_text:
              "import { titleCase } from './src/titleCase.js';\n\nfor (const text of ['the  lord of the rings', '']) {\n  try {\n    console.log(JSON.stringify(titleCase(text)));\n  } catch (error) {\n    console.log('error:', error.message);\n  }\n}\n",
          },
        },
        { thought: 'Run it.', bash: 'node repro.mjs' },
        {
          thought: 'Splitting on a single space yields empty words, and word[0] is undefined for them. Leave empty words alone.',
          editor: {
            command: 'str_replace',
            path: '/testbed/src/titleCase.js',
            old_str: '    .map((word, i) => (i > 0 && SMALL_WORDS.has(word) ? word : word[0].toUpperCase() + word.slice(1)))',
            new_str:
              "    .map((word, i) => (word === '' || (i > 0 && SMALL_WORDS.has(word)) ? word : word[0].toUpperCase() + word.slice(1)))",
          },
        },
        { thought: 'Run the reproduction again.', bash: 'node repro.mjs' },
        { thought: 'Run the test suite.', bash: 'node --test test/' },
        { thought: 'Clean up the reproduction script.', bash: 'rm repro.mjs' },
        { thought: 'Empty words are now kept as they are.', submit: true },
      ],
    },
  },
  {
    id: 'dates-js__add-days-10',
    problem: '`addDays` does not roll over into the next year: `addDays("2024-12-30", 5)` returns "2024-13-04" instead of "2025-01-04".',
    repo: {
      'package.json': PKG,
      'src/dates.js':
        "const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];\n\nexport function isLeapYear(year) {\n  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);\n}\n\nexport function daysInMonth(year, month) {\n  return month === 2 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month - 1];\n}\n\nexport function addDays(isoDate, days) {\n  let [year, month, day] = isoDate.split('-').map(Number);\n  day += days;\n  while (day > daysInMonth(year, month)) {\n    day -= daysInMonth(year, month);\n    month += 1;\n  }\n  return [year, month, day].map((n, i) => String(n).padStart(i === 0 ? 4 : 2, '0')).join('-');\n}\n",
      'test/dates.test.js':
        "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { addDays, isLeapYear } from '../src/dates.js';\n\ntest('leap day', () => {\n  assert.equal(addDays('2024-02-28', 1), '2024-02-29');\n});\n\ntest('month end', () => {\n  assert.equal(addDays('2023-01-31', 1), '2023-02-01');\n});\n\ntest('leap years', () => {\n  assert.equal(isLeapYear(2000), true);\n  assert.equal(isLeapYear(1900), false);\n});\n",
    },
    testsAdded: {
      'test/year-end.test.js':
        "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { addDays } from '../src/dates.js';\n\ntest('rolls into the next year', () => {\n  assert.equal(addDays('2024-12-30', 5), '2025-01-04');\n});\n\ntest('new year', () => {\n  assert.equal(addDays('2023-12-31', 1), '2024-01-01');\n});\n",
    },
    FAIL_TO_PASS: ['rolls into the next year', 'new year'],
    PASS_TO_PASS: ['leap day', 'month end', 'leap years'],
    test_cmd: NODE_TEST,
    log_parser: 'node-test',
    trajectory: {
      format: 'mini-swe-agent-1.1',
      label: 'mini2',
      steps: [
        { thought: 'Look at the project layout.', bash: 'ls -R src test && cat package.json' },
        { thought: 'Read the date helpers.', bash: 'cat src/dates.js' },
        { thought: 'Run the existing tests.', bash: 'node --test test/' },
        { thought: 'Reproduce.', bash: "node -e \"import('./src/dates.js').then(m => console.log(m.addDays('2024-12-30', 5)))\"" },
        {
          thought: 'The loop increments the month past 12 without moving to the next year. Wrap the month inside the loop.',
          bash: 'python3 - <<\'EOF\'\nfrom pathlib import Path\n\npath = Path("src/dates.js")\ntext = path.read_text()\ntext = text.replace("    month += 1;\\n", "    month += 1;\\n    if (month > 12) {\\n      month = 1;\\n      year += 1;\\n    }\\n")\npath.write_text(text)\nEOF',
        },
        {
          thought: 'Check the examples.',
          bash: "node -e \"import('./src/dates.js').then(m => console.log(m.addDays('2024-12-30', 5), m.addDays('2023-12-31', 1)))\"",
        },
        { thought: 'Run the tests.', bash: 'node --test test/' },
        { thought: 'Show the change.', bash: 'git diff' },
        { thought: 'Submit.', submit: true },
      ],
    },
  },
  {
    id: 'csv-js__quoted-11',
    problem:
      '`parseLine` splits inside quoted fields: `a,"b,c",d` gives four fields instead of three, and doubled quotes inside a quoted field (`"say ""hi"""`) are not unescaped.',
    repo: {
      'package.json': PKG,
      'src/csv.js':
        "export function parseLine(line) {\n  return line.split(',');\n}\n\nexport function parseCsv(text) {\n  return text.trim().split('\\n').map(parseLine);\n}\n",
      'test/csv.test.js':
        "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { parseCsv, parseLine } from '../src/csv.js';\n\ntest('plain fields', () => {\n  assert.deepEqual(parseLine('a,b'), ['a', 'b']);\n});\n\ntest('several lines', () => {\n  assert.deepEqual(parseCsv('a,b\\nc,d\\n'), [['a', 'b'], ['c', 'd']]);\n});\n",
    },
    testsAdded: {
      'test/quoted.test.js':
        "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { parseLine } from '../src/csv.js';\n\ntest('comma inside quotes', () => {\n  assert.deepEqual(parseLine('a,\"b,c\",d'), ['a', 'b,c', 'd']);\n});\n\ntest('escaped quotes', () => {\n  assert.deepEqual(parseLine('\"say \"\"hi\"\"\",x'), ['say \"hi\"', 'x']);\n});\n\ntest('empty fields', () => {\n  assert.deepEqual(parseLine('a,,b'), ['a', '', 'b']);\n});\n",
    },
    FAIL_TO_PASS: ['comma inside quotes', 'escaped quotes'],
    PASS_TO_PASS: ['empty fields', 'plain fields', 'several lines'],
    test_cmd: NODE_TEST,
    log_parser: 'node-test',
    trajectory: {
      format: 'mini-swe-agent-1',
      label: 'mini',
      steps: [
        { thought: 'Look at the files.', bash: 'ls -R src test' },
        { thought: 'Read the parser.', bash: 'cat src/csv.js' },
        {
          thought: 'Reproduce both cases from the issue.',
          bash: 'node -e "import(\'./src/csv.js\').then(m => { console.log(m.parseLine(\'a,\\"b,c\\",d\')); console.log(m.parseLine(\'\\"say \\"\\"hi\\"\\"\\",x\')); })"',
        },
        {
          thought: 'Splitting on every comma cannot work. Scan the line and only split on commas outside quotes.',
          bash: "cat > src/csv.js <<'EOF'\nexport function parseLine(line) {\n  const fields = [];\n  let field = '';\n  let quoted = false;\n  for (const ch of line) {\n    if (ch === '\"') {\n      quoted = !quoted;\n    } else if (ch === ',' && !quoted) {\n      fields.push(field);\n      field = '';\n    } else {\n      field += ch;\n    }\n  }\n  fields.push(field);\n  return fields;\n}\n\nexport function parseCsv(text) {\n  return text.trim().split('\\n').map(parseLine);\n}\nEOF",
        },
        {
          thought: 'Check both cases.',
          bash: 'node -e "import(\'./src/csv.js\').then(m => { console.log(m.parseLine(\'a,\\"b,c\\",d\')); console.log(m.parseLine(\'\\"say \\"\\"hi\\"\\"\\",x\')); })"',
        },
        {
          thought:
            'Commas inside quotes work now, but doubled quotes are dropped instead of unescaped. A quote followed by another quote inside a quoted field is a literal quote.',
          bash: "cat > src/csv.js <<'EOF'\nexport function parseLine(line) {\n  const fields = [];\n  let field = '';\n  let quoted = false;\n  for (let i = 0; i < line.length; i++) {\n    const ch = line[i];\n    if (quoted && ch === '\"' && line[i + 1] === '\"') {\n      field += '\"';\n      i++;\n    } else if (ch === '\"') {\n      quoted = !quoted;\n    } else if (ch === ',' && !quoted) {\n      fields.push(field);\n      field = '';\n    } else {\n      field += ch;\n    }\n  }\n  fields.push(field);\n  return fields;\n}\n\nexport function parseCsv(text) {\n  return text.trim().split('\\n').map(parseLine);\n}\nEOF",
        },
        {
          thought: 'Check again.',
          bash: 'node -e "import(\'./src/csv.js\').then(m => { console.log(m.parseLine(\'a,\\"b,c\\",d\')); console.log(m.parseLine(\'\\"say \\"\\"hi\\"\\"\\",x\')); })"',
        },
        { thought: 'Run the tests.', bash: 'node --test test/' },
        { thought: 'Submit.', submit: true },
      ],
    },
  },
  {
    id: 'money-js__cents-12',
    problem: 'Amounts with fewer than ten cents are formatted wrongly: `formatCents(105)` gives "$1.5" instead of "$1.05".',
    repo: {
      'package.json': PKG,
      'src/money.js':
        "export function formatCents(cents) {\n  const sign = cents < 0 ? '-' : '';\n  const abs = Math.abs(cents);\n  const dollars = Math.floor(abs / 100);\n  const rest = abs % 100;\n  return `${sign}$${dollars}.${rest}`;\n}\n\nexport function sumCents(amounts) {\n  return amounts.reduce((a, b) => a + b, 0);\n}\n",
      'test/money.test.js':
        "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { formatCents, sumCents } from '../src/money.js';\n\ntest('two-digit cents', () => {\n  assert.equal(formatCents(1234), '$12.34');\n});\n\ntest('sum', () => {\n  assert.equal(sumCents([1, 2, 3]), 6);\n});\n",
    },
    testsAdded: {
      'test/padding.test.js':
        "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { formatCents } from '../src/money.js';\n\ntest('pads single-digit cents', () => {\n  assert.equal(formatCents(105), '$1.05');\n});\n\ntest('negative small amounts', () => {\n  assert.equal(formatCents(-7), '-$0.07');\n});\n",
    },
    FAIL_TO_PASS: ['pads single-digit cents', 'negative small amounts'],
    PASS_TO_PASS: ['two-digit cents', 'sum'],
    test_cmd: NODE_TEST,
    log_parser: 'node-test',
    trajectory: {
      format: 'swe-agent',
      label: 'sweagent',
      steps: [
        { thought: 'Search for the formatter.', swe: 'search_dir "formatCents"' },
        { thought: 'Open the money module.', swe: 'open src/money.js' },
        { thought: 'Reproduce the issue.', swe: 'node -e "import(\'./src/money.js\').then(m => console.log(m.formatCents(105)))"' },
        {
          thought: 'The cents are not zero-padded. Pad them to two digits on line 6.',
          swe: "edit 6:6\n  return `${sign}$${dollars}.${String(rest).padStart(2, '0')}`;\nend_of_edit",
        },
        {
          thought: 'Check again.',
          swe: 'node -e "import(\'./src/money.js\').then(m => console.log(m.formatCents(105), m.formatCents(-7)))"',
        },
        { thought: 'Run the tests.', swe: 'node --test test/' },
        { thought: 'Submit.', submit: true },
      ],
    },
  },
];
