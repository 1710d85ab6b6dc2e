/** Python tasks of the demo suite (pytest and unittest). */
import type { DemoTask } from './record.ts';

const PYTEST = 'python -m pytest -rA -p no:cacheprovider tests';

export const PYTHON_TASKS: DemoTask[] = [
  {
    id: 'shop__pricing-1',
    problem:
      'Percentage discounts are wrong: a 10% discount on a 200.00 cart gives 190.00 instead of 180.00.\n`apply_discount(total, discount)` takes the discount in percent.',
    repo: {
      'cart/__init__.py': '',
      'cart/pricing.py':
        '"""Cart pricing helpers."""\n\n\ndef apply_discount(total, discount):\n    """Return total after a percentage discount (0-100)."""\n    if discount < 0 or discount > 100:\n        raise ValueError("discount must be between 0 and 100")\n    return round(total - discount, 2)\n\n\ndef add_tax(total, rate):\n    """Return total with tax at `rate` percent added."""\n    return round(total * (1 + rate / 100), 2)\n',
      'tests/test_pricing.py':
        'import pytest\n\nfrom cart.pricing import add_tax, apply_discount\n\n\ndef test_zero_discount_keeps_total():\n    assert apply_discount(50.0, 0) == 50.0\n\n\ndef test_invalid_discount_rejected():\n    with pytest.raises(ValueError):\n        apply_discount(10.0, 120)\n\n\ndef test_tax():\n    assert add_tax(100.0, 20) == 120.0\n',
    },
    testsAdded: {
      'tests/test_discount_percent.py':
        'from cart.pricing import apply_discount\n\n\ndef test_percentage_discount():\n    assert apply_discount(200.0, 10) == 180.0\n\n\ndef test_full_discount():\n    assert apply_discount(80.0, 100) == 0.0\n',
    },
    FAIL_TO_PASS: ['tests/test_discount_percent.py::test_percentage_discount', 'tests/test_discount_percent.py::test_full_discount'],
    PASS_TO_PASS: [
      'tests/test_pricing.py::test_zero_discount_keeps_total',
      'tests/test_pricing.py::test_invalid_discount_rejected',
      'tests/test_pricing.py::test_tax',
    ],
    test_cmd: PYTEST,
    log_parser: 'pytest',
    trajectory: {
      format: 'mini-swe-agent-1',
      label: 'mini',
      steps: [
        { thought: 'Let me look at the repository structure first.', bash: 'find . -name "*.py" -not -path "./.git/*" | sort' },
        { thought: 'The pricing logic is probably in cart/pricing.py. Let me read it.', bash: 'cat cart/pricing.py' },
        { thought: 'Let me look at the existing tests for this module.', bash: 'cat tests/test_pricing.py' },
        {
          thought: 'I will write a small script that reproduces the report.',
          bash: "cat > reproduce.py <<'EOF'\nfrom cart.pricing import apply_discount\n\nprint(apply_discount(200.0, 10))\nEOF",
        },
        { thought: 'Run the reproduction script.', bash: 'python reproduce.py' },
        {
          thought: 'The discount is subtracted as an absolute amount. It must be applied as a percentage of the total.',
          bash: "sed -i 's/return round(total - discount, 2)/return round(total * (1 - discount \\/ 100), 2)/' cart/pricing.py",
        },
        { thought: 'Run the reproduction script again.', bash: 'python reproduce.py' },
        { thought: 'Now run the test suite to make sure nothing else broke.', bash: 'python -m pytest -q tests' },
        { thought: 'The fix works. Remove the reproduction script.', bash: 'rm reproduce.py' },
        { thought: 'Submit the change.', submit: true },
      ],
    },
  },
  {
    id: 'shop__slugify-2',
    problem: 'Product slugs keep upper-case letters: `slugify("Blue Mug")` returns "Blue-Mug", expected "blue-mug".',
    repo: {
      'shop/__init__.py': '',
      'shop/text.py':
        'import re\n\n\ndef slugify(name):\n    """Turn a product name into a URL slug: lowercase words joined by dashes."""\n    words = re.findall(r"[A-Za-z0-9]+", name)\n    return "-".join(words)\n\n\ndef truncate(text, width):\n    if len(text) <= width:\n        return text\n    return text[: width - 1] + "…"\n',
      'tests/test_text.py':
        'from shop.text import slugify, truncate\n\n\ndef test_slug_of_one_word():\n    assert slugify("mug") == "mug"\n\n\ndef test_truncate_short():\n    assert truncate("tea", 10) == "tea"\n\n\ndef test_truncate_long():\n    assert truncate("teapot", 4) == "tea…"\n',
    },
    testsAdded: {
      'tests/test_slug_case.py':
        'from shop.text import slugify\n\n\ndef test_lowercase():\n    assert slugify("Blue Mug") == "blue-mug"\n\n\ndef test_punctuation_and_digits():\n    assert slugify("  Tea & Cake 2 ") == "tea-cake-2"\n',
    },
    FAIL_TO_PASS: ['tests/test_slug_case.py::test_lowercase', 'tests/test_slug_case.py::test_punctuation_and_digits'],
    PASS_TO_PASS: [
      'tests/test_text.py::test_slug_of_one_word',
      'tests/test_text.py::test_truncate_short',
      'tests/test_text.py::test_truncate_long',
    ],
    test_cmd: PYTEST,
    log_parser: 'pytest',
    trajectory: {
      format: 'mini-swe-agent-1.1',
      label: 'mini2',
      steps: [
        { thought: 'Find where slugify is defined.', bash: 'grep -rn "def slugify" --include=*.py .' },
        { thought: 'Read the function.', bash: "sed -n '1,10p' shop/text.py" },
        { thought: 'Reproduce the issue.', bash: 'python -c \'from shop.text import slugify; print(slugify("Blue Mug"))\'' },
        {
          thought: 'The words are joined without lower-casing them. Lower-case each word.',
          bash: 'python - <<\'EOF\'\nfrom pathlib import Path\n\npath = Path("shop/text.py")\ntext = path.read_text()\npath.write_text(text.replace(\'return "-".join(words)\', \'return "-".join(word.lower() for word in words)\'))\nEOF',
        },
        {
          thought: 'Check the fix.',
          bash: 'python -c \'from shop.text import slugify; print(slugify("Blue Mug"), slugify("  Tea & Cake 2 "))\'',
        },
        { thought: 'Run the tests.', bash: 'python -m pytest -q tests' },
        { thought: 'Everything passes. Submit.', submit: true },
      ],
    },
  },
  {
    id: 'inventory__stock-3',
    problem: '`low_stock(items, threshold)` misses items whose quantity equals the threshold; they should be reported too.',
    repo: {
      'inventory/__init__.py': '',
      'inventory/stock.py':
        'from dataclasses import dataclass\n\n\n@dataclass\nclass Item:\n    sku: str\n    quantity: int\n\n\ndef low_stock(items, threshold):\n    """SKUs whose quantity is at or below the threshold."""\n    return [item.sku for item in items if item.quantity < threshold]\n\n\ndef total_units(items):\n    return sum(item.quantity for item in items)\n',
      'tests/test_stock.py':
        'from inventory.stock import Item, low_stock, total_units\n\n\ndef test_below_threshold():\n    assert low_stock([Item("a", 1), Item("b", 9)], 5) == ["a"]\n\n\ndef test_total_units():\n    assert total_units([Item("a", 1), Item("b", 9)]) == 10\n',
    },
    testsAdded: {
      'tests/test_threshold.py':
        'from inventory.stock import Item, low_stock\n\n\ndef test_threshold_is_inclusive():\n    assert low_stock([Item("a", 1), Item("b", 5), Item("c", 6)], 5) == ["a", "b"]\n',
    },
    FAIL_TO_PASS: ['tests/test_threshold.py::test_threshold_is_inclusive'],
    PASS_TO_PASS: ['tests/test_stock.py::test_below_threshold', 'tests/test_stock.py::test_total_units'],
    test_cmd: PYTEST,
    log_parser: 'pytest',
    trajectory: {
      format: 'swe-agent',
      label: 'sweagent',
      steps: [
        { thought: 'Let me find the stock module.', swe: 'find_file "stock.py"' },
        { thought: 'Open it.', swe: 'open inventory/stock.py' },
        { thought: 'Find where the threshold is compared.', swe: 'search_file "threshold"' },
        {
          thought: 'Line 12 uses a strict comparison. Make it inclusive.',
          swe: 'edit 12:12\n    return [item.sku for item in items if item.quantity <= threshold\nend_of_edit',
        },
        {
          thought: 'I forgot the closing bracket. Edit again.',
          swe: 'edit 12:12\n    return [item.sku for item in items if item.quantity <= threshold]\nend_of_edit',
        },
        { thought: 'Run the tests.', swe: 'python -m pytest -q tests' },
        { thought: 'The tests pass. Submit.', submit: true },
      ],
    },
  },
  {
    id: 'orders__dates-4',
    problem:
      'Order dates are parsed with day and month swapped: "2024-03-07" becomes 3 July instead of 7 March, and "2024-12-31" raises ValueError.',
    repo: {
      'orders/__init__.py': '',
      'orders/dates.py':
        'from datetime import datetime\n\nISO_DAY = "%Y-%d-%m"\n\n\ndef parse_order_date(text):\n    return datetime.strptime(text.strip(), ISO_DAY).date()\n\n\ndef format_order_date(day):\n    return day.strftime("%d %b %Y")\n',
      'tests/test_dates.py':
        'from datetime import date\n\nfrom orders.dates import format_order_date, parse_order_date\n\n\ndef test_format():\n    assert format_order_date(date(2024, 3, 7)) == "07 Mar 2024"\n\n\ndef test_parse_new_year():\n    assert parse_order_date(" 2024-01-01 ") == date(2024, 1, 1)\n',
    },
    testsAdded: {
      'tests/test_parse_iso.py':
        'from datetime import date\n\nfrom orders.dates import parse_order_date\n\n\ndef test_day_and_month():\n    assert parse_order_date("2024-03-07") == date(2024, 3, 7)\n\n\ndef test_end_of_year():\n    assert parse_order_date("2024-12-31") == date(2024, 12, 31)\n',
    },
    FAIL_TO_PASS: ['tests/test_parse_iso.py::test_day_and_month', 'tests/test_parse_iso.py::test_end_of_year'],
    PASS_TO_PASS: ['tests/test_dates.py::test_format', 'tests/test_dates.py::test_parse_new_year'],
    test_cmd: PYTEST,
    log_parser: 'pytest',
    trajectory: {
      format: 'openhands',
      label: 'openhands',
      steps: [
        { thought: 'Let me see the project files.', bash: 'find . -name "*.py" -not -path "./.git/*" | sort' },
        { thought: 'Read the date parsing module.', editor: { command: 'view', path: '/testbed/orders/dates.py' } },
        {
          thought: 'Reproduce with the date from the issue.',
          bash: 'python -c \'from orders.dates import parse_order_date; print(parse_order_date("2024-03-07"))\'',
        },
        {
          thought: 'The format string has day and month in the wrong order.',
          editor: {
            command: 'str_replace',
            path: '/testbed/orders/dates.py',
            old_str: 'ISO_DAY = "%Y-%d-%m"',
            new_str: 'ISO_DAY = "%Y-%m-%d"',
          },
        },
        {
          thought: 'Check both dates from the issue.',
          bash: 'python -c \'from orders.dates import parse_order_date; print(parse_order_date("2024-03-07"), parse_order_date("2024-12-31"))\'',
        },
        { thought: 'Run the test suite.', bash: 'python -m pytest -q tests' },
        { thought: 'Fixed: the ISO format is year-month-day.', submit: true },
      ],
    },
  },
  {
    id: 'api__pagination-5',
    problem: 'The last page of results is never shown: with 45 orders and 20 per page the API reports 2 pages instead of 3.',
    repo: {
      'api/__init__.py': '',
      'api/pagination.py':
        'def page_count(total, per_page):\n    if per_page <= 0:\n        raise ValueError("per_page must be positive")\n    return total // per_page\n\n\ndef page_slice(items, page, per_page):\n    start = (page - 1) * per_page\n    return items[start:start + per_page]\n',
      'tests/test_pagination.py':
        'import pytest\n\nfrom api.pagination import page_count, page_slice\n\n\ndef test_slice_second_page():\n    assert page_slice(list(range(10)), 2, 4) == [4, 5, 6, 7]\n\n\ndef test_per_page_must_be_positive():\n    with pytest.raises(ValueError):\n        page_count(10, 0)\n\n\ndef test_exact_pages():\n    assert page_count(40, 20) == 2\n',
    },
    testsAdded: {
      'tests/test_page_count.py':
        'from api.pagination import page_count\n\n\ndef test_partial_last_page():\n    assert page_count(45, 20) == 3\n\n\ndef test_no_items():\n    assert page_count(0, 20) == 0\n',
    },
    FAIL_TO_PASS: ['tests/test_page_count.py::test_partial_last_page'],
    PASS_TO_PASS: [
      'tests/test_page_count.py::test_no_items',
      'tests/test_pagination.py::test_slice_second_page',
      'tests/test_pagination.py::test_per_page_must_be_positive',
      'tests/test_pagination.py::test_exact_pages',
    ],
    test_cmd: PYTEST,
    log_parser: 'pytest',
    trajectory: {
      format: 'mini-swe-agent-1',
      label: 'mini',
      steps: [
        { thought: 'Let me look at the repository.', bash: 'ls -R api tests' },
        { thought: 'Read the pagination module.', bash: 'cat api/pagination.py' },
        {
          thought: 'Reproduce the wrong page count.',
          bash: 'python -c "from api.pagination import page_count; print(page_count(45, 20))"',
        },
        {
          thought: 'Floor division drops the partial last page. Round up with math.ceil.',
          bash: "sed -i 's|return total // per_page|return math.ceil(total / per_page)|' api/pagination.py",
        },
        { thought: 'Check the result.', bash: 'python -c "from api.pagination import page_count; print(page_count(45, 20))"' },
        {
          thought: 'math is not imported yet. Add the import at the top of the module.',
          bash: "sed -i '1i import math\\n' api/pagination.py",
        },
        {
          thought: 'Check again.',
          bash: 'python -c "from api.pagination import page_count; print(page_count(45, 20), page_count(40, 20), page_count(0, 20))"',
        },
        { thought: 'Run the tests.', bash: 'python -m pytest -q tests' },
        { thought: 'Look at the final module once more.', bash: "sed -n '1,8p' api/pagination.py" },
        { thought: 'All good. Submit.', submit: true },
      ],
    },
  },
  {
    id: 'config__loader-6',
    problem:
      'Setting `APP_DEBUG=True` (or `1`, or `yes`) in the environment does not enable debug mode; only the exact string "true" works.',
    repo: {
      'config/__init__.py': '',
      'config/loader.py':
        'import os\n\n\nclass Settings:\n    def __init__(self, debug=False, workers=1):\n        self.debug = debug\n        self.workers = workers\n\n\ndef load_settings(env=None):\n    env = os.environ if env is None else env\n    debug = env.get("APP_DEBUG", "false") == "true"\n    workers = int(env.get("APP_WORKERS", "1"))\n    return Settings(debug=debug, workers=workers)\n',
      'tests/test_loader.py':
        'from config.loader import load_settings\n\n\ndef test_defaults():\n    settings = load_settings({})\n    assert settings.debug is False\n    assert settings.workers == 1\n\n\ndef test_workers():\n    assert load_settings({"APP_WORKERS": "4"}).workers == 4\n',
    },
    testsAdded: {
      'tests/test_debug_flag.py':
        'import pytest\n\nfrom config.loader import load_settings\n\n\n@pytest.mark.parametrize("value", ["true", "True", "1", "yes", "Yes"])\ndef test_truthy(value):\n    assert load_settings({"APP_DEBUG": value}).debug is True\n\n\n@pytest.mark.parametrize("value", ["false", "0", "no", ""])\ndef test_falsy(value):\n    assert load_settings({"APP_DEBUG": value}).debug is False\n',
    },
    FAIL_TO_PASS: [
      'tests/test_debug_flag.py::test_truthy[True]',
      'tests/test_debug_flag.py::test_truthy[1]',
      'tests/test_debug_flag.py::test_truthy[yes]',
      'tests/test_debug_flag.py::test_truthy[Yes]',
    ],
    PASS_TO_PASS: [
      'tests/test_debug_flag.py::test_truthy[true]',
      'tests/test_debug_flag.py::test_falsy[false]',
      'tests/test_debug_flag.py::test_falsy[0]',
      'tests/test_debug_flag.py::test_falsy[no]',
      'tests/test_debug_flag.py::test_falsy[]',
      'tests/test_loader.py::test_defaults',
      'tests/test_loader.py::test_workers',
    ],
    test_cmd: PYTEST,
    log_parser: 'pytest',
    trajectory: {
      format: 'mini-swe-agent-1.1',
      label: 'mini2',
      steps: [
        { thought: 'Find where APP_DEBUG is read.', bash: 'grep -rn "APP_DEBUG" --include=*.py .' },
        { thought: 'Read the loader.', bash: 'cat config/loader.py' },
        {
          thought: 'Reproduce with a few spellings.',
          bash: 'python -c \'from config.loader import load_settings; print([load_settings({"APP_DEBUG": v}).debug for v in ["true", "True", "1", "yes"]])\'',
        },
        {
          thought: 'Only the exact lower-case string matches. Normalise the value and accept the usual truthy spellings.',
          bash: 'python - <<\'EOF\'\nfrom pathlib import Path\n\npath = Path("config/loader.py")\nold = \'debug = env.get("APP_DEBUG", "false") == "true"\'\nnew = \'debug = env.get("APP_DEBUG", "false").strip().lower() in ("1", "true", "yes", "on")\'\npath.write_text(path.read_text().replace(old, new))\nEOF',
        },
        {
          thought: 'Check again.',
          bash: 'python -c \'from config.loader import load_settings; print([load_settings({"APP_DEBUG": v}).debug for v in ["true", "True", "1", "yes", "no", ""]])\'',
        },
        { thought: 'Run the tests.', bash: 'python -m pytest -q tests' },
        { thought: 'Review the diff.', bash: 'git diff' },
        { thought: 'Done.', submit: true },
      ],
    },
  },
  {
    id: 'stats__median-7',
    problem: '`median()` returns the upper middle value for even-length data: `median([1, 2, 3, 4])` gives 3 instead of 2.5.',
    repo: {
      'stats/__init__.py': '',
      'stats/median.py':
        'def median(values):\n    """Median of a non-empty sequence of numbers."""\n    if not values:\n        raise ValueError("median of empty data")\n    ordered = sorted(values)\n    middle = len(ordered) // 2\n    return ordered[middle]\n',
      'tests/__init__.py': '',
      'tests/test_median.py':
        'import unittest\n\nfrom stats.median import median\n\n\nclass MedianTests(unittest.TestCase):\n    def test_odd(self):\n        self.assertEqual(median([3, 1, 2]), 2)\n\n    def test_empty(self):\n        with self.assertRaises(ValueError):\n            median([])\n\n\nif __name__ == "__main__":\n    unittest.main()\n',
    },
    testsAdded: {
      'tests/test_median_even.py':
        'import unittest\n\nfrom stats.median import median\n\n\nclass MedianEvenTests(unittest.TestCase):\n    def test_even(self):\n        self.assertEqual(median([1, 2, 3, 4]), 2.5)\n\n    def test_two_values(self):\n        self.assertEqual(median([5, 1]), 3)\n',
    },
    FAIL_TO_PASS: [
      'test_even (tests.test_median_even.MedianEvenTests.test_even)',
      'test_two_values (tests.test_median_even.MedianEvenTests.test_two_values)',
    ],
    PASS_TO_PASS: ['test_odd (tests.test_median.MedianTests.test_odd)', 'test_empty (tests.test_median.MedianTests.test_empty)'],
    test_cmd: 'python -m unittest -v tests.test_median tests.test_median_even',
    log_parser: 'unittest',
    trajectory: {
      format: 'mini-swe-agent-1',
      label: 'mini',
      steps: [
        { thought: 'Look at the package layout.', bash: 'find stats tests -name "*.py" | sort' },
        { thought: 'Read the median implementation.', bash: 'cat stats/median.py' },
        { thought: 'Reproduce.', bash: 'python -c "from stats.median import median; print(median([1, 2, 3, 4]))"' },
        {
          thought: 'For even-length data the median is the mean of the two middle values.',
          bash: 'python - <<\'EOF\'\nfrom pathlib import Path\n\npath = Path("stats/median.py")\ntext = path.read_text()\ntext = text.replace("    return ordered[middle]\\n", "    if len(ordered) % 2:\\n        return ordered[middle]\\n    return (ordered[middle - 1] + ordered[middle]) / 2\\n")\npath.write_text(text)\nEOF',
        },
        {
          thought: 'Check odd and even inputs.',
          bash: 'python -c "from stats.median import median; print(median([1, 2, 3, 4]), median([3, 1, 2]), median([5, 1]))"',
        },
        { thought: 'Run the unit tests.', bash: 'python -m unittest -v tests.test_median' },
        { thought: 'Submit.', submit: true },
      ],
    },
  },
];
