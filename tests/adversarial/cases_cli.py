"""The command line: every option's bad values refused with exit status 2 and a message naming the option, before
any work starts (`within`), unwritable outputs checked first, and the commands that should work."""
from typing import List

from .harness import Case

NUMERIC = {  # bench options taking numbers, and values that must be refused
    "--repeat": ("0", "-1", "abc", "1e999", "nan", "2.5"),
    "--warmup": ("-1", "abc", "nan"),
    "--max-duration": ("0", "-1", "abc", "nan"),
    "--epochs": ("0", "-2", "abc"),
    "--max-width": ("0", "-5", "abc"),
    "--sweep-max": ("0", "-8", "abc", "1000"),
    "--batch": ("0", "-1", "abc"),
}

BENCH_BAD = [  # (name, argv, stderr regex)
    ("unknown-suite", ["bench", "nosuch"], "nosuch"),
    ("dtype-float13", ["bench", "matmul", "--dtype", "float13"], "dtype"),
    ("dtype-empty", ["bench", "matmul", "--dtype", ""], "dtype"),
    ("device-fpga", ["bench", "matmul", "--device", "fpga"], "device|fpga"),
    ("device-out-of-range", ["bench", "matmul", "--device", "opencl:9:9"], "device|opencl:9:9"),
    ("device-empty", ["bench", "matmul", "--device", ""], "device"),
    ("compare-unknown", ["bench", "matmul", "--compare", "nosuchlib"], "compare|nosuchlib"),
    ("threads-zero", ["bench", "matmul", "--threads", "0"], "threads"),
    ("threads-text", ["bench", "matmul", "--threads", "abc"], "threads"),
    ("threads-empty-item", ["bench", "matmul", "--threads", "1,,2"], "threads"),
    ("threads-too-many", ["bench", "matmul", "--threads", "100000"], "threads"),
    ("shapes-unknown", ["bench", "matmul", "--shapes", "nonsense"], "shapes"),
    ("output-under-a-file", ["bench", "matmul", "--output", "{tmp}/file/res"], "output"),
    ("output-in-proc", ["bench", "matmul", "--output", "/proc/hetnn/res"], "output"),
    ("output-empty", ["bench", "matmul", "--output", ""], "output"),
    ("clblast-tuning-missing", ["bench", "matmul", "--clblast-tuning", "/nonexistent.json"], "clblast"),
    ("clblast-tuning-garbage", ["bench", "matmul", "--clblast-tuning", "{tmp}/file"], "clblast"),
    ("unknown-option", ["bench", "--frobnicate"], "frobnicate"),
]

TUNE_BAD = [
    ("sizes-text", ["tune", "gemm", "--sizes", "abc"], "--sizes"),
    ("sizes-zero", ["tune", "gemm", "--sizes", "0"], "--sizes"),
    ("sizes-negative", ["tune", "gemm", "--sizes", "-5"], "--sizes"),
    ("sizes-two-dims", ["tune", "gemm", "--sizes", "10x10"], "--sizes"),
    ("sizes-huge", ["tune", "gemm", "--sizes", "99999999999"], "--sizes"),
    ("sizes-huge-dim", ["tune", "gemm", "--sizes", "4x4x100000"], "--sizes"),
    ("budget-inf", ["tune", "gemm", "--budget", "inf"], "--budget"),
    ("sizes-empty", ["tune", "gemm", "--sizes", ""], "--sizes"),
    ("budget-negative", ["tune", "gemm", "--budget", "-1"], "--budget"),
    ("budget-zero", ["tune", "gemm", "--budget", "0"], "--budget"),
    ("budget-nan", ["tune", "gemm", "--budget", "nan"], "--budget"),
    ("budget-text", ["tune", "gemm", "--budget", "abc"], "budget"),
    ("device-cpu", ["tune", "gemm", "--device", "cpu"], "OpenCL"),
    ("device-fpga", ["tune", "gemm", "--device", "fpga"], "device|fpga"),
    ("dtype-int8", ["tune", "gemm", "--dtype", "int8"], "dtype"),
    ("unknown-kernel", ["tune", "winograd"], "winograd|kernel"),
]

OTHER_BAD = [
    ("no-command", [], "command"),
    ("unknown-command", ["frobnicate"], "frobnicate"),
    ("devices-extra-argument", ["devices", "extra"], "extra"),
    ("doctor-unknown-option", ["doctor", "--bogus"], "bogus"),
]


def _file(tmp):
    (tmp / "file").write_text("not a directory, not JSON")


# Every size-like setting of every study set beyond any machine: refused before the run (exit 2, the setting named,
# within seconds), never NumPy's MemoryError or an allocation overcommit allows.
SIZES = {"gemm-libraries": {"batches": [10**9], "shapes": ["200000x200000x200000"],
                            "init_shape": "200000x200000x200000"},
         "maxpool": {"batch": 10**12, "layers": [[10**5, 10**5, 10**5]], "sizes": [10**7]},
         "mlp-topology": {"samples": 10**12, "k_max": 30},  # (batches and infer_sizes beyond the samples: all of them)
         "cnn": {"maps": 10**11, "keras_batches": [10**12], "infer_sizes": [10**12], "alexnet_batch": 10**12},
         "nn-library": {"batch": 10**12, "widths": [10**9], "xor_hidden": 10**12}}


def _config(study, key, value):
    def write(tmp):
        import json
        (tmp / "config.json").write_text(json.dumps({"study": study, key: value}))
    return write


def cases(devs: List[str]) -> List[Case]:
    out: List[Case] = []
    for study, settings in SIZES.items():
        for key, value in settings.items():
            out.append(Case(f"cli/study-{study}-{key}-beyond-the-machine", "cli",
                            argv=["study", study, "--quick", "--config", "{tmp}/config.json", "--no-output"], rc=2,
                            stderr=key, within=30, setup=_config(study, key, value)))
    for opt, values in NUMERIC.items():
        suite = "mlp" if opt in ("--epochs", "--max-width") else "maxpool" if opt == "--sweep-max" else "matmul"
        for v in values:
            out.append(Case(f"cli/bench-{opt[2:]}-{v}", "cli", argv=["bench", suite, opt, v, "--no-output"], rc=2,
                            stderr=opt, within=20))
    for name, argv, err in BENCH_BAD:
        no_output = [] if "--output" in argv else ["--no-output"]
        out.append(Case(f"cli/bench-{name}", "cli", argv=argv + no_output, rc=2, stderr=err, within=20, setup=_file))
    for name, argv, err in TUNE_BAD:
        out.append(Case(f"cli/tune-{name}", "cli", argv=argv, rc=2, stderr=err, within=20))
    out.append(Case("cli/tune-with-an-unwritable-cache", "cli", argv=["tune", "gemm", "--budget", "5"], rc=2,
                    stderr="cache|tuning", within=20, env={"HETNN_CACHE_DIR": "{tmp}/file/cache"}, setup=_file))
    for name, argv, err in OTHER_BAD:
        out.append(Case(f"cli/{name}", "cli", argv=argv, rc=2, stderr=err, within=20))
    # what must work
    out.append(Case("cli/devices", "cli", argv=["devices"], stdout="cpu"))
    out.append(Case("cli/doctor", "cli", argv=["doctor"], stdout="(?i)thread|load", timeout=120))
    out.append(Case("cli/help", "cli", argv=["--help"], stdout="bench"))
    out.append(Case("cli/bench-small-run-writes-its-files", "cli",
                    argv=["bench", "matmul", "--shapes", "quick", "--repeat", "2", "--warmup", "1", "--device", "cpu",
                          "--compare", "", "--output", "{tmp}/out/res"], stdout="GFLOP", timeout=180,
                    check=lambda tmp: None if (tmp / "out" / "res.json").exists() and (tmp / "out" / "res.csv").exists()
                    else "bench --output wrote no res.json/res.csv"))
    out.append(Case("cli/bench-output-into-a-directory", "cli",
                    argv=["bench", "matmul", "--shapes", "quick", "--repeat", "2", "--warmup", "1", "--device", "cpu",
                          "--compare", "", "--output", "{tmp}/dir/"], stdout="GFLOP", timeout=180,
                    check=lambda tmp: None if list((tmp / "dir").glob("matmul-*.json"))
                    else "bench --output DIR/ wrote no DIR/matmul-*.json"))
    return out
