import { AppError } from "../../shared/errors.js";
import type { Reply } from "../../shared/redis/resp.js";

/** Throws a Redis error reply as a 503-class AppError (the queue store failing is not user input). */
export function checked(reply: Reply, what: string): Reply {
  if (reply.kind === "error") {
    throw new AppError("backend_unavailable", `queue store error in ${what}: ${reply.value}`);
  }
  return reply;
}

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
