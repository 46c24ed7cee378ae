CREATE FUNCTION "rate_limit_grant"("rate_key" text, "first_bucket" bigint, "last_bucket" bigint, "cap" integer, "need" integer, "extra" integer)
RETURNS TABLE ("granted" integer, "bucket_hits" integer[]) LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	"counted" bigint;
	"spare" bigint;
	"given" integer;
BEGIN
	-- One grant of a key at a time, across processes. Under READ COMMITTED each statement below
	-- reads a snapshot taken after the lock is held, so it sees the grant committed before it.
	PERFORM pg_advisory_xact_lock(1380013125, hashtext("rate_key"));
	-- Requests wait on a grant, not on the disk: a crash may lose the last moment's grants,
	-- which only gives their units back.
	PERFORM set_config('synchronous_commit', 'off', true);
	-- Buckets after the last one count too: a process whose clock runs ahead charged them.
	SELECT coalesce(sum(h."hits"), 0) INTO "counted" FROM "rate_limit_hits" h
	WHERE h."key" = "rate_key" AND h."bucket" >= "first_bucket";
	"spare" := greatest("cap" - "counted", 0);
	-- What waits is granted in full as far as the budget goes; more only up to half of what is
	-- left after it, so that units taken ahead of demand never hold a budget's last units.
	"given" := least("spare", "need" + least("extra", greatest("spare" - "need", 0) / 2));
	IF "given" > 0 THEN
		INSERT INTO "rate_limit_hits" AS h ("key", "bucket", "hits")
		VALUES ("rate_key", "last_bucket", "given")
		ON CONFLICT ("key", "bucket") DO UPDATE SET "hits" = h."hits" + excluded."hits";
	END IF;
	RETURN QUERY SELECT "given", array(
		SELECT coalesce(h."hits", 0)
		FROM generate_series("first_bucket", "last_bucket") AS b("bucket")
		LEFT JOIN "rate_limit_hits" h ON h."key" = "rate_key" AND h."bucket" = b."bucket"
		ORDER BY b."bucket");
END $$;
