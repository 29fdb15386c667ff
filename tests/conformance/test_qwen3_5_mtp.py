"""The qwen3_5 MTP head on the MLX backend against a float64 reference built by hand (transformers does not
run MTP heads): tests/goldens/qwen3_5/bf16-mtp/mtp_golden.json. The check is qwen3_5_golden_check.check_mtp,
which the CUDA suite runs too."""
from .qwen3_5_golden_check import check_mtp

LOGIT_TOL = 1e-5  # float32 on the CPU against float64, as the main model's logits; the worst is printed


def test_mtp_head_matches_reference(build_dir, tmp_path, capsys):
    summary = check_mtp(build_dir / "tf_mtp_tool", LOGIT_TOL, tmp_path)
    with capsys.disabled():
        print(f"\n{summary}")
