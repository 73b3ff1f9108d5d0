import { useState } from "preact/hooks";
import { query, queue, queueSend } from "../api.js";
import { FilterForm, Pager, SearchButtons, useCursorPages } from "../filters.js";
import { href, navigate, paramsOf } from "../routes.js";
import { Action, Badge, Field, fmtTime, Id, Page, Select, Table, useLoad } from "../ui.js";
import { WorkflowDlq, WorkflowTabs } from "./workflow-dlq.js";
import { stepCount, type Run } from "./workflow-run.js";

/** The run filters of GET /v2/workflows/events (docs/workflow.md, Logs). */
interface RunFilters {
  workflowRunId: string;
  state: string;
  workflowUrl: string;
  label: string;
}

const NO_RUN_FILTERS: RunFilters = { workflowRunId: "", state: "", workflowUrl: "", label: "" };
const RUN_FILTER_NAMES = Object.keys(NO_RUN_FILTERS) as (keyof RunFilters)[];

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

/**
 * Workflow runs: the runs' logs (newest first, filters in the URL: `#/workflows?state=RUN_FAILED`),
 * each opening its run page (`#/workflows/runs/<id>`), and the workflow DLQ (`#/workflows/dlq`).
 */
export function WorkflowsPage(p: { tab: string | undefined; params: URLSearchParams }) {
  return p.tab === "dlq" ? (
    <WorkflowDlq tabs={<WorkflowTabs dlq />} />
  ) : (
    <RunsList filters={paramsOf(p.params, RUN_FILTER_NAMES)} />
  );
}

function RunsList(p: { filters: RunFilters }) {
  const { filters } = p;
  const pages = useCursorPages();
  const list = useLoad(
    () =>
      queue<{ runs: Run[]; cursor?: string }>(
        `workflows/events${query({ ...filters, ...urlPrefix(filters), groupBy: "workflowRunId", count: PAGE_SIZE, cursor: pages.cursor })}`,
      ),
    [JSON.stringify(filters), pages.cursor],
  );
  const rows = list.data?.runs ?? [];
  const cancel = (id: string) =>
    queueSend("DELETE", `workflows/runs/${encodeURIComponent(id)}?cancel=true`).then(list.reload);
  return (
    <Page title="Workflow runs" actions={<WorkflowTabs />}>
      <RunFilterBar
        initial={filters}
        onApply={(f) => {
          pages.reset();
          navigate(href.list("workflows", { ...f }));
        }}
      />
      <Table
        error={list.error}
        label="workflow runs"
        stack
        rows={rows}
        rowKey={(r) => r.workflowRunId}
        onRow={(r) => navigate(href.workflowRun(r.workflowRunId))}
        empty={list.loading ? "Loading…" : "No matching workflow runs."}
        columns={[
          { title: "Created", render: (r) => fmtTime(r.workflowRunCreatedAt), class: "nowrap" },
          { title: "State", render: (r) => <Badge text={r.workflowState} /> },
          {
            title: "Run",
            render: (r) => (
              <Id value={r.workflowRunId} what="run id" href={href.workflowRun(r.workflowRunId)} />
            ),
          },
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
    <FilterForm onSubmit={() => p.onApply(f)} set={Object.values(p.initial)}>
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
    </FilterForm>
  );
}
