/**
 * What a child process costs, read from Linux's /proc (elsewhere every figure is NaN): CPU time
 * used so far and resident memory, so a bench can state CPU per message and RSS under load.
 */
import { spawnSync, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";

const TICKS_PER_S = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout) || 100;

/** User + system CPU time of `pid` so far, in ms. */
export function cpuMs(pid: number | undefined): number {
  const { user, system } = cpuSplitMs(pid);
  return user + system;
}

/** User and system CPU time of `pid` so far, in ms (NaN where /proc is not readable). */
export function cpuSplitMs(pid: number | undefined): { user: number; system: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces) start at field 3; utime is 14.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ms = (ticks: string | undefined): number => (Number(ticks) * 1000) / TICKS_PER_S;
    return { user: ms(fields[11]), system: ms(fields[12]) };
  } catch {
    return { user: NaN, system: NaN };
  }
}

/** Resident set size now and its peak (VmRSS, VmHWM) of `pid`, in MB. */
export function rssMb(pid: number | undefined): { now: number; peak: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1]);
    return { now: kb("VmRSS") / 1024, peak: kb("VmHWM") / 1024 };
  } catch {
    return { now: NaN, peak: NaN };
  }
}

/** The stashd processes of a `bin/stashd start` child: it, and its node children (workers). */
export function stashdPids(child: ChildProcess): number[] {
  const ps = spawnSync("ps", ["-o", "pid=,comm=", "--ppid", String(child.pid)], {
    encoding: "utf8",
  });
  const workers = ps.stdout
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter(([, comm]) => comm === "node")
    .map(([pid]) => Number(pid));
  return [child.pid ?? 0, ...workers];
}
