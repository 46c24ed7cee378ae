CREATE TABLE "campaign_messages" (
	"campaign_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"tenant_id" uuid NOT NULL,
	"version" integer NOT NULL,
	"audio" "bytea",
	"encoding" text NOT NULL,
	"sample_rate" integer NOT NULL,
	"duration_ms" integer NOT NULL,
	"sha256" text NOT NULL,
	"converted" boolean NOT NULL,
	"updated_by" text,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "campaign_messages_campaign_id_kind_pk" PRIMARY KEY("campaign_id","kind")
);
--> statement-breakpoint
ALTER TABLE "calls" ADD COLUMN "media" jsonb;--> statement-breakpoint
ALTER TABLE "cdrs" ADD COLUMN "media" jsonb;--> statement-breakpoint
ALTER TABLE "campaigns" ADD COLUMN "opt_out_digit" text DEFAULT '9' NOT NULL;--> statement-breakpoint
ALTER TABLE "campaigns" ADD COLUMN "amd_enabled" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "campaigns" ADD COLUMN "amd_budget_ms" integer DEFAULT 3500 NOT NULL;--> statement-breakpoint
ALTER TABLE "campaigns" ADD COLUMN "machine_action" text DEFAULT 'hangup' NOT NULL;--> statement-breakpoint
ALTER TABLE "campaigns" ADD COLUMN "amd_sample_percent" double precision DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "campaigns" ADD COLUMN "abandon_message_version" integer;--> statement-breakpoint
ALTER TABLE "campaigns" ADD COLUMN "voicemail_message_version" integer;--> statement-breakpoint
ALTER TABLE "campaigns" ADD COLUMN "opt_out_message_version" integer;--> statement-breakpoint
ALTER TABLE "campaign_messages" ADD CONSTRAINT "campaign_messages_campaign_id_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."campaigns"("id") ON DELETE no action ON UPDATE no action;