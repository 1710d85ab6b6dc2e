#!/bin/bash
# The task's tests with the image's pytest (the published Terminal-Bench scripts fetch uv
# from the internet; this image has pytest already). The reward file is what grades.
python3 -m pytest -p no:cacheprovider /tests/test_outputs.py -rA
if [ $? -eq 0 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
