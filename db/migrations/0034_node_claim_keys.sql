CREATE TABLE "node_claim_keys" (
	"edge_node_id" uuid NOT NULL,
	"claim_key" text NOT NULL,
	"taken_at" timestamp with time zone NOT NULL,
	CONSTRAINT "node_claim_keys_edge_node_id_claim_key_pk" PRIMARY KEY("edge_node_id","claim_key")
);
