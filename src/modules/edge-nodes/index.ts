import { Elysia, t } from "elysia";
import type { ServiceDeps } from "../../deps.ts";
import { applyCallEvent } from "../../dialer/calls.ts";
import { claimJobs } from "../../dialer/claims.ts";
import { CallViewSchema, DialJobSchema } from "../../dialer/model.ts";
import { pollNodeCommands } from "../../dialer/node-commands.ts";
import { ok, okList } from "../../envelope.ts";
import { documented, documentedFile, documentedList } from "../../openapi-bodies.ts";
import { PageQuery, parsePage } from "../../pagination.ts";
import { type AuthGuard, asUser } from "../../plugins/auth.ts";
import { jsonBody } from "../../plugins/json-body.ts";
import { messageTarget, readMessage, wavResponse } from "../messages/service.ts";
import { IdParams, TenantQuery } from "../users/model.ts";
import {
  CallEventBody,
  ClaimBody,
  CommandPollBody,
  CreateEdgeNodeBody,
  EdgeNodeSchema,
  HeartbeatBody,
  NodeCommandSchema,
} from "./model.ts";
import { heartbeat, listEdgeNodes, registerEdgeNode, revokeEdgeNode } from "./service.ts";

/** Admins register, list and revoke edge nodes. */
export const edgeNodesModule = (deps: ServiceDeps, auth: AuthGuard) =>
  new Elysia({ prefix: "/api/v1/edge-nodes", detail: { tags: ["edge nodes"] } })
    .use(auth)
    .post(
      "",
      async ({ principal, tenantId, meta, body, set }) => {
        const result = await registerEdgeNode(deps, asUser(principal), tenantId, body, meta);
        set.status = 201;
        return ok(result);
      },
      {
        auth: "edge_nodes.manage",
        query: t.Object(TenantQuery),
        ...jsonBody(CreateEdgeNodeBody),
        detail: {
          summary: "Register an edge node; its key is returned this once",
          ...documented(
            {
              edge_node: EdgeNodeSchema,
              key: t.String({ description: "the node key, shown this once" }),
            },
            201,
          ),
        },
      },
    )
    .get(
      "",
      async ({ tenantId, query }) => {
        const page = parsePage(query);
        const { items, total } = await listEdgeNodes(deps, tenantId, page);
        return okList(items, total, page);
      },
      {
        auth: "edge_nodes.manage",
        query: t.Object({ ...PageQuery, ...TenantQuery }),
        detail: {
          summary: "List edge nodes with their last heartbeat and online state",
          ...documentedList(EdgeNodeSchema),
        },
      },
    )
    .delete(
      "/:id",
      async ({ principal, tenantId, meta, params }) =>
        ok(await revokeEdgeNode(deps, asUser(principal), tenantId, params.id, meta)),
      {
        auth: "edge_nodes.manage",
        params: IdParams,
        query: t.Object(TenantQuery),
        detail: {
          summary: "Revoke an edge node's key",
          ...documented({ edge_node: EdgeNodeSchema }),
        },
      },
    );

/** The edge-node protocol: node keys only; tenant and node come from the key. */
export const nodeProtocolModule = (deps: ServiceDeps, auth: AuthGuard) =>
  new Elysia({ prefix: "/api/v1/nodes", detail: { tags: ["node protocol"] } })
    .use(auth)
    .post(
      "/heartbeat",
      async ({ node, body }) =>
        ok(
          await heartbeat(deps, node, {
            activeCalls: body.active_calls,
            activeCallIds: body.active_call_ids,
          }),
        ),
      {
        nodeAuth: true,
        ...jsonBody(HeartbeatBody),
        detail: {
          summary: "Report the node alive, with its active calls",
          ...documented({ edge_node: EdgeNodeSchema }),
        },
      },
    )
    .post(
      "/jobs/claim",
      async ({ node, body, headers }) =>
        ok(
          await claimJobs(deps, node, {
            max: body.max,
            waitMs: body.wait_ms ?? 0,
            claimKey: headers["idempotency-key"],
          }),
        ),
      {
        nodeAuth: true,
        ...jsonBody(ClaimBody),
        headers: t.Object({ "idempotency-key": t.Optional(t.String()) }),
        detail: {
          summary: "Claim up to `max` dial jobs, waiting up to `wait_ms` for some",
          ...documented({ jobs: t.Array(DialJobSchema) }),
          description:
            "With an `Idempotency-Key`, a claim repeated within 60 s returns the jobs the first placed " +
            "(a claim that placed none is not kept, and its repeat claims anew).",
        },
      },
    )
    .post(
      "/commands",
      async ({ node, body }) =>
        ok(await pollNodeCommands(deps, node, { ack: body.ack ?? [], waitMs: body.wait_ms ?? 0 })),
      {
        nodeAuth: true,
        ...jsonBody(CommandPollBody),
        detail: {
          summary:
            "Acknowledge commands carried out, and take the node's commands (hang-up, transfer, dial), waiting up to `wait_ms` for one",
          description:
            "Every poll answers all of the node's commands not yet acknowledged, oldest first (at most 100), so a command survives a lost reply, a node's reconnect and a failover of the service's process. A node acts on each `id` once, and acknowledges it in its next poll (`ack`), also when it found the command moot (a call it no longer holds). A command stored while the node waits is answered within 200 ms.",
          ...documented({ commands: t.Array(NodeCommandSchema) }),
        },
      },
    )
    .post(
      "/calls/:call_id/events",
      async ({ node, params, body }) => ok(await applyCallEvent(deps, node, params.call_id, body)),
      {
        nodeAuth: true,
        params: t.Object({ call_id: t.String() }),
        ...jsonBody(CallEventBody),
        detail: {
          summary:
            "Report a call event; on answered the reply names the agent to bridge or says hangup",
          ...documented({ call: CallViewSchema }),
        },
      },
    )
    .get(
      "/campaigns/:campaign_id/messages/:kind",
      async ({ node, params }) =>
        wavResponse(
          await readMessage(
            deps,
            node.tenantId,
            messageTarget({ id: params.campaign_id, kind: params.kind }),
          ),
        ),
      {
        nodeAuth: true,
        params: t.Object({ campaign_id: t.String(), kind: t.String() }),
        detail: {
          summary:
            "A campaign's recorded message for the node to play: the WAV, its version in `X-Message-Version`",
          ...documentedFile("audio/wav", "The WAV"),
        },
      },
    );
