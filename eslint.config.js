// One linter, zero warnings (`eslint --max-warnings=0`). The two services never import each other.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "coverage/**", ".stashd/**", "bench/.deps/**"] },
  js.configs.recommended,
  ...tseslint.configs.strict,
  {
    linterOptions: { reportUnusedDisableDirectives: "error" },
    languageOptions: { globals: { process: "readonly", console: "readonly" } },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
    },
  },
  {
    files: ["src/kv/**"],
    rules: { "no-restricted-imports": ["error", { patterns: ["**/queue/**"] }] },
  },
  {
    files: ["src/queue/**"],
    rules: { "no-restricted-imports": ["error", { patterns: ["**/kv/**"] }] },
  },
  {
    files: ["src/shared/**", "src/config/**"],
    rules: { "no-restricted-imports": ["error", { patterns: ["**/kv/**", "**/queue/**"] }] },
  },
);
