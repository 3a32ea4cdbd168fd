"""Record in the ``--benchmark-json`` file the command that produced it."""

from __future__ import annotations

import shlex
from typing import Any


def pytest_benchmark_update_json(config: Any, benchmarks: Any, output_json: dict[str, Any]) -> None:
    args = [str(arg) for arg in config.invocation_params.args]
    output_json["command"] = shlex.join(["python", "-m", "pytest", *args])
