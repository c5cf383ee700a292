"""The only package that touches CUDA: GPU targets and their drivers (filled by later work)."""
