import path from "node:path";
import { readJsonFile, writeJsonFile } from "./shared/files.js";

/**
 * `<dataDir>/runtime.json`: what a running stashd actually bound (ports chosen with 0 included),
 * so `stashd credentials` prints the real URLs. Removed on clean shutdown.
 */
export interface RuntimeInfo {
  pid: number;
  kvUrl: string;
  queueUrl?: string;
  startedAt: string;
}

export function runtimeFile(dataDir: string): string {
  return path.join(dataDir, "runtime.json");
}

export function writeRuntime(dataDir: string, info: RuntimeInfo): void {
  writeJsonFile(runtimeFile(dataDir), info);
}

/** The runtime info of a live stashd on this data dir, or undefined. */
export function readRuntime(dataDir: string): RuntimeInfo | undefined {
  let info: RuntimeInfo | undefined;
  try {
    info = readJsonFile(runtimeFile(dataDir)) as RuntimeInfo | undefined;
  } catch {
    return undefined;
  }
  if (!info) return undefined;
  try {
    process.kill(info.pid, 0);
    return info;
  } catch {
    return undefined;
  }
}
