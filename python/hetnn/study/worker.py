"""One worker process of a study spread over processes (hetnn._workers): ``python -m hetnn.study.worker SPEC.json
OUT.json`` runs the study with its share of the repeats and the thread count of the process it works for, records
every interleaved run and writes the recording to OUT.json for that process to merge."""
from __future__ import annotations

import json
import sys

from .. import _workers, study


def main(spec_path: str, out_path: str) -> int:
    with open(spec_path) as f:
        spec = json.load(f)
    _workers._recorder = _workers._Recorder(out_path)
    _workers.set_key(f"study {spec['study']}")
    study._FIXED_THREADS = spec["threads"]
    try:
        study.run(spec["study"], quick=bool(spec["quick"]), config=spec["config"], progress=False,
                  say=lambda text: None, processes=1)
        _workers._recorder.write()
    finally:
        _workers._recorder = None
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
