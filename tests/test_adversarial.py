"""The adversarial harness (tests/adversarial/) in the test suite: every case runs in its own interpreter, all of
them at once on a pool of workers (about a minute on 2 CPUs); each case is then one test here, and the session ends
with the harness's summary line."""
import time

import pytest

from adversarial.harness import Case, all_cases, run_all, run_case, summary

CASES = all_cases()
RESULT = {"outcomes": None, "summary": ""}


@pytest.fixture(scope="module")
def outcomes():
    t0 = time.monotonic()
    out = {o.case.name: o for o in run_all(CASES)}
    RESULT["outcomes"] = out
    RESULT["summary"] = summary(list(out.values()), time.monotonic() - t0)
    return out


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_case(outcomes, name):
    o = outcomes[name]
    assert o.verdict == "ok", f"{o.verdict}: {o.detail}"


# The harness itself: each kind of finding must be seen as what it is, or a defect would pass as "ok".
SELF_CHECKS = [
    (Case("self/ok", "self", "done()"), "ok"),
    (Case("self/segfault", "self", "import ctypes\nctypes.string_at(0)"), "crash"),
    (Case("self/abort", "self", "import os\nos.abort()"), "crash"),
    (Case("self/hang", "self", "import time\ntime.sleep(60)", timeout=2), "hang"),
    (Case("self/data-loss", "self", "data_loss('gone')"), "data-loss"),
    (Case("self/wrong", "self", "import numpy as np\ncheck_close(np.ones(3), np.zeros(3))"), "wrong-result"),
    (Case("self/untyped-exception", "self", "raise AttributeError('x')"), "bad-error"),
    (Case("self/no-done", "self", "pass"), "bad-error"),
    (Case("self/expected-error-missing", "self", "with expect_error(ValueError):\n    pass\ndone()"),
     "bad-error"),
    (Case("self/cli-message-missing", "self", argv=["bench", "--repeat", "abc"], rc=2, stderr="nomatch-xyz"),
     "bad-error"),
    (Case("self/cli-too-late", "self", argv=["devices"], stdout="cpu", within=0.0), "bad-error"),
    (Case("self/lost-file", "self", "done()", check=lambda tmp: "the file is gone"), "data-loss"),
]


@pytest.mark.parametrize("case,verdict", SELF_CHECKS, ids=[c.name for c, _ in SELF_CHECKS])
def test_the_harness_sees_each_kind_of_finding(tmp_path, case, verdict):
    assert run_case(case, tmp_path).verdict == verdict
