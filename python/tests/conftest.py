"""The package's CPU tests (pytest). scripts/test runs them against the build
folder's library and command (CONVTUNE_LIBRARY, CONVTUNE_CLI, PYTHONPATH);
after `pip install .` they run against the installed package as they are."""

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(20261127)
