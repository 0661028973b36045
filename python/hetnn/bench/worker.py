"""One worker process of a measurement spread over processes (hetnn._workers): ``python -m hetnn.bench.worker
SPEC.json OUT.json`` runs the suites named in SPEC.json with their options (or, with "call", one benchmark function:
hetnn._workers.spread_call), records every interleaved run and writes the recording to OUT.json for the reporting
process to merge."""
from __future__ import annotations

import sys
from typing import Any, Dict

from .. import _workers
from .suites import Options, run_suites


def _run(spec: Dict[str, Any]) -> None:
    if "call" in spec:
        _workers.call(spec)
        return
    run_suites(spec["suite"], Options(**spec["options"]), lambda text: None, worker=True)


if __name__ == "__main__":
    sys.exit(_workers.work(sys.argv[1], sys.argv[2], _run))
