ALTER TABLE "calls" ADD COLUMN "disposition_outcome" text;--> statement-breakpoint
ALTER TABLE "cdrs" ADD COLUMN "disposition_outcome" text;--> statement-breakpoint
ALTER TABLE "campaigns" ADD COLUMN "disposition_codes" jsonb DEFAULT '[{"code":"completed","label":"Completed","hotkey":"1","outcome":"done"},{"code":"callback","label":"Callback","hotkey":"2","outcome":"callback"},{"code":"do_not_call","label":"Do not call","hotkey":"3","outcome":"do_not_call"},{"code":"no_contact","label":"No contact","hotkey":"4","outcome":"retry"},{"code":"answering_machine","label":"Answering machine","hotkey":"5","outcome":"retry"},{"code":"wrong_number","label":"Wrong number","hotkey":"6","outcome":"done"}]'::jsonb NOT NULL;--> statement-breakpoint
-- Dispositions given before codes had outcomes: what the fixed dispositions did to their leads.
UPDATE "calls" SET "disposition_outcome" = CASE "disposition"
  WHEN 'completed' THEN 'done' WHEN 'wrong_number' THEN 'done' WHEN 'callback' THEN 'callback'
  WHEN 'do_not_call' THEN 'do_not_call' ELSE 'retry' END
WHERE "disposition" IS NOT NULL;--> statement-breakpoint
UPDATE "cdrs" SET "disposition_outcome" = CASE "disposition"
  WHEN 'completed' THEN 'done' WHEN 'wrong_number' THEN 'done' WHEN 'callback' THEN 'callback'
  WHEN 'do_not_call' THEN 'do_not_call' ELSE 'retry' END
WHERE "disposition" IS NOT NULL;
