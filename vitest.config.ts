import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    globalSetup: ["test/harness/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    reporters: ["default", "./test/harness/summary-reporter.ts"],
    projects: [
      { extends: true, test: { name: "all", include: ["src/**/*.test.ts", "test/**/*.test.ts"] } },
      {
        // The queue and workflow tests again with the queue split into 3 partitions on one
        // Redis (test/harness/stashd.ts): placement, merged listings and claims across
        // partitions under every feature's tests. Tests whose stashd sets its own count, or
        // that look at partition 0's keys directly, keep their own setting.
        extends: true,
        test: {
          name: "partitioned",
          include: ["test/queue/**/*.test.ts", "test/workflow/**/*.test.ts"],
          env: { STASHD_TEST_QUEUE_PARTITIONS: "3" },
        },
      },
    ],
  },
});
