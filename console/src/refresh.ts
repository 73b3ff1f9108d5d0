import { useEffect, useRef, useState } from "preact/hooks";

/**
 * How often the console's live parts refresh, as the user chose it in the status bar: the
 * summary's period in ms, or 0 for paused. Every live part (the counts, the lists that refresh
 * themselves, the charts) scales its own period by `choice / DEFAULT_MS`, so their relative
 * paces stay; paused, none refreshes until resumed (a page still loads when opened or asked).
 * Kept in localStorage, so a reload or another tab keeps it.
 */
export const DEFAULT_MS = 3000;
export const CHOICES: readonly { ms: number; label: string }[] = [
  { ms: 1000, label: "every 1 s" },
  { ms: 3000, label: "every 3 s" },
  { ms: 10_000, label: "every 10 s" },
  { ms: 30_000, label: "every 30 s" },
  { ms: 0, label: "paused" },
];
const KEY = "stashd.console.refreshMs";

function stored(): number {
  try {
    const ms = Number(localStorage.getItem(KEY));
    return CHOICES.some((c) => c.ms === ms) && localStorage.getItem(KEY) !== null ? ms : DEFAULT_MS;
  } catch {
    return DEFAULT_MS; // storage refused (private mode, a policy): the default, not kept
  }
}

let current = stored();
const listeners = new Set<(ms: number) => void>();

export function refreshChoice(): number {
  return current;
}

export function chooseRefresh(ms: number): void {
  current = ms;
  try {
    localStorage.setItem(KEY, String(ms));
  } catch {
    // not kept across reloads; still applied now
  }
  for (const listener of listeners) listener(ms);
}

/** The choice, re-rendering the component when it changes. */
export function useRefreshChoice(): number {
  const [ms, setMs] = useState(current);
  useEffect(() => {
    listeners.add(setMs);
    return () => void listeners.delete(setMs);
  }, []);
  return ms;
}

const nowListeners = new Set<() => void>();

/**
 * "Refresh now" (the status bar's button beside the choice): every part on screen loads again at
 * once (the counts, every list and page loaded with useLoad), paused or not.
 */
export function refreshNow(): void {
  for (const again of [...nowListeners]) again();
}

/** Calls `fn` on every "Refresh now" while the component is mounted. */
export function useRefreshNow(fn: () => void): void {
  const saved = useRef(fn);
  saved.current = fn;
  useEffect(() => {
    const again = () => saved.current();
    nowListeners.add(again);
    return () => void nowListeners.delete(again);
  }, []);
}

/** A live part's period under the choice: `baseMs` at the default, undefined when paused. */
export function scaledPeriod(baseMs: number, choiceMs: number): number | undefined {
  return choiceMs === 0 ? undefined : Math.max(500, Math.round((baseMs * choiceMs) / DEFAULT_MS));
}
