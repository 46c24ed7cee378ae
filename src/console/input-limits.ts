import { patternSentence } from "../plugins/schema-sentences.ts";

type Schema = Record<string, unknown>;

/**
 * A field's constraints as HTML input attributes, so that the browser checks what the API
 * would refuse before anything is sent, and says it in the API's words (`title`).
 */
export interface InputLimits {
  min?: number;
  max?: number;
  /** 1 for whole numbers, "any" for others. */
  step?: number | "any";
  minLength?: number;
  maxLength?: number;
  /** Matched against the whole value, as HTML does. */
  pattern?: string;
  /** The sentence the API gives for a value that fails `pattern`. */
  title?: string;
}

/** An HTML pattern must match the whole value; ours may match anywhere unless anchored. */
const wholeValuePattern = (pattern: string) =>
  pattern.startsWith("^") ? pattern : `[\\s\\S]*(?:${pattern})[\\s\\S]*`;

/**
 * The variant of a union a form fills: a number's own (Elysia also takes it as numeric text),
 * or the one beside null.
 */
function variantOf(schema: Schema): Schema {
  const variants = schema.anyOf;
  if (!Array.isArray(variants)) return schema;
  const numeric = variants.find((variant: Schema) =>
    ["integer", "number"].includes(String(variant.type)),
  );
  if (numeric) return numeric;
  const given = variants.filter((variant: Schema) => variant.type !== "null");
  return given.length === 1 ? (given[0] as Schema) : schema;
}

function limitsOf(given: Schema): InputLimits {
  const schema = variantOf(given);
  const limits: InputLimits = {};
  if (typeof schema.minimum === "number") limits.min = schema.minimum;
  if (typeof schema.maximum === "number") limits.max = schema.maximum;
  if (schema.type === "integer") limits.step = 1;
  if (schema.type === "number") limits.step = "any";
  if (typeof schema.minLength === "number") limits.minLength = schema.minLength;
  if (typeof schema.maxLength === "number") limits.maxLength = schema.maxLength;
  if (typeof schema.pattern === "string") {
    limits.pattern = wholeValuePattern(schema.pattern);
    limits.title = patternSentence(schema.pattern);
  }
  return limits;
}

/**
 * The limits of each field of an object schema, by the name the API gives it in
 * `field_errors` (`calling_window.start` for a nested one).
 */
export function inputLimitsOf(schema: Schema, prefix = ""): Record<string, InputLimits> {
  const fields: Record<string, InputLimits> = {};
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  for (const [name, property] of Object.entries(properties)) {
    const field = `${prefix}${name}`;
    if (property.type === "object") Object.assign(fields, inputLimitsOf(property, `${field}.`));
    else {
      const limits = limitsOf(property);
      // A field without limits needs no entry: the console reads a missing one as none.
      if (Object.keys(limits).length > 0) fields[field] = limits;
    }
  }
  return fields;
}
