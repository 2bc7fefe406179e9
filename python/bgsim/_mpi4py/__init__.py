"""The package path of bgsim's simulated ``mpi4py`` (``mpi4py.__path__``):
``import mpi4py.util.pkl5`` and ``mpi4py.util.dtlib`` load from here during
a run. ``mpi4py`` itself and ``mpi4py.MPI`` are set up by
``bgsim.program`` for the duration of a run."""
