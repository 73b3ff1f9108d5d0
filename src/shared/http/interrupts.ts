/**
 * How a request's work is ended early: its client went away (the socket closed before the reply
 * was written), or stashd stops. The KV gateway watches a request's socket only while a part of
 * its work that can be stopped waits or runs: a blocking command's wait (kv/commands/blocking.ts)
 * and a SEARCH.* / VECTOR.* query's place on the compute scheduler (kv/search/scheduler.ts).
 */
export interface Interrupts {
  /** Calls `end` (with why) once, if ever, until the returned function stops watching. */
  watch(end: (why: string) => void): () => void;
}
