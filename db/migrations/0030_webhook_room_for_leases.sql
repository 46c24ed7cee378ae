-- Half of each page left free: a lease changes no indexed column, so with room on the page it
-- is a heap-only update, with no new index entries and less for the outbox's vacuum to clear.
ALTER TABLE "webhook_deliveries" SET (fillfactor = 50);
