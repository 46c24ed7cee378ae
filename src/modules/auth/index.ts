import { Elysia } from "elysia";
import type { ServiceDeps } from "../../deps.ts";
import { jsonText, ok } from "../../envelope.ts";
import { documented, documentedEither } from "../../openapi-bodies.ts";
import { type AuthGuard, asUser } from "../../plugins/auth.ts";
import { jsonBody } from "../../plugins/json-body.ts";
import { UserSchema } from "../users/model.ts";
import { ChangePasswordBody, KeyMeResult, LoginBody, LoginResult, MeResult } from "./model.ts";
import { cachedMeText, changePassword, login, logout, me } from "./service.ts";

export const authModule = (deps: ServiceDeps, auth: AuthGuard) =>
  new Elysia({ prefix: "/api/v1/auth", detail: { tags: ["auth"] } })
    .use(auth)
    .post("/login", async ({ body, meta }) => ok(await login(deps, body, meta)), {
      meta: true,
      ...jsonBody(LoginBody),
      detail: {
        "x-permission": "public",
        summary: "Log in and receive a bearer token",
        ...documented(LoginResult.properties),
        security: [],
      },
    })
    .get(
      "/me",
      ({ principal, set }) => {
        const text = cachedMeText(deps, principal);
        return text === undefined ? me(deps, principal).then(ok) : jsonText(set, text);
      },
      {
        auth: "session.me",
        detail: {
          summary: "The caller's user and tenant; with an API key, the key and its tenant",
          ...documentedEither(MeResult.properties, KeyMeResult.properties),
        },
      },
    )
    .post(
      "/me/password",
      async ({ principal, meta, body }) =>
        ok(await changePassword(deps, asUser(principal), body, meta)),
      {
        auth: "session.password",
        ...jsonBody(ChangePasswordBody),
        detail: { summary: "Change the caller's password", ...documented({ user: UserSchema }) },
      },
    )
    .post(
      "/logout",
      async ({ principal, meta }) => ok(await logout(deps, asUser(principal), meta)),
      {
        auth: "session.logout",
        detail: {
          summary: "Record a logout (tokens are not revoked)",
          ...documented({}),
        },
      },
    );
