import os from "node:os";
import { configDefaults, defineConfig } from "vitest/config";

/**
 * Two tiers, chosen by project (CONTRIBUTING.md, "Tests"): `npm test` runs the projects
 * "everyday" and "everyday-partitioned", `npm run test:slow` runs "slow" and "slow-partitioned";
 * a bare `vitest run` runs both tiers. Tiers are globs, not folders, so no test file has to move.
 */

/** Files of the slow tier: each needs a tool the everyday tier does not, or minutes of CPU. */
const SLOW = [
  // Six-node Redis Clusters (test/harness/cluster.ts), one or more per file.
  "test/cluster/**/*.test.ts",
  // `npm start`, `npm pack` and `npm install` of the tarball: two builds and an install.
  "test/ops/process.test.ts",
  // A podman image build from a debootstrap base.
  "test/ops/container.test.ts",
  // The web console's pages in Chromium (test/console/api.test.ts, plain HTTP, stays everyday).
  "test/console/*-pages.test.ts",
  // `stashd start` with 2 worker processes: kills and restarts under load (about a minute).
  "test/ops/workers.test.ts",
  // The benchmarks' --smoke runs.
  "test/bench/**/*.test.ts",
  // Heavy search and vector queries on purpose, many at once (12-23 s of CPU), beside a GET.
  "test/security/search-event-loop.test.ts",
  // Requests that held the event loop for seconds, sent at their limits beside a GET (7-16 s).
  "test/security/event-loop-holds.test.ts",
];

/** The queue and workflow test files, which the partitioned projects run with 3 partitions. */
const QUEUE_AND_WORKFLOW = ["test/queue/**/*.test.ts", "test/workflow/**/*.test.ts"];

/**
 * The part of the partitioned rerun that stays in the everyday tier: the produce path and the
 * listings that merge partitions (messages, FIFO queues, DLQ, workflow runs). Files that test
 * partitions on purpose (names with "partition") set their own count and run in "everyday".
 */
const EVERYDAY_PARTITIONED = [
  "test/queue/publish.test.ts",
  "test/queue/queues.test.ts",
  "test/queue/dlq-api.test.ts",
  "test/queue/log-index.test.ts",
  "test/workflow/runs.test.ts",
  "test/console/dlq-count.test.ts",
];

/**
 * The queue split into 3 partitions on one Redis (test/harness/stashd.ts): placement, merged
 * listings and claims across partitions under the features' tests. Tests whose stashd sets its
 * own count, or that look at partition 0's keys directly, keep their own setting.
 */
const PARTITIONED_ENV = { STASHD_TEST_QUEUE_PARTITIONS: "3" };

/**
 * Test files run in parallel forks: at least 3, vitest's default (cores - 1) above that. The
 * files mostly wait (on Redis, HTTP, timers, child processes), so on 2 cores 3 forks finished the
 * everyday tier fastest: 2m25s against 3m49s with 2 and 2m58s with 4 (load 4-12 from other runs
 * on the machine, 2026-11-27); vitest's default there is a single fork.
 */
const WORKERS = Math.max(3, os.availableParallelism() - 1);

export default defineConfig({
  test: {
    globalSetup: ["test/harness/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    maxWorkers: WORKERS,
    reporters: ["default", "./test/harness/summary-reporter.ts"],
    projects: [
      {
        extends: true,
        test: {
          name: "everyday",
          include: ["src/**/*.test.ts", "test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...SLOW],
        },
      },
      {
        extends: true,
        test: { name: "everyday-partitioned", include: EVERYDAY_PARTITIONED, env: PARTITIONED_ENV },
      },
      { extends: true, test: { name: "slow", include: SLOW } },
      {
        extends: true,
        test: {
          name: "slow-partitioned",
          include: QUEUE_AND_WORKFLOW,
          exclude: [...configDefaults.exclude, ...EVERYDAY_PARTITIONED],
          env: PARTITIONED_ENV,
        },
      },
    ],
  },
});
