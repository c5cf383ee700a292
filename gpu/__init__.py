"""The only package that touches CUDA: the device layer (kernels, drivers, launchers, guards) and, in ``targets/``,
the GPU targets."""
