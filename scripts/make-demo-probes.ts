/**
 * Writes `probes/demo-fixtures.jsonl`: hand-written probe items in the `md+xml` format,
 * standing in for replay-built probe sets until `probe build` produces them. Each item
 * is a short agent episode on a small Python shop project, cut just before its decisive
 * edit. They share nothing with the texts the checkpoint ladder was counted from (`ladder-text/`).
 * Usage: npx tsx scripts/make-demo-probes.ts [--check]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderAction, renderStepHead, renderTranscript, type Action, type TranscriptStep } from '../src/formats/md-xml.ts';

interface Fixture {
  task: string;
  problem: string;
  steps: TranscriptStep[];
  thought: string;
  gold: Action;
}

const ls = (files: string[]): TranscriptStep => ({
  thought: "I'll look at the repository layout first.",
  action: { kind: 'bash', command: 'find . -name "*.py" | sort' },
  observation: files.map((f) => `./${f}`).join('\n'),
});
const cat = (path: string, text: string, thought = `Read \`${path}\`.`): TranscriptStep => ({
  thought,
  action: { kind: 'bash', command: `cat ${path}` },
  observation: text,
});
const pytest = (file: string, failing: string, error: string, passed: number): TranscriptStep => ({
  thought: 'Run the tests to see the failure.',
  action: { kind: 'bash', command: `python -m pytest ${file} -q` },
  observation: `${'.'.repeat(passed)}F\nFAILED ${file}::${failing} - ${error}\n1 failed, ${passed} passed in 0.04s`,
});
const replace = (path: string, oldStr: string, newStr: string): Action => ({
  kind: 'str_replace_editor',
  command: 'str_replace',
  path,
  oldStr,
  newStr,
});

const FIXTURES: Fixture[] = [
  {
    task: 'shop__pricing-1',
    problem:
      'Percentage discounts are wrong: a 10% discount on a 200.00 cart gives 190.00 instead of 180.00.\n`apply_discount(total, discount)` takes the discount in percent.',
    steps: [
      ls(['cart/__init__.py', 'cart/pricing.py', 'tests/test_pricing.py']),
      cat(
        'cart/pricing.py',
        'def apply_discount(total, discount):\n    """Return total after a percentage discount."""\n    if discount < 0 or discount > 100:\n        raise ValueError("discount must be between 0 and 100")\n    return round(total - discount, 2)\n',
      ),
      pytest('tests/test_pricing.py', 'test_percentage_discount', 'assert 190.0 == 180.0', 3),
    ],
    thought: 'The discount is subtracted, not applied as a percentage.',
    gold: replace('cart/pricing.py', 'return round(total - discount, 2)', 'return round(total * (1 - discount / 100), 2)'),
  },
  {
    task: 'shop__slugify-2',
    problem: 'Product slugs keep upper-case letters: `slugify("Blue Mug")` returns "Blue-Mug", expected "blue-mug".',
    steps: [
      ls(['shop/__init__.py', 'shop/text.py', 'tests/test_text.py']),
      {
        thought: 'Find the slug helper.',
        action: { kind: 'bash', command: 'grep -n "def slugify" -A 6 shop/text.py' },
        observation: '12:def slugify(name):\n13-    words = re.findall(r"[A-Za-z0-9]+", name)\n14-    return "-".join(words)',
      },
    ],
    thought: 'The words are joined without lower-casing them.',
    gold: replace('shop/text.py', '    return "-".join(words)', '    return "-".join(word.lower() for word in words)'),
  },
  {
    task: 'shop__stock-3',
    problem: '`low_stock(items, threshold)` misses items whose quantity equals the threshold; they should be reported too.',
    steps: [
      ls(['inventory/__init__.py', 'inventory/stock.py', 'tests/test_stock.py']),
      {
        thought: 'Look at the filter.',
        action: { kind: 'bash', command: "sed -n '1,20p' inventory/stock.py" },
        observation:
          'from dataclasses import dataclass\n\n\n@dataclass\nclass Item:\n    sku: str\n    quantity: int\n\n\ndef low_stock(items, threshold):\n    return [item.sku for item in items if item.quantity < threshold]',
      },
      pytest('tests/test_stock.py', 'test_threshold_is_inclusive', "AssertionError: assert ['a'] == ['a', 'b']", 4),
    ],
    thought: 'The comparison must include the threshold itself.',
    gold: { kind: 'bash', command: "sed -i 's/item.quantity < threshold/item.quantity <= threshold/' inventory/stock.py" },
  },
  {
    task: 'shop__dates-4',
    problem: 'Order dates are parsed with day and month swapped: "2024-03-07" becomes 3 July instead of 7 March.',
    steps: [
      ls(['orders/__init__.py', 'orders/dates.py', 'tests/test_dates.py']),
      cat(
        'orders/dates.py',
        'from datetime import datetime\n\nISO_DAY = "%Y-%d-%m"\n\n\ndef parse_order_date(text):\n    return datetime.strptime(text.strip(), ISO_DAY).date()\n',
      ),
    ],
    thought: 'The format string has day and month in the wrong order.',
    gold: replace('orders/dates.py', 'ISO_DAY = "%Y-%d-%m"', 'ISO_DAY = "%Y-%m-%d"'),
  },
  {
    task: 'shop__pagination-5',
    problem: 'The last page of results is never shown: with 45 orders and 20 per page the API reports 2 pages instead of 3.',
    steps: [
      ls(['api/__init__.py', 'api/pagination.py', 'tests/test_pagination.py']),
      cat(
        'api/pagination.py',
        'def page_count(total, per_page):\n    if per_page <= 0:\n        raise ValueError("per_page must be positive")\n    return total // per_page\n\n\ndef page_slice(items, page, per_page):\n    start = (page - 1) * per_page\n    return items[start:start + per_page]\n',
      ),
      pytest('tests/test_pagination.py', 'test_partial_last_page', 'assert 2 == 3', 5),
    ],
    thought: 'Floor division drops the partial last page; round up instead.',
    gold: replace('api/pagination.py', '    return total // per_page', '    return -(-total // per_page)'),
  },
  {
    task: 'shop__config-6',
    problem: 'Setting `APP_DEBUG=True` in the environment does not enable debug mode; only the exact string "true" works.',
    steps: [
      ls(['config/__init__.py', 'config/loader.py', 'tests/test_loader.py']),
      {
        thought: 'Find where APP_DEBUG is read.',
        action: { kind: 'bash', command: 'grep -rn "APP_DEBUG" config/' },
        observation: 'config/loader.py:9:    debug = os.environ.get("APP_DEBUG", "false") == "true"',
      },
      {
        thought: 'Show the surrounding function.',
        action: { kind: 'str_replace_editor', command: 'view', path: 'config/loader.py' },
        observation:
          '     1\timport os\n     2\t\n     3\t\n     4\tclass Settings:\n     5\t    debug: bool = False\n     6\t\n     7\t\n     8\tdef load_settings():\n     9\t    debug = os.environ.get("APP_DEBUG", "false") == "true"\n    10\t    settings = Settings()\n    11\t    settings.debug = debug\n    12\t    return settings',
      },
    ],
    thought: 'Compare case-insensitively.',
    gold: replace(
      'config/loader.py',
      '    debug = os.environ.get("APP_DEBUG", "false") == "true"',
      '    debug = os.environ.get("APP_DEBUG", "false").strip().lower() == "true"',
    ),
  },
  {
    task: 'shop__greetings-7',
    problem:
      'The storefront greets Japanese customers in English. Add a Japanese greeting ("こんにちは 👋") to the greetings table; the other locales already work.',
    steps: [
      ls(['i18n/__init__.py', 'i18n/greetings.py', 'tests/test_greetings.py']),
      cat(
        'i18n/greetings.py',
        'GREETINGS = {\n    "en": "Hello 👋",\n    "zh": "你好 👋",\n    "ko": "안녕하세요 👋",\n}\n\n\ndef greet(locale):\n    return GREETINGS.get(locale, GREETINGS["en"])\n',
      ),
      pytest('tests/test_greetings.py', 'test_japanese', "AssertionError: assert 'Hello 👋' == 'こんにちは 👋'", 3),
    ],
    thought: 'The table has no "ja" entry, so it falls back to English.',
    gold: replace('i18n/greetings.py', '    "ko": "안녕하세요 👋",\n}', '    "ko": "안녕하세요 👋",\n    "ja": "こんにちは 👋",\n}'),
  },
  {
    task: 'shop__receipt-8',
    problem: 'Receipt lines are one character too wide: `format_line("Tea", 3.5, width=20)` returns 21 characters.',
    steps: [
      ls(['receipts/__init__.py', 'receipts/format.py', 'tests/test_format.py']),
      cat(
        'receipts/format.py',
        'def format_line(name, amount, width=32):\n    price = f"{amount:.2f}"\n    dots = "." * (width - len(name) - len(price))\n    return f"{name} {dots}{price}"\n',
      ),
      pytest('tests/test_format.py', 'test_line_width', 'assert 21 == 20', 2),
    ],
    thought: 'The separating space is not counted in the width.',
    gold: replace(
      'receipts/format.py',
      '    dots = "." * (width - len(name) - len(price))',
      '    dots = "." * (width - len(name) - len(price) - 1)',
    ),
  },
];

export function demoProbeLines(): string[] {
  return FIXTURES.map((f, i) =>
    JSON.stringify({
      id: `demo-${String(i + 1).padStart(2, '0')}`,
      task: f.task,
      format: 'md+xml',
      context: renderTranscript(f.problem, f.steps) + renderStepHead({ thought: f.thought }),
      gold: renderAction(f.gold),
      distractors: [],
      decisive_step: f.steps.length,
      state: { kind: 'replay', base_commit: 'fixture', actions: f.steps.length },
      source: { file: 'scripts/make-demo-probes.ts', format: 'fixture' },
    }),
  );
}

const isMain = process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const out = join(dirname(fileURLToPath(import.meta.url)), '..', 'probes', 'demo-fixtures.jsonl');
  const text = `${demoProbeLines().join('\n')}\n`;
  if (process.argv.includes('--check')) {
    if (readFileSync(out, 'utf8') !== text) {
      console.error(`${out} is stale`);
      process.exit(1);
    }
  } else {
    writeFileSync(out, text);
  }
}
