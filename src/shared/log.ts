import pino, { type DestinationStream } from "pino";

/**
 * The structured logger: pino underneath, one line per event on stderr (stdout is kept for
 * command output such as `stashd credentials`). `json` writes pino's JSON lines (for log
 * shippers); `pretty` writes `time level [scope] message {fields}` for people. Callers never pass
 * secrets; as a second line of defence, fields named like secrets are masked, and `redact()`
 * masks the password part of URLs for when a caller logs one.
 */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(scope: string): Logger;
}

export interface LoggerOptions {
  /** `auto` (the default) is `pretty` when stderr is a terminal, `json` otherwise. */
  format?: LogFormat;
  /** Where lines go (default: stderr, written synchronously so the last lines survive exit). */
  write?: (line: string) => void;
}

const SECRET_FIELDS = ["token", "password", "authorization", "signingKey", "*.token", "*.password"];

/** Log levels, most verbose first; `silent` logs nothing. */
export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";

/** `auto` is `pretty` on a terminal and `json` otherwise. */
export type LogFormat = "auto" | "json" | "pretty";

export function createLogger(
  level: LogLevel,
  scope = "stashd",
  options: LoggerOptions = {},
): Logger {
  const format = resolveFormat(options.format ?? "auto");
  const write = options.write;
  const sink: DestinationStream =
    format === "pretty"
      ? { write: (line: string) => (write ?? toStderr)(prettyLine(line)) }
      : write
        ? { write }
        : pino.destination({ fd: 2, sync: true });
  const root = pino(
    {
      level,
      base: null,
      messageKey: "msg",
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: SECRET_FIELDS, censor: "***" },
    },
    sink,
  );
  return wrap(root, scope);
}

/** Children are made from the root so each line carries one `scope` (pino would repeat it). */
function wrap(root: pino.Logger, scope: string): Logger {
  const log = root.child({ scope });
  return {
    debug: (m, f) => log.debug(f ?? {}, m),
    info: (m, f) => log.info(f ?? {}, m),
    warn: (m, f) => log.warn(f ?? {}, m),
    error: (m, f) => log.error(f ?? {}, m),
    child: (s) => wrap(root, `${scope}:${s}`),
  };
}

function resolveFormat(format: LogFormat): "json" | "pretty" {
  if (format !== "auto") return format;
  return process.stderr.isTTY ? "pretty" : "json";
}

function toStderr(line: string): void {
  process.stderr.write(line);
}

/** pino's JSON line → `2024-05-01T10:00:00.000Z info  [stashd:kv] message {"field":1}`. */
export function prettyLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const { time, level, scope, msg, ...fields } = entry;
  const extra = Object.keys(fields).length > 0 ? ` ${JSON.stringify(fields)}` : "";
  return `${String(time)} ${String(level).padEnd(5)} [${String(scope)}] ${String(msg)}${extra}\n`;
}

/** `redis://user:secret@host` → `redis://user:***@host`. */
export function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@");
}
