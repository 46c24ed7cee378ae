import openapiTS, { astToString, type OpenAPI3 } from "openapi-typescript";
import ts from "typescript";

const BLOB = ts.factory.createTypeReferenceNode("Blob");
const NULL = ts.factory.createLiteralTypeNode(ts.factory.createNull());

/**
 * TypeScript types of an OpenAPI 3.1 document: `paths`, `components`, `operations` and
 * `webhooks`, as openapi-typescript emits them. A `format: binary` field (an upload) becomes a
 * `Blob`, which is what a multipart body carries; openapi-typescript would say `string`.
 */
export async function openApiTypes(document: unknown): Promise<string> {
  const ast = await openapiTS(document as OpenAPI3, {
    silent: true,
    transform(schema) {
      if (schema.format !== "binary") return undefined;
      return schema.nullable ? ts.factory.createUnionTypeNode([BLOB, NULL]) : BLOB;
    },
  });
  return astToString(ast);
}
