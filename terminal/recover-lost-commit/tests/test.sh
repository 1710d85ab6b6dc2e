#!/bin/bash
# The task's tests with the image's pytest; the reward file is what grades.
python3 -m pytest -p no:cacheprovider /tests/test_outputs.py -rA
if [ $? -eq 0 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
