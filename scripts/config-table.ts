// Writes docs/configuration.md (every setting) and README.md's short list of settings from
// src/config/schema.ts (see src/config/table.ts). `npm run docs:config` runs it, then prettier.
import { readFileSync, writeFileSync } from "node:fs";
import {
  CONFIGURATION_PAGE,
  configurationPage,
  readmeTable,
  withTable,
} from "../src/config/table.js";

writeFileSync(CONFIGURATION_PAGE, configurationPage());
writeFileSync("README.md", withTable(readFileSync("README.md", "utf8"), readmeTable()));
