CREATE TABLE "dnc_requests" (
	"tenant_id" uuid NOT NULL,
	"phone" text NOT NULL,
	"source" text NOT NULL,
	"requested_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "calls" ADD COLUMN "profile" text;--> statement-breakpoint
ALTER TABLE "calls" ADD COLUMN "profile_version" text;--> statement-breakpoint
ALTER TABLE "calls" ADD COLUMN "zone" text;--> statement-breakpoint
ALTER TABLE "calls" ADD COLUMN "zone_source" text;--> statement-breakpoint
ALTER TABLE "calls" ADD COLUMN "governor_held" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "cdrs" ADD COLUMN "profile" text;--> statement-breakpoint
ALTER TABLE "cdrs" ADD COLUMN "profile_version" text;--> statement-breakpoint
ALTER TABLE "cdrs" ADD COLUMN "zone" text;--> statement-breakpoint
ALTER TABLE "cdrs" ADD COLUMN "zone_source" text;--> statement-breakpoint
ALTER TABLE "cdrs" ADD COLUMN "governor_held" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "campaigns" ADD COLUMN "regulatory_profile" text DEFAULT 'us' NOT NULL;--> statement-breakpoint
ALTER TABLE "tenants" ADD COLUMN "regulatory_profile" text DEFAULT 'us' NOT NULL;--> statement-breakpoint
ALTER TABLE "leads" ADD COLUMN "zone_source" text DEFAULT 'column' NOT NULL;--> statement-breakpoint
CREATE INDEX "dnc_requests_phone" ON "dnc_requests" USING btree ("tenant_id","phone","requested_at");--> statement-breakpoint
CREATE INDEX "calls_tenant_phone_claimed" ON "calls" USING btree ("tenant_id","phone","claimed_at");--> statement-breakpoint
-- The numbers already on the list were requested when they were added.
INSERT INTO "dnc_requests" ("tenant_id", "phone", "source", "requested_at")
SELECT "tenant_id", "phone", "source", "created_at" FROM "dnc_numbers";
