"""Runs the adversarial cases: each in its own interpreter (its own process group, its own temporary directory)
with a timeout, classified as ok, crash, hang, data-loss, wrong-result or bad-error."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence

PRELUDE = (Path(__file__).parent / "prelude.py").read_text()
VERDICTS = ("ok", "crash", "hang", "data-loss", "wrong-result", "bad-error")
# Signs that the process died rather than failed: a signal, an abort, the runtime's own fatal paths.
CRASH_SIGNS = re.compile(r"Fatal Python error|terminate called|Assertion .* failed|Segmentation fault|"
                         r"core dumped|AddressSanitizer|double free|free\(\): invalid")


@dataclass
class Case:
    """One adversarial case. Either `code` (Python run after prelude.py, which must call done()) or `argv` (the
    arguments of ``python -m hetnn``, checked against `rc` and `stderr`). `env` overrides the environment (None
    removes a variable); `{tmp}` in argv/env values is the case's own directory. `setup(tmp)` prepares files first;
    `check(tmp)` inspects them after (returns a data-loss message, or None). `within`: a CLI case must end in this
    many seconds (a bad option is refused before any work starts)."""
    name: str
    category: str
    code: str = ""
    argv: Sequence[str] = ()
    env: Dict[str, Optional[str]] = field(default_factory=dict)
    rc: int = 0
    stderr: str = ""
    stdout: str = ""
    timeout: float = 90
    within: Optional[float] = None
    setup: Optional[Callable[[Path], None]] = None
    check: Optional[Callable[[Path], Optional[str]]] = None
    device: Optional[str] = None
    as_file: bool = False  # run from TMP/case.py (multiprocessing's spawn needs a main module it can import)


@dataclass
class Outcome:
    case: Case
    verdict: str
    detail: str
    seconds: float
    returncode: Optional[int]


def _env(case: Case, tmp: Path, shared_cache: Path) -> Dict[str, str]:
    env = dict(os.environ)
    for k in [k for k in env if k.startswith("HARNESS_")]:
        del env[k]
    env.pop("HETNN_POISON", None)
    env.update(HETNN_CACHE_DIR=str(shared_cache), HARNESS_TMP=str(tmp), PYTHONFAULTHANDLER="1",
               PYTHONUNBUFFERED="1", HARNESS_TESTS=str(Path(__file__).resolve().parent.parent))
    if case.device:
        env["HARNESS_DEVICE"] = case.device
    for k, v in case.env.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v.replace("{tmp}", str(tmp))
    return env


def run_case(case: Case, shared_cache: Path, python: str = sys.executable) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="hetnn-adv-") as t:
        tmp = Path(t)
        if case.setup:
            case.setup(tmp)
        if case.code and case.as_file:
            (tmp / "case.py").write_text(PRELUDE + "\n" + case.code)
            cmd = [python, str(tmp / "case.py")]
        elif case.code:
            cmd = [python, "-c", PRELUDE + "\n" + case.code]
        else:
            cmd = [python, "-m", "hetnn", *[a.replace("{tmp}", str(tmp)) for a in case.argv]]
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=tmp, env=_env(case, tmp, shared_cache), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=case.timeout)
            hung = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            hung = True
        seconds = time.monotonic() - t0
        verdict, detail = _classify(case, proc.returncode, out, err, hung, seconds)
        if verdict == "ok" and case.check:
            lost = case.check(tmp)
            if lost:
                verdict, detail = "data-loss", lost
        return Outcome(case, verdict, detail, seconds, proc.returncode)


def _tail(text: str, n: int = 600) -> str:
    return text[-n:].strip()


def _classify(case: Case, rc: int, out: str, err: str, hung: bool, seconds: float):
    if hung:
        return "hang", f"no exit in {case.timeout:.0f} s; stderr: {_tail(err)}"
    if rc == -signal.SIGINT and "KeyboardInterrupt" in err:  # Python's own exit on an uncaught Ctrl-C
        return "bad-error", f"an uncaught KeyboardInterrupt; stderr: {_tail(err)}"
    if rc < 0 or CRASH_SIGNS.search(err):
        return "crash", f"exit {rc}; stderr: {_tail(err)}"
    if "DATA-LOSS:" in err:
        return "data-loss", _tail(err)
    if "WRONG-RESULT:" in err:
        return "wrong-result", _tail(err)
    if case.code:
        if rc != 0 or "HARNESS-OK" not in out:
            return "bad-error", f"exit {rc}; stderr: {_tail(err)}"
        return "ok", ""
    if rc != case.rc:
        return "bad-error", f"exit {rc}, expected {case.rc}; stderr: {_tail(err)}"
    if "Traceback" in err:
        return "bad-error", f"a traceback instead of a message: {_tail(err)}"
    if case.stderr and not re.search(case.stderr, err, re.S):
        return "bad-error", f"stderr lacks /{case.stderr}/: {_tail(err)}"
    if case.stdout and not re.search(case.stdout, out, re.S):
        return "bad-error", f"stdout lacks /{case.stdout}/: {_tail(out)}"
    if case.within is not None and seconds > case.within:
        return "bad-error", f"took {seconds:.1f} s, refused only after {case.within:.0f} s (checked too late)"
    return "ok", ""


def fill(template: str, body: str) -> str:
    """`template` with its "%s" line replaced by `body` (case code holds % and {} of its own)."""
    return template.replace("%s\n", body + "\n", 1)


def devices() -> List[str]:
    import hetnn
    return [d.id for d in hetnn.devices()]


def all_cases() -> List[Case]:
    from . import cases_cli, cases_environment, cases_files, cases_lifecycle, cases_resources
    devs = devices()
    cases: List[Case] = []
    for module in (cases_lifecycle, cases_files, cases_environment, cases_resources, cases_cli):
        cases.extend(module.cases(devs))
    names = [c.name for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, f"duplicate case names: {sorted(dup)}"
    return cases


def run_all(cases: Iterable[Case], workers: Optional[int] = None,
            progress: Optional[Callable[[Outcome], None]] = None) -> List[Outcome]:
    cases = list(cases)
    workers = workers or max(2, os.cpu_count() or 2)
    with tempfile.TemporaryDirectory(prefix="hetnn-adv-cache-") as cache:
        # one warm cache shared by the cases that do not test caches: compiled once, then loaded
        subprocess.run([sys.executable, "-c", "import hetnn, numpy as np\nfor d in hetnn.devices():\n"
                        "    hetnn.matmul(np.ones((8, 8), np.float32), np.ones((8, 8), np.float32), device=d)"],
                       env=dict(os.environ, HETNN_CACHE_DIR=cache), timeout=600, capture_output=True)
        with ThreadPoolExecutor(workers) as pool:
            futures = [pool.submit(run_case, c, Path(cache)) for c in cases]
            outcomes = []
            for f in futures:
                o = f.result()
                if progress:
                    progress(o)
                outcomes.append(o)
    return outcomes


def summary(outcomes: Sequence[Outcome], seconds: float) -> str:
    counts = {v: sum(o.verdict == v for o in outcomes) for v in VERDICTS}
    cats = sorted({o.case.category for o in outcomes})
    per_cat = ", ".join(f"{c} {sum(o.case.category == c for o in outcomes)}" for c in cats)
    return (f"adversarial harness: {len(outcomes)} cases ({per_cat}) in {seconds:.0f} s: "
            f"{len(outcomes) - counts['ok']} findings ({counts['crash']} crashes, {counts['hang']} hangs, "
            f"{counts['data-loss']} data-loss, {counts['wrong-result']} wrong results, "
            f"{counts['bad-error']} bad errors)")
