import { afterAll, beforeAll } from "vitest";
import type { StartOptions } from "../../src/index.js";
import type { TestReceiver } from "./receiver.js";
import { queueEnv, TEST_KEYS, TEST_TOKEN, type QueueTestEnv } from "./setup.js";

// Kept apart from setup.ts, which benches import: vitest's hooks cannot load outside vitest.

/** Two queues for comparing the fast lane with node:http (queueLaneAndNode). */
export interface LaneAndNode {
  /** With the fast lane. */
  lane: QueueTestEnv;
  /** node:http alone (STASHD_QUEUE_FAST_LANE=false). */
  plain: QueueTestEnv;
  /** A receiver both may publish to (the keys are the same). */
  rx: TestReceiver;
}

/**
 * Two stashds running the queue, each on its own Redis, with the same token and signing keys
 * (TEST_TOKEN, TEST_KEYS) and `options`: one with the queue's fast lane, one without, started
 * before the file's tests and stopped after them. Requests sent to both get answers that differ
 * only where any two answers differ (the Date, the message ids).
 */
export function useQueueLaneAndNode(options: StartOptions): () => LaneAndNode {
  let both: LaneAndNode | undefined;
  let envs: QueueTestEnv[] = [];
  beforeAll(async () => {
    const fixed = {
      queueToken: TEST_TOKEN,
      queueCurrentSigningKey: TEST_KEYS.current,
      queueNextSigningKey: TEST_KEYS.next,
      ...options,
    };
    envs = await Promise.all([queueEnv(fixed), queueEnv({ ...fixed, queueFastLane: false })]);
    const [lane, plain] = envs as [QueueTestEnv, QueueTestEnv];
    both = { lane, plain, rx: await lane.receiver() };
  });
  afterAll(async () => {
    await Promise.all(envs.map((env) => env.close()));
  });
  return () => {
    if (both === undefined) throw new Error("the queues are not started yet");
    return both;
  };
}
