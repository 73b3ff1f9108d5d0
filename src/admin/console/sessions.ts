import { randomBytes } from "node:crypto";

/** Who a console session logged in as: the queue token, or the separate console token. */
export type SessionRole = "queue-token" | "console-token";

interface Session {
  role: SessionRole;
  expiresAt: number;
}

/**
 * Console sessions, in memory only: a random 256-bit id per login, expiring after `ttlMs` of
 * inactivity (each authenticated request slides the deadline). A restart logs everyone out, which
 * is fine for an admin page and keeps nothing secret on disk. At most `max` sessions live at once;
 * the oldest is dropped to make room, so a login loop cannot grow memory.
 */
export class SessionStore {
  private readonly sessions = new Map<string, Session>();

  constructor(
    private readonly ttlMs: number,
    private readonly max = 1000,
    private readonly now: () => number = Date.now,
  ) {}

  create(role: SessionRole): string {
    this.prune();
    if (this.sessions.size >= this.max) {
      const oldest = this.sessions.keys().next().value;
      if (oldest !== undefined) this.sessions.delete(oldest);
    }
    const id = randomBytes(32).toString("base64url");
    this.sessions.set(id, { role, expiresAt: this.now() + this.ttlMs });
    return id;
  }

  /** The live session's role (its expiry slid forward), or undefined. */
  touch(id: string | undefined): SessionRole | undefined {
    if (!id) return undefined;
    const s = this.sessions.get(id);
    if (!s) return undefined;
    if (s.expiresAt <= this.now()) {
      this.sessions.delete(id);
      return undefined;
    }
    s.expiresAt = this.now() + this.ttlMs;
    // Re-inserted so the Map's order stays "least recently used first" for eviction.
    this.sessions.delete(id);
    this.sessions.set(id, s);
    return s.role;
  }

  delete(id: string | undefined): void {
    if (id) this.sessions.delete(id);
  }

  get size(): number {
    return this.sessions.size;
  }

  private prune(): void {
    const now = this.now();
    for (const [id, s] of this.sessions) if (s.expiresAt <= now) this.sessions.delete(id);
  }
}
