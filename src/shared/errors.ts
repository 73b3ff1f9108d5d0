/**
 * The error catalog: every error stashd reports has a stable code here with its HTTP status.
 * Routes throw `AppError(code, message)`; the HTTP edge renders it as `{"error": message}` with the
 * catalog's status. Anything that is not an AppError is a bug and renders as a generic 500.
 */
export const ERROR_CATALOG = {
  bad_request: 400,
  redis_error: 400,
  command_refused: 400,
  invalid_format: 400,
  request_too_large: 400,
  daily_limit: 400,
  hop_limit: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  precondition_failed: 412,
  payload_too_large: 413,
  unprocessable: 422,
  too_many_requests: 429,
  internal: 500,
  backend_unavailable: 503,
  server_busy: 503,
  /** Redis refuses writes (MISCONF, OOM): see shared/redis/refusal.ts. */
  insufficient_storage: 507,
  invalid_config: 500,
  startup_failed: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_CATALOG;

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Response headers the error answer carries (such as `Retry-After`). */
  readonly headers: Readonly<Record<string, string>> | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options?: { cause?: unknown; headers?: Record<string, string> },
  ) {
    super(message, options);
    this.name = "AppError";
    this.code = code;
    this.status = ERROR_CATALOG[code];
    this.headers = options?.headers;
  }
}

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}

/** Message of any thrown value, for logs and wrapped causes. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
