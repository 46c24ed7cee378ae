CREATE SEQUENCE "public"."campaign_lease_tokens" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1;--> statement-breakpoint
CREATE TABLE "agent_presence" (
	"user_id" uuid PRIMARY KEY NOT NULL,
	"tenant_id" uuid NOT NULL,
	"state" text NOT NULL,
	"campaign_id" uuid,
	"call_id" uuid,
	"since" timestamp with time zone NOT NULL,
	"grace_until" timestamp with time zone,
	"version" bigint DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "campaign_leases" (
	"campaign_id" uuid PRIMARY KEY NOT NULL,
	"owner" uuid NOT NULL,
	"owner_url" text NOT NULL,
	"token" bigint NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "cluster_messages" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "cluster_messages_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"payload" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "rate_limit_hits" (
	"key" text NOT NULL,
	"bucket" bigint NOT NULL,
	"hits" integer NOT NULL,
	CONSTRAINT "rate_limit_hits_key_bucket_pk" PRIMARY KEY("key","bucket")
);
--> statement-breakpoint
CREATE INDEX "agent_presence_campaign" ON "agent_presence" USING btree ("campaign_id");--> statement-breakpoint
CREATE INDEX "agent_presence_grace" ON "agent_presence" USING btree ("grace_until") WHERE "agent_presence"."grace_until" is not null;--> statement-breakpoint
CREATE INDEX "campaign_leases_owner" ON "campaign_leases" USING btree ("owner");--> statement-breakpoint
CREATE FUNCTION "dialer_lease_held"("campaign" uuid, "held" bigint) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	-- No token: one process owns every campaign (the embedded database).
	IF "held" IS NULL THEN RETURN true; END IF;
	-- Held until this write commits: a takeover waits for it, so the new owner restores it,
	-- and a write after a takeover sees the new token.
	PERFORM pg_advisory_xact_lock_shared(1145652812, hashtext("campaign"::text));
	RETURN EXISTS (SELECT 1 FROM "campaign_leases" WHERE "campaign_id" = "campaign" AND "token" = "held");
END $$;
--> statement-breakpoint
CREATE FUNCTION "dialer_fence"("campaign" uuid, "held" bigint) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	IF NOT "dialer_lease_held"("campaign", "held") THEN
		RAISE EXCEPTION 'the lease of campaign % is no longer held', "campaign" USING ERRCODE = 'DL001';
	END IF;
	RETURN true;
END $$;
--> statement-breakpoint
CREATE FUNCTION "dialer_lease_takeover"("campaign" uuid) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	-- Waits for the old owner's writes in flight; the ones after see the new token.
	PERFORM pg_advisory_xact_lock(1145652812, hashtext("campaign"::text));
	RETURN true;
END $$;
