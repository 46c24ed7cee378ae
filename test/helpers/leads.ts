import type { Harness } from "./app.ts";

/** Posts a multipart import the way a browser or curl would. */
export function importFile(
  h: Harness,
  path: string,
  token: string,
  csv: string | Uint8Array | null,
  fields: Record<string, string> = { phone_column: "phone", timezone_column: "timezone" },
  fileName = "leads.csv",
) {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  if (csv !== null) form.append("file", new Blob([csv], { type: "text/csv" }), fileName);
  return h.request("POST", path, { token, rawBody: form });
}
