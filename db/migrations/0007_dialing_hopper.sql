DROP INDEX "leads_campaign_state";--> statement-breakpoint
ALTER TABLE "calls" ADD COLUMN "bridge_ms" integer;--> statement-breakpoint
ALTER TABLE "cdrs" ADD COLUMN "bridge_ms" integer;--> statement-breakpoint
CREATE INDEX "calls_live_lease" ON "calls" USING btree ("lease_expires_at") WHERE "calls"."status" <> 'ended';--> statement-breakpoint
CREATE INDEX "leads_campaign_state_seq" ON "leads" USING btree ("campaign_id","state","seq");--> statement-breakpoint
CREATE INDEX "leads_campaign_state_due" ON "leads" USING btree ("campaign_id","state","next_attempt_at");