import { useRef, useState } from "preact/hooks";
import { get, query, queue, queueSend } from "../api.js";
import { filterParams, type Filters } from "../filters.js";
import { fmtCount, messageOf, toast } from "../ui.js";

/**
 * "Act on all matching", safely (docs/console.md, Bulk actions): first every matching id is
 * collected (at most MAX_IDS) and the count shown; only an explicit confirmation acts, in
 * batches of BATCH ids with progress and a Stop button; when the API allows, an Undo follows.
 */
const MAX_IDS = 10_000;
const BATCH = 100;

export interface BulkPlan {
  /** Button text, e.g. "Retry all matching". */
  label: string;
  /** What one id is, plural: "DLQ entries". */
  noun: string;
  /** The verb on the confirm button: "Retry". */
  verb: string;
  kind: "primary" | "danger";
  /** Every matching id (at most `max`), and whether more matched. */
  collect: (max: number) => Promise<{ ids: string[]; more: boolean }>;
  /** Acts on one batch; may answer ids an undo can use (the messages a retry published). */
  act: (batch: string[]) => Promise<string[] | undefined>;
  /** Reverts what `act` did to the ids it answered; resolves how many were reverted. */
  undo?: { label: string; run: (ids: string[]) => Promise<number> };
}

type Phase =
  | { at: "idle" }
  | { at: "counting" }
  | { at: "confirm"; ids: string[]; more: boolean }
  | { at: "running"; done: number; total: number }
  | { at: "finished"; done: number; total: number; undoIds: string[]; stopped: boolean }
  | { at: "failed"; error: string; done: number; total: number };

/** A bulk action's button and, once pressed, its count, confirmation and progress. */
export function BulkAction(p: {
  plan: BulkPlan;
  disabled?: string | undefined;
  onDone: () => void;
}) {
  const [phase, setPhase] = useState<Phase>({ at: "idle" });
  const stop = useRef(false);
  const { plan } = p;
  const count = async () => {
    setPhase({ at: "counting" });
    try {
      const r = await plan.collect(MAX_IDS);
      setPhase({ at: "confirm", ids: r.ids, more: r.more });
    } catch (err) {
      setPhase({ at: "failed", error: messageOf(err), done: 0, total: 0 });
    }
  };
  const run = async (ids: string[]) => {
    stop.current = false;
    const undoIds: string[] = [];
    let done = 0;
    setPhase({ at: "running", done, total: ids.length });
    try {
      for (let i = 0; i < ids.length && !stop.current; i += BATCH) {
        const batch = ids.slice(i, i + BATCH);
        undoIds.push(...((await plan.act(batch)) ?? []));
        done += batch.length;
        setPhase({ at: "running", done, total: ids.length });
      }
      setPhase({ at: "finished", done, total: ids.length, undoIds, stopped: done < ids.length });
      toast(`${plan.verb}: ${fmtCount(done)} ${plan.noun}`);
    } catch (err) {
      setPhase({ at: "failed", error: messageOf(err), done, total: ids.length });
    }
    p.onDone();
  };
  return (
    <div class="bulk" data-bulk={plan.label}>
      {phase.at === "idle" || phase.at === "counting" ? (
        <>
          <button
            type="button"
            class={`btn ${plan.kind}`}
            disabled={phase.at === "counting" || p.disabled !== undefined}
            title={p.disabled}
            onClick={() => void count()}
          >
            {phase.at === "counting" ? "Counting…" : plan.label}
          </button>
          {p.disabled && <span class="hint">{p.disabled}</span>}
        </>
      ) : (
        <Progress
          phase={phase}
          plan={plan}
          onRun={(ids) => void run(ids)}
          onStop={() => (stop.current = true)}
          onClose={() => setPhase({ at: "idle" })}
          onUndone={p.onDone}
        />
      )}
    </div>
  );
}

function Progress(p: {
  phase: Exclude<Phase, { at: "idle" } | { at: "counting" }>;
  plan: BulkPlan;
  onRun: (ids: string[]) => void;
  onStop: () => void;
  onClose: () => void;
  onUndone: () => void;
}) {
  const { phase, plan } = p;
  const close = (
    <button type="button" class="btn plain" onClick={p.onClose}>
      Close
    </button>
  );
  if (phase.at === "confirm") {
    const n = phase.ids.length;
    if (n === 0)
      return (
        <p class="bulk-box" role="status">
          No {plan.noun} match. {close}
        </p>
      );
    return (
      <p class="bulk-box" role="alertdialog">
        <strong>
          {fmtCount(n)}
          {phase.more ? "+" : ""} {plan.noun} match
        </strong>
        {phase.more && (
          <span>(only the first {fmtCount(n)} are acted on; run it again for the rest)</span>
        )}
        <button type="button" class={`btn ${plan.kind}`} onClick={() => p.onRun(phase.ids)}>
          {plan.verb} {fmtCount(n)} {plan.noun}
        </button>
        <button type="button" class="btn plain" onClick={p.onClose}>
          Cancel
        </button>
      </p>
    );
  }
  const pct = phase.total === 0 ? 100 : Math.round((phase.done / phase.total) * 100);
  return (
    <div class="bulk-box" role="status">
      <progress max={phase.total || 1} value={phase.done} />
      <span data-bulk-progress>
        {fmtCount(phase.done)} of {fmtCount(phase.total)} ({pct}%)
      </span>
      {phase.at === "running" && (
        <button type="button" class="btn plain" onClick={p.onStop}>
          Stop
        </button>
      )}
      {phase.at === "failed" && <span class="error-line">{phase.error}</span>}
      {phase.at === "finished" && (
        <>
          <span>{phase.stopped ? "Stopped." : "Done."}</span>
          {plan.undo && phase.undoIds.length > 0 && (
            <Undo undo={plan.undo} ids={phase.undoIds} onUndone={p.onUndone} />
          )}
        </>
      )}
      {phase.at !== "running" && close}
    </div>
  );
}

function Undo(p: { undo: NonNullable<BulkPlan["undo"]>; ids: string[]; onUndone: () => void }) {
  const [state, setState] = useState<string | undefined>();
  if (state) return <span>{state}</span>;
  return (
    <button
      type="button"
      class="btn plain"
      onClick={() => {
        setState("Undoing…");
        p.undo.run(p.ids).then(
          (n) => {
            setState(`Undone: ${fmtCount(n)} of ${fmtCount(p.ids.length)}`);
            p.onUndone();
          },
          (err: unknown) => setState(messageOf(err)),
        );
      }}
    >
      {p.undo.label}
    </button>
  );
}

/** Pages a cursor list, collecting ids until `max` or the end. */
async function collectPages<T>(
  page: (cursor: string) => Promise<{ items: T[]; cursor?: string | undefined }>,
  idOf: (item: T) => string,
  max: number,
): Promise<{ ids: string[]; more: boolean }> {
  const ids: string[] = [];
  let cursor = "";
  do {
    const r = await page(cursor);
    ids.push(...r.items.map(idOf));
    cursor = r.cursor ?? "";
  } while (cursor && ids.length < max);
  return { ids: ids.slice(0, max), more: ids.length > max || cursor !== "" };
}

/** Cancels messages by id in batches; resolves how many the queue cancelled. */
async function cancelMessages(ids: string[]): Promise<number> {
  let n = 0;
  for (let i = 0; i < ids.length; i += BATCH) {
    const r = await queueSend<{ cancelled: number }>("DELETE", "messages", {
      messageIds: ids.slice(i, i + BATCH),
    });
    n += r.cancelled;
  }
  return n;
}

/** DLQ: retry (undo: cancel the retried messages not delivered yet) or delete all matching. */
export function dlqPlans(f: Filters): BulkPlan[] {
  const collect = (max: number) =>
    collectPages(
      async (cursor) => {
        const r = await queue<{ messages: { dlqId: string }[]; cursor?: string }>(
          `dlq${query({ ...filterParams(f), count: "100", cursor })}`,
        );
        return { items: r.messages, cursor: r.cursor };
      },
      (m) => m.dlqId,
      max,
    );
  return [
    {
      label: "Retry all matching",
      noun: "DLQ entries",
      verb: "Retry",
      kind: "primary",
      collect,
      act: async (dlqIds) => {
        const r = await queueSend<{ responses: { messageId: string }[] }>("POST", "dlq/retry", {
          dlqIds,
        });
        return r.responses.map((x) => x.messageId);
      },
      undo: { label: "Undo (cancel the retried messages not delivered yet)", run: cancelMessages },
    },
    {
      label: "Delete all matching",
      noun: "DLQ entries",
      verb: "Delete",
      kind: "danger",
      collect,
      act: async (dlqIds) => {
        await queueSend("DELETE", "dlq", { dlqIds });
        return undefined;
      },
    },
  ];
}

/** Messages: cancel every pending message matching the list's filters (state now included). */
export function cancelPlan(f: Filters): BulkPlan {
  return {
    label: "Cancel all matching",
    noun: "pending messages",
    verb: "Cancel",
    kind: "danger",
    collect: async (max) => {
      const r = await get<{ ids: string[] }>(`pending/ids${query(filterParams(f))}`);
      return { ids: r.ids.slice(0, max), more: r.ids.length > max };
    },
    act: async (ids) => {
      await cancelMessages(ids);
      return undefined;
    },
  };
}

/** Why "Cancel all matching" cannot run with these filters, if it cannot. */
export function cancelRefusal(f: Filters): string | undefined {
  return ["DELIVERED", "FAILED", "CANCELED"].includes(f.state)
    ? "Finished messages cannot be cancelled: choose a pending state."
    : undefined;
}

/** Workflow DLQ: resume, restart or delete every failed run (the API takes dlqIds). */
export function workflowDlqPlans(): BulkPlan[] {
  const collect = (max: number) =>
    collectPages(
      async (cursor) => {
        const r = await queue<{ messages: { dlqId: string }[]; cursor?: string }>(
          `workflows/dlq${query({ count: "100", cursor })}`,
        );
        return { items: r.messages, cursor: r.cursor };
      },
      (m) => m.dlqId,
      max,
    );
  const ids = (dlqIds: string[]) => query({ dlqIds });
  return [
    {
      label: "Resume all",
      noun: "failed runs",
      verb: "Resume",
      kind: "primary",
      collect,
      act: async (dlqIds) => {
        await queueSend("POST", `workflows/dlq/resume${ids(dlqIds)}`);
        return undefined;
      },
    },
    {
      label: "Restart all",
      noun: "failed runs",
      verb: "Restart",
      kind: "primary",
      collect,
      act: async (dlqIds) => {
        await queueSend("POST", `workflows/dlq/restart${ids(dlqIds)}`);
        return undefined;
      },
    },
    {
      label: "Delete all",
      noun: "failed runs",
      verb: "Delete",
      kind: "danger",
      collect,
      act: async (dlqIds) => {
        await queueSend("DELETE", `workflows/dlq${ids(dlqIds)}`);
        return undefined;
      },
    },
  ];
}
