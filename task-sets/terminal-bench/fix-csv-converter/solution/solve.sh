#!/bin/bash
set -e

# What is in the working directory?
ls -la /app

# See the crash.
python3 /app/convert.py /app/orders.csv || true

# Read the script around the failing line.
grep -n 'total' /app/convert.py

# The column is "price", not "prise".
sed -i 's/row\["prise"\]/row["price"]/' /app/convert.py

# Write the output and check it.
python3 /app/convert.py /app/orders.csv > /app/orders.json
jq length /app/orders.json
