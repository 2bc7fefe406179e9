/* Collectives on an intercommunicator: the even and the odd world ranks
 * are the two groups. A broadcast and a gather with MPI_ROOT, an
 * allreduce, an allgatherv of different sizes per rank, an alltoall, a
 * reduce_scatter_block and a nonblocking allreduce. Run on 4 ranks; each
 * prints what it got. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int color = r % 2;
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, color, r, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 9, &inter);
    int me, rsize;
    MPI_Comm_rank(inter, &me);
    MPI_Comm_remote_size(inter, &rsize);

    /* Group 0's rank 0 broadcasts 1000 ints to group 1. */
    static int big[1000];
    if (color == 0) {
        for (int i = 0; i < 1000; i++) big[i] = 7;
        MPI_Bcast(big, 1000, MPI_INT, me == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
    } else {
        MPI_Bcast(big, 1000, MPI_INT, 0, inter);
    }
    /* Group 1's rank 1 gathers 3 doubles from each rank of group 0. */
    double three[3] = {r, r, r}, got[6] = {0};
    if (color == 1) MPI_Gather(NULL, 0, MPI_DOUBLE, got, 3, MPI_DOUBLE, me == 1 ? MPI_ROOT : MPI_PROC_NULL, inter);
    else MPI_Gather(three, 3, MPI_DOUBLE, NULL, 0, MPI_DOUBLE, 1, inter);

    double x = r + 1, sum = 0;
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, inter);

    /* Remote rank k sends k + 1 ints. */
    int mine[2] = {r, r}, all[3], counts[2] = {1, 2}, displs[2] = {0, 1};
    MPI_Allgatherv(mine, me + 1, MPI_INT, all, counts, displs, MPI_INT, inter);

    int out[2] = {r, r}, in[2];
    MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, inter);

    double v[2] = {r, 10 * r}, part = 0;
    MPI_Reduce_scatter_block(v, &part, 1, MPI_DOUBLE, MPI_SUM, inter);

    long w = r, wmax = -1;
    MPI_Request q;
    MPI_Iallreduce(&w, &wmax, 1, MPI_LONG, MPI_MAX, inter, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);

    printf("intercoll rank %d: bcast %d, gather %g %g, sum %g, allgatherv %d %d %d, alltoall %d %d, rsb %g, max %ld\n",
           r, big[999], got[0], got[3], sum, all[0], all[1], all[2], in[0], in[1], part, wmax);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return 0;
}
