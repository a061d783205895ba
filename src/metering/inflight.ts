/** Settlements and releases still committing (a void is not waited for by its answer): shutdown waits for them. */
export class Inflight {
  private readonly running = new Set<Promise<unknown>>();
  track<T>(work: Promise<T>): Promise<T> {
    this.running.add(work);
    void work.finally(() => this.running.delete(work)).catch(() => {});
    return work;
  }
  async drain() {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }
}
