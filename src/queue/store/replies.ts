import { AppError } from "../../shared/errors.js";
import { isStorageRefusal, storageRefused } from "../../shared/redis/refusal.js";
import type { Reply } from "../../shared/redis/resp.js";

/**
 * Throws a Redis error reply as a server-side AppError (the queue store failing is not user
 * input): 507 when Redis cannot store writes now (MISCONF, OOM), else 503.
 */
export function checked(reply: Reply, what: string): Reply {
  if (reply.kind === "error") {
    const where = `queue store error in ${what}: `;
    if (isStorageRefusal(reply.value)) throw storageRefused(reply.value, where);
    throw new AppError("backend_unavailable", `${where}${reply.value}`);
  }
  return reply;
}

/*
 * Readers of plain command replies (HGET, HMGET, SMEMBERS, ZCARD…), where a missing field or key
 * is an ordinary answer: nil reads as undefined or 0. Script transitions never come here: their
 * replies have contracts, decoded strictly by script-replies.ts.
 */

export function asInt(reply: Reply): number {
  if (reply.kind === "int") return Number(reply.value);
  if (reply.kind === "bulk" || reply.kind === "simple") return Number(reply.value.toString());
  return 0;
}

export function asArray(reply: Reply): Reply[] {
  return reply.kind === "array" ? reply.value : [];
}

export function asBuffer(reply: Reply | undefined): Buffer | undefined {
  return reply && (reply.kind === "bulk" || reply.kind === "simple") ? reply.value : undefined;
}

export function asText(reply: Reply | undefined): string | undefined {
  return asBuffer(reply)?.toString("utf8");
}
