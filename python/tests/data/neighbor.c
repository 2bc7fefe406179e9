/* Neighbourhood collectives as a stencil code calls them: on a periodic
 * 2x2 Cartesian grid (both neighbours in a dimension are one rank) an
 * MPI_Neighbor_alltoallv whose blocks differ by direction, on a
 * non-periodic 1-D grid an MPI_Neighbor_allgather (the ends have
 * MPI_PROC_NULL neighbours), and on a distributed graph an
 * MPI_Ineighbor_alltoall overlapped with a compute loop. Run on 4 ranks;
 * each prints what it received. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);

    MPI_Comm grid, line, graph;
    int dims[2] = {2, 2}, periods[2] = {1, 1};
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
    /* Direction k (-x, +x, -y, +y) sends 100 (k + 1) doubles. */
    static double sbuf[1000], rbuf[1000];
    int sc[4], sd[4], rc[4], rd[4];
    for (int k = 0, at = 0; k < 4; at += sc[k], k++) { sc[k] = 100 * (k + 1); sd[k] = at; }
    /* From direction k comes what the neighbour sent the other way. */
    for (int k = 0, at = 0; k < 4; at += rc[k], k++) { rc[k] = 100 * ((k ^ 1) + 1); rd[k] = at; }
    for (int i = 0; i < 1000; i++) sbuf[i] = r;
    MPI_Neighbor_alltoallv(sbuf, sc, sd, MPI_DOUBLE, rbuf, rc, rd, MPI_DOUBLE, grid);

    int open = 0, mine = r, got[2] = {-1, -1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, &n, &open, 0, &line);
    MPI_Neighbor_allgather(&mine, 1, MPI_INT, got, 1, MPI_INT, line);

    int src = (r + n - 1) % n, dst = (r + 1) % n;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &src, MPI_UNWEIGHTED, 1, &dst, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &graph);
    static char out[8192], in[8192];
    MPI_Request q;
    MPI_Ineighbor_alltoall(out, sizeof out, MPI_CHAR, in, sizeof in, MPI_CHAR, graph, &q);
    double x = 0;
    for (int i = 0; i < 100000; i++) x += i * 1e-9;
    MPI_Wait(&q, MPI_STATUS_IGNORE);

    printf("neighbor rank %d: from -x %g, line %d %d, %g\n", r, rbuf[0], got[0], got[1], x);
    MPI_Comm_free(&graph);
    MPI_Comm_free(&line);
    MPI_Comm_free(&grid);
    MPI_Finalize();
    return 0;
}
