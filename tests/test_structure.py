"""The package's shape: no import cycles between its files, and the core package does not depend on the benchmark
package (only the command line, the doctor and the studies, which run benchmarks, import it)."""
import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "python" / "hetnn"
APPS = {"hetnn.__main__", "hetnn.doctor"}  # programs on top of both
APP_PACKAGES = ("hetnn.study",)  # the published studies: declarations on top of the bench suites


def _module(path):
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports():
    graph = {}
    for path in PKG.rglob("*.py"):
        name = _module(path)
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):  # function-level imports count too
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                names = [target + "." + a.name for a in node.names]
                deps.update(n for n in names if (PKG.parent / n.replace(".", "/")).with_suffix(".py").exists())
                deps.add(target)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name.startswith("hetnn"))
        graph[name] = {d for d in deps if d != name and d.startswith("hetnn")}
    return graph


def test_no_import_cycles_between_files():
    graph = _imports()
    state, stack, cycles = {}, [], []

    def visit(n):
        state[n] = "open"
        stack.append(n)
        for d in sorted(graph.get(n, ())):
            if d not in graph or graph[d] is None:
                continue
            if state.get(d) == "open" and not n.startswith(d + "."):  # a package importing its own module is fine
                if not d.startswith(n + ".") and d != "hetnn":
                    cycles.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[n] = "done"
    for n in sorted(graph):
        if n not in state:
            visit(n)
    assert not cycles, cycles


def test_the_core_package_does_not_import_the_bench():
    graph = _imports()
    bad = {n: sorted(d for d in deps if d.startswith("hetnn.bench")) for n, deps in graph.items()
           if not n.startswith(("hetnn.bench",) + APP_PACKAGES) and n not in APPS}
    assert not {n: d for n, d in bad.items() if d}, bad


def test_inference_runs_the_core_layer_stack():
    """predict/evaluate and fit run the same forward pass (the core's Trainer): no layer keeps a Python copy."""
    from hetnn.nn import _layers

    assert not [name for name, cls in vars(_layers).items() if isinstance(cls, type) and "forward" in vars(cls)]


def test_the_native_module_stub_is_complete():
    """python/hetnn/_core.pyi declares every name hetnn._core exports (mypy checks the package against it)."""
    from hetnn import _core

    tree = ast.parse((PKG / "_core.pyi").read_text())
    declared = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    for n in tree.body:
        targets = [n.target] if isinstance(n, ast.AnnAssign) else n.targets if isinstance(n, ast.Assign) else []
        declared |= {t.id for t in targets if isinstance(t, ast.Name)}
    exported = {n for n in dir(_core) if not n.startswith("__")}
    assert exported - declared == set()


def test_no_function_of_the_training_package_is_over_80_lines():
    """fit once mixed one device, several devices and MPI ranks in one 134-line function; each is now a strategy
    object (nn/_strategies.py) under one epoch loop."""
    long = []
    for path in sorted((PKG / "nn").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 80:
                long.append(f"{path.name}:{node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert not long, long


CPP = PKG.parent.parent / "cpp" / "src"
# The layers of cpp/src, lowest first: a file includes only files of its own layer or below. Bases (errors, types,
# files) < the core interface (op parameters, the backend interface, devices, arrays) < op fronts (validation and
# dispatch: core/*) < backends (backend/cpu, backend/opencl: they may use the fronts' shared helpers) < bindings and
# benchmark peers (python/, bench/).
CPP_BASES = {"errors", "dtype", "precision", "half", "json", "siphash", "warn", "cache_dir", "fork", "recorder"}
CPP_INTERFACE = {"core/ops.h", "core/device.h", "core/array.h", "backend/backend.h", "backend/extensions.h"}
CPP_LAYERS = ["bases", "core interface", "op fronts", "backends", "bindings"]


def _cpp_layer(path):
    """The layer of a file named as an #include names it (relative to cpp/src)."""
    if path.startswith(("python/", "bench/")):
        return 4
    if path.startswith(("backend/cpu/", "backend/opencl/")):
        return 3
    header = path.rsplit(".", 1)[0] + ".h"
    if header in CPP_INTERFACE:
        return 1
    if path.startswith("core/"):
        return 0 if Path(path).stem in CPP_BASES else 2
    return 1  # backend/*.h: the interface


def test_the_include_direction_of_cpp_src():
    import re

    wrong, seen = [], 0
    for path in sorted(CPP.rglob("*")):
        if path.suffix not in (".h", ".cpp"):
            continue
        rel = path.relative_to(CPP).as_posix()
        mine = _cpp_layer(rel)
        for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', path.read_text(), re.M):
            if inc.endswith(".cl") or "/" not in inc:
                continue  # kernel text and same-folder names
            seen += 1
            if _cpp_layer(inc) > mine:
                wrong.append(f"{rel} ({CPP_LAYERS[mine]}) includes {inc} ({CPP_LAYERS[_cpp_layer(inc)]})")
    assert not wrong, "\n".join(wrong)
    assert seen > 200  # the includes were read
    assert _cpp_layer("core/errors.h") == 0 and _cpp_layer("core/matmul.cpp") == 2  # the rule reads the names
    assert _cpp_layer("backend/cpu/nn_cpu.cpp") == 3 and _cpp_layer("core/device.cpp") == 1


def test_the_training_loop_sits_above_the_op_fronts():
    """cpp/src/core/train (the trainer, its layers and optimizers) uses the op fronts; no front or backend uses it,
    and each layer and optimizer is a file of its own named in the tables."""
    import re

    users = []
    for path in sorted(CPP.rglob("*")):
        rel = path.relative_to(CPP).as_posix()
        if path.suffix not in (".h", ".cpp") or rel.startswith(("core/train/", "python/")):
            continue
        if re.search(r'#\s*include\s+"core/train/', path.read_text()):
            users.append(rel)
    assert not users, users
    train = CPP / "core" / "train"
    layers = sorted(p.name for p in train.glob("*_layer*.cpp"))
    optimizers = sorted(p.name for p in train.glob("*_optimizer.cpp"))
    assert len(layers) >= 7 and len(optimizers) >= 2
    tables = (train / "tables.cpp").read_text()
    for name in layers + optimizers:
        assert f"core/train/{name}" in tables, name
