import { afterAll, beforeAll, describe, it } from "vitest";
import { CrashScenario } from "./crash.js";

/**
 * The real `bin/stashd` with its managed queue Redis (appendfsync always): SIGKILLed
 * mid-delivery and restarted, it loses no accepted message.
 */
const scenario = new CrashScenario();

beforeAll(() => scenario.start());
afterAll(() => scenario.stop());

describe("crash safety", () => {
  it("delivers every accepted message after SIGKILL mid-delivery and restart", async () => {
    await scenario.killAndRestart(40);
  });
});
