#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, n; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &n);
    double buf[1024] = {0}, in[1024];
    int right = (r + 1) % n, left = (r + n - 1) % n;
    /* ring */
    if (r == 0) { MPI_Send(buf, 10, MPI_DOUBLE, right, 1, MPI_COMM_WORLD); MPI_Recv(in, 10, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
    else { MPI_Recv(in, 10, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(buf, 10, MPI_DOUBLE, right, 1, MPI_COMM_WORLD); }
    /* halo: both neighbours, nonblocking */
    MPI_Request q[4];
    double a[512], b[512];
    MPI_Irecv(in, 512, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &q[0]);
    MPI_Irecv(in + 512, 512, MPI_DOUBLE, right, 3, MPI_COMM_WORLD, &q[1]);
    MPI_Isend(a, 512, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &q[2]);
    MPI_Isend(b, 512, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, &q[3]);
    MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
    double s = r, t;
    MPI_Allreduce(&s, &t, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (r == 0) printf("sum %g\n", t);
    MPI_Finalize();
    return 0;
}
