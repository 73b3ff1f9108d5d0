import { Action, Badge, Facts, fmtTime, Panel, Pre, Table } from "../ui.js";

/** One step as GET /v2/workflows/events lists it (pending steps carry only id and state). */
export interface RunStep {
  messageId?: string;
  stepName?: string;
  stepType?: string;
  state: string;
  out?: unknown;
  errors?: { error: string; status?: number }[];
}

/** One run of GET /v2/workflows/events?groupBy=workflowRunId (docs/workflow.md, Logs). */
export interface Run {
  workflowRunId: string;
  workflowUrl: string;
  workflowState: string;
  workflowRunCreatedAt: number;
  workflowRunCompletedAt?: number;
  workflowRunResponse?: unknown;
  label?: string;
  dlqId?: string;
  steps: { type: string; steps: RunStep[] }[];
}

/** Steps shown in a list are cut to this many characters of output. */
const OUT_CHARS = 120;

/** Completed steps (the init step included); the pending "next" group is not counted. */
export const stepCount = (r: Run): number =>
  r.steps.filter((g) => g.type !== "next").reduce((n, g) => n + g.steps.length, 0);

function shorten(out: unknown): string {
  if (out === undefined) return "";
  const text = typeof out === "string" ? out : JSON.stringify(out);
  return text.length > OUT_CHARS ? `${text.slice(0, OUT_CHARS)}…` : text;
}

/** A run: its facts, every step (parallel groups flattened, marked), and Cancel while running. */
export function RunDetail(p: { run: Run; onClose: () => void; onCancel: () => Promise<unknown> }) {
  const r = p.run;
  const steps = r.steps.flatMap((g, gi) =>
    g.steps.map((s, si) => ({ ...s, group: g.type, key: `${gi}.${si}` })),
  );
  return (
    <Panel title={`Run ${r.workflowRunId}`} onClose={p.onClose}>
      {r.workflowState === "RUN_STARTED" && (
        <div class="bar">
          <Action
            label="Cancel run"
            kind="danger"
            confirm={`Cancel workflow run ${r.workflowRunId}?`}
            done="Run cancelled"
            run={p.onCancel}
          />
        </div>
      )}
      <Facts
        items={[
          ["State", <Badge text={r.workflowState} />],
          ["URL", <span class="url">{r.workflowUrl}</span>],
          ["Created", fmtTime(r.workflowRunCreatedAt)],
          ["Completed", fmtTime(r.workflowRunCompletedAt)],
          ["Label", r.label ?? "—"],
          ["DLQ id", r.dlqId ?? "—"],
        ]}
      />
      <h3>Steps</h3>
      <Table
        label="workflow steps"
        rows={steps}
        rowKey={(s) => s.key}
        columns={[
          { title: "Name", render: (s) => s.stepName ?? (s.group === "next" ? "(next)" : "") },
          {
            title: "Type",
            render: (s) => `${s.stepType ?? ""}${s.group === "parallel" ? " ∥" : ""}`,
          },
          { title: "State", render: (s) => <Badge text={s.state} /> },
          {
            title: "Output",
            render: (s) => (
              <code>{shorten(s.out ?? s.errors?.map((e) => e.error).join("; "))}</code>
            ),
          },
        ]}
      />
      {r.workflowRunResponse !== undefined && (
        <>
          <h3>Response</h3>
          <Pre value={r.workflowRunResponse} />
        </>
      )}
    </Panel>
  );
}
