import { Client, serve } from "@upstash/workflow";
import type { App } from "../workflow/harness.js";
import type { ConsoleEnv } from "./harness.js";

/** The settings a `serve()` route needs to run against this console's stashd (as an app's .env). */
export function workflowEnvOf(env: ConsoleEnv): Record<string, string> {
  const q = env.q.stashd.queue;
  return {
    QSTASH_URL: q.url,
    QSTASH_TOKEN: q.token,
    QSTASH_CURRENT_SIGNING_KEY: q.currentSigningKey,
    QSTASH_NEXT_SIGNING_KEY: q.nextSigningKey,
  };
}

/** A workflow `Client` on this console's stashd. */
export function workflowClientOf(env: ConsoleEnv): Client {
  const q = env.q.stashd.queue;
  return new Client({ baseUrl: q.url, token: q.token });
}

/** Whether the fragile route's step fails, and how many runs got through it. */
export interface Fragile {
  broken: boolean;
  done: number;
}

/**
 * A workflow route at `path` of `app` whose one step "work" throws "broken" while
 * `state.broken`, else counts a success in `state.done`; answers the route's URL.
 */
export function fragileRoute(env: ConsoleEnv, app: App, path: string, state: Fragile): string {
  return app.route(
    path,
    serve(
      async (context) => {
        await context.run("work", () => {
          if (state.broken) throw new Error("broken");
          state.done++;
        });
      },
      { env: workflowEnvOf(env) },
    ).handler,
  );
}
