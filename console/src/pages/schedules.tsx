import { useState } from "preact/hooks";
import { ApiError, queue, queueSend } from "../api.js";
import { href, navigate } from "../routes.js";
import {
  Action,
  PauseToggle,
  Badge,
  Field,
  fmtTime,
  ActionForm,
  Page,
  Panel,
  Pre,
  Table,
  useLoad,
} from "../ui.js";

interface Schedule {
  scheduleId: string;
  cron: string;
  destination: string;
  method: string;
  body?: string;
  retries: number;
  createdAt: number;
  lastScheduleTime: number;
  nextScheduleTime: number;
  isPaused: boolean;
  queueName?: string;
}

/**
 * Schedules: list, create (destination + cron + body), pause, resume, delete; `#/schedules/<id>`
 * opens one.
 */
export function SchedulesPage(p: { id: string | undefined }) {
  const list = useLoad(() => queue<Schedule[]>("schedules"), []);
  const rows = [...(list.data ?? [])].sort((a, b) => b.createdAt - a.createdAt);
  const open = rows.find((s) => s.scheduleId === p.id);
  const id = (s: Schedule) => encodeURIComponent(s.scheduleId);
  const close = () => navigate(href.list("schedules"));
  return (
    <Page
      title="Schedules"
      side={
        p.id !== undefined && (
          <Panel title={`Schedule ${p.id}`} onClose={close}>
            {open ? (
              <>
                <p>
                  <a href={href.list("logs", { scheduleId: open.scheduleId })}>
                    Its messages in the logs
                  </a>
                </p>
                <Pre value={open} />
              </>
            ) : (
              <p class="hint">{list.loading ? "Loading…" : `No schedule ${p.id}.`}</p>
            )}
          </Panel>
        )
      }
    >
      <NewSchedule onCreated={list.reload} />
      <Table
        error={list.error}
        label="schedules"
        rows={rows}
        rowKey={(s) => s.scheduleId}
        selected={p.id}
        onRow={(s) => navigate(href.schedule(s.scheduleId))}
        empty={list.loading ? "Loading…" : "No schedules yet."}
        columns={[
          { title: "Id", render: (s) => <code>{s.scheduleId}</code> },
          { title: "Cron", render: (s) => <code>{s.cron}</code> },
          { title: "Destination", render: (s) => <span class="url">{s.destination}</span> },
          { title: "Next", render: (s) => fmtTime(s.nextScheduleTime), class: "nowrap" },
          { title: "Last", render: (s) => fmtTime(s.lastScheduleTime), class: "nowrap" },
          { title: "State", render: (s) => <Badge text={s.isPaused ? "PAUSED" : "ACTIVE"} /> },
          {
            title: "",
            class: "nowrap",
            render: (s) => (
              <>
                <PauseToggle
                  paused={s.isPaused}
                  run={(verb) => queueSend("POST", `schedules/${id(s)}/${verb}`).then(list.reload)}
                />
                <Action
                  label="Delete"
                  kind="danger"
                  confirm={`Delete schedule ${s.scheduleId}?`}
                  done="Deleted"
                  run={() => queueSend("DELETE", `schedules/${id(s)}`).then(list.reload)}
                />
              </>
            ),
          },
        ]}
      />
    </Page>
  );
}

function NewSchedule(p: { onCreated: () => void }) {
  const [destination, setDestination] = useState("");
  const [cron, setCron] = useState("*/5 * * * *");
  const [body, setBody] = useState("");
  const [scheduleId, setScheduleId] = useState("");
  /** Asks before a schedule id in use is replaced (the API replaces it silently). */
  const replaceAllowed = async (): Promise<boolean> => {
    if (!scheduleId) return true;
    let old: Schedule;
    try {
      old = await queue<Schedule>(`schedules/${encodeURIComponent(scheduleId)}`);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return true;
      throw err;
    }
    return window.confirm(
      `Schedule ${scheduleId} exists (${old.cron} → ${old.destination}). Replace it?`,
    );
  };
  const create = async () => {
    if (!(await replaceAllowed())) return false;
    await queueSend<{ scheduleId: string }>("POST", `schedules/${destination}`, body, {
      "content-type": "text/plain",
      "upstash-cron": cron,
      ...(scheduleId ? { "upstash-schedule-id": scheduleId } : {}),
    });
    setDestination("");
    setBody("");
    setScheduleId("");
    p.onCreated();
    return true;
  };
  return (
    <ActionForm
      label="Create schedule"
      disabled={!destination || !cron}
      done="Schedule created"
      run={create}
    >
      <Field
        label="Destination URL"
        value={destination}
        onInput={setDestination}
        width="20rem"
        name="destination"
      />
      <Field label="Cron" value={cron} onInput={setCron} width="9rem" name="cron" />
      <Field label="Body" value={body} onInput={setBody} width="14rem" name="body" />
      <Field
        label="Schedule id (optional)"
        value={scheduleId}
        onInput={setScheduleId}
        name="scheduleId"
      />
    </ActionForm>
  );
}
