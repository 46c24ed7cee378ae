import { openApiTypes } from "./openapi-types.ts";

/** The parts of an AsyncAPI 3 document read here. */
interface AsyncApiDocument {
  info: { title: string; version: string };
  channels: Record<string, { address: string; messages: Record<string, Ref> }>;
  operations: Record<string, { action: "send" | "receive"; channel: Ref; messages: Ref[] }>;
  components: { messages: Record<string, { payload: unknown }> };
}
interface Ref {
  $ref: string;
}

/** The last segment of a local reference: `#/components/messages/snapshot` → `snapshot`. */
const refName = (ref: Ref) => ref.$ref.slice(ref.$ref.lastIndexOf("/") + 1);

/**
 * TypeScript types of the messages of an AsyncAPI 3 document: each message's payload becomes
 * `components["schemas"][<message>]` (the payloads are JSON Schema, so openapi-typescript
 * reads them as the schemas of a synthetic OpenAPI document, and no other generator is
 * needed), and `channels` says, for each channel, its address, the union of what the server
 * sends on it and the union of what it accepts from a client.
 */
export async function asyncApiTypes(document: unknown): Promise<string> {
  const asyncApi = document as AsyncApiDocument;
  const schemas = Object.fromEntries(
    Object.entries(asyncApi.components.messages).map(([name, message]) => [name, message.payload]),
  );
  const messageTypes = await openApiTypes({
    openapi: "3.1.0",
    info: asyncApi.info,
    paths: {},
    components: { schemas },
  });
  return `${messageTypes}\n${channelsInterface(asyncApi)}`;
}

/**
 * `send` operations are the server sending (AsyncAPI describes the application, here the
 * server), `receive` ones the server accepting what a client sends.
 */
function channelsInterface(document: AsyncApiDocument): string {
  const members = Object.entries(document.channels).map(([name, channel]) => {
    const union = (action: "send" | "receive") => {
      const types = Object.values(document.operations)
        .filter((operation) => operation.action === action && refName(operation.channel) === name)
        .flatMap((operation) => operation.messages)
        .map((ref) => channel.messages[refName(ref)])
        .filter((ref): ref is Ref => ref !== undefined)
        .map((ref) => `components["schemas"][${JSON.stringify(refName(ref))}]`);
      return types.length ? [...new Set(types)].join(" | ") : "never";
    };
    return [
      `    ${JSON.stringify(name)}: {`,
      `        address: ${JSON.stringify(channel.address)};`,
      "        /** What the server sends on this channel. */",
      `        server: ${union("send")};`,
      "        /** What a client may send on this channel. */",
      `        client: ${union("receive")};`,
      "    };",
    ].join("\n");
  });
  const doc = "/** The sockets: each channel's address and the messages each side sends. */";
  return `${doc}\nexport interface channels {\n${members.join("\n")}\n}\n`;
}
