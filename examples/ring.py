"""Pass a token around a ring of all ranks; each rank adds its rank number.

    bgsim run --shape 4x4x2 examples/ring.py
"""
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
left, right = (rank - 1) % size, (rank + 1) % size

comm.Barrier()
t0 = MPI.Wtime()
if rank == 0:
    comm.send(0, dest=right, tag=1)
    total = comm.recv(source=left, tag=1)
    elapsed = MPI.Wtime() - t0
    print(f"ring of {size} ranks: token total {total} (expected {size * (size - 1) // 2})")
    print(f"one lap took {elapsed * 1e6:.1f} us, {elapsed / size * 1e6:.2f} us per hop of the ring")
else:
    token = comm.recv(source=left, tag=1)
    comm.send(token + rank, dest=right, tag=1)
