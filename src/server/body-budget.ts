// A process-wide budget of request-body bytes for routes whose bodies may be large (the evaluation service's
// 64 MiB): each request reserves its bytes before they are read (its Content-Length, or chunk by chunk when
// it has none) and keeps them until its handler is done, so N concurrent large bodies cannot exhaust memory.
// A body that does not fit is refused at once rather than queued: waiting requests would hold their
// connections (and, chunk by chunk, part of the budget) while nothing frees it.

export interface BodyReservation {
  /** Adds `bytes` to this request's reservation if the budget has them; false (nothing taken) otherwise. */
  take(bytes: number): boolean;
  /** Gives the whole reservation back; later calls do nothing. */
  release(): void;
}

export interface BodyBudget {
  readonly capacity: number;
  /** Bytes reserved right now, over every request. */
  inUse(): number;
  reserve(): BodyReservation;
}

export function createBodyBudget(capacity: number): BodyBudget {
  let used = 0;
  return {
    capacity,
    inUse: () => used,
    reserve() {
      let held = 0;
      return {
        take(bytes) {
          if (bytes > capacity - used) return false;
          used += bytes;
          held += bytes;
          return true;
        },
        release() {
          used -= held;
          held = 0;
        },
      };
    },
  };
}
