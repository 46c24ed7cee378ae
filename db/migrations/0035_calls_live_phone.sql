-- One live call to a number per workspace. Live calls placed before this index may already
-- break the rule (two campaigns' claims of one number at the same instant): of each such
-- number's calls all but the first are left out of it by id, and end as any call does; every
-- call placed from now on is held to it.
DO $$
DECLARE
	overlapping text;
BEGIN
	LOCK TABLE "calls" IN SHARE MODE;
	SELECT string_agg(quote_literal(c.id::text) || '::uuid', ', ') INTO overlapping
	FROM "calls" c
	WHERE c.status <> 'ended' AND EXISTS (
		SELECT 1 FROM "calls" o
		WHERE o.tenant_id = c.tenant_id AND o.phone = c.phone AND o.status <> 'ended' AND o.id < c.id);
	IF overlapping IS NULL THEN
		CREATE UNIQUE INDEX "calls_live_phone" ON "calls" USING btree ("tenant_id","phone") WHERE "calls"."status" <> 'ended';
	ELSE
		EXECUTE format('CREATE UNIQUE INDEX "calls_live_phone" ON "calls" USING btree ("tenant_id","phone") WHERE "calls"."status" <> %L AND "calls"."id" NOT IN (%s)', 'ended', overlapping);
	END IF;
END $$;
