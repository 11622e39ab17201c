// Batched sends: many sendmsg(2) calls, one per connection, in one io_uring_enter(2).
//
// Why: when heraldd writes a turn's output to N subscribers with N send calls, each send wakes a subscriber
// that, on a busy 2-core machine, is placed on heraldd's own CPU and preempts it at the return of that very
// call (kernel preemption "none": at return to user mode). N sends then cost N context-switch pairs, and the
// subscriber wakes N times for one frame batch each. Submitted together, the kernel performs the N sends inside
// one system call; the subscriber wakes once, after it, to find every socket ready.
//
// Every send carries MSG_DONTWAIT, which io_uring turns into "complete at once" (REQ_F_NOWAIT): a full socket
// gives -EAGAIN and nothing waits in the kernel. So every completion is posted before io_uring_enter returns,
// and no buffer is read after herald_send_batch_run returns. This is a plain, non-blocking sendmsg per socket,
// as heraldd does without the batch.
#include "CHeraldShim.h"

#ifdef __linux__

#include <errno.h>
#include <linux/io_uring.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

struct herald_send_batch {
    int ring;
    uint32_t capacity;
    void *sq_map;
    size_t sq_map_size;
    void *cq_map;  // sq_map itself when the kernel maps both rings at once
    size_t cq_map_size;
    struct io_uring_sqe *sqes;
    size_t sqes_size;
    uint32_t *sq_tail;
    uint32_t sq_mask;
    uint32_t *cq_head;
    uint32_t *cq_tail;
    uint32_t cq_mask;
    struct io_uring_cqe *cqes;
    struct msghdr *messages;  // one per slot, read by the kernel during submission
};

static int ring_setup(uint32_t entries, struct io_uring_params *params, uint32_t flags) {
    memset(params, 0, sizeof *params);
    params->flags = flags;
    return (int)syscall(__NR_io_uring_setup, entries, params);
}

static int ring_enter(int ring, uint32_t submit, uint32_t wait, uint32_t flags) {
    return (int)syscall(__NR_io_uring_enter, ring, submit, wait, flags, NULL, 0);
}

herald_send_batch *herald_send_batch_create(uint32_t capacity) {
    if (capacity == 0 || capacity > 4096) {
        errno = EINVAL;
        return NULL;
    }
    struct io_uring_params params;
    // SUBMIT_ALL (5.18): a bad descriptor fails its own send, not the sends after it. SINGLE_ISSUER and
    // COOP_TASKRUN (6.0): one thread uses the ring, so the kernel can skip locking and interrupts for it.
    // Older kernels reject the flags they do not know: then the ring is set up plainly.
    int ring = ring_setup(capacity, &params,
                          IORING_SETUP_SUBMIT_ALL | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN);
    if (ring < 0 && errno == EINVAL) ring = ring_setup(capacity, &params, 0);
    if (ring < 0) return NULL;

    herald_send_batch *batch = calloc(1, sizeof *batch);
    if (batch == NULL) {
        close(ring);
        errno = ENOMEM;
        return NULL;
    }
    batch->ring = ring;
    batch->capacity = params.sq_entries < capacity ? params.sq_entries : capacity;
    batch->sq_map_size = params.sq_off.array + params.sq_entries * sizeof(uint32_t);
    batch->cq_map_size = params.cq_off.cqes + params.cq_entries * sizeof(struct io_uring_cqe);
    int single = (params.features & IORING_FEAT_SINGLE_MMAP) != 0;
    if (single && batch->cq_map_size > batch->sq_map_size) batch->sq_map_size = batch->cq_map_size;
    batch->sq_map = mmap(NULL, batch->sq_map_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring,
                         IORING_OFF_SQ_RING);
    if (batch->sq_map == MAP_FAILED) goto fail;
    if (single) {
        batch->cq_map = batch->sq_map;
    } else {
        batch->cq_map = mmap(NULL, batch->cq_map_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring,
                             IORING_OFF_CQ_RING);
        if (batch->cq_map == MAP_FAILED) goto fail;
    }
    batch->sqes_size = params.sq_entries * sizeof(struct io_uring_sqe);
    batch->sqes = mmap(NULL, batch->sqes_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring,
                       IORING_OFF_SQES);
    if (batch->sqes == MAP_FAILED) goto fail;
    batch->messages = calloc(batch->capacity, sizeof(struct msghdr));
    if (batch->messages == NULL) {
        errno = ENOMEM;
        goto fail;
    }

    char *sq = batch->sq_map;
    char *cq = batch->cq_map;
    batch->sq_tail = (uint32_t *)(sq + params.sq_off.tail);
    batch->sq_mask = *(uint32_t *)(sq + params.sq_off.ring_mask);
    batch->cq_head = (uint32_t *)(cq + params.cq_off.head);
    batch->cq_tail = (uint32_t *)(cq + params.cq_off.tail);
    batch->cq_mask = *(uint32_t *)(cq + params.cq_off.ring_mask);
    batch->cqes = (struct io_uring_cqe *)(cq + params.cq_off.cqes);
    // Slot i of the submission array always names entry i.
    uint32_t *array = (uint32_t *)(sq + params.sq_off.array);
    for (uint32_t i = 0; i < params.sq_entries; i++) array[i] = i;
    return batch;

fail: {
    int saved = errno;
    herald_send_batch_destroy(batch);
    errno = saved;
    return NULL;
}
}

void herald_send_batch_destroy(herald_send_batch *batch) {
    if (batch == NULL) return;
    if (batch->sqes != NULL && batch->sqes != MAP_FAILED) munmap(batch->sqes, batch->sqes_size);
    if (batch->cq_map != NULL && batch->cq_map != MAP_FAILED && batch->cq_map != batch->sq_map)
        munmap(batch->cq_map, batch->cq_map_size);
    if (batch->sq_map != NULL && batch->sq_map != MAP_FAILED) munmap(batch->sq_map, batch->sq_map_size);
    free(batch->messages);
    close(batch->ring);
    free(batch);
}

uint32_t herald_send_batch_capacity(const herald_send_batch *batch) { return batch->capacity; }

// Moves the posted completions into `ops`; returns how many there were.
static uint32_t reap(herald_send_batch *batch, herald_send_op *ops, uint32_t count) {
    uint32_t head = *batch->cq_head;
    uint32_t ready = __atomic_load_n(batch->cq_tail, __ATOMIC_ACQUIRE);
    uint32_t reaped = 0;
    for (; head != ready; head++, reaped++) {
        struct io_uring_cqe *cqe = &batch->cqes[head & batch->cq_mask];
        if (cqe->user_data < count) ops[cqe->user_data].result = cqe->res;
    }
    __atomic_store_n(batch->cq_head, head, __ATOMIC_RELEASE);
    return reaped;
}

int herald_send_batch_run(herald_send_batch *batch, herald_send_op *ops, uint32_t count) {
    if (count > batch->capacity) {
        errno = EINVAL;
        return -1;
    }
    if (count == 0) return 0;
    uint32_t tail = *batch->sq_tail;  // only this thread moves the tail
    for (uint32_t i = 0; i < count; i++) {
        struct io_uring_sqe *sqe = &batch->sqes[(tail + i) & batch->sq_mask];
        memset(sqe, 0, sizeof *sqe);
        sqe->fd = ops[i].fd;
        sqe->msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL;
        sqe->user_data = i;
        if (ops[i].iovcnt == 1) {
            sqe->opcode = IORING_OP_SEND;
            sqe->addr = (uint64_t)(uintptr_t)ops[i].iov[0].iov_base;
            sqe->len = (uint32_t)ops[i].iov[0].iov_len;
        } else {
            struct msghdr *message = &batch->messages[i];
            memset(message, 0, sizeof *message);
            message->msg_iov = (struct iovec *)ops[i].iov;
            message->msg_iovlen = ops[i].iovcnt;
            sqe->opcode = IORING_OP_SENDMSG;
            sqe->addr = (uint64_t)(uintptr_t)message;
            sqe->len = 1;
        }
        ops[i].result = -ECANCELED;
    }
    __atomic_store_n(batch->sq_tail, tail + count, __ATOMIC_RELEASE);

    // Submit; the sends run inside this call. Without SUBMIT_ALL a send that fails to start stops the
    // submission after its own completion, so go on with the rest.
    uint32_t unsubmitted = count;
    uint32_t reaped = 0;
    while (reaped < count) {
        int entered = ring_enter(batch->ring, unsubmitted, unsubmitted == 0 ? count - reaped : 0,
                                 unsubmitted == 0 ? IORING_ENTER_GETEVENTS : 0);
        if (entered < 0 && errno != EINTR && errno != EAGAIN && errno != EBUSY) {
            // Entries may be left in the ring, and the next run would submit them again: the batch is done
            // for. Completions already posted are still reported.
            int saved = errno;
            reap(batch, ops, count);
            errno = saved;
            return -1;
        }
        if (entered > 0 && unsubmitted > 0) unsubmitted -= (uint32_t)entered < unsubmitted ? (uint32_t)entered : unsubmitted;
        reaped += reap(batch, ops, count);
    }
    return 0;
}

#endif  // __linux__
