CREATE TABLE "webhook_cursors" (
	"endpoint_id" uuid PRIMARY KEY NOT NULL,
	"xid" bigint NOT NULL,
	"seq" bigint NOT NULL,
	"holder" text,
	"leased_until" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "webhook_events" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"xid" bigint DEFAULT (pg_current_xact_id()::text::bigint) NOT NULL,
	"event_id" text NOT NULL,
	"tenant_id" uuid NOT NULL,
	"type" text NOT NULL,
	"order_key" text,
	"data" jsonb NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "webhook_attempts" ADD COLUMN "event_seq" bigint;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD COLUMN "event_seq" bigint;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD COLUMN "body" text;--> statement-breakpoint
ALTER TABLE "webhook_cursors" ADD CONSTRAINT "webhook_cursors_endpoint_id_webhook_endpoints_id_fk" FOREIGN KEY ("endpoint_id") REFERENCES "public"."webhook_endpoints"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "webhook_events_tenant" ON "webhook_events" USING btree ("tenant_id","xid","seq");--> statement-breakpoint
-- The events already queued become the outbox's first, so that their log can be sent again;
-- each endpoint's cursor starts after them (those still pending stay in the retry queue).
INSERT INTO "webhook_events" ("event_id", "tenant_id", "type", "order_key", "data", "created_at")
SELECT DISTINCT ON ("event_id") "event_id", "tenant_id", "type", "order_key", "payload"->'data', "created_at"
FROM "webhook_deliveries" ORDER BY "event_id", "created_at";--> statement-breakpoint
UPDATE "webhook_deliveries" d SET "event_seq" = e."seq" FROM "webhook_events" e WHERE e."event_id" = d."event_id";--> statement-breakpoint
UPDATE "webhook_attempts" a SET "event_seq" = e."seq" FROM "webhook_events" e WHERE e."event_id" = a."event_id";--> statement-breakpoint
INSERT INTO "webhook_cursors" ("endpoint_id", "xid", "seq")
SELECT "id", pg_current_xact_id()::text::bigint, coalesce((SELECT max("seq") FROM "webhook_events"), 0)
FROM "webhook_endpoints";
