/**
 * The reference of bench/campaigns.ts for a replayed status request: a bare Elysia route that
 * answers a small constant JSON object, in its own `bun` process.
 *
 *   PORT=<port> bun bench/campaigns-bare.ts      GET /bare on 127.0.0.1:<port>
 */
import { Elysia } from "elysia";

const port = Number(process.env.PORT ?? 0);
const app = new Elysia()
  .get("/bare", () => ({ status: "success", data: { ok: true } }))
  .listen({ hostname: "127.0.0.1", port });
console.log(`listening on http://127.0.0.1:${app.server?.port}`);
