export * from "./campaigns.ts";
export * from "./identity.ts";
