/* Request-based one-sided operations in a passive-target epoch, and
 * cancelled requests: a receive no message ever matches (its cancel
 * succeeds), a receive whose message came first (its cancel does not). */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double mem[512] = {0}, out[256], in[256], res[8];
    for (int i = 0; i < 256; i++) out[i] = rank + 1;
    MPI_Win win;
    MPI_Win_create(mem, sizeof mem, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Request q[4];
    MPI_Win_lock_all(0, win);
    MPI_Rput(out, 256, MPI_DOUBLE, right, 0, 256, MPI_DOUBLE, win, &q[0]);
    MPI_Rget(in, 128, MPI_DOUBLE, left, 256, 128, MPI_DOUBLE, win, &q[1]);
    MPI_Raccumulate(out, 8, MPI_DOUBLE, 0, 400, 8, MPI_DOUBLE, MPI_SUM, win, &q[2]);
    MPI_Rget_accumulate(out, 8, MPI_DOUBLE, res, 8, MPI_DOUBLE, 0, 500, 8, MPI_DOUBLE, MPI_SUM, win, &q[3]);
    MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);

    /* A receive nothing matches: cancelled. */
    MPI_Request r;
    MPI_Status st;
    int buf[64], flag = 0, never = 0, came = 0;
    MPI_Irecv(buf, 64, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &never);
    /* A receive whose message is in before the cancel: not cancelled. */
    if (rank == 1) {
        MPI_Irecv(buf, 64, MPI_INT, 2, 7, MPI_COMM_WORLD, &r);
        MPI_Barrier(MPI_COMM_WORLD);
        while (!flag) MPI_Request_get_status(r, &flag, MPI_STATUS_IGNORE);
        MPI_Cancel(&r);
        MPI_Wait(&r, &st);
        MPI_Test_cancelled(&st, &came);
        came = !came;
    } else {
        if (rank == 2) MPI_Send(out, 64, MPI_INT, 1, 7, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_free(&win);
    if (rank == 1) printf("cancelled %d received %d\n", never, came);
    MPI_Finalize();
    return 0;
}
