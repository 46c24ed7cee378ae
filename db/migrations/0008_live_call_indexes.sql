DROP INDEX "calls_tenant_status";--> statement-breakpoint
DROP INDEX "calls_node_status";--> statement-breakpoint
DROP INDEX "calls_campaign_status";--> statement-breakpoint
CREATE INDEX "calls_live_campaign" ON "calls" USING btree ("campaign_id") WHERE "calls"."status" <> 'ended';