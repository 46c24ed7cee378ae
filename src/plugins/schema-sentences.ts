import { ValueErrorType } from "@sinclair/typebox/errors";
import { PASSWORD_MAX, PASSWORD_MIN, PASSWORD_PATTERN } from "../identity/passwords.ts";
import { DOMAIN_PATTERN } from "../modules/tenants/model.ts";

/**
 * A schema failure as a sentence about its field ("must be at most 200 characters"), never
 * TypeBox's own text ("Expected string length less or equal to 200"): the console shows it
 * beside the field, and an integrator reads it in `field_errors`.
 */

/** What a failure says of itself: its kind, the schema it failed, and nested variants. */
export interface SchemaIssue {
  type?: unknown;
  schema?: unknown;
  message: string;
  errors?: unknown;
}

type Schema = Record<string, unknown>;

/** Patterns our schemas use, by what they ask for. */
const PATTERNS: Record<string, string> = {
  "^\\+[1-9][0-9]{1,14}$": "must be a phone number in E.164 form, e.g. +14155550100",
  "^([01][0-9]|2[0-3]):[0-5][0-9]$": "must be a time of day as HH:MM, e.g. 09:30",
  "^[a-z][a-z0-9_]{0,31}$":
    "must be a code of lower-case letters, digits and _, starting with a letter, at most 32",
  [DOMAIN_PATTERN]: "must be a domain name such as acme.example",
  "\\S": "must not be blank",
  [PASSWORD_PATTERN]: `must be ${PASSWORD_MIN} to ${PASSWORD_MAX} characters`,
  "^[0-9*#]$": "must be one key: a digit, * or #",
  "^[0-9*#A-D]$": "must be one key: a digit, *, # or a letter A to D",
  "^[0-9a-z]$": "must be one key: a digit or a lower-case letter",
  '^sips?:[^\\s<>"]+$': "must be a SIP address, e.g. sip:1001@pbx.example",
};

const FORMATS: Record<string, string> = {
  uuid: "must be an id (a UUID)",
  "date-time": "must be an RFC 3339 time, e.g. 2026-03-02T12:00:00Z",
  email: "must be an e-mail address",
  uri: "must be a URI",
  // Elysia takes a number in a body or query as a number or as text of this format.
  integer: "must be a whole number",
  numeric: "must be a number",
};

/** What a pattern of our schemas asks for, as a sentence. */
export const patternSentence = (pattern: string) =>
  PATTERNS[pattern] ?? "is not in the form this field takes";

const plural = (count: unknown, one: string) => `${count} ${one}${count === 1 ? "" : "s"}`;

/** The values a union of literals allows, or undefined when it is another union. */
function literalsOf(schema: Schema): string[] | undefined {
  const variants = schema.anyOf;
  if (!Array.isArray(variants)) return undefined;
  const values = variants.map((variant: Schema) => variant.const);
  if (values.some((value) => value === undefined)) return undefined;
  return values.map((value) => (value === null ? "null" : String(value)));
}

/** Failures that only name a type: a union's variants say more elsewhere when they can. */
const BARE_TYPES: ReadonlySet<unknown> = new Set([
  ValueErrorType.String,
  ValueErrorType.Number,
  ValueErrorType.Integer,
  ValueErrorType.Boolean,
  ValueErrorType.Null,
]);

/** The sentences a number's failure gives before any other type's. */
const NUMBER_TYPES: ReadonlySet<unknown> = new Set([ValueErrorType.Integer, ValueErrorType.Number]);

/**
 * A union's failure by its variants' (Elysia takes a number as a number or as numeric text):
 * the first that says more than a type, such as "must be at most 50"; else the number's
 * ("must be a whole number", not "must be text"); else every type it takes, "text or null".
 */
function variantSentence(issue: SchemaIssue): string | undefined {
  if (!Array.isArray(issue.errors)) return undefined;
  const bare: SchemaIssue[] = [];
  for (const variant of issue.errors as Iterable<SchemaIssue>[]) {
    for (const nested of variant) {
      if (!BARE_TYPES.has(nested.type)) return sentenceOf(nested);
      bare.push(nested);
    }
  }
  const number = bare.find((nested) => NUMBER_TYPES.has(nested.type));
  if (number) return sentenceOf(number);
  const kinds = [...new Set(bare.map((nested) => sentenceOf(nested).replace(/^must be /, "")))];
  return kinds.length === 0 ? undefined : `must be ${kinds.join(" or ")}`;
}

export function sentenceOf(issue: SchemaIssue): string {
  const schema = (issue.schema ?? {}) as Schema;
  switch (issue.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return "is required";
    case ValueErrorType.ObjectAdditionalProperties:
      return "unknown field";
    case ValueErrorType.String:
      return "must be text";
    case ValueErrorType.StringMinLength:
      return schema.minLength === 1
        ? "must not be empty"
        : `must be at least ${plural(schema.minLength, "character")}`;
    case ValueErrorType.StringMaxLength:
      return `must be at most ${plural(schema.maxLength, "character")}`;
    case ValueErrorType.StringPattern:
      return patternSentence(String(schema.pattern));
    case ValueErrorType.StringFormat:
    case ValueErrorType.StringFormatUnknown:
      return FORMATS[String(schema.format)] ?? `must be in the ${String(schema.format)} format`;
    case ValueErrorType.Number:
      return "must be a number";
    case ValueErrorType.Integer:
      return "must be a whole number";
    case ValueErrorType.NumberMinimum:
    case ValueErrorType.IntegerMinimum:
      return `must be at least ${schema.minimum}`;
    case ValueErrorType.NumberMaximum:
    case ValueErrorType.IntegerMaximum:
      return `must be at most ${schema.maximum}`;
    case ValueErrorType.NumberExclusiveMinimum:
    case ValueErrorType.IntegerExclusiveMinimum:
      return `must be more than ${schema.exclusiveMinimum}`;
    case ValueErrorType.NumberExclusiveMaximum:
    case ValueErrorType.IntegerExclusiveMaximum:
      return `must be less than ${schema.exclusiveMaximum}`;
    case ValueErrorType.NumberMultipleOf:
    case ValueErrorType.IntegerMultipleOf:
      return `must be a multiple of ${schema.multipleOf}`;
    case ValueErrorType.Boolean:
      return "must be true or false";
    case ValueErrorType.Null:
      return "must be null";
    case ValueErrorType.Literal:
      return `must be ${JSON.stringify(schema.const)}`;
    case ValueErrorType.Object:
      return "must be an object";
    case ValueErrorType.ObjectMinProperties:
      return `must have at least ${plural(schema.minProperties, "field")}`;
    case ValueErrorType.ObjectMaxProperties:
      return `must have at most ${plural(schema.maxProperties, "field")}`;
    case ValueErrorType.Array:
      return "must be a list";
    case ValueErrorType.ArrayMinItems:
      return `must list at least ${plural(schema.minItems, "item")}`;
    case ValueErrorType.ArrayMaxItems:
      return `must list at most ${plural(schema.maxItems, "item")}`;
    case ValueErrorType.ArrayUniqueItems:
      return "must not list an item twice";
    case ValueErrorType.Union: {
      const allowed = literalsOf(schema);
      if (allowed) return `must be one of ${allowed.join(", ")}`;
      return variantSentence(issue) ?? "is not a value this field takes";
    }
    default:
      return "is not a value this field takes";
  }
}
