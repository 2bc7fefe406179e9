/* Point-to-point messages of derived datatypes, as a stencil code sends
 * the faces of its block: a column of a row-major matrix (MPI_Type_vector:
 * gaps between its elements), every other row of it (a vector of rows), a
 * struct with a hole (gaps inside an element), a contiguous type (no gaps)
 * and a resized one, through Send/Recv, Isend/Irecv, Sendrecv and
 * persistent requests, then collectives of them: a Bcast and an
 * Allreduce (one datatype), an Alltoall, a Gather and an Allgatherv (a
 * derived datatype on one side), a Reduce_scatter_block, a
 * Reduce_scatter, a Neighbor_alltoall, and a Put, a Get and an
 * Accumulate of a column. Run on 4 ranks, in pairs (0-1, 2-3) for point to point;
 * each prints the sum of what it received. */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>

#define N 64

struct particle { double x; int id; }; /* 12 bytes of data, 16 of extent */

/* A reduction that keeps what the receive buffer holds. */
static void keep_inout(void *in, void *inout, int *len, MPI_Datatype *t) {
    (void)in; (void)inout; (void)len; (void)t;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    int peer = r ^ 1;
    static double a[N][N], b[N][N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) a[i][j] = r + i + j;

    MPI_Datatype column, rows, contig, part, resized;
    MPI_Type_vector(N, 1, N, MPI_DOUBLE, &column);
    MPI_Type_commit(&column);
    MPI_Type_vector(N / 2, N, 2 * N, MPI_DOUBLE, &rows);
    MPI_Type_commit(&rows);
    MPI_Type_contiguous(N, MPI_DOUBLE, &contig);
    MPI_Type_commit(&contig);
    int lens[2] = {1, 1};
    MPI_Aint displs[2] = {offsetof(struct particle, x), offsetof(struct particle, id)};
    MPI_Datatype types[2] = {MPI_DOUBLE, MPI_INT};
    MPI_Type_create_struct(2, lens, displs, types, &part);
    MPI_Type_create_resized(part, 0, sizeof(struct particle), &resized);
    MPI_Type_commit(&resized);

    /* A column each way: blocking. */
    if (r % 2 == 0) {
        MPI_Send(&a[0][1], 1, column, peer, 1, MPI_COMM_WORLD);
        MPI_Recv(&b[0][0], 1, column, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(&b[0][0], 1, column, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&a[0][1], 1, column, peer, 1, MPI_COMM_WORLD);
    }
    /* Every other row, and a contiguous block of rows: nonblocking. */
    MPI_Request q[4];
    MPI_Irecv(&b[0][0], 1, rows, peer, 2, MPI_COMM_WORLD, &q[0]);
    MPI_Irecv(&b[1][0], 2, contig, peer, 3, MPI_COMM_WORLD, &q[1]);
    MPI_Isend(&a[0][0], 1, rows, peer, 2, MPI_COMM_WORLD, &q[2]);
    MPI_Isend(&a[1][0], 2, contig, peer, 3, MPI_COMM_WORLD, &q[3]);
    MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
    /* Particles with a hole in each: Sendrecv. */
    struct particle ps[100], pr[100];
    for (int i = 0; i < 100; i++) { ps[i].x = r; ps[i].id = i; }
    MPI_Sendrecv(ps, 100, resized, peer, 4, pr, 100, resized, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    /* Columns again, through persistent requests, twice. */
    MPI_Request p[2];
    MPI_Recv_init(&b[0][2], 1, column, peer, 5, MPI_COMM_WORLD, &p[0]);
    MPI_Send_init(&a[0][3], 1, column, peer, 5, MPI_COMM_WORLD, &p[1]);
    for (int k = 0; k < 2; k++) {
        MPI_Startall(2, p);
        MPI_Waitall(2, p, MPI_STATUSES_IGNORE);
    }
    MPI_Request_free(&p[0]);
    MPI_Request_free(&p[1]);
    double sum = 0;
    /* Collectives of one datatype: rank 0's particles to all, and an
     * allreduce of a column with an operation of the program's own (MPI's
     * predefined ones take predefined datatypes only). */
    MPI_Bcast(ps, 100, resized, 0, MPI_COMM_WORLD);
    MPI_Op keep;
    MPI_Op_create(keep_inout, 1, &keep);
    MPI_Allreduce(&a[0][4], &b[0][5], 1, column, keep, MPI_COMM_WORLD);
    MPI_Op_free(&keep);
    /* Collectives of two datatypes: a transpose's all-to-all (16 doubles to
     * each rank, received as a column of a 16x4 matrix: a vector resized to
     * one double's extent), and a gather of every rank's column at rank 0. */
    static double tsend[4][16], trecv[16][4], gathered[4][N];
    MPI_Datatype col4, col4r;
    MPI_Type_vector(16, 1, 4, MPI_DOUBLE, &col4);
    MPI_Type_create_resized(col4, 0, sizeof(double), &col4r);
    MPI_Type_commit(&col4r);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 16; j++) tsend[i][j] = 100 * r + j;
    MPI_Alltoall(tsend, 16, MPI_DOUBLE, trecv, 1, col4r, MPI_COMM_WORLD);
    MPI_Gather(&a[0][6], 1, column, gathered, N, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    /* And every rank's column at every rank, as a v-collective. */
    static double everyone[4][N];
    int vc[4] = {N, N, N, N}, vd[4] = {0, N, 2 * N, 3 * N};
    MPI_Allgatherv(&a[0][7], 1, column, everyone, vc, vd, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int j = 0; j < N; j++) sum += everyone[2][j];
    /* A column scattered reduced (an element each), and one-sided: a
     * column put into the next rank's window and one got back. */
    MPI_Datatype col16;
    MPI_Type_vector(16, 1, N, MPI_DOUBLE, &col16);
    MPI_Type_commit(&col16);
    MPI_Op_create(keep_inout, 1, &keep);
    MPI_Reduce_scatter_block(&a[0][8], &b[0][8], 1, col16, keep, MPI_COMM_WORLD);
    int ones[4] = {1, 1, 1, 1};
    MPI_Reduce_scatter(&a[0][0], &b[0][11], ones, col16, keep, MPI_COMM_WORLD);
    MPI_Op_free(&keep);
    /* A stencil's neighbour exchange on a periodic 2x2 grid: a column of
     * 16 doubles to each of the four neighbours, received back to back. */
    MPI_Comm grid;
    int dims[2] = {2, 2}, periods[2] = {1, 1};
    static double faces[4][16];
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
    MPI_Neighbor_alltoall(&a[0][0], 1, col16, faces, 16, MPI_DOUBLE, grid);
    MPI_Comm_free(&grid);
    MPI_Win win;
    static double exposed[N];
    MPI_Win_create(exposed, sizeof exposed, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    MPI_Put(&a[0][9], 1, column, (r + 1) % 4, 0, N, MPI_DOUBLE, win);
    MPI_Win_fence(0, win);
    MPI_Get(&b[0][10], 1, column, (r + 3) % 4, 0, N, MPI_DOUBLE, win);
    MPI_Win_fence(0, win);
    MPI_Accumulate(&a[0][12], 1, column, (r + 1) % 4, 0, N, MPI_DOUBLE, MPI_SUM, win);
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);
    MPI_Type_free(&col16);
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 4; j++) sum += trecv[i][j];
    if (r == 0)
        for (int j = 0; j < N; j++) sum += gathered[3][j];
    MPI_Type_free(&col4);
    MPI_Type_free(&col4r);

    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) sum += b[i][j];
    for (int i = 0; i < 100; i++) sum += pr[i].x + pr[i].id + ps[i].x;
    printf("rank %d received sum %.0f\n", r, sum);
    MPI_Type_free(&column);
    MPI_Type_free(&rows);
    MPI_Type_free(&contig);
    MPI_Type_free(&part);
    MPI_Type_free(&resized);
    MPI_Finalize();
    return 0;
}
