/* One-sided patterns: fence epochs with put/get/accumulate, a counter
 * under locks, post-start-complete-wait with a neighbour. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double mem[1024] = {0}, buf[1024];
    for (int i = 0; i < 1024; i++) buf[i] = rank;
    MPI_Win win;
    MPI_Win_create(mem, sizeof mem, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int it = 0; it < 3; it++) {
        MPI_Win_fence(0, win);
        MPI_Put(buf, 512, MPI_DOUBLE, right, 0, 512, MPI_DOUBLE, win);
        MPI_Accumulate(buf, 8, MPI_DOUBLE, 0, 1000, 8, MPI_DOUBLE, MPI_SUM, win);
        MPI_Win_fence(0, win);
        MPI_Get(buf + 512, 256, MPI_DOUBLE, left, 0, 256, MPI_DOUBLE, win);
        MPI_Win_fence(0, win);
    }
    int *counter;
    MPI_Win cwin;
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &counter, &cwin);
    *counter = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    int one = 1, got, total = 0;
    for (int i = 0; i < 4; i++) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, cwin);
        MPI_Fetch_and_op(&one, &got, MPI_INT, 0, 0, MPI_SUM, cwin);
        MPI_Win_unlock(0, cwin);
        total += got;
    }
    MPI_Group wg, g;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    if (rank % 2 == 0 && rank + 1 < size) {
        MPI_Group_incl(wg, 1, &right, &g);
        MPI_Win_start(g, 0, win);
        MPI_Put(buf, 128, MPI_DOUBLE, right, 0, 128, MPI_DOUBLE, win);
        MPI_Win_complete(win);
        MPI_Group_free(&g);
    } else if (rank % 2 == 1) {
        MPI_Group_incl(wg, 1, &left, &g);
        MPI_Win_post(g, 0, win);
        MPI_Win_wait(win);
        MPI_Group_free(&g);
    }
    MPI_Group_free(&wg);
    MPI_Win_free(&cwin);
    MPI_Win_free(&win);
    double sum = 0;
    MPI_Allreduce(&mem[1000], &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("fetch_and_op total on rank 0: %d, accumulated %.0f\n", total, mem[1000]);
    MPI_Finalize();
    return 0;
}
