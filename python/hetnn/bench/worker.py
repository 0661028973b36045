"""One worker process of a measurement spread over processes (hetnn._workers): ``python -m hetnn.bench.worker
OPTIONS.json OUT.json`` runs the suites named in OPTIONS.json with their options, records every interleaved run and
writes the recording to OUT.json for the reporting process to merge."""
from __future__ import annotations

import json
import sys

from .. import _workers
from .suites import Options, run_suites


def main(spec_path: str, out_path: str) -> int:
    with open(spec_path) as f:
        spec = json.load(f)
    _workers._recorder = _workers._Recorder(out_path)
    try:
        run_suites(spec["suite"], Options(**spec["options"]), lambda text: None, worker=True)
        _workers._recorder.write()
    finally:
        _workers._recorder = None
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
