import { AppError } from "../shared/errors.js";
import { SETTINGS, type Config, type SettingName, type SettingSpec } from "./schema.js";

const LOG_LEVELS = ["debug", "info", "warn", "error", "silent"];
const LOG_FORMATS = ["auto", "json", "pretty"];

export type ConfigOverrides = { [K in SettingName]?: Config[K] | undefined };

/** Command-line values as typed, by setting name; validated like the environment. */
export type FlagValues = { [K in SettingName]?: string | undefined };

/**
 * Builds the configuration: defaults, then the environment, then explicit overrides (CLI flags or
 * the programmatic `start()` options). Invalid values fail here, once, with the variable's name.
 * This is the only function in stashd that reads `process.env`.
 */
export function loadConfig(
  overrides: ConfigOverrides = {},
  env: NodeJS.ProcessEnv = process.env,
  flags: FlagValues = {},
): Config {
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(SETTINGS) as [SettingName, SettingSpec][]) {
    const override = overrides[name];
    const flag = flags[name];
    const raw = env[spec.env];
    if (override !== undefined) out[name] = validate(spec, String(override), `option ${name}`);
    else if (flag !== undefined) out[name] = validate(spec, flag, `option --${flagName(name)}`);
    else if (raw === undefined || raw === "") out[name] = spec.default;
    else out[name] = validate(spec, raw, `variable ${spec.env}`);
  }
  return Object.freeze(out) as Config;
}

/** `kvPort` → `kv-port`: the command-line spelling of a setting. */
export function flagName(name: SettingName): string {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

function validate(spec: SettingSpec, raw: string, where: string): string | number | boolean {
  switch (spec.kind) {
    case "bool":
      return toBool(raw, where);
    case "string":
    case "optional-string":
      return raw;
    case "log-level":
      return oneOf(LOG_LEVELS, raw, where);
    case "log-format":
      return oneOf(LOG_FORMATS, raw, where);
    case "port":
      return toInt(raw, where, 0, 65535);
    case "int":
      return toInt(raw, where, 0, Number.MAX_SAFE_INTEGER);
  }
}

function oneOf(allowed: string[], raw: string, where: string): string {
  if (!allowed.includes(raw)) throw invalid(where, raw, `one of ${allowed.join(", ")}`);
  return raw;
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
