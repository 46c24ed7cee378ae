CREATE TABLE "agent_state_log" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "agent_state_log_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"tenant_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"state" text NOT NULL,
	"reason" text,
	"campaign_id" uuid,
	"started_at" timestamp with time zone NOT NULL,
	"ended_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "calls" ADD COLUMN "disposition_automatic" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "cdrs" ADD COLUMN "disposition_automatic" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "campaigns" ADD COLUMN "wrap_up_seconds" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "campaigns" ADD COLUMN "default_disposition" text DEFAULT 'no_contact' NOT NULL;--> statement-breakpoint
ALTER TABLE "campaigns" ADD COLUMN "after_call_pause_seconds" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "agent_presence" ADD COLUMN "reason" text;--> statement-breakpoint
ALTER TABLE "agent_presence" ADD COLUMN "pause_after_call" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "agent_presence" ADD COLUMN "ready_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "tenants" ADD COLUMN "not_ready_reasons" jsonb DEFAULT '[{"code":"break","label":"Break"},{"code":"lunch","label":"Lunch"},{"code":"training","label":"Training"},{"code":"meeting","label":"Meeting"},{"code":"other","label":"Other"}]'::jsonb NOT NULL;--> statement-breakpoint
CREATE INDEX "agent_state_log_user" ON "agent_state_log" USING btree ("tenant_id","user_id","ended_at");