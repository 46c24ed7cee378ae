ALTER TABLE "calls" ADD COLUMN "claim_key" text;--> statement-breakpoint
CREATE INDEX "calls_claim_key" ON "calls" USING btree ("edge_node_id","claim_key") WHERE "calls"."claim_key" is not null;