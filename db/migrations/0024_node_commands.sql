CREATE TABLE "node_commands" (
	"id" uuid PRIMARY KEY NOT NULL,
	"tenant_id" uuid NOT NULL,
	"edge_node_id" uuid NOT NULL,
	"call_id" uuid NOT NULL,
	"type" text NOT NULL,
	"payload" jsonb NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"delivered_at" timestamp with time zone,
	"deliveries" integer DEFAULT 0 NOT NULL,
	"acked_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "campaigns" ADD COLUMN "preview_timeout_seconds" integer DEFAULT 60 NOT NULL;--> statement-breakpoint
ALTER TABLE "tenants" ADD COLUMN "transfer_numbers" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
CREATE INDEX "node_commands_pending" ON "node_commands" USING btree ("edge_node_id","created_at") WHERE "node_commands"."acked_at" is null;--> statement-breakpoint
CREATE INDEX "node_commands_created" ON "node_commands" USING btree ("created_at");