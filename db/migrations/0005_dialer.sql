CREATE TABLE "calls" (
	"id" uuid PRIMARY KEY NOT NULL,
	"tenant_id" uuid NOT NULL,
	"campaign_id" uuid NOT NULL,
	"lead_list_id" uuid NOT NULL,
	"lead_id" uuid NOT NULL,
	"edge_node_id" uuid NOT NULL,
	"agent_id" uuid,
	"phone" text NOT NULL,
	"caller_id" text NOT NULL,
	"attempt" integer NOT NULL,
	"timeout_seconds" integer NOT NULL,
	"status" text NOT NULL,
	"bridged" boolean NOT NULL,
	"machine" boolean NOT NULL,
	"outcome" text,
	"hangup_cause" text,
	"disposition" text,
	"lease_expires_at" timestamp with time zone NOT NULL,
	"claimed_at" timestamp with time zone NOT NULL,
	"ringing_at" timestamp with time zone,
	"answered_at" timestamp with time zone,
	"ended_at" timestamp with time zone,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "calls_tenant_status" ON "calls" USING btree ("tenant_id","status");--> statement-breakpoint
CREATE INDEX "calls_node_status" ON "calls" USING btree ("edge_node_id","status");--> statement-breakpoint
CREATE INDEX "calls_campaign_status" ON "calls" USING btree ("campaign_id","status");