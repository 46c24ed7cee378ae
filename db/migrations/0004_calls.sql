CREATE TABLE "cdrs" (
	"id" uuid PRIMARY KEY NOT NULL,
	"tenant_id" uuid NOT NULL,
	"call_id" uuid NOT NULL,
	"campaign_id" uuid NOT NULL,
	"lead_list_id" uuid NOT NULL,
	"lead_id" uuid NOT NULL,
	"edge_node_id" uuid,
	"agent_id" uuid,
	"phone" text NOT NULL,
	"caller_id" text NOT NULL,
	"attempt" integer NOT NULL,
	"outcome" text NOT NULL,
	"hangup_cause" text,
	"disposition" text,
	"started_at" timestamp with time zone NOT NULL,
	"answered_at" timestamp with time zone,
	"ended_at" timestamp with time zone,
	"ring_seconds" integer NOT NULL,
	"talk_seconds" integer NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "cdrs_call_id_unique" UNIQUE("call_id")
);
--> statement-breakpoint
CREATE TABLE "dnc_numbers" (
	"tenant_id" uuid NOT NULL,
	"phone" text NOT NULL,
	"source" text NOT NULL,
	"created_by" text,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "dnc_numbers_tenant_id_phone_pk" PRIMARY KEY("tenant_id","phone")
);
--> statement-breakpoint
CREATE INDEX "cdrs_tenant_started" ON "cdrs" USING btree ("tenant_id","started_at");--> statement-breakpoint
CREATE INDEX "cdrs_tenant_created" ON "cdrs" USING btree ("tenant_id","created_at","id");--> statement-breakpoint
CREATE INDEX "dnc_numbers_created" ON "dnc_numbers" USING btree ("tenant_id","created_at");