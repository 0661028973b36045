"""Device.cl_handles and Array.cl_buffer: hetnn's OpenCL context, queue, device and buffers as integers that another
OpenCL library uses in place (checked through the OpenCL C API with ctypes, and with PyOpenCL where installed)."""
import ctypes
import ctypes.util

import numpy as np
import pytest

import hetnn

CL_MEM_SIZE, CL_MEM_CONTEXT = 0x1102, 0x1106
CL_QUEUE_CONTEXT, CL_QUEUE_DEVICE = 0x1090, 0x1091


def _libcl():
    name = ctypes.util.find_library("OpenCL") or "libOpenCL.so.1"
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        pytest.skip("no OpenCL ICD loader to call")
    for fn in ("clGetMemObjectInfo", "clGetCommandQueueInfo"):
        getattr(lib, fn).argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_size_t, ctypes.c_void_p,
                                     ctypes.c_void_p]
    lib.clEnqueueWriteBuffer.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_size_t,
                                         ctypes.c_size_t, ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p,
                                         ctypes.c_void_p]
    return lib


def _info(fn, handle, what):
    v = ctypes.c_size_t(0)
    assert fn(handle, what, ctypes.sizeof(v), ctypes.byref(v), None) == 0
    return v.value


def test_the_handles_are_the_devices_own_and_another_library_writes_in_place(opencl_device, rng):
    lib = _libcl()
    h = opencl_device.cl_handles()
    assert set(h) == {"context", "queue", "device"} and all(isinstance(v, int) and v for v in h.values())
    assert _info(lib.clGetCommandQueueInfo, h["queue"], CL_QUEUE_CONTEXT) == h["context"]
    assert _info(lib.clGetCommandQueueInfo, h["queue"], CL_QUEUE_DEVICE) == h["device"]
    a = hetnn.asarray(np.zeros((3, 5), np.float32), device=opencl_device)
    mem = a.cl_buffer
    assert _info(lib.clGetMemObjectInfo, mem, CL_MEM_CONTEXT) == h["context"]
    assert _info(lib.clGetMemObjectInfo, mem, CL_MEM_SIZE) >= a.nbytes
    x = rng.standard_normal((3, 5)).astype(np.float32)
    status = lib.clEnqueueWriteBuffer(h["queue"], mem, 1, 0, x.nbytes, x.ctypes.data, 0, None, None)
    assert status == 0
    np.testing.assert_array_equal(a.numpy(), x)  # hetnn reads what the other library wrote
    np.testing.assert_array_equal((a * 2).numpy(), 2 * x)


def test_a_pyopencl_kernel_works_on_a_hetnn_array(opencl_device, rng):
    cl = pytest.importorskip("pyopencl")
    h = opencl_device.cl_handles()
    ctx = cl.Context.from_int_ptr(h["context"])
    queue = cl.CommandQueue.from_int_ptr(h["queue"])
    x = rng.standard_normal(1000).astype(np.float32)
    a = hetnn.asarray(x, device=opencl_device)
    prg = cl.Program(ctx, "__kernel void twice(__global float* v) { v[get_global_id(0)] *= 2.0f; }").build()
    prg.twice(queue, (1000,), None, cl.Buffer.from_int_ptr(a.cl_buffer))
    np.testing.assert_array_equal(a.numpy(), 2 * x)  # same in-order queue: no extra synchronisation


def test_the_cpu_device_has_no_opencl_handles():
    cpu = hetnn.device("cpu")
    assert cpu.cl_handles() is None
    with pytest.raises(TypeError, match="cl_buffer: the array is on cpu, not an OpenCL device"):
        _ = hetnn.asarray(np.zeros(3, np.float32), device=cpu).cl_buffer
