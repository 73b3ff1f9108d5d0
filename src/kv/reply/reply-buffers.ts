import { AppError } from "../../shared/errors.js";
import { elementBytes, type Reply } from "../../shared/redis/resp.js";

/**
 * The process-wide budget of bytes of large replies held for clients still reading them
 * (STASHD_KV_MAX_BUFFERED_REPLY_BYTES). A reply written with backpressure stays in memory until
 * its client has taken all but the last write, so slow readers could otherwise pile up replies of
 * up to STASHD_KV_MAX_REPLY_BYTES each without bound. A reply that would pass the budget is
 * answered 503 (a client may retry); one reply alone always goes out, whatever its size. Small
 * replies (written in one go) are not counted; event streams are (StreamBacklog).
 */
export class ReplyBuffers {
  private held = 0;

  constructor(private readonly limit: number) {}

  /** Counts `bytes` more as held, unless that passes the budget (then false, nothing counted). */
  tryHold(bytes: number): boolean {
    if (this.held > 0 && this.held + bytes > this.limit) return false;
    this.held += bytes;
    return true;
  }

  release(bytes: number): void {
    this.held -= bytes;
  }

  /** Runs `write` with `bytes` counted against the budget, or refuses it (503). */
  async holding(bytes: number, write: () => Promise<void>): Promise<void> {
    if (this.held > 0 && this.held + bytes > this.limit) {
      throw new AppError(
        "backend_unavailable",
        `ERR too many large replies in flight: ${this.held} bytes are held for clients still reading, at most ${this.limit} (STASHD_KV_MAX_BUFFERED_REPLY_BYTES); retry later`,
      );
    }
    this.held += bytes;
    try {
      await write();
    } finally {
      this.held -= bytes;
    }
  }
}

/**
 * The unsent bytes of one event stream (SSE), counted against the same budget: a subscriber
 * that does not read would otherwise make stashd keep every message published to it. The stream
 * must be cut off once `update` answers false (like Redis's client-output-buffer-limit pubsub).
 */
export class StreamBacklog {
  private counted = 0;

  constructor(
    private readonly buffers: ReplyBuffers,
    /** Most one stream may leave unsent (STASHD_KV_MAX_REPLY_BYTES). */
    private readonly max: number,
  ) {}

  /** Counts `unsent` (the response's writableLength); false when past either limit. */
  update(unsent: number): boolean {
    if (unsent > this.max) return false;
    if (unsent > this.counted && !this.buffers.tryHold(unsent - this.counted)) return false;
    if (unsent < this.counted) this.buffers.release(this.counted - unsent);
    this.counted = unsent;
    return true;
  }

  /** Gives back what is counted (the stream ended). */
  release(): void {
    this.buffers.release(this.counted);
    this.counted = 0;
  }
}

/** Bytes a reply holds: its strings' bytes and one per element. */
export const heldBytes: (reply: Reply) => number = elementBytes;
