export * from "./access.ts";
export * from "./calls.ts";
export * from "./campaigns.ts";
export * from "./cluster.ts";
export * from "./identity.ts";
export * from "./leads.ts";
export * from "./webhooks.ts";
