/*
 * shm_ring.h -- a shared-memory ring: `slots` slots of slot_size bytes in
 * one memfd that clients map copy-on-write (PROTOCOL.md "Shared memory").
 * Called by stream.c (a stream's own ring), share.c (the ring the streams
 * of a class share: its slots counted by holders) and flow.c (bytes held).
 *
 * The memfd is sealed against shrinking (F_SEAL_SHRINK) and growing, so
 * that neither side can make the other's mapping fault (SIGBUS) by
 * truncating it. Workers write a batch into the slot flow.c picked for it
 * while the loop owns the ring; flow.c picks only slots whose last batch
 * the client has released (or that were never used), so a slot is never
 * written while the client may read it. Loop thread only, except the slot
 * writes.
 */
#ifndef BFEED_SHM_RING_H
#define BFEED_SHM_RING_H

#include <stddef.h>
#include <stdint.h>

typedef struct shm_ring shm_ring;

/* The size of a slot for batches of up to `raw` bytes: rounded up to the
 * page size (at least one page), so that each slot has pages of its own.
 * Clients map the ring copy-on-write and drop a slot's private pages when
 * they release its batch (PROTOCOL.md "Shared memory"): that must never
 * reach into a neighbouring slot. */
uint64_t shm_ring_slot_bytes(uint64_t raw);
/* A ring of `slots` slots of slot_size bytes (shm_ring_slot_bytes'). NULL with
 * the reason in err when the memfd cannot be made, sized, sealed or mapped. */
shm_ring *shm_ring_new(uint32_t slots, uint64_t slot_size, char *err, size_t errlen);
/* The same, every slot cold (no memory counted until a slot is taken): a
 * class's ring, which may never fill. */
shm_ring *shm_ring_new_cold(uint32_t slots, uint64_t slot_size, char *err, size_t errlen);
/* References: the maker holds one; shm_ring_free lets one go, the last
 * frees the ring (clients' mappings keep their pages). */
void shm_ring_ref(shm_ring *r);
void shm_ring_free(shm_ring *r);
int shm_ring_fd(const shm_ring *r);
uint32_t shm_ring_slots(const shm_ring *r);
uint64_t shm_ring_slot_size(const shm_ring *r);
uint8_t *shm_ring_slot(const shm_ring *r, uint32_t i);
/* Give slot i's memory back (its pages are punched out of the memfd):
 * the bytes given back, 0 if it was cold already or the system refused.
 * Only for a free slot, one no batch is in and the client holds none of
 * (flow.c cools the free slots of idle streams). */
uint64_t shm_ring_cool(shm_ring *r, uint32_t i);
/* Slot i is about to be written: it counts again (nothing if warm). */
void shm_ring_warm(shm_ring *r, uint32_t i);
/* Bytes all rings hold now, less their cold slots: counted against
 * max_memory (flow.c). */
uint64_t shm_ring_bytes(void);

/* Slots held by counts, for a ring several streams share (share.c): a
 * slot is written only while free (no holder), and held by the batch kept
 * in it and by each stream that scheduled that batch until its client
 * releases it (for ever, if the client may still read it and can no
 * longer say: its stream closed). */
/* A free slot, held once: a warm one, else a cold one if admit(arg, its
 * bytes) says it fits (then warmed). -1: none. */
int shm_ring_take(shm_ring *r, int (*admit)(void *arg, uint64_t bytes), void *arg);
void shm_ring_hold(shm_ring *r, uint32_t i);
void shm_ring_drop(shm_ring *r, uint32_t i);
/* Slots no one holds (warm or cold). */
uint32_t shm_ring_free_slots(const shm_ring *r);
/* Give back the memory of every warm slot no one holds: the bytes. */
uint64_t shm_ring_cool_free(shm_ring *r);

#endif
