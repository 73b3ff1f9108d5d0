import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { filterKeysOf } from "../../src/queue/domain/filters.js";
import {
  EVENT_FILTERS,
  EVENT_FILTERS_LEFT_OUT,
  type FilterKey,
} from "../../src/shared/message-filters.js";
import { consoleCookie, consoleEnv, type ConsoleEnv } from "./harness.js";

/**
 * The Messages and Logs filters have one source (src/shared/message-filters.ts), which both the
 * page (console/src/filters.tsx) and the console API (src/admin/console/messages.ts) import. Here:
 * that list is exactly what the queue's events API takes (but what is left out on purpose), every
 * filter in it is taken by both APIs, and one not in it is refused. That the page shows exactly
 * these fields: messages-pages.test.ts ("the filter bar offers…").
 */
let env: ConsoleEnv;
let cookie: string;
beforeAll(async () => {
  env = await consoleEnv({ browser: false });
  cookie = await consoleCookie(env);
});
afterAll(() => env?.close());

/** A value each filter takes (dates as epoch ms, a state both APIs know). */
const SAMPLE: Partial<Record<FilterKey, string>> = {
  state: "CREATED",
  fromDate: "1",
  toDate: String(Date.now() + 60_000),
};

const consoleGet = (path: string) => fetch(`${env.url}/api/${path}`, { headers: { cookie } });

describe("the Messages filters: one list for the page and the API", () => {
  test("the list is every filter of GET /v2/events but those left out, and nothing else", () => {
    expect(new Set(EVENT_FILTERS)).toEqual(
      new Set(
        filterKeysOf("logs").filter(
          (k) => !(EVENT_FILTERS_LEFT_OUT as readonly string[]).includes(k),
        ),
      ),
    );
  });

  test("every filter offered is taken by the console's messages API and by the events API", async () => {
    for (const key of EVENT_FILTERS) {
      const q = new URLSearchParams({ [key]: SAMPLE[key] ?? "x" });
      const viaConsole = await consoleGet(`messages?${q}`);
      expect(viaConsole.status, `${key}: ${await viaConsole.clone().text()}`).toBe(200);
      expect(((await viaConsole.json()) as { messages: unknown[] }).messages).toEqual([]);
      const direct = await env.q.api(`/v2/events?${q}`);
      expect(direct.status, key).toBe(200);
    }
  });

  test("a filter the page does not offer is refused by the console's messages API, by name", async () => {
    for (const key of ["responseStatus", ...EVENT_FILTERS_LEFT_OUT, "labeel"]) {
      const res = await consoleGet(`messages?${key}=1`);
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: `unknown filter key: ${key}` });
    }
  });
});
