import { useEffect, useState } from "preact/hooks";
import { grantableRoles } from "../access.ts";
import { type ApiKey, api, type User } from "../api.ts";
import { facts } from "../facts.ts";
import { dateTime, label } from "../format.ts";
import { navigate } from "../router.ts";
import { profileOptions, UNREGULATED_NOTE } from "../rules.ts";
import { pickedTenant, session, workspace } from "../session.ts";
import {
  Field,
  Page,
  Pager,
  Problem,
  Select,
  ShownOnce,
  Table,
  useAction,
  useLoad,
} from "../ui.tsx";

export function AdminUsers() {
  const [offset, setOffset] = useState(0);
  const users = useLoad(() => api.users({ offset, limit: 50 }), [offset]);
  const creating = useAction();
  const changing = useAction();
  const me = session.value?.user.id;
  const patch = async (user: User, change: { role?: User["role"]; status?: User["status"] }) => {
    if (await changing.run(() => api.patchUser(user.id, change))) users.reload();
  };
  return (
    <Page title="Users">
      <form
        class="inline card"
        noValidate
        aria-label="New user"
        {...creating.checks}
        onSubmit={async (event) => {
          event.preventDefault();
          const form = event.target as HTMLFormElement;
          const data = new FormData(form);
          const created = await creating.submit(form, () =>
            api.createUser({
              email: String(data.get("email")),
              password: String(data.get("password")),
              role: String(data.get("role")) as User["role"],
            }),
          );
          if (created) {
            form.reset();
            users.reload();
          }
        }}
      >
        <Field
          label="E-mail"
          name="email"
          type="email"
          autoComplete="off"
          required
          {...facts.inputLimits.user.email}
          error={creating.field("email")}
        />
        <Field
          label="First password"
          name="password"
          type="text"
          autoComplete="off"
          required
          {...facts.inputLimits.user.password}
          hint="12+ characters; changed at first sign-in"
          error={creating.field("password")}
        />
        <Select
          label="Role"
          name="role"
          options={grantableRoles()}
          defaultValue="agent"
          error={creating.field("role")}
        />
        <button type="submit" class="primary" disabled={creating.busy}>
          Create user
        </button>
        <Problem error={creating.error} />
      </form>
      <Problem error={users.error ?? changing.error} />
      <section class="card" aria-label="User list">
        <Table label="Users" stacked>
          <thead>
            <tr>
              <th scope="col">E-mail</th>
              <th scope="col">Role</th>
              <th scope="col">Status</th>
              <th scope="col">Created</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {users.data?.items.map((user) => (
              <tr key={user.id}>
                <th scope="row">{user.email}</th>
                <td data-label="Role">
                  <select
                    aria-label={`Role of ${user.email}`}
                    value={user.role}
                    disabled={user.id === me}
                    onChange={(event) =>
                      patch(user, {
                        role: (event.target as HTMLSelectElement).value as User["role"],
                      })
                    }
                  >
                    {grantableRoles().map((role) => (
                      <option key={role} value={role}>
                        {label(role)}
                      </option>
                    ))}
                  </select>
                </td>
                <td data-label="Status">
                  {user.status}
                  {user.must_change_password && <span class="muted small"> · first password</span>}
                </td>
                <td data-label="Created">{dateTime(user.created_at)}</td>
                <td data-label="Actions">
                  <button
                    type="button"
                    disabled={user.id === me}
                    aria-label={`${user.status === "active" ? "Disable" : "Enable"} ${user.email}`}
                    onClick={() =>
                      patch(user, { status: user.status === "active" ? "disabled" : "active" })
                    }
                  >
                    {user.status === "active" ? "Disable" : "Enable"}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
        {users.data && (
          <Pager
            total={users.data.total}
            limit={users.data.limit}
            offset={users.data.offset}
            onPage={setOffset}
          />
        )}
      </section>
    </Page>
  );
}

type Scopes = ApiKey["scopes"];

export function AdminApiKeys() {
  const keys = useLoad(() => api.apiKeys(), []);
  const creating = useAction();
  const revoking = useAction();
  const [shown, setShown] = useState<string | undefined>();
  return (
    <Page title="API keys">
      <form
        class="card stack"
        noValidate
        aria-label="New API key"
        onSubmit={async (event) => {
          event.preventDefault();
          const form = event.target as HTMLFormElement;
          const data = new FormData(form);
          const scopes = Object.fromEntries(
            facts.scopedResources.map((resource) => [
              resource,
              String(data.get(`scope-${resource}`) ?? "none"),
            ]),
          ) as Scopes;
          const limit = String(data.get("rate_limit_per_minute") ?? "").trim();
          const created = await creating.run(() =>
            api.createApiKey({
              name: String(data.get("name")),
              scopes,
              ...(limit ? { rate_limit_per_minute: Number(limit) } : {}),
            }),
          );
          if (created) {
            setShown(created.key);
            form.reset();
            keys.reload();
          }
        }}
      >
        <h2>New key</h2>
        <div class="grid2">
          <Field label="Key name" name="name" error={creating.field("name")} />
          <Field
            label="Rate limit per minute"
            name="rate_limit_per_minute"
            type="number"
            hint="empty: the workspace's limit"
            error={creating.field("rate_limit_per_minute")}
          />
        </div>
        <Table label="Scopes">
          <caption class="sr-only">Scopes: a level for each resource</caption>
          <thead>
            <tr>
              <th scope="col">Resource</th>
              {facts.scopeLevels.map((level) => (
                <th key={level} scope="col">
                  {level}
                </th>
              ))}
            </tr>
          </thead>
          <tbody class="matrix">
            {facts.scopedResources.map((resource) => (
              <tr key={resource}>
                <th scope="row">{resource}</th>
                {facts.scopeLevels.map((level) => (
                  <td key={level}>
                    <input
                      type="radio"
                      name={`scope-${resource}`}
                      value={level}
                      defaultChecked={level === "none"}
                      aria-label={`${resource}: ${level}`}
                    />
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </Table>
        <div class="buttons">
          <button type="submit" class="primary" disabled={creating.busy}>
            Create key
          </button>
        </div>
        <Problem error={creating.error} />
      </form>
      {shown && <ShownOnce label="New API key" secret={shown} />}
      <Problem error={keys.error ?? revoking.error} />
      <section class="card" aria-label="Keys">
        <Table label="API keys" stacked>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Prefix</th>
              <th scope="col">Scopes</th>
              <th scope="col">Rate limit</th>
              <th scope="col">Last used</th>
              <th scope="col">State</th>
            </tr>
          </thead>
          <tbody>
            {keys.data?.items.map((key) => (
              <tr key={key.id}>
                <th scope="row">{key.name}</th>
                <td>
                  <code>{key.prefix}…</code>
                </td>
                <td class="small">
                  {Object.entries(key.scopes)
                    .filter(([, level]) => level !== "none")
                    .map(([resource, level]) => `${resource}: ${level}`)
                    .join(", ") || "none"}
                </td>
                <td>{key.rate_limit_per_minute ?? "workspace's"}</td>
                <td>{dateTime(key.last_used_at)}</td>
                <td>
                  {key.revoked_at ? (
                    `revoked ${dateTime(key.revoked_at)}`
                  ) : (
                    <button
                      type="button"
                      aria-label={`Revoke ${key.name}`}
                      onClick={async () => {
                        if (await revoking.run(() => api.revokeApiKey(key.id))) keys.reload();
                      }}
                    >
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
      </section>
    </Page>
  );
}

export function AdminEdgeNodes() {
  const nodes = useLoad(() => api.edgeNodes(), []);
  const creating = useAction();
  const revoking = useAction();
  const [shown, setShown] = useState<string | undefined>();
  useEffect(() => {
    // Online means a heartbeat within 30 s: the list is read again to follow it.
    const timer = setInterval(nodes.reload, 10_000);
    return () => clearInterval(timer);
  }, [nodes.reload]);
  return (
    <Page title="Edge nodes">
      <form
        class="inline card"
        noValidate
        aria-label="Register a node"
        onSubmit={async (event) => {
          event.preventDefault();
          const form = event.target as HTMLFormElement;
          const data = new FormData(form);
          const created = await creating.run(() =>
            api.createEdgeNode({
              name: String(data.get("name")),
              max_concurrent_calls: Number(data.get("max_concurrent_calls")),
            }),
          );
          if (created) {
            setShown(created.key);
            form.reset();
            nodes.reload();
          }
        }}
      >
        <Field label="Node name" name="name" error={creating.field("name")} />
        <Field
          label="Max concurrent calls"
          name="max_concurrent_calls"
          type="number"
          defaultValue="30"
          error={creating.field("max_concurrent_calls")}
        />
        <button type="submit" class="primary" disabled={creating.busy}>
          Register node
        </button>
        <Problem error={creating.error} />
      </form>
      {shown && <ShownOnce label="New node key" secret={shown} />}
      <Problem error={nodes.error ?? revoking.error} />
      <section class="card" aria-label="Nodes">
        <Table label="Edge nodes" stacked>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Prefix</th>
              <th scope="col">Online</th>
              <th scope="col">Calls</th>
              <th scope="col">Last heartbeat</th>
              <th scope="col">State</th>
            </tr>
          </thead>
          <tbody>
            {nodes.data?.items.map((node) => (
              <tr key={node.id}>
                <th scope="row">{node.name}</th>
                <td>
                  <code>{node.prefix}…</code>
                </td>
                <td class={node.online ? "status-running" : "muted"}>
                  {node.online ? "online" : "offline"}
                </td>
                <td>
                  {node.active_calls} / {node.max_concurrent_calls}
                </td>
                <td>{dateTime(node.last_heartbeat_at)}</td>
                <td>
                  {node.revoked_at ? (
                    `revoked ${dateTime(node.revoked_at)}`
                  ) : (
                    <button
                      type="button"
                      aria-label={`Revoke ${node.name}`}
                      onClick={async () => {
                        if (await revoking.run(() => api.revokeEdgeNode(node.id))) nodes.reload();
                      }}
                    >
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
      </section>
    </Page>
  );
}

export function AdminSettings() {
  const tenant = useLoad(workspace, []);
  const saving = useAction();
  const [saved, setSaved] = useState(false);
  const [profile, setProfile] = useState<string | undefined>();
  const current = tenant.data;
  const chosenProfile = profile ?? current?.regulatory_profile;
  return (
    <Page title="Workspace settings">
      <Problem error={tenant.error} />
      {current && (
        <form
          class="card stack narrow-left"
          noValidate
          onSubmit={async (event) => {
            event.preventDefault();
            setSaved(false);
            const data = new FormData(event.target as HTMLFormElement);
            const done = await saving.run(() =>
              api.patchTenant(current.id, {
                name: String(data.get("name")),
                rate_limit_per_minute: Number(data.get("rate_limit_per_minute")),
                regulatory_profile: String(data.get("regulatory_profile")),
              }),
            );
            if (done) {
              tenant.setData(done.tenant);
              setSaved(true);
            }
          }}
        >
          <p>
            Domain: <strong>{current.domain}</strong>
          </p>
          <Field
            label="Workspace name"
            name="name"
            defaultValue={current.name}
            error={saving.field("name")}
          />
          <Field
            label="API rate limit per minute"
            name="rate_limit_per_minute"
            type="number"
            defaultValue={String(current.rate_limit_per_minute)}
            hint="for API keys without a limit of their own"
            error={saving.field("rate_limit_per_minute")}
          />
          <Select
            label="Default regulatory profile"
            name="regulatory_profile"
            options={profileOptions(current.regulatory_profile)}
            value={chosenProfile}
            onChange={(event) => {
              setProfile((event.target as HTMLSelectElement).value);
              setSaved(false);
            }}
            hint={
              chosenProfile === "none"
                ? `For new campaigns. ${UNREGULATED_NOTE}`
                : "the profile a new campaign starts with; a campaign's own can be changed"
            }
            warning={chosenProfile === "none"}
            error={saving.field("regulatory_profile")}
          />
          <div class="buttons">
            <button type="submit" class="primary" disabled={saving.busy}>
              Save settings
            </button>
            <span role="status">{saved ? "Saved" : ""}</span>
          </div>
          <Problem error={saving.error} />
        </form>
      )}
    </Page>
  );
}

export function Tenants() {
  const tenants = useLoad(() => api.tenants(), []);
  const creating = useAction();
  return (
    <Page title="Workspaces">
      <form
        class="inline card"
        noValidate
        aria-label="New workspace"
        onSubmit={async (event) => {
          event.preventDefault();
          const form = event.target as HTMLFormElement;
          const data = new FormData(form);
          const created = await creating.run(() =>
            api.createTenant({
              name: String(data.get("name")),
              domain: String(data.get("domain")),
            }),
          );
          if (created) {
            form.reset();
            tenants.reload();
          }
        }}
      >
        <Field label="Workspace name" name="name" error={creating.field("name")} />
        <Field
          label="Domain"
          name="domain"
          hint="lower-case letters, digits, dots, hyphens"
          error={creating.field("domain")}
        />
        <button type="submit" class="primary" disabled={creating.busy}>
          Create workspace
        </button>
        <Problem error={creating.error} />
      </form>
      <Problem error={tenants.error} />
      <section class="card" aria-label="Tenant list">
        <Table label="Workspaces" stacked>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Domain</th>
              <th scope="col">Rate limit</th>
              <th scope="col">Created</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {tenants.data?.items.map((tenant) => (
              <tr key={tenant.id}>
                <th scope="row">{tenant.name}</th>
                <td>{tenant.domain}</td>
                <td>{tenant.rate_limit_per_minute}</td>
                <td>{dateTime(tenant.created_at)}</td>
                <td>
                  <button
                    type="button"
                    aria-label={`Open ${tenant.name}`}
                    onClick={() => {
                      pickedTenant.value = tenant.id;
                      navigate("/");
                    }}
                  >
                    Open
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
      </section>
    </Page>
  );
}
