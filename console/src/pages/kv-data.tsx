import { dataLevel, type DataSize } from "../data-level.js";
import { fmtBytes } from "../ui.js";

/** "85 %", floored: "100 %" only at or past the limit; "< 1 %" for a little data, not "0 %". */
function percent(used: number, limit: number): string {
  const share = Math.floor((used / limit) * 100);
  return share === 0 && used > 0 ? "< 1 %" : `${share} %`;
}

/**
 * The KV page's data size line: "Data 12.3 MiB of 8.0 GiB" with a usage bar, amber past 80 %,
 * red at the limit (FULL_AT) with what to do, neutral for a cache that evicts at its limit; "no
 * limit set" for a Redis without maxmemory; "not known"
 * (with Redis's reason) when it does not answer. Refreshed with the summary (every 3 s).
 */
export function DataMeter(p: { data: DataSize | undefined }) {
  const d = p.data;
  const level = dataLevel(d);
  if (d === undefined) return <div class="data-meter" data-level="unknown" />;
  if ("unknown" in d) {
    return (
      <div class="data-meter" data-level="unknown">
        <span class="data-text">Data size not known: {d.unknown}</span>
      </div>
    );
  }
  if (d.limit === null) {
    return (
      <div class="data-meter" data-level="none">
        <span class="data-text">Data {fmtBytes(d.used)} · no limit set</span>
      </div>
    );
  }
  const width = `${Math.min(100, (d.used / d.limit) * 100).toFixed(1)}%`;
  return (
    <div class={`data-meter ${level}`} data-level={level}>
      <span class="data-text">
        Data {fmtBytes(d.used)} of {fmtBytes(d.limit)}
      </span>
      <span
        class="data-bar"
        role="meter"
        aria-label="data size"
        aria-valuemin={0}
        aria-valuemax={d.limit}
        aria-valuenow={Math.min(d.used, d.limit)}
      >
        <span style={{ width }} />
      </span>
      <span class="data-pct">{percent(d.used, d.limit)}</span>
      {level === "evicts" && (
        <p class="data-why">
          A cache: at its limit Redis evicts the least recently used keys instead of refusing writes
          (created with --eviction).
        </p>
      )}
      {level === "full" && (
        <p class="data-why" role="alert">
          At its limit: writes are refused: delete keys or set TTLs, or raise the limit:
          STASHD_KV_MAX_DATA_BYTES / --max-data-size.
        </p>
      )}
      {level === "warn" && (
        <p class="data-why">Nearly full: writes are refused once the data reaches the limit.</p>
      )}
    </div>
  );
}

/** The side bar's mark beside a database that is nearly full (▲ amber) or full (● red). */
export function DataMark(p: { data: DataSize | undefined }) {
  const level = dataLevel(p.data);
  if ((level !== "warn" && level !== "full") || !p.data || "unknown" in p.data) return null;
  const share = p.data.limit === null ? "" : percent(p.data.used, p.data.limit);
  const title =
    level === "full"
      ? `data at its limit (${share}): writes are refused`
      : `data ${share} of its limit`;
  return (
    <span class={`data-mark ${level}`} data-level={level} title={title} aria-label={title}>
      {level === "full" ? "●" : "▲"}
    </span>
  );
}
