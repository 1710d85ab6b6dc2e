#!/bin/bash
set -euo pipefail

# What is in the working directory?
ls -la /app

# Look at the log's shape first.
head -n 5 /app/service.log

# Which levels occur, and how often?
awk '{print $2}' /app/service.log | sort | uniq -c

# Count ERROR records per service.
grep ' ERROR ' /app/service.log | sed -E 's/.*\[([^]]+)\].*/\1/' | sort | uniq -c

# Write the report as JSON.
python3 - <<'PY'
import json, re
from collections import Counter
counts = Counter()
for line in open("/app/service.log"):
    m = re.match(r"^\S+ (\w+) \[([^\]]+)\]", line)
    if m and m.group(1) == "ERROR":
        counts[m.group(2)] += 1
json.dump(dict(counts), open("/app/report.json", "w"), indent=2, sort_keys=True)
PY

# Check it.
cat /app/report.json
