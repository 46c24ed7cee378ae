import "./styles.css";
import { effect } from "@preact/signals";
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { home, may, type Permission } from "./access.ts";
import { api, type Tenant } from "./api.ts";
import { match, navigate, path } from "./router.ts";
import { pickedTenant, refreshMe, session, signOut } from "./session.ts";
import {
  AdminApiKeys,
  AdminEdgeNodes,
  AdminSettings,
  AdminUsers,
  Tenants,
} from "./views/admin.tsx";
import { AgentDesktop } from "./views/agent.tsx";
import { CampaignDetail, CampaignList, CampaignNew } from "./views/campaigns.tsx";
import { CallRecords } from "./views/cdrs.tsx";
import { DoNotCall } from "./views/dnc.tsx";
import { LeadListView } from "./views/leads.tsx";
import { SignIn } from "./views/signin.tsx";
import { Wallboard } from "./views/wallboard.tsx";
import { AdminWebhooks } from "./views/webhooks.tsx";

interface Route {
  pattern: string;
  permission: Permission;
  view: (params: Record<string, string>) => preact.JSX.Element;
  nav?: string;
}

const ROUTES: Route[] = [
  { pattern: "/", permission: "realtime.supervisor", view: () => <Wallboard />, nav: "Wallboard" },
  {
    pattern: "/agent",
    permission: "realtime.agent",
    view: () => <AgentDesktop />,
    nav: "Agent desktop",
  },
  {
    pattern: "/campaigns",
    permission: "campaigns.history",
    view: () => <CampaignList />,
    nav: "Campaigns",
  },
  { pattern: "/campaigns/new", permission: "campaigns.write", view: () => <CampaignNew /> },
  {
    pattern: "/campaigns/:id",
    permission: "campaigns.history",
    view: (p) => <CampaignDetail id={p.id as string} />,
  },
  {
    pattern: "/campaigns/:id/lists/:list",
    permission: "leads.read",
    view: (p) => <LeadListView campaignId={p.id as string} listId={p.list as string} />,
  },
  { pattern: "/cdrs", permission: "cdrs.read", view: () => <CallRecords />, nav: "Call records" },
  { pattern: "/dnc", permission: "dnc.read", view: () => <DoNotCall />, nav: "Do not call" },
  { pattern: "/admin/users", permission: "users.write", view: () => <AdminUsers />, nav: "Users" },
  {
    pattern: "/admin/api-keys",
    permission: "api_keys.manage",
    view: () => <AdminApiKeys />,
    nav: "API keys",
  },
  {
    pattern: "/admin/webhooks",
    permission: "webhooks.read",
    view: () => <AdminWebhooks />,
    nav: "Webhooks",
  },
  {
    pattern: "/admin/edge-nodes",
    permission: "edge_nodes.manage",
    view: () => <AdminEdgeNodes />,
    nav: "Edge nodes",
  },
  {
    pattern: "/admin/settings",
    permission: "tenants.settings",
    view: () => <AdminSettings />,
    nav: "Settings",
  },
  { pattern: "/tenants", permission: "tenants.read", view: () => <Tenants />, nav: "Workspaces" },
];

function TenantPicker() {
  const [tenants, setTenants] = useState<Tenant[]>([]);
  useEffect(() => {
    api.tenants().then(
      (page) => setTenants(page.items),
      () => {},
    );
  }, []);
  return (
    <div class="picker">
      <label for="tenant-picker">Workspace</label>
      <select
        id="tenant-picker"
        value={pickedTenant.value ?? ""}
        onChange={(event) => {
          pickedTenant.value = (event.target as HTMLSelectElement).value || undefined;
        }}
      >
        <option value="">Platform</option>
        {tenants.map((tenant) => (
          <option key={tenant.id} value={tenant.id}>
            {tenant.name} ({tenant.domain})
          </option>
        ))}
      </select>
    </div>
  );
}

function Shell() {
  const current = session.value;
  if (!current) return null;
  const here = path.value;
  const found = ROUTES.find((route) => match(route.pattern, here));
  const params = found ? match(found.pattern, here) : undefined;
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Dialer</span>
        <nav aria-label="Views">
          <ul>
            {ROUTES.filter((route) => route.nav && may(route.permission)).map((route) => (
              <li key={route.pattern}>
                <a
                  href={route.pattern}
                  aria-current={
                    (route.pattern === "/" ? here === "/" : here.startsWith(route.pattern))
                      ? "page"
                      : undefined
                  }
                >
                  {route.nav}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          {current.user.role === "platform_admin" && <TenantPicker />}
          <span class="email">
            {current.user.email} · {current.user.role.replace("_", " ")}
          </span>
          <button
            type="button"
            onClick={async () => {
              await signOut();
              navigate("/signin");
            }}
          >
            Sign out
          </button>
        </div>
      </header>
      <main id="main" key={`${here}:${pickedTenant.value ?? ""}`}>
        {found && params && may(found.permission) ? (
          found.view(params)
        ) : (
          <p>
            This view is not open to your role. <a href={home()}>Go to your home view</a>.
          </p>
        )}
      </main>
    </>
  );
}

function App() {
  const current = session.value;
  if (!current || current.user.must_change_password || path.value === "/signin") return <SignIn />;
  return <Shell />;
}

// A stored session is checked once against the API: a disabled or expired one ends here.
if (session.peek()) refreshMe().catch(() => signOut(false));

effect(() => {
  const current = session.value;
  const here = path.value;
  // The page asked for is kept for after the sign-in; the root leaves the choice to the role.
  if (!current && here !== "/signin")
    navigate(here === "/" ? "/signin" : `/signin?next=${encodeURIComponent(here)}`, true);
});

render(<App />, document.getElementById("console") as HTMLElement);
