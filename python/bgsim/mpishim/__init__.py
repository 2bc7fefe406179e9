"""The simulated MPI behind ``bgsim.MPI`` (the mpi4py-compatible module),
split by concept; each module imports only those before it in this list:
constants, errors, datatypes, ops, status, buffers, groups, requests,
p2p (sends, receives, probes), collectives, comm (identity and management;
``Comm`` takes the point-to-point and collective methods as mixins), world."""
