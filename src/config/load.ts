import { AppError } from "../shared/errors.js";
import { SETTINGS, type Config, type SettingName, type SettingSpec } from "./schema.js";

const LOG_LEVELS = new Set(["debug", "info", "warn", "error", "silent"]);

export type ConfigOverrides = { [K in SettingName]?: Config[K] | undefined };

/**
 * Builds the configuration: defaults, then the environment, then explicit overrides (CLI flags or
 * the programmatic `start()` options). Invalid values fail here, once, with the variable's name.
 * This is the only function in stashd that reads `process.env`.
 */
export function loadConfig(
  overrides: ConfigOverrides = {},
  env: NodeJS.ProcessEnv = process.env,
): Config {
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(SETTINGS) as [SettingName, SettingSpec][]) {
    const override = overrides[name];
    if (override !== undefined) {
      out[name] = validate(spec, String(override), `option ${name}`);
      continue;
    }
    const raw = env[spec.env];
    out[name] =
      raw === undefined || raw === "" ? spec.default : validate(spec, raw, `variable ${spec.env}`);
  }
  return Object.freeze(out) as Config;
}

function validate(spec: SettingSpec, raw: string, where: string): string | number | boolean {
  switch (spec.kind) {
    case "bool":
      return toBool(raw, where);
    case "string":
    case "optional-string":
      return raw;
    case "log-level":
      if (!LOG_LEVELS.has(raw))
        throw invalid(where, raw, "one of debug, info, warn, error, silent");
      return raw;
    case "port":
      return toInt(raw, where, 0, 65535);
    case "int":
      return toInt(raw, where, 0, Number.MAX_SAFE_INTEGER);
  }
}

/** true/false, 1/0, yes/no, on/off (any case). */
function toBool(raw: string, where: string): boolean {
  const v = raw.trim().toLowerCase();
  if (["true", "1", "yes", "on"].includes(v)) return true;
  if (["false", "0", "no", "off"].includes(v)) return false;
  throw invalid(where, raw, "true or false");
}

function toInt(raw: string, where: string, min: number, max: number): number {
  const n = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw invalid(where, raw, `a whole number from ${min} to ${max}`);
  }
  return n;
}

function invalid(where: string, raw: string, expected: string): AppError {
  return new AppError("invalid_config", `${where} is ${JSON.stringify(raw)}, expected ${expected}`);
}
