/* bgsim's MPI call recorder: a PMPI library preloaded into a real MPI
 * program (LD_PRELOAD) that writes, per rank, every MPI call it makes with
 * its arguments and the wall time around it, for `bgsim replay`.
 *
 * One text file per rank, BGSIM_TRACE_DIR/rank-R.trace:
 *   # bgsim-trace 1 rank R size N
 *   T0 T1 CALL ARGS...          (seconds since MPI_Init returned)
 * Calls: send DEST TAG BYTES | recv SRC TAG BYTES | isend DEST TAG BYTES REQ |
 * irecv SRC TAG BYTES REQ | wait REQ | waitall K REQ... |
 * sendrecv DEST STAG SBYTES SRC RTAG RBYTES | barrier | bcast ROOT BYTES |
 * reduce ROOT BYTES TYPE OP | allreduce BYTES TYPE OP | allgather BYTES |
 * alltoall BYTES | gather ROOT BYTES | scatter ROOT BYTES | finalize |
 * unsupported NAME (a call the replay cannot do, e.g. on another
 * communicator than MPI_COMM_WORLD).
 * SRC -1 is MPI_ANY_SOURCE, TAG -1 MPI_ANY_TAG; TYPE is f|i|u followed by
 * the element size (f8: double), OP the operation (sum, max, ...).
 * Built by `bgsim record` with the MPI's own compiler wrapper (mpicc). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *out;
static double t_origin;
static long next_req = 1;
/* Live requests and their ids (a small open list: fine for the programs
 * one traces to study). */
static MPI_Request *live_reqs;
static long *live_ids;
static long nlive, caplive;

static double now(void) { return PMPI_Wtime() - t_origin; }

static long track(MPI_Request r) {
    if (nlive == caplive) {
        caplive = caplive ? 2 * caplive : 256;
        live_reqs = realloc(live_reqs, caplive * sizeof *live_reqs);
        live_ids = realloc(live_ids, caplive * sizeof *live_ids);
        if (!live_reqs || !live_ids) { fprintf(stderr, "bgsim_trace: out of memory\n"); PMPI_Abort(MPI_COMM_WORLD, 1); }
    }
    live_reqs[nlive] = r;
    live_ids[nlive] = next_req;
    nlive++;
    return next_req++;
}

/* The id of a live request, forgotten (0 when it is not ours). */
static long forget(MPI_Request r) {
    for (long i = nlive - 1; i >= 0; i--) {
        if (live_reqs[i] == r) {
            long id = live_ids[i];
            live_reqs[i] = live_reqs[nlive - 1];
            live_ids[i] = live_ids[nlive - 1];
            nlive--;
            return id;
        }
    }
    return 0;
}

static long bytes(int count, MPI_Datatype t) {
    int size = 0;
    PMPI_Type_size(t, &size);
    return (long)count * size;
}

static int world(MPI_Comm c) {
    int result;
    PMPI_Comm_compare(c, MPI_COMM_WORLD, &result);
    return result == MPI_IDENT || result == MPI_CONGRUENT;
}

static int peer(int p) { return p == MPI_ANY_SOURCE ? -1 : p; }
static int tagof(int t) { return t == MPI_ANY_TAG ? -1 : t; }

static void type_code(MPI_Datatype t, char *buf) {
    int size = 0;
    PMPI_Type_size(t, &size);
    char kind = 'u';
    if (t == MPI_DOUBLE || t == MPI_FLOAT || t == MPI_LONG_DOUBLE) kind = 'f';
    else if (t == MPI_INT || t == MPI_LONG || t == MPI_SHORT || t == MPI_LONG_LONG || t == MPI_CHAR || t == MPI_SIGNED_CHAR) kind = 'i';
    sprintf(buf, "%c%d", kind, size);
}

static const char *op_name(MPI_Op op) {
    if (op == MPI_SUM) return "sum";
    if (op == MPI_MAX) return "max";
    if (op == MPI_MIN) return "min";
    if (op == MPI_PROD) return "prod";
    if (op == MPI_BAND) return "band";
    if (op == MPI_BOR) return "bor";
    if (op == MPI_BXOR) return "bxor";
    if (op == MPI_LAND) return "land";
    if (op == MPI_LOR) return "lor";
    return "user";
}

#define UNSUPPORTED(name) do { if (out) fprintf(out, "%.9f %.9f unsupported %s\n", now(), now(), name); } while (0)

int MPI_Init(int *argc, char ***argv) {
    int rc = PMPI_Init(argc, argv);
    int rank, size;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *dir = getenv("BGSIM_TRACE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/rank-%d.trace", dir ? dir : ".", rank);
    out = fopen(path, "w");
    if (!out) { fprintf(stderr, "bgsim_trace: cannot write %s\n", path); PMPI_Abort(MPI_COMM_WORLD, 1); }
    fprintf(out, "# bgsim-trace 1 rank %d size %d\n", rank, size);
    PMPI_Barrier(MPI_COMM_WORLD);
    t_origin = PMPI_Wtime();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    int rc = MPI_Init(argc, argv);
    *provided = MPI_THREAD_SINGLE;
    (void)required;
    return rc;
}

int MPI_Finalize(void) {
    if (out) {
        double t = now();
        fprintf(out, "%.9f %.9f finalize\n", t, t);
        fclose(out);
        out = NULL;
    }
    return PMPI_Finalize();
}

static int send_like(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
                     int (*f)(const void *, int, MPI_Datatype, int, int, MPI_Comm)) {
    double t0 = now();
    int rc = f(buf, count, t, dest, tag, comm);
    if (!world(comm)) UNSUPPORTED("send on another communicator");
    else fprintf(out, "%.9f %.9f send %d %d %ld\n", t0, now(), dest, tag, bytes(count, t));
    return rc;
}

int MPI_Send(const void *b, int c, MPI_Datatype t, int d, int tag, MPI_Comm comm) { return send_like(b, c, t, d, tag, comm, PMPI_Send); }
int MPI_Ssend(const void *b, int c, MPI_Datatype t, int d, int tag, MPI_Comm comm) { return send_like(b, c, t, d, tag, comm, PMPI_Ssend); }
int MPI_Rsend(const void *b, int c, MPI_Datatype t, int d, int tag, MPI_Comm comm) { return send_like(b, c, t, d, tag, comm, PMPI_Rsend); }

int MPI_Recv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm, MPI_Status *st) {
    double t0 = now();
    int rc = PMPI_Recv(buf, count, t, src, tag, comm, st);
    if (!world(comm)) UNSUPPORTED("recv on another communicator");
    else fprintf(out, "%.9f %.9f recv %d %d %ld\n", t0, now(), peer(src), tagof(tag), bytes(count, t));
    return rc;
}

int MPI_Isend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm, MPI_Request *r) {
    double t0 = now();
    int rc = PMPI_Isend(buf, count, t, dest, tag, comm, r);
    if (!world(comm)) UNSUPPORTED("isend on another communicator");
    else fprintf(out, "%.9f %.9f isend %d %d %ld %ld\n", t0, now(), dest, tag, bytes(count, t), track(*r));
    return rc;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm, MPI_Request *r) {
    double t0 = now();
    int rc = PMPI_Irecv(buf, count, t, src, tag, comm, r);
    if (!world(comm)) UNSUPPORTED("irecv on another communicator");
    else fprintf(out, "%.9f %.9f irecv %d %d %ld %ld\n", t0, now(), peer(src), tagof(tag), bytes(count, t), track(*r));
    return rc;
}

int MPI_Wait(MPI_Request *r, MPI_Status *st) {
    double t0 = now();
    long id = forget(*r);
    int rc = PMPI_Wait(r, st);
    if (id) fprintf(out, "%.9f %.9f wait %ld\n", t0, now(), id);
    return rc;
}

int MPI_Waitall(int n, MPI_Request rs[], MPI_Status sts[]) {
    double t0 = now();
    long *ids = malloc((n > 0 ? n : 1) * sizeof *ids);
    int k = 0;
    for (int i = 0; i < n; i++) {
        long id = forget(rs[i]);
        if (id) ids[k++] = id;
    }
    int rc = PMPI_Waitall(n, rs, sts);
    fprintf(out, "%.9f %.9f waitall %d", t0, now(), k);
    for (int i = 0; i < k; i++) fprintf(out, " %ld", ids[i]);
    fputc('\n', out);
    free(ids);
    return rc;
}

int MPI_Test(MPI_Request *r, int *flag, MPI_Status *st) {
    double t0 = now();
    MPI_Request before = *r;
    int rc = PMPI_Test(r, flag, st);
    if (*flag) {
        long id = forget(before);
        if (id) fprintf(out, "%.9f %.9f wait %ld\n", t0, now(), id);
    }
    return rc;
}

int MPI_Sendrecv(const void *sb, int sc, MPI_Datatype st, int dest, int stag, void *rb, int rc_, MPI_Datatype rt,
                 int src, int rtag, MPI_Comm comm, MPI_Status *status) {
    double t0 = now();
    int rc = PMPI_Sendrecv(sb, sc, st, dest, stag, rb, rc_, rt, src, rtag, comm, status);
    if (!world(comm)) UNSUPPORTED("sendrecv on another communicator");
    else fprintf(out, "%.9f %.9f sendrecv %d %d %ld %d %d %ld\n", t0, now(), dest, stag, bytes(sc, st), peer(src),
                 tagof(rtag), bytes(rc_, rt));
    return rc;
}

int MPI_Barrier(MPI_Comm comm) {
    double t0 = now();
    int rc = PMPI_Barrier(comm);
    if (!world(comm)) UNSUPPORTED("barrier on another communicator");
    else fprintf(out, "%.9f %.9f barrier\n", t0, now());
    return rc;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm comm) {
    double t0 = now();
    int rc = PMPI_Bcast(buf, count, t, root, comm);
    if (!world(comm)) UNSUPPORTED("bcast on another communicator");
    else fprintf(out, "%.9f %.9f bcast %d %ld\n", t0, now(), root, bytes(count, t));
    return rc;
}

int MPI_Reduce(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm) {
    double t0 = now();
    char code[16];
    int rc = PMPI_Reduce(sb, rb, count, t, op, root, comm);
    type_code(t, code);
    if (!world(comm)) UNSUPPORTED("reduce on another communicator");
    else fprintf(out, "%.9f %.9f reduce %d %ld %s %s\n", t0, now(), root, bytes(count, t), code, op_name(op));
    return rc;
}

int MPI_Allreduce(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm) {
    double t0 = now();
    char code[16];
    int rc = PMPI_Allreduce(sb, rb, count, t, op, comm);
    type_code(t, code);
    if (!world(comm)) UNSUPPORTED("allreduce on another communicator");
    else fprintf(out, "%.9f %.9f allreduce %ld %s %s\n", t0, now(), bytes(count, t), code, op_name(op));
    return rc;
}

int MPI_Allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc_, MPI_Datatype rt, MPI_Comm comm) {
    double t0 = now();
    int rc = PMPI_Allgather(sb, sc, st, rb, rc_, rt, comm);
    if (!world(comm)) UNSUPPORTED("allgather on another communicator");
    else fprintf(out, "%.9f %.9f allgather %ld\n", t0, now(), bytes(rc_, rt));
    return rc;
}

int MPI_Alltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc_, MPI_Datatype rt, MPI_Comm comm) {
    double t0 = now();
    int rc = PMPI_Alltoall(sb, sc, st, rb, rc_, rt, comm);
    if (!world(comm)) UNSUPPORTED("alltoall on another communicator");
    else fprintf(out, "%.9f %.9f alltoall %ld\n", t0, now(), bytes(rc_, rt));
    return rc;
}

int MPI_Gather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc_, MPI_Datatype rt, int root, MPI_Comm comm) {
    double t0 = now();
    int rc = PMPI_Gather(sb, sc, st, rb, rc_, rt, root, comm);
    if (!world(comm)) UNSUPPORTED("gather on another communicator");
    else fprintf(out, "%.9f %.9f gather %d %ld\n", t0, now(), root, bytes(sc, st));
    return rc;
}

int MPI_Scatter(const void *sb, int sc, MPI_Datatype st, void *rb, int rc_, MPI_Datatype rt, int root, MPI_Comm comm) {
    double t0 = now();
    int rc = PMPI_Scatter(sb, sc, st, rb, rc_, rt, root, comm);
    if (!world(comm)) UNSUPPORTED("scatter on another communicator");
    else fprintf(out, "%.9f %.9f scatter %d %ld\n", t0, now(), root, bytes(rc_, rt));
    return rc;
}

/* Calls with no replay: recorded so that the replay refuses the trace
 * naming them rather than replaying something else. */
int MPI_Waitany(int n, MPI_Request rs[], int *idx, MPI_Status *st) { UNSUPPORTED("MPI_Waitany"); return PMPI_Waitany(n, rs, idx, st); }
int MPI_Waitsome(int n, MPI_Request rs[], int *outc, int idx[], MPI_Status sts[]) { UNSUPPORTED("MPI_Waitsome"); return PMPI_Waitsome(n, rs, outc, idx, sts); }
int MPI_Alltoallv(const void *sb, const int sc[], const int sd[], MPI_Datatype st, void *rb, const int rc_[], const int rd[], MPI_Datatype rt, MPI_Comm comm) {
    UNSUPPORTED("MPI_Alltoallv");
    return PMPI_Alltoallv(sb, sc, sd, st, rb, rc_, rd, rt, comm);
}
