import type { MessageMeta } from "../../src/queue/domain/message.js";
import type { NewMessage } from "../../src/queue/store/message-store.js";

/**
 * A plain message for MessageStore tests: POST to an unreachable local URL, no retries, due at
 * `dueAt`, its body naming its id; `extra` meta fields added (flow control, a queue...).
 */
export function storeMessage(
  id: string,
  dueAt: number,
  extra: Partial<MessageMeta> = {},
): NewMessage {
  const meta: MessageMeta = {
    messageId: id,
    url: "http://127.0.0.1:9/x",
    method: "POST",
    header: {},
    createdAt: dueAt,
    notBefore: 0,
    maxRetries: 0,
    timeoutMs: 1000,
    depth: 0,
    ...extra,
  };
  return { meta, body: Buffer.from(`body of ${id}`), dueAt };
}
