DROP INDEX "webhook_deliveries_due";--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD COLUMN "ready" boolean DEFAULT true NOT NULL;--> statement-breakpoint
CREATE INDEX "webhook_deliveries_ready" ON "webhook_deliveries" USING btree ("next_attempt_at") WHERE "webhook_deliveries"."status" = 'pending' and "webhook_deliveries"."ready";