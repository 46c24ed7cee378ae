import { useState } from "preact/hooks";
import { may } from "../access.ts";
import { api, type Webhook } from "../api.ts";
import { facts } from "../facts.ts";
import { dateTime } from "../format.ts";
import { Field, Page, Pager, Problem, ShownOnce, Table, useAction, useLoad } from "../ui.tsx";

/** A secret the API shows once, with what it belongs to. */
type Shown = { label: string; secret: string };

/**
 * The workspace's webhook endpoints: register one (its secret shown once), disable, enable,
 * rotate its secret, remove it, and read its deliveries, resending any.
 */
export function AdminWebhooks() {
  const hooks = useLoad(() => api.webhooks(), []);
  const creating = useAction();
  const acting = useAction();
  const [shown, setShown] = useState<Shown | undefined>();
  const [opened, setOpened] = useState<string | undefined>();
  const canWrite = may("webhooks.write");
  const act = async (work: () => Promise<unknown>) => {
    if ((await acting.run(work)) !== undefined) hooks.reload();
  };
  const openedHook = hooks.data?.items.find((hook) => hook.id === opened);
  return (
    <Page title="Webhooks">
      {canWrite && (
        <form
          class="card stack"
          noValidate
          aria-label="New webhook"
          {...creating.checks}
          onSubmit={async (event) => {
            event.preventDefault();
            const form = event.target as HTMLFormElement;
            const data = new FormData(form);
            const eventTypes = data.getAll("event_types").map(String);
            const created = await creating.submit(
              form,
              () =>
                api.createWebhook({
                  url: String(data.get("url") ?? "").trim(),
                  event_types: eventTypes,
                  description: String(data.get("description") ?? "").trim(),
                }),
              [
                eventTypes.length === 0
                  ? { field: "event_types", message: "choose at least one event" }
                  : undefined,
              ],
            );
            if (created) {
              setShown({
                label: `Signing secret of ${created.webhook.url}`,
                secret: created.secret,
              });
              form.reset();
              hooks.reload();
            }
          }}
        >
          <h2>New webhook</h2>
          <div class="grid2">
            <Field
              label="Receiver URL"
              name="url"
              type="url"
              required
              maxLength={2048}
              placeholder="https://crm.example/hooks/dialer"
              hint="https, reachable from the service; each event is signed (Standard Webhooks)"
              error={creating.field("url")}
            />
            <Field
              label="Description"
              name="description"
              maxLength={500}
              error={creating.field("description")}
            />
          </div>
          <fieldset class="plain checks">
            <legend>Events</legend>
            {facts.webhookEventTypes.map((type) => (
              <label key={type}>
                <input type="checkbox" name="event_types" value={type} /> {type}
              </label>
            ))}
            {creating.field("event_types") && (
              <small class="field-error">{creating.field("event_types")}</small>
            )}
          </fieldset>
          <div class="buttons">
            <button type="submit" class="primary" disabled={creating.busy}>
              Create webhook
            </button>
          </div>
          <Problem error={creating.error} />
        </form>
      )}
      {shown && <ShownOnce label={shown.label} secret={shown.secret} />}
      <Problem error={hooks.error ?? acting.error} />
      <section class="card" aria-label="Endpoints">
        <Table label="Webhooks" stacked>
          <thead>
            <tr>
              <th scope="col">Receiver</th>
              <th scope="col">Events</th>
              <th scope="col">Status</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {hooks.data?.items.map((hook) => (
              <tr key={hook.id} data-webhook={hook.url}>
                <th scope="row">
                  <code>{hook.url}</code>
                  {hook.description && <div class="small muted">{hook.description}</div>}
                </th>
                <td class="small">{hook.event_types.join(", ")}</td>
                <td>
                  <Status hook={hook} />
                </td>
                <td>
                  <div class="buttons">
                    <button
                      type="button"
                      aria-label={`Deliveries of ${hook.url}`}
                      aria-pressed={opened === hook.id}
                      onClick={() => setOpened(opened === hook.id ? undefined : hook.id)}
                    >
                      Deliveries
                    </button>
                    {canWrite && (
                      <>
                        <button
                          type="button"
                          onClick={() =>
                            act(() =>
                              api.patchWebhook(hook.id, { enabled: hook.status !== "enabled" }),
                            )
                          }
                        >
                          {hook.status === "enabled" ? "Disable" : "Enable"}
                        </button>
                        <button
                          type="button"
                          onClick={() =>
                            act(async () => {
                              const rotated = await api.rotateWebhookSecret(hook.id);
                              setShown({
                                label: `New signing secret of ${hook.url} (the previous one signs too for a day)`,
                                secret: rotated.secret,
                              });
                              return rotated;
                            })
                          }
                        >
                          Rotate secret
                        </button>
                        <button
                          type="button"
                          onClick={() => {
                            if (window.confirm(`Remove the webhook to ${hook.url}?`))
                              void act(() => api.deleteWebhook(hook.id));
                          }}
                        >
                          Remove
                        </button>
                      </>
                    )}
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
      </section>
      {openedHook && <Deliveries key={openedHook.id} hook={openedHook} canResend={canWrite} />}
    </Page>
  );
}

function Status({ hook }: { hook: Webhook }) {
  if (hook.status === "disabled")
    return (
      <span>
        <strong class="over">disabled</strong>
        {hook.disabled_reason && <div class="small">{hook.disabled_reason}</div>}
      </span>
    );
  return (
    <span>
      <span class="status-running">enabled</span>
      {hook.failing_since && <div class="small">failing since {dateTime(hook.failing_since)}</div>}
    </span>
  );
}

/** Every attempt to deliver to one endpoint, newest first, each one resendable. */
function Deliveries({ hook, canResend }: { hook: Webhook; canResend: boolean }) {
  const [offset, setOffset] = useState(0);
  const log = useLoad(() => api.webhookDeliveries(hook.id, { offset, limit: 50 }), [offset]);
  const resending = useAction();
  const [resent, setResent] = useState<string | undefined>();
  return (
    <section class="card" aria-labelledby="deliveries-title">
      <h2 id="deliveries-title">Deliveries to {hook.url}</h2>
      <Problem error={log.error ?? resending.error} />
      {resent && <p role="status">Sent again: {resent}</p>}
      <Table label="Deliveries" stacked>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Event</th>
            <th scope="col">Attempt</th>
            <th scope="col">Answer</th>
            <th scope="col">Took</th>
            {canResend && <th scope="col">Actions</th>}
          </tr>
        </thead>
        <tbody>
          {log.data?.items.map((attempt) => (
            <tr key={attempt.id}>
              <td>{dateTime(attempt.attempted_at)}</td>
              <th scope="row">
                {attempt.event_type}
                <div class="small muted">
                  <code>{attempt.event_id}</code>
                </div>
              </th>
              <td>{attempt.attempt}</td>
              <td>
                <span class={ok(attempt.response_status) ? "status-running" : "over"}>
                  {attempt.response_status ?? "no answer"}
                </span>
                <div class="small">{attempt.error ?? attempt.response_body?.slice(0, 120)}</div>
              </td>
              <td>{attempt.duration_ms} ms</td>
              {canResend && (
                <td>
                  <button
                    type="button"
                    aria-label={`Send ${attempt.event_id} again`}
                    onClick={async () => {
                      if (await resending.run(() => api.resendDelivery(hook.id, attempt.id)))
                        setResent(attempt.event_id);
                    }}
                  >
                    Send again
                  </button>
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </Table>
      {log.data && (
        <Pager
          total={log.data.total}
          limit={log.data.limit}
          offset={log.data.offset}
          onPage={setOffset}
        />
      )}
    </section>
  );
}

const ok = (status: number | null) => status !== null && status >= 200 && status < 300;
