#!/usr/bin/env bash
# The tool-call grammar matrix of tests/e2e/test_tool_grammar.py with more than CI runs: more seeds at T = 0.8
# (CI: T = 0 and one seed), and for the five formats served through a template of ours (llama3_json, deepseek,
# nemotron, glm, gemma4) the full cross product (CI: 6 cases a format), each case run drafted, serial and
# streamed. Prints the close rate and the validity count per model and in all at the end. Usage:
#   scripts/tool_grammar_matrix.sh [SEEDS [MODELS]]
# SEEDS: comma-separated, default 1,2,3,4,5,6,8,9 ("" for CI's seeds alone); MODELS: comma-separated names of
# the test's models (smol, qwen and the five formats), default all. Times on the 2-core VM: the five formats with
# CI's samplings (SEEDS "", 135 cases x 3 runs) 11 min; the default (all models, 9 samplings) not timed, about
# 50 min by that rate.
set -euo pipefail
cd "$(dirname "$0")/.."
TF_TOOL_GRAMMAR_FULL=1 TF_TOOL_GRAMMAR_SEEDS=${1-1,2,3,4,5,6,8,9} TF_TOOL_GRAMMAR_MODELS=${2:-} \
  TF_BUILD_DIR=${TF_BUILD_DIR:-$PWD/build} \
  .venv/bin/python -m pytest -q -s tests/e2e/test_tool_grammar.py -k "not agents"
