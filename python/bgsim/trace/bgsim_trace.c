/* bgsim's MPI call recorder: a PMPI library preloaded into a real MPI
 * program (LD_PRELOAD) that writes, per rank, every MPI call it makes with
 * its arguments and the wall time around it, for `bgsim replay`.
 *
 * One text file per rank, BGSIM_TRACE_DIR/rank-R.trace:
 *   # bgsim-trace 2 rank R size N clock CLOCK
 *   T0 T1 CALL ARGS...          (seconds since MPI_Init returned)
 * CLOCK (BGSIM_TRACE_CLOCK) is cpu, the calling thread's CPU time (the
 * default: the time between two calls is then the rank's compute even
 * when more processes than cores share the machine), or wall.
 *
 * COMM is the rank's number for a communicator: 0 MPI_COMM_WORLD,
 * 1 MPI_COMM_SELF, then 2, 3 ... in the order the rank made them. REQ
 * numbers a request (1, 2 ... never reused). A rank is a rank of COMM;
 * -2 is MPI_PROC_NULL, and in a receive -1 is MPI_ANY_SOURCE / MPI_ANY_TAG.
 * BYTES is a count times its datatype's size (what moves, derived
 * datatypes included); in a point-to-point call, a bcast, reduce,
 * allreduce, scan or exscan whose data do not lie in one run of bytes it
 * is BYTES:COUNT:EXTENT:TRUE_EXTENT (see data()), as in a
 * reduce_scatter_block and at the origin of a put, get or accumulate. A gather, scatter,
 * allgather or alltoall line, its v-form, a reduce_scatter or a
 * neighbourhood collective's line (nonblocking too), ends with
 * send=S:E:T and recv=S:E:T for such buffers: their datatypes' size,
 * extent and true extent (see side()). TYPE is f|i|u|c followed by the element size (f8:
 * double), or b1 for any other type (bytes); OP is sum, max, min, prod,
 * band, bor, bxor, land, lor, lxor, maxloc, minloc, replace or user.
 *
 * Communicators (W... the members' MPI_COMM_WORLD ranks in rank order):
 *   comm_dup PARENT NEW                  MPI_Comm_dup(_with_info)
 *   comm_idup PARENT NEW REQ             MPI_Comm_idup(_with_info)
 *   comm_split PARENT NEW K W1..WK       every constructor collective over
 *       its parent (Split, Split_type, Create, Cart_create, Cart_sub,
 *       Graph_create, Dist_graph_create(_adjacent)); NEW -1, K 0: this rank
 *       got MPI_COMM_NULL
 *   comm_group PARENT NEW K W1..WK       MPI_Comm_create_group (collective
 *       over the members only)
 *   comm_free COMM
 *   intercomm_create LOCAL LEADER PEER REMOTE_LEADER TAG NEW K R1..RK
 *       MPI_Intercomm_create: R... the remote group's MPI_COMM_WORLD
 *       ranks; PEER and REMOTE_LEADER -1 but at the local leader. A rank of
 *       an intercommunicator in a point-to-point call is one of its remote
 *       group; comm_dup of one is an intercommunicator too
 *   intercomm_merge INTER HIGH NEW K W1..WK   MPI_Intercomm_merge
 * Point to point:
 *   send|ssend|bsend|rsend DEST TAG BYTES COMM
 *   isend|issend|ibsend|irsend DEST TAG BYTES COMM REQ
 *   recv SRC TAG BYTES COMM              SRC TAG: the message received
 *   irecv SRC TAG BYTES COMM REQ         as posted (see status)
 *   sendrecv DEST STAG SBYTES SRC RTAG RBYTES COMM   (also _replace)
 *   probe SRC TAG COMM                   the message found (MPI_Probe, or
 *       an MPI_Iprobe that found one)
 *   mprobe SRC TAG BYTES COMM MSG        the message a matched probe took
 *       (MPI_Mprobe, or an MPI_Improbe that found one), numbered from 1
 *   mrecv MSG | imrecv MSG REQ           its receive (MPI_Mrecv / MPI_Imrecv)
 *   send_init|ssend_init|bsend_init|rsend_init DEST TAG BYTES COMM REQ
 *   recv_init SRC TAG BYTES COMM REQ
 *   start REQ | startall K REQ... | request_free REQ
 *   cancel REQ                           MPI_Cancel
 * Completions (only what completed; a test that found nothing is not
 * recorded):
 *   wait|test|waitany|testany REQ
 *   waitall|testall|waitsome|testsome K REQ...
 *   status REQ SRC TAG                   after a completion: the message a
 *       receive posted with a wildcard matched
 *   cancelled REQ                        after a completion: the request's
 *       cancel succeeded (it moved no message)
 * Collectives (a nonblocking one, MPI_Ibarrier ..., is its blocking
 * line's name with an i in front and REQ after COMM; on an
 * intercommunicator the lists run over the remote group, and ROOT is -3
 * at the root (MPI_ROOT), -2 in its group (MPI_PROC_NULL), the root's
 * remote rank in the other group):
 *   barrier COMM | bcast ROOT BYTES COMM
 *   reduce ROOT BYTES COMM TYPE OP
 *   allreduce|scan|exscan|reduce_scatter_block BYTES COMM TYPE OP
 *   reduce_scatter COMM N B1..BN TYPE OP [send=S:E:T] [recv=S:E:T]
 *   allgather|alltoall BYTES COMM [send=S:E:T] [recv=S:E:T]   (BYTES per rank)
 *   gather|scatter ROOT BYTES COMM [send=S:E:T] [recv=S:E:T]
 *   gatherv ROOT BYTES COMM N B1..BN [send=S:E:T] [recv=S:E:T]   (N 0 but at the root)
 *   scatterv ROOT BYTES COMM N B1..BN [send=S:E:T] [recv=S:E:T]  (N 0 but at the root)
 *   allgatherv COMM N B1..BN [send=S:E:T] [recv=S:E:T]   (on an intercommunicator N is the
 *       remote group's size plus one, and the last is this rank's block)
 *   alltoallv COMM N S1..SN R1..RN [send=S:E:T] [recv=S:E:T]   (also MPI_Alltoallw, without them)
 *   neighbor_allgather|neighbor_allgatherv|neighbor_alltoall|
 *   neighbor_alltoallv|neighbor_alltoallw COMM N IN S1..SIN R1..RIN OUT D1..DOUT B1..BOUT
 *       the in-neighbours (communicator ranks, -2 for MPI_PROC_NULL) and
 *       the bytes from each, the out-neighbours and the bytes to each
 *       (N = 2 + 2 IN + 2 OUT), then [send=S:E:T] [recv=S:E:T] but for
 *       neighbor_alltoallw
 * One-sided (WIN: the rank's number for a window, 0, 1 ... in the order
 * it made them; TARGET a rank of the window's communicator; DISP in the
 * target's displacement units; BYTES what the origin's buffer holds):
 *   win_create COMM WIN BYTES UNIT       MPI_Win_create / _allocate(_shared)
 *   win_free WIN
 *   put|get|compare_and_swap TARGET DISP BYTES WIN
 *   accumulate|get_accumulate|fetch_and_op TARGET DISP BYTES WIN TYPE OP
 *   rput|rget TARGET DISP BYTES WIN REQ  (request-based: done at REQ's
 *   raccumulate|rget_accumulate TARGET DISP BYTES WIN REQ TYPE OP   completion)
 *   win_fence WIN | win_lock TARGET EXCLUSIVE WIN (1, or 0: shared)
 *   win_unlock|win_flush TARGET WIN      (flush_local as flush)
 *   win_lock_all|win_unlock_all|win_flush_all|win_sync WIN
 *   win_post|win_start WIN K R1..RK      the group's ranks in the window
 *   win_complete|win_wait WIN            (a win_test that found it done:
 *       win_wait)
 * And:
 *   finalize
 *   unsupported WHAT                     a call the replay cannot do: the
 *       replay refuses the trace naming it
 * Built by `bgsim record` with the MPI's own compiler wrapper (mpicc). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static FILE *out;
static double t_origin;
static MPI_Group world_group;

static int cpu_clock = 1;

static double clock_now(void) {
    if (!cpu_clock) return PMPI_Wtime();
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double now(void) { return clock_now() - t_origin; }

static void *grow(void *p, long *cap, long n, size_t item) {
    if (n < *cap) return p;
    *cap = *cap ? 2 * *cap : 64;
    p = realloc(p, (size_t)*cap * item);
    if (!p) { fprintf(stderr, "bgsim_trace: out of memory\n"); PMPI_Abort(MPI_COMM_WORLD, 1); }
    return p;
}

/* ---- communicators: the handles this rank made, and their numbers ---- */
struct comm {
    MPI_Comm h;
    long id;
};
static struct comm *comms;
static long ncomm, capcomm, next_comm = 2;

static long cid(MPI_Comm c) {
    if (c == MPI_COMM_WORLD) return 0;
    if (c == MPI_COMM_SELF) return 1;
    for (long i = ncomm - 1; i >= 0; i--)
        if (comms[i].h == c) return comms[i].id;
    return -1;
}

/* ---- requests: the live ones and what they are ---- */
struct req {
    MPI_Request h;
    long id;
    long taken; /* the snapshot that last named it */
    char persistent, recv, wild, active;
};
static struct req *reqs;
static long nreq, capreq, next_req = 1, snapshots;

static long track(MPI_Request h, int persistent, int recv, int wild) {
    reqs = grow(reqs, &capreq, nreq, sizeof *reqs);
    reqs[nreq] = (struct req){h, next_req, 0, (char)persistent, (char)recv, (char)wild, (char)!persistent};
    nreq++;
    return next_req++;
}

/* The oldest live request with handle H not named yet by snapshot TAKEN
 * (0: any). Handles are not unique: an MPI may hand the same completed
 * request object to several sends that finished at once (Open MPI does
 * for small messages), so a handle stands for its live requests in the
 * order they were made. */
static struct req *find_other(MPI_Request h, long taken) {
    if (h == MPI_REQUEST_NULL) return NULL;
    struct req *best = NULL;
    for (long i = 0; i < nreq; i++)
        if (reqs[i].h == h && !(taken && reqs[i].taken == taken) && (!best || reqs[i].id < best->id))
            best = &reqs[i];
    return best;
}
static struct req *find(MPI_Request h) { return find_other(h, 0); }

static void drop(struct req *q) { *q = reqs[--nreq]; }

/* ---- lines ---- */
/* Starts a line, or says the call cannot be replayed when COMM is not one
 * the recorder saw made (made by a call it does not record). */
static int begin(double t0, const char *name, long comm) {
    if (!out) return 0;
    if (comm < 0) {
        fprintf(out, "%.9f %.9f unsupported %s on a communicator bgsim did not see made "
                     "(one made by a call bgsim does not record)\n", t0, now(), name);
        return 0;
    }
    fprintf(out, "%.9f %.9f %s", t0, now(), name);
    return 1;
}
static void num(long v) { fprintf(out, " %ld", v); }
static void end(void) { fputc('\n', out); }

static void unsupported(const char *what) {
    if (out) { double t = now(); fprintf(out, "%.9f %.9f unsupported %s\n", t, t, what); }
}

static long bytes(int count, MPI_Datatype t) {
    int size = 0;
    /* (Arguments MPI ignores, as an intercommunicator's MPI_PROC_NULL
     * ranks give them, may be anything.) */
    if (count <= 0 || t == MPI_DATATYPE_NULL) return 0;
    PMPI_Type_size(t, &size);
    return (long)count * size;
}

/* A buffer's BYTES (point to point; a collective's whose send and receive
 * buffers have one datatype and count): count times the datatype's size, then,
 * when the data do not lie in one run of bytes (a derived datatype with
 * gaps: a vector, a resized type, a struct with holes), how they lie:
 * BYTES:COUNT:EXTENT:TRUE_EXTENT, the type's extent and true extent in
 * bytes. (A type whose blocks lie back to back out of order is taken as
 * contiguous.) */
/* T's size, extent and true extent in bytes; whether its elements' data
 * (MANY: several side by side) lie in one run of bytes. */
static int one_run(MPI_Datatype t, int many, int *size, MPI_Aint *extent, MPI_Aint *textent) {
    MPI_Aint lb, tlb;
    *size = 0;
    PMPI_Type_size(t, size);
    PMPI_Type_get_extent(t, &lb, extent);
    PMPI_Type_get_true_extent(t, &tlb, textent);
    return *textent == *size && (!many || *extent == *size);
}
static void data(int count, MPI_Datatype t) {
    long b = bytes(count, t);
    fprintf(out, " %ld", b);
    if (b <= 0) return;
    int size;
    MPI_Aint extent, textent;
    if (one_run(t, count > 1, &size, &extent, &textent)) return;
    fprintf(out, ":%d:%ld:%ld", count, (long)extent, (long)textent);
}

/* A collective buffer of datatype T whose data do not lie in one run of
 * bytes (its blocks of COUNT elements side by side): " SIDE=SIZE:EXTENT:
 * TRUE_EXTENT", SIDE send or recv, the type's size, extent and true
 * extent in bytes. Nothing for a contiguous type, or a side the rank does
 * not use (count 0). */
static void side(const char *name, int count, MPI_Datatype t) {
    if (count <= 0 || t == MPI_DATATYPE_NULL) return;
    int size;
    MPI_Aint extent, textent;
    if (one_run(t, 1, &size, &extent, &textent) || size <= 0) return;
    fprintf(out, " %s=%d:%ld:%ld", name, size, (long)extent, (long)textent);
}

static int peer(int p) { return p == MPI_ANY_SOURCE ? -1 : p == MPI_PROC_NULL ? -2 : p; }
static int tagof(int t) { return t == MPI_ANY_TAG ? -1 : t; }
static int wild(int src, int tag) { return src == MPI_ANY_SOURCE || tag == MPI_ANY_TAG; }

static void reduction(MPI_Datatype t, MPI_Op op) {
    int size = 0;
    PMPI_Type_size(t, &size);
    char kind = 'b';
    if (t == MPI_DOUBLE || t == MPI_FLOAT || t == MPI_LONG_DOUBLE || t == MPI_REAL || t == MPI_DOUBLE_PRECISION)
        kind = 'f';
    else if (t == MPI_INT || t == MPI_LONG || t == MPI_SHORT || t == MPI_LONG_LONG || t == MPI_CHAR ||
             t == MPI_SIGNED_CHAR || t == MPI_INT8_T || t == MPI_INT16_T || t == MPI_INT32_T || t == MPI_INT64_T ||
             t == MPI_INTEGER)
        kind = 'i';
    else if (t == MPI_UNSIGNED || t == MPI_UNSIGNED_LONG || t == MPI_UNSIGNED_SHORT || t == MPI_UNSIGNED_LONG_LONG ||
             t == MPI_UNSIGNED_CHAR || t == MPI_BYTE || t == MPI_UINT8_T || t == MPI_UINT16_T || t == MPI_UINT32_T ||
             t == MPI_UINT64_T)
        kind = 'u';
    else if (t == MPI_C_FLOAT_COMPLEX || t == MPI_C_DOUBLE_COMPLEX || t == MPI_COMPLEX || t == MPI_DOUBLE_COMPLEX)
        kind = 'c';
    if (kind == 'b') size = 1;
    const char *name = "user";
    if (op == MPI_SUM) name = "sum";
    else if (op == MPI_MAX) name = "max";
    else if (op == MPI_MIN) name = "min";
    else if (op == MPI_PROD) name = "prod";
    else if (op == MPI_BAND) name = "band";
    else if (op == MPI_BOR) name = "bor";
    else if (op == MPI_BXOR) name = "bxor";
    else if (op == MPI_LAND) name = "land";
    else if (op == MPI_LOR) name = "lor";
    else if (op == MPI_LXOR) name = "lxor";
    else if (op == MPI_MAXLOC) name = "maxloc";
    else if (op == MPI_MINLOC) name = "minloc";
    else if (op == MPI_REPLACE) name = "replace";
    fprintf(out, " %c%d %s", kind, size, name);
}

static int comm_size(MPI_Comm c) {
    int n = 0;
    PMPI_Comm_size(c, &n);
    return n;
}
static int is_inter(MPI_Comm c) {
    int flag = 0;
    PMPI_Comm_test_inter(c, &flag);
    return flag;
}
/* The ranks a collective's per-rank lists run over: the communicator's,
 * or on an intercommunicator the remote group's. */
static int peers(MPI_Comm c) {
    int n = 0;
    if (is_inter(c)) PMPI_Comm_remote_size(c, &n); else PMPI_Comm_size(c, &n);
    return n;
}
/* A collective's root as written: on an intercommunicator MPI_ROOT is -3
 * and MPI_PROC_NULL -2. */
static int rootof(int root) { return root == MPI_ROOT ? -3 : root == MPI_PROC_NULL ? -2 : root; }

/* A list of N byte counts: counts[i] times the size of types[i] (or of
 * the one type when types is NULL). */
static void counts(int n, const int *c, MPI_Datatype t, const MPI_Datatype *types) {
    num(n);
    for (int i = 0; i < n; i++) num(bytes(c[i], types ? types[i] : t));
}

/* ---- completions ---- */
/* Writes the status lines of the wildcard receives among the completed
 * requests, and forgets the ones that are done for good. */
static void settle(struct req **done, MPI_Status *sts, int k) {
    for (int i = 0; i < k; i++) {
        if (!done[i]) continue;
        int cancelled = 0;
        PMPI_Test_cancelled(&sts[i], &cancelled);
        if (out && cancelled) {
            double t = now();
            fprintf(out, "%.9f %.9f cancelled %ld\n", t, t, done[i]->id);
        } else if (out && done[i]->recv && done[i]->wild) {
            double t = now();
            fprintf(out, "%.9f %.9f status %ld %d %d\n", t, t, done[i]->id, peer(sts[i].MPI_SOURCE),
                    tagof(sts[i].MPI_TAG));
        }
        if (done[i]->persistent) done[i]->active = 0;
        else drop(done[i]);
    }
}

/* The tracked requests the handles stand for (NULL where untracked or
 * inactive). */
static struct req **snapshot(int n, const MPI_Request *rs) {
    struct req **q = malloc((n > 0 ? n : 1) * sizeof *q);
    if (!q) { fprintf(stderr, "bgsim_trace: out of memory\n"); PMPI_Abort(MPI_COMM_WORLD, 1); }
    long stamp = ++snapshots;
    for (int i = 0; i < n; i++) {
        struct req *e = find_other(rs[i], stamp);
        q[i] = e && e->active ? e : NULL;
        if (q[i]) q[i]->taken = stamp;
    }
    return q;
}

/* Records K completed requests (done[idx[j]], statuses sts[j]). Request
 * entries are addressed by id: settling one can move another. */
static void completed(double t0, const char *name, int single, struct req **all, const int *idx, int k,
                      MPI_Status *sts) {
    long *ids = malloc((k > 0 ? k : 1) * sizeof *ids);
    struct req **done = malloc((k > 0 ? k : 1) * sizeof *done);
    int m = 0;
    for (int j = 0; j < k; j++) {
        done[j] = all[idx ? idx[j] : j];
        if (done[j]) ids[m++] = done[j]->id;
    }
    if (m && begin(t0, name, 0)) {
        if (!single) num(m);
        for (int j = 0; j < m; j++) num(ids[j]);
        end();
    }
    /* settle by id: drop() moves the last entry into a freed slot */
    for (int j = 0; j < k; j++) {
        if (!done[j]) continue;
        long id = done[j]->id;
        struct req *e = NULL;
        for (long i = 0; i < nreq; i++)
            if (reqs[i].id == id) { e = &reqs[i]; break; }
        settle(&e, &sts[j], 1);
    }
    free(ids);
    free(done);
}

/* ---- init and finalize ---- */
static void open_trace(void) {
    int rank, size;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
    const char *dir = getenv("BGSIM_TRACE_DIR"), *clk = getenv("BGSIM_TRACE_CLOCK");
    cpu_clock = !(clk && strcmp(clk, "wall") == 0);
    char path[4096];
    snprintf(path, sizeof path, "%s/rank-%d.trace", dir ? dir : ".", rank);
    out = fopen(path, "w");
    if (!out) { fprintf(stderr, "bgsim_trace: cannot write %s\n", path); PMPI_Abort(MPI_COMM_WORLD, 1); }
    fprintf(out, "# bgsim-trace 2 rank %d size %d clock %s\n", rank, size, cpu_clock ? "cpu" : "wall");
    PMPI_Barrier(MPI_COMM_WORLD);
    t_origin = clock_now();
}

int MPI_Init(int *argc, char ***argv) {
    int rc = PMPI_Init(argc, argv);
    open_trace();
    return rc;
}

/* The recorder keeps one rank's tables unlocked: it asks for no more than
 * one thread calling MPI at a time. */
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    int rc = PMPI_Init_thread(argc, argv, required < MPI_THREAD_FUNNELED ? required : MPI_THREAD_FUNNELED, provided);
    open_trace();
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

/* ---- communicators ---- */
/* Writes the world ranks of group G (K, then the ranks). */
static void world_ranks_of(MPI_Group g) {
    int k;
    PMPI_Group_size(g, &k);
    int *ranks = malloc((k > 0 ? k : 1) * sizeof *ranks), *w = malloc((k > 0 ? k : 1) * sizeof *w);
    for (int i = 0; i < k; i++) ranks[i] = i;
    PMPI_Group_translate_ranks(g, k, ranks, world_group, w);
    num(k);
    for (int i = 0; i < k; i++) num(w[i]);
    free(ranks);
    free(w);
}
/* A new communicator's number (it joins the recorder's table). */
static long adopt(MPI_Comm c) {
    comms = grow(comms, &capcomm, ncomm, sizeof *comms);
    comms[ncomm] = (struct comm){c, next_comm++};
    return comms[ncomm++].id;
}
static void made(double t0, const char *how, MPI_Comm parent, MPI_Comm *made_comm) {
    long p = cid(parent);
    if (!out) return;
    MPI_Comm c = made_comm ? *made_comm : MPI_COMM_NULL;
    int inter = 0;
    if (c != MPI_COMM_NULL) PMPI_Comm_test_inter(c, &inter);
    if (inter && strcmp(how, "comm_dup") != 0) {
        unsupported("a communicator made from an intercommunicator but by MPI_Comm_dup");
        return;
    }
    if (!begin(t0, how, p)) return;
    num(p);
    if (c == MPI_COMM_NULL) { num(-1); num(0); end(); return; }
    num(adopt(c));
    if (strcmp(how, "comm_dup") == 0) { end(); return; }
    MPI_Group g;
    PMPI_Comm_group(c, &g);
    world_ranks_of(g);
    end();
    PMPI_Group_free(&g);
}

int MPI_Comm_dup(MPI_Comm c, MPI_Comm *n) {
    double t0 = now(); int rc = PMPI_Comm_dup(c, n); made(t0, "comm_dup", c, n); return rc;
}
int MPI_Comm_dup_with_info(MPI_Comm c, MPI_Info i, MPI_Comm *n) {
    double t0 = now(); int rc = PMPI_Comm_dup_with_info(c, i, n); made(t0, "comm_dup", c, n); return rc;
}
int MPI_Comm_split(MPI_Comm c, int color, int key, MPI_Comm *n) {
    double t0 = now(); int rc = PMPI_Comm_split(c, color, key, n); made(t0, "comm_split", c, n); return rc;
}
int MPI_Comm_split_type(MPI_Comm c, int type, int key, MPI_Info i, MPI_Comm *n) {
    double t0 = now(); int rc = PMPI_Comm_split_type(c, type, key, i, n); made(t0, "comm_split", c, n); return rc;
}
int MPI_Comm_create(MPI_Comm c, MPI_Group g, MPI_Comm *n) {
    double t0 = now(); int rc = PMPI_Comm_create(c, g, n); made(t0, "comm_split", c, n); return rc;
}
int MPI_Comm_create_group(MPI_Comm c, MPI_Group g, int tag, MPI_Comm *n) {
    double t0 = now(); int rc = PMPI_Comm_create_group(c, g, tag, n); made(t0, "comm_group", c, n); return rc;
}
int MPI_Cart_create(MPI_Comm c, int nd, const int dims[], const int periods[], int reorder, MPI_Comm *n) {
    double t0 = now(); int rc = PMPI_Cart_create(c, nd, dims, periods, reorder, n); made(t0, "comm_split", c, n);
    return rc;
}
int MPI_Cart_sub(MPI_Comm c, const int remain[], MPI_Comm *n) {
    double t0 = now(); int rc = PMPI_Cart_sub(c, remain, n); made(t0, "comm_split", c, n); return rc;
}
int MPI_Graph_create(MPI_Comm c, int nn, const int index[], const int edges[], int reorder, MPI_Comm *n) {
    double t0 = now(); int rc = PMPI_Graph_create(c, nn, index, edges, reorder, n); made(t0, "comm_split", c, n);
    return rc;
}
int MPI_Dist_graph_create(MPI_Comm c, int nn, const int src[], const int deg[], const int dst[], const int w[],
                          MPI_Info i, int reorder, MPI_Comm *n) {
    double t0 = now(); int rc = PMPI_Dist_graph_create(c, nn, src, deg, dst, w, i, reorder, n);
    made(t0, "comm_split", c, n); return rc;
}
int MPI_Dist_graph_create_adjacent(MPI_Comm c, int indeg, const int src[], const int sw[], int outdeg,
                                   const int dst[], const int dw[], MPI_Info i, int reorder, MPI_Comm *n) {
    double t0 = now();
    int rc = PMPI_Dist_graph_create_adjacent(c, indeg, src, sw, outdeg, dst, dw, i, reorder, n);
    made(t0, "comm_split", c, n); return rc;
}

static void freed(double t0, MPI_Comm c) {
    long id = cid(c);
    if (id < 2) return;  /* not ours (or a predefined one) */
    for (long i = 0; i < ncomm; i++)
        if (comms[i].id == id) { comms[i] = comms[--ncomm]; break; }
    if (begin(t0, "comm_free", id)) { num(id); end(); }
}
int MPI_Comm_free(MPI_Comm *c) { double t0 = now(); MPI_Comm was = *c; int rc = PMPI_Comm_free(c); freed(t0, was); return rc; }
int MPI_Comm_disconnect(MPI_Comm *c) {
    double t0 = now(); MPI_Comm was = *c; int rc = PMPI_Comm_disconnect(c); freed(t0, was); return rc;
}

/* MPI_Comm_idup: the new communicator (its handle is the program's at
 * once, usable once REQ is complete) and the request. */
static void made_nonblocking(double t0, MPI_Comm parent, MPI_Comm *n, MPI_Request r) {
    long p = cid(parent);
    if (!out || !begin(t0, "comm_idup", p)) return;
    num(p); num(adopt(*n)); num(track(r, 0, 0, 0)); end();
}
int MPI_Comm_idup(MPI_Comm c, MPI_Comm *n, MPI_Request *r) {
    double t0 = now(); int rc = PMPI_Comm_idup(c, n, r); made_nonblocking(t0, c, n, *r); return rc;
}
#if MPI_VERSION >= 4
int MPI_Comm_idup_with_info(MPI_Comm c, MPI_Info i, MPI_Comm *n, MPI_Request *r) {
    double t0 = now(); int rc = PMPI_Comm_idup_with_info(c, i, n, r); made_nonblocking(t0, c, n, *r); return rc;
}
#endif
int MPI_Intercomm_create(MPI_Comm l, int ll, MPI_Comm p, int rl, int tag, MPI_Comm *n) {
    double t0 = now();
    int rc = PMPI_Intercomm_create(l, ll, p, rl, tag, n);
    long lid = cid(l);
    int me = -1;
    PMPI_Comm_rank(l, &me);
    long pid = me == ll ? cid(p) : -1;
    if (me == ll && pid < 0) { unsupported("MPI_Intercomm_create over a peer communicator bgsim did not see made"); return rc; }
    if (!begin(t0, "intercomm_create", lid)) return rc;
    num(lid); num(ll); num(pid); num(me == ll ? rl : -1); num(me == ll ? tag : -1);
    num(adopt(*n));
    MPI_Group g;
    PMPI_Comm_remote_group(*n, &g);
    world_ranks_of(g);
    PMPI_Group_free(&g);
    end();
    return rc;
}
int MPI_Intercomm_merge(MPI_Comm c, int high, MPI_Comm *n) {
    double t0 = now();
    int rc = PMPI_Intercomm_merge(c, high, n);
    long id = cid(c);
    if (!begin(t0, "intercomm_merge", id)) return rc;
    num(id); num(high != 0); num(adopt(*n));
    MPI_Group g;
    PMPI_Comm_group(*n, &g);
    world_ranks_of(g);
    PMPI_Group_free(&g);
    end();
    return rc;
}

/* ---- point to point ---- */
#define SEND(NAME, PNAME, LINE)                                                              \
    int NAME(const void *b, int c, MPI_Datatype t, int d, int tag, MPI_Comm comm) {         \
        double t0 = now();                                                                   \
        int rc = PNAME(b, c, t, d, tag, comm);                                               \
        long k = cid(comm);                                                                  \
        if (begin(t0, LINE, k)) { num(peer(d)); num(tag); data(c, t); num(k); end(); }      \
        return rc;                                                                           \
    }
SEND(MPI_Send, PMPI_Send, "send")
SEND(MPI_Ssend, PMPI_Ssend, "ssend")
SEND(MPI_Bsend, PMPI_Bsend, "bsend")
SEND(MPI_Rsend, PMPI_Rsend, "rsend")

#define ISEND(NAME, PNAME, LINE, PERSISTENT)                                                                 \
    int NAME(const void *b, int c, MPI_Datatype t, int d, int tag, MPI_Comm comm, MPI_Request *r) {         \
        double t0 = now();                                                                                   \
        int rc = PNAME(b, c, t, d, tag, comm, r);                                                            \
        long k = cid(comm);                                                                                  \
        if (begin(t0, LINE, k)) { num(peer(d)); num(tag); data(c, t); num(k); num(track(*r, PERSISTENT, 0, 0)); end(); } \
        return rc;                                                                                           \
    }
ISEND(MPI_Isend, PMPI_Isend, "isend", 0)
ISEND(MPI_Issend, PMPI_Issend, "issend", 0)
ISEND(MPI_Ibsend, PMPI_Ibsend, "ibsend", 0)
ISEND(MPI_Irsend, PMPI_Irsend, "irsend", 0)
ISEND(MPI_Send_init, PMPI_Send_init, "send_init", 1)
ISEND(MPI_Ssend_init, PMPI_Ssend_init, "ssend_init", 1)
ISEND(MPI_Bsend_init, PMPI_Bsend_init, "bsend_init", 1)
ISEND(MPI_Rsend_init, PMPI_Rsend_init, "rsend_init", 1)

int MPI_Recv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm, MPI_Status *st) {
    double t0 = now();
    MPI_Status own;
    if (st == MPI_STATUS_IGNORE) st = &own;
    int rc = PMPI_Recv(buf, count, t, src, tag, comm, st);
    long k = cid(comm);
    if (begin(t0, "recv", k)) {
        num(src == MPI_PROC_NULL ? -2 : peer(st->MPI_SOURCE)); num(src == MPI_PROC_NULL ? tag : tagof(st->MPI_TAG));
        data(count, t); num(k); end();
    }
    return rc;
}

static int irecv_like(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm, MPI_Request *r,
                      int persistent) {
    double t0 = now();
    int rc = persistent ? PMPI_Recv_init(buf, count, t, src, tag, comm, r) : PMPI_Irecv(buf, count, t, src, tag, comm, r);
    long k = cid(comm);
    if (begin(t0, persistent ? "recv_init" : "irecv", k)) {
        num(peer(src)); num(tagof(tag)); data(count, t); num(k);
        num(track(*r, persistent, 1, wild(src, tag) && src != MPI_PROC_NULL)); end();
    }
    return rc;
}
int MPI_Irecv(void *b, int c, MPI_Datatype t, int s, int tag, MPI_Comm comm, MPI_Request *r) {
    return irecv_like(b, c, t, s, tag, comm, r, 0);
}
int MPI_Recv_init(void *b, int c, MPI_Datatype t, int s, int tag, MPI_Comm comm, MPI_Request *r) {
    return irecv_like(b, c, t, s, tag, comm, r, 1);
}

static void sendrecv_line(double t0, int dest, int stag, int sc, MPI_Datatype st_, int src, int rtag, int rc_,
                          MPI_Datatype rt, MPI_Comm comm, MPI_Status *st) {
    long k = cid(comm);
    if (begin(t0, "sendrecv", k)) {
        num(peer(dest)); num(stag); data(sc, st_);
        num(src == MPI_PROC_NULL ? -2 : peer(st->MPI_SOURCE)); num(src == MPI_PROC_NULL ? rtag : tagof(st->MPI_TAG));
        data(rc_, rt); num(k); end();
    }
}
int MPI_Sendrecv(const void *sb, int sc, MPI_Datatype stype, int dest, int stag, void *rb, int rc_, MPI_Datatype rt,
                 int src, int rtag, MPI_Comm comm, MPI_Status *status) {
    double t0 = now();
    MPI_Status own;
    if (status == MPI_STATUS_IGNORE) status = &own;
    int rc = PMPI_Sendrecv(sb, sc, stype, dest, stag, rb, rc_, rt, src, rtag, comm, status);
    sendrecv_line(t0, dest, stag, sc, stype, src, rtag, rc_, rt, comm, status);
    return rc;
}
int MPI_Sendrecv_replace(void *b, int c, MPI_Datatype t, int dest, int stag, int src, int rtag, MPI_Comm comm,
                         MPI_Status *status) {
    double t0 = now();
    MPI_Status own;
    if (status == MPI_STATUS_IGNORE) status = &own;
    int rc = PMPI_Sendrecv_replace(b, c, t, dest, stag, src, rtag, comm, status);
    sendrecv_line(t0, dest, stag, c, t, src, rtag, c, t, comm, status);
    return rc;
}

static void probe_line(double t0, int src, int tag, MPI_Comm comm, MPI_Status *st) {
    long k = cid(comm);
    if (begin(t0, "probe", k)) {
        num(src == MPI_PROC_NULL ? -2 : peer(st->MPI_SOURCE)); num(src == MPI_PROC_NULL ? tag : tagof(st->MPI_TAG));
        num(k); end();
    }
}
int MPI_Probe(int src, int tag, MPI_Comm comm, MPI_Status *st) {
    double t0 = now();
    MPI_Status own;
    if (st == MPI_STATUS_IGNORE) st = &own;
    int rc = PMPI_Probe(src, tag, comm, st);
    probe_line(t0, src, tag, comm, st);
    return rc;
}
int MPI_Iprobe(int src, int tag, MPI_Comm comm, int *flag, MPI_Status *st) {
    double t0 = now();
    MPI_Status own;
    if (st == MPI_STATUS_IGNORE) st = &own;
    int rc = PMPI_Iprobe(src, tag, comm, flag, st);
    if (*flag) probe_line(t0, src, tag, comm, st);
    return rc;
}

int MPI_Start(MPI_Request *r) {
    double t0 = now();
    int rc = PMPI_Start(r);
    struct req *e = find(*r);
    if (e) { e->active = 1; if (begin(t0, "start", 0)) { num(e->id); end(); } }
    return rc;
}
int MPI_Startall(int n, MPI_Request rs[]) {
    double t0 = now();
    int rc = PMPI_Startall(n, rs);
    int k = 0;
    for (int i = 0; i < n; i++) if (find(rs[i])) k++;
    if (k && begin(t0, "startall", 0)) {
        num(k);
        for (int i = 0; i < n; i++) { struct req *e = find(rs[i]); if (e) { e->active = 1; num(e->id); } }
        end();
    }
    return rc;
}
int MPI_Request_free(MPI_Request *r) {
    double t0 = now();
    struct req *e = find(*r);
    long id = e ? e->id : 0;
    if (e) drop(e);
    int rc = PMPI_Request_free(r);
    if (id && begin(t0, "request_free", 0)) { num(id); end(); }
    return rc;
}

int MPI_Wait(MPI_Request *r, MPI_Status *st) {
    double t0 = now();
    MPI_Status own;
    if (st == MPI_STATUS_IGNORE) st = &own;
    struct req **q = snapshot(1, r);
    int rc = PMPI_Wait(r, st);
    completed(t0, "wait", 1, q, NULL, 1, st);
    free(q);
    return rc;
}
int MPI_Test(MPI_Request *r, int *flag, MPI_Status *st) {
    double t0 = now();
    MPI_Status own;
    if (st == MPI_STATUS_IGNORE) st = &own;
    struct req **q = snapshot(1, r);
    int rc = PMPI_Test(r, flag, st);
    if (*flag) completed(t0, "test", 1, q, NULL, 1, st);
    free(q);
    return rc;
}

static MPI_Status *statuses(int n, MPI_Status *given, MPI_Status **own) {
    *own = NULL;
    if (given != MPI_STATUSES_IGNORE) return given;
    *own = malloc((n > 0 ? n : 1) * sizeof **own);
    if (!*own) { fprintf(stderr, "bgsim_trace: out of memory\n"); PMPI_Abort(MPI_COMM_WORLD, 1); }
    return *own;
}

static int all_like(int n, MPI_Request rs[], int *flag, MPI_Status sts[], int test) {
    double t0 = now();
    MPI_Status *own, *s = statuses(n, sts, &own);
    struct req **q = snapshot(n, rs);
    int f = 1;
    int rc = test ? PMPI_Testall(n, rs, &f, s) : PMPI_Waitall(n, rs, s);
    if (flag) *flag = f;
    if (f) completed(t0, test ? "testall" : "waitall", 0, q, NULL, n, s);
    free(q);
    free(own);
    return rc;
}
int MPI_Waitall(int n, MPI_Request rs[], MPI_Status sts[]) { return all_like(n, rs, NULL, sts, 0); }
int MPI_Testall(int n, MPI_Request rs[], int *flag, MPI_Status sts[]) { return all_like(n, rs, flag, sts, 1); }

static int any_like(int n, MPI_Request rs[], int *idx, int *flag, MPI_Status *st, int test) {
    double t0 = now();
    MPI_Status own;
    if (st == MPI_STATUS_IGNORE) st = &own;
    struct req **q = snapshot(n, rs);
    int f = 1;
    int rc = test ? PMPI_Testany(n, rs, idx, &f, st) : PMPI_Waitany(n, rs, idx, st);
    if (flag) *flag = f;
    if (f && *idx != MPI_UNDEFINED) completed(t0, test ? "testany" : "waitany", 1, q, idx, 1, st);
    free(q);
    return rc;
}
int MPI_Waitany(int n, MPI_Request rs[], int *idx, MPI_Status *st) { return any_like(n, rs, idx, NULL, st, 0); }
int MPI_Testany(int n, MPI_Request rs[], int *idx, int *flag, MPI_Status *st) { return any_like(n, rs, idx, flag, st, 1); }

static int some_like(int n, MPI_Request rs[], int *outc, int idx[], MPI_Status sts[], int test) {
    double t0 = now();
    MPI_Status *own, *s = statuses(n, sts, &own);
    struct req **q = snapshot(n, rs);
    int rc = test ? PMPI_Testsome(n, rs, outc, idx, s) : PMPI_Waitsome(n, rs, outc, idx, s);
    if (*outc != MPI_UNDEFINED && *outc > 0) completed(t0, test ? "testsome" : "waitsome", 0, q, idx, *outc, s);
    free(q);
    free(own);
    return rc;
}
int MPI_Waitsome(int n, MPI_Request rs[], int *outc, int idx[], MPI_Status sts[]) { return some_like(n, rs, outc, idx, sts, 0); }
int MPI_Testsome(int n, MPI_Request rs[], int *outc, int idx[], MPI_Status sts[]) { return some_like(n, rs, outc, idx, sts, 1); }

/* ---- matched probes: the messages taken, numbered from 1 ---- */
struct msg {
    MPI_Message h;
    long id;
};
static struct msg *msgs;
static long nmsg, capmsg, next_msg = 1;

static void mprobe_line(double t0, int src, int tag, MPI_Comm comm, MPI_Status *st, MPI_Message m) {
    long k = cid(comm);
    int count = 0;
    if (src != MPI_PROC_NULL) PMPI_Get_count(st, MPI_BYTE, &count);
    msgs = grow(msgs, &capmsg, nmsg, sizeof *msgs);
    msgs[nmsg++] = (struct msg){m, next_msg};
    if (begin(t0, "mprobe", k)) {
        num(src == MPI_PROC_NULL ? -2 : peer(st->MPI_SOURCE)); num(src == MPI_PROC_NULL ? 0 : tagof(st->MPI_TAG));
        num(count); num(k); num(next_msg); end();
    }
    next_msg++;
}
int MPI_Mprobe(int src, int tag, MPI_Comm comm, MPI_Message *m, MPI_Status *st) {
    double t0 = now();
    MPI_Status own;
    if (st == MPI_STATUS_IGNORE) st = &own;
    int rc = PMPI_Mprobe(src, tag, comm, m, st);
    mprobe_line(t0, src, tag, comm, st, *m);
    return rc;
}
int MPI_Improbe(int src, int tag, MPI_Comm comm, int *f, MPI_Message *m, MPI_Status *st) {
    double t0 = now();
    MPI_Status own;
    if (st == MPI_STATUS_IGNORE) st = &own;
    int rc = PMPI_Improbe(src, tag, comm, f, m, st);
    if (*f) mprobe_line(t0, src, tag, comm, st, *m);
    return rc;
}
/* The number of the oldest taken message with handle M (MPI_MESSAGE_NO_PROC
 * is one handle for all), which it no longer names; 0 if none. */
static long taken_msg(MPI_Message m) {
    for (long i = 0; i < nmsg; i++)
        if (msgs[i].h == m) {
            long id = msgs[i].id;
            memmove(&msgs[i], &msgs[i + 1], (size_t)(nmsg - i - 1) * sizeof *msgs);
            nmsg--;
            return id;
        }
    return 0;
}
int MPI_Mrecv(void *b, int c, MPI_Datatype t, MPI_Message *m, MPI_Status *st) {
    double t0 = now();
    long id = taken_msg(*m);
    int rc = PMPI_Mrecv(b, c, t, m, st);
    if (!id) unsupported("MPI_Mrecv of a message bgsim did not see probed");
    else if (out) { fprintf(out, "%.9f %.9f mrecv", t0, now()); num(id); end(); }
    return rc;
}
int MPI_Imrecv(void *b, int c, MPI_Datatype t, MPI_Message *m, MPI_Request *r) {
    double t0 = now();
    long id = taken_msg(*m);
    int rc = PMPI_Imrecv(b, c, t, m, r);
    if (!id) unsupported("MPI_Imrecv of a message bgsim did not see probed");
    else if (out) { fprintf(out, "%.9f %.9f imrecv", t0, now()); num(id); num(track(*r, 0, 1, 0)); end(); }
    return rc;
}

/* MPI_Cancel: whether it succeeded shows at the request's completion
 * (`cancelled`). */
int MPI_Cancel(MPI_Request *r) {
    double t0 = now();
    struct req *e = find(*r);
    int rc = PMPI_Cancel(r);
    if (!e) unsupported("MPI_Cancel of a request bgsim did not record");
    else if (begin(t0, "cancel", 0)) { num(e->id); end(); }
    return rc;
}

/* ---- one-sided communication ---- */
struct win {
    MPI_Win h;
    long id;
};
static struct win *wins;
static long nwin, capwin, next_win;

static long wid(MPI_Win w) {
    for (long i = nwin - 1; i >= 0; i--)
        if (wins[i].h == w) return wins[i].id;
    return -1;
}

/* Starts a window call's line, or says it cannot be replayed when the
 * window is not one the recorder saw made. */
static int wbegin(double t0, const char *name, MPI_Win w) {
    if (!out) return 0;
    if (wid(w) < 0) {
        fprintf(out, "%.9f %.9f unsupported %s on a window bgsim did not see made\n", t0, now(), name);
        return 0;
    }
    fprintf(out, "%.9f %.9f %s", t0, now(), name);
    return 1;
}

static void win_made(double t0, MPI_Comm c, MPI_Aint size, int du, MPI_Win w) {
    long k = cid(c);
    wins = grow(wins, &capwin, nwin, sizeof *wins);
    wins[nwin++] = (struct win){w, next_win};
    if (begin(t0, "win_create", k)) { num(k); num(next_win); num((long)size); num(du); end(); }
    next_win++;
}
int MPI_Win_create(void *b, MPI_Aint size, int du, MPI_Info i, MPI_Comm c, MPI_Win *w) {
    double t0 = now(); int rc = PMPI_Win_create(b, size, du, i, c, w); win_made(t0, c, size, du, *w); return rc;
}
int MPI_Win_allocate(MPI_Aint size, int du, MPI_Info i, MPI_Comm c, void *b, MPI_Win *w) {
    double t0 = now(); int rc = PMPI_Win_allocate(size, du, i, c, b, w); win_made(t0, c, size, du, *w); return rc;
}
int MPI_Win_allocate_shared(MPI_Aint size, int du, MPI_Info i, MPI_Comm c, void *b, MPI_Win *w) {
    double t0 = now(); int rc = PMPI_Win_allocate_shared(size, du, i, c, b, w); win_made(t0, c, size, du, *w); return rc;
}
int MPI_Win_create_dynamic(MPI_Info i, MPI_Comm c, MPI_Win *w) {
    unsupported("MPI_Win_create_dynamic (a dynamic window's displacements are addresses)");
    return PMPI_Win_create_dynamic(i, c, w);
}
int MPI_Win_free(MPI_Win *w) {
    double t0 = now();
    MPI_Win h = *w;
    long id = wid(h);
    int rc = PMPI_Win_free(w);
    if (wbegin(t0, "win_free", h)) { num(id); end(); }
    for (long i = 0; i < nwin; i++)
        if (wins[i].h == h) { wins[i] = wins[--nwin]; break; }
    return rc;
}

/* An operation's line: TARGET DISP BYTES WIN, BYTES those of COUNT
 * elements of T at the origin (with their layout, data(), where LAID: a
 * put's, get's or accumulate's). */
static int op_line(double t0, const char *name, int target, MPI_Aint disp, int count, MPI_Datatype t, int laid,
                   MPI_Win w) {
    if (!wbegin(t0, name, w)) return 0;
    num(peer(target)); num((long)disp);
    if (laid) data(count, t); else num(bytes(count, t));
    num(wid(w));
    return 1;
}
int MPI_Put(const void *o, int oc, MPI_Datatype ot, int tr, MPI_Aint td, int tc, MPI_Datatype tt, MPI_Win w) {
    double t0 = now(); int rc = PMPI_Put(o, oc, ot, tr, td, tc, tt, w);
    if (op_line(t0, "put", tr, td, oc, ot, 1, w)) end();
    return rc;
}
int MPI_Get(void *o, int oc, MPI_Datatype ot, int tr, MPI_Aint td, int tc, MPI_Datatype tt, MPI_Win w) {
    double t0 = now(); int rc = PMPI_Get(o, oc, ot, tr, td, tc, tt, w);
    if (op_line(t0, "get", tr, td, oc, ot, 1, w)) end();
    return rc;
}
int MPI_Accumulate(const void *o, int oc, MPI_Datatype ot, int tr, MPI_Aint td, int tc, MPI_Datatype tt, MPI_Op op,
                   MPI_Win w) {
    double t0 = now(); int rc = PMPI_Accumulate(o, oc, ot, tr, td, tc, tt, op, w);
    if (op_line(t0, "accumulate", tr, td, oc, ot, 1, w)) { reduction(ot, op); end(); }
    return rc;
}
int MPI_Get_accumulate(const void *o, int oc, MPI_Datatype ot, void *r, int rcount, MPI_Datatype rt, int tr,
                       MPI_Aint td, int tc, MPI_Datatype tt, MPI_Op op, MPI_Win w) {
    double t0 = now(); int rc = PMPI_Get_accumulate(o, oc, ot, r, rcount, rt, tr, td, tc, tt, op, w);
    if (op_line(t0, "get_accumulate", tr, td, rcount, rt, 0, w)) { reduction(rt, op); end(); }
    return rc;
}
int MPI_Fetch_and_op(const void *o, void *r, MPI_Datatype t, int tr, MPI_Aint td, MPI_Op op, MPI_Win w) {
    double t0 = now(); int rc = PMPI_Fetch_and_op(o, r, t, tr, td, op, w);
    if (op_line(t0, "fetch_and_op", tr, td, 1, t, 0, w)) { reduction(t, op); end(); }
    return rc;
}
int MPI_Compare_and_swap(const void *o, const void *c, void *r, MPI_Datatype t, int tr, MPI_Aint td, MPI_Win w) {
    double t0 = now(); int rc = PMPI_Compare_and_swap(o, c, r, t, tr, td, w);
    if (op_line(t0, "compare_and_swap", tr, td, 1, t, 0, w)) end();
    return rc;
}
/* Request-based operations: an operation's line with the request last
 * (before TYPE OP). */
static void rop_line(double t0, const char *name, int target, MPI_Aint disp, int count, MPI_Win w, MPI_Request q,
                     MPI_Datatype t, MPI_Op op, int laid) {
    if (!op_line(t0, name, target, disp, count, t, laid, w)) return;
    num(track(q, 0, 0, 0));
    if (op != MPI_OP_NULL) reduction(t, op);
    end();
}
int MPI_Rput(const void *o, int oc, MPI_Datatype ot, int tr, MPI_Aint td, int tc, MPI_Datatype tt, MPI_Win w,
             MPI_Request *q) {
    double t0 = now(); int rc = PMPI_Rput(o, oc, ot, tr, td, tc, tt, w, q);
    rop_line(t0, "rput", tr, td, oc, w, *q, ot, MPI_OP_NULL, 1);
    return rc;
}
int MPI_Rget(void *o, int oc, MPI_Datatype ot, int tr, MPI_Aint td, int tc, MPI_Datatype tt, MPI_Win w,
             MPI_Request *q) {
    double t0 = now(); int rc = PMPI_Rget(o, oc, ot, tr, td, tc, tt, w, q);
    rop_line(t0, "rget", tr, td, oc, w, *q, ot, MPI_OP_NULL, 1);
    return rc;
}
int MPI_Raccumulate(const void *o, int oc, MPI_Datatype ot, int tr, MPI_Aint td, int tc, MPI_Datatype tt, MPI_Op op,
                    MPI_Win w, MPI_Request *q) {
    double t0 = now(); int rc = PMPI_Raccumulate(o, oc, ot, tr, td, tc, tt, op, w, q);
    rop_line(t0, "raccumulate", tr, td, oc, w, *q, ot, op, 1);
    return rc;
}
int MPI_Rget_accumulate(const void *o, int oc, MPI_Datatype ot, void *r, int rcount, MPI_Datatype rt, int tr,
                        MPI_Aint td, int tc, MPI_Datatype tt, MPI_Op op, MPI_Win w, MPI_Request *q) {
    double t0 = now(); int rc = PMPI_Rget_accumulate(o, oc, ot, r, rcount, rt, tr, td, tc, tt, op, w, q);
    rop_line(t0, "rget_accumulate", tr, td, rcount, w, *q, rt, op, 0);
    return rc;
}

/* Synchronization: WIN last, after a TARGET where there is one. */
static void sync_line(double t0, const char *name, int target, MPI_Win w) {
    if (!wbegin(t0, name, w)) return;
    if (target != MPI_UNDEFINED) num(peer(target));
    num(wid(w));
    end();
}
int MPI_Win_fence(int a, MPI_Win w) { double t0 = now(); int rc = PMPI_Win_fence(a, w); sync_line(t0, "win_fence", MPI_UNDEFINED, w); return rc; }
int MPI_Win_lock(int type, int r, int a, MPI_Win w) {
    double t0 = now(); int rc = PMPI_Win_lock(type, r, a, w);
    if (wbegin(t0, "win_lock", w)) { num(peer(r)); num(type == MPI_LOCK_EXCLUSIVE); num(wid(w)); end(); }
    return rc;
}
int MPI_Win_unlock(int r, MPI_Win w) { double t0 = now(); int rc = PMPI_Win_unlock(r, w); sync_line(t0, "win_unlock", r, w); return rc; }
int MPI_Win_lock_all(int a, MPI_Win w) { double t0 = now(); int rc = PMPI_Win_lock_all(a, w); sync_line(t0, "win_lock_all", MPI_UNDEFINED, w); return rc; }
int MPI_Win_unlock_all(MPI_Win w) { double t0 = now(); int rc = PMPI_Win_unlock_all(w); sync_line(t0, "win_unlock_all", MPI_UNDEFINED, w); return rc; }
int MPI_Win_flush(int r, MPI_Win w) { double t0 = now(); int rc = PMPI_Win_flush(r, w); sync_line(t0, "win_flush", r, w); return rc; }
int MPI_Win_flush_local(int r, MPI_Win w) { double t0 = now(); int rc = PMPI_Win_flush_local(r, w); sync_line(t0, "win_flush", r, w); return rc; }
int MPI_Win_flush_all(MPI_Win w) { double t0 = now(); int rc = PMPI_Win_flush_all(w); sync_line(t0, "win_flush_all", MPI_UNDEFINED, w); return rc; }
int MPI_Win_flush_local_all(MPI_Win w) { double t0 = now(); int rc = PMPI_Win_flush_local_all(w); sync_line(t0, "win_flush_all", MPI_UNDEFINED, w); return rc; }
int MPI_Win_sync(MPI_Win w) { double t0 = now(); int rc = PMPI_Win_sync(w); sync_line(t0, "win_sync", MPI_UNDEFINED, w); return rc; }

/* Post and Start name a group: its ranks in the window's group. */
static void group_line(double t0, const char *name, MPI_Group g, MPI_Win w) {
    if (!wbegin(t0, name, w)) return;
    MPI_Group wg;
    PMPI_Win_get_group(w, &wg);
    int n = 0;
    PMPI_Group_size(g, &n);
    int *in = malloc((n > 0 ? n : 1) * sizeof *in), *to = malloc((n > 0 ? n : 1) * sizeof *to);
    if (!in || !to) { fprintf(stderr, "bgsim_trace: out of memory\n"); PMPI_Abort(MPI_COMM_WORLD, 1); }
    for (int i = 0; i < n; i++) in[i] = i;
    PMPI_Group_translate_ranks(g, n, in, wg, to);
    num(wid(w)); num(n);
    for (int i = 0; i < n; i++) num(to[i]);
    end();
    free(in); free(to);
    PMPI_Group_free(&wg);
}
int MPI_Win_post(MPI_Group g, int a, MPI_Win w) { double t0 = now(); int rc = PMPI_Win_post(g, a, w); group_line(t0, "win_post", g, w); return rc; }
int MPI_Win_start(MPI_Group g, int a, MPI_Win w) { double t0 = now(); int rc = PMPI_Win_start(g, a, w); group_line(t0, "win_start", g, w); return rc; }
int MPI_Win_complete(MPI_Win w) { double t0 = now(); int rc = PMPI_Win_complete(w); sync_line(t0, "win_complete", MPI_UNDEFINED, w); return rc; }
int MPI_Win_wait(MPI_Win w) { double t0 = now(); int rc = PMPI_Win_wait(w); sync_line(t0, "win_wait", MPI_UNDEFINED, w); return rc; }
int MPI_Win_test(MPI_Win w, int *flag) {
    double t0 = now(); int rc = PMPI_Win_test(w, flag);
    if (*flag) sync_line(t0, "win_wait", MPI_UNDEFINED, w);
    return rc;
}

/* ---- collectives ---- */
/* Blocking and nonblocking collectives share their lines: R is the
 * nonblocking call's request (NULL for the blocking one). */
static int coll(double t0, const char *name, MPI_Comm comm, MPI_Request *r, long *k) {
    char nb[64];
    *k = cid(comm);
    if (r) snprintf(nb, sizeof nb, "i%s", name);
    return begin(t0, r ? nb : name, *k);
}
static void coll_comm(long k, MPI_Request *r) {
    num(k);
    if (r) num(track(*r, 0, 0, 0));
}

static void barrier_line(double t0, MPI_Comm comm, MPI_Request *r) {
    long k;
    if (coll(t0, "barrier", comm, r, &k)) { coll_comm(k, r); end(); }
}
int MPI_Barrier(MPI_Comm comm) { double t0 = now(); int rc = PMPI_Barrier(comm); barrier_line(t0, comm, NULL); return rc; }
int MPI_Ibarrier(MPI_Comm comm, MPI_Request *r) { double t0 = now(); int rc = PMPI_Ibarrier(comm, r); barrier_line(t0, comm, r); return rc; }

static void bcast_line(double t0, int count, MPI_Datatype t, int root, MPI_Comm comm, MPI_Request *r) {
    long k;
    if (coll(t0, "bcast", comm, r, &k)) {
        num(rootof(root));
        if (root == MPI_PROC_NULL) num(0); else data(count, t);
        coll_comm(k, r); end();
    }
}
int MPI_Bcast(void *b, int c, MPI_Datatype t, int root, MPI_Comm comm) {
    double t0 = now(); int rc = PMPI_Bcast(b, c, t, root, comm); bcast_line(t0, c, t, root, comm, NULL); return rc;
}
int MPI_Ibcast(void *b, int c, MPI_Datatype t, int root, MPI_Comm comm, MPI_Request *r) {
    double t0 = now(); int rc = PMPI_Ibcast(b, c, t, root, comm, r); bcast_line(t0, c, t, root, comm, r); return rc;
}

static void reduce_line(double t0, const char *name, int rooted, int root, int count, MPI_Datatype t, MPI_Op op,
                        MPI_Comm comm, MPI_Request *r) {
    long k;
    if (coll(t0, name, comm, r, &k)) {
        if (rooted) num(rootof(root));
        if (rooted && root == MPI_PROC_NULL) num(0);
        else data(count, t);
        coll_comm(k, r); reduction(t, op); end();
    }
}
int MPI_Reduce(const void *sb, void *rb, int c, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm) {
    double t0 = now(); int rc = PMPI_Reduce(sb, rb, c, t, op, root, comm); reduce_line(t0, "reduce", 1, root, c, t, op, comm, NULL);
    return rc;
}
int MPI_Ireduce(const void *sb, void *rb, int c, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm, MPI_Request *r) {
    double t0 = now(); int rc = PMPI_Ireduce(sb, rb, c, t, op, root, comm, r); reduce_line(t0, "reduce", 1, root, c, t, op, comm, r);
    return rc;
}
#define REDUCE_ALL(NAME, PNAME, INAME, PINAME, LINE)                                                          \
    int NAME(const void *sb, void *rb, int c, MPI_Datatype t, MPI_Op op, MPI_Comm comm) {                    \
        double t0 = now(); int rc = PNAME(sb, rb, c, t, op, comm); reduce_line(t0, LINE, 0, 0, c, t, op, comm, NULL); \
        return rc;                                                                                            \
    }                                                                                                         \
    int INAME(const void *sb, void *rb, int c, MPI_Datatype t, MPI_Op op, MPI_Comm comm, MPI_Request *r) {   \
        double t0 = now(); int rc = PINAME(sb, rb, c, t, op, comm, r); reduce_line(t0, LINE, 0, 0, c, t, op, comm, r); \
        return rc;                                                                                            \
    }
REDUCE_ALL(MPI_Allreduce, PMPI_Allreduce, MPI_Iallreduce, PMPI_Iallreduce, "allreduce")
REDUCE_ALL(MPI_Scan, PMPI_Scan, MPI_Iscan, PMPI_Iscan, "scan")
REDUCE_ALL(MPI_Exscan, PMPI_Exscan, MPI_Iexscan, PMPI_Iexscan, "exscan")

int MPI_Reduce_scatter_block(const void *sb, void *rb, int c, MPI_Datatype t, MPI_Op op, MPI_Comm comm) {
    double t0 = now(); int rc = PMPI_Reduce_scatter_block(sb, rb, c, t, op, comm);
    reduce_line(t0, "reduce_scatter_block", 0, 0, c, t, op, comm, NULL); return rc;
}
int MPI_Ireduce_scatter_block(const void *sb, void *rb, int c, MPI_Datatype t, MPI_Op op, MPI_Comm comm, MPI_Request *r) {
    double t0 = now(); int rc = PMPI_Ireduce_scatter_block(sb, rb, c, t, op, comm, r);
    reduce_line(t0, "reduce_scatter_block", 0, 0, c, t, op, comm, r); return rc;
}
static int me(MPI_Comm c) { int r = -1; PMPI_Comm_rank(c, &r); return r; }
static void reduce_scatter_line(double t0, const int *rcounts, MPI_Datatype t, MPI_Op op, MPI_Comm comm, MPI_Request *r) {
    long k;
    if (coll(t0, "reduce_scatter", comm, r, &k)) {
        coll_comm(k, r); counts(comm_size(comm), rcounts, t, NULL); reduction(t, op);
        side("send", 1, t); side("recv", rcounts[me(comm)], t);
        end();
    }
}
int MPI_Reduce_scatter(const void *sb, void *rb, const int rc_[], MPI_Datatype t, MPI_Op op, MPI_Comm comm) {
    double t0 = now(); int rc = PMPI_Reduce_scatter(sb, rb, rc_, t, op, comm); reduce_scatter_line(t0, rc_, t, op, comm, NULL);
    return rc;
}
int MPI_Ireduce_scatter(const void *sb, void *rb, const int rc_[], MPI_Datatype t, MPI_Op op, MPI_Comm comm, MPI_Request *r) {
    double t0 = now(); int rc = PMPI_Ireduce_scatter(sb, rb, rc_, t, op, comm, r); reduce_scatter_line(t0, rc_, t, op, comm, r);
    return rc;
}

/* allgather / alltoall: the bytes from (to) each rank, and the layouts of
 * the send buffer (unless in place) and the receive buffer. */
static void per_rank_line(double t0, const char *name, const void *sb, int sc, MPI_Datatype st, int rc_,
                          MPI_Datatype rt, MPI_Comm comm, MPI_Request *r) {
    long k;
    if (coll(t0, name, comm, r, &k)) {
        num(bytes(rc_, rt)); coll_comm(k, r);
        if (sb != MPI_IN_PLACE) side("send", sc, st);
        side("recv", rc_, rt);
        end();
    }
}
#define PER_RANK(NAME, PNAME, INAME, PINAME, LINE)                                                           \
    int NAME(const void *sb, int sc, MPI_Datatype st, void *rb, int rc_, MPI_Datatype rt, MPI_Comm comm) {     \
        double t0 = now(); int rc = PNAME(sb, sc, st, rb, rc_, rt, comm);                                      \
        per_rank_line(t0, LINE, sb, sc, st, rc_, rt, comm, NULL); return rc;                                   \
    }                                                                                                          \
    int INAME(const void *sb, int sc, MPI_Datatype st, void *rb, int rc_, MPI_Datatype rt, MPI_Comm comm,      \
              MPI_Request *r) {                                                                                \
        double t0 = now(); int rc = PINAME(sb, sc, st, rb, rc_, rt, comm, r);                                  \
        per_rank_line(t0, LINE, sb, sc, st, rc_, rt, comm, r); return rc;                                      \
    }
PER_RANK(MPI_Allgather, PMPI_Allgather, MPI_Iallgather, PMPI_Iallgather, "allgather")
PER_RANK(MPI_Alltoall, PMPI_Alltoall, MPI_Ialltoall, PMPI_Ialltoall, "alltoall")

/* gather / scatter: the bytes of one rank's block (at the root with
 * MPI_IN_PLACE, from the root's side of the call), and the layouts of the
 * buffers the rank uses. */
static void rooted_line(double t0, const char *name, int root, long b, MPI_Comm comm, MPI_Request *r,
                        int send_count, MPI_Datatype st, int recv_count, MPI_Datatype rt) {
    long k;
    if (coll(t0, name, comm, r, &k)) {
        num(rootof(root)); num(b); coll_comm(k, r);
        side("send", send_count, st);
        side("recv", recv_count, rt);
        end();
    }
}
/* Whether the calling rank is a rooted collective's root. */
static int at_root(int root, MPI_Comm c) { return is_inter(c) ? root == MPI_ROOT : me(c) == root; }
/* Which buffers of a rooted collective the calling rank uses (gather:
 * a gather, else a scatter): *s its send buffer, *r its receive buffer. */
static void rooted_sides(int gather, const void *sb, const void *rb, int root, MPI_Comm comm, int *s, int *r) {
    int here = root != MPI_PROC_NULL && at_root(root, comm), there = root != MPI_PROC_NULL && root != MPI_ROOT;
    *s = gather ? there && !(here && sb == MPI_IN_PLACE) : here;
    *r = gather ? here : there && !(here && rb == MPI_IN_PLACE);
}
/* ROOT_RECV: the root's block is its receive side (gather), else its send side (scatter). */
#define ROOTED(NAME, PNAME, INAME, PINAME, LINE, ROOT_RECV)                                                    \
    static long NAME##_bytes(int sc, MPI_Datatype st, int rc_, MPI_Datatype rt, int root, MPI_Comm comm) {     \
        if (root == MPI_PROC_NULL) return 0;                                                                   \
        return at_root(root, comm) == ROOT_RECV ? bytes(rc_, rt) : bytes(sc, st);                              \
    }                                                                                                          \
    static void NAME##_sides(const void *sb, int sc, void *rb, int rc_, int root, MPI_Comm comm, int *s,        \
                             int *r) {                                                                         \
        rooted_sides(ROOT_RECV, sb, rb, root, comm, s, r);                                                     \
        *s = *s ? sc : 0;                                                                                      \
        *r = *r ? rc_ : 0;                                                                                     \
    }                                                                                                          \
    int NAME(const void *sb, int sc, MPI_Datatype st, void *rb, int rc_, MPI_Datatype rt, int root,            \
             MPI_Comm comm) {                                                                                  \
        double t0 = now(); int rc = PNAME(sb, sc, st, rb, rc_, rt, root, comm), s, q;                          \
        NAME##_sides(sb, sc, rb, rc_, root, comm, &s, &q);                                                     \
        rooted_line(t0, LINE, root, NAME##_bytes(sc, st, rc_, rt, root, comm), comm, NULL, s, st, q, rt);      \
        return rc;                                                                                             \
    }                                                                                                          \
    int INAME(const void *sb, int sc, MPI_Datatype st, void *rb, int rc_, MPI_Datatype rt, int root,           \
              MPI_Comm comm, MPI_Request *r) {                                                                 \
        double t0 = now(); int rc = PINAME(sb, sc, st, rb, rc_, rt, root, comm, r), s, q;                      \
        NAME##_sides(sb, sc, rb, rc_, root, comm, &s, &q);                                                     \
        rooted_line(t0, LINE, root, NAME##_bytes(sc, st, rc_, rt, root, comm), comm, r, s, st, q, rt);         \
        return rc;                                                                                             \
    }
ROOTED(MPI_Gather, PMPI_Gather, MPI_Igather, PMPI_Igather, "gather", 1)
ROOTED(MPI_Scatter, PMPI_Scatter, MPI_Iscatter, PMPI_Iscatter, "scatter", 0)

/* gatherv / scatterv: this rank's own block, and at the root every rank's. */
static void rooted_v_line(double t0, const char *name, int root, long own, const int *c, MPI_Datatype t,
                          MPI_Comm comm, MPI_Request *r, const void *sb, MPI_Datatype st, const void *rb,
                          MPI_Datatype rt) {
    long k;
    if (coll(t0, name, comm, r, &k)) {
        num(rootof(root)); num(own); coll_comm(k, r);
        if (at_root(root, comm)) counts(peers(comm), c, t, NULL); else num(0);
        int s, q;
        rooted_sides(name[0] == 'g', sb, rb, root, comm, &s, &q);
        side("send", s, st);
        side("recv", q, rt);
        end();
    }
}
int MPI_Gatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rc_[], const int rd[], MPI_Datatype rt,
                int root, MPI_Comm comm) {
    double t0 = now(); int rc = PMPI_Gatherv(sb, sc, st, rb, rc_, rd, rt, root, comm);
    long own = root == MPI_PROC_NULL || root == MPI_ROOT ? 0 : sb == MPI_IN_PLACE ? bytes(rc_[root], rt) : bytes(sc, st);
    rooted_v_line(t0, "gatherv", root, own, rc_, rt, comm, NULL, sb, st, rb, rt); return rc;
}
int MPI_Igatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rc_[], const int rd[], MPI_Datatype rt,
                 int root, MPI_Comm comm, MPI_Request *r) {
    double t0 = now(); int rc = PMPI_Igatherv(sb, sc, st, rb, rc_, rd, rt, root, comm, r);
    long own = root == MPI_PROC_NULL || root == MPI_ROOT ? 0 : sb == MPI_IN_PLACE ? bytes(rc_[root], rt) : bytes(sc, st);
    rooted_v_line(t0, "gatherv", root, own, rc_, rt, comm, r, sb, st, rb, rt); return rc;
}
int MPI_Scatterv(const void *sb, const int sc[], const int sd[], MPI_Datatype st, void *rb, int rc_, MPI_Datatype rt,
                 int root, MPI_Comm comm) {
    double t0 = now(); int rc = PMPI_Scatterv(sb, sc, sd, st, rb, rc_, rt, root, comm);
    long own = root == MPI_PROC_NULL || root == MPI_ROOT ? 0 : rb == MPI_IN_PLACE ? bytes(sc[root], st) : bytes(rc_, rt);
    rooted_v_line(t0, "scatterv", root, own, sc, st, comm, NULL, sb, st, rb, rt); return rc;
}
int MPI_Iscatterv(const void *sb, const int sc[], const int sd[], MPI_Datatype st, void *rb, int rc_, MPI_Datatype rt,
                  int root, MPI_Comm comm, MPI_Request *r) {
    double t0 = now(); int rc = PMPI_Iscatterv(sb, sc, sd, st, rb, rc_, rt, root, comm, r);
    long own = root == MPI_PROC_NULL || root == MPI_ROOT ? 0 : rb == MPI_IN_PLACE ? bytes(sc[root], st) : bytes(rc_, rt);
    rooted_v_line(t0, "scatterv", root, own, sc, st, comm, r, sb, st, rb, rt); return rc;
}

/* On an intercommunicator the list also holds, last, this rank's own
 * block (what the others receive from it is in their lines only). */
static void allgatherv_line(double t0, long own, const int *c, MPI_Datatype t, MPI_Comm comm, MPI_Request *r,
                            const void *sb, MPI_Datatype st) {
    long k;
    if (coll(t0, "allgatherv", comm, r, &k)) {
        coll_comm(k, r);
        if (is_inter(comm)) {
            int n = peers(comm);
            num(n + 1);
            for (int i = 0; i < n; i++) num(bytes(c[i], t));
            num(own);
        } else {
            counts(comm_size(comm), c, t, NULL);
        }
        side("send", sb != MPI_IN_PLACE, st);
        side("recv", 1, t);
        end();
    }
}
int MPI_Allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rc_[], const int rd[], MPI_Datatype rt,
                   MPI_Comm comm) {
    double t0 = now(); int rc = PMPI_Allgatherv(sb, sc, st, rb, rc_, rd, rt, comm);
    allgatherv_line(t0, bytes(sc, st), rc_, rt, comm, NULL, sb, st);
    return rc;
}
int MPI_Iallgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rc_[], const int rd[], MPI_Datatype rt,
                    MPI_Comm comm, MPI_Request *r) {
    double t0 = now(); int rc = PMPI_Iallgatherv(sb, sc, st, rb, rc_, rd, rt, comm, r);
    allgatherv_line(t0, bytes(sc, st), rc_, rt, comm, r, sb, st);
    return rc;
}

/* alltoallv / alltoallw: bytes to each rank, then from each (in place:
 * the same both ways). */
static void alltoallv_line(double t0, const void *sb, const int *sc, MPI_Datatype st, const MPI_Datatype *sts,
                           const int *rc_, MPI_Datatype rt, const MPI_Datatype *rts, MPI_Comm comm, MPI_Request *r) {
    long k;
    if (coll(t0, "alltoallv", comm, r, &k)) {
        int n = peers(comm);
        coll_comm(k, r);
        if (sb == MPI_IN_PLACE) counts(n, rc_, rt, rts); else counts(n, sc, st, sts);
        for (int i = 0; i < n; i++) num(bytes(rc_[i], rts ? rts[i] : rt));
        if (!sts) { /* alltoallv: one datatype a side (alltoallw's are per rank: bytes only) */
            side("send", sb != MPI_IN_PLACE, st);
            side("recv", 1, rt);
        }
        end();
    }
}
int MPI_Alltoallv(const void *sb, const int sc[], const int sd[], MPI_Datatype st, void *rb, const int rc_[],
                  const int rd[], MPI_Datatype rt, MPI_Comm comm) {
    double t0 = now(); int rc = PMPI_Alltoallv(sb, sc, sd, st, rb, rc_, rd, rt, comm);
    alltoallv_line(t0, sb, sc, st, NULL, rc_, rt, NULL, comm, NULL); return rc;
}
int MPI_Ialltoallv(const void *sb, const int sc[], const int sd[], MPI_Datatype st, void *rb, const int rc_[],
                   const int rd[], MPI_Datatype rt, MPI_Comm comm, MPI_Request *r) {
    double t0 = now(); int rc = PMPI_Ialltoallv(sb, sc, sd, st, rb, rc_, rd, rt, comm, r);
    alltoallv_line(t0, sb, sc, st, NULL, rc_, rt, NULL, comm, r); return rc;
}
int MPI_Alltoallw(const void *sb, const int sc[], const int sd[], const MPI_Datatype st[], void *rb, const int rc_[],
                  const int rd[], const MPI_Datatype rt[], MPI_Comm comm) {
    double t0 = now(); int rc = PMPI_Alltoallw(sb, sc, sd, st, rb, rc_, rd, rt, comm);
    alltoallv_line(t0, sb, sc, MPI_BYTE, st, rc_, MPI_BYTE, rt, comm, NULL); return rc;
}
int MPI_Ialltoallw(const void *sb, const int sc[], const int sd[], const MPI_Datatype st[], void *rb, const int rc_[],
                   const int rd[], const MPI_Datatype rt[], MPI_Comm comm, MPI_Request *r) {
    double t0 = now(); int rc = PMPI_Ialltoallw(sb, sc, sd, st, rb, rc_, rd, rt, comm, r);
    alltoallv_line(t0, sb, sc, MPI_BYTE, st, rc_, MPI_BYTE, rt, comm, r); return rc;
}

/* ---- neighbourhood collectives: the communicator's in-neighbours and
 * the bytes from each, then its out-neighbours and the bytes to each
 * (communicator ranks, -2 for MPI_PROC_NULL off a non-periodic edge):
 *   neighbor_alltoallv COMM [REQ] N IN SRC... RBYTES... OUT DST... SBYTES...
 * A count list NULL is one count for every neighbour; a datatype list NULL
 * one datatype. */
static int *neighbour_list(int n) {
    int *v = malloc((n > 0 ? n : 1) * sizeof *v);
    if (!v) { fprintf(stderr, "bgsim_trace: out of memory\n"); PMPI_Abort(MPI_COMM_WORLD, 1); }
    return v;
}
static int neighbours(MPI_Comm comm, int **in, int *nin, int **outs, int *nout) {
    int topo = MPI_UNDEFINED;
    PMPI_Topo_test(comm, &topo);
    if (topo == MPI_CART) {
        int nd = 0;
        PMPI_Cartdim_get(comm, &nd);
        *nin = *nout = 2 * nd;
        *in = neighbour_list(*nin);
        *outs = neighbour_list(*nout);
        for (int d = 0; d < nd; d++) {
            int src, dst;
            PMPI_Cart_shift(comm, d, 1, &src, &dst);
            (*in)[2 * d] = (*outs)[2 * d] = src;
            (*in)[2 * d + 1] = (*outs)[2 * d + 1] = dst;
        }
    } else if (topo == MPI_GRAPH) {
        int me, k = 0;
        PMPI_Comm_rank(comm, &me);
        PMPI_Graph_neighbors_count(comm, me, &k);
        *nin = *nout = k;
        *in = neighbour_list(k);
        *outs = neighbour_list(k);
        PMPI_Graph_neighbors(comm, me, k, *in);
        memcpy(*outs, *in, k * sizeof **in);
    } else if (topo == MPI_DIST_GRAPH) {
        int weighted = 0;
        PMPI_Dist_graph_neighbors_count(comm, nin, nout, &weighted);
        *in = neighbour_list(*nin);
        *outs = neighbour_list(*nout);
        int *iw = weighted ? neighbour_list(*nin) : MPI_UNWEIGHTED;
        int *ow = weighted ? neighbour_list(*nout) : MPI_UNWEIGHTED;
        PMPI_Dist_graph_neighbors(comm, *nin, *in, iw, *nout, *outs, ow);
        if (weighted) { free(iw); free(ow); }
    } else {
        return 0;
    }
    return 1;
}
static void neighbor_line(double t0, const char *name, MPI_Comm comm, MPI_Request *r, const int *sc, int sc1,
                          MPI_Datatype st, const MPI_Datatype *sts, const int *rc_, int rc1, MPI_Datatype rt,
                          const MPI_Datatype *rts) {
    int *in, *outs, nin, nout;
    if (!neighbours(comm, &in, &nin, &outs, &nout)) {
        unsupported(name);  /* MPI refuses it on a communicator without a topology */
        return;
    }
    long k;
    if (coll(t0, name, comm, r, &k)) {
        coll_comm(k, r);
        num(2 + 2 * nin + 2 * nout);
        num(nin);
        for (int i = 0; i < nin; i++) num(peer(in[i]));
        for (int i = 0; i < nin; i++) num(bytes(rc_ ? rc_[i] : rc1, rts ? rts[i] : rt));
        num(nout);
        for (int i = 0; i < nout; i++) num(peer(outs[i]));
        for (int i = 0; i < nout; i++) num(bytes(sc ? sc[i] : sc1, sts ? sts[i] : st));
        if (!sts) side("send", 1, st);  /* (alltoallw's types are per neighbour: bytes only) */
        if (!rts) side("recv", 1, rt);
        end();
    }
    free(in);
    free(outs);
}
/* Neighbor_allgather / _alltoall: one count and datatype each way. */
#define NEIGHBOR_UNIFORM(NAME, PNAME, INAME, PINAME, LINE)                                                     \
    int NAME(const void *sb, int sc, MPI_Datatype st, void *rb, int rc_, MPI_Datatype rt, MPI_Comm comm) {     \
        double t0 = now(); int rc = PNAME(sb, sc, st, rb, rc_, rt, comm);                                      \
        neighbor_line(t0, LINE, comm, NULL, NULL, sc, st, NULL, NULL, rc_, rt, NULL); return rc;               \
    }                                                                                                          \
    int INAME(const void *sb, int sc, MPI_Datatype st, void *rb, int rc_, MPI_Datatype rt, MPI_Comm comm,      \
              MPI_Request *r) {                                                                                \
        double t0 = now(); int rc = PINAME(sb, sc, st, rb, rc_, rt, comm, r);                                  \
        neighbor_line(t0, LINE, comm, r, NULL, sc, st, NULL, NULL, rc_, rt, NULL); return rc;                  \
    }
NEIGHBOR_UNIFORM(MPI_Neighbor_allgather, PMPI_Neighbor_allgather, MPI_Ineighbor_allgather, PMPI_Ineighbor_allgather,
                 "neighbor_allgather")
NEIGHBOR_UNIFORM(MPI_Neighbor_alltoall, PMPI_Neighbor_alltoall, MPI_Ineighbor_alltoall, PMPI_Ineighbor_alltoall,
                 "neighbor_alltoall")
int MPI_Neighbor_allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rc_[], const int rd[],
                            MPI_Datatype rt, MPI_Comm comm) {
    double t0 = now(); int rc = PMPI_Neighbor_allgatherv(sb, sc, st, rb, rc_, rd, rt, comm);
    neighbor_line(t0, "neighbor_allgatherv", comm, NULL, NULL, sc, st, NULL, rc_, 0, rt, NULL); return rc;
}
int MPI_Ineighbor_allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rc_[], const int rd[],
                             MPI_Datatype rt, MPI_Comm comm, MPI_Request *r) {
    double t0 = now(); int rc = PMPI_Ineighbor_allgatherv(sb, sc, st, rb, rc_, rd, rt, comm, r);
    neighbor_line(t0, "neighbor_allgatherv", comm, r, NULL, sc, st, NULL, rc_, 0, rt, NULL); return rc;
}
int MPI_Neighbor_alltoallv(const void *sb, const int sc[], const int sd[], MPI_Datatype st, void *rb, const int rc_[],
                           const int rd[], MPI_Datatype rt, MPI_Comm comm) {
    double t0 = now(); int rc = PMPI_Neighbor_alltoallv(sb, sc, sd, st, rb, rc_, rd, rt, comm);
    neighbor_line(t0, "neighbor_alltoallv", comm, NULL, sc, 0, st, NULL, rc_, 0, rt, NULL); return rc;
}
int MPI_Ineighbor_alltoallv(const void *sb, const int sc[], const int sd[], MPI_Datatype st, void *rb, const int rc_[],
                            const int rd[], MPI_Datatype rt, MPI_Comm comm, MPI_Request *r) {
    double t0 = now(); int rc = PMPI_Ineighbor_alltoallv(sb, sc, sd, st, rb, rc_, rd, rt, comm, r);
    neighbor_line(t0, "neighbor_alltoallv", comm, r, sc, 0, st, NULL, rc_, 0, rt, NULL); return rc;
}
int MPI_Neighbor_alltoallw(const void *sb, const int sc[], const MPI_Aint sd[], const MPI_Datatype st[], void *rb,
                           const int rc_[], const MPI_Aint rd[], const MPI_Datatype rt[], MPI_Comm comm) {
    double t0 = now(); int rc = PMPI_Neighbor_alltoallw(sb, sc, sd, st, rb, rc_, rd, rt, comm);
    neighbor_line(t0, "neighbor_alltoallw", comm, NULL, sc, 0, MPI_BYTE, st, rc_, 0, MPI_BYTE, rt); return rc;
}
int MPI_Ineighbor_alltoallw(const void *sb, const int sc[], const MPI_Aint sd[], const MPI_Datatype st[], void *rb,
                            const int rc_[], const MPI_Aint rd[], const MPI_Datatype rt[], MPI_Comm comm,
                            MPI_Request *r) {
    double t0 = now(); int rc = PMPI_Ineighbor_alltoallw(sb, sc, sd, st, rb, rc_, rd, rt, comm, r);
    neighbor_line(t0, "neighbor_alltoallw", comm, r, sc, 0, MPI_BYTE, st, rc_, 0, MPI_BYTE, rt); return rc;
}
