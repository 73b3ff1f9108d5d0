import type { Headers } from "./message.js";

/** Go's canonical header casing (`bypass-tunnel-reminder` -> `Bypass-Tunnel-Reminder`). */
export function canonicalHeader(name: string): string {
  return name
    .toLowerCase()
    .split("-")
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join("-");
}

export function addHeader(target: Headers, name: string, value: string): void {
  const key = canonicalHeader(name);
  (target[key] ??= []).push(value);
}
