"""The shell scripts that stop at the first failing command (set -e with pipefail: setup, the test command, the wheel,
the sanitizers) must not pipe into a reader that may stop reading early (head, grep -q/-m, an awk program that
exits): the writer then dies of SIGPIPE when the reader is gone first, which pipefail makes the pipeline's status
(141) and set -e turns into a silent exit of the whole script. build_wheel.sh's `ldconfig -p | awk '... exit'` did
so in CI now and then (3 of 1,500 runs beside two busy loops)."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EARLY = re.compile(r"\|\s*(head\b|grep\s+-[a-zA-Z]*[qml]|sed\s+-n\s+'[^']*q|awk\s+'[^']*\bexit\b)")


def _strict_scripts():
    for path in sorted([*ROOT.glob("scripts/*.sh"), ROOT / ".ci" / "run"]):
        text = path.read_text()
        if re.search(r"^\s*set\s+-\w*e\w*", text, re.M) and "pipefail" in text:
            yield path, text


def test_strict_scripts_pipe_into_no_reader_that_stops_early():
    found = []
    for path, text in _strict_scripts():
        for n, line in enumerate(text.splitlines(), 1):
            code = line.split(" #")[0]
            if not code.lstrip().startswith("#") and EARLY.search(code):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_check_sees_the_pattern_that_failed():
    assert EARLY.search("icd=$(ldconfig -p | awk '/libOpenCL/ {print $NF; exit}')")
    assert EARLY.search("whl=$(ls wheelhouse/*.whl | head -1)") and EARLY.search("x | grep -q ok")
    assert not EARLY.search("icd=$(ldconfig -p | awk '/libOpenCL/ && !found {print $NF; found = 1}')")
    assert len(list(_strict_scripts())) >= 5  # setup, test, build_wheel, test_wheel, sanitize, .ci/run
