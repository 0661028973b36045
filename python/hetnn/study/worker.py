"""One worker process of a study spread over processes (hetnn._workers): ``python -m hetnn.study.worker SPEC.json
OUT.json`` runs the study with its share of the repeats and the thread count of the process it works for, records
every interleaved run and writes the recording to OUT.json for that process to merge."""
from __future__ import annotations

import sys
from typing import Any, Dict

from .. import _workers, study


def _run(spec: Dict[str, Any]) -> None:
    _workers.set_key(f"study {spec['study']}")
    study._FIXED_THREADS = spec["threads"]
    study.run(spec["study"], quick=bool(spec["quick"]), config=spec["config"], progress=False,
              say=lambda text: None, processes=1)


if __name__ == "__main__":
    sys.exit(_workers.work(sys.argv[1], sys.argv[2], _run))
