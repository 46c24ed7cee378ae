CREATE TABLE "lead_import_rejections" (
	"import_id" uuid NOT NULL,
	"row" integer NOT NULL,
	"column_name" text,
	"reason" text NOT NULL,
	"cells" jsonb NOT NULL,
	CONSTRAINT "lead_import_rejections_import_id_row_pk" PRIMARY KEY("import_id","row")
);
--> statement-breakpoint
CREATE TABLE "lead_imports" (
	"id" uuid PRIMARY KEY NOT NULL,
	"tenant_id" uuid NOT NULL,
	"campaign_id" uuid NOT NULL,
	"lead_list_id" uuid NOT NULL,
	"file_name" text,
	"header" jsonb NOT NULL,
	"imported" integer NOT NULL,
	"rejected" integer NOT NULL,
	"errors" jsonb NOT NULL,
	"actor_type" text NOT NULL,
	"actor_id" text,
	"request_id" text,
	"started_at" timestamp with time zone NOT NULL,
	"finished_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "lead_lists" (
	"id" uuid PRIMARY KEY NOT NULL,
	"tenant_id" uuid NOT NULL,
	"campaign_id" uuid NOT NULL,
	"name" text NOT NULL,
	"caller_id" text NOT NULL,
	"lead_count" integer NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "leads" (
	"id" uuid PRIMARY KEY NOT NULL,
	"seq" bigserial NOT NULL,
	"tenant_id" uuid NOT NULL,
	"campaign_id" uuid NOT NULL,
	"lead_list_id" uuid NOT NULL,
	"import_id" uuid NOT NULL,
	"import_row" integer NOT NULL,
	"phone" text NOT NULL,
	"timezone" text NOT NULL,
	"state" text NOT NULL,
	"attempts" integer NOT NULL,
	"fields" jsonb NOT NULL,
	"next_attempt_at" timestamp with time zone,
	"last_outcome" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "lead_import_rejections" ADD CONSTRAINT "lead_import_rejections_import_id_lead_imports_id_fk" FOREIGN KEY ("import_id") REFERENCES "public"."lead_imports"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "lead_imports" ADD CONSTRAINT "lead_imports_lead_list_id_lead_lists_id_fk" FOREIGN KEY ("lead_list_id") REFERENCES "public"."lead_lists"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "lead_lists" ADD CONSTRAINT "lead_lists_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "lead_lists" ADD CONSTRAINT "lead_lists_campaign_id_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."campaigns"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "leads" ADD CONSTRAINT "leads_lead_list_id_lead_lists_id_fk" FOREIGN KEY ("lead_list_id") REFERENCES "public"."lead_lists"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "lead_imports_list_started" ON "lead_imports" USING btree ("lead_list_id","started_at","id");--> statement-breakpoint
CREATE INDEX "lead_lists_campaign_created" ON "lead_lists" USING btree ("campaign_id","created_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "leads_list_phone_unique" ON "leads" USING btree ("lead_list_id","phone");--> statement-breakpoint
CREATE INDEX "leads_list_created" ON "leads" USING btree ("lead_list_id","created_at","id");--> statement-breakpoint
CREATE INDEX "leads_campaign_state" ON "leads" USING btree ("campaign_id","state");