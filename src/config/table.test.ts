import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { loadConfig } from "./load.js";
import { CONFIGURATION_PAGE, configurationPage, readmeTable, withTable } from "./table.js";
import { SETTINGS } from "./schema.js";

describe("configuration", () => {
  // Prettier pads table cells; compare without padding.
  const squash = (text: string): string =>
    text
      .replace(/[ \t]+/g, "")
      .replace(/-{3,}/g, "---")
      .replace(/\n+/g, "\n");

  it("docs/configuration.md is the one generated from the schema (run `npm run docs:config`)", () => {
    const page = readFileSync(CONFIGURATION_PAGE, "utf8");
    expect(squash(page)).toBe(squash(configurationPage()));
    for (const spec of Object.values(SETTINGS)) expect(page).toContain(`\`${spec.env}\``);
  });

  it("README's short list is the one generated from the schema", () => {
    const readme = readFileSync("README.md", "utf8");
    expect(squash(withTable(readme, readmeTable()))).toBe(squash(readme));
  });

  it("reads the environment, lets overrides win, and names the variable on bad input", () => {
    expect(loadConfig({}, { STASHD_KV_PORT: "9000" }).kvPort).toBe(9000);
    expect(loadConfig({ kvPort: 0 }, { STASHD_KV_PORT: "9000" }).kvPort).toBe(0);
    expect(() => loadConfig({}, { STASHD_KV_PORT: "http" })).toThrow(/STASHD_KV_PORT is "http"/);
    expect(() => loadConfig({}, { STASHD_LOG_LEVEL: "loud" })).toThrow(/STASHD_LOG_LEVEL/);
    expect(Object.isFrozen(loadConfig({}, {}))).toBe(true);
  });
});
