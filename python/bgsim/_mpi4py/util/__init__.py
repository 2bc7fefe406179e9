"""``mpi4py.util`` on the simulated MPI: ``pkl5`` and ``dtlib``."""
