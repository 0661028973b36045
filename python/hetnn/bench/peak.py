"""Measured ceilings used to print "% of peak": FP32 FMA throughput of the host CPU from a register-only native loop
(it bounds the CPU device and OpenCL CPU devices on the same processor), the host's STREAM bandwidth, and, with
`python -m hetnn bench peak`, every OpenCL device's own FMA and triad ceilings from kernels/peak.cl (stored in the
cache directory for the other suites)."""
from __future__ import annotations

import json
import math
import os
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .._device import Device
from .._loader import _core
from .._oscounters import Probe, quiesce, span_noise
from .progress import expect
from .copies import copy_seconds, measure_copies

_cache: Dict[str, Any] = {}
_warned: set = set()


def cpu_fma_peak_gflops(trials: int = 6, seconds: float = 0.05) -> float:
    """FP32 GFLOP/s of all OpenMP threads running independent vector FMAs, measured once per process and thread
    count: the best of ``trials`` short runs (each the best of 3). A ceiling is a maximum: a busy neighbour on a
    shared machine only lowers a run (seen here: single runs from 209 to 348 GFLOP/s a second apart), so many
    short tries find it. Whether other processes used this process's CPUs meanwhile is kept
    (:func:`ceiling_under_load`); a figure above it has it measured again (:func:`remeasure_fma`)."""
    key = f"cpu:{_core.get_num_threads()}"  # per thread count (--threads, hetnn.set_num_threads)
    if key not in _cache:
        _measure_fma(trials, seconds)
    return float(_cache[key])


def _measure_fma(trials: int = 6, seconds: float = 0.05) -> None:
    """One measurement of the native FMA loop; the cache keeps the best seen in this process and whether that one
    was measured under load."""
    key = f"cpu:{_core.get_num_threads()}"
    best, isa = 0.0, "?"
    probe = Probe(machine=True)  # a neighbour on another vCPU may share this one's core (SMT) or power
    start = probe.read()
    for _ in range(max(1, trials)):
        g, isa = _core._cpu_fma_peak(0, seconds)
        best = max(best, float(g))
    load = span_noise(Probe.delta(start, probe.read()))
    probe.close()
    if best > _cache.get(key, 0.0):
        _cache[key], _cache["cpu_isa"] = best, isa
        _cache[key + ":under_load"] = bool(load["others_pct"] > LOAD_PCT or load["steal_pct"] > LOAD_PCT)
        _seen(_core.get_num_threads(), "the native FMA loop", best, _cache[key + ":under_load"])


# How often one process measures the FMA ceiling again for figures above it: a timer that is really wrong would
# otherwise cost a second a row.
FMA_REMEASURES = 4


def remeasure_fma(tries: int = 6) -> float:
    """The native FMA loop measured again (the best kept) and the host's FP32 ceiling in force returned: called
    when a figure exceeds it. The ceiling is measured once per process, and a busy moment then (a CI run's other
    test worker, another VM on the same core) read 91 GFLOP/s where a matmul moments later ran at 162."""
    key = f"cpu:{_core.get_num_threads()}:remeasured"
    if _cache.get(key, 0) < FMA_REMEASURES:
        _cache[key] = _cache.get(key, 0) + 1
        _measure_fma(tries)
    return host_peak_gflops()


def _seen(threads: int, what: str, gflops: float, under_load: bool) -> None:
    """Records an FP32 rate measured on the host's processor in this process (the native loop, a CPU-type OpenCL
    device's FMA kernel): the ceiling at that thread count is the best of them all."""
    if gflops and gflops > 0:
        _cache.setdefault(f"seen:{threads}", {})[what] = (float(gflops), bool(under_load))
        _cache.setdefault(f"ever:{threads}", set()).add(float(gflops))  # rows keep the ceiling of their run's start


def host_peak_gflops() -> float:
    """The host processor's FP32 ceiling at the thread count in force: the best of the native FMA loop, every rate
    measured on this processor in this process at that count (PoCL's FMA kernel read 1.18x the native loop on a
    machine whose other vCPU was busy) and the ceilings stored for it."""
    return max([cpu_fma_peak_gflops(), *(v for v, _ in _cache.get(f"seen:{_core.get_num_threads()}", {}).values()),
                *_host_cpu_peaks()])


def ceiling_under_load() -> bool:
    """Whether the host's ceiling in force (:func:`host_peak_gflops`) comes from a measurement taken while other
    processes or the hypervisor used the machine's CPUs: then it may be a lower bound, and "% peak" may read
    high."""
    best = host_peak_gflops()
    seen = _cache.get(f"seen:{_core.get_num_threads()}", {})
    return any(v == best and loaded for v, loaded in seen.values()) and best not in _host_cpu_peaks()


# FP32 FLOP per cycle and core of the host's vector FMA units, by vendor, CPU family and widest ISA: (FLOP, what).
# Zen 2-4 run two 256-bit FMA pipes (AVX-512 on Zen 4 in two halves), Zen 5 two 512-bit ones; Intel's server
# cores with AVX-512 two 512-bit FMA units (some models one: then the nominal figure is twice the truth).
def _flop_per_cycle() -> Optional[Tuple[int, str]]:
    info: Dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break
                k, _, v = line.partition(":")
                info[k.strip()] = v.strip()
    except OSError:
        return None
    flags = set(info.get("flags", "").split())
    vendor, family = info.get("vendor_id", ""), int(info.get("cpu family", "0") or 0)
    if vendor == "AuthenticAMD":
        if family >= 26:
            return 64, "Zen 5: two 512-bit FMA pipes"
        if family in (23, 25) and "fma" in flags:
            return 32, "Zen 2-4: two 256-bit FMA pipes"
        return None
    if vendor == "GenuineIntel":
        if "avx512f" in flags:
            return 64, "AVX-512: two 512-bit FMA units assumed"
        if "fma" in flags:
            return 32, "AVX2: two 256-bit FMA units"
    return None


def _reported_ghz() -> Optional[float]:
    """The clock the OS reports: cpufreq's maximum where visible, else /proc/cpuinfo's current figure (in a VM
    usually the base clock: boost is not visible there)."""
    for path in ("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq",):
        try:
            with open(path) as f:
                return int(f.read()) / 1e6
        except (OSError, ValueError):
            pass
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("cpu MHz"):
                    return float(line.split(":", 1)[1]) / 1e3
    except (OSError, ValueError):
        pass
    return None


def nominal_line(threads: Optional[int] = None) -> str:
    """The nominal FP32 peak beside the measured ceiling: cores x FLOP/cycle x reported clock, and the clock the
    measured ceiling implies ('' where the FMA units are not known)."""
    fpc, ghz = _flop_per_cycle(), _reported_ghz()
    if fpc is None:
        return ""
    n = threads if threads is not None else _core.get_num_threads()
    measured = host_peak_gflops()
    text = f"nominal {n} core(s) x {fpc[0]} FLOP/cycle ({fpc[1]})"
    if ghz:
        text += f" x {ghz:.2f} GHz reported = {n * fpc[0] * ghz:.1f} GFLOP/s"
    return text + f"; the measured ceiling implies {measured / (n * fpc[0]):.2f} GHz"


def ceiling_line() -> str:
    """The host's measured FP32 ceiling for a report's header: thread count, nominal peak, and a mark when it
    was measured under load."""
    n = _core.get_num_threads()
    best = host_peak_gflops()
    line = f"measured FP32 FMA peak of the host CPU: {best:.1f} GFLOP/s with {n} thread(s)"
    seen = _cache.get(f"seen:{n}", {})
    if len(seen) > 1 or best > cpu_fma_peak_gflops():
        parts = [f"{what} {v:.1f}" for what, (v, _) in seen.items()]
        stored = _host_cpu_peaks()
        if stored:
            parts.append(f"stored {max(stored):.1f}")
        line += f" (the best of: {', '.join(parts)})"
    if ceiling_under_load():
        line += " [MEASURED WHILE OTHER PROCESSES WERE BUSY: a lower bound; % peak may read high]"
    nominal = nominal_line(n)
    return line + (f" ({nominal})" if nominal else "")


def _host_cpu_peaks(field: str = "fp32_gflops") -> List[float]:
    """Ceilings (``field``) stored for the host's processor at the thread count in force: the CPU device's and
    CPU-type OpenCL devices' (the same cores and memory, measured by another route). A ceiling with another
    thread count, from before the machine's boot or of another processor bounds nothing here."""
    out = []
    for v in stored_peaks().values():
        if v.get(field) and (v.get("device") == "cpu" or v.get("type") == "cpu") and current(v) and \
                v.get("threads") == _core.get_num_threads():
            out.append(float(v[field]))
    return out


def _boot_time() -> Optional[int]:
    try:
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith("btime "):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def processor_name() -> str:
    """The host processor's model name (/proc/cpuinfo; the platform's word elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


# how the host's memory ceiling is measured: a host entry stored by another method is measured again (the triad
# over 4 KiB pages read 0.68-0.75x of the huge-page one on a 2-vCPU EPYC VM)
# (stores as the CPU device's element-wise ops store an output of that size: streaming ones from a size measured per
# processor, where regular stores read 0.6-0.75x on an Emerald Rapids VM; an entry stored by the other kind is
# measured again)
HOST_STREAM_METHOD = "STREAM triad, float64, all threads, huge pages" + \
    (", streaming stores" if _core._stream_output(128 << 20) else "")


def current(entry: Dict[str, Any]) -> bool:
    """Whether a stored ceiling still holds: measured since the machine's last boot (a VM may come back on other
    hardware) on the same processor, and a host memory ceiling by the current method. Entries that do not say
    (older files) are taken as they are, but for that method."""
    boot, proc = entry.get("boot"), entry.get("processor")
    if boot is not None and boot != _boot_time():
        return False
    if str(entry.get("mem_method", "")).startswith("STREAM") and entry.get("mem_method") != HOST_STREAM_METHOD:
        return False
    return proc is None or proc == processor_name()


def on_host(device: Device) -> bool:
    """Whether ``device`` computes on the host's processor (the CPU device, a CPU-type OpenCL device such as PoCL):
    the host's ceilings bound it; an accelerator has ceilings of its own."""
    return device.kind == "cpu" or device.type == "cpu"


def fp32_peak_gflops(device: Device) -> Optional[float]:
    """The measured FP32 ceiling of ``device``: for a GPU what `bench peak` stored for it (None before that); for
    the CPU device and CPU-type OpenCL devices the best of the host's native FMA loop and what `bench peak` stored
    for the same processor (a ceiling is the best rate measured: noise only lowers a measurement)."""
    if on_host(device):
        return host_peak_gflops()
    stored = stored_peaks().get(_key(device))
    return float(stored["fp32_gflops"]) if stored and stored.get("fp32_gflops") and current(stored) else None


def share(gflops: float, peak: Optional[float]) -> float:
    """gflops / peak, NaN when either is unknown. A share above 1 is a measurement error and is reported as such."""
    if not peak or gflops is None or math.isnan(gflops):
        return math.nan
    return gflops / peak


def mem_peak_gbps(device: Device) -> Optional[float]:
    """The measured memory ceiling of ``device`` (GB/s): for a GPU the triad `bench peak` stored (None before that);
    for the CPU device and CPU-type OpenCL devices the best of the host's STREAM triad and the triads stored for the
    same processor (PoCL's triad kernel alone read 27 GB/s where STREAM read 32, and a pooling backward at 33 was
    flagged as an error)."""
    if on_host(device):
        return max([stream_gbps(), *_host_cpu_peaks("mem_gbps")])
    stored = stored_peaks().get(_key(device))
    return float(stored["mem_gbps"]) if stored and stored.get("mem_gbps") and current(stored) else None


def host_cache_size() -> int:
    """Bytes of the host's last-level cache: the CPU device's figure, else sysconf (0 when unknown)."""
    from .. import devices

    cpu = next((d for d in devices() if d.kind == "cpu"), None)
    if cpu is not None and cpu.cache_size:
        return cpu.cache_size
    try:
        return int(os.sysconf("SC_LEVEL3_CACHE_SIZE")) or int(os.sysconf("SC_LEVEL2_CACHE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 0


# A figure more than this factor above its measured ceiling is a measurement error (an unsynchronised timer, work
# skipped, a wrong FLOP or byte count), not a result: the ceilings themselves vary by a few percent between runs.
CEILING_TOLERANCE = 1.10
# The host's STREAM triad counts 12 bytes an element while its stores first read their cache line: 16 bytes cross
# the memory bus. A read-mostly kernel (pooling reads 4 bytes for each it writes) counts nearly every byte it moves,
# so it may reach 16/12 of the triad's figure on the same bus (a CI run: PoCL's pooling at 19.3 GB/s while the
# triad, re-measured three times beside other VMs, read 17.1). Figures are errors only above that.
WRITE_ALLOCATE = 16 / 12


def _under_load(ceiling: float) -> bool:
    """Whether the stored ceiling of this value was measured while the machine was busy (``<field>_under_load``)."""
    if any(v.get(f) == ceiling and v.get(f"{f}_under_load") for v in stored_peaks().values()
           for f in CEILING_FIELDS):
        return True
    if _cache.get("stream_triad:under_load") and _cache.get("stream_triad") == ceiling:
        return True
    seen = _cache.get(f"seen:{_core.get_num_threads()}", {})
    return any(v == ceiling and loaded for v, loaded in seen.values())


def _is_host_fma(ceiling: float) -> bool:
    """Whether ``ceiling`` is one of the host processor's FP32 ceilings at the thread count in force (the native
    loop's, a CPU-type OpenCL device's FMA kernel's, a stored one)."""
    n = _core.get_num_threads()
    return ceiling in _cache.get(f"ever:{n}", set()) or ceiling in _host_cpu_peaks("fp32_gflops")


def check_ceiling(row: Dict[str, Any], key: str, ceiling: Optional[float], what: str,
                  pct: Optional[str] = None, host_memory: Optional[bool] = None) -> bool:
    """Flags ``row[key]`` when it exceeds ``ceiling`` by more than CEILING_TOLERANCE (the host's memory ceiling:
    by more than that times WRITE_ALLOCATE, the triad's uncounted traffic): the row gets ``flagged``
    (the keys, comma-separated; tables print them as "ERR>peak", or "CEIL@load" when the ceiling itself was
    measured under load) and ``ceiling_error`` (why). True when flagged. A figure above the host's memory ceiling
    (the STREAM triad or a triad stored for the host's processor, both a run's best at one moment) first has the
    triad measured again (:func:`remeasure_stream`); when that lifts the ceiling above the figure,
    the row is not flagged and its ``pct`` field (a share of the ceiling) is recomputed. ``host_memory`` True: the
    ceiling bounds the host's memory whatever its value (bench arrays' STREAM-style kernel of the op's access
    pattern, timed in the same rounds: on a Zen 4 hetnn's sum read 1.10x that run's read kernel on a quiet machine, a
    reference, not a bound); None: judged by the value (the STREAM triad, a triad stored for the host's processor).
    A figure above the host's FP32 ceiling is judged against the best rate known for the processor now, and above
    that has the FMA loop measured again (:func:`remeasure_fma`), ``pct`` and ``peak_<key>`` following."""
    v = row.get(key)
    if v is None or ceiling is None or not ceiling or isinstance(v, str) or math.isnan(v) or \
            v <= CEILING_TOLERANCE * ceiling:
        return False
    host = host_memory if host_memory is not None else \
        ceiling in (_cache.get("stream_triad"), *_host_cpu_peaks("mem_gbps"))
    if not host and _is_host_fma(ceiling):  # the host's FMA ceiling: the best known now, else measured again
        ceiling = max(ceiling, host_peak_gflops())
        if v > CEILING_TOLERANCE * ceiling:
            ceiling = max(ceiling, remeasure_fma())
        if pct and pct in row:
            row[pct] = 100 * v / ceiling
            if f"peak_{key}" in row:  # the ceiling the share is of
                row[f"peak_{key}"] = ceiling
        if v <= CEILING_TOLERANCE * ceiling:
            return False
    if host:  # the host's memory: the triad measured again, and its uncounted traffic allowed for
        ceiling = max(ceiling, remeasure_stream())
        if pct and pct in row:
            row[pct] = 100 * v / ceiling
        if v <= CEILING_TOLERANCE * WRITE_ALLOCATE * ceiling:
            return False
    keys = [k for k in str(row.get("flagged") or "").split(",") if k] + [key]
    row["flagged"] = ",".join(dict.fromkeys(keys))
    if _under_load(ceiling):
        row["ceiling_under_load"] = True
        msg = (f"{key} {v:.4g} is {v / ceiling:.2f}x the {what} ({ceiling:.4g}), but that ceiling was measured "
               f"under load: run `python -m hetnn bench peak` on a quiet machine")
    else:
        msg = (f"{key} {v:.4g} is {v / ceiling:.2f}x the measured {what} ({ceiling:.4g}): timing above the "
               f"ceiling, check synchronisation")
    row["ceiling_error"] = "; ".join(x for x in (row.get("ceiling_error"), msg) if x)
    return True


def stream_gbps(mib_per_array: int = 128) -> float:
    """The host's STREAM triad bandwidth (GB/s, STREAM's byte count) with all threads, measured once per process
    over three float64 arrays of ``mib_per_array`` MiB (well beyond the caches). Memory-bound suites report their
    figures as a share of it."""
    if "stream_triad" not in _cache:
        _measure_stream(mib_per_array)
    return float(_cache["stream_triad"])


def _measure_stream(mib_per_array: int = 128) -> None:
    """One STREAM run; the cache keeps the best triad seen in this process (a ceiling is a maximum)."""
    probe = Probe(machine=True)  # as the FMA ceiling: a busy neighbour makes this a lower bound
    start = probe.read()
    copy, triad = _core._stream(mib_per_array << 20, 5)
    load = span_noise(Probe.delta(start, probe.read()))
    probe.close()
    if triad > _cache.get("stream_triad", 0.0):
        _cache["stream_copy"], _cache["stream_triad"] = copy, triad
        _cache["stream_triad:under_load"] = bool(load["others_pct"] > LOAD_PCT or load["steal_pct"] > LOAD_PCT)


def remeasure_stream(tries: int = 3) -> float:
    """The STREAM triad measured ``tries`` more times, the best kept: called when a figure exceeds it. Other
    virtual machines on the host share its memory bus without showing in this one's CPU or steal counters, so one
    run may read low unflagged (a quick bench beside a test run read 14.8 GB/s on a machine whose triad reads
    21.7) and a kernel measured at a quieter moment then looks impossible."""
    for _ in range(max(1, tries)):
        _measure_stream()
    return float(_cache["stream_triad"])


PEAK_COLUMNS = [
    ("device", "device", ""), ("fp32_gflops", "FP32 GFLOP/s", ".1f"), ("fp32_method", "measured by", ""),
    ("mem_gbps", "memory GB/s", ".1f"), ("mem_method", "measured by", ""), ("h2d_gbps", "H2D GB/s", ".1f"),
    ("d2h_gbps", "D2H GB/s", ".1f"),
]


def _store_path() -> Optional[str]:
    from .._cache import cache_dir

    d = cache_dir()
    return None if d is None else os.path.join(d, "peaks.json")


def _key(device: Device) -> str:
    """A device's entry in peaks.json; the host's processor has one per thread count (a ceiling bounds only
    figures measured with as many threads)."""
    key = f"{device.id}|{device.identity}"
    return f"{key}|threads={_core.get_num_threads()}" if on_host(device) else key


def stored_peaks() -> Dict[str, Dict[str, Any]]:
    """The ceilings `bench peak` stored in the cache directory, by device id|name|driver (empty when none)."""
    path = _store_path()
    if not path or not os.path.exists(path):
        return {}
    try:
        if not os.path.isfile(path):  # a FIFO would block open() for ever
            raise ValueError("not a regular file")
        with open(path) as f:
            data = json.load(f)
        if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
            raise ValueError("not a mapping of device ceilings")
        return data
    except (OSError, ValueError) as exc:
        if path not in _warned:
            _warned.add(path)
            import warnings

            warnings.warn(f"hetnn: ignoring the stored ceilings {path} ({exc}); `python -m hetnn bench peak` "
                          f"measures them again", RuntimeWarning, stacklevel=2)
        return {}


def measure_device(device: Device, triad_mib: int = 64, repeats: int = 5) -> Dict[str, Any]:
    """The measured ceilings of one device: FP32 FMA throughput, memory bandwidth (STREAM triad) and, for OpenCL
    devices, host<->device transfer bandwidth at 64 MiB."""
    row: Dict[str, Any] = {"device": device.id, "type": device.type, "name": device.name,
                           "driver": device.driver_version, "boot": _boot_time(), "processor": processor_name()}
    if on_host(device):
        row["threads"] = _core.get_num_threads()
    probe = Probe(machine=True)
    start = probe.read()
    try:
        _measure_into(row, device, triad_mib, repeats)
    finally:
        load = span_noise(Probe.delta(start, probe.read()))
        probe.close()
    # Other processes' CPU or steal during the measurement: the figures are lower bounds, not ceilings.
    row["others_pct"], row["steal_pct"] = load["others_pct"], load["steal_pct"]
    row["under_load"] = bool(load["others_pct"] > LOAD_PCT or load["steal_pct"] > LOAD_PCT)
    if device.kind == "opencl" and on_host(device):  # the same cores: its FMA rate bounds the host's ceiling
        _seen(_core.get_num_threads(), f"{device.id}'s FMA kernel", row["fp32_gflops"], row["under_load"])
    return row


LOAD_PCT = 10.0  # other processes' CPU or steal (percent of the CPUs) above which a ceiling was measured under load


def _measure_into(row: Dict[str, Any], device: Device, triad_mib: int, repeats: int) -> None:
    if device.kind == "cpu":
        row.update(fp32_gflops=cpu_fma_peak_gflops(), fp32_method=f"native FMA loop ({_cache.get('cpu_isa', '?')})",
                   mem_gbps=stream_gbps(), mem_method=HOST_STREAM_METHOD)
        return
    fma, triad = _core._opencl_peak(device._dev, triad_mib << 20, repeats)
    n = 64 << 20
    tr = {d: n / copy_seconds(r)[0] / 1e9 for d, r in
          measure_copies(device, n, n_warmup=1, n_repeat=repeats, max_duration=1.0).items()}
    row.update(fp32_gflops=fma, fp32_method="peak.cl fma_peak (events)", mem_gbps=triad,
               mem_method=f"peak.cl triad, float32, {triad_mib} MiB x 3", h2d_gbps=tr.get("h2d"),
               d2h_gbps=tr.get("d2h"))


CEILING_FIELDS = ("fp32_gflops", "mem_gbps", "h2d_gbps", "d2h_gbps")


def _keep_best(old: Dict[str, Any], new: Dict[str, Any]) -> Dict[str, Any]:
    """The stored entry after a new measurement: each ceiling is the best measured (a busy neighbour only lowers a
    run, so a lower figure never replaces a higher one), with the date it was measured (``<field>_date``). A
    measurement under load is never stored (its figures are lower bounds, not ceilings); an entry from before the
    machine's boot or of another processor is replaced whole."""
    if new.get("under_load"):
        return dict(old)
    if old and not current(old):
        old = {}
    out = dict(new)
    for f in CEILING_FIELDS:
        before, after = old.get(f), new.get(f)
        if isinstance(before, (int, float)) and (not isinstance(after, (int, float)) or before > after):
            out[f] = before
            out[f"{f}_date"] = old.get(f"{f}_date", old.get("date"))
            out[f"{f}_under_load"] = bool(old.get(f"{f}_under_load"))  # older files stored busy figures
        elif after is not None:
            out[f"{f}_date"] = new.get("date")
            out[f"{f}_under_load"] = False
    return out


def measure_missing(devices: Sequence[Device], say: Optional[Callable[[str], None]] = None) -> List[Device]:
    """Measures and stores the ceilings of the accelerators (OpenCL devices that are not CPUs) among ``devices``
    that have none stored, so that a suite's "% peak" columns and summaries have their own device's ceiling to
    compare with rather than none (the host's ceilings are measured wherever they are needed). Returns them."""
    stored = stored_peaks()
    todo = [d for d in devices if not on_host(d) and not (stored.get(_key(d), {}).get("mem_gbps") and
                                                          current(stored[_key(d)]))]
    if todo and _store_path():
        if say:
            say(f"measuring the ceilings of {', '.join(d.id for d in todo)} (none stored; `python -m hetnn bench "
                f"peak` measures them again)")
        run_peak(todo)
    return todo


def run_peak(devices: Sequence[Device], store: bool = True,
             progress: Optional[Callable[[str], None]] = None) -> List[Dict[str, Any]]:
    """Measures every device's ceilings and stores them in the cache directory (peaks.json), where the other
    suites find them for their "% of peak" columns."""
    rows = []
    expect(progress, len(devices))
    for dev in devices:
        if progress:
            progress(f"ceilings of {dev.id}")
        # the previous measurement's OpenMP workers keep spinning for a while after it: on a small machine they
        # take a core from the next one (seen here: PoCL's FMA kernel at exactly 0.50x the native loop when run
        # right after it, 0.99x after a pause)
        quiesce(max_wait=0.5)
        rows.append(measure_device(dev))
    path = _store_path()
    if store and path:
        data = stored_peaks()
        now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        for dev, r in zip(devices, rows):
            entry = _keep_best(data.get(_key(dev), {}), {**r, "date": now})
            if entry:
                data[_key(dev)] = entry
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _core.write_file_atomic(path, json.dumps(data, indent=1).encode())  # readers see the old or the new file
    return rows
