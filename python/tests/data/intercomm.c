/* Intercommunicators: even and odd ranks as two groups, messages between
 * them (by index, and a wildcard receive), a barrier and a dup of the
 * intercommunicator, then the merged communicator's allreduce. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int color = rank % 2;
    MPI_Comm local, inter, dup, merged;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 7, &inter);
    int me, remote;
    MPI_Comm_rank(inter, &me);
    MPI_Comm_remote_size(inter, &remote);
    double out[512], in[512];
    for (int i = 0; i < 512; i++) out[i] = rank;
    MPI_Request q[2];
    MPI_Irecv(in, 512, MPI_DOUBLE, me % remote, 1, inter, &q[0]);
    MPI_Isend(out, 512, MPI_DOUBLE, me % remote, 1, inter, &q[1]);
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    MPI_Barrier(inter);
    MPI_Comm_dup(inter, &dup);
    int got = -1;
    MPI_Status st;
    if (color == 0) {
        MPI_Send(&rank, 1, MPI_INT, (me + 1) % remote, 2, dup);
    } else {
        MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 2, dup, &st);
    }
    MPI_Intercomm_merge(inter, color, &merged);
    int mrank, sum = 0;
    MPI_Comm_rank(merged, &mrank);
    MPI_Allreduce(&mrank, &sum, 1, MPI_INT, MPI_SUM, merged);
    if (rank == 0) printf("merged sum %d\n", sum);
    MPI_Comm_free(&merged);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return 0;
}
