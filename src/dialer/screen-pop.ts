/**
 * A campaign's screen pop: a URL template whose placeholders take a connected call's values,
 * each URL-encoded (`https://crm.example/contacts?phone={phone}&id={lead.external_id}`).
 */

const PLACEHOLDER = /\{([^{}]*)\}/g;
const FIXED = new Set(["phone", "lead.id", "lead.phone", "call.id", "campaign.id"]);
/** `lead.` and a column of the lead's file. */
const LEAD_FIELD = /^lead\.[^{}\s]{1,100}$/;

export interface ScreenPopValues {
  call: { id: string; campaign_id: string };
  lead: { id: string; phone: string; fields: Record<string, string> };
}

/** Why a template cannot be one, or undefined when it can. */
export function screenPopProblem(template: string): string | undefined {
  const unknown = [...template.matchAll(PLACEHOLDER)]
    .map((match) => match[1] ?? "")
    .find((name) => !FIXED.has(name) && !LEAD_FIELD.test(name));
  if (unknown !== undefined)
    return `unknown placeholder {${unknown}}: use {phone}, {lead.id}, {lead.<field>}, {call.id} or {campaign.id}`;
  let url: URL;
  try {
    url = new URL(template.replace(PLACEHOLDER, "x"));
  } catch {
    return "must be an absolute URL, e.g. https://crm.example/contacts?phone={phone}, or null for none";
  }
  // Anything else (javascript:, data:) would run in the agent's console.
  if (url.protocol !== "https:" && url.protocol !== "http:") return "must be an http or https URL";
  // A lead's data must not choose the site the agent's browser opens.
  if (new URL(template.replace(PLACEHOLDER, "y")).origin !== url.origin)
    return "placeholders may stand only in the path, the query or the fragment, not in the host";
  return undefined;
}

/** The template with the call's values in it; a field the lead lacks is empty. */
export function screenPopUrl(template: string, values: ScreenPopValues): string {
  return template.replace(PLACEHOLDER, (_match, name: string) => {
    const value =
      name === "phone" || name === "lead.phone"
        ? values.lead.phone
        : name === "lead.id"
          ? values.lead.id
          : name === "call.id"
            ? values.call.id
            : name === "campaign.id"
              ? values.call.campaign_id
              : fieldOf(values.lead.fields, name.slice("lead.".length));
    return encodeURIComponent(value);
  });
}

/** A column of the lead's file, or empty: only its own, never what every object inherits. */
const fieldOf = (fields: Record<string, string>, column: string) =>
  Object.hasOwn(fields, column) ? String(fields[column]) : "";
