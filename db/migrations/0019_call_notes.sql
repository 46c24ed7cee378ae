ALTER TABLE "calls" ADD COLUMN "notes" text;--> statement-breakpoint
ALTER TABLE "cdrs" ADD COLUMN "notes" text;