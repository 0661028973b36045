// fork() and hetnn: the worker threads of GNU OpenMP's pool and of OpenCL drivers (PoCL) do not exist in a forked
// child, and waiting for them blocked the child forever. A child runs CPU ops on one thread and refuses OpenCL
// devices with an error naming multiprocessing's 'spawn' start method.
#pragma once

namespace hetnn {

// True in a process forked from one that had loaded hetnn.
bool forked_child();

}  // namespace hetnn
