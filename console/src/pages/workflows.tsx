import { useState } from "preact/hooks";
import { query, queue, queueSend } from "../api.js";
import { Pager, SearchButtons, useCursorPages } from "../filters.js";
import { Action, Badge, Field, Form, fmtTime, Page, Select, Table, useLoad } from "../ui.js";
import { WorkflowDlq } from "./workflow-dlq.js";
import { RunDetail, stepCount, type Run } from "./workflow-run.js";

/** The run filters of GET /v2/workflows/events (docs/workflow.md, Logs). */
interface RunFilters {
  workflowRunId: string;
  state: string;
  workflowUrl: string;
  label: string;
}

const NO_RUN_FILTERS: RunFilters = { workflowRunId: "", state: "", workflowUrl: "", label: "" };

const RUN_STATES: [string, string][] = [
  ["", "any state"],
  ["RUN_STARTED", "running"],
  ["RUN_SUCCESS", "succeeded"],
  ["RUN_FAILED", "failed"],
  ["RUN_CANCELED", "cancelled"],
];

const PAGE_SIZE = "20";

/** The URL filter is a prefix here (the API matches whole URLs unless told otherwise). */
const urlPrefix = (f: RunFilters) => (f.workflowUrl ? { workflowUrlExactMatch: "false" } : {});

/** Workflow runs: the runs' logs with their steps (newest first), and the workflow DLQ. */
export function WorkflowsPage(p: { tab: string | undefined }) {
  return p.tab === "dlq" ? <WorkflowDlq tabs={<WorkflowTabs dlq />} /> : <RunsList />;
}

/** Switches between the runs and the workflow DLQ (a hash route each, so links keep the tab). */
export function WorkflowTabs(p: { dlq?: boolean }) {
  return (
    <nav class="bar tabs" aria-label="workflow tabs">
      <a href="#/workflows" class={p.dlq ? "btn plain" : "btn primary"}>
        Runs
      </a>
      <a href="#/workflows/dlq" class={p.dlq ? "btn primary" : "btn plain"}>
        Workflow DLQ
      </a>
    </nav>
  );
}

function RunsList() {
  const [filters, setFilters] = useState(NO_RUN_FILTERS);
  const [open, setOpen] = useState<string | undefined>();
  const pages = useCursorPages();
  const list = useLoad(
    () =>
      queue<{ runs: Run[]; cursor?: string }>(
        `workflows/events${query({ ...filters, ...urlPrefix(filters), groupBy: "workflowRunId", count: PAGE_SIZE, cursor: pages.cursor })}`,
      ),
    [filters, pages.cursor],
  );
  const rows = list.data?.runs ?? [];
  const opened = rows.find((r) => r.workflowRunId === open);
  const cancel = (id: string) =>
    queueSend("DELETE", `workflows/runs/${encodeURIComponent(id)}?cancel=true`).then(list.reload);
  return (
    <Page
      title="Workflow runs"
      actions={<WorkflowTabs />}
      side={
        opened && (
          <RunDetail
            run={opened}
            onClose={() => setOpen(undefined)}
            onCancel={() => cancel(opened.workflowRunId)}
          />
        )
      }
    >
      <RunFilterBar
        initial={filters}
        onApply={(f) => {
          setFilters(f);
          pages.reset();
        }}
      />
      <div class="bar">
        <Action label="Refresh" run={async () => list.reload()} />
      </div>
      <Table
        error={list.error}
        label="workflow runs"
        rows={rows}
        rowKey={(r) => r.workflowRunId}
        selected={open}
        onRow={(r) => setOpen(r.workflowRunId)}
        empty={list.loading ? "Loading…" : "No matching workflow runs."}
        columns={[
          { title: "Created", render: (r) => fmtTime(r.workflowRunCreatedAt), class: "nowrap" },
          { title: "State", render: (r) => <Badge text={r.workflowState} /> },
          { title: "Run", render: (r) => <code>{r.workflowRunId}</code> },
          { title: "URL", render: (r) => <span class="url">{r.workflowUrl}</span> },
          { title: "Label", render: (r) => r.label ?? "" },
          { title: "Steps", render: (r) => String(stepCount(r)) },
          {
            title: "",
            render: (r) =>
              r.workflowState === "RUN_STARTED" && (
                <Action
                  label="Cancel"
                  kind="danger"
                  confirm={`Cancel workflow run ${r.workflowRunId}?`}
                  done="Run cancelled"
                  run={() => cancel(r.workflowRunId)}
                />
              ),
          },
        ]}
      />
      <Pager page={pages.page} next={list.data?.cursor} onNext={pages.next} onPrev={pages.prev} />
    </Page>
  );
}

function RunFilterBar(p: { initial: RunFilters; onApply: (f: RunFilters) => void }) {
  const [f, setF] = useState(p.initial);
  const set = (k: keyof RunFilters) => (v: string) => setF({ ...f, [k]: v });
  return (
    <Form onSubmit={() => p.onApply(f)} class="bar filters">
      <Field label="Run id" value={f.workflowRunId} onInput={set("workflowRunId")} width="16rem" />
      <Select label="State" value={f.state} options={RUN_STATES} onChange={set("state")} />
      <Field label="URL" value={f.workflowUrl} onInput={set("workflowUrl")} width="16rem" />
      <Field label="Label" value={f.label} onInput={set("label")} width="9rem" />
      <SearchButtons
        onClear={() => {
          setF(NO_RUN_FILTERS);
          p.onApply(NO_RUN_FILTERS);
        }}
      />
    </Form>
  );
}
