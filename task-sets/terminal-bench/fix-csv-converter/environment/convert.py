import csv
import json
import sys


def convert(path):
    rows = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            row["qty"] = int(row["qty"])
            row["price"] = float(row["price"])
            row["total"] = round(row["qty"] * row["prise"], 2)
            rows.append(row)
    return rows


if __name__ == "__main__":
    print(json.dumps(convert(sys.argv[1]), indent=2))
