// The supervisor dashboard: signs in over REST, then follows /ws/supervisor. No build step.
const state = { token: null, campaigns: new Map(), agents: new Map(), abandonHistory: new Map() };
const $ = (id) => document.getElementById(id);
const ACTIONS = {
  start: ["draft", "paused", "stopped", "completed"],
  pause: ["running"],
  stop: ["running", "paused"],
};

$("login").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = new FormData(event.target);
  const body = { email: form.get("email"), password: form.get("password") };
  if (form.get("tenant_domain")) body.tenant_domain = form.get("tenant_domain");
  const response = await fetch("/api/v1/auth/login", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const reply = await response.json();
  if (!response.ok) {
    $("login-error").textContent = reply.message;
    return;
  }
  state.token = reply.data.token;
  $("login").hidden = true;
  $("app").hidden = false;
  connect();
});

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(
    `${scheme}://${location.host}/ws/supervisor?token=${encodeURIComponent(state.token)}`,
  );
  socket.onopen = () => ($("live").textContent = "live");
  socket.onclose = () => {
    $("live").textContent = "reconnecting…";
    setTimeout(connect, 2000);
  };
  socket.onmessage = (event) => handle(JSON.parse(event.data));
}

function handle(message) {
  switch (message.type) {
    case "snapshot":
      state.campaigns = new Map(message.campaigns.map((campaign) => [campaign.id, campaign]));
      state.agents = new Map(message.agents.map((agent) => [agent.user_id, agent]));
      break;
    case "campaign.status": {
      const campaign = state.campaigns.get(message.campaign_id);
      if (campaign) campaign.status = message.status;
      break;
    }
    case "campaign.stats": {
      const campaign = state.campaigns.get(message.campaign_id);
      if (campaign) campaign.stats = message.stats;
      const history = state.abandonHistory.get(message.campaign_id) ?? [];
      history.push(message.stats.abandon_rate);
      state.abandonHistory.set(message.campaign_id, history.slice(-40));
      break;
    }
    case "agent.state":
      if (message.agent.state === "offline") state.agents.delete(message.agent.user_id);
      else state.agents.set(message.agent.user_id, message.agent);
      break;
  }
  render();
}

function sparkline(values) {
  if (values.length < 2) return "";
  const max = Math.max(0.05, ...values);
  const points = values
    .map((value, index) => `${(index / (values.length - 1)) * 80},${20 - (value / max) * 18}`)
    .join(" ");
  return `<svg width="80" height="20" aria-label="abandon rate trend"><polyline fill="none" stroke="#b91c1c" stroke-width="1.5" points="${points}"/></svg>`;
}

const text = (value) =>
  String(value ?? "").replace(
    /[&<>"]/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c],
  );

function render() {
  $("campaigns").innerHTML = [...state.campaigns.values()]
    .map((campaign) => {
      const stats = campaign.stats ?? {};
      const buttons = Object.entries(ACTIONS)
        .map(
          ([action, from]) =>
            `<button data-id="${text(campaign.id)}" data-action="${action}" ${from.includes(campaign.status) ? "" : "disabled"}>${action}</button>`,
        )
        .join("");
      return `<tr data-campaign="${text(campaign.id)}">
        <td>${text(campaign.name)}</td>
        <td class="status ${text(campaign.status)}">${text(campaign.status)}</td>
        <td>${stats.leads_total ?? "–"}</td>
        <td>${stats.calls_in_flight ?? "–"}</td>
        <td>${stats.abandon_rate === undefined ? "–" : `${(stats.abandon_rate * 100).toFixed(1)}%`}</td>
        <td>${sparkline(state.abandonHistory.get(campaign.id) ?? [])}</td>
        <td>${buttons}</td></tr>`;
    })
    .join("");
  $("agents").innerHTML = [...state.agents.values()]
    .map((agent) => {
      const campaign = state.campaigns.get(agent.campaign_id);
      return `<tr><td>${text(agent.user_id.slice(0, 8))}</td><td>${text(agent.state)}</td><td>${text(campaign?.name ?? "")}</td></tr>`;
    })
    .join("");
}

$("campaigns").addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-action]");
  if (!button) return;
  const response = await fetch(`/api/v1/campaigns/${button.dataset.id}/status`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${state.token}`,
      "idempotency-key": crypto.randomUUID(),
    },
    body: JSON.stringify({ action: button.dataset.action }),
  });
  const reply = await response.json();
  $("action-error").textContent = response.ok ? "" : reply.message;
});
