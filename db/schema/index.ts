export * from "./identity.ts";
