import { useState } from "preact/hooks";
import { queue, queueSend } from "../api.js";
import { Action, ActionForm, Field, Page, Table, useLoad } from "../ui.js";

interface Endpoint {
  name?: string;
  url: string;
}

interface UrlGroup {
  name: string;
  endpoints: Endpoint[];
}

/** URL groups: list with endpoints, add an endpoint (creating the group), remove one, delete. */
export function UrlGroupsPage() {
  const list = useLoad(() => queue<UrlGroup[]>("topics"), []);
  const [group, setGroup] = useState("");
  const [name, setName] = useState("");
  const [url, setUrl] = useState("");
  const endpoints = (g: string) => `topics/${encodeURIComponent(g)}/endpoints`;
  return (
    <Page title="URL groups">
      <ActionForm
        label="Add endpoint"
        disabled={!group || !url}
        done="Endpoint added"
        run={async () => {
          await queueSend("POST", endpoints(group), {
            endpoints: [{ url, ...(name ? { name } : {}) }],
          });
          setUrl("");
          setName("");
          list.reload();
        }}
      >
        <Field label="Group" value={group} onInput={setGroup} name="group" />
        <Field
          label="Endpoint name (optional)"
          value={name}
          onInput={setName}
          name="endpointName"
        />
        <Field label="Endpoint URL" value={url} onInput={setUrl} width="20rem" name="endpointUrl" />
      </ActionForm>
      <Table
        error={list.error}
        label="url groups"
        rows={list.data ?? []}
        rowKey={(g) => g.name}
        empty={list.loading ? "Loading…" : "No URL groups yet."}
        columns={[
          { title: "Group", render: (g) => <code>{g.name}</code> },
          {
            title: "Endpoints",
            render: (g) => (
              <ul class="endpoints">
                {g.endpoints.map((e) => (
                  <li key={e.url}>
                    <span class="url">{e.name ? `${e.name}: ${e.url}` : e.url}</span>
                    <Action
                      label="Remove"
                      kind="danger"
                      done="Endpoint removed"
                      run={() =>
                        queueSend("DELETE", endpoints(g.name), {
                          endpoints: [{ url: e.url }],
                        }).then(list.reload)
                      }
                    />
                  </li>
                ))}
              </ul>
            ),
          },
          {
            title: "",
            render: (g) => (
              <Action
                label="Delete group"
                kind="danger"
                confirm={`Delete URL group ${g.name}?`}
                done="Group deleted"
                run={() =>
                  queueSend("DELETE", `topics/${encodeURIComponent(g.name)}`).then(list.reload)
                }
              />
            ),
          },
        ]}
      />
    </Page>
  );
}
