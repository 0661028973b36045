import pytest

import hetnn


def test_exception_hierarchy():
    assert issubclass(hetnn.OpenCLError, hetnn.HetnnError)
    assert issubclass(hetnn.CompileError, hetnn.HetnnError)
    assert issubclass(hetnn.HetnnError, RuntimeError)


def test_compile_error_carries_build_log(opencl_device):
    src = "__kernel void broken(__global float* x) { x[0] = undefined_symbol + ; }"
    with pytest.raises(hetnn.CompileError) as ei:
        hetnn._core._build_opencl(opencl_device._dev, src, "")
    e = ei.value
    assert "undefined_symbol" in e.log or "error" in e.log.lower()
    assert e.kernel == "<source>" and e.device == opencl_device.name
    assert e.log in str(e)


def test_valid_source_builds(opencl_device):
    hetnn._core._build_opencl(opencl_device._dev, "__kernel void ok(__global float* x) { x[0] = 1.0f; }", "")


def test_bad_build_options_raise_compile_error(opencl_device):
    with pytest.raises(hetnn.CompileError):
        hetnn._core._build_opencl(opencl_device._dev, "__kernel void ok(__global float* x) {}", "-not-an-option")


def test_opencl_status_becomes_typed_error():
    if not hetnn._core.with_opencl:
        pytest.skip("built without OpenCL")
    with pytest.raises(hetnn.OpenCLError) as ei:
        hetnn._core._raise_opencl_status(-54, "clEnqueueNDRangeKernel(gemm)")
    e = ei.value
    assert e.status == -54 and e.status_name == "CL_INVALID_WORK_GROUP_SIZE"
    assert e.call == "clEnqueueNDRangeKernel(gemm)" and "CL_INVALID_WORK_GROUP_SIZE" in str(e)
    with pytest.raises(MemoryError):
        hetnn._core._raise_opencl_status(-4, "clCreateBuffer")


def test_build_opencl_on_cpu_device_is_value_error():
    with pytest.raises(ValueError):
        hetnn._core._build_opencl(hetnn.device("cpu")._dev, "", "")
