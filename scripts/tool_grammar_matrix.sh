#!/usr/bin/env bash
# The tool-call grammar matrix of tests/e2e/test_tool_grammar.py with more seeds than CI runs (CI: T = 0 and one
# seed at T = 0.8). Prints the close rate and the validity count at the end. Usage:
#   scripts/tool_grammar_matrix.sh [SEEDS]        SEEDS: comma-separated, default 1,2,3,4,5,6,8,9
set -euo pipefail
cd "$(dirname "$0")/.."
TF_TOOL_GRAMMAR_SEEDS=${1:-1,2,3,4,5,6,8,9} TF_BUILD_DIR=${TF_BUILD_DIR:-$PWD/build} \
  .venv/bin/python -m pytest -q -s tests/e2e/test_tool_grammar.py -k "not agents"
