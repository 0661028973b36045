"""What a host wait costs on a device: small ops timed one call at a time, each followed by its wait, with hetnn's
waits blocking in the driver at once (its default, "block") and polling the work's completion first ("poll":
`Device._set_wait_spin`), against CuPy and PyTorch where importable, interleaved round by round in one run.

On a GPU the products of ResNet-50 at batch 1 took 35-53 us of wall time a call where their kernels took 12-26
(docs/gpu.md, fifth session): a wait that sleeps until the driver wakes it adds its wake-up to every synchronised
call, which is how every benchmark times one. This script measures whether polling removes it:

    python scripts/wait_latency.py --device gpu --rounds 30 [--spin 0.002]

Per workload: the median microseconds a call (op and wait) of each case, poll / block and hetnn / peer as speeds
with their 95 % intervals over the rounds, and the rows' flags."""
import argparse
import importlib.util
import sys

import numpy as np

import hetnn
from hetnn import Case, interleave
from hetnn.bench import ratio

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--device", default="gpu")
ap.add_argument("--rounds", type=int, default=30)
ap.add_argument("--spin", type=float, default=0.002, help="seconds the polling case polls before it blocks")
args = ap.parse_args()
if not args.spin > 0:
    raise SystemExit(f"--spin: a number of seconds above 0, got {args.spin}")
dev = hetnn.device(args.device)
if dev.kind != "opencl":
    raise SystemExit(f"--device {args.device}: an OpenCL device (the CPU device's work is synchronous), got {dev.id}")
cp = importlib.import_module("cupy") if importlib.util.find_spec("cupy") else None
torch = importlib.import_module("torch") if importlib.util.find_spec("torch") else None
if torch is not None and not torch.cuda.is_available():
    torch = None
print("device:", dev.id, dev.name, "| cupy", cp.__version__ if cp else "-",
      "| torch", torch.__version__ if torch else "-")

rng = np.random.default_rng(0)


def spin(seconds, fn):
    return lambda: (dev._dev._set_wait_spin(seconds), fn())


def workloads():
    """(name, hetnn call, its wait: "sync" for synchronize or "none" when the call waits itself, peers' calls)"""
    v = rng.standard_normal(256, dtype=np.float32)
    V, out = hetnn.asarray(v, device=dev), hetnn.empty((256,), dtype="float32", device=dev)
    peers = {}
    if cp is not None:
        cv, cout = cp.asarray(v), cp.empty(256, dtype=cp.float32)
        peers["cupy"] = (lambda: cp.add(cv, cv, out=cout), cp.cuda.Device().synchronize)
    if torch is not None:
        tv, tout = torch.from_numpy(v).cuda(), torch.empty(256, device="cuda")
        peers["torch"] = (lambda: torch.add(tv, tv, out=tout), torch.cuda.synchronize)
    yield "add 1 KiB", lambda: hetnn.add(V, V, out=out), True, peers
    peers = {}
    if cp is not None:
        peers["cupy"] = (lambda: cp.asnumpy(cv), None)
    if torch is not None:
        peers["torch"] = (lambda: tv.cpu(), None)
    yield "download 1 KiB", lambda: V.numpy(), False, peers
    for m, n, k in ((64, 64, 64), (49, 512, 4608), (3136, 64, 64), (196, 256, 2304)):
        a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
        A, B, C = hetnn.asarray(a, device=dev), hetnn.asarray(b, device=dev), hetnn.empty((m, n), "float32", device=dev)
        peers = {}
        if cp is not None:
            ca, cb, cc = cp.asarray(a), cp.asarray(b), cp.empty((m, n), dtype=cp.float32)
            peers["cupy"] = (lambda ca=ca, cb=cb, cc=cc: cp.matmul(ca, cb, out=cc), cp.cuda.Device().synchronize)
        if torch is not None:
            ta, tb, tc = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda(), torch.empty((m, n), device="cuda")
            peers["torch"] = (lambda ta=ta, tb=tb, tc=tc: torch.matmul(ta, tb, out=tc), torch.cuda.synchronize)
        yield f"matmul {m}x{n}x{k}", (lambda A=A, B=B, C=C: hetnn.matmul(A, B, out=C)), True, peers


if torch is not None:
    torch.backends.cuda.matmul.allow_tf32 = False
for name, call, synced, peers in workloads():
    devs = [dev] if synced else []
    cases = [Case("block", spin(0.0, call), devices=devs), Case("poll", spin(args.spin, call), devices=devs)]
    cases += [Case(p, fn, sync=sync) for p, (fn, sync) in peers.items()]
    res = {r.name: r for r in interleave(cases, n_warmup=5, n_repeat=args.rounds)}
    line = ", ".join(f"{lab} {np.median(r.wall_times) * 1e6:.1f}" for lab, r in res.items())
    print(f"{name}: us a call: {line}", flush=True)
    print("   ", ratio("poll/block", res["poll"], res["block"]))
    for p in peers:
        for lab in ("block", "poll"):
            print("   ", ratio(f"{lab}/{p}", res[lab], res[p]))
dev._dev._set_wait_spin(0.0)
sys.exit(0)
