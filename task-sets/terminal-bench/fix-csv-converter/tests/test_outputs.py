import csv
import json
import subprocess
from pathlib import Path

EXPECTED = [
    {"id": "1", "item": "bolt", "qty": 120, "price": 0.05, "total": 6.0},
    {"id": "2", "item": "nut", "qty": 300, "price": 0.02, "total": 6.0},
    {"id": "3", "item": "washer", "qty": 75, "price": 0.01, "total": 0.75},
    {"id": "4", "item": "bracket", "qty": 4, "price": 3.75, "total": 15.0},
    {"id": "5", "item": "hinge", "qty": 10, "price": 1.2, "total": 12.0},
]


def test_script_runs():
    out = subprocess.run(["python3", "/app/convert.py", "/app/orders.csv"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == EXPECTED


def test_script_on_other_input(tmp_path):
    path = tmp_path / "more.csv"
    path.write_text("id,item,qty,price\n9,gear,3,2.345\n")
    out = subprocess.run(["python3", "/app/convert.py", str(path)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [{"id": "9", "item": "gear", "qty": 3, "price": 2.345, "total": 7.04}]


def test_output_file():
    assert json.loads(Path("/app/orders.json").read_text()) == EXPECTED
