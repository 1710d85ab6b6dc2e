import json
import re
from collections import Counter
from pathlib import Path


def expected():
    counts = Counter()
    for line in Path("/app/service.log").read_text().splitlines():
        m = re.match(r"^\S+ (\w+) \[([^\]]+)\]", line)
        if m and m.group(1) == "ERROR":
            counts[m.group(2)] += 1
    return dict(counts)


def test_report_exists():
    assert Path("/app/report.json").is_file()


def test_report_counts():
    report = json.loads(Path("/app/report.json").read_text())
    assert report == expected()


def test_quiet_services_absent():
    report = json.loads(Path("/app/report.json").read_text())
    assert "mailer" not in report
