import { listSignedInPresence } from "../../db/queries/presence.ts";
import type { ServiceDeps } from "../deps.ts";
import type { UserPrincipal } from "../identity/principal.ts";
import { setAgentState } from "../modules/agents/service.ts";

/**
 * Loads every signed-in agent into the board, as the table holds them, before the process
 * takes requests. Returns how many.
 */
export async function restorePresence(deps: Pick<ServiceDeps, "rawDb" | "dialer">) {
  const rows = await listSignedInPresence(deps.rawDb);
  deps.dialer.agents.restore(rows);
  return rows.length;
}

/**
 * Takes an agent offline, releasing a call reserved for them: what happens when an agent's
 * grace runs out, or when the agent's account is disabled. An agent on a call or in its
 * wrap-up keeps it, and is paused once it is dispositioned (by a supervisor, or by the
 * campaign's wrap-up limit), so that no call is handed to someone who is gone.
 */
export async function signOutAgent(deps: ServiceDeps, userId: string): Promise<void> {
  const agent = deps.dialer.agents.get(userId);
  if (!agent) return;
  const withCall = agent.state === "on_call" || agent.state === "wrap_up";
  const user =
    deps.tenants.loadedUser(agent.tenantId, userId) ??
    (await deps.tenants.user(agent.tenantId, userId));
  if (!user) return;
  const principal: UserPrincipal = {
    kind: "user",
    user,
    tenantId: agent.tenantId,
    role: user.role,
    tokenExpiresAt: 0,
  };
  await setAgentState(deps, principal, { state: withCall ? "paused" : "offline" }, { gone: true });
}

/**
 * Signs out the agents whose grace ran out: every agent past its deadline (the sweep, which
 * also catches those of a process that died), or one agent at the deadline its last socket's
 * close set. A deadline pushed forward since (a socket came back, here or elsewhere) keeps the
 * agent. Returns how many were signed out.
 */
export async function expireGraces(
  deps: ServiceDeps,
  which: { userId: string; deadline: number } | undefined = undefined,
): Promise<number> {
  const claimed = await deps.dialer.agents.claimExpired(
    which ? { until: which.deadline, userId: which.userId } : { until: deps.clock.now() },
  );
  for (const { userId } of claimed) {
    await signOutAgent(deps, userId).catch((error) =>
      deps.logger.warn("could not sign out an agent", { user_id: userId, error }),
    );
  }
  return claimed.length;
}
