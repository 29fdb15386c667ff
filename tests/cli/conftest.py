import pytest


@pytest.fixture(scope="module")
def serving_build(tensorfold):
    """Checks that run where a checkpoint loads need a build with a backend (the sanitizer build has none, and
    its `serve` stops first at "this build has no MLX backend"; `make test` runs them with MLX)."""
    version = tensorfold("--version").stdout
    if "mlx" not in version and "cuda" not in version:
        pytest.skip("this build has no backend to load a checkpoint into")
