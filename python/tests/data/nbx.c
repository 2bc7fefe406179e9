/* Nonblocking collectives as real codes use them: the NBX sparse exchange
 * (synchronous sends, then an MPI_Ibarrier once they are matched, probing
 * for messages until the barrier completes), an MPI_Iallreduce overlapped
 * with a ring exchange, and an MPI_Ibcast completed by MPI_Waitany among
 * point-to-point requests. Each rank prints what it received. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);

    /* NBX: rank r sends 1 KB to r+1 and r+2. */
    static char out[2][1024], in[1024];
    MPI_Request sends[2], barrier = MPI_REQUEST_NULL;
    int dests[2] = {(r + 1) % n, (r + 2) % n}, got = 0, sum = 0, done = 0;
    for (int k = 0; k < 2; k++) {
        memset(out[k], r + 1, sizeof out[k]);
        MPI_Issend(out[k], sizeof out[k], MPI_CHAR, dests[k], 7, MPI_COMM_WORLD, &sends[k]);
    }
    while (!done) {
        int flag = 0;
        MPI_Status st;
        /* Rank 0 receives only once its barrier has started (so one rank
         * surely does: the test relies on it). */
        if (r != 0 || barrier != MPI_REQUEST_NULL) MPI_Iprobe(MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &flag, &st);
        if (flag) {
            MPI_Recv(in, sizeof in, MPI_CHAR, st.MPI_SOURCE, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            got++;
            sum += in[0];
        }
        if (barrier == MPI_REQUEST_NULL) {
            MPI_Testall(2, sends, &flag, MPI_STATUSES_IGNORE);
            if (flag) MPI_Ibarrier(MPI_COMM_WORLD, &barrier);
        } else {
            MPI_Test(&barrier, &done, MPI_STATUS_IGNORE);
        }
    }

    /* An allreduce overlapped with a 64 KB ring exchange. */
    static double ring_out[8192], ring_in[8192];
    double mine = r + 1, total = 0;
    MPI_Request q[3];
    MPI_Iallreduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q[0]);
    MPI_Irecv(ring_in, 8192, MPI_DOUBLE, (r + n - 1) % n, 3, MPI_COMM_WORLD, &q[1]);
    MPI_Isend(ring_out, 8192, MPI_DOUBLE, (r + 1) % n, 3, MPI_COMM_WORLD, &q[2]);
    MPI_Waitall(3, q, MPI_STATUSES_IGNORE);

    /* A broadcast completed among point-to-point requests by Waitany. */
    int word = r == 0 ? 42 : 0, idx;
    MPI_Ibcast(&word, 1, MPI_INT, 0, MPI_COMM_WORLD, &q[0]);
    MPI_Irecv(ring_in, 16, MPI_DOUBLE, (r + n - 1) % n, 4, MPI_COMM_WORLD, &q[1]);
    MPI_Isend(ring_out, 16, MPI_DOUBLE, (r + 1) % n, 4, MPI_COMM_WORLD, &q[2]);
    for (int k = 0; k < 3; k++) MPI_Waitany(3, q, &idx, MPI_STATUS_IGNORE);

    printf("nbx rank %d got %d messages (sum %d), total %g, word %d\n", r, got, sum, total, word);
    MPI_Finalize();
    return 0;
}
