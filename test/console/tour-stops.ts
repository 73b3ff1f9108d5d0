import type { Locator, Page } from "playwright-core";
import type { SeedIds } from "./tour-seed.js";

/**
 * The console's pages as the tour (tour-pages.test.ts) and `npm run bench:console` open them on
 * seeded data (tour-seed.ts), each with what is on screen once it has rendered its content: its
 * "first meaningful render" is the first frame in which `css` matches a visible element (whose
 * trimmed text is `text`, when given).
 */
export interface Stop {
  name: string;
  route: (ids: SeedIds) => string;
  css: string;
  text?: string;
}

/** The pages of the tour, in its order; each gets a screenshot docs/img/console-<name>.png. */
export const TOUR_STOPS: Stop[] = [
  { name: "messages", route: () => "#/messages", css: "table[aria-label=messages] tbody tr" },
  { name: "message", route: (ids) => `#/messages/${ids.message}`, css: "section h3", text: "Body" },
  { name: "dlq", route: () => "#/dlq", css: "table[aria-label=dlq] tbody tr" },
  {
    name: "dlq-entry",
    route: (ids) => `#/dlq/${ids.dlq}`,
    // The entry's own heading, not the one inside an attempt's folded response.
    css: "aside.panel .panel-body > h3",
    text: "Response body",
  },
  { name: "logs", route: () => "#/logs?state=FAILED", css: "table[aria-label=events] tbody tr" },
  { name: "schedules", route: (ids) => `#/schedules/${ids.schedule}`, css: "aside.panel pre" },
  { name: "queues", route: () => "#/queues/emails", css: "aside.panel dl" },
  { name: "url-groups", route: () => "#/url-groups", css: ".endpoints li" },
  {
    name: "workflows",
    route: () => "#/workflows",
    css: "table[aria-label='workflow runs'] tbody tr",
  },
  {
    name: "workflow-run",
    route: (ids) => `#/workflows/runs/${ids.run}`,
    css: "ol[aria-label='workflow steps'] li",
  },
  {
    name: "workflow-dlq",
    route: () => "#/workflows/dlq",
    css: "table[aria-label='workflow dlq'] tbody tr",
  },
  {
    name: "flow-control",
    route: () => "#/flow-control",
    css: "table[aria-label='flow control keys'] tbody tr",
  },
  { name: "signing-keys", route: () => "#/signing-keys", css: "[data-key=current]" },
  { name: "kv", route: () => "#/kv/default", css: "table[aria-label=keys] tbody tr" },
  {
    name: "kv-key",
    route: () => "#/kv/default/key/user%3A42%3Aprofile",
    css: "aside.panel table.members tbody tr:nth-child(100)",
  },
];

/** Pages the bench opens besides the tour's (they have screenshots of their own elsewhere). */
export const MORE_STOPS: Stop[] = [
  { name: "pending", route: () => "#/pending", css: "table[aria-label='pending groups'] tbody tr" },
  { name: "charts", route: () => "#/charts", css: "figure.chart, .page p.empty" },
  { name: "publish", route: () => "#/publish", css: "form.builder" },
  {
    name: "schedule-list",
    route: () => "#/schedules",
    css: "table[aria-label=schedules] tbody tr",
  },
  { name: "kv-cache", route: () => "#/kv/cache", css: "table[aria-label=keys] tbody tr" },
];

/** The element that says `stop` has rendered, as a Playwright locator. */
export function readyLocator(page: Page, stop: Stop): Locator {
  const exact =
    stop.text && new RegExp(`^\\s*${stop.text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\s*$`);
  return page.locator(stop.css, exact ? { hasText: exact } : {}).first();
}
