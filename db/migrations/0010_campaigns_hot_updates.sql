DROP INDEX "campaigns_status";--> statement-breakpoint
ALTER TABLE "campaigns" SET (fillfactor = 50);