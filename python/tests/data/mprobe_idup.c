/* Matched probes and MPI_Comm_idup for bgsim's recorder test: rank 1
 * sends rank 0 two messages with one tag, 32 and 16,384 bytes; rank 0
 * takes the first with MPI_Mprobe (any source), the second with an
 * MPI_Improbe loop, receives the second first (MPI_Imrecv) and the first
 * after it (MPI_Mrecv), and takes and receives a message from
 * MPI_PROC_NULL. Then every rank makes a duplicate of MPI_COMM_WORLD with
 * MPI_Comm_idup, waits for it and runs a barrier on it. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank;
    static int small[8], big[4096];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1) {
        for (int i = 0; i < 8; i++) small[i] = 1;
        for (int i = 0; i < 4096; i++) big[i] = 2;
        MPI_Send(small, 8, MPI_INT, 0, 5, MPI_COMM_WORLD);
        MPI_Send(big, 4096, MPI_INT, 0, 5, MPI_COMM_WORLD);
    } else if (rank == 0) {
        MPI_Message first, second, none;
        MPI_Status st;
        MPI_Request r;
        int found = 0;
        MPI_Mprobe(MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &first, &st);
        while (!found) MPI_Improbe(1, 5, MPI_COMM_WORLD, &found, &second, &st);
        MPI_Imrecv(big, 4096, MPI_INT, &second, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Mrecv(small, 8, MPI_INT, &first, MPI_STATUS_IGNORE);
        MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &none, &st);
        MPI_Mrecv(NULL, 0, MPI_INT, &none, MPI_STATUS_IGNORE);
        printf("matched %d %d\n", small[7], big[4095]);
    }
    MPI_Comm dup;
    MPI_Request made;
    MPI_Comm_idup(MPI_COMM_WORLD, &dup, &made);
    MPI_Wait(&made, MPI_STATUS_IGNORE);
    MPI_Barrier(dup);
    MPI_Comm_free(&dup);
    MPI_Finalize();
    return 0;
}
