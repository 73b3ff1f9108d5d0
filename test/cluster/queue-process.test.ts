import { afterAll, beforeAll, describe, it } from "vitest";
import { startTestCluster, type TestCluster } from "../harness/cluster.js";
import { CrashScenario } from "../queue/crash.js";

/**
 * The real `bin/stashd` with its queue on a Redis Cluster (3 masters, 3 replicas): SIGKILLed
 * mid-delivery and restarted, it loses no accepted message.
 */
let cluster: TestCluster;
let scenario: CrashScenario;

beforeAll(async () => {
  cluster = await startTestCluster();
  scenario = new CrashScenario({ STASHD_QUEUE_REDIS_URL: cluster.url });
  await scenario.start();
});
afterAll(async () => {
  await scenario?.stop();
  await cluster?.stop();
});

describe("crash safety on a Redis Cluster", () => {
  it("delivers every accepted message after SIGKILL mid-delivery and restart", async () => {
    await scenario.killAndRestart(40);
  });
});
