// Rewrites the configuration table in README.md from src/config/schema.ts.
import { readFileSync, writeFileSync } from "node:fs";
import { withConfigTable } from "../src/config/table.js";

writeFileSync("README.md", withConfigTable(readFileSync("README.md", "utf8")));
