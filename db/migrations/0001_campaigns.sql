CREATE TABLE "campaign_idempotency_keys" (
	"campaign_id" uuid NOT NULL,
	"key" text NOT NULL,
	"body_hash" text NOT NULL,
	"response_status" integer NOT NULL,
	"response_body" jsonb NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "campaign_idempotency_keys_campaign_id_key_pk" PRIMARY KEY("campaign_id","key")
);
--> statement-breakpoint
CREATE TABLE "campaign_status_changes" (
	"id" uuid PRIMARY KEY NOT NULL,
	"tenant_id" uuid NOT NULL,
	"campaign_id" uuid NOT NULL,
	"action" text NOT NULL,
	"from_status" text NOT NULL,
	"to_status" text NOT NULL,
	"actor_type" text NOT NULL,
	"actor_id" text,
	"request_id" text,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "campaigns" (
	"id" uuid PRIMARY KEY NOT NULL,
	"tenant_id" uuid NOT NULL,
	"name" text NOT NULL,
	"status" text NOT NULL,
	"dial_mode" text NOT NULL,
	"caller_id" text,
	"calling_window_start" text NOT NULL,
	"calling_window_end" text NOT NULL,
	"max_attempts" integer NOT NULL,
	"retry_delay_seconds" integer NOT NULL,
	"dial_ratio" double precision NOT NULL,
	"max_abandon_rate" double precision NOT NULL,
	"version" integer NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "campaign_idempotency_keys" ADD CONSTRAINT "campaign_idempotency_keys_campaign_id_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."campaigns"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "campaign_status_changes" ADD CONSTRAINT "campaign_status_changes_campaign_id_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."campaigns"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "campaigns" ADD CONSTRAINT "campaigns_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "campaign_idempotency_keys_expiry" ON "campaign_idempotency_keys" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "campaign_status_changes_campaign" ON "campaign_status_changes" USING btree ("campaign_id","created_at","id");--> statement-breakpoint
CREATE INDEX "campaigns_tenant_created" ON "campaigns" USING btree ("tenant_id","created_at","id");--> statement-breakpoint
CREATE INDEX "campaigns_status" ON "campaigns" USING btree ("status");