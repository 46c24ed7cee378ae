CREATE TABLE "alerts" (
	"id" uuid PRIMARY KEY NOT NULL,
	"tenant_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"subject_id" uuid NOT NULL,
	"message" text NOT NULL,
	"raised_at" timestamp with time zone NOT NULL,
	"cleared_at" timestamp with time zone
);
--> statement-breakpoint
CREATE UNIQUE INDEX "alerts_open" ON "alerts" USING btree ("tenant_id","kind","subject_id") WHERE "alerts"."cleared_at" is null;--> statement-breakpoint
CREATE INDEX "alerts_tenant_raised" ON "alerts" USING btree ("tenant_id","raised_at");