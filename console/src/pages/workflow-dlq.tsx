import { query, queue, queueSend } from "../api.js";
import { Pager, useCursorPages } from "../filters.js";
import { href, navigate } from "../routes.js";
import { BulkAction, workflowDlqPlans } from "./bulk.js";
import { Action, fmtTime, Id, Page, Table, useLoad, type Children } from "../ui.js";

/** One failed run as GET /v2/workflows/dlq lists it (docs/workflow.md, workflow DLQ). */
interface WorkflowDlqEntry {
  dlqId: string;
  workflowRunId: string;
  workflowUrl: string;
  workflowCreatedAt: number;
  responseStatus: number;
  responseBody?: string;
  responseHeader?: Record<string, string[]>;
}

/**
 * The failed step's name as the endpoint reported it on its failed answer (the SDK's
 * `Upstash-Error-Step-Name`, docs/workflow.md §12); the run's page says more.
 */
const failedStepName = (m: WorkflowDlqEntry): string | undefined =>
  Object.entries(m.responseHeader ?? {}).find(
    ([name]) => name.toLowerCase() === "upstash-error-step-name",
  )?.[1][0];

/**
 * The workflow DLQ: one entry per failed run; resume (keep done steps), restart, or delete. A row
 * opens its run's page, which shows the failure.
 */
export function WorkflowDlq(p: { tabs: Children }) {
  const pages = useCursorPages();
  const list = useLoad(
    () =>
      queue<{ messages: WorkflowDlqEntry[]; cursor?: string }>(
        `workflows/dlq${query({ order: "latestFirst", count: "50", cursor: pages.cursor })}`,
      ),
    [pages.cursor],
  );
  const act = (method: string, path: string) => () => queueSend(method, path).then(list.reload);
  return (
    <Page title="Workflow DLQ" actions={p.tabs}>
      <div class="bar">
        {workflowDlqPlans().map((plan) => (
          <BulkAction key={plan.label} plan={plan} onDone={list.reload} />
        ))}
      </div>
      <Table
        error={list.error}
        label="workflow dlq"
        stack
        rows={list.data?.messages ?? []}
        rowKey={(m) => m.dlqId}
        onRow={(m) => navigate(href.workflowRun(m.workflowRunId))}
        empty={list.loading ? "Loading…" : "No failed workflow runs."}
        columns={[
          {
            title: "Failed at",
            render: (m) => fmtTime(Number(m.dlqId.split("-")[0])),
            class: "nowrap",
          },
          {
            title: "Run",
            render: (m) => (
              <Id value={m.workflowRunId} what="run id" href={href.workflowRun(m.workflowRunId)} />
            ),
          },
          { title: "URL", render: (m) => <span class="url">{m.workflowUrl}</span> },
          { title: "Status", render: (m) => String(m.responseStatus) },
          {
            title: "Step",
            render: (m) => {
              const step = failedStepName(m);
              return step === undefined ? "—" : <code>{step}</code>;
            },
          },
          {
            title: "",
            class: "nowrap",
            render: (m) => {
              const id = encodeURIComponent(m.dlqId);
              return (
                <>
                  <Action
                    label="Resume"
                    kind="primary"
                    confirm={`Resume workflow run ${m.workflowRunId} from its failed step?`}
                    done="Resumed"
                    run={act("POST", `workflows/dlq/resume/${id}`)}
                  />
                  <Action
                    label="Restart"
                    confirm={`Restart workflow run ${m.workflowRunId} from its first step? Its completed steps run again.`}
                    done="Restarted"
                    run={act("POST", `workflows/dlq/restart/${id}`)}
                  />
                  <Action
                    label="Delete"
                    kind="danger"
                    confirm="Delete this failed run from the DLQ?"
                    done="Deleted"
                    run={act("DELETE", `workflows/dlq/${id}`)}
                  />
                </>
              );
            },
          },
        ]}
      />
      <Pager page={pages.page} next={list.data?.cursor} onNext={pages.next} onPrev={pages.prev} />
    </Page>
  );
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
