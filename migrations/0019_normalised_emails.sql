-- Issue 20, item 5: addresses are stored in the form of normaliseEmail (src/auth/email.ts) and looked up by
-- equality. PostgreSQL's lower() follows the database's collation; it agrees with the gateway's lowering except
-- for U+0130, which Unicode (and the gateway) lowers to "i" + U+0307, so that one is mapped first. Two existing
-- users whose addresses normalise to one are not merged or renamed behind the operator's back: the migration
-- stops, names them, and leaves the database as it was.
DO $$
DECLARE
  clash record;
BEGIN
  SELECT normalize(lower(normalize(replace(btrim(email), U&'\0130', U&'i\0307'), NFKC)), NFKC) AS normalised,
         string_agg(email, ', ' ORDER BY created_at) AS emails
    INTO clash
    FROM users
    GROUP BY 1
    HAVING count(*) > 1
    LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'users % share the e-mail address % once normalised; change all but one (update users set email = ... where id = ...) and migrate again', clash.emails, clash.normalised;
  END IF;
END $$;--> statement-breakpoint
UPDATE "users" SET "email" = normalize(lower(normalize(replace(btrim("email"), U&'\0130', U&'i\0307'), NFKC)), NFKC);--> statement-breakpoint
DROP INDEX "users_email_lower_key";--> statement-breakpoint
CREATE UNIQUE INDEX "users_email_key" ON "users" USING btree ("email");
