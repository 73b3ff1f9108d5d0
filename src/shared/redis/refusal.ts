import { AppError } from "../errors.js";

/**
 * Redis error replies that mean it cannot store writes now, whatever the command: `MISCONF` (an
 * RDB snapshot or AOF write failed, e.g. a full disk, and Redis stops writes until one succeeds)
 * and `OOM` (maxmemory reached under noeviction). Not the client's fault: the KV gateway and the
 * queue answer them 507 insufficient_storage instead of a 400 or a 500.
 */
export function isStorageRefusal(text: string): boolean {
  return text.startsWith("MISCONF ") || text.startsWith("OOM ");
}

/** What is said after Redis's own text, so a reader knows the server is at fault. */
const NOTE = "(the server cannot store data now; its operator must free disk or memory)";

/** Redis's text with the note when it is a storage refusal, else as it is. */
export function explainRefusal(text: string): string {
  return isStorageRefusal(text) ? `${text} ${NOTE}` : text;
}

/** The 507 for a storage refusal, Redis's `text` after `context` (where it happened). */
export function storageRefused(text: string, context = ""): AppError {
  return new AppError("insufficient_storage", `${context}${text} ${NOTE}`);
}
