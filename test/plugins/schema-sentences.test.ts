import { describe, expect, test } from "bun:test";
import { Type } from "@sinclair/typebox";
import { ValueErrorType } from "@sinclair/typebox/errors";
import { Value } from "@sinclair/typebox/value";
import { patternSentence, sentenceOf } from "../../src/plugins/schema-sentences.ts";
import { createWorkspace } from "../helpers/app.ts";

/** TypeBox's own wording, which no answer may carry. */
const RAW = /Expected|schema|union value|must match/i;

describe("schema failures as sentences", () => {
  test("every kind of failure TypeBox reports reads as a sentence, never its own text", () => {
    const kinds = Object.values(ValueErrorType).filter(
      (kind): kind is ValueErrorType => typeof kind === "number",
    );
    for (const kind of kinds) {
      const said = sentenceOf({
        type: kind,
        schema: {
          minLength: 3,
          maxLength: 9,
          minimum: 1,
          maximum: 5,
          exclusiveMinimum: 0,
          exclusiveMaximum: 6,
          multipleOf: 2,
          minItems: 1,
          maxItems: 4,
          minProperties: 1,
          maxProperties: 2,
          const: "ready",
          format: "uuid",
          pattern: "^x+$",
        },
        message: `Expected something of kind ${kind}`,
      });
      expect([kind, said]).not.toEqual([kind, expect.stringMatching(RAW)]);
      expect([kind, said.length > 5]).toEqual([kind, true]);
    }
  });

  test("the failures of real schemas read as what the field expects", () => {
    const schema = Type.Object(
      {
        phone: Type.String({ pattern: "^\\+[1-9][0-9]{1,14}$" }),
        name: Type.String({ minLength: 1, maxLength: 5 }),
        mode: Type.Union([Type.Literal("preview"), Type.Literal("progressive")]),
        ratio: Type.Union([Type.Number({ maximum: 5 }), Type.String()]),
        id: Type.String({ format: "uuid" }),
        window: Type.String({ pattern: "^([01][0-9]|2[0-3]):[0-5][0-9]$" }),
        codes: Type.Array(Type.String(), { uniqueItems: true }),
      },
      { additionalProperties: false },
    );
    const errors = [
      ...Value.Errors(schema, {
        phone: "555-0100",
        name: "",
        mode: "fast",
        ratio: 9,
        id: "x",
        window: "25:00",
        codes: ["a", "a"],
        extra: 1,
      }),
    ];
    const by = Object.fromEntries(errors.map((error) => [error.path, sentenceOf(error)]));
    expect(by).toMatchObject({
      "/phone": "must be a phone number in E.164 form, e.g. +14155550100",
      "/name": "must not be empty",
      "/mode": "must be one of preview, progressive",
      "/ratio": "must be at most 5",
      "/id": "must be an id (a UUID)",
      "/window": "must be a time of day as HH:MM, e.g. 09:30",
      "/codes": "must not list an item twice",
      "/extra": "unknown field",
    });
  });

  test("numbers, and unions of bare types, say what they take", () => {
    const schema = Type.Object({
      attempts: Type.Union([Type.String({ format: "integer" }), Type.Integer()]),
      ratio: Type.Union([Type.String({ format: "numeric" }), Type.Number()]),
      note: Type.Union([Type.String(), Type.Null()]),
    });
    const sentences = (value: unknown) =>
      Object.fromEntries(
        [...Value.Errors(schema, value)].map((error) => [error.path, sentenceOf(error)]),
      );
    for (const attempts of [1.5, true, "abc"])
      expect(sentences({ attempts, ratio: 1, note: null })).toEqual({
        "/attempts": "must be a whole number",
      });
    expect(sentences({ attempts: 1, ratio: "fast", note: 3 })).toEqual({
      "/ratio": "must be a number",
      "/note": "must be text or null",
    });
  });

  test("every pattern of the API's schemas has its sentence", async () => {
    const h = await createWorkspace();
    const document = (await h.request("GET", "/api/v1/openapi.json")).body;
    const patterns = new Set<string>();
    const walk = (node: unknown) => {
      if (Array.isArray(node)) for (const item of node) walk(item);
      else if (node && typeof node === "object")
        for (const [key, value] of Object.entries(node)) {
          if (key === "pattern" && typeof value === "string") patterns.add(value);
          else walk(value);
        }
    };
    walk(document);
    expect(patterns.size).toBeGreaterThan(5);
    const fallback = patternSentence("^no pattern we use$");
    for (const pattern of patterns)
      expect({ pattern, said: patternSentence(pattern) }).not.toEqual({ pattern, said: fallback });
  });

  test("the API answers bad bodies and queries with them", async () => {
    const h = await createWorkspace();
    const token = await h.login("admin@acme.test");
    const bad = await h.request("POST", "/api/v1/campaigns", {
      token,
      body: { name: "", dial_mode: "fast", caller_id: "555", max_attempts: 0 },
    });
    expect(bad.status).toBe(400);
    for (const error of bad.body.field_errors as { field: string; message: string }[])
      expect([error.field, error.message]).not.toEqual([error.field, expect.stringMatching(RAW)]);
    expect(bad.body.field_errors).toEqual(
      expect.arrayContaining([
        { field: "caller_id", message: "must be a phone number in E.164 form, e.g. +14155550100" },
        { field: "dial_mode", message: "must be one of preview, progressive, predictive" },
      ]),
    );
    const empty = await h.request("POST", "/api/v1/auth/login", { body: {} });
    expect(empty.body.field_errors).toContainEqual({ field: "email", message: "is required" });
    const login = async (body: string | undefined) =>
      (await (
        await h.app.handle(
          new Request("http://localhost/api/v1/auth/login", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body,
          }),
        )
      ).json()) as { field_errors: unknown };
    // Nothing sent, or nothing at all (no body, so no type either): each field it requires.
    for (const nothing of ["", "null", undefined])
      expect((await login(nothing)).field_errors).toEqual([
        { field: "email", message: "is required" },
        { field: "password", message: "is required" },
      ]);
    expect((await login("{bad")).field_errors).toEqual([
      { field: "body", message: "must be valid JSON" },
    ]);
    expect((await login("[]")).field_errors).toEqual([
      { field: "body", message: "must be an object" },
    ]);
    const fraction = await h.request("POST", "/api/v1/campaigns", {
      token,
      body: { name: "Half", max_attempts: 1.5, wrap_up_seconds: true },
    });
    expect(fraction.body.field_errors).toEqual(
      expect.arrayContaining([
        { field: "max_attempts", message: "must be a whole number" },
        { field: "wrap_up_seconds", message: "must be a whole number" },
      ]),
    );
    // A whole number sent as text is refused like any other wrong type, each under its name,
    // however the text would read as a number ("0x10" was taken for 16).
    const texts = await h.request("POST", "/api/v1/campaigns", {
      token,
      body: { name: "Text", max_attempts: "0x10", retry_delay_seconds: "1" },
    });
    expect(texts.body.field_errors).toEqual([
      { field: "max_attempts", message: "must be a whole number" },
      { field: "retry_delay_seconds", message: "must be a whole number" },
    ]);
    for (const body of ['"str"', "5"]) {
      const response = await h.app.handle(
        new Request("http://localhost/api/v1/campaigns", {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
          body,
        }),
      );
      expect(((await response.json()) as { field_errors: unknown }).field_errors).toEqual([
        { field: "body", message: "must be an object" },
      ]);
    }
    const outcome = await h.request("GET", "/api/v1/cdrs?outcome=lost", { token });
    expect(outcome.body.field_errors[0]).toEqual({
      field: "outcome",
      message: expect.stringMatching(/^must be one of answered, /),
    });
  });
});
