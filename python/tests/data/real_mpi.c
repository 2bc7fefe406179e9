/* What real codes call, for the recorder and replay tests: a Cartesian
 * grid and its row communicators, a node split, halo exchanges with
 * Waitany/Waitsome, wildcard receives, probes, persistent requests, the
 * send modes, v-collectives, scans and a reduce-scatter. Run on 4 ranks
 * (2x2 grid); prints one line from rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    double buf[2048] = {0}, in[2048];

    /* A 2-D periodic grid, and its rows. */
    int dims[2] = {0, 0}, periods[2] = {1, 1}, remain[2] = {0, 1};
    MPI_Dims_create(n, 2, dims);
    MPI_Comm grid, row, half, dup;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
    MPI_Cart_sub(grid, remain, &row);
    int gr, rr, rn;
    MPI_Comm_rank(grid, &gr);
    MPI_Comm_rank(row, &rr);
    MPI_Comm_size(row, &rn);

    /* Halo on the grid: four neighbours, completed one at a time by Waitany. */
    MPI_Request q[8];
    int nb[4];
    MPI_Cart_shift(grid, 0, 1, &nb[0], &nb[1]);
    MPI_Cart_shift(grid, 1, 1, &nb[2], &nb[3]);
    for (int d = 0; d < 4; d++) {
        MPI_Irecv(in + 256 * d, 256, MPI_DOUBLE, nb[d], d ^ 1, grid, &q[d]);
        MPI_Isend(buf + 256 * d, 256, MPI_DOUBLE, nb[d], d, grid, &q[4 + d]);
    }
    for (int k = 0; k < 4; k++) { int i; MPI_Waitany(4, q, &i, MPI_STATUS_IGNORE); }
    int out = 0;
    while (out != MPI_UNDEFINED) { int idx[4]; MPI_Waitsome(4, q + 4, &out, idx, MPI_STATUSES_IGNORE); }

    /* Tiny sends that complete at once: an MPI may hand them all the same
     * request object (Open MPI does). */
    MPI_Request tiny[8];
    double one = r, got[4];
    for (int d = 0; d < 4; d++) {
        MPI_Isend(&one, 1, MPI_DOUBLE, nb[d], 20 + d, grid, &tiny[d]);
        MPI_Irecv(&got[d], 1, MPI_DOUBLE, nb[d], 20 + (d ^ 1), grid, &tiny[4 + d]);
    }
    MPI_Waitall(8, tiny, MPI_STATUSES_IGNORE);

    /* A row allreduce and a world scan. */
    double s = r, t = 0, sc = 0;
    MPI_Allreduce(&s, &t, 1, MPI_DOUBLE, MPI_SUM, row);
    MPI_Scan(&s, &sc, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

    /* Rank 0 receives from everybody in whatever order they come. */
    if (r == 0) {
        for (int k = 1; k < n; k++) {
            MPI_Status st;
            MPI_Probe(MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &st);
            int c;
            MPI_Get_count(&st, MPI_DOUBLE, &c);
            MPI_Recv(in, c, MPI_DOUBLE, st.MPI_SOURCE, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        MPI_Request w[3];
        for (int k = 0; k < n - 1; k++) MPI_Irecv(in + 64 * k, 64, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &w[k]);
        MPI_Waitall(n - 1, w, MPI_STATUSES_IGNORE);
    } else {
        MPI_Ssend(buf, 10 * r, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
        MPI_Send(buf, 64, MPI_DOUBLE, 0, 10 + r, MPI_COMM_WORLD);
    }

    /* Persistent ring on a duplicate of the world, three rounds. */
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Request p[2];
    MPI_Recv_init(in, 128, MPI_DOUBLE, (r + n - 1) % n, 5, dup, &p[0]);
    MPI_Send_init(buf, 128, MPI_DOUBLE, (r + 1) % n, 5, dup, &p[1]);
    for (int k = 0; k < 3; k++) { MPI_Startall(2, p); MPI_Waitall(2, p, MPI_STATUSES_IGNORE); }
    MPI_Request_free(&p[0]);
    MPI_Request_free(&p[1]);

    /* v-collectives and a reduce-scatter on halves of the world. */
    MPI_Comm_split(MPI_COMM_WORLD, r % 2, -r, &half);
    int hn, hr;
    MPI_Comm_size(half, &hn);
    MPI_Comm_rank(half, &hr);
    int *cnt = malloc(hn * sizeof *cnt), *dis = malloc(hn * sizeof *dis), *mine = malloc(hn * sizeof *mine);
    for (int i = 0; i < hn; i++) { cnt[i] = 8 * (i + 1); dis[i] = 16 * i; }
    for (int i = 0; i < hn; i++) mine[i] = cnt[hr];
    MPI_Allgatherv(buf, cnt[hr], MPI_DOUBLE, in, cnt, dis, MPI_DOUBLE, half);
    MPI_Gatherv(buf, cnt[hr], MPI_DOUBLE, in, cnt, dis, MPI_DOUBLE, 0, half);
    MPI_Alltoallv(buf, mine, dis, MPI_DOUBLE, in, cnt, dis, MPI_DOUBLE, half);
    MPI_Reduce_scatter(buf, in, cnt, MPI_DOUBLE, MPI_MAX, half);
    MPI_Bcast(buf, 100, MPI_INT, hn - 1, half);
    MPI_Gather(buf, 4, MPI_DOUBLE, in, 4, MPI_DOUBLE, 1, row);
    MPI_Scatter(buf, 4, MPI_DOUBLE, in, 4, MPI_DOUBLE, 0, row);
    MPI_Alltoall(buf, 2, MPI_DOUBLE, in, 2, MPI_DOUBLE, grid);

    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&row);
    MPI_Comm_free(&grid);
    MPI_Barrier(MPI_COMM_WORLD);
    if (r == 0) printf("row sum %g scan %g\n", t, sc);
    free(cnt);
    free(dis);
    free(mine);
    MPI_Finalize();
    return 0;
}
