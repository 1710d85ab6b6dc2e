import json
from pathlib import Path

# The ERROR counts of the log as the image ships it (environment/service.log). Written here,
# not computed from /app/service.log: the agent owns /app and could rewrite the log to match
# any report.
EXPECTED = {"auth": 9, "billing": 11, "gateway": 9, "search": 10}


def test_report_exists():
    assert Path("/app/report.json").is_file()


def test_report_counts():
    report = json.loads(Path("/app/report.json").read_text())
    assert report == EXPECTED


def test_quiet_services_absent():
    report = json.loads(Path("/app/report.json").read_text())
    assert "mailer" not in report
