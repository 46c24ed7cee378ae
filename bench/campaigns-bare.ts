/**
 * The references of bench/campaigns.ts for a replayed status request: bare Elysia routes that
 * answer a small constant JSON object, in their own `bun` process. `GET /bare` reads nothing;
 * `POST /bare` reads and parses the request's JSON body (Elysia's own parser), as the status
 * route must before it can tell a replay from a new request.
 *
 *   PORT=<port> bun bench/campaigns-bare.ts      GET and POST /bare on 127.0.0.1:<port>
 */
import { Elysia } from "elysia";

const port = Number(process.env.PORT ?? 0);
const app = new Elysia()
  .get("/bare", () => ({ status: "success", data: { ok: true } }))
  .post("/bare", ({ body }) => ({ status: "success", data: { ok: body !== undefined } }))
  .listen({ hostname: "127.0.0.1", port });
console.log(`listening on http://127.0.0.1:${app.server?.port}`);
